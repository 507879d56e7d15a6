"""The subprocess funnel: every wait bounded, nothing of a run left behind."""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from torchenv._subprocess import (
    RUN_TOKEN_ENV,
    kill_token,
    reap_children,
    run_process,
    run_to_files,
    start_process,
)

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="reads /proc and uses sessions")

# A launcher like torchrun: it starts a worker in a session of its own that ignores SIGTERM
# (so killing the launcher's process group misses it), writes the worker's pid, and waits.
_LAUNCHER = textwrap.dedent("""
    import os, subprocess, sys, time
    worker = subprocess.Popen(
        [sys.executable, "-c",
         "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"],
        start_new_session=True)
    with open(sys.argv[1], "w") as f:
        f.write(str(worker.pid))
    print("launched", flush=True)
    time.sleep(600)
""")


def _alive(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "State:\tZ" not in status


def _wait_for(path: Path, limit: float = 20.0) -> None:
    end = time.monotonic() + limit
    while not (path.exists() and path.read_text()):
        assert time.monotonic() < end, f"{path} never appeared"
        time.sleep(0.05)


def _launcher(tmp_path: Path) -> tuple[list[str], Path]:
    script = tmp_path / "launcher.py"
    script.write_text(_LAUNCHER)
    pid_file = tmp_path / "worker.pid"
    return [sys.executable, str(script), str(pid_file)], pid_file


def test_a_launchers_worker_in_its_own_session_is_killed_by_the_runs_token(
        tmp_path: Path) -> None:
    argv, pid_file = _launcher(tmp_path)
    began = time.monotonic()
    result = run_to_files(argv, timeout=3,
                          term_grace=0.5, stdout_path=str(tmp_path / "out"),
                          stderr_path=str(tmp_path / "err"), token=uuid.uuid4().hex)
    took = time.monotonic() - began
    assert result.timed_out and result.returncode is None
    assert "launched" in result.stdout
    assert took < 3 + 0.5 + 5
    worker = int(pid_file.read_text())
    end = time.monotonic() + 5
    while _alive(worker) and time.monotonic() < end:
        time.sleep(0.05)
    assert not _alive(worker), "the worker outlived its run"


def test_without_the_token_the_same_worker_survives_the_group_kill(tmp_path: Path) -> None:
    """Why the token exists: the process-group kill alone leaves the worker running."""
    argv, pid_file = _launcher(tmp_path)
    token = uuid.uuid4().hex
    env = {**os.environ, RUN_TOKEN_ENV: token}
    result = run_to_files(argv, timeout=2,
                          term_grace=0.2, env=env, stdout_path=str(tmp_path / "out"),
                          stderr_path=str(tmp_path / "err"))
    assert result.timed_out
    worker = int(pid_file.read_text())
    try:
        assert _alive(worker)
    finally:
        assert kill_token(token) >= 1
    end = time.monotonic() + 5
    while _alive(worker) and time.monotonic() < end:
        time.sleep(0.05)
    assert not _alive(worker)


def test_run_process_timeout_is_bounded_when_a_descendant_holds_the_pipes(
        tmp_path: Path) -> None:
    argv, pid_file = _launcher(tmp_path)
    began = time.monotonic()
    result = run_process(argv, timeout=2)
    took = time.monotonic() - began
    worker = int(pid_file.read_text())
    os.kill(worker, 9)
    assert result.timed_out
    assert took < 2 + 2 + 10 + 3, f"waited {took:.1f} s for pipes a stray worker held"


def test_reap_children_ends_every_live_child() -> None:
    proc = start_process([sys.executable, "-c", "import time; time.sleep(600)"])
    assert proc.poll() is None
    try:
        assert reap_children() == 1
        assert proc.poll() is not None
        assert reap_children() == 0
    finally:
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                stream.close()


def test_a_finished_run_leaves_no_stray_either(tmp_path: Path) -> None:
    """The token sweep runs after a clean exit too: a worker left running is killed."""
    script = tmp_path / "quick.py"
    script.write_text(textwrap.dedent("""
        import subprocess, sys
        w = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"],
                             start_new_session=True)
        open(sys.argv[1], "w").write(str(w.pid))
    """))
    pid_file = tmp_path / "worker.pid"
    result = run_to_files([sys.executable, str(script), str(pid_file)], timeout=30,
                          stdout_path=str(tmp_path / "out"), stderr_path=str(tmp_path / "err"),
                          token=uuid.uuid4().hex)
    assert result.ok
    _wait_for(pid_file)
    worker = int(pid_file.read_text())
    end = time.monotonic() + 5
    while _alive(worker) and time.monotonic() < end:
        time.sleep(0.05)
    assert not _alive(worker)


def test_a_child_printing_forever_is_stopped_at_the_output_cap() -> None:
    began = time.monotonic()
    flood = "import sys\nwhile True: sys.stdout.write('x' * 65536)"
    result = run_process([sys.executable, "-c", flood], timeout=60, max_output=1 << 20)
    assert time.monotonic() - began < 20
    assert result.returncode is None and not result.ok
    assert result.error is not None and "printed more than 1 MiB on stdout" in result.error
    assert len(result.stdout) == 1 << 20


def test_output_is_seen_live_and_kept_whole() -> None:
    seen: list[tuple[str, bytes]] = []
    result = run_process([sys.executable, "-c",
                          "import sys; print('out'); print('err', file=sys.stderr)"],
                         timeout=30, on_output=lambda name, chunk: seen.append((name, chunk)))
    assert result.ok and result.stdout == "out\n" and result.stderr == "err\n"
    for name, text in (("stdout", b"out\n"), ("stderr", b"err\n")):
        assert b"".join(chunk for n, chunk in seen if n == name) == text


def test_an_exited_child_whose_descendant_holds_the_pipe_is_not_waited_for(
        tmp_path: Path) -> None:
    script = tmp_path / "daemonize.py"
    script.write_text(textwrap.dedent("""
        import subprocess, sys
        w = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"],
                             start_new_session=True)
        open(sys.argv[1], "w").write(str(w.pid))
        print("parent done", flush=True)
    """))
    pid_file = tmp_path / "worker.pid"
    began = time.monotonic()
    result = run_process([sys.executable, str(script), str(pid_file)], timeout=60)
    took = time.monotonic() - began
    with contextlib.suppress(ProcessLookupError):  # the funnel has ended it already
        os.kill(int(pid_file.read_text()), 9)
    assert result.ok and "parent done" in result.stdout
    assert took < 15, f"waited {took:.1f} s on a pipe the exited child's descendant held"


def test_a_missing_program_is_an_error_naming_it(tmp_path: Path) -> None:
    result = run_process(["no-such-program-here"], timeout=5, env={"PATH": str(tmp_path)})
    assert result.returncode is None and not result.ok and not result.started
    assert result.error == ("cannot run no-such-program-here: [Errno 2] No such file or "
                            "directory: 'no-such-program-here'")


def test_a_program_that_started_says_so_whatever_its_end(tmp_path: Path) -> None:
    """``started`` tells "could not be run at all" from every way a run can end: a failure, a
    timeout, a flood of output (each of which also sets no returncode or an error)."""
    text = tmp_path / "not-a-program"
    text.write_text("plain text\n")
    text.chmod(0o755)
    assert not run_process([str(text)], timeout=5).started  # exec refuses it
    assert run_process(["/bin/sh", "-c", "exit 3"], timeout=5).started
    assert run_process(["/bin/sh", "-c", "sleep 5"], timeout=0.2).started
    assert run_process(["/bin/sh", "-c", "yes"], timeout=5, max_output=1024).started


def test_the_program_is_found_on_the_childs_path(tmp_path: Path) -> None:
    tool = tmp_path / "bin" / "tool"
    tool.parent.mkdir()
    tool.write_text("#!/bin/sh\necho \"$(basename \"$0\") $*\"; echo warn >&2; exit 3\n")
    tool.chmod(0o755)
    result = run_process(["tool", "a b"], timeout=10,
                         env={"PATH": f"/nonexistent:{tool.parent}:/usr/bin:/bin"})
    assert (result.returncode, result.stdout, result.stderr) == (3, "tool a b\n", "warn\n")
    assert result.describe_failure() == "tool exited with status 3: warn"


def test_a_file_that_is_not_executable_cannot_run(tmp_path: Path) -> None:
    tool = tmp_path / "tool"
    tool.write_text("#!/bin/sh\necho hi\n")
    tool.chmod(stat.S_IRUSR | stat.S_IWUSR)
    if os.access(tool, os.X_OK):
        pytest.skip("this user may execute anything (root with no exec checks)")
    result = run_process([str(tool)], timeout=5)
    assert result.error is not None and "Permission denied" in result.error


def test_the_child_runs_in_a_session_of_its_own_with_no_stdin() -> None:
    code = "import os, sys; print(os.getsid(0) == os.getpid(), repr(sys.stdin.read()))"
    result = run_process([sys.executable, "-c", code], timeout=30)
    assert result.stdout == "True ''\n"


def test_a_child_killed_by_a_signal_says_so() -> None:
    result = run_process([sys.executable, "-c", "import os; os.kill(os.getpid(), 9)"],
                         timeout=30)
    assert result.returncode == -9
    assert result.describe_failure().endswith("was killed by SIGKILL")


def test_a_timeout_kills_the_whole_group(tmp_path: Path) -> None:
    pid_file = tmp_path / "grandchild.pid"
    code = textwrap.dedent(f"""
        import subprocess, sys, time
        g = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        open({str(pid_file)!r}, "w").write(str(g.pid))
        time.sleep(600)
    """)
    began = time.monotonic()
    result = run_process([sys.executable, "-c", code], timeout=3)
    assert result.timed_out and result.returncode is None
    assert time.monotonic() - began < 3 + 10
    _wait_for(pid_file)
    grandchild = int(pid_file.read_text())
    end = time.monotonic() + 5
    while _alive(grandchild) and time.monotonic() < end:
        time.sleep(0.05)
    assert not _alive(grandchild)
