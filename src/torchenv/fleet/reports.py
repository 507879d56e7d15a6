"""Reading what the nodes of a fleet wrote: report files and saved pod logs, per node.

A folder holds, for each node, the files of :mod:`torchenv.fleet.node` (``NODE.detect.json``,
``NODE.validate.json``, ``NODE.junit.xml``, ``NODE.exit``) and/or logs (``*.log``) with the same
reports between marker lines. :func:`read_reports` is the only function here that touches the
file system; the parsers take text and say what is wrong with it. Nothing a node wrote makes
the reading fail: an empty file, text that is not JSON, a document of another shape, a report
cut short, all become problems of that node (each naming its file), and the fleet verdict
counts them.

A validate report is the ``validate --json`` document; without one the node's JUnit file is
read instead (so nodes that only ran ``validate --junit`` can be merged too). A missing detect
report is a note, not a problem: the node's verdict stands, only its driver and GPUs are unknown.
"""

from __future__ import annotations

import json
import os
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from torchenv.errors import BadInput
from torchenv.fleet.node import (
    JOB_END_FILE,
    JOB_ENDS,
    LOG_PREFIX_RE,
    MARKER_RE,
    PARTIAL_SUFFIX,
    PROBES_DIR,
    REPORT_KINDS,
    bad_node_name,
)

if TYPE_CHECKING:
    from torchenv.detection.profile import HostProfile
    from torchenv.validation.report import CheckResult, Report

__all__ = [
    "NodeReports",
    "ProbeRun",
    "RawReport",
    "ReportSet",
    "UnreadableReport",
    "has_reports",
    "node_reports",
    "parse_detect",
    "parse_exit",
    "parse_junit",
    "parse_log",
    "parse_validate",
    "read_reports",
]

MAX_LOG_BYTES = 64 * 1024 * 1024
"""The most read of one pod log; a full validation's log is far below it."""

STDERR_TAIL_BYTES = 16 * 1024
STDERR_TAIL_LINES = 12
"""What is kept of a node's stderr: its last lines, where a crash leaves its cause."""


class UnreadableReport(ValueError):
    """Raised by a parser when a report's text is not the report it should be; the message
    says what it is instead (without the file name, which the caller adds)."""


@dataclass(frozen=True)
class RawReport:
    """One report of one node as found: its text, where it came from, or why it has none.

    ``partial`` is a report whose writing never finished (a ``.part`` file, a log section with
    no end marker); ``error`` is why the file could not be read at all.
    """

    node: str
    kind: str
    origin: str
    text: Optional[str] = None
    partial: bool = False
    error: Optional[str] = None


@dataclass(frozen=True)
class NodeReports:
    """Everything read for one node. ``problems`` make the node's verdict fail; ``notes`` do not.

    ``validate_origin`` names the file (or log section) the verdict was read from;
    ``stderr_tail`` holds the last lines detect and validate wrote to stderr.
    """

    node: str
    detect: Optional[HostProfile] = None
    validate: Optional[Report] = None
    validate_origin: Optional[str] = None
    exit_status: Optional[int] = None
    problems: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    origins: tuple[str, ...] = ()
    stderr_tail: tuple[str, ...] = ()


@dataclass(frozen=True)
class ProbeRun:
    """One blame probe: the folder ``probes/ROUND+NODE[+NODE]`` and what its members wrote."""

    name: str
    round: int
    nodes: tuple[str, ...]
    reports: tuple[NodeReports, ...] = ()


@dataclass(frozen=True)
class ReportSet:
    """The reports of a folder, one entry per node (sorted by name), and the files ignored.

    ``job_end`` is why the job stopped before its nodes finished (``time-limit``,
    ``cancelled``), from the ``job-end`` file the Slurm script's trap writes; None otherwise.
    ``probes`` are the blame probes found in its ``probes`` subfolder, in the order they ran.
    """

    directory: str
    nodes: tuple[NodeReports, ...]
    ignored: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()
    job_end: Optional[str] = None
    probes: tuple[ProbeRun, ...] = ()


# ----------------------------------------------------------------------------- the file system

def read_reports(directory: str | os.PathLike[str]) -> ReportSet:
    """Read every report in ``directory`` and its ``probes`` subfolder.

    Nodes write into the folder (often shared storage), so nothing in it is trusted: only the
    regular files directly in it are opened, never through a symbolic link, never a file with
    a second name elsewhere (:func:`torchenv._files.read_bytes_capped` with ``regular_only``);
    each is read up to a cap, the folder up to :data:`MAX_ENTRIES` entries. A file that cannot
    be read is a problem of its node (or of the folder) naming the file and why, never quoting
    what it holds. Raises :class:`BadInput` only when ``directory`` itself cannot be listed.
    """
    from torchenv._files import absolute_path

    absolute_path(directory)  # a relative path in a folder that was deleted is refused by name
    return _read_folder(Path(directory), str(directory), probes=True)


MAX_ENTRIES = 200_000
"""The most entries of a report folder looked at: a fleet of 10,000 nodes writes ~50,000."""
MAX_FOLDER_BYTES = 1024 * 1024 * 1024
"""The most read of one folder's files in all (each file has its own cap as well)."""


def _entries(folder: Path, directory: str) -> tuple[list[tuple[str, int]], bool]:
    """The (name, mode) of the first :data:`MAX_ENTRIES` entries ``folder`` lists (links not
    followed), sorted by name, and whether it held more."""
    import itertools
    import stat

    hint = "give the folder the nodes wrote their reports to"
    try:
        with os.scandir(folder) as scan:
            listed = list(itertools.islice(scan, MAX_ENTRIES + 1))
            entries = []
            for entry in listed[:MAX_ENTRIES]:
                try:
                    mode = entry.stat(follow_symlinks=False).st_mode
                except OSError:
                    mode = stat.S_IFREG  # gone or unreadable: the open says which
                entries.append((entry.name, mode))
    except NotADirectoryError as exc:
        raise BadInput(f"{directory} is not a folder", hint=hint) from exc
    except OSError as exc:
        raise BadInput(f"{directory}: cannot list it: {exc.strerror or exc}", hint=hint) from exc
    return sorted(entries), len(listed) > MAX_ENTRIES


def _read_folder(folder: Path, directory: str, *, probes: bool) -> ReportSet:
    import stat

    from torchenv._files import MAX_READ_BYTES, read_bytes_capped

    entries, too_many = _entries(folder, directory)
    raws: list[RawReport] = []
    ignored: list[str] = []
    problems: list[str] = []
    if too_many:
        problems.append(f"the folder holds more than {MAX_ENTRIES:,} entries; only "
                        f"{MAX_ENTRIES:,} of them were read")
    job_end = None
    budget = MAX_FOLDER_BYTES
    for name, mode in entries:
        if stat.S_ISDIR(mode):
            continue
        path = folder / name
        kind, node, partial = _classify(name)
        is_log = kind is None and name.endswith(".log")
        if not stat.S_ISREG(mode):
            if name == JOB_END_FILE or kind is not None or is_log:
                refused = ("a symbolic link; not followed" if stat.S_ISLNK(mode)
                           else "not a regular file; not read")
                if kind is not None and not partial:
                    raws.append(RawReport(node=node or "", kind=kind, origin=name,
                                          error=refused))
                else:
                    problems.append(f"{name}: {refused}")
            else:
                ignored.append(name)
            continue
        if name == JOB_END_FILE:
            try:
                word = read_bytes_capped(path, limit=4096, regular_only=True)
                word_text = word.decode("utf-8", "replace").strip()
            except BadInput as exc:
                problems.append(f"{name}: {_after_path(exc.message, path)}")
                continue
            if word_text in JOB_ENDS:
                job_end = word_text
            else:  # what it holds is not shown: it may be anything
                problems.append(f"{name}: holds {len(word)} bytes that are not one of "
                                f"{', '.join(JOB_ENDS)}")
            continue
        if kind is None and not is_log:
            ignored.append(name)
            continue
        if partial:  # its text is not a report; that it is there is what counts
            raws.append(RawReport(node=node or "", kind=kind or "", origin=name, partial=True))
            continue
        if budget <= 0:
            over = (f"not read: the folder's files passed {_in_mib(MAX_FOLDER_BYTES)} in all")
            if is_log:
                problems.append(f"{name}: {over}")
            else:
                raws.append(RawReport(node=node or "", kind=kind or "", origin=name,
                                      error=over))
            continue
        try:
            if kind == "stderr":  # only its end matters, however long it grew
                data = read_bytes_capped(path, limit=STDERR_TAIL_BYTES, regular_only=True,
                                         last=True)
            else:
                data = read_bytes_capped(path, regular_only=True,
                                         limit=MAX_LOG_BYTES if is_log else MAX_READ_BYTES)
            budget -= len(data)
        except BadInput as exc:
            if is_log:
                problems.append(f"{name}: {_after_path(exc.message, path)}")
            else:
                raws.append(RawReport(node=node or "", kind=kind or "", origin=name,
                                      error=_after_path(exc.message, path)))
            continue
        if is_log:
            text = data.decode("utf-8", "replace")
            raws.extend(parse_log(text, origin=name))
            continue
        if kind == "stderr":
            raws.append(RawReport(node=node or "", kind=kind, origin=name,
                                  text=data.decode("utf-8", "replace")))
            continue
        try:
            raws.append(RawReport(node=node or "", kind=kind or "", origin=name,
                                  text=data.decode("utf-8")))
        except UnicodeDecodeError as exc:
            raws.append(RawReport(node=node or "", kind=kind or "", origin=name,
                                  error=f"not UTF-8 text (byte {exc.start})"))
    by_node: dict[str, list[RawReport]] = {}
    for raw in raws:
        by_node.setdefault(raw.node, []).append(raw)
    for node in sorted(by_node):  # a name that is not a node's never reaches a command
        why = bad_node_name(node)
        if why is not None:
            origins = ", ".join(r.origin for r in by_node.pop(node)[:3])
            problems.append(f"{origins}: {why}; not read")
    runs = _read_probes(folder / PROBES_DIR, problems) if probes else ()
    return ReportSet(directory=directory,
                     nodes=tuple(node_reports(n, by_node[n]) for n in sorted(by_node)),
                     ignored=tuple(ignored), problems=tuple(problems), job_end=job_end,
                     probes=runs)


def _in_mib(size: int) -> str:
    return f"{size / (1024 * 1024):,.0f} MiB" if size >= 1024 * 1024 else f"{size} bytes"


def _read_probes(folder: Path, problems: list[str]) -> tuple[ProbeRun, ...]:
    """The probe folders ``ROUND+NODE[+NODE]`` under ``folder`` (none when it is absent); a
    probe folder's own subfolders are not read, and neither is a link to a folder."""
    import stat

    try:
        if not stat.S_ISDIR(os.lstat(folder).st_mode):
            if os.path.lexists(folder):
                problems.append(f"{PROBES_DIR}: not a folder (a link is not followed); not read")
            return ()
        entries, too_many = _entries(folder, str(folder))
    except (OSError, BadInput):
        return ()
    if too_many:
        problems.append(f"{PROBES_DIR}: more than {MAX_ENTRIES:,} entries; only the first read")
    runs = []
    for name, mode in entries:
        if not stat.S_ISDIR(mode):
            if stat.S_ISLNK(mode):
                problems.append(f"{PROBES_DIR}/{name}: a symbolic link; not followed")
            continue
        number, _, rest = name.partition("+")
        nodes = tuple(rest.split("+"))
        why = next((w for n in nodes if (w := bad_node_name(n)) is not None), None)
        if not (number.isdigit() and len(number) <= 3) or not 1 <= len(nodes) <= 2 or why:
            problems.append(f"{PROBES_DIR}/{name}: not a probe folder (ROUND+NODE or "
                            f"ROUND+NODE+NODE){': ' + why if why else ''}; not read")
            continue
        try:
            found = _read_folder(folder / name, str(folder / name), probes=False)
        except BadInput as exc:
            problems.append(f"{PROBES_DIR}/{name}: {_after_path(exc.message, folder / name)}")
            continue
        strangers = sorted({r.node for r in found.nodes} - set(nodes))
        if strangers:
            problems.append(f"{PROBES_DIR}/{name}: reports of nodes not in the probe: "
                            f"{', '.join(strangers)}")
        problems.extend(f"{PROBES_DIR}/{name}/{p}" for p in found.problems)
        runs.append(ProbeRun(name=name, round=int(number), nodes=nodes,
                             reports=tuple(r for r in found.nodes if r.node in nodes)))
    return tuple(sorted(runs, key=lambda r: (r.round, r.nodes)))


def has_reports(directory: str | os.PathLike[str]) -> bool:
    """True when ``directory`` holds a file :func:`read_reports` would read."""
    try:
        names = [p.name for p in Path(directory).iterdir() if p.is_file() and not p.is_symlink()]
    except OSError:
        return False
    return any(_classify(n)[0] is not None or n.endswith(".log") for n in names)


def _classify(name: str) -> tuple[Optional[str], Optional[str], bool]:
    """``gpu-07.validate.json`` → (``validate.json``, ``gpu-07``, False); a ``.part`` suffix
    marks a report still being written; (None, None, False) for any other name."""
    partial = name.endswith(PARTIAL_SUFFIX)
    base = name[:-len(PARTIAL_SUFFIX)] if partial else name
    for kind in REPORT_KINDS:
        if base.endswith("." + kind) and len(base) > len(kind) + 1:
            return kind, base[:-len(kind) - 1], partial
    return None, None, False


def _after_path(message: str, path: Path) -> str:
    """A :class:`BadInput` message of :mod:`torchenv._files` without the path it starts with."""
    text = message.split(str(path), 1)[-1].lstrip(": ")
    return text or message


# ----------------------------------------------------------------------------- pod logs

def parse_log(text: str, *, origin: str) -> list[RawReport]:
    """The reports between marker lines in a pod log (see :mod:`torchenv.fleet.node`).

    Logs saved with ``kubectl logs --prefix`` work too: each line of a pod starts with its
    ``[pod/NAME/CONTAINER] `` prefix, and the sections of several pods may interleave. One pod
    writes one section at a time, so each prefix has at most one open section: a new begin
    marker, or no end marker at all (the pod was killed), leaves the open one a partial report.
    Each line is looked up by its prefix once, so the work grows with the log's length only.
    """
    found: list[RawReport] = []
    # prefix -> (kind, node, first line number, lines)
    open_sections: dict[str, tuple[str, str, int, list[str]]] = {}

    def cut_short(prefix: str) -> None:
        kind, node, start, lines = open_sections.pop(prefix)
        found.append(RawReport(node=node, kind=kind, origin=f"{origin}:{start}",
                               text="\n".join(lines), partial=True))

    for number, line in enumerate(text.splitlines(), start=1):
        match = MARKER_RE.match(line)
        if match:
            prefix, kind, node = match["prefix"], match["kind"], match["node"]
            section = open_sections.get(prefix)
            if match["edge"] == "begin":
                if section is not None:
                    cut_short(prefix)
                open_sections[prefix] = (kind, node, number, [])
            elif section is not None and section[:2] == (kind, node):
                del open_sections[prefix]
                found.append(RawReport(node=node, kind=kind, origin=f"{origin}:{section[2]}",
                                       text="\n".join(section[3])))
            continue
        if not open_sections:
            continue
        prefixed = LOG_PREFIX_RE.match(line)
        prefix = prefixed.group(0) if prefixed else ""
        if prefix in open_sections:
            open_sections[prefix][3].append(line[len(prefix):])
        elif "" in open_sections:  # a line of an unprefixed log that happens to start with [x]
            open_sections[""][3].append(line)
    for prefix in list(open_sections):
        cut_short(prefix)
    return found


# ----------------------------------------------------------------------------- one node

def node_reports(node: str, raws: Iterable[RawReport]) -> NodeReports:
    """Judge the reports found for ``node``: parse each, note what is missing or broken."""
    problems: list[str] = []
    notes: list[str] = []
    whole: dict[str, RawReport] = {}
    partial: dict[str, RawReport] = {}
    origins: list[str] = []
    stderr: list[str] = []
    for raw in raws:
        origins.append(raw.origin)
        if raw.kind == "stderr" and raw.error is None:  # not a report: the cause, when there is one
            stderr.extend(line.rstrip() for line in (raw.text or "").splitlines()
                          if line.strip())
            continue
        if raw.error is not None:
            problems.append(f"{raw.origin}: {raw.error}")
        elif raw.partial:
            partial.setdefault(raw.kind, raw)
        elif raw.kind in whole:
            # the same report from two places (a pod's log and the claim) is one report
            if (raw.text or "").strip() != (whole[raw.kind].text or "").strip():
                problems.append(f"{raw.origin}: a second, different {raw.kind} report for "
                                f"{node} (the first, {whole[raw.kind].origin}, is used): two "
                                "runs on one node?")
        else:
            whole[raw.kind] = raw
    for kind, raw in partial.items():
        if kind not in whole:
            problems.append(f"{raw.origin}: the {kind} report was cut short "
                            "(the node died or ran out of time while writing it)")

    detect = _parsed(whole.get("detect.json"), parse_detect, problems)
    exit_status = _parsed(whole.get("exit"), parse_exit, problems)
    validate = validate_origin = None
    json_raw, junit_raw = whole.get("validate.json"), whole.get("junit.xml")
    if json_raw is not None:
        validate = _parsed(json_raw, parse_validate, problems)
        validate_origin = json_raw.origin if validate is not None else None
    if validate is None and junit_raw is not None:  # the same verdict, in the other format
        validate = _parsed(junit_raw, parse_junit, problems)
        validate_origin = junit_raw.origin if validate is not None else None
    if validate is None and json_raw is None and junit_raw is None:
        status = f" (validate exited {exit_status})" if exit_status is not None else ""
        if "validate.json" not in partial:
            problems.append(("wrote no validate report" if detect is not None or whole
                             else "wrote no report") + status)
    if detect is None and "detect.json" not in whole and "detect.json" not in partial:
        notes.append("no detect report: its driver and GPUs are unknown")
    return NodeReports(node=node, detect=detect, validate=validate,
                       validate_origin=validate_origin, exit_status=exit_status,
                       problems=tuple(problems), notes=tuple(notes), origins=tuple(origins),
                       stderr_tail=tuple(stderr[-STDERR_TAIL_LINES:]))


def _parsed(raw: Optional[RawReport], parse: Any, problems: list[str]) -> Any:
    if raw is None or raw.text is None:
        return None
    try:
        return parse(raw.text)
    except UnreadableReport as exc:
        problems.append(f"{raw.origin}: {exc}")
        return None


# ----------------------------------------------------------------------------- parsers

def _json(text: str) -> Any:
    if not text.strip():
        raise UnreadableReport("empty")
    try:
        return json.loads(text)
    except ValueError as exc:
        raise UnreadableReport(f"not JSON ({exc})") from exc
    except RecursionError as exc:
        raise UnreadableReport("nested too deeply to be a report") from exc


def _shape(doc: Any) -> str:
    """What a JSON document looks like, for a message about the wrong one."""
    if not isinstance(doc, dict):
        return f"a JSON {type(doc).__name__.replace('dict', 'object')}"
    if "checks" in doc:
        return "a validate report"
    if "platform" in doc and "python" in doc:
        return "a detect report"
    if "error" in doc and "exit_code" in doc:
        return "an error document"
    return "a JSON object of another kind"


def _error_document(doc: Any, command: str) -> None:
    """A torchenv command that failed with ``--json`` printed ``{"error": ..., "exit_code": N}``."""
    if isinstance(doc, dict) and "error" in doc and "exit_code" in doc and "checks" not in doc:
        raise UnreadableReport(f"{command} stopped with exit {doc.get('exit_code')}: "
                               f"{doc.get('error')}")


def parse_detect(text: str) -> HostProfile:
    """A ``torchenv detect --json`` document."""
    from torchenv.detection.profile import HostProfile

    doc = _json(text)
    _error_document(doc, "detect")
    if not (isinstance(doc, dict) and "platform" in doc):
        raise UnreadableReport(f"{_shape(doc)}, not a detect report")
    try:
        return HostProfile.from_json(doc, origin="detect report")
    except BadInput as exc:
        raise UnreadableReport(_without_values(exc.message.removeprefix("detect report: "))) \
            from exc


_VALUE_STARTS = re.compile(r", got |['\"]")


def _without_values(message: str) -> str:
    """A reader's message about a document with the values it quotes left out: the key path
    and what is wrong stay, what the file holds is never shown (a report folder is shared, and
    a file in it may hold anything)."""
    match = _VALUE_STARTS.search(message)
    if match is None:
        return message
    where = message[:match.start()].rstrip(" :[(")
    return f"{where}: not a value a detect report holds there" if where else \
        "not a detect report torchenv can read"


_OPTIONAL_TEXT = ("detail", "error", "hint", "reason")


def parse_validate(text: str) -> Report:
    """A ``torchenv validate --json`` document. Its ``ok`` is recomputed from the checks and
    ``interrupted`` (a run stopped before its end is never ok), never taken from the document."""
    from torchenv.validation.report import Report

    doc = _json(text)
    _error_document(doc, "validate")
    if not isinstance(doc, dict) or not isinstance(doc.get("checks"), list):
        raise UnreadableReport(f"{_shape(doc)}, not a validate report")
    checks = tuple(_check(i, c) for i, c in enumerate(doc["checks"]))
    torch = doc.get("torch")
    try:
        seconds = float(doc.get("seconds") or 0.0)
    except (TypeError, ValueError):
        seconds = 0.0
    return Report(python=str(doc.get("python") or ""),
                  torch=torch if isinstance(torch, str) else None,
                  level=str(doc.get("level") or "unknown"), checks=checks, seconds=seconds,
                  interrupted=doc.get("interrupted") is True)


def _check(index: int, doc: Any) -> CheckResult:
    from torchenv.validation.report import STATUSES, CheckResult

    if not (isinstance(doc, dict) and isinstance(doc.get("name"), str)
            and doc.get("status") in STATUSES):
        raise UnreadableReport(f"check #{index + 1} is not a check result (needs a name and a "
                               f"status of {', '.join(STATUSES)})")
    text = {k: str(doc[k]) for k in _OPTIONAL_TEXT if doc.get(k) is not None}
    try:
        seconds = float(doc.get("seconds") or 0.0)
    except (TypeError, ValueError):
        seconds = 0.0
    metrics = doc.get("metrics")
    return CheckResult(name=doc["name"], status=doc["status"], seconds=seconds,
                       device=str(doc.get("device") or "cpu"),
                       required=doc.get("required") is not False,
                       level=str(doc.get("level") or "quick"),
                       metrics=dict(metrics) if isinstance(metrics, Mapping) else {}, **text)


_JUNIT_SUITE = "torchenv.validate."


def parse_junit(text: str) -> Report:
    """The JUnit XML that ``torchenv validate --junit`` writes (one ``testsuite``)."""
    from torchenv.validation.report import CheckResult, Report

    if not text.strip():
        raise UnreadableReport("empty")
    if "<!DOCTYPE" in text or "<!ENTITY" in text:
        raise UnreadableReport("XML with a DOCTYPE or entities is not a report torchenv wrote")
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise UnreadableReport(f"not XML ({exc})") from exc
    suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
    suite = next((s for s in suites if s.get("name", "").startswith(_JUNIT_SUITE)), None)
    if suite is None:
        raise UnreadableReport("not a torchenv validate JUnit report (no testsuite "
                               f"named {_JUNIT_SUITE}LEVEL)")
    level = suite.get("name", "")[len(_JUNIT_SUITE):]
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    checks = []
    for case in suite.findall("testcase"):
        failure, skipped = case.find("failure"), case.find("skipped")
        out = case.find("system-out")
        common: dict[str, Any] = {
            "name": case.get("name", "?"), "seconds": _float(case.get("time")),
            "device": case.get("classname", "").rpartition(".")[2] or "cpu", "level": level,
            "detail": out.text if out is not None and out.text else None}
        if failure is not None:
            checks.append(CheckResult(status="fail", error=failure.get("message") or "failed",
                                      required=failure.get("type") != "optional", **common))
        elif skipped is not None:
            checks.append(CheckResult(status="skip", reason=skipped.get("message") or "",
                                      **common))
        else:
            checks.append(CheckResult(status="pass", **common))
    if not checks:
        raise UnreadableReport("a JUnit report without test cases")
    return Report(python=props.get("python") or "", torch=props.get("torch") or None,
                  level=level, checks=tuple(checks), seconds=_float(suite.get("time")))


def _float(text: Optional[str]) -> float:
    try:
        return float(text or 0.0)
    except ValueError:
        return 0.0


def parse_exit(text: str) -> int:
    """validate's exit status, one integer."""
    value = text.strip()
    if not value:
        raise UnreadableReport("empty")
    if not (value.isascii() and value.lstrip("-").isdigit() and len(value) <= 4):
        # what it holds is not shown: a file in a shared folder may hold anything
        raise UnreadableReport(f"not an exit status ({len(text)} characters, not one integer)")
    return int(value)
