"""The collective checks: which torchrun launches they need, and what the ranks' journals say.

The ranks (``_dist_worker.py``) write one journal each, a JSON line per event as it happens, so
what a rank finished survives whatever happens to it later. This module plans the launches,
runs them through the one subprocess funnel, reads the journals (and NCCL's own logs) before the
run's temporary directory goes, and turns them into one result per check. Everything but
:func:`run_collectives` is pure.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Optional

from torchenv._subprocess import ProcessResult, run_to_files
from torchenv.validation.expected import FabricPath
from torchenv.validation.report import CheckResult

if TYPE_CHECKING:
    from torchenv.validation.options import ProgressEvent, ValidationOptions

__all__ = [
    "COLLECTIVE_CHECKS",
    "DIST_WORKER",
    "Collective",
    "Launch",
    "RankJournal",
    "collective_launches",
    "judge_bus_bandwidth",
    "merge_rank_results",
    "nccl_transports",
    "nccl_unavailable",
    "nccl_warnings",
    "read_journals",
    "run_collectives",
]

DIST_WORKER = Path(__file__).resolve().parent / "_dist_worker.py"
NO_CUDA = "no CUDA device"
DEFAULT_TIMEOUT = 300.0


@dataclass(frozen=True)
class Collective:
    """A collective check. ``nccl``: it needs NCCL, hence CUDA and whole GPUs (not slices)."""

    name: str
    nccl: bool
    required: bool = True


COLLECTIVE_CHECKS: tuple[Collective, ...] = (
    Collective("nccl_allreduce", nccl=True),
    Collective("nccl_broadcast", nccl=True),
    Collective("nccl_allgather", nccl=True),
    Collective("gloo_allreduce", nccl=False),
    Collective("gloo_broadcast", nccl=False),
    Collective("gloo_allgather", nccl=False),
    Collective("ddp_step", nccl=False),
    Collective("nccl_bus_bandwidth", nccl=True, required=False),
)
COLLECTIVE_NAMES = tuple(c.name for c in COLLECTIVE_CHECKS)


def nccl_unavailable(*, cuda_devices: int, nccl_available: bool,
                     slices: Sequence[str] = ()) -> Optional[str]:
    """Why NCCL cannot run here (the reason its checks are skips), or None when it can.

    ``slices`` describes each GPU that is a MIG instance or a vGPU: NCCL does not run
    between MIG instances (NVIDIA's MIG user guide: no peer-to-peer, no NCCL across them) and a
    vGPU's start-up fails in NCCL; neither is a fault of the install.
    """
    if not cuda_devices:
        return NO_CUDA
    if not nccl_available:
        return ("this torch build has no NCCL (Windows builds never do); the gloo checks ran "
                "instead")
    if slices:
        return ("NCCL does not run on GPU slices: " + "; ".join(slices)
                + "; the gloo checks ran instead")
    return None


@dataclass(frozen=True)
class Launch:
    """One torchrun of the collective checks."""

    backend: str
    nproc: int
    nnodes: int


def collective_launches(*, cuda_devices: int, nccl_usable: bool, nnodes: int,
                        nproc_per_node: Optional[int]) -> list[Launch]:
    """Which torchrun launches the collective checks need.

    NCCL runs one rank per GPU. With a single rank in the whole job no collective is possible:
    NCCL is only initialised (its checks are then skips), and the CPU collectives get a launch
    of their own with two gloo ranks, so they still prove something. Where NCCL cannot run
    (no GPU, no NCCL in the build, GPU slices) gloo runs alone.
    """
    if cuda_devices and nccl_usable:
        nproc = nproc_per_node or cuda_devices
        launches = [Launch("nccl", nproc, nnodes)]
        if nproc * nnodes == 1:
            launches.append(Launch("gloo", 2, 1))
        return launches
    return [Launch("gloo", nproc_per_node or 2, nnodes)]


def collective_deadline(timeout: float) -> tuple[float, float]:
    """(seconds for a whole torchrun, seconds it gets after SIGTERM) for a check budget.

    The process-group timeout bounds each collective, but not NCCL's communicator set-up nor a
    rank that never arrives; this bounds everything, leaving room to import torch.
    """
    slack = min(30.0, max(15.0, timeout))
    return timeout + slack, min(10.0, slack / 2)


# ------------------------------------------------------------------------------- journals

@dataclass(frozen=True)
class RankJournal:
    """What one rank wrote in ``rank<R>.jsonl``.

    ``step``: the step it had started and not finished when the journal ends (None when it
    finished everything it began); ``crash``: its own exception, when Python saw one.
    """

    rank: int
    results: tuple[Mapping[str, Any], ...] = ()
    step: Optional[str] = None
    crash: Optional[Mapping[str, Any]] = None
    done: bool = False
    notes: tuple[str, ...] = ()

    def result(self, name: str) -> Optional[Mapping[str, Any]]:
        return next((r for r in self.results if r.get("name") == name), None)


def read_journal(path: Path) -> RankJournal:
    """A journal as written; a line cut short by the rank's death is passed over."""
    rank = int(re.sub(r"\D", "", path.stem) or -1)
    results: list[Mapping[str, Any]] = []
    notes: list[str] = []
    step: Optional[str] = None
    crash: Optional[Mapping[str, Any]] = None
    done = False
    try:
        text = path.read_text("utf-8", "replace")
    except OSError:
        return RankJournal(rank)
    for line in text.splitlines():
        try:
            doc = json.loads(line)
        except ValueError:
            continue
        if not isinstance(doc, dict):
            continue
        event = doc.get("event")
        if event == "start":
            step = str(doc.get("name"))
        elif event == "result" and "name" in doc:
            results.append({k: v for k, v in doc.items() if k != "event"})
            step = None
        elif event == "started":
            step = None
            if doc.get("note"):
                notes.append(str(doc["note"]))
        elif event == "crash":
            crash = doc
            step = str(doc.get("during") or step or "start-up")
        elif event == "done":
            done, step = True, None
    return RankJournal(rank, tuple(results), step, crash, done, tuple(notes))


def read_journals(out_dir: Path) -> list[RankJournal]:
    return sorted((read_journal(p) for p in out_dir.glob("rank*.jsonl")), key=lambda j: j.rank)


def _why_missing(name: str, journals: Sequence[RankJournal], expected: int) -> tuple[str, str]:
    """(the error, the log) for a check that not every rank reported."""
    reported = [j for j in journals if j.result(name) is not None]
    missing = expected - len(reported)
    reasons, logs = [], []
    for j in journals:
        if j.result(name) is not None:
            continue
        if j.crash is not None:
            reasons.append(f"rank {j.rank} raised {j.crash.get('error')} during {j.step}")
            logs.append(f"rank {j.rank}:\n{j.crash.get('traceback') or ''}".rstrip())
        elif j.step == name:
            reasons.append(f"rank {j.rank} died during this check")
        elif j.step is not None:
            reasons.append(f"rank {j.rank} never got here: it died during {j.step}")
        else:
            reasons.append(f"rank {j.rank} stopped after its last result")
    silent = expected - len(journals)
    if silent > 0:
        reasons.append(f"{silent} rank{'s' if silent > 1 else ''} wrote nothing (died before "
                       "starting)")
    error = f"{missing} of {expected} local ranks reported no result"
    return error + (": " + "; ".join(reasons) if reasons else ""), "\n".join(logs)


def merge_rank_results(journals: Sequence[RankJournal], names: Sequence[str], *,
                       expected_ranks: int, level: str = "full") -> dict[str, CheckResult]:
    """One result per check name that any rank reported or that ``names`` lists.

    Fail when any rank failed it or when fewer than ``expected_ranks`` ranks reported it (a
    rank that hung or died proves nothing; the error says which rank died in which step and
    with which exception); skip when every rank skipped it (one rank: no collective was
    possible); pass otherwise. Timed by the slowest rank.
    """
    order = list(dict.fromkeys([*names, *(str(r["name"]) for j in journals
                                          for r in j.results)]))
    merged: dict[str, CheckResult] = {}
    for name in order:
        docs = [r for j in journals for r in j.results if r.get("name") == name]
        failed = [d for d in docs if d.get("status") not in ("pass", "skip")]
        first = failed[0] if failed else (docs[0] if docs else {})
        common: dict[str, Any] = {
            "name": name, "level": level, "device": str(first.get("device") or "cpu"),
            "seconds": max((float(d.get("seconds") or 0.0) for d in docs), default=0.0),
            "metrics": dict(first.get("metrics") or {})}
        if failed:
            error = f"rank {first.get('rank')}: {first.get('error') or 'failed'}"
            log = first.get("traceback")
            if len(docs) < expected_ranks:  # a rank's death is the likelier cause: say it too
                why, crash_log = _why_missing(name, journals, expected_ranks)
                error, log = f"{error}; {why}", "\n".join(x for x in (log, crash_log) if x)
            merged[name] = CheckResult(status="fail", error=error, log=log or None, **common)
        elif len(docs) < expected_ranks or not docs:
            error, log = _why_missing(name, journals, max(expected_ranks, 1))
            merged[name] = CheckResult(status="fail", error=error, log=log or None, **common)
        elif all(d.get("status") == "skip" for d in docs):
            merged[name] = CheckResult(status="skip", reason=str(first.get("reason")
                                                                 or "skipped"), **common)
        else:
            merged[name] = CheckResult(status="pass", detail=f"{first.get('detail')} "
                                       f"({len(docs)} local ranks agree)", **common)
    return merged


# ------------------------------------------------------------------------------- NCCL logs

_TRANSPORT_RE = re.compile(
    r"\bvia ((?:NET/[A-Za-z]+)|P2P(?:/[A-Za-z]+)?|SHM|CollNet[A-Za-z]*|NVLS)")
_WARN_RE = re.compile(r"\bNCCL WARN\b.*")


def _nccl_logs(out_dir: Path, limit: int) -> list[str]:
    texts = []
    for path in sorted(out_dir.glob("nccl.*.log")):
        try:
            with open(path, "rb") as f:
                texts.append(f.read(limit).decode("utf-8", "replace"))
        except OSError:
            continue
    return texts


def nccl_transports(out_dir: Path, limit: int = 4 << 20) -> list[str]:
    """The transports NCCL chose, from its per-rank ``NCCL_DEBUG=INFO`` logs in ``out_dir``.

    NCCL logs one line per channel connection, e.g. ``Channel 00/0 : 0[0] -> 1[1] via P2P/IPC``
    or ``... [send] via NET/IB/0``; the kinds found are returned sorted.
    """
    found: set[str] = set()
    for text in _nccl_logs(out_dir, limit):
        found.update(m.group(1) for m in _TRANSPORT_RE.finditer(text))
    return sorted(found)


def nccl_warnings(out_dir: Path, keep: int = 5, limit: int = 4 << 20) -> list[str]:
    """The last ``keep`` ``NCCL WARN`` lines of the ranks' logs: NCCL's own account of a
    failure (``host:pid:tid [0] transport.cc:... NCCL WARN Cuda failure 'invalid argument'``)."""
    lines: list[str] = []
    for text in _nccl_logs(out_dir, limit):
        lines.extend(line.strip() for line in text.splitlines() if _WARN_RE.search(line))
    return lines[-keep:]


# ------------------------------------------------------------------------------- running

@dataclass
class _Outcome:
    launch: Launch
    proc: ProcessResult
    merged: dict[str, CheckResult]
    planned: bool
    """Whether its ranks listed their extra checks before the launch ended."""
    warnings: list[str] = field(default_factory=list)
    transports: list[str] = field(default_factory=list)


def _torchrun_argv(options: ValidationOptions, nproc: int, out_dir: Path, backend: str,
                   timeout: float) -> list[str]:
    argv = [options.python, "-m", "torch.distributed.run", "--nnodes", str(options.nnodes),
            "--nproc-per-node", str(nproc), "--max-restarts", "0"]
    if options.rdzv_endpoint:
        argv += ["--rdzv-backend", "c10d", "--rdzv-endpoint", options.rdzv_endpoint,
                 "--rdzv-id", "torchenv-validate"]
    elif options.nnodes == 1:
        argv += ["--standalone"]
    if options.node_rank is not None:
        argv += ["--node-rank", str(options.node_rank)]
    return [*argv, str(DIST_WORKER), str(out_dir), backend, str(timeout)]


def _launch_checks(launch: Launch) -> list[str]:
    """The checks a launch must report. A one-rank NCCL launch only starts NCCL: its gloo
    checks can only be skips, and a launch of their own proves them."""
    alone = launch.backend == "nccl" and launch.nproc * launch.nnodes == 1
    return [c.name for c in COLLECTIVE_CHECKS
            if (c.nccl if alone else launch.backend == "nccl" or not c.nccl)]


def judge_bus_bandwidth(result: CheckResult, transports: Sequence[str],
                        paths: Sequence[FabricPath]) -> CheckResult:
    """The bus bandwidth against what the path NCCL used is rated for: below the stated
    fraction (``busbw_floor_fraction`` in expected.yaml) it is a required failure; a path that
    cannot be judged (several nodes, links NVML did not describe) leaves the result optional."""
    from torchenv.validation.expected import expected_busbw, load_expected

    busbw = result.metrics.get("busbw_gbs")
    if result.status != "pass" or busbw is None:
        return result
    want, path = expected_busbw(transports, paths)
    metrics = {**result.metrics, "path": path, "expected_busbw_gbs": want,
               "nccl_transports": list(transports)}
    if want is None:
        return replace(result, metrics=metrics,
                       detail=f"{result.detail}; not judged: {path}")
    fraction = load_expected().busbw_floor_fraction
    floor = want * fraction
    metrics["floor_busbw_gbs"] = round(floor, 2)
    said = (f"busbw {float(busbw):.1f} GB/s is {float(busbw) / want:.0%} of the {want:g} GB/s "
            f"one direction of {path} is rated for")
    if float(busbw) >= floor:
        return replace(result, metrics=metrics, required=True, detail=f"{result.detail}; {said}")
    return replace(result, status="fail", required=True, metrics=metrics,
                   error=f"{said}: below {fraction:.0%}",
                   hint="check the links: nvidia-smi topo -m (the path between the GPUs), "
                        "nvidia-smi nvlink -s (links down), the PCIe width and generation "
                        "(health_pcie), and NCCL_P2P_DISABLE/NCCL_SHM_DISABLE in the "
                        "environment; NCCL_DEBUG=INFO shows the transport chosen")


def run_collectives(options: ValidationOptions, env: Mapping[str, str], scratch: Path,
                    notify: Callable[[ProgressEvent], None], *, cuda_devices: int,
                    nccl_available: bool, slices: Sequence[str], token: str,
                    fabric: Sequence[FabricPath] = (),
                    unknown: Sequence[str] = ()) -> list[CheckResult]:
    """Launch the collective checks with torchrun and judge those ``options`` selects;
    ``token`` marks every process of the launches so that none outlives them; ``fabric``
    describes the GPUs' links (NVML), to judge the bus bandwidth by.

    ``unknown``: names asked for that no other check has, which only the ranks can say are
    extra collectives; one no rank listed because a launch ended first is a failure of that
    launch, not a name that matched nothing.
    """
    timeout = options.timeout if options.timeout is not None else DEFAULT_TIMEOUT
    nccl_blocked = nccl_unavailable(cuda_devices=cuda_devices, nccl_available=nccl_available,
                                    slices=slices)
    launches = collective_launches(cuda_devices=cuda_devices, nccl_usable=nccl_blocked is None,
                                   nnodes=options.nnodes, nproc_per_node=options.nproc_per_node)
    for c in COLLECTIVE_CHECKS:
        if options.selects(c.name):
            notify(("start", c.name))
    limit, grace = collective_deadline(timeout)
    outcomes: list[_Outcome] = []
    extra_names: list[str] = []
    for launch in launches:
        out_dir = scratch / f"collectives-{launch.backend}"
        out_dir.mkdir()
        run_env = dict(env)
        run_env.setdefault("OMP_NUM_THREADS", "1")
        if launch.backend == "nccl" and "NCCL_DEBUG" not in run_env:
            run_env.update(NCCL_DEBUG="INFO", NCCL_DEBUG_FILE=str(out_dir / "nccl.%h.%p.log"))
        proc = run_to_files(_torchrun_argv(options, launch.nproc, out_dir, launch.backend,
                                           timeout),
                            timeout=limit, term_grace=grace, env=run_env,
                            cwd=str(scratch / "tmp"),
                            stdout_path=str(out_dir / "torchrun.out"),
                            stderr_path=str(out_dir / "torchrun.err"),
                            token=token or uuid.uuid4().hex)
        try:
            planned: Optional[list[str]] = [
                str(n) for n in json.loads((out_dir / "extra.json").read_text("utf-8"))]
        except (OSError, ValueError, TypeError):
            planned = None
        names = [*_launch_checks(launch), *(planned or ())]
        journals = read_journals(out_dir)
        merged = merge_rank_results(journals, names, expected_ranks=launch.nproc)
        transports = nccl_transports(out_dir) if launch.backend == "nccl" else []
        notes = sorted({n for j in journals for n in j.notes})  # e.g. why no device_id
        if (transports or notes) and "nccl_allreduce" in merged:
            r = merged["nccl_allreduce"]
            merged["nccl_allreduce"] = replace(
                r, detail="; ".join(x for x in (r.detail, transports and "transport "
                                                + ", ".join(transports), *notes) if x),
                metrics={**r.metrics, "nccl_transports": transports})
        extra_names = list(dict.fromkeys(
            [*extra_names, *(n for n in merged if n not in COLLECTIVE_NAMES)]))
        outcomes.append(_Outcome(launch, proc, merged, planned is not None,
                                 nccl_warnings(out_dir), transports))

    results: list[CheckResult] = []
    required = {c.name: c.required for c in COLLECTIVE_CHECKS}
    for name in [*COLLECTIVE_NAMES, *extra_names]:
        if not options.selects(name):
            continue
        needs_nccl = name in COLLECTIVE_NAMES and next(
            c.nccl for c in COLLECTIVE_CHECKS if c.name == name)
        result = _collective_result(name, needs_nccl, required.get(name, True), outcomes,
                                    nccl_blocked)
        if name == "nccl_bus_bandwidth":
            used = next((o.transports for o in outcomes if o.launch.backend == "nccl"), [])
            result = judge_bus_bandwidth(result, used, fabric)
        results.append(result)
        notify(("result", result))
    unplanned = next((o for o in outcomes if not o.planned), None)
    for name in unknown:
        if unplanned is not None and name not in extra_names:
            result = _unplanned(name, unplanned)
            results.append(result)
            notify(("result", result))
    return results


def _unplanned(name: str, o: _Outcome) -> CheckResult:
    launch = f"torchrun ({o.launch.backend}, {o.launch.nproc} processes)"
    return CheckResult(
        name=name, status="fail", seconds=o.proc.seconds, required=True, level="full",
        error=f"{launch} ended before its ranks listed their extra checks, so whether "
              f"{name!r} is one of them is unknown: {_torchrun_failure(o.proc)}",
        hint="see the log; 'torchenv validate --json' lists the names of the checks",
        log=o.proc.stderr.strip()[-3000:] or None)


def _collective_result(name: str, needs_nccl: bool, required: bool,
                       outcomes: Sequence[_Outcome], nccl_blocked: Optional[str]
                       ) -> CheckResult:
    device = "cuda" if needs_nccl else "cpu"
    if needs_nccl and nccl_blocked is not None:
        return CheckResult(name=name, status="skip", device=device, reason=nccl_blocked,
                           required=required, level="full")
    found = [(o, o.merged[name]) for o in outcomes if name in o.merged]
    # a launch that ran the check beats one that could only skip it (one rank)
    found.sort(key=lambda item: item[1].status == "skip")
    if not found:  # no launch could even plan it: the launches themselves failed
        o = next((o for o in outcomes if o.launch.backend == "nccl" or not needs_nccl),
                 outcomes[-1])
        return CheckResult(
            name=name, status="fail", seconds=o.proc.seconds, device=device,
            required=required, level="full",
            error=f"torchrun ({o.launch.backend}, {o.launch.nproc} processes): "
                  f"{_torchrun_failure(o.proc)}",
            hint="see the log; multi-node runs need --rdzv-endpoint reachable from every node",
            log=o.proc.stderr.strip()[-3000:] or None)
    o, r = found[0]
    if r.status != "fail":
        return replace(r, required=required, level="full")
    metrics = dict(r.metrics)
    error = r.error or "failed"
    if o.warnings:
        metrics["nccl_warnings"] = list(o.warnings)
        error += f"; NCCL: {o.warnings[-1]}"
    if not o.proc.ok:
        error += (f"; torchrun ({o.launch.backend}, {o.launch.nproc} processes): "
                  f"{_torchrun_failure(o.proc)}")
    log = "\n".join(x for x in (r.log, "\n".join(o.warnings),
                                o.proc.stderr.strip()[-3000:]) if x)
    return replace(r, required=required, level="full", error=error, metrics=metrics,
                   log=log or None,
                   hint=("check the network interfaces and firewall between ranks "
                         "(NCCL_DEBUG=INFO, GLOO_SOCKET_IFNAME); a rank that died names its "
                         "exception above"))


def _torchrun_failure(proc: ProcessResult) -> str:
    """The most telling line of a failed torchrun: its own summary ends in rulers (=====)."""
    if proc.timed_out or proc.error:
        return proc.describe_failure()
    telling = ("terminate called", "Error", "error:", "Signal", "exitcode", "refused")
    for line in reversed(proc.stderr.splitlines()):
        text = line.strip()
        if text and any(t in text for t in telling):
            return f"exit status {proc.returncode}: {text[:300]}"
    return proc.describe_failure()
