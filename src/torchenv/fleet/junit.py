"""The fleet verdict for CI dashboards: one JUnit file.

The JUnit file has one ``testsuite`` for the fleet (a test case per skew kind, and one for the
expected node count when one was given) and one per node, named ``torchenv.fleet.NODE``: a
``reports`` case that fails when the node's reports are missing or unreadable, then every check
of its validation, with ``classname`` ``torchenv.fleet.NODE.DEVICE``.
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET

from torchenv.fleet.verdict import SKEW_KINDS, FleetVerdict, NodeSummary

__all__ = ["fleet_junit", "write_fleet_junit"]


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
                       ("driver", node.driver or ""), ("gpus", node.gpus_label)):
        ET.SubElement(props, "property", {"name": key, "value": value})
    reports = ET.SubElement(suite, "testcase", {"classname": prefix, "name": "reports",
                                                "time": "0.000"})
    if node.problems:
        failure = ET.SubElement(reports, "failure", {"message": node.problems[0],
                                                     "type": "reports"})
        failure.text = "\n".join(node.problems)
    if node.cause:
        ET.SubElement(reports, "system-err").text = "\n".join(node.cause)
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
    from torchenv.validation.report import junit_bytes

    write_atomic(os.fspath(path), junit_bytes(fleet_junit(verdict)))
