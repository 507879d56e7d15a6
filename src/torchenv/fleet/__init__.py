"""Validate a fleet: what a scheduler runs on every node, and one verdict from their reports.

torchenv never launches anything on other machines. ``slurm`` renders an ``sbatch`` script and
``kubernetes`` an Indexed Job; on every node they run ``torchenv detect --json`` and
``torchenv validate --json --junit`` (the collectives meet through torchrun's c10d rendezvous on
the first node). ``reports`` reads what the nodes wrote (files, or pod logs with the reports
between markers), ``verdict`` judges the fleet (failed checks, missing or unreadable reports,
skew across nodes, the nodes to drain) and ``junit`` writes it as one JUnit file for CI
dashboards (the command line prints it as a table or as JSON).

Everything but :func:`torchenv.fleet.reports.read_reports` is a pure function. The package
imports none of its modules, so each command loads only its own part.
"""

__all__: list[str] = []
