"""Validation results and their renderings: the ``validate --json`` document and JUnit XML."""

from __future__ import annotations

import os
import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Optional

__all__ = ["CheckResult", "Report", "Status", "junit_bytes", "write_junit"]

Status = Literal["pass", "fail", "skip"]
STATUSES: tuple[str, ...] = ("pass", "fail", "skip")


@dataclass(frozen=True)
class CheckResult:
    """One check's verdict. ``error``/``hint`` only on fail, ``reason`` only on skip."""

    name: str
    status: Status
    seconds: float = 0.0
    device: str = "cpu"
    required: bool = True
    detail: Optional[str] = None
    error: Optional[str] = None
    hint: Optional[str] = None
    reason: Optional[str] = None
    level: str = "quick"
    metrics: Mapping[str, Any] = field(default_factory=dict)
    log: Optional[str] = None

    @classmethod
    def from_child(cls, doc: Mapping[str, Any], *, level: str = "quick") -> CheckResult:
        """A result as the probe reported it (unknown keys are ignored)."""
        raw = doc.get("status")
        status: Status = raw if raw in ("pass", "skip") else "fail"
        return cls(
            name=str(doc["name"]),
            status=status,
            seconds=float(doc.get("seconds") or 0.0),
            device=str(doc.get("device") or "cpu"),
            required=bool(doc.get("required", True)),
            detail=doc.get("detail"),
            error=doc.get("error") or (None if status != "fail" else "failed"),
            hint=doc.get("hint"),
            reason=doc.get("reason"),
            level=level,
            metrics=dict(doc.get("metrics") or {}),
            log=doc.get("traceback"),
        )

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"name": self.name, "status": self.status,
                               "seconds": round(self.seconds, 3), "device": self.device,
                               "required": self.required, "level": self.level}
        for key in ("detail", "error", "hint", "reason"):
            value = getattr(self, key)
            if value is not None:
                doc[key] = value
        if self.metrics:
            doc["metrics"] = dict(self.metrics)
        return doc


@dataclass(frozen=True)
class Report:
    """A whole run: the interpreter, its torch (None when it could not be imported), the checks.

    ``interrupted``: the run was stopped (Ctrl-C, SIGTERM) and ``checks`` are those that
    finished; such a report is never ``ok``, since what did not run proved nothing.
    """

    python: str
    torch: Optional[str]
    level: str
    checks: tuple[CheckResult, ...]
    seconds: float = 0.0
    interrupted: bool = False
    companions: tuple[str, ...] = ()
    """The companion packages ``--with`` asked to prove (echoed as ``with``)."""

    @property
    def ok(self) -> bool:
        return not self.interrupted and not any(c.status == "fail" and c.required
                                                for c in self.checks)

    def counts(self) -> dict[str, int]:
        return {s: sum(1 for c in self.checks if c.status == s) for s in STATUSES}

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"ok": self.ok, "python": self.python, "torch": self.torch,
                               "level": self.level, "seconds": round(self.seconds, 3)}
        if self.interrupted:
            doc["interrupted"] = True
        if self.companions:
            doc["with"] = list(self.companions)
        doc["checks"] = [c.to_json() for c in self.checks]
        return doc

    def to_junit(self) -> ET.Element:
        counts = self.counts()
        suite = ET.Element("testsuite", {
            "name": f"torchenv.validate.{self.level}",
            "tests": str(len(self.checks)),
            "failures": str(counts["fail"]),
            "errors": "0",
            "skipped": str(counts["skip"]),
            "time": f"{self.seconds:.3f}",
        })
        props = ET.SubElement(suite, "properties")
        for key, value in (("python", self.python), ("torch", self.torch or "")):
            ET.SubElement(props, "property", {"name": key, "value": value})
        for c in self.checks:
            case = ET.SubElement(suite, "testcase", {
                "classname": f"torchenv.validate.{c.device}", "name": c.name,
                "time": f"{c.seconds:.3f}"})
            if c.status == "fail":
                message = c.error or "failed"
                failure = ET.SubElement(case, "failure", {"message": message,
                                                          "type": "required" if c.required
                                                          else "optional"})
                failure.text = "\n".join(x for x in (message, c.hint and f"hint: {c.hint}",
                                                     c.log) if x)
            elif c.status == "skip":
                ET.SubElement(case, "skipped", {"message": c.reason or ""})
            if c.detail:
                ET.SubElement(case, "system-out").text = c.detail
        return suite


# What XML 1.0 cannot hold (control characters but tab and line breaks, lone surrogates, the
# two non-characters), and the Unicode line separators and bidirectional overrides and
# isolates, which a CI page would show breaking or reordering what follows them.
_NOT_IN_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e"
                         "\u2066-\u2069\ud800-\udfff\ufffe\uffff]")


def junit_bytes(root: ET.Element) -> bytes:
    """``root`` as a UTF-8 XML document any JUnit reader parses: every text and attribute
    value (a check's error, a file name, a GPU name: text from outside) has what XML cannot
    hold shown as ``?``. The one serialiser of torchenv's JUnit files."""
    for element in root.iter():
        for key, value in element.attrib.items():
            element.set(key, _NOT_IN_XML.sub("?", value))
        if element.text:
            element.text = _NOT_IN_XML.sub("?", element.text)
        if element.tail:
            element.tail = _NOT_IN_XML.sub("?", element.tail)
    data: bytes = ET.tostring(root, encoding="utf-8", xml_declaration=True)
    return data


def write_junit(report: Report, path: str | os.PathLike[str]) -> None:
    """Write ``report`` as JUnit XML atomically (a temp file in the same folder, then replace)."""
    target = Path(path)
    root = ET.Element("testsuites", {"name": "torchenv validate",
                                     "tests": str(len(report.checks))})
    root.append(report.to_junit())
    data = junit_bytes(root)
    from torchenv._files import write_atomic

    write_atomic(target, data)
