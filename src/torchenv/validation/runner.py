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

import contextlib
import json
import os
import queue
import shlex
import shutil
import signal
import tempfile
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import IO, Any, Callable, Optional

from torchenv._subprocess import (
    RUN_TOKEN_ENV,
    kill_token,
    reap_children,
    start_process,
    stop_process,
)
from torchenv.validation.collectives import COLLECTIVE_CHECKS, COLLECTIVE_NAMES, run_collectives
from torchenv.validation.health import (
    GpuHealth,
    LoadSampler,
    XidWatch,
    fabric_path,
    node_health,
    nvml_gpu_of,
    read_gpus,
    vgpus,
)
from torchenv.validation.host import device_count_result, gpu_slices
from torchenv.validation.options import Level, Peak, ProgressEvent, ValidationOptions
from torchenv.validation.report import CheckResult, Report

__all__ = [
    "EXTRA_CHECKS_ENV",
    "GPU_HOST_ENV",
    "Interrupted",
    "Level",
    "Peak",
    "ProgressEvent",
    "ValidationOptions",
    "interpreter_path",
    "validate",
]

EXTRA_CHECKS_ENV = "TORCHENV_VALIDATE_EXTRA_CHECKS"
"""Test seam: files whose ``check_<name>(ctx)`` functions become extra quick-level checks."""
GPU_HOST_ENV = "TORCHENV_VALIDATE_GPU_HOST"
"""``1``/``0`` overrides the child's own look for an NVIDIA GPU (``/proc/driver/nvidia``)."""
COMPANIONS_ENV = "TORCHENV_VALIDATE_COMPANIONS"
"""The companions to prove, as JSON (:meth:`CompanionRequest.to_json`), for the child."""

_HERE = Path(__file__).resolve().parent
PROBE = _HERE / "_probe.py"
_HELLO_TIMEOUT = 120.0

class _ChildGone(Exception):
    """The child closed its protocol stream (it exited or crashed)."""


class _Flooded(_ChildGone):
    """The child wrote more to its protocol stream than the protocol ever needs (an
    interpreter printing without end, ``cat /dev/zero``); the message says what came."""


LINE_CAP = 1 << 20
"""Bytes one protocol message may take; the hello with its check list takes a few KiB."""
STRAY_CAP = 256 << 10
"""Bytes of other output (a wrapper's banner) the stream may carry before it is a flood."""


class _Child:
    """The probe process and a reader thread that turns its stdout into JSON messages."""

    def __init__(self, python: str, env: Mapping[str, str], workdir: str, stderr_path: str):
        self.stderr_path = stderr_path
        self.token = env.get(RUN_TOKEN_ENV, "")
        self.extensions = env.get("TORCHENV_EXTENSIONS_CACHE")
        self.proc = start_process([python, "-u", str(PROBE)], env=env, cwd=workdir,
                                  stderr_path=stderr_path)
        self.messages: queue.Queue[Optional[dict[str, Any]]] = queue.Queue()
        self.flooded: Optional[str] = None
        assert self.proc.stdout is not None
        self._reader = threading.Thread(target=self._read, args=(self.proc.stdout,), daemon=True)
        self._reader.start()

    def _read(self, stream: IO[bytes]) -> None:
        """Queue each JSON object the child writes; stop reading (and say why in ``flooded``)
        at a line longer than LINE_CAP or once STRAY_CAP bytes of anything else came. The
        caller then kills the child, which blocks on the full pipe until it does."""
        stray = 0
        try:
            while True:
                raw = stream.readline(LINE_CAP + 1)
                if not raw:
                    break
                if len(raw) > LINE_CAP:
                    self.flooded = f"a line longer than {LINE_CAP >> 20} MiB"
                    break
                doc = None
                # not JSON, or nested past the stack: other output
                if raw.lstrip().startswith(b"{"):
                    with contextlib.suppress(ValueError, RecursionError):
                        doc = json.loads(raw)
                if isinstance(doc, dict):
                    self.messages.put(doc)
                if not isinstance(doc, dict) or "event" not in doc:
                    stray += len(raw)
                    if stray > STRAY_CAP:
                        self.flooded = (f"more than {STRAY_CAP >> 10} KiB that is not the "
                                        "validation protocol")
                        break
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
            if self.flooded is not None:
                raise _Flooded(self.flooded)
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
        if kill:
            # a check killed mid-way may have started processes outside the child's group (ninja
            # runs each compiler in a group of its own); they carry the run's token. Only this
            # child of the run is alive now, so everything with the token belongs to it.
            kill_token(self.token)
            if self.extensions:
                clear_stale_build_locks(Path(self.extensions))
        self._reader.join(timeout=5)
        if self.proc.stdout is not None and not self._reader.is_alive():
            self.proc.stdout.close()


def _cache_root(env: Mapping[str, str]) -> Path:
    from torchenv._files import user_cache_dir

    return Path(user_cache_dir(env))


def _child_env(options: ValidationOptions, scratch: Path, token: str,
               extensions: Path) -> dict[str, str]:
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
        "TORCHENV_EXTENSIONS_CACHE": str(extensions),
        RUN_TOKEN_ENV: token,
        COMPANIONS_ENV: json.dumps([c.to_json() for c in options.companions]),
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
    })
    return env


class Interrupted(BaseException):
    """The run was interrupted (Ctrl-C, SIGTERM) and every process of it has ended.

    ``report`` holds the checks that finished, with ``interrupted`` set; ``cause`` is the
    interruption itself, for the caller to re-raise once it has shown the report.
    """

    def __init__(self, report: Report, cause: BaseException) -> None:
        super().__init__("validation interrupted")
        self.report = report
        self.cause = cause


def validate(options: ValidationOptions,
             progress: Optional[Callable[[ProgressEvent], None]] = None) -> Report:
    """Run the suite for ``options.python``; never raises for what happens in the children.

    Raises :class:`Interrupted` (with the partial report) when a KeyboardInterrupt or another
    BaseException that is not an error (the CLI's SIGTERM) arrives mid-run.
    """
    started = time.monotonic()
    finished: list[CheckResult] = []

    def notify(event: ProgressEvent) -> None:
        if event[0] == "result":
            finished.append(event[1])
        if progress is not None:
            progress(event)

    options = replace(options, python=interpreter_path(options.python))
    scratch = Path(tempfile.mkdtemp(prefix="torchenv-validate-"))
    token = uuid.uuid4().hex
    extensions = _cache_root({**os.environ, **options.env}) / "torch_extensions"
    torch_version: Optional[str] = None
    try:
        env = _child_env(options, scratch, token, extensions)
        # the GPUs as the driver sees them before any workload: node health judges them, and
        # they say which are vGPUs
        gpus = read_gpus(env) if options.level == "full" else ([], None)
        health = options.level == "full" and (options.only is None or any(
            n == "health" or n.startswith("health_") for n in options.only))
        sampler = LoadSampler(env) if health and gpus[0] else None  # throttling while perf runs
        xid = XidWatch(env) if health and gpus[0] else None  # the driver's critical errors
        if xid is not None:
            xid.start()
        torch_version, results = _run_probe(options, env, scratch, notify, sampler)
        if torch_version is None:
            results += _companions_not_run(options, notify)
        probe_names = {r.name.split("[", 1)[0] for r in results}
        if options.level == "full" and torch_version is not None and _wants_collectives(
                options, probe_names):
            hello = _hello_metrics(results)
            slices = gpu_slices(hello.get("cuda_device_names") or (), vgpus(gpus[0]))
            used = [g for g in gpus[0] if any(
                nvml_gpu_of(r.metrics.get("gpu") or {}, [g]) for r in results)] or gpus[0]
            results += run_collectives(
                options, env, scratch, notify, cuda_devices=int(hello.get("cuda_devices", 0)),
                nccl_available=bool(hello.get("nccl_available", True)), slices=slices,
                token=token, fabric=[fabric_path(g) for g in used],
                unknown=_unknown_names(options, probe_names))
        if health:
            notify(("start", "node health"))  # the node's health needs NVML, not torch
            after = read_gpus(env)[0] if gpus[0] else None  # the counters after the workload
            if xid is not None:
                xid.collect()
            under_load = sampler.seen if sampler is not None and sampler.used else None
            for r in node_health(env, readings=gpus, after=after, under_load=under_load,
                                 xid=xid):
                if options.selects(r.name):
                    results.append(r)
                    notify(("result", r))
        results += _unmatched(options, results, torch_imported=torch_version is not None)
        results = [_with_peak(r, options.peak_lookup, gpus[0]) for r in results]
    except Exception:
        raise
    except BaseException as exc:  # interrupted: what finished is still a report
        partial = Report(python=options.python, torch=torch_version or _torch_of(finished),
                         level=options.level, checks=tuple(finished),
                         seconds=time.monotonic() - started, interrupted=True,
                         companions=tuple(c.name for c in options.companions))
        raise Interrupted(partial, exc) from exc
    finally:
        # nothing of this run may outlive it: its children's process groups, then whatever
        # left them but carries the run's token (ninja starts each compiler in a group of its own)
        reap_children()
        kill_token(token)
        clear_stale_build_locks(extensions)
        shutil.rmtree(scratch, ignore_errors=True)
    return Report(python=options.python, torch=torch_version, level=options.level,
                  checks=tuple(results), seconds=time.monotonic() - started,
                  companions=tuple(c.name for c in options.companions))


def clear_stale_build_locks(cache: Path) -> list[Path]:
    """Remove the lock file of each C++ extension build in ``cache`` that a killed build left
    (one no live build holds); returns the locks removed. The probe's own rule decides."""
    from torchenv.validation._probe import clear_stale_lock

    removed = []
    try:
        folders = [p for p in cache.iterdir() if (p / "lock").exists()]
    except OSError:
        return []
    for folder in folders:
        held = clear_stale_lock(str(folder), wait=False)
        if held is not None:
            held.close()
            removed.append(folder / "lock")
    return removed


def _torch_of(results: Sequence[CheckResult]) -> Optional[str]:
    for r in results:
        if r.name == "import_torch" and r.status == "pass":
            version = r.metrics.get("torch")
            return str(version) if version else None
    return None


def interpreter_path(python: str) -> str:
    """An absolute path (the children run in another directory); symlinks are kept (venvs)."""
    if os.sep in python or (os.altsep and os.altsep in python):
        from torchenv._files import absolute_path

        return absolute_path(python, what="--python")
    return shutil.which(python) or python


def _wants_collectives(options: ValidationOptions, probe_names: set[str]) -> bool:
    """Whether ``--only`` leaves any collective to run: a collective's name, or a name no probe
    check has (an extra collective is only known once its ranks report)."""
    if options.only is None:
        return True
    return any(n in COLLECTIVE_NAMES for n in options.only) or bool(
        _unknown_names(options, probe_names))


def _unknown_names(options: ValidationOptions, probe_names: set[str]) -> list[str]:
    """The ``--only`` names that no probe, collective or health check has."""
    return sorted(n for n in options.only or () if n not in COLLECTIVE_NAMES
                  and n not in probe_names and not n.startswith("health"))


def _unmatched(options: ValidationOptions, results: Sequence[CheckResult], *,
               torch_imported: bool) -> list[CheckResult]:
    """A skip for each ``--only`` name that matched no check, so a typo is not a silent pass;
    a check of the level that did not run because torch could not be imported says so."""
    if options.only is None:
        return []
    seen = {r.name for r in results} | {r.name.split("[", 1)[0] for r in results}
    seen |= {"health"} if any(r.name.startswith("health_") for r in results) else set()
    needs_torch = set() if torch_imported else _torch_checks(options)
    return [CheckResult(name=n, status="skip", reason=(
        "not run: torch could not be imported (see import_torch)"
        if n.split("[", 1)[0] in needs_torch else
        f"no check of this name ran here (level {options.level}); 'torchenv validate --json' "
        "lists the names")) for n in sorted(options.only - seen)]


def _companions_not_run(options: ValidationOptions, notify: Callable[[ProgressEvent], None]
                        ) -> list[CheckResult]:
    """A skip for each companion ``--with`` names when torch itself could not be imported:
    asked for, never silently left out of the report."""
    results = [CheckResult(name=f"companion:{c.name}", status="skip",
                           reason="not run: torch could not be imported (see import_torch)")
               for c in options.companions]
    for r in results:
        notify(("result", r))
    return results


def _torch_checks(options: ValidationOptions) -> set[str]:
    """The names of the checks at ``options.level`` that run only once torch is imported: the
    probe's own (as it registers them), device_count and, at the full level, the collectives."""
    from torchenv.validation._probe import SPECS

    levels = {"quick"} if options.level == "quick" else {"quick", "full"}
    names = {spec.name for spec in SPECS if spec.level in levels}
    if options.host is not None:
        names.add("device_count")
    if options.level == "full":
        names.update(COLLECTIVE_NAMES)
    return names


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
    except _Flooded:
        child.stop(kill=True)
        raise
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
               notify: Callable[[ProgressEvent], None], sampler: Optional[LoadSampler] = None
               ) -> tuple[Optional[str], list[CheckResult]]:
    start = time.monotonic()
    restarts = 0
    try:
        child, hello = _start(options, env, scratch, restarts)
    except OSError as exc:
        from torchenv.errors import BadInput

        raise BadInput(f"cannot run {options.python}: {exc.strerror or exc}",
                       hint="pass the path of a Python interpreter", field="interpreter",
                       value=options.python) from exc
    except _Flooded as exc:
        from torchenv.errors import BadInput

        raise BadInput(f"{options.python} wrote {exc} on its standard output instead of "
                       "running the validation probe; it was stopped",
                       hint="pass the path of a Python interpreter; a wrapper script must "
                            "exec it and print nothing of its own on standard output",
                       field="python", value=options.python) from exc
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
        names += [c.name for c in COLLECTIVE_CHECKS if options.selects(c.name)]
    notify(("plan", names))
    results = [CheckResult(
        name="import_torch", status="pass", seconds=float(hello.get("import_seconds") or 0.0),
        device="cpu",
        detail=f"torch {torch_version} from Python {hello.get('python_version')} "
               f"in {hello.get('import_seconds')} s",
        metrics={"torch": torch_version, "cuda_devices": int(hello.get("cuda_devices") or 0),
                 "cuda_device_names": [str(n) for n in hello.get("cuda_device_names") or ()],
                 "nccl_available": bool(hello.get("nccl_available", True)),
                 **({"distributed_error": str(hello["distributed_error"])}
                    if hello.get("distributed_error") else {})})]
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
        if sampler is not None and name.split("[", 1)[0] == "perf":
            with sampler.sampling():  # the GPUs' throttle reasons while they work hardest
                result, alive = _run_entry(alive, entry, options.timeout)
        else:
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
                    if result.status == "fail":
                        result = replace(result, hint=result.hint or _POISONED_HINT)
                    return result, None
                return result, child
    except TimeoutError:
        child.stop(kill=True)
        return CheckResult(
            status="fail", seconds=time.monotonic() - began,
            error=f"did not finish within {budget:g} s (timed out; the child was restarted)",
            hint="it hangs or is very slow here; raise --timeout to give it longer",
            log=child.stderr_since(offset) or None, **common), None
    except _Flooded as exc:
        child.stop(kill=True)
        return CheckResult(
            status="fail", seconds=time.monotonic() - began,
            error=f"the child wrote {exc} on its protocol stream during this check (stopped; "
                  "restarted for the remaining checks)",
            hint="something in this check writes to the probe's private stream; run "
                 "'torchenv doctor'", log=child.stderr_since(offset) or None, **common), None
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


def _with_peak(result: CheckResult, lookup: Optional[Callable[[str], Optional[Peak]]],
               gpus: Sequence[GpuHealth]) -> CheckResult:
    """Judge a perf result: against the GPU's catalogued peak (below 50 % fails) and against
    what it can do at its own maximum SM clock, which NVML reports (above fails)."""
    if not result.name.startswith("perf") or result.status != "pass" or lookup is None:
        return result
    from torchenv.validation.perf import compare_with_peak

    gpu = nvml_gpu_of(result.metrics.get("gpu") or {}, gpus)
    clock = gpu.sm_clock_max_mhz if gpu is not None else None
    return compare_with_peak(result, lookup, clock if isinstance(clock, int) else None)
