"""``fleet report`` for people: the fleet as a table, the skew, the findings, the nodes to drain."""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from torchenv.cli._common import console
from torchenv.fleet.verdict import FleetVerdict, NodeSummary

__all__ = ["drain_commands", "render_verdict"]

_STATUS_STYLE = {"pass": "[green]ok[/]", "fail": "[bold red]FAIL[/]",
                 "incomplete": "[yellow]incomplete[/]", "missing": "[bold red]no report[/]",
                 "suspect": "[yellow]suspect[/]"}


def _problems_cell(node: NodeSummary, width: int = 70) -> str:
    lines = [f"{f.name}: {_short(f.error, width)}" for f in node.failed]
    lines += [f"{f.name} (advisory): {_short(f.error, width)}" for f in node.advisory]
    if node.collective and node.status != "pass":
        lines.append("multi-node: " + ", ".join(f.name for f in node.collective) + " failed")
    lines += [_short(p, width + 20) for p in node.problems]
    # the cause: the signal, the failing check's last error line, the end of stderr
    lines += [_short(c, width + 20) for c in node.cause if c not in lines[:1]]
    return "\n".join(lines)


def _short(text: str, width: int) -> str:
    first = text.strip().splitlines()[0] if text.strip() else ""
    return first if len(first) <= width else first[:width - 1] + "…"


def drain_commands(nodes: Sequence[str]) -> dict[str, str]:
    """How to take ``nodes`` out of service, per scheduler (to show; torchenv runs neither).

    Every name must be a node name (:func:`torchenv.fleet.node.bad_node_name`; the reports
    are read that way, so this only guards against a caller that skipped it): none can start
    with ``-``, and ``kubectl cordon`` gets ``--`` before them. ``scontrol update`` takes no
    ``--``; its names sit inside ``NodeName=``."""
    from torchenv.errors import BadInput
    from torchenv.fleet.node import bad_node_name

    for name in nodes:
        why = bad_node_name(name)
        if why is not None:
            raise BadInput(f"no drain command: {why}", field="node", value=name)
    slurm = ["scontrol", "update", f"NodeName={','.join(nodes)}", "State=DRAIN",
             "Reason=torchenv fleet report"]
    return {"slurm": shlex.join(slurm),
            "kubernetes": shlex.join(["kubectl", "cordon", "--", *nodes])}


def render_verdict(verdict: FleetVerdict) -> None:
    """Print the fleet table, the skew, the findings and the nodes to drain."""
    from rich.markup import escape
    from rich.table import Table

    out = console()
    counts = verdict.counts()
    expected = f", {verdict.expected} expected" if verdict.expected is not None else ""
    plural = "node" if counts["nodes"] == 1 else "nodes"
    table = Table(title=escape(f"torchenv fleet report — {verdict.directory} "
                               f"({counts['nodes']} {plural}{expected})"), title_justify="left")
    for col in ("node", "result", "GPUs", "driver", "torch", "failed checks / problems"):
        table.add_column(col, overflow="fold")
    outliers = verdict.outliers()
    for node in verdict.nodes:
        result = _STATUS_STYLE[node.status]
        if node.ok and node.node in outliers:
            result = "[bold red]skew[/]"  # passed alone, but differs from the fleet
        table.add_row(escape(node.node), result, escape(node.gpus_label),
                      escape(node.driver or "?"), escape(node.torch or "?"),
                      escape(_problems_cell(node)))
    out.print(table)
    for skew in verdict.skews:
        tag = "[yellow]skew (allowed)[/]" if skew.allowed else "[bold red]skew[/]"
        out.print(f"{tag} {escape(skew.describe())}", soft_wrap=True)
    for probe in verdict.probes:
        said = {True: "[green]passed[/]", False: "[bold red]failed[/]",
                None: "[yellow]did not finish[/]"}[probe.passed]
        why = f": {escape(probe.why)}" if probe.why else ""
        out.print(f"probe {escape(probe.name)} ({escape(' + '.join(probe.nodes))}) {said}{why}",
                  soft_wrap=True)
    for finding in verdict.findings:
        tag = "[bold red]error[/]" if finding.severity == "error" else "[yellow]warning[/]"
        out.print(f"{tag} {escape(finding.message)}", soft_wrap=True)
    if verdict.drain:
        out.print("[bold]Nodes to drain[/]")
        for name, reasons in verdict.drain:
            out.print(f"  {escape(name)}: {escape('; '.join(reasons))}", soft_wrap=True)
        for scheduler, command in drain_commands([n for n, _ in verdict.drain]).items():
            out.print(f"  [dim]{scheduler}: {escape(command)}[/]", soft_wrap=True)
    failing = [s.label for s in verdict.skews if not s.allowed]
    if verdict.ok:
        out.print(f"[green]OK[/]: {counts['pass']} of {counts['nodes']} nodes passed"
                  + (", no skew" if not verdict.skews else ", skew allowed"))
    else:
        parts = [f"{counts[s]} {label}" for s, label in (
            ("fail", "failed"), ("incomplete", "incomplete"), ("missing", "missing"),
            ("suspect", "suspect (kept in service)")) if counts[s]]
        if failing:
            parts.append("skew in " + ", ".join(failing))
        errors = sum(1 for f in verdict.findings if f.severity == "error")
        if errors:
            parts.append(f"{errors} fleet error(s)")
        out.print(f"[bold red]FAILED[/]: {'; '.join(parts)} "
                  f"({counts['pass']} of {counts['nodes']} nodes passed validation)")
