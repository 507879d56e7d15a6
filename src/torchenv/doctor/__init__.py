"""Doctor: explain what is wrong with an existing environment and print the fix.

``diagnose(host, env, matrix, installs, seen)`` is pure; ``gather_installs(python, env)`` asks
the target interpreter what it has installed, and ``probe.probe_import`` imports torch there in
a bounded child whose report (``seen.Seen``) ``classify.classify`` turns into causes.
"""

from torchenv.doctor.findings import (
    CondaRecord,
    Distribution,
    Finding,
    Installs,
    Severity,
    diagnose,
    summarize,
)
from torchenv.doctor.gather import gather_installs

__all__ = [
    "CondaRecord",
    "Distribution",
    "Finding",
    "Installs",
    "Severity",
    "diagnose",
    "gather_installs",
    "summarize",
]
