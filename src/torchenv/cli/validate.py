"""``torchenv validate``: run real PyTorch checks in the target interpreter."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, Optional

from torchenv.cli._common import add_json_flag
from torchenv.cli._numbers import count
from torchenv.errors import BadInput

if TYPE_CHECKING:
    import argparse

    from torchenv.cli._common import Subcommands
    from torchenv.cli._progress import Steps
    from torchenv.matrix.companions import Companions
    from torchenv.validation.companions import CompanionRequest
    from torchenv.validation.host import GpuHost
    from torchenv.validation.options import Peak, ProgressEvent
    from torchenv.validation.report import Report

__all__ = ["register", "run"]


def register(sub: Subcommands) -> None:
    p = sub.add_parser(
        "validate", help="prove the installed torch works on this hardware",
        description="Run real PyTorch checks in the target interpreter (a child process). "
                    "Exit 1 when a required check fails.")
    p.add_argument("--level", choices=("quick", "full"), default="quick",
                   help="quick (default): build facts, devices, math, autograd, modules, AMP; "
                        "full adds collectives (torchrun), compile, TorchScript, ONNX, profiler, "
                        "C++ extension and a performance probe")
    p.add_argument("--python", dest="python", metavar="PATH", default=None,
                   help="the interpreter to validate (default: this one)")
    add_json_flag(p)
    p.add_argument("--junit", metavar="FILE", help="also write a JUnit XML report to FILE")
    p.add_argument("--only", metavar="NAMES", default=None,
                   help="run only these checks, comma-separated (e.g. matmul,nccl_allreduce; "
                        "'health' selects every node-health check); import_torch and "
                        "device_count always run; a name that matches nothing is reported as "
                        "a skip")
    p.add_argument("--with", dest="with_", metavar="NAME[,NAME]", action="append", default=[],
                   help="also prove these companion packages: each is imported and runs one "
                        "small real operation (flash-attn, xformers, pyg (pyg-lib, "
                        "torch-scatter, torch-sparse), torchao, vllm); always run, whatever "
                        "--only says")
    p.add_argument("--timeout", metavar="S", type=float, default=None,
                   help="seconds each check may take (default: each check's own budget)")
    g = p.add_argument_group("multi-node collectives (passed to torchrun)")
    g.add_argument("--nnodes", type=count(1, MAX_NODES), default=1, metavar="N",
                   help=f"nodes taking part, 1 to {MAX_NODES} (default 1)")
    g.add_argument("--node-rank", type=count(0, MAX_NODES - 1), default=None, metavar="R",
                   help="this node's rank, 0 to N-1")
    g.add_argument("--rdzv-endpoint", default=None, metavar="HOST:PORT",
                   help="the rendezvous every node reaches (port 1 to 65535); unused with "
                   "--nnodes 1, so that one script serves any node count")
    g.add_argument("--nproc-per-node", type=count(1, MAX_PROCS), default=None, metavar="N",
                   help="processes per node (default: the GPU count, or 2 on CPU)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from torchenv.validation.runner import (
        Interrupted,
        ValidationOptions,
        interpreter_path,
        validate,
    )

    if args.timeout is not None and not (0 < args.timeout <= _MAX_TIMEOUT):
        raise BadInput(f"--timeout: must be a number of seconds above 0 and at most "
                       f"{_MAX_TIMEOUT:g}, not {args.timeout:g}", hint=TIMEOUT_HINT)
    if args.junit:
        _check_writable(args.junit)  # before the checks run, not after
    if args.nnodes > 1 and not args.rdzv_endpoint:
        raise BadInput("--nnodes > 1 needs --rdzv-endpoint HOST:PORT reachable from every node",
                       hint="e.g. --rdzv-endpoint node-01:29500, the same on every node")
    if args.node_rank is not None and args.node_rank >= args.nnodes:
        raise BadInput(f"--node-rank: {args.node_rank} is not a rank of {args.nnodes} node(s)",
                       hint=f"give 0 to {args.nnodes - 1}")
    if args.rdzv_endpoint is not None:
        _check_endpoint(args.rdzv_endpoint)
    python = interpreter_path(args.python or sys.executable)
    only = _only(args.only)
    companions = _companions(args.with_)
    try:
        if args.python is not None:
            _check_interpreter(python)  # before any child that imports torch starts
        host = _gpu_host()  # detection: seconds, or a probe's whole timeout on a hung driver
        _check_nproc(args.nproc_per_node, host)
        options = ValidationOptions(
            python=python, level=args.level, timeout=args.timeout,
            nnodes=args.nnodes, node_rank=args.node_rank, rdzv_endpoint=args.rdzv_endpoint,
            nproc_per_node=args.nproc_per_node, host=host, only=only,
            companions=companions[1] if companions else (),
            peak_lookup=_catalog_peak if args.level == "full" else None)
        with _Progress(options.python) as progress:
            report = validate(options, progress=progress.update)
    except Exception:
        raise
    except BaseException as exc:  # Ctrl-C, SIGTERM: every process of the run has ended
        # what finished is still worth a document; before any check (while the interpreter is
        # inspected, during detection) it holds no checks
        if args.json:
            from torchenv.cli._common import emit_json
            from torchenv.validation.report import Report

            partial = exc.report if isinstance(exc, Interrupted) else Report(
                python=python, torch=None, level=args.level, checks=(), interrupted=True)
            emit_json(partial.to_json())
        if isinstance(exc, Interrupted):
            raise exc.cause from None
        raise
    report = _explain_import_failure(report)
    if companions:
        from torchenv.detection._platform import current_platform
        from torchenv.validation.companions import with_pairings

        # the interpreter validated runs here, so its wheels are this machine's platform's
        report = with_pairings(_explain_companion_failures(report, companions[1]),
                               companions[0], platform=current_platform())
    if args.junit:
        from torchenv.validation.report import write_junit

        try:
            write_junit(report, args.junit)
        except OSError as exc:
            raise BadInput(f"--junit: cannot write {args.junit}: {exc.strerror or exc}") from exc
    if args.json:
        from torchenv.cli._common import emit_json

        emit_json(report.to_json())
    else:
        _print_table(report)
    return 0 if report.ok else 1


_MAX_TIMEOUT = 86400.0
TIMEOUT_HINT = "e.g. --timeout 300, or leave it out: each check then has its own budget"
MAX_NODES = 4096
MAX_PROCS = 1024


def _check_endpoint(endpoint: str) -> None:
    """HOST:PORT with a port torchrun can listen on, refused before anything starts."""
    import argparse as _argparse

    from torchenv.cli._numbers import port

    host, sep, number = endpoint.rpartition(":")
    if not sep or not host.strip("[]"):
        raise BadInput(f"--rdzv-endpoint: {endpoint!r} is not HOST:PORT",
                       hint="e.g. node-01:29500")
    try:
        port(number)
    except _argparse.ArgumentTypeError as exc:
        raise BadInput(f"--rdzv-endpoint: port {exc}", hint="e.g. node-01:29500") from None


def _check_nproc(nproc: Optional[int], host: GpuHost) -> None:
    """Refuse more processes per node than the node can run, before anything starts: NCCL
    needs one GPU per process; without a GPU each gloo rank is a process importing torch, so
    more ranks than CPUs only make the run slow to the point of timing out."""
    if nproc is None:
        return
    if host.nvidia and host.expected is not None and nproc > host.expected:
        raise BadInput(f"--nproc-per-node {nproc}: this node has {host.expected} "
                       "visible GPU(s) and NCCL needs one GPU per process",
                       hint=f"use --nproc-per-node {host.expected} or fewer")
    if not host.nvidia:
        import os

        cpus = os.cpu_count() or 1
        if nproc > max(cpus, 2):
            raise BadInput(f"--nproc-per-node {nproc}: this node has no NVIDIA GPU, so the "
                           f"collectives run as CPU (gloo) processes, and it has {cpus} CPU(s)",
                           hint=f"use --nproc-per-node {max(cpus, 2)} or fewer (the default "
                                "runs 2)")


def _only(value: Optional[str]) -> Optional[frozenset[str]]:
    if value is None:
        return None
    names = frozenset(n.strip() for n in value.split(",") if n.strip())
    if not names:
        raise BadInput(f"--only: {value!r} names no check",
                       hint="give check names separated by commas, e.g. --only matmul,amp")
    return names


def _companions(values: list[str]) -> Optional[tuple[Companions, tuple[CompanionRequest, ...]]]:
    """The companion data and what the child is told of each package ``--with`` names; None
    without ``--with``. An unknown name is bad input naming it and the known ones."""
    if not values:
        return None
    from torchenv.matrix.companions import load_companions
    from torchenv.validation.companions import probe_requests, read_with

    data = load_companions()
    try:
        names = read_with(values, data)
    except BadInput as exc:
        raise BadInput(f"--with: {exc.message}", hint=exc.hint) from None
    return data, probe_requests(names, data)


def _explain_companion_failures(report: Report,
                                requests: tuple[CompanionRequest, ...]) -> Report:
    """Each companion whose import failed, answered with doctor's cause and fix: doctor's
    bounded child imports torch and then the companion in the same interpreter, environment
    and folder, and its classifier names the cause (an extension built for another torch, the
    other C++ string ABI, a missing library), as 'torchenv doctor' does for torch itself."""
    from dataclasses import replace

    failed = {c.name: c for c in report.checks if c.name.startswith("companion:")
              and c.status == "fail" and c.metrics.get("import_error")}
    modules = {f"companion:{r.name}": r for r in requests if f"companion:{r.name}" in failed}
    if not modules:
        return report
    import os

    from torchenv._files import current_folder
    from torchenv.doctor.classify import classify, explains_import
    from torchenv.doctor.probe import probe_import

    seen = probe_import(report.python, dict(os.environ), cwd=current_folder(), check_files=False,
                        also=[r.import_name for r in modules.values()])
    findings = [f for f in classify(seen) if explains_import(f)]
    explained = {}
    for name, request in modules.items():
        cause = next((f for f in findings if f.evidence.get("module") == request.import_name),
                     None)
        if cause is None:
            continue
        check = failed[name]
        hint = (f"{cause.title} [{cause.code}]; "
                + (f"fix: {cause.fix}; or install the build made for this torch: "
                   f"{request.install}" if cause.fix else check.hint or ""))
        explained[name] = replace(check, hint=hint,
                                  metrics={**check.metrics, "finding": cause.to_json()})
    return replace(report, checks=tuple(explained.get(c.name, c) for c in report.checks))


def _check_interpreter(python: str) -> None:
    """Refuse what is not a Python torchenv can inspect (missing, not executable, not Python,
    too old to run the inspection) with the check doctor and detect make: bad input named as
    such, not an import_torch failure blaming the torch installed there."""
    from torchenv.detection._python_env import inspect_interpreter

    inspect_interpreter(python, timeout=_INSPECT_TIMEOUT)  # its error names --python here


_INSPECT_TIMEOUT = 30.0
"""Seconds the interpreter may take to answer (doctor's limit: a cold start from a network
file system can take seconds)."""


def _explain_import_failure(report: Report) -> Report:
    """A failed ``import_torch`` answered with doctor's cause and fix: doctor's bounded child
    imports torch in the same interpreter, environment and folder, and its classifier names the
    cause (the same finding 'torchenv doctor' prints), so the two never disagree."""
    from dataclasses import replace

    failed = next((c for c in report.checks if c.name == "import_torch" and c.status == "fail"),
                  None)
    if failed is None or failed.error == "torch is not installed in this interpreter":
        return report
    import os

    from torchenv._files import current_folder
    from torchenv.doctor.classify import classify, explains_import
    from torchenv.doctor.probe import probe_import

    seen = probe_import(report.python, dict(os.environ), cwd=current_folder())
    cause = next((f for f in classify(seen) if explains_import(f)), None)
    if cause is None:
        return report
    # a cause without a single fixing command keeps validate's own next step after it
    hint = f"{cause.title} [{cause.code}]; " + (f"fix: {cause.fix}" if cause.fix
                                                 else failed.hint or "")
    explained = replace(failed, hint=hint,
                        metrics={**failed.metrics, "finding": cause.to_json()})
    return replace(report, checks=tuple(explained if c is failed else c for c in report.checks))


def _check_writable(path: str) -> None:
    """Fail now, by the rule the JUnit report is written with at the end (write_atomic)."""
    from torchenv._files import check_target

    try:
        check_target(path)
    except BadInput as exc:
        raise BadInput(f"--junit: {exc.message}", hint=exc.hint) from None


def _gpu_host() -> GpuHost:
    """Detection's view of this machine's NVIDIA GPUs (the child cannot import torchenv)."""
    from torchenv.detection.detect import detect
    from torchenv.validation.host import gpu_host

    return gpu_host(detect())


def _catalog_peak(name: str) -> Optional[Peak]:
    from torchenv.matrix import load_matrix

    gpu = load_matrix().nvidia_gpu(name)
    if gpu is None:
        return None
    return {"fp16_tflops": gpu.fp16_tflops, "bf16_tflops": gpu.bf16_tflops,
            "memory_bandwidth_gbs": gpu.memory_bandwidth_gbs}


class _Progress:
    """The checks as they run, on stderr: a live bar on a terminal (its count appears with the
    plan, never ``0/None``), elsewhere one line as each check starts and one as it ends, with
    its time."""

    def __init__(self, python: str) -> None:
        self._python = python
        self._progress: Any = None
        self._task: Any = None
        self._lines: Steps | None = None
        self._total: int | None = None
        self._done = 0

    def __enter__(self) -> _Progress:
        from torchenv.cli._progress import Steps, stderr_is_a_terminal

        if not stderr_is_a_terminal():
            self._lines = Steps("validate")
            self._lines.line(f"starting the validation child ({self._python})", timed=False)
            return self
        from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn

        from torchenv.cli._common import console

        self._progress = Progress(SpinnerColumn(), TextColumn("{task.description}"),
                                  BarColumn(), TextColumn("{task.fields[count]}"),
                                  console=console(stderr=True), transient=True)
        self._progress.start()
        self._task = self._progress.add_task("starting the validation child", total=None,
                                             count="")
        return self

    def update(self, event: ProgressEvent) -> None:
        if event[0] == "plan":
            self._total = len(event[1])
        elif event[0] == "result":
            self._done += 1
            if self._total is not None:  # node-health checks are not in the plan
                self._total = max(self._total, self._done)
        count = f"{self._done}/{self._total}" if self._total is not None else ""
        if self._lines is not None:
            if event[0] == "start":
                self._lines.line(f"{event[1]} started", timed=False)
            elif event[0] == "result":
                r = event[1]
                self._lines.line(f"{r.name} {r.status} in {r.seconds:.2f} s"
                                 + (f" ({count})" if count else ""), timed=False)
            return
        if self._progress is None:
            return
        if event[0] == "start":
            from rich.markup import escape

            self._progress.update(self._task, description=f"running {escape(event[1])}",
                                  count=count)
        else:
            self._progress.update(self._task, total=self._total, completed=self._done,
                                  count=count)

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()


_STYLE = {"pass": "green", "fail": "bold red", "skip": "yellow"}


def _print_table(report: Report) -> None:
    from rich.markup import escape
    from rich.table import Table

    from torchenv.cli._common import console

    table = Table(title=escape(f"torchenv validate ({report.level}) — {report.python}"),
                  title_justify="left")
    for col in ("check", "status", "device", "time", "detail"):
        table.add_column(col, overflow="fold", justify="right" if col == "time" else "left")
    for c in report.checks:
        status = c.status if c.required or c.status != "fail" else "fail (optional)"
        text = c.detail or ""
        if c.status == "fail":
            text = (c.error or "") + (f"\nhint: {c.hint}" if c.hint else "")
        elif c.status == "skip":
            text = c.reason or ""
        table.add_row(escape(c.name), f"[{_STYLE[c.status]}]{status}[/]", escape(c.device),
                      f"{c.seconds:.2f}s", escape(text))
    out = console()
    out.print(table)
    counts = report.counts()
    verdict = "[green]OK[/]" if report.ok else "[bold red]FAILED[/]"
    out.print(f"{verdict}: {counts['pass']} passed, {counts['fail']} failed, "
              f"{counts['skip']} skipped in {report.seconds:.1f} s"
              + (f" — torch {escape(report.torch)}" if report.torch else ""))
