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

from torchenv._subprocess import ProcessResult, run_process, start_process, stop_process
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
    if env.get("TORCHENV_CACHE_DIR"):
        return Path(env["TORCHENV_CACHE_DIR"])
    base = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "torchenv"


def _child_env(options: ValidationOptions, scratch: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(options.env)
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
        if options.level == "full" and torch_version is not None:
            results += _run_collectives(options, env, scratch, notify,
                                        cuda_devices=_last_hello_devices(results))
        results = [_with_peak(r, options.peak_lookup) for r in results]
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return Report(python=options.python, torch=torch_version, level=options.level,
                  checks=tuple(results), seconds=time.monotonic() - started)


def _interpreter_path(python: str) -> str:
    """An absolute path (the children run in another directory); symlinks are kept (venvs)."""
    if os.sep in python or (os.altsep and os.altsep in python):
        return os.path.abspath(python)
    return shutil.which(python) or python


def _last_hello_devices(results: Sequence[CheckResult]) -> int:
    for r in results:
        if r.name == "import_torch":
            return int(r.metrics.get("cuda_devices", 0))
    return 0


def _start(options: ValidationOptions, env: Mapping[str, str], scratch: Path,
           restarts: int) -> tuple[_Child, dict[str, Any]]:
    """A fresh child and its hello; raises _ChildGone or TimeoutError when it never says hello."""
    child = _Child(options.python, env, str(scratch / "tmp"),
                   str(scratch / f"probe-{restarts}.stderr"))
    try:
        hello = child.receive(time.monotonic() + max(_HELLO_TIMEOUT, options.timeout or 0))
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

    torch_version = str(hello["torch"])
    levels = {"quick"} if options.level == "quick" else {"quick", "full"}
    entries = [e for e in hello["checks"] if e["level"] in levels]
    names = ["import_torch"] + [e["name"] for e in entries]
    if options.level == "full":
        names += [name for name, _, _ in COLLECTIVE_CHECKS]
    notify(("plan", names))
    results = [CheckResult(
        name="import_torch", status="pass", seconds=float(hello.get("import_seconds") or 0.0),
        device="cpu",
        detail=f"torch {torch_version} from Python {hello.get('python_version')} "
               f"in {hello.get('import_seconds')} s",
        metrics={"cuda_devices": int(hello.get("cuda_devices") or 0)})]
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
                return CheckResult.from_child(doc, level=str(entry["level"])), child
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


def _run_collectives(options: ValidationOptions, env: Mapping[str, str], scratch: Path,
                     notify: Callable[[ProgressEvent], None], *, cuda_devices: int
                     ) -> list[CheckResult]:
    backend = "nccl" if cuda_devices else "gloo"
    nproc = options.nproc_per_node or (cuda_devices if cuda_devices else 2)
    timeout = options.timeout if options.timeout is not None else _COLLECTIVES_TIMEOUT
    out_dir = scratch / "collectives"
    out_dir.mkdir()
    wanted = [(n, cuda, req) for n, cuda, req in COLLECTIVE_CHECKS if cuda_devices or not cuda]
    for name, _, _ in wanted:
        notify(("start", name))
    run_env = dict(env)
    run_env.setdefault("OMP_NUM_THREADS", "1")
    proc = run_process(_torchrun_argv(options, nproc, out_dir, backend, timeout),
                       timeout=timeout + 30, env=run_env, cwd=str(scratch / "tmp"))
    per_rank = []
    for path in sorted(out_dir.glob("rank*.json")):
        try:
            per_rank.append(json.loads(path.read_text("utf-8")))
        except ValueError:
            continue
    required = {n: req for n, _, req in COLLECTIVE_CHECKS}
    merged = {r.name: r for r in merge_rank_results(per_rank)}
    results: list[CheckResult] = []
    for name, needs_cuda, _ in COLLECTIVE_CHECKS:
        device = "cuda" if needs_cuda else "cpu"
        if needs_cuda and not cuda_devices:
            result = CheckResult(name=name, status="skip", device=device, reason=NO_CUDA,
                                 required=required[name], level="full")
        elif name in merged and proc.ok:
            r = merged[name]
            result = CheckResult(
                name=r.name, status=r.status, seconds=r.seconds, device=r.device,
                required=required[name], detail=r.detail, error=r.error, level="full",
                hint=None if r.status == "pass" else
                "check the network interfaces and firewall between ranks (NCCL_DEBUG=INFO, "
                "GLOO_SOCKET_IFNAME)", log=r.log)
        else:
            tail = proc.stderr.strip()[-3000:]
            result = CheckResult(
                name=name, status="fail", seconds=proc.seconds, device=device,
                required=required[name], level="full",
                error=f"torchrun ({backend}, {nproc} processes): {_torchrun_failure(proc)}"
                      if not proc.ok else "this rank reported no result",
                hint="see the log; multi-node runs need --rdzv-endpoint reachable from every "
                     "node", log=tail or None)
        results.append(result)
        notify(("result", result))
    return results


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
