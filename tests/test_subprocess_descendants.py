"""What a child of the subprocess funnel starts ends with it: a probe whose tool leaves a
daemon behind (an ``nvidia-smi`` wrapper that starts one, holding the pipes or not, in the
tool's process group or in a session of its own) returns at once, and the daemon is gone."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from torchenv._subprocess import run_process

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="reads /proc and uses sessions")


def _running(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting for a parent to collect it has ended)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            state = fh.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def _gone(pid: int, within: float = 3.0) -> bool:
    end = time.monotonic() + within
    while _running(pid):
        if time.monotonic() > end:
            return False
        time.sleep(0.02)
    return True


def _wrapper(tmp_path: Path, daemon: str) -> tuple[list[str], Path]:
    """A tool that prints its answer, starts ``daemon`` in the background, records its pid,
    and exits 0."""
    pid_file = tmp_path / "daemon.pid"
    script = tmp_path / "nvidia-smi"
    script.write_text(f"#!/bin/sh\necho '0, NVIDIA H100, 9.0'\n{daemon} &\n"
                      f"echo $! > '{pid_file}'\nexit 0\n")
    script.chmod(0o755)
    return [str(script)], pid_file


@pytest.mark.parametrize("daemon", [
    "sleep 600",
    "sleep 600 >/dev/null 2>&1",
    f"{sys.executable} -c 'import os, time; os.setsid(); time.sleep(600)'",
], ids=["holding-the-pipes", "detached-from-the-pipes", "own-session-holding-the-pipes"])
def test_a_daemon_the_tool_left_behind_ends_with_the_call(tmp_path: Path, daemon: str) -> None:
    argv, pid_file = _wrapper(tmp_path, daemon)
    began = time.monotonic()
    result = run_process(argv, timeout=30)
    took = time.monotonic() - began
    pid = int(pid_file.read_text())
    try:
        assert result.ok and result.stdout == "0, NVIDIA H100, 9.0\n"
        assert _gone(pid), f"the daemon {pid} still runs"
        limit = 4.0 if "setsid" in daemon else 1.5  # found by its token, a moment later
        assert took < limit, f"{took:.1f} s"
    finally:
        if _running(pid):
            os.kill(pid, 9)


def test_a_hanging_tool_and_its_daemon_end_at_the_limit(tmp_path: Path) -> None:
    argv, pid_file = _wrapper(tmp_path, "sleep 600")
    script = Path(argv[0])
    script.write_text(script.read_text().replace("exit 0", "exec sleep 600"))
    began = time.monotonic()
    result = run_process(argv, timeout=1)
    took = time.monotonic() - began
    pid = int(pid_file.read_text())
    assert result.timed_out and took < 4, took
    assert _gone(pid)


def test_output_written_just_before_the_exit_is_kept_whole(tmp_path: Path) -> None:
    """Killing the group once the child exits loses nothing it wrote."""
    size = 1 << 20
    code = f"import sys; sys.stdout.write('x' * {size}); sys.stdout.flush()"
    result = run_process([sys.executable, "-c", code], timeout=30)
    assert result.ok and len(result.stdout) == size


def test_detect_through_an_nvidia_smi_wrapper_that_starts_a_daemon(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """The real probe: ``detect`` reads the GPU the wrapper prints, returns at once, and the
    daemon each call started is gone."""
    from torchenv.cli import main

    pids = tmp_path / "daemons"
    smi = tmp_path / "nvidia-smi"
    smi.write_text(
        "#!/bin/sh\nsleep 600 &\n"
        f"echo $! >> '{pids}'\n"
        'case "$*" in\n'
        "  *--query-gpu*) echo '0, NVIDIA H100 80GB HBM3, 9.0, 81559, "
        "GPU-00000000-0000-0000-0000-000000000000, 550.54.15';;\n"
        "  *) echo 'NVIDIA-SMI 550.54.15  Driver Version: 550.54.15  CUDA Version: 12.4';;\n"
        "esac\nexit 0\n")
    smi.chmod(0o755)
    for name in [k for k in os.environ if k.startswith("TORCHENV_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("TORCHENV_NVIDIA_SMI", str(smi))
    monkeypatch.setenv("TORCHENV_NVML_LIBRARY", "")
    began = time.monotonic()
    assert main(["detect", "--json"]) == 0
    took = time.monotonic() - began
    import json

    doc = json.loads(capsys.readouterr().out)
    assert doc["nvidia"]["gpus"][0]["name"] == "NVIDIA H100 80GB HBM3"
    started = [int(p) for p in pids.read_text().split()]
    assert started
    try:
        assert all(_gone(p) for p in started), [p for p in started if _running(p)]
        assert took < 10, f"{took:.1f} s"
    finally:
        for pid in started:
            if _running(pid):
                os.kill(pid, 9)
