"""Run the validation suite in the target interpreter and collect a :class:`Report`.

The checks run in one long-lived child (``_probe.py`` in the target interpreter) so torch is
imported once; a check that hangs past its timeout or crashes the child is reported as that check's
failure, the child is restarted, and the suite goes on. The collectives run in their own processes
through ``python -m torch.distributed.run``. Every child gets a private temporary directory
(``TMPDIR``, inductor and triton caches, torchrun's ``torchelastic_*`` folders) that is removed at
the end; only the C++ extension build cache persists (``TORCHENV_CACHE_DIR`` or
``~/.cache/torchenv``) so a second full run finds it warm.
"""

from __future__ import annotations

import json
import os
import queue
import shlex
import shutil
import signal
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, Any, Callable, Literal, Optional, Union

from torchenv._subprocess import (
    ProcessResult,
    reap_children,
    run_to_files,
    start_process,
    stop_process,
)
from torchenv.validation.health import node_health
from torchenv.validation.host import GpuHost, device_count_result
from torchenv.validation.report import CheckResult, Report, merge_rank_results

__all__ = [
    "COLLECTIVE_CHECKS",
    "EXTRA_CHECKS_ENV",
    "GPU_HOST_ENV",
    "Level",
    "ProgressEvent",
    "ValidationOptions",
    "validate",
]

Level = Literal["quick", "full"]
EXTRA_CHECKS_ENV = "TORCHENV_VALIDATE_EXTRA_CHECKS"
"""Test seam: files whose ``check_<name>(ctx)`` functions become extra quick-level checks."""
GPU_HOST_ENV = "TORCHENV_VALIDATE_GPU_HOST"
"""``1``/``0`` overrides the child's own look for an NVIDIA GPU (``/proc/driver/nvidia``)."""

_HERE = Path(__file__).resolve().parent
PROBE = _HERE / "_probe.py"
DIST_WORKER = _HERE / "_dist_worker.py"
NO_CUDA = "no CUDA device"
_HELLO_TIMEOUT = 120.0
_COLLECTIVES_TIMEOUT = 300.0

COLLECTIVE_CHECKS: tuple[tuple[str, bool, bool], ...] = (
    # (name, needs CUDA, required)
    ("nccl_allreduce", True, True),
    ("nccl_broadcast", True, True),
    ("nccl_allgather", True, True),
    ("gloo_allreduce", False, True),
    ("gloo_broadcast", False, True),
    ("gloo_allgather", False, True),
    ("ddp_step", False, True),
    ("nccl_bus_bandwidth", True, False),
)

ProgressEvent = Union[tuple[Literal["plan"], list[str]], tuple[Literal["start"], str],
                      tuple[Literal["result"], CheckResult]]
Peak = Mapping[str, Optional[float]]


@dataclass(frozen=True)
class ValidationOptions:
    """What to validate and how. ``timeout`` (seconds) replaces every check's own budget."""

    python: str
    level: Level = "quick"
    timeout: Optional[float] = None
    nnodes: int = 1
    node_rank: Optional[int] = None
    rdzv_endpoint: Optional[str] = None
    nproc_per_node: Optional[int] = None
    env: Mapping[str, str] = field(default_factory=dict)
    peak_lookup: Optional[Callable[[str], Optional[Peak]]] = None
    """GPU name → expected peaks (``fp16_tflops``, ``bf16_tflops``, ``memory_bandwidth_gbs``)."""
    host: Optional[GpuHost] = None
    """Detection's view of the NVIDIA GPUs; handed to the child and compared with torch's."""
    only: Optional[frozenset[str]] = None
    """Run only these checks (``matmul`` also selects ``matmul[cuda:1]``; ``health`` selects
    every node-health check); import_torch and device_count always run."""

    def selects(self, name: str) -> bool:
        if self.only is None:
            return True
        base = name.split("[", 1)[0]
        return (name in self.only or base in self.only
                or (base.startswith("health_") and "health" in self.only))


class _ChildGone(Exception):
    """The child closed its protocol stream (it exited or crashed)."""


class _Child:
    """The probe process and a reader thread that turns its stdout into JSON messages."""

    def __init__(self, python: str, env: Mapping[str, str], workdir: str, stderr_path: str):
        self.stderr_path = stderr_path
        self.proc = start_process([python, "-u", str(PROBE)], env=env, cwd=workdir,
                                  stderr_path=stderr_path)
        self.messages: queue.Queue[Optional[dict[str, Any]]] = queue.Queue()
        assert self.proc.stdout is not None
        self._reader = threading.Thread(target=self._read, args=(self.proc.stdout,), daemon=True)
        self._reader.start()

    def _read(self, stream: IO[bytes]) -> None:
        try:
            for raw in stream:
                try:
                    doc = json.loads(raw)
                except ValueError:
                    continue
                if isinstance(doc, dict):
                    self.messages.put(doc)
        except (OSError, ValueError):
            pass
        self.messages.put(None)

    def receive(self, deadline: float) -> dict[str, Any]:
        """The next message; raises TimeoutError past ``deadline``, _ChildGone at EOF."""
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError
        try:
            doc = self.messages.get(timeout=remaining)
        except queue.Empty:
            raise TimeoutError from None
        if doc is None:
            self.messages.put(None)
            raise _ChildGone
        return doc

    def send(self, doc: Mapping[str, Any]) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(json.dumps(doc).encode() + b"\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            pass  # the reader will see EOF

    def stderr_size(self) -> int:
        try:
            return os.path.getsize(self.stderr_path)
        except OSError:
            return 0

    def stderr_since(self, offset: int, limit: int = 3000) -> str:
        try:
            with open(self.stderr_path, "rb") as f:
                f.seek(offset)
                data = f.read()
        except OSError:
            return ""
        return data[-limit:].decode("utf-8", "replace").strip()

    def exit_description(self) -> str:
        try:
            code = self.proc.wait(timeout=5)
        except Exception:
            return "the child process stopped answering"
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            return f"the child process was killed by {name}"
        return f"the child process exited with status {code}"

    def stop(self, *, kill: bool = False) -> None:
        stop_process(self.proc, grace=0.0 if kill else 5.0)
        self._reader.join(timeout=5)
        if self.proc.stdout is not None and not self._reader.is_alive():
            self.proc.stdout.close()


def _cache_root(env: Mapping[str, str]) -> Path:
    from torchenv._files import user_cache_dir

    return Path(user_cache_dir(env))


def _child_env(options: ValidationOptions, scratch: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(options.env)
    if options.host is not None and not env.get(GPU_HOST_ENV):
        env[GPU_HOST_ENV] = "1" if options.host.nvidia else "0"
    tmp = scratch / "tmp"
    for sub in ("tmp", "inductor", "triton", "extensions"):
        (scratch / sub).mkdir(parents=True, exist_ok=True)
    env.update({
        "TMPDIR": str(tmp), "TEMP": str(tmp), "TMP": str(tmp),
        "TORCHINDUCTOR_CACHE_DIR": str(scratch / "inductor"),
        "TRITON_CACHE_DIR": str(scratch / "triton"),
        "TORCH_EXTENSIONS_DIR": str(scratch / "extensions"),
        "TORCHENV_EXTENSIONS_CACHE": str(_cache_root(env) / "torch_extensions"),
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
    })
    return env


def validate(options: ValidationOptions,
             progress: Optional[Callable[[ProgressEvent], None]] = None) -> Report:
    """Run the suite for ``options.python``; never raises for what happens in the children."""
    started = time.monotonic()
    notify = progress or (lambda event: None)
    options = replace(options, python=_interpreter_path(options.python))
    scratch = Path(tempfile.mkdtemp(prefix="torchenv-validate-"))
    try:
        env = _child_env(options, scratch)
        torch_version, results = _run_probe(options, env, scratch, notify)
        probe_names = {r.name.split("[", 1)[0] for r in results}
        if options.level == "full" and torch_version is not None and _wants_collectives(
                options, probe_names):
            hello = _hello_metrics(results)
            results += [r for r in _run_collectives(
                options, env, scratch, notify, cuda_devices=int(hello.get("cuda_devices", 0)),
                nccl_available=bool(hello.get("nccl_available", True))) if options.selects(r.name)]
        if options.level == "full" and (options.only is None or any(
                n == "health" or n.startswith("health_") for n in options.only)):
            notify(("start", "node health"))  # the node's health needs NVML, not torch
            for r in node_health(env):
                if options.selects(r.name):
                    results.append(r)
                    notify(("result", r))
        results += _unmatched(options, results)
        results = [_with_peak(r, options.peak_lookup) for r in results]
    finally:
        reap_children()  # nothing of this run may outlive it, even when it is interrupted
        shutil.rmtree(scratch, ignore_errors=True)
    return Report(python=options.python, torch=torch_version, level=options.level,
                  checks=tuple(results), seconds=time.monotonic() - started)


def _interpreter_path(python: str) -> str:
    """An absolute path (the children run in another directory); symlinks are kept (venvs)."""
    if os.sep in python or (os.altsep and os.altsep in python):
        return os.path.abspath(python)
    return shutil.which(python) or python


def _wants_collectives(options: ValidationOptions, probe_names: set[str]) -> bool:
    """Whether ``--only`` leaves any collective to run: a collective's name, or a name no probe
    check has (an extra collective is only known once its ranks report)."""
    if options.only is None:
        return True
    return any(n in _COLLECTIVE_NAMES or (n not in probe_names and not n.startswith("health"))
               for n in options.only)


def _unmatched(options: ValidationOptions, results: Sequence[CheckResult]) -> list[CheckResult]:
    """A skip for each ``--only`` name that matched no check, so a typo is not a silent pass."""
    if options.only is None:
        return []
    seen = {r.name for r in results} | {r.name.split("[", 1)[0] for r in results}
    seen |= {"health"} if any(r.name.startswith("health_") for r in results) else set()
    return [CheckResult(name=n, status="skip", reason="no check of this name ran here "
                        f"(level {options.level}); 'torchenv validate --json' lists the names")
            for n in sorted(options.only - seen)]


def _hello_metrics(results: Sequence[CheckResult]) -> Mapping[str, Any]:
    for r in results:
        if r.name == "import_torch":
            return r.metrics
    return {}


def _start(options: ValidationOptions, env: Mapping[str, str], scratch: Path,
           restarts: int) -> tuple[_Child, dict[str, Any]]:
    """A fresh child and its hello; raises _ChildGone or TimeoutError when it never says hello."""
    child = _Child(options.python, env, str(scratch / "tmp"),
                   str(scratch / f"probe-{restarts}.stderr"))
    deadline = time.monotonic() + max(_HELLO_TIMEOUT, options.timeout or 0)
    try:
        hello = child.receive(deadline)
        while hello.get("event") != "hello":  # JSON someone else printed first (a wrapper)
            hello = child.receive(deadline)
    except _ChildGone as exc:
        how = child.exit_description()  # e.g. killed by SIGABRT while importing torch
        child.stop(kill=True)
        raise _ChildGone(how) from exc
    except TimeoutError:
        child.stop(kill=True)
        raise
    return child, hello


def _import_failure(options: ValidationOptions, error: str, seconds: float) -> CheckResult:
    first_line = error.strip().splitlines()[0] if error.strip() else "torch could not be imported"
    missing = "No module named 'torch'" in error
    install = f"torchenv install --python-exe {shlex.quote(options.python)}"
    fix = (f"install torch into {options.python}: '{install}' resolves the right build and "
           "installs it there")
    if not missing:
        fix = ("the installed torch is broken (" + ("an undefined symbol: mismatched libraries"
               if "undefined symbol" in error else "import failed")
               + f"); run 'torchenv doctor --python {shlex.quote(options.python)}', then "
               f"reinstall with '{install}'")
    return CheckResult(name="import_torch", status="fail", seconds=seconds, device="cpu",
                       error=("torch is not installed in this interpreter" if missing
                              else first_line), hint=fix, log=error if not missing else None)


def _run_probe(options: ValidationOptions, env: Mapping[str, str], scratch: Path,
               notify: Callable[[ProgressEvent], None]) -> tuple[Optional[str], list[CheckResult]]:
    start = time.monotonic()
    restarts = 0
    try:
        child, hello = _start(options, env, scratch, restarts)
    except OSError as exc:
        from torchenv.errors import BadInput

        raise BadInput(f"--python: cannot run {options.python}: {exc.strerror or exc}",
                       hint="pass the path of a Python interpreter") from exc
    except (TimeoutError, _ChildGone) as exc:
        tail = ""
        err_file = scratch / "probe-0.stderr"
        if err_file.exists():
            tail = err_file.read_text("utf-8", "replace")[-3000:]
        if isinstance(exc, TimeoutError):
            how = "importing torch did not finish in time"
        else:
            how = (str(exc) or "the child process exited") + " while importing torch"
        result = _import_failure(options, f"{how}\n{tail}" if tail else how,
                                 time.monotonic() - start)
        notify(("plan", [result.name]))
        notify(("result", result))
        return None, [result]
    if "import_error" in hello:
        child.stop()
        result = _import_failure(options, str(hello["import_error"]), time.monotonic() - start)
        notify(("plan", [result.name]))
        notify(("result", result))
        return None, [result]

    levels = {"quick"} if options.level == "quick" else {"quick", "full"}
    try:
        torch_version = str(hello["torch"])
        entries = [e for e in hello["checks"] if e["level"] in levels
                   and options.selects(str(e["name"]))]
        for e in entries:
            str(e["name"]), str(e["device"]), bool(e["required"]), float(e["timeout"])
    except (KeyError, TypeError, ValueError) as exc:
        child.stop(kill=True)
        result = _import_failure(options, "the interpreter answered, but not as the validation "
                                 f"probe does (missing or malformed {exc})",
                                 time.monotonic() - start)
        notify(("plan", [result.name]))
        notify(("result", result))
        return None, [result]
    names = ["import_torch"] + (["device_count"] if options.host else []) \
        + [e["name"] for e in entries]
    if options.level == "full":
        names += [name for name, _, _ in COLLECTIVE_CHECKS if options.selects(name)]
    notify(("plan", names))
    results = [CheckResult(
        name="import_torch", status="pass", seconds=float(hello.get("import_seconds") or 0.0),
        device="cpu",
        detail=f"torch {torch_version} from Python {hello.get('python_version')} "
               f"in {hello.get('import_seconds')} s",
        metrics={"cuda_devices": int(hello.get("cuda_devices") or 0),
                 "nccl_available": bool(hello.get("nccl_available", True))})]
    if options.host is not None:
        status, text = device_count_result(options.host, int(hello.get("cuda_devices") or 0))
        results.append(CheckResult(
            name="device_count", status=status, device="cuda",  # type: ignore[arg-type]
            detail=text if status == "pass" else None,
            error=text if status == "fail" else None,
            reason=text if status == "skip" else None,
            hint="run 'torchenv doctor'; a GPU in a bad state, CUDA_VISIBLE_DEVICES or a "
                 "container without that device" if status == "fail" else None))
    if hello.get("extra_checks_error"):
        results.append(CheckResult(name="extra_checks", status="fail",
                                   error=str(hello["extra_checks_error"]),
                                   hint=f"fix the files named in {EXTRA_CHECKS_ENV}"))
    for r in results:
        notify(("result", r))

    alive: Optional[_Child] = child
    for entry in entries:
        name = str(entry["name"])
        notify(("start", name))
        if alive is None:
            try:
                restarts += 1
                alive, _ = _start(options, env, scratch, restarts)
            except (OSError, TimeoutError, _ChildGone):
                result = CheckResult(name=name, status="fail", device=str(entry["device"]),
                                     required=bool(entry["required"]), level=entry["level"],
                                     error="the validation child could not be restarted",
                                     hint="run 'torchenv doctor'")
                results.append(result)
                notify(("result", result))
                continue
        result, alive = _run_entry(alive, entry, options.timeout)
        results.append(result)
        notify(("result", result))
    if alive is not None:
        alive.stop()
    return torch_version, results


_POISONED_HINT = ("a sticky CUDA error (illegal address, uncorrectable ECC, launch failure) ends "
                  "the process's CUDA context; the remaining checks ran in a fresh child. Check "
                  "the GPU: nvidia-smi -q -d ECC,ROW_REMAPPER and dmesg for Xid errors")


def _run_entry(child: _Child, entry: Mapping[str, Any], timeout: Optional[float]
               ) -> tuple[CheckResult, Optional[_Child]]:
    """Run one check; returns its result and the child (None when it had to go)."""
    budget = float(timeout if timeout is not None else entry["timeout"])
    offset = child.stderr_size()
    began = time.monotonic()
    child.send({"run": entry["name"]})
    deadline = began + budget
    common: dict[str, Any] = {"name": str(entry["name"]), "device": str(entry["device"]),
                              "required": bool(entry["required"]), "level": str(entry["level"])}
    try:
        while True:
            doc = child.receive(deadline)
            if doc.get("event") == "result":
                result = CheckResult.from_child(doc, level=str(entry["level"]))
                if doc.get("poisoned"):  # the CUDA context is unusable: a fresh child goes on
                    child.stop(kill=True)
                    return replace(result, hint=(result.hint or _POISONED_HINT)), None
                return result, child
    except TimeoutError:
        child.stop(kill=True)
        return CheckResult(
            status="fail", seconds=time.monotonic() - began,
            error=f"did not finish within {budget:g} s (timed out; the child was restarted)",
            hint="it hangs or is very slow here; raise --timeout to give it longer",
            log=child.stderr_since(offset) or None, **common), None
    except _ChildGone:
        how = child.exit_description()
        child.stop(kill=True)
        tail = child.stderr_since(offset)
        last = tail.splitlines()[-1] if tail else ""
        return CheckResult(
            status="fail", seconds=time.monotonic() - began,
            error=f"{how} during this check (restarted for the remaining checks)"
                  + (f": {last}" if last else ""),
            hint="a crash in native code: a driver/library mismatch or a torch bug; "
                 "run 'torchenv doctor'",
            log=tail or None, **common), None


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


@dataclass(frozen=True)
class _Launch:
    """One torchrun of the collective checks."""

    backend: str
    nproc: int
    nnodes: int


def collective_launches(*, cuda_devices: int, nccl_available: bool, nnodes: int,
                        nproc_per_node: Optional[int]) -> list[_Launch]:
    """Which torchrun launches the collective checks need.

    NCCL runs one rank per GPU. With a single rank in the whole job no collective is possible:
    NCCL is only initialised (its checks are then skips), and the CPU collectives get a launch
    of their own with two gloo ranks, so they still prove something. Without NCCL (a CPU build,
    or Windows, whose builds have none) gloo runs alone.
    """
    if cuda_devices and nccl_available:
        nproc = nproc_per_node or cuda_devices
        launches = [_Launch("nccl", nproc, nnodes)]
        if nproc * nnodes == 1:
            launches.append(_Launch("gloo", 2, 1))
        return launches
    return [_Launch("gloo", nproc_per_node or 2, nnodes)]


def _collective_deadline(timeout: float) -> tuple[float, float]:
    """(seconds for a whole torchrun, seconds it gets after SIGTERM) for a check budget.

    The process-group timeout bounds each collective, but not NCCL's communicator set-up nor a
    rank that never arrives; this bounds everything, leaving room to import torch.
    """
    slack = min(30.0, max(15.0, timeout))
    return timeout + slack, min(10.0, slack / 2)


def _run_collectives(options: ValidationOptions, env: Mapping[str, str], scratch: Path,
                     notify: Callable[[ProgressEvent], None], *, cuda_devices: int,
                     nccl_available: bool) -> list[CheckResult]:
    import uuid

    timeout = options.timeout if options.timeout is not None else _COLLECTIVES_TIMEOUT
    launches = collective_launches(cuda_devices=cuda_devices, nccl_available=nccl_available,
                                   nnodes=options.nnodes, nproc_per_node=options.nproc_per_node)
    for name, _, _ in COLLECTIVE_CHECKS:
        notify(("start", name))
    limit, grace = _collective_deadline(timeout)
    outcomes: list[tuple[_Launch, ProcessResult, dict[str, CheckResult]]] = []
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
                            token=uuid.uuid4().hex)
        per_rank = []
        for path in sorted(out_dir.glob("rank*.json")):
            try:
                per_rank.append(json.loads(path.read_text("utf-8")))
            except ValueError:
                continue
        merged = {r.name: r for r in merge_rank_results(per_rank, expected_ranks=launch.nproc)}
        transports = nccl_transports(out_dir) if launch.backend == "nccl" else []
        if transports and "nccl_allreduce" in merged:
            r = merged["nccl_allreduce"]
            merged["nccl_allreduce"] = replace(
                r, detail=(r.detail or "") + "; transport " + ", ".join(transports),
                metrics={**r.metrics, "nccl_transports": transports})
        try:
            planned = [str(n) for n in json.loads((out_dir / "extra.json").read_text("utf-8"))]
        except (OSError, ValueError, TypeError):
            planned = []
        extra_names = list(dict.fromkeys(
            [*extra_names, *(n for n in [*planned, *merged] if n not in _COLLECTIVE_NAMES)]))
        outcomes.append((launch, proc, merged))

    required = {n: req for n, _, req in COLLECTIVE_CHECKS}
    results: list[CheckResult] = []
    for name in [*_COLLECTIVE_NAMES, *extra_names]:
        needs_cuda = _NEEDS_CUDA.get(name, False)
        result = _collective_result(name, needs_cuda, required.get(name, True), outcomes,
                                    cuda_devices=cuda_devices, nccl_available=nccl_available)
        results.append(result)
        notify(("result", result))
    return results


_COLLECTIVE_NAMES = tuple(n for n, _, _ in COLLECTIVE_CHECKS)
_NEEDS_CUDA = {n: cuda for n, cuda, _ in COLLECTIVE_CHECKS}


def _collective_result(name: str, needs_cuda: bool, required: bool,
                       outcomes: Sequence[tuple[_Launch, ProcessResult, dict[str, CheckResult]]],
                       *, cuda_devices: int, nccl_available: bool) -> CheckResult:
    device = "cuda" if needs_cuda else "cpu"
    if needs_cuda and not cuda_devices:
        return CheckResult(name=name, status="skip", device=device, reason=NO_CUDA,
                           required=required, level="full")
    if needs_cuda and not nccl_available:
        return CheckResult(name=name, status="skip", device=device, required=required,
                           level="full", reason="this torch build has no NCCL (Windows builds "
                                                "never do); the gloo checks ran instead")
    found = [(launch, proc, merged[name]) for launch, proc, merged in outcomes
             if name in merged]
    # a launch that ran the check beats one that could only skip it (one rank)
    found.sort(key=lambda item: item[2].status == "skip")
    if found:
        launch, proc, r = found[0]
        hint = None
        if r.status == "fail":
            hint = ("check the network interfaces and firewall between ranks (NCCL_DEBUG=INFO, "
                    "GLOO_SOCKET_IFNAME)")
            if not proc.ok:
                r = replace(r, error=f"{r.error}; torchrun ({launch.backend}, {launch.nproc} "
                                     f"processes): {_torchrun_failure(proc)}",
                            log=r.log or proc.stderr.strip()[-3000:] or None)
        return replace(r, required=required, level="full", hint=hint)
    launch, proc, _ = next(((la, p, m) for la, p, m in outcomes
                            if la.backend == ("nccl" if needs_cuda else la.backend)),
                           outcomes[-1])
    tail = proc.stderr.strip()[-3000:]
    return CheckResult(
        name=name, status="fail", seconds=proc.seconds, device=device, required=required,
        level="full",
        error=(f"torchrun ({launch.backend}, {launch.nproc} processes): "
               f"{_torchrun_failure(proc)}") if not proc.ok else "no rank reported a result",
        hint="see the log; multi-node runs need --rdzv-endpoint reachable from every node",
        log=tail or None)


_TRANSPORT_RE = r"\bvia ((?:NET/[A-Za-z]+)|P2P(?:/[A-Za-z]+)?|SHM|CollNet[A-Za-z]*|NVLS)"


def nccl_transports(out_dir: Path, limit: int = 4 << 20) -> list[str]:
    """The transports NCCL chose, from its per-rank ``NCCL_DEBUG=INFO`` logs in ``out_dir``.

    NCCL logs one line per channel connection, e.g. ``Channel 00/0 : 0[0] -> 1[1] via P2P/IPC``
    or ``... [send] via NET/IB/0``; the kinds found are returned sorted.
    """
    import re

    pattern = re.compile(_TRANSPORT_RE)
    found: set[str] = set()
    for path in sorted(out_dir.glob("nccl.*.log")):
        try:
            with open(path, "rb") as f:
                text = f.read(limit).decode("utf-8", "replace")
        except OSError:
            continue
        found.update(m.group(1) for m in pattern.finditer(text))
    return sorted(found)


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


def _with_peak(result: CheckResult, lookup: Optional[Callable[[str], Optional[Peak]]]
               ) -> CheckResult:
    """Compare a perf result with the GPU's catalogued peak; below 50 % is flagged (fail)."""
    if not result.name.startswith("perf") or result.status != "pass" or lookup is None:
        return result
    from torchenv.validation.perf import compare_with_peak

    return compare_with_peak(result, lookup)
