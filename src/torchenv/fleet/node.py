"""What every node of a fleet runs, and the names and log markers of the reports it leaves.

One node writes, named by its scheduler's node name (the name ``scontrol`` or ``kubectl``
drains)::

    NODE.detect.json     torchenv detect --json
    NODE.validate.json   torchenv validate --json (the document, or validate's error document)
    NODE.junit.xml       the same verdict as JUnit XML
    NODE.exit            validate's exit status
    NODE.stderr          what detect and validate wrote to stderr (the cause when they crash)

Where no shared folder exists (a Kubernetes pod), the node prints each report to its log between
two marker lines, and ``torchenv fleet report`` reads them back from saved logs::

    ==== torchenv fleet: begin validate.json node=gpu-07 ====
    {"ok": true, ...}
    ==== torchenv fleet: end validate.json node=gpu-07 ====

The shell text below is the same for every scheduler; it reads its settings from ``FLEET_*``
environment variables (a ``TORCHENV_*`` name would be read by torchenv itself).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal, Optional

__all__ = [
    "JOB_ENDS",
    "JOB_END_FILE",
    "MARKER_RE",
    "PROBES_DIR",
    "PROBE_CHECKS",
    "REPORT_KINDS",
    "Level",
    "NodeRun",
    "bad_node_name",
    "marker",
    "node_script",
    "probe_script",
]

Level = Literal["quick", "full"]

REPORT_KINDS = ("detect.json", "validate.json", "junit.xml", "exit", "stderr")
"""The reports of one node, by the suffix of their file names (also their log section names)."""

JOB_END_FILE = "job-end"
"""Written beside the reports when the job was stopped before its nodes finished (the Slurm
script's trap): one word, ``time-limit`` or ``cancelled``."""
JOB_ENDS = ("time-limit", "cancelled")

PROBES_DIR = "probes"
"""The subfolder of the blame probes (:mod:`torchenv.fleet.blame`): one folder per probe,
``ROUND+NODE`` (alone) or ``ROUND+NODE+NODE`` (a pair), holding each member's reports."""
PROBE_CHECKS = "gloo_allreduce,nccl_allreduce"
"""What a probe runs (``validate --only``); NCCL's is a skip on a node without GPUs."""

PARTIAL_SUFFIX = ".part"
"""A report still being written (or cut short) carries this suffix until it is renamed."""

_MARKER = "==== torchenv fleet: {edge} {kind} node={node} ===="

LOG_PREFIX_RE = re.compile(r"\[[^\]\s]+\] ")
"""What ``kubectl logs --prefix`` puts before each line: ``[pod/NAME/CONTAINER] ``."""

MARKER_RE = re.compile(
    r"^(?P<prefix>(?:" + LOG_PREFIX_RE.pattern + r")?)==== torchenv fleet: "
    r"(?P<edge>begin|end) (?P<kind>" + "|".join(re.escape(k) for k in REPORT_KINDS) + r") "
    r"node=(?P<node>\S+) ====\s*$")
"""A marker line; ``prefix`` is what ``kubectl logs --prefix`` put before it, if anything."""

_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9])?"
NODE_NAME_RE = re.compile(rf"{_LABEL}(?:\.{_LABEL})*")
"""What a node name can be: a host name (RFC 1123 labels separated by dots; Slurm also allows
``_``), at most 253 characters. It never starts with ``-``, so it cannot pass for an option."""


def bad_node_name(name: str) -> Optional[str]:
    """Why ``name`` cannot be a node name (None when it can): a value read from a report or a
    file name must be one before it is shown in a command."""
    if len(name) > 253 or not NODE_NAME_RE.fullmatch(name):
        shown = name if len(name) <= 60 else name[:57] + "..."
        return (f"{shown!r} is not a node name (a host name: letters, digits, '-' and '_', "
                "dot-separated labels that start and end with a letter or digit)")
    return None


def marker(edge: Literal["begin", "end"], kind: str, node: str) -> str:
    """The marker line that opens or closes the ``kind`` section of ``node`` in a log."""
    return _MARKER.format(edge=edge, kind=kind, node=node)


@dataclass(frozen=True)
class NodeRun:
    """What runs on each node: ``python`` (the interpreter there, with torchenv and the torch
    to validate), the validation ``level``, each check's ``timeout`` (None: its own budget), and
    the TCP port of the rendezvous on the first node."""

    python: str = "python3"
    level: Level = "full"
    timeout: Optional[float] = None
    rdzv_port: int = 29500

    def settings(self) -> dict[str, str]:
        """The ``FLEET_*`` variables of :func:`node_script` that do not depend on the node."""
        values = {"FLEET_PYTHON": self.python, "FLEET_LEVEL": self.level}
        if self.timeout is not None:
            values["FLEET_TIMEOUT"] = f"{self.timeout:g}"
        return values


def node_script(run: NodeRun) -> str:
    """The shell lines every node runs; they need ``FLEET_PYTHON``, ``FLEET_LEVEL``,
    ``FLEET_REPORT_DIR``, ``FLEET_NODE`` (the node's name), ``FLEET_NNODES``,
    ``FLEET_NODE_RANK`` and ``FLEET_RDZV_ENDPOINT`` (HOST:PORT), and ``FLEET_TIMEOUT`` when
    ``run.timeout`` is set. They leave ``$status``, validate's exit status, and never fail
    themselves: a node whose validation fails still writes every report."""
    timeout = ' --timeout "$FLEET_TIMEOUT"' if run.timeout is not None else ""
    part = PARTIAL_SUFFIX
    return f"""\
report="$FLEET_REPORT_DIR/$FLEET_NODE"
# Each report is written under a temporary name and renamed once complete, so that a report cut
# short (a node that died, a job out of time) is never read as a whole one. What the commands
# write to stderr is kept beside them: when one cannot start or crashes, that is the cause.
"$FLEET_PYTHON" -m torchenv detect --json > "$report.detect.json{part}" 2> "$report.stderr"
mv -f "$report.detect.json{part}" "$report.detect.json"
status=0
"$FLEET_PYTHON" -m torchenv validate --level "$FLEET_LEVEL"{timeout} --json \\
    --junit "$report.junit.xml" --nnodes "$FLEET_NNODES" --node-rank "$FLEET_NODE_RANK" \\
    --rdzv-endpoint "$FLEET_RDZV_ENDPOINT" > "$report.validate.json{part}" \\
    2>> "$report.stderr" || status=$?
mv -f "$report.validate.json{part}" "$report.validate.json"
echo "$status" > "$report.exit"
"""


def probe_script(run: NodeRun) -> str:
    """The shell lines of one node in a blame probe: the collective alone (``FLEET_PROBE_NNODES``
    1) or with one other node, bounded by ``FLEET_PROBE_TIMEOUT`` seconds per check. They need
    ``FLEET_PYTHON``, ``FLEET_NODE``, ``FLEET_NODE_RANK`` (0 or 1 within the probe),
    ``FLEET_PROBE_DIR`` and, for a pair, ``FLEET_PROBE_ENDPOINT`` (the first node's HOST:PORT);
    the reports are named as the node's own (NODE.validate.json, NODE.exit, NODE.stderr)."""
    part = PARTIAL_SUFFIX
    return f"""\
report="$FLEET_PROBE_DIR/$FLEET_NODE"
status=0
"$FLEET_PYTHON" -m torchenv validate --level full --only {PROBE_CHECKS} \\
    --timeout "$FLEET_PROBE_TIMEOUT" --json --nnodes "$FLEET_PROBE_NNODES" \\
    --node-rank "$FLEET_NODE_RANK" \\
    ${{FLEET_PROBE_ENDPOINT:+--rdzv-endpoint "$FLEET_PROBE_ENDPOINT"}} \\
    > "$report.validate.json{part}" 2> "$report.stderr" || status=$?
mv -f "$report.validate.json{part}" "$report.validate.json"
echo "$status" > "$report.exit"
"""
