"""How the command line ends its process: the status is the command's, the output is complete,
exit handlers run, whatever still has to run at shutdown (a thread, a profiler) gets to, and
an interrupted command says so, with 128 + the signal, after ending its children."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from tests.cli.cli_helpers import json_documents, run_limited

from hermetic import hermetic

BAD_INPUT = '["torchenv", "resolve", "--python", "2.7"]'
"""A command line that ends with exit status 2 before anything is detected."""


def _env() -> dict[str, str]:
    """The tests' environment for a child whose output streams are buffered, as a user's are."""
    env = {k: v for k, v in os.environ.items()
           if k != "PYTHONUNBUFFERED" and not k.startswith("TORCHENV_")}
    env["TORCHENV_NO_OVERLAY"] = "1"
    return dict(hermetic(env))


def _child(code: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
    """``code`` in a child run as the console script is."""
    kwargs.setdefault("capture_output", True)
    return subprocess.run(  # type: ignore[call-overload, no-any-return]
        [sys.executable, "-c", textwrap.dedent(code)], text=True, timeout=60, check=False,
        env=_env(), **kwargs)


def test_exit_handlers_run_and_buffered_output_is_written_before_the_process_ends() -> None:
    done = _child(f"""
        import atexit, sys
        from torchenv.cli import entry_point
        atexit.register(lambda: print("handler ran"))
        sys.stdout.write("x" * 100_000)  # more than any stream buffer holds
        sys.stdout.write("\\nlast line\\n")
        print("to stderr", file=sys.stderr)
        sys.argv = {BAD_INPUT}
        entry_point()
        print("never")
    """)
    assert done.returncode == 2
    assert done.stdout == "x" * 100_000 + "\nlast line\nhandler ran\n"
    assert done.stderr.startswith("to stderr\ntorchenv: error: --python")


def test_a_running_thread_that_is_not_a_daemon_is_waited_for() -> None:
    done = _child(f"""
        import sys, threading, time
        from torchenv.cli import entry_point
        def late():
            time.sleep(0.3)
            print("thread finished", flush=True)
        threading.Thread(target=late).start()
        sys.argv = {BAD_INPUT}
        entry_point()
    """)
    assert done.returncode == 2
    assert done.stdout == "thread finished\n"


@pytest.mark.parametrize("args", [
    ["resolve", "--no-gpu", "--json"],
    ["matrix", "show"],
    ["env", "--format", "requirements", "--no-gpu"],  # less than a buffer: written at the end
], ids=["json", "table", "small"])
def test_output_nobody_reads_any_more_makes_a_successful_command_fail_saying_so(
        args: list[str]) -> None:
    read, write = os.pipe()
    os.close(read)  # the reader has gone away before anything is written
    try:
        done = subprocess.run([sys.executable, "-m", "torchenv", *args], stdout=write,
                              stderr=subprocess.PIPE, text=True, timeout=60, check=False,
                              env=_env())
    finally:
        os.close(write)
    assert done.returncode == 1
    # neither a traceback nor "Exception ignored ... BrokenPipeError": one line that says it
    assert done.stderr == ("torchenv: error: the reader of standard output has gone; the "
                           "output was not delivered\n")


def test_a_profiler_still_gets_to_print_its_report() -> None:
    done = subprocess.run([sys.executable, "-m", "cProfile", "-m", "torchenv", "resolve",
                           "--no-gpu", "--json"], capture_output=True, text=True, timeout=120,
                          check=False, env=_env())
    assert done.returncode == 0, done.stderr
    assert "function calls" in done.stdout  # the profiler's report follows the JSON document


@pytest.mark.parametrize(("args", "status"), [
    (["resolve", "--no-gpu", "--json"], 0),
    (["resolve", "--driver", "390.116", "--gpu", "6.1", "--python", "3.12", "--json"], 3),
    (["resolve", "--python", "2.7", "--json"], 2),
])
def test_the_command_line_ends_with_the_commands_status_and_its_whole_document(
        args: list[str], status: int) -> None:
    done = run_limited(args)
    assert done.returncode == status, done.stderr
    [doc] = json_documents(done.stdout)
    assert (doc.get("torch") is not None) == (status == 0)
    assert doc.get("exit_code", status) == status


def _alive(pid: int) -> bool:
    try:
        return "State:\tZ" not in Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/PID/status")
@pytest.mark.parametrize(("signum", "message"), [
    (signal.SIGINT, "torchenv: interrupted\n"),
    (signal.SIGTERM, "torchenv: interrupted (SIGTERM)\n"),
], ids=["ctrl-c", "sigterm"])
def test_an_interrupted_command_ends_its_children_and_exits_with_128_plus_the_signal(
        signum: int, message: str, tmp_path: Path) -> None:
    pid_file = tmp_path / "smi.pid"
    smi = tmp_path / "nvidia-smi"
    smi.write_text(f"#!/bin/sh\necho $$ > {pid_file}.tmp\nmv {pid_file}.tmp {pid_file}\n"
                   "exec sleep 600\n")
    smi.chmod(0o755)
    env = _env()
    env.update(TORCHENV_NVML_LIBRARY="off", TORCHENV_NVIDIA_SMI=str(smi))  # 5 s to hang
    proc = subprocess.Popen([sys.executable, "-m", "torchenv", "detect", "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        end = time.monotonic() + 60
        while not pid_file.exists():
            assert proc.poll() is None and time.monotonic() < end, "nvidia-smi never started"
            time.sleep(0.05)
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 128 + signum, err
    assert (out, err) == ("", message)
    assert not _alive(int(pid_file.read_text()))
