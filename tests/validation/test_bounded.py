"""Every wait of ``validate`` and ``detect`` is bounded, and an interrupted command leaves no
process and no temporary directory behind. Real children, real torchrun, real signals."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from tests.validation.helpers import MARK, by_name, listing, load, marked

HERE = Path(__file__).resolve().parent
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not sys.platform.startswith("linux"),
                                 reason="reads /proc/PID/environ")]


def _env(tmp_path: Path, mark: str, **extra: str) -> dict[str, str]:
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCHENV_")}
    env.update({"TMPDIR": str(tmpdir), MARK: mark, "TORCHENV_NO_OVERLAY": "1",
                "TORCHENV_NVML_LIBRARY": "off", "TORCHENV_NVIDIA_SMI": "off",
                "TORCHENV_CACHE_DIR": str(tmp_path / "cache")})
    env.update(extra)
    return env


def _settle(mark: str, limit: float = 10.0) -> list[int]:
    end = time.monotonic() + limit
    left = marked(mark)
    while left and time.monotonic() < end:
        time.sleep(0.1)
        left = marked(mark)
    return left


def test_a_hung_collective_ends_within_its_limit_and_leaves_nothing(tmp_path: Path) -> None:
    mark = uuid.uuid4().hex
    env = _env(tmp_path, mark, TORCHENV_VALIDATE_EXTRA_CHECKS=str(
        HERE / "_planted_collectives.py"))
    began = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "torchenv", "validate", "--level", "full",
                           "--only", "planted_hang,gloo_allreduce", "--json", "--timeout", "4"],
                          capture_output=True, text=True, env=env, timeout=240, check=False)
    took = time.monotonic() - began
    doc = load(proc.stdout)
    checks = by_name(doc)
    assert set(checks) == {"import_torch", "device_count", "planted_hang", "gloo_allreduce"}
    hang = checks["planted_hang"]
    assert hang["status"] == "fail", hang
    assert proc.returncode == 1
    # the collectives get 4 s + 15 s of slack, then 5 s after SIGTERM: a bound, not a hang
    assert hang["seconds"] < 60
    assert took < 200
    assert _settle(mark) == [], "a rank of the hung run is still alive"
    assert listing(tmp_path / "tmp") == []


def _terminate_when(args: list[str], env: dict[str, str], ready: Path, limit: float
                    ) -> tuple[int, str, str]:
    """Run torchenv ARGS, SIGTERM it once ``ready`` exists; (exit status, stdout, stderr)."""
    proc = subprocess.Popen([sys.executable, "-m", "torchenv", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        _wait_until(ready.exists, limit)
        os.kill(proc.pid, signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return proc.returncode, out, err


def _wait_until(predicate: object, limit: float) -> None:
    end = time.monotonic() + limit
    while not predicate():  # type: ignore[operator]
        assert time.monotonic() < end, "the run never got there"
        time.sleep(0.1)


def test_sigterm_during_validate_ends_every_child_and_removes_the_temp_dir(
        tmp_path: Path) -> None:
    mark = uuid.uuid4().hex
    started = tmp_path / "started"
    plant = tmp_path / "plant.py"
    plant.write_text("import time\n\ndef check_planted_wait(ctx):\n"
                     f"    open({str(started)!r}, 'w').close()\n    time.sleep(600)\n")
    env = _env(tmp_path, mark, TORCHENV_VALIDATE_EXTRA_CHECKS=str(plant))
    code, out, err = _terminate_when(["validate", "--json", "--only", "matmul,planted_wait"],
                                     env, started, 120)
    assert code == 128 + signal.SIGTERM, err
    assert "interrupted" in err and "Traceback" not in err
    doc = load(out)  # the checks that finished before the signal, as one document
    assert doc["interrupted"] is True and doc["ok"] is False
    assert by_name(doc)["matmul"]["status"] == "pass"
    assert "planted_wait" not in by_name(doc)
    assert _settle(mark) == []
    assert listing(tmp_path / "tmp") == []


def test_sigterm_during_detect_ends_a_hung_nvidia_smi(tmp_path: Path) -> None:
    mark = uuid.uuid4().hex
    started = tmp_path / "started"
    smi = tmp_path / "nvidia-smi"
    smi.write_text(f"#!/bin/sh\ntouch {started}\nexec sleep 600\n")
    smi.chmod(0o755)
    env = _env(tmp_path, mark, TORCHENV_NVIDIA_SMI=str(smi), TORCHENV_PROBE_TIMEOUT="5")
    code, _, err = _terminate_when(["detect", "--json"], env, started, 60)
    assert code == 128 + signal.SIGTERM, err
    assert "Traceback" not in err
    assert _settle(mark) == []


def test_one_rank_proves_no_collective_and_says_so(tmp_path: Path) -> None:
    """A world of one rank: every collective is a skip saying why, never a pass."""
    from torchenv.validation.collectives import DIST_WORKER, read_journal

    out = tmp_path / "out"
    out.mkdir()
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TMPDIR": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone",
                           "--nproc-per-node", "1", str(DIST_WORKER), str(out), "gloo", "30"],
                          capture_output=True, text=True, env=env, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    journal = read_journal(out / "rank0.jsonl")
    assert journal.done and journal.crash is None
    results = journal.results
    assert {r["name"] for r in results} >= {"gloo_allreduce", "gloo_broadcast",
                                            "gloo_allgather", "ddp_step"}
    for r in results:
        assert r["status"] == "skip", r
        assert "world size 1" in r["reason"] and "needs at least 2 ranks" in r["reason"]


_GLOO = ("gloo_allreduce", "gloo_broadcast", "gloo_allgather", "ddp_step")


def _collectives_with(tmp_path: Path, plant: str, *extra: str) -> subprocess.CompletedProcess[str]:
    mark = uuid.uuid4().hex
    env = _env(tmp_path, mark, TORCHENV_VALIDATE_EXTRA_CHECKS=str(HERE / plant))
    proc = subprocess.run([sys.executable, "-m", "torchenv", "validate", "--level", "full",
                           "--only", ",".join((*_GLOO, *extra)), "--json", "--timeout", "20"],
                          capture_output=True, text=True, env=env, timeout=240, check=False)
    assert _settle(mark) == [], "a rank is still alive"
    assert listing(tmp_path / "tmp") == []
    return proc


def test_a_rank_dying_late_keeps_every_earlier_pass(tmp_path: Path) -> None:
    proc = _collectives_with(tmp_path, "_planted_rank_crash.py", "planted_crash")
    assert proc.returncode == 1, proc.stderr
    checks = by_name(load(proc.stdout))
    for name in _GLOO:
        assert checks[name]["status"] == "pass", checks[name]
    crash = checks["planted_crash"]
    assert crash["status"] == "fail"
    assert "rank 1 died during this check" in crash["error"], crash
    assert "SIGABRT" in crash["error"] or "Signal 6" in crash["error"], crash


def test_a_name_no_rank_could_list_is_a_failure_of_the_launch_not_a_skip(
        tmp_path: Path) -> None:
    """Extra collectives are known only once the ranks list them: when the launch ends before
    that (here torchrun cannot start at all), a name asked for may have been one, so the run
    fails rather than passing over it."""
    python = tmp_path / "python"  # this Python, except that torchrun fails at once
    python.write_text(f'#!/bin/sh\nif [ "$2" = "torch.distributed.run" ]; then\n'
                      f'  echo "planted: torchrun cannot start" >&2; exit 1\nfi\n'
                      f'exec {sys.executable} "$@"\n')
    python.chmod(0o755)
    mark = uuid.uuid4().hex
    proc = subprocess.run([sys.executable, "-m", "torchenv", "validate", "--level", "full",
                           "--python", str(python), "--only", "gloo_allreduce,planted_unlisted",
                           "--json", "--timeout", "20"],
                          capture_output=True, text=True, env=_env(tmp_path, mark), timeout=240,
                          check=False)
    assert proc.returncode == 1, proc.stderr
    checks = by_name(load(proc.stdout))
    unlisted = checks["planted_unlisted"]
    assert unlisted["status"] == "fail", unlisted
    assert "ended before its ranks listed their extra checks" in unlisted["error"], unlisted
    assert "torchrun (gloo, 2 processes)" in unlisted["error"], unlisted
    assert "planted: torchrun cannot start" in unlisted["error"], unlisted
    assert checks["gloo_allreduce"]["status"] == "fail"
    # the progress speaks of the checks asked for only
    assert "gloo_allreduce started" in proc.stderr
    assert "nccl_allreduce started" not in proc.stderr, proc.stderr


def test_a_start_up_crash_on_one_rank_reports_its_own_exception(tmp_path: Path) -> None:
    proc = _collectives_with(tmp_path, "_planted_startup_crash.py")
    assert proc.returncode == 1, proc.stderr
    checks = by_name(load(proc.stdout))
    for name in _GLOO:
        error = checks[name]["error"]
        assert checks[name]["status"] == "fail"
        assert ("rank 1 raised RuntimeError: planted: NCCL error in: ProcessGroupNCCL.cpp:1970, "
                "unhandled system error") in error, error
        assert "during init_process_group" in error


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def _build_env(tmp_path: Path, mark: str) -> dict[str, str]:
    import importlib.util
    import shutil

    if not (shutil.which(os.environ.get("CXX", "c++")) or shutil.which("g++")) \
            or importlib.util.find_spec("ninja") is None:
        pytest.skip("the C++ extension build needs a C++ compiler and ninja")
    return _env(tmp_path, mark)


def _run_until_compiling(args: list[str], env: dict[str, str], mark: str, *,
                         terminate: bool) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """Run torchenv ARGS, watching its marked processes; with ``terminate`` SIGTERM it as soon
    as the compiler runs. Returns the finished process and the names of what was seen."""
    proc = subprocess.Popen([sys.executable, "-m", "torchenv", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    seen: set[str] = set()
    try:
        end = time.monotonic() + 180
        while proc.poll() is None and time.monotonic() < end:
            seen |= {_comm(pid) for pid in marked(mark)}
            if terminate and "cc1plus" in seen:
                os.kill(proc.pid, signal.SIGTERM)
                break
            time.sleep(0.1)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err), seen


def _locks(cache: Path) -> list[Path]:
    return sorted(cache.glob("torch_extensions/*/lock"))


def test_a_check_timeout_during_the_extension_build_leaves_no_compiler_and_no_lock(
        tmp_path: Path) -> None:
    mark = uuid.uuid4().hex
    env = _build_env(tmp_path, mark)
    done, seen = _run_until_compiling(["validate", "--level", "full", "--only", "cpp_extension",
                                       "--json", "--timeout", "5"], env, mark, terminate=False)
    assert "cc1plus" in seen, f"the build never reached the compiler: {seen}"
    ext = by_name(load(done.stdout))["cpp_extension"]
    assert ext["status"] == "fail" and "did not finish within 5 s" in ext["error"], ext
    assert _settle(mark, 5) == [], "a compiler of the killed build is still running"
    assert _locks(tmp_path / "cache") == [], "the killed build's lock is still there"


def test_sigterm_during_the_extension_build_prints_the_partial_report_and_leaves_nothing(
        tmp_path: Path) -> None:
    mark = uuid.uuid4().hex
    env = _build_env(tmp_path, mark)
    done, _ = _run_until_compiling(["validate", "--level", "full", "--only", "cpp_extension",
                                    "--json"], env, mark, terminate=True)
    assert done.returncode == 128 + signal.SIGTERM, done.stderr
    assert "interrupted" in done.stderr and "Traceback" not in done.stderr
    doc = load(done.stdout)
    assert doc["interrupted"] is True and doc["ok"] is False
    assert by_name(doc)["import_torch"]["status"] == "pass"
    assert "cpp_extension" not in by_name(doc), "an unfinished check is not reported"
    assert _settle(mark, 5) == [], "a compiler of the interrupted build is still running"
    assert _locks(tmp_path / "cache") == []
    assert listing(tmp_path / "tmp") == []


def test_a_check_flooding_the_protocol_stream_is_stopped_and_the_suite_goes_on(
        tmp_path: Path) -> None:
    mark = uuid.uuid4().hex
    env = _env(tmp_path, mark, TORCHENV_VALIDATE_EXTRA_CHECKS=str(HERE / "_planted_flood.py"))
    began = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "torchenv", "validate", "--json", "--only",
                           "planted_flood,planted_after"], capture_output=True, text=True,
                          env=env, timeout=240, check=False)
    doc = load(proc.stdout)
    checks = by_name(doc)
    flood = checks["planted_flood"]
    assert flood["status"] == "fail", flood
    assert "a line longer than 1 MiB on its protocol stream during this check" in flood["error"]
    assert flood["seconds"] < 10, flood
    assert checks["planted_after"]["status"] == "pass", checks["planted_after"]
    assert proc.returncode == 1
    assert time.monotonic() - began < 200
    assert _settle(mark) == [], "the flooding child is still running"
    assert listing(tmp_path / "tmp") == []
