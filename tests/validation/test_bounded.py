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
from tests.validation.helpers import by_name, listing, load

HERE = Path(__file__).resolve().parent
MARK = "TORCHENV_TEST_MARK"

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not sys.platform.startswith("linux"),
                                 reason="reads /proc/PID/environ")]


def _marked(mark: str) -> list[int]:
    """Live processes whose environment carries ``MARK=mark`` (every descendant inherits it)."""
    needle = f"{MARK}={mark}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if needle in (entry / "environ").read_bytes().split(b"\0"):
                status = (entry / "status").read_text()
                if "State:\tZ" not in status:
                    found.append(int(entry.name))
        except OSError:
            continue
    return found


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
    left = _marked(mark)
    while left and time.monotonic() < end:
        time.sleep(0.1)
        left = _marked(mark)
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
                    ) -> tuple[int, str]:
    """Run torchenv ARGS, SIGTERM it once ``ready`` exists; (exit status, stderr)."""
    proc = subprocess.Popen([sys.executable, "-m", "torchenv", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        _wait_until(ready.exists, limit)
        os.kill(proc.pid, signal.SIGTERM)
        _out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return proc.returncode, err


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
    code, err = _terminate_when(["validate", "--json"], env, started, 120)
    assert code == 128 + signal.SIGTERM, err
    assert "interrupted" in err and "Traceback" not in err
    assert _settle(mark) == []
    assert listing(tmp_path / "tmp") == []


def test_sigterm_during_detect_ends_a_hung_nvidia_smi(tmp_path: Path) -> None:
    mark = uuid.uuid4().hex
    started = tmp_path / "started"
    smi = tmp_path / "nvidia-smi"
    smi.write_text(f"#!/bin/sh\ntouch {started}\nexec sleep 600\n")
    smi.chmod(0o755)
    env = _env(tmp_path, mark, TORCHENV_NVIDIA_SMI=str(smi), TORCHENV_PROBE_TIMEOUT="5")
    code, err = _terminate_when(["detect", "--json"], env, started, 60)
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

