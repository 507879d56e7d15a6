"""The fleet verdict for people (a console table) and for CI dashboards (one JUnit file).

The JUnit file has one ``testsuite`` for the fleet (a test case per skew kind, and one for the
expected node count when one was given) and one per node, named ``torchenv.fleet.NODE``: a
``reports`` case that fails when the node's reports are missing or unreadable, then every check
of its validation, with ``classname`` ``torchenv.fleet.NODE.DEVICE``.
"""

from __future__ import annotations

import os
import shlex
import xml.etree.ElementTree as ET
from collections.abc import Sequence

from torchenv.fleet.verdict import SKEW_KINDS, FleetVerdict, NodeSummary

__all__ = ["drain_commands", "fleet_junit", "render_verdict", "write_fleet_junit"]

_STATUS_STYLE = {"pass": "[green]ok[/]", "fail": "[bold red]FAIL[/]",
                 "incomplete": "[yellow]incomplete[/]", "missing": "[bold red]no report[/]"}


def gpus_cell(node: NodeSummary) -> str:
    """``8× NVIDIA H100 80GB HBM3``; ``0`` for a node without GPUs; ``?`` when unknown."""
    if node.gpu_count is None or node.gpu_models is None:
        return "?"
    if not node.gpu_count:
        return "0"
    if len(node.gpu_models) == 1:
        return f"{node.gpu_count}× {node.gpu_models[0]}"
    return f"{node.gpu_count}: " + " + ".join(node.gpu_models)


def _problems_cell(node: NodeSummary, width: int = 70) -> str:
    lines = [f"{f.name}: {_short(f.error, width)}" for f in node.failed]
    lines += [f"{f.name} (advisory): {_short(f.error, width)}" for f in node.advisory]
    lines += [_short(p, width + 20) for p in node.problems]
    return "\n".join(lines)


def _short(text: str, width: int) -> str:
    first = text.strip().splitlines()[0] if text.strip() else ""
    return first if len(first) <= width else first[:width - 1] + "…"


def drain_commands(nodes: Sequence[str]) -> dict[str, str]:
    """How to take ``nodes`` out of service, per scheduler (to show; torchenv runs neither)."""
    slurm = ["scontrol", "update", f"NodeName={','.join(nodes)}", "State=DRAIN",
             "Reason=torchenv fleet report"]
    return {"slurm": shlex.join(slurm), "kubernetes": shlex.join(["kubectl", "cordon", *nodes])}


def render_verdict(verdict: FleetVerdict) -> None:
    """Print the fleet table, the skew, the findings and the nodes to drain."""
    from rich.markup import escape
    from rich.table import Table

    from torchenv.cli._common import console

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
        table.add_row(escape(node.node), result, escape(gpus_cell(node)),
                      escape(node.driver or "?"), escape(node.torch or "?"),
                      escape(_problems_cell(node)))
    out.print(table)
    for skew in verdict.skews:
        tag = "[yellow]skew (allowed)[/]" if skew.allowed else "[bold red]skew[/]"
        out.print(f"{tag} {escape(skew.describe())}", soft_wrap=True)
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
            ("fail", "failed"), ("incomplete", "incomplete"), ("missing", "missing"))
            if counts[s]]
        if failing:
            parts.append("skew in " + ", ".join(failing))
        errors = sum(1 for f in verdict.findings if f.severity == "error")
        if errors:
            parts.append(f"{errors} fleet error(s)")
        out.print(f"[bold red]FAILED[/]: {'; '.join(parts)} "
                  f"({counts['pass']} of {counts['nodes']} nodes passed validation)")


def fleet_junit(verdict: FleetVerdict) -> ET.Element:
    """The whole verdict as one JUnit ``testsuites`` element."""
    root = ET.Element("testsuites", {"name": "torchenv fleet"})
    fleet = ET.SubElement(root, "testsuite", {"name": "torchenv.fleet"})
    skews = {s.kind: s for s in verdict.skews}
    for kind in SKEW_KINDS:
        case = ET.SubElement(fleet, "testcase", {"classname": "torchenv.fleet.skew",
                                                 "name": kind, "time": "0.000"})
        skew = skews.get(kind)
        if skew is not None and skew.allowed:
            ET.SubElement(case, "skipped", {"message": "allowed: " + skew.describe()})
        elif skew is not None:
            failure = ET.SubElement(case, "failure", {"message": skew.describe(),
                                                      "type": "skew"})
            failure.text = skew.describe()
    errors = [f.message for f in verdict.findings if f.severity == "error"]
    if verdict.expected is not None or errors:
        case = ET.SubElement(fleet, "testcase", {"classname": "torchenv.fleet",
                                                 "name": "reports", "time": "0.000"})
        if errors:
            failure = ET.SubElement(case, "failure", {"message": errors[0], "type": "reports"})
            failure.text = "\n".join(errors)
    _count(fleet)
    for node in verdict.nodes:
        root.append(_node_suite(node))
    root.set("tests", str(sum(int(s.get("tests", "0")) for s in root)))
    root.set("failures", str(sum(int(s.get("failures", "0")) for s in root)))
    return root


def _node_suite(node: NodeSummary) -> ET.Element:
    prefix = f"torchenv.fleet.{node.node}"
    if node.report is not None:
        suite = node.report.to_junit()
        for case in suite.iter("testcase"):
            device = case.get("classname", "").rpartition(".")[2]
            case.set("classname", f"{prefix}.{device}")
        cases = list(suite.findall("testcase"))
        for case in cases:
            suite.remove(case)
    else:
        suite, cases = ET.Element("testsuite"), []
    suite.set("name", prefix)
    props = suite.find("properties")
    if props is None:
        props = ET.SubElement(suite, "properties")
    for key, value in (("node", node.node), ("status", node.status),
                       ("driver", node.driver or ""), ("gpus", gpus_cell(node))):
        ET.SubElement(props, "property", {"name": key, "value": value})
    reports = ET.SubElement(suite, "testcase", {"classname": prefix, "name": "reports",
                                                "time": "0.000"})
    if node.problems:
        failure = ET.SubElement(reports, "failure", {"message": node.problems[0],
                                                     "type": "reports"})
        failure.text = "\n".join(node.problems)
    suite.extend(cases)
    _count(suite)
    return suite


def _count(suite: ET.Element) -> None:
    cases = suite.findall("testcase")
    suite.set("tests", str(len(cases)))
    suite.set("failures", str(sum(1 for c in cases if c.find("failure") is not None)))
    suite.set("errors", "0")
    suite.set("skipped", str(sum(1 for c in cases if c.find("skipped") is not None)))
    suite.set("time", suite.get("time") or "0.000")


def write_fleet_junit(verdict: FleetVerdict, path: str | os.PathLike[str]) -> None:
    """Write :func:`fleet_junit` atomically (a temp file in the same folder, then replace)."""
    from torchenv._files import write_atomic

    write_atomic(os.fspath(path), ET.tostring(fleet_junit(verdict), encoding="utf-8",
                                   xml_declaration=True))
