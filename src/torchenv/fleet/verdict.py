"""One verdict for a fleet: each node's result, the skew across nodes, and the nodes to drain.

:func:`judge` is pure: it takes the reports read by :func:`torchenv.fleet.reports.read_reports`
and what the caller expected (a node count or the node names), and returns a
:class:`FleetVerdict`. A node passes when its validation passed and its reports could be read;
it fails when a required check failed; it is ``incomplete`` when a report is missing, cut short
or unreadable, and ``missing`` when an expected node wrote nothing at all.

Skew is what breaks a cluster even when every node passes alone: different NVIDIA drivers,
torch builds, NCCL versions, GPU models, GPU counts or compiled arch lists across nodes. The
driver and the GPUs come from each node's detect report; the torch build from validate; NCCL
and the arch list from the detail of validate's ``build`` check. A value held by more than half
of the nodes that reported it is the fleet's; the other nodes are its outliers, and are drained.
Without such a majority the skew is reported and no node is singled out.
"""

from __future__ import annotations

import re
import signal
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal, Optional

from torchenv.fleet.reports import NodeReports, ProbeRun, ReportSet

if TYPE_CHECKING:
    from torchenv.fleet.blame import Probe
    from torchenv.validation.report import Report

__all__ = [
    "NONE",
    "SKEW_KINDS",
    "BuildFacts",
    "FailedCheck",
    "Finding",
    "FleetVerdict",
    "NodeStatus",
    "NodeSummary",
    "PlannedProbe",
    "Skew",
    "judge",
    "next_probes",
    "parse_build_detail",
    "probe_outcome",
    "required_checks",
    "summarize",
]

NodeStatus = Literal["pass", "fail", "incomplete", "missing", "suspect"]
"""``suspect``: the node passed its local checks, a multi-node collective it took part in
failed, and no probe could tell whether it is at fault (it stays in service)."""

NONE = "none"
"""A fact known to be absent (no NVIDIA driver, a build without NCCL); None means unknown."""

LOCAL_CHECKS = ("import_torch", "build")
"""Checks every validation must have passed, at any level, to prove anything."""
GLOO_COLLECTIVES = ("gloo_allreduce", "gloo_broadcast", "gloo_allgather", "ddp_step")
NCCL_COLLECTIVES = ("nccl_allreduce", "nccl_broadcast", "nccl_allgather")
COLLECTIVES = GLOO_COLLECTIVES + NCCL_COLLECTIVES
"""The checks that run across every node of a multi-node validation: their failure is the
fleet's, attributed to nodes by the blame probes, not by membership."""


def probe_checks(gpus: int) -> tuple[str, ...]:
    """The checks a blame probe must pass on a node with ``gpus`` GPUs."""
    return ("gloo_allreduce", "nccl_allreduce") if gpus else ("gloo_allreduce",)


def required_checks(level: str, gpus: int) -> tuple[str, ...]:
    """The checks a node's report must hold, passed, for the node to pass: the local ones at
    every level; at the full level the collectives too (NCCL's on a node with ``gpus``)."""
    if level != "full":
        return LOCAL_CHECKS
    return LOCAL_CHECKS + GLOO_COLLECTIVES + (NCCL_COLLECTIVES if gpus else ())


SKEW_KINDS = ("driver", "torch", "nccl", "gpu_model", "gpu_count", "arch_list")
_SKEW_LABELS = {"driver": "NVIDIA driver", "torch": "torch build", "nccl": "NCCL version",
                "gpu_model": "GPU model", "gpu_count": "GPU count",
                "arch_list": "compiled arch list"}


@dataclass(frozen=True)
class BuildFacts:
    """What validate's ``build`` check says about the torch build."""

    torch: Optional[str] = None
    cuda: Optional[str] = None
    cudnn: Optional[str] = None
    nccl: Optional[str] = None
    rocm: Optional[str] = None
    arch_list: Optional[tuple[str, ...]] = None
    cpu_only: bool = False


_FACT_RE = re.compile(r"^(torch|CUDA|cuDNN|NCCL|ROCm|arch) (.+)$")


def parse_build_detail(detail: str) -> BuildFacts:
    """The ``build`` check's detail, e.g.::

        torch 2.7.1+cu128, CUDA 12.8, cuDNN 90100, NCCL 2.26.2, arch sm_75 sm_80 sm_90 sm_120
        torch 2.13.0+cpu, CPU-only build
        torch 2.7.1+rocm6.3, ROCm 6.3.42131-fa1d09cbd

    ``no NCCL`` (and ``no cuDNN``) mean the build has none: :data:`NONE`.
    """
    facts: dict[str, str] = {}
    cpu_only = False
    for part in (p.strip() for p in detail.split(", ")):
        if part == "CPU-only build":
            cpu_only = True
        elif part in ("no NCCL", "no cuDNN"):
            facts[part[3:]] = NONE
        else:
            match = _FACT_RE.match(part)
            if match:
                facts[match[1]] = match[2].strip()
    arch = facts.get("arch")
    return BuildFacts(torch=facts.get("torch"), cuda=facts.get("CUDA"),
                      cudnn=facts.get("cuDNN"), nccl=facts.get("NCCL"), rocm=facts.get("ROCm"),
                      arch_list=tuple(arch.split()) if arch else None, cpu_only=cpu_only)


@dataclass(frozen=True)
class FailedCheck:
    name: str
    error: str
    hint: Optional[str] = None
    required: bool = True

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "error": self.error, "hint": self.hint,
                "required": self.required}


@dataclass(frozen=True)
class NodeSummary:
    """One node's result and the facts compared across nodes (None: unknown here)."""

    node: str
    status: NodeStatus
    gpu_count: Optional[int] = None
    gpu_models: Optional[tuple[str, ...]] = None
    driver: Optional[str] = None
    torch: Optional[str] = None
    cuda: Optional[str] = None
    nccl: Optional[str] = None
    arch_list: Optional[tuple[str, ...]] = None
    level: Optional[str] = None
    failed: tuple[FailedCheck, ...] = ()
    advisory: tuple[FailedCheck, ...] = ()
    collective: tuple[FailedCheck, ...] = ()
    """Multi-node collectives that failed: the fleet's failure, not by itself this node's."""
    problems: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    validate_origin: Optional[str] = None
    exit_status: Optional[int] = None
    cause: tuple[str, ...] = ()
    """The last error lines: the signal that ended validate, the failing check's error, the
    end of the node's stderr when no report says why."""
    report: Optional[Report] = field(default=None, repr=False, compare=False)

    @property
    def ok(self) -> bool:
        return self.status == "pass"

    @property
    def gpus_label(self) -> str:
        """``8× NVIDIA H100 80GB HBM3``; ``0`` for a node without GPUs; ``?`` when unknown."""
        if self.gpu_count is None or self.gpu_models is None:
            return "?"
        if not self.gpu_count:
            return "0"
        if len(self.gpu_models) == 1:
            return f"{self.gpu_count}× {self.gpu_models[0]}"
        return f"{self.gpu_count}: " + " + ".join(self.gpu_models)

    def fact(self, kind: str) -> Optional[str]:
        """This node's value for a skew kind, as compared across nodes."""
        if kind == "gpu_model":
            if self.gpu_models is None:
                return None
            return " + ".join(self.gpu_models) if self.gpu_models else NONE
        if kind == "gpu_count":
            return None if self.gpu_count is None else str(self.gpu_count)
        if kind == "arch_list":
            if self.arch_list is None:
                return None
            return " ".join(self.arch_list) if self.arch_list else NONE
        value: Optional[str] = getattr(self, kind)
        return value

    def to_json(self) -> dict[str, Any]:
        return {"node": self.node, "status": self.status, "ok": self.ok,
                "gpus": self.gpu_count,
                "gpu_models": list(self.gpu_models) if self.gpu_models is not None else None,
                "driver": self.driver, "torch": self.torch, "cuda": self.cuda,
                "nccl": self.nccl,
                "arch_list": list(self.arch_list) if self.arch_list is not None else None,
                "level": self.level, "failed_checks": [f.to_json() for f in self.failed],
                "advisory_failures": [f.to_json() for f in self.advisory],
                "collective_failures": [f.to_json() for f in self.collective],
                "problems": list(self.problems), "notes": list(self.notes),
                "validate_report": self.validate_origin, "exit_status": self.exit_status,
                "cause": list(self.cause)}


def summarize(reports: NodeReports, *, multi_node: bool = False) -> NodeSummary:
    """The facts and the result of one node from its reports.

    A node passes only when its report proves something: every check its level requires
    (:func:`required_checks`) is there and passed, the run was not interrupted, its exit file
    agrees with the report, and it validated every GPU its detect report shows. With
    ``multi_node`` the collectives ran across the fleet: their failures are kept apart
    (``collective``) and a node whose local checks passed is ``suspect`` until the blame
    probes decide (:func:`judge`).
    """
    detect, validate = reports.detect, reports.validate
    gpu_count = gpu_models = driver = torch = None
    gpus_on_node: Optional[int] = None
    if detect is not None:
        gpus = detect.nvidia.visible_gpus() if detect.nvidia is not None else ()
        names = [g.name or "unknown GPU" for g in gpus]
        if detect.rocm is not None and detect.rocm.gfx_targets:
            names += list(detect.rocm.gfx_targets)
        gpu_count, gpu_models = len(names), tuple(sorted(set(names)))
        # every GPU of the node, visible to this job or not: the ones a fleet must validate
        gpus_on_node = len(detect.nvidia.gpus) if detect.nvidia is not None else 0
        # None: a driver is there but its version could not be read
        nv = detect.nvidia
        driver = NONE if nv is None else str(nv.driver_version) if nv.driver_version else None
        torch = detect.torch.version if detect.torch is not None else NONE
    build = BuildFacts()
    failed: list[FailedCheck] = []
    advisory: list[FailedCheck] = []
    collective: list[FailedCheck] = []
    problems = list(reports.problems)
    if validate is not None:
        torch = validate.torch or torch
        for check in validate.checks:
            if check.name == "build" and check.status == "pass" and check.detail:
                build = parse_build_detail(check.detail)
            if check.status == "fail":
                found = FailedCheck(check.name, check.error or "failed", check.hint,
                                    check.required)
                if not check.required:
                    advisory.append(found)
                elif multi_node and check.name in COLLECTIVES:
                    collective.append(found)
                else:
                    failed.append(found)
        failed += _unproven(validate, gpus_on_node or gpu_count or 0)
        problems += _disagreements(validate, reports.exit_status, gpus_on_node)
    nccl, arch = build.nccl, build.arch_list
    if build.cpu_only:
        nccl, arch = NONE, ()
    elif build.rocm is not None:
        nccl = nccl or NONE  # ROCm builds carry RCCL, which the build check does not name
    status: NodeStatus
    if failed:
        status = "fail"
    elif problems or validate is None:
        status = "incomplete"
    elif collective:
        status = "suspect"
    else:
        status = "pass"
    return NodeSummary(
        node=reports.node, status=status, gpu_count=gpu_count, gpu_models=gpu_models,
        driver=driver, torch=torch, cuda=build.cuda, nccl=nccl, arch_list=arch,
        level=validate.level if validate is not None else None, failed=tuple(failed),
        advisory=tuple(advisory), collective=tuple(collective), problems=tuple(problems),
        notes=reports.notes, validate_origin=reports.validate_origin,
        exit_status=reports.exit_status,
        cause=_cause(reports, failed or collective) if status != "pass" else (),
        report=validate)


def _unproven(validate: Report, gpus: int) -> list[FailedCheck]:
    """A failure for each check the level requires that the report lacks or did not pass."""
    by_name = {c.name: c for c in validate.checks}
    out = []
    for name in required_checks(validate.level, gpus):
        check = by_name.get(name)
        if check is None:
            out.append(FailedCheck(name, f"not in the report: the {validate.level} level "
                                         "requires it, so the report proves nothing"))
        elif check.status == "skip":
            out.append(FailedCheck(name, f"skipped ({check.reason or 'no reason given'}): the "
                                         f"{validate.level} level requires it to pass"))
    return out


def _validated_gpus(validate: Report) -> set[int]:
    """The CUDA devices that passed at least one check (``cuda`` is device 0)."""
    found = set()
    for check in validate.checks:
        device = check.device
        if check.status == "pass" and (device == "cuda" or device.startswith("cuda:")):
            index = device.partition(":")[2] or "0"
            if index.isdigit():
                found.add(int(index))
    return found


def _disagreements(validate: Report, exit_status: Optional[int], gpus_on_node: Optional[int]
                   ) -> list[str]:
    out = []
    if validate.interrupted:
        out.append(f"the validation was interrupted after {len(validate.checks)} check(s): "
                   "what did not run proved nothing")
    if exit_status is not None and (exit_status == 0) != validate.ok:
        out.append(f"its exit file says {exit_status} ({_exit_words(exit_status)}) but its "
                   f"report {'passed' if validate.ok else 'failed'}: the two disagree")
    validated = len(_validated_gpus(validate))
    if gpus_on_node is not None and validated < gpus_on_node:
        out.append(f"validated {validated} of its {gpus_on_node} GPU(s): "
                   f"{gpus_on_node - validated} left unvalidated (was the job given every GPU "
                   "of the node? --gpus-per-node)")
    return out


def _exit_words(status: int) -> str:
    if status > 128:
        try:
            name = signal.Signals(status - 128).name
        except ValueError:
            name = f"signal {status - 128}"
        killed = ", out of memory or killed" if status - 128 == signal.SIGKILL else ""
        return f"killed by signal {status - 128}, {name}{killed}"
    return "passed" if status == 0 else "failed" if status == 1 else "an error"


def _cause(reports: NodeReports, failed: Sequence[FailedCheck]) -> tuple[str, ...]:
    """The last error lines of a node that did not pass."""
    lines = []
    status = reports.exit_status
    if status is not None and status > 128:
        lines.append(f"validate {_exit_words(status)}")
    for check in failed[:1]:
        lines.append(f"{check.name}: {_last_line(check.error)}")
    if reports.validate is None or status not in (None, 0, 1):
        lines += reports.stderr_tail[-5:]
    return tuple(lines)


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else text


@dataclass(frozen=True)
class Skew:
    """Nodes that disagree on one fact: each value with its nodes (most common first)."""

    kind: str
    values: tuple[tuple[str, tuple[str, ...]], ...]
    majority: Optional[str]
    allowed: bool = False

    @property
    def label(self) -> str:
        return _SKEW_LABELS[self.kind]

    @property
    def outliers(self) -> tuple[str, ...]:
        """The nodes not holding the majority value (none without a majority)."""
        if self.majority is None:
            return ()
        return tuple(sorted(n for value, nodes in self.values if value != self.majority
                            for n in nodes))

    def describe(self) -> str:
        parts = "; ".join(f"{value} on {_names(nodes)}" for value, nodes in self.values)
        return f"{self.label}: {parts}"

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "label": self.label, "allowed": self.allowed,
                "majority": self.majority, "outliers": list(self.outliers),
                "values": [{"value": v, "nodes": list(n)} for v, n in self.values]}


def _names(nodes: Sequence[str], limit: int = 6) -> str:
    shown = ", ".join(nodes[:limit])
    return shown + (f" and {len(nodes) - limit} more" if len(nodes) > limit else "")


def find_skew(nodes: Iterable[NodeSummary], kind: str, *, allowed: bool = False
              ) -> Optional[Skew]:
    """The skew of one fact across ``nodes``; nodes for which it is unknown are left out."""
    by_value: dict[str, list[str]] = {}
    for node in nodes:
        value = node.fact(kind)
        if value is not None:
            by_value.setdefault(value, []).append(node.node)
    if len(by_value) < 2:
        return None
    total = sum(len(v) for v in by_value.values())
    ordered = sorted(by_value.items(), key=lambda item: (-len(item[1]), item[0]))
    top_value, top_nodes = ordered[0]
    majority = top_value if 2 * len(top_nodes) > total else None
    return Skew(kind=kind, values=tuple((v, tuple(sorted(n))) for v, n in ordered),
                majority=majority, allowed=allowed)


@dataclass(frozen=True)
class Finding:
    """A fact about the fleet as a whole; ``error`` findings fail the verdict."""

    severity: Literal["error", "warning"]
    message: str

    def to_json(self) -> dict[str, Any]:
        return {"severity": self.severity, "message": self.message}


@dataclass(frozen=True)
class PlannedProbe:
    """A blame probe to run: its folder under ``probes/`` (``ROUND+NODE[+NODE]``), its round
    and its nodes; :class:`ProbeResult` is what it showed once it ran."""

    name: str
    round: int
    nodes: Probe

    def to_json(self) -> dict[str, Any]:
        return {"probe": self.name, "round": self.round, "nodes": list(self.nodes)}


@dataclass(frozen=True)
class ProbeResult:
    """A blame probe and what it showed: True (passed), False (failed), None (it did not
    finish, so it decides nothing); ``why`` says what failed, or what is missing."""

    name: str
    round: int
    nodes: tuple[str, ...]
    passed: Optional[bool]
    why: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"probe": self.name, "round": self.round, "nodes": list(self.nodes),
                "passed": self.passed, "why": self.why}


def probe_outcome(run: ProbeRun, gpus: Callable[[str], int]) -> ProbeResult:
    """Whether a probe passed: every member finished (wrote its exit file) and passed the
    probe's checks (:func:`probe_checks` for its ``gpus``). A member that did not finish
    leaves the probe undecided (None), never failed."""
    members = {r.node: r for r in run.reports}
    for node in run.nodes:
        member = members.get(node)
        if member is None or member.exit_status is None:
            return ProbeResult(run.name, run.round, run.nodes, None,
                               f"{node} did not finish its probe")
    for node in run.nodes:
        member = members[node]
        if member.validate is None:
            why = member.problems[0] if member.problems else "no validate report"
            return ProbeResult(run.name, run.round, run.nodes, False, f"{node}: {why}")
        checks = {c.name: c for c in member.validate.checks}
        for name in probe_checks(gpus(node)):
            check = checks.get(name)
            if check is None or check.status != "pass":
                said = ("not in its report" if check is None else
                        _last_line(check.error or check.reason or check.status))
                return ProbeResult(run.name, run.round, run.nodes, False,
                                   f"{node}: {name}: {said}")
    return ProbeResult(run.name, run.round, run.nodes, True)


@dataclass(frozen=True)
class FleetVerdict:
    directory: str
    nodes: tuple[NodeSummary, ...]
    skews: tuple[Skew, ...]
    drain: tuple[tuple[str, tuple[str, ...]], ...]
    findings: tuple[Finding, ...] = ()
    expected: Optional[int] = None
    ignored: tuple[str, ...] = ()
    job_end: Optional[str] = None
    """``cancelled`` or ``time-limit`` when the job was stopped before its nodes finished."""
    probes: tuple[ProbeResult, ...] = ()
    """The blame probes that ran, each with its outcome."""

    @property
    def ok(self) -> bool:
        return (all(n.ok for n in self.nodes) and not any(not s.allowed for s in self.skews)
                and not any(f.severity == "error" for f in self.findings))

    def outliers(self) -> dict[str, tuple[str, ...]]:
        """Each node that differs from the fleet's majority, with the skew kinds it is off in
        (allowed skew left out)."""
        found: dict[str, list[str]] = {}
        for skew in self.skews:
            if not skew.allowed:
                for name in skew.outliers:
                    found.setdefault(name, []).append(skew.kind)
        return {name: tuple(kinds) for name, kinds in found.items()}

    def counts(self) -> dict[str, int]:
        counts = {"nodes": len(self.nodes)}
        for status in ("pass", "fail", "incomplete", "missing", "suspect"):
            counts[status] = sum(1 for n in self.nodes if n.status == status)
        return counts

    def to_json(self) -> dict[str, Any]:
        outliers = self.outliers()
        return {"ok": self.ok, "directory": self.directory, "expected_nodes": self.expected,
                "counts": self.counts(),
                "nodes": [{**n.to_json(), "skew": list(outliers.get(n.node, ()))}
                          for n in self.nodes],
                "skew": [s.to_json() for s in self.skews],
                "drain": [{"node": node, "reasons": list(reasons)}
                          for node, reasons in self.drain],
                "findings": [f.to_json() for f in self.findings],
                "ignored_files": list(self.ignored), "job_end": self.job_end,
                "probes": [p.to_json() for p in self.probes]}


def judge(reports: ReportSet, *, expected_nodes: Optional[Sequence[str]] = None,
          expected_count: Optional[int] = None, allow_skew: Collection[str] = ()
          ) -> FleetVerdict:
    """The verdict over ``reports``. ``expected_nodes`` names the nodes that should have
    reported (each silent one is ``missing``); ``expected_count`` only counts them.
    ``allow_skew`` lists skew kinds that are reported but do not fail the verdict."""
    fleet_size = max(len(reports.nodes), len(set(expected_nodes or ())), expected_count or 0)
    summaries = {r.node: summarize(r, multi_node=fleet_size > 1) for r in reports.nodes}
    findings = [Finding("error", f"{p}") for p in reports.problems]
    if expected_nodes is not None:
        wanted = list(dict.fromkeys(expected_nodes))
        for name in wanted:
            if name not in summaries:
                summaries[name] = NodeSummary(node=name, status="missing",
                                              problems=("wrote no report",))
        strangers = sorted(set(summaries) - set(wanted))
        if strangers:
            findings.append(Finding("warning", f"reports from nodes not in the expected list: "
                                               f"{_names(strangers)}"))
    expected = len(set(expected_nodes)) if expected_nodes is not None else expected_count
    if expected_nodes is None and expected_count is not None:
        heard = len(summaries)
        if heard < expected_count:
            findings.append(Finding("error", f"{expected_count - heard} of {expected_count} "
                                             "expected nodes wrote no report (give the node "
                                             "names with --nodes-file to name them)"))
        elif heard > expected_count:
            findings.append(Finding("warning", f"{heard} nodes reported, {expected_count} "
                                               "expected"))
    probes = _blame(summaries, reports, findings)
    nodes = tuple(summaries[name] for name in sorted(summaries))
    skews = tuple(s for kind in SKEW_KINDS
                  if (s := find_skew(nodes, kind, allowed=kind in allow_skew)) is not None)
    if reports.job_end == "cancelled":
        findings.append(Finding("error", "the job was cancelled before its nodes finished: "
                                         "no node is blamed for it, none is drained"))
    elif reports.job_end == "time-limit":
        findings.append(Finding("error", "the job reached its time limit: the nodes still "
                                         "running were stopped (a node that hung is named "
                                         "below, its report cut short or missing)"))
    levels = sorted({n.level for n in nodes if n.level})
    if len(levels) > 1:
        findings.append(Finding("warning", f"nodes ran different validation levels: "
                                           f"{', '.join(levels)}"))
    drain = () if reports.job_end == "cancelled" else _drain(nodes, skews)
    return FleetVerdict(directory=reports.directory, nodes=nodes, skews=skews,
                        drain=drain, findings=tuple(findings),
                        expected=expected, ignored=reports.ignored, job_end=reports.job_end,
                        probes=probes)


def _probe_results(summaries: Mapping[str, NodeSummary], reports: ReportSet
                   ) -> list[ProbeResult]:
    def gpus(node: str) -> int:
        summary = summaries.get(node)
        return summary.gpu_count or 0 if summary is not None else 0

    return [probe_outcome(run, gpus) for run in reports.probes]


def next_probes(reports: ReportSet, *, expected_nodes: Optional[Sequence[str]] = None,
                expected_count: Optional[int] = None) -> list[PlannedProbe]:
    """The blame probes of the next round: among the nodes that
    passed their local checks while a multi-node collective failed (see
    :mod:`torchenv.fleet.blame`); [] when there is nothing (more) to probe."""
    from torchenv.fleet.blame import probe_rounds, round_number

    size = max(len(reports.nodes), len(set(expected_nodes or ())), expected_count or 0)
    if size < 2:
        return []
    summaries = {r.node: summarize(r, multi_node=True) for r in reports.nodes}
    candidates = [n for n, s in summaries.items() if s.status == "suspect"]
    outcomes = {r.nodes: r.passed for r in _probe_results(summaries, reports)}
    number = round_number(outcomes)
    return [PlannedProbe(f"{number}+{'+'.join(probe)}", number, probe)
            for probe in probe_rounds(candidates, outcomes)]


def _blame(summaries: dict[str, NodeSummary], reports: ReportSet, findings: list[Finding]
           ) -> tuple[ProbeResult, ...]:
    """Decide the ``suspect`` nodes by the probes' outcomes: broken ones fail, cleared ones
    pass; the rest stay suspects. Adds a finding saying what the collective failure is
    explained by, or that it is not."""
    from torchenv.fleet.blame import attribute

    results = _probe_results(summaries, reports)
    candidates = sorted(n for n, s in summaries.items() if s.status == "suspect")
    if not candidates:
        return tuple(results)
    by_nodes = {r.nodes: r for r in results}
    found = attribute(candidates, {r.nodes: r.passed for r in results})
    for name in found.broken:
        probe = by_nodes[found.evidence[name]]
        if len(probe.nodes) == 1:
            error = f"fails the collective alone (probe {probe.name}): {probe.why}"
        else:
            partner = next(n for n in probe.nodes if n != name)
            error = (f"fails the collective with {partner}, which passed with another node "
                     f"(probe {probe.name}): {probe.why}")
        old = summaries[name]
        summaries[name] = replace(old, status="fail", failed=(FailedCheck("fabric", error),))
    for name in found.cleared:
        probe = by_nodes[found.evidence[name]]
        partner = next(n for n in probe.nodes if n != name)
        old = summaries[name]
        summaries[name] = replace(old, status="pass", cause=(), notes=(
            *old.notes, f"the fleet's collective failed, but its probe with {partner} passed "
                        f"(probe {probe.name})"))
    if found.unresolved:
        tried = [r for r in results if set(r.nodes) & set(found.unresolved)]
        how = ("no probe ran (" + (f"the job ended first: {reports.job_end}"
                                   if reports.job_end else
                                   "the Slurm script runs them; a Kubernetes Job does not") + ")"
               if not results else
               "the probes could not tell: " + "; ".join(
                   f"{r.name} {_OUTCOME[r.passed]}" + (f" ({r.why})" if r.why else "")
                   for r in tried[-4:]))
        for name in found.unresolved:
            old = summaries[name]
            summaries[name] = replace(old, problems=(
                *old.problems, "passed its local checks; suspect: a multi-node collective "
                               "failed (kept in service)"))
        others = sorted(n for n, s in summaries.items()
                        if n not in found.unresolved and s.status in ("fail", "incomplete",
                                                                      "missing"))
        explained = (f"; the nodes that failed or did not report ({_names(others)}) may "
                     "explain it") if others else ""
        findings.append(Finding(
            "error", f"a multi-node collective failed and {_names(list(found.unresolved))} "
                     f"could not be cleared: {how}{explained}"))
    elif not found.broken:
        findings.append(Finding("error", "a multi-node collective failed, but every probe "
                                         "passed: a transient fault, or one that needs more "
                                         "than two nodes to show"))
    return tuple(results)


_OUTCOME = {True: "passed", False: "failed", None: "did not finish"}


def _drain(nodes: Sequence[NodeSummary], skews: Sequence[Skew]
           ) -> tuple[tuple[str, tuple[str, ...]], ...]:
    reasons: dict[str, list[str]] = {}
    for node in nodes:
        if node.failed:
            reasons.setdefault(node.node, []).append(
                "failed " + ", ".join(f.name for f in node.failed))
        if node.status in ("incomplete", "missing"):
            reasons.setdefault(node.node, []).extend(node.problems or ("no validate report",))
    for skew in skews:
        if skew.allowed or skew.majority is None:
            continue
        for name in skew.outliers:
            value = next(n for n in nodes if n.node == name).fact(skew.kind)
            reasons.setdefault(name, []).append(
                f"{skew.label} {value} differs from the fleet's {skew.majority}")
    return tuple((name, tuple(reasons[name])) for name in sorted(reasons))
