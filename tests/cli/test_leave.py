"""How the command line ends its process: exit handlers run, output is complete, the status is
the command's, and whatever still has to run at shutdown (a thread, a profiler) gets to."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from typing import Any

import pytest
from tests.cli.cli_helpers import json_documents, run_limited

from hermetic import hermetic
from torchenv.cli import _shutdown_has_work


def _child(code: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
    """``code`` in a child whose output streams are buffered, as they are for a user."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    kwargs.setdefault("capture_output", True)
    return subprocess.run(  # type: ignore[call-overload, no-any-return]
        [sys.executable, "-c", textwrap.dedent(code)], text=True, timeout=60, check=False,
        env=env, **kwargs)


def test_exit_handlers_run_and_buffered_output_is_written_before_the_process_ends() -> None:
    done = _child("""
        import atexit, sys
        from torchenv.cli import leave
        atexit.register(lambda: print("handler ran"))
        sys.stdout.write("x" * 100_000)  # more than any stream buffer holds
        sys.stdout.write("\\nlast line\\n")
        print("to stderr", file=sys.stderr)
        leave(5)
        print("never")
    """)
    assert done.returncode == 5
    assert done.stdout == "x" * 100_000 + "\nlast line\nhandler ran\n"
    assert done.stderr == "to stderr\n"


# an object whose finalizer tells (straight to the descriptor) when the interpreter tears down
TEARDOWN_WITNESS = """
import os
class Witness:
    def __del__(self):
        os.write(1, b"torn down\\n")
witness = Witness()
"""


def test_nothing_is_torn_down_when_nothing_is_left_to_run() -> None:
    done = _child(TEARDOWN_WITNESS + """
from torchenv.cli import leave
leave(0)
""")
    assert (done.returncode, done.stdout) == (0, "")


def test_the_ordinary_exit_is_taken_while_a_thread_still_runs() -> None:
    done = _child(TEARDOWN_WITNESS + """
import threading, time
threading.Thread(target=time.sleep, args=(0.2,)).start()
from torchenv.cli import leave
leave(6)
""")
    assert (done.returncode, done.stdout) == (6, "torn down\n")


@pytest.mark.parametrize("hook", [sys.setprofile, sys.settrace], ids=["profiler", "tracer"])
def test_a_profiler_or_tracer_makes_shutdown_have_work(hook: Any) -> None:
    before = sys.getprofile() if hook is sys.setprofile else sys.gettrace()
    assert before is None or _shutdown_has_work()
    hook(lambda *args: None)
    try:
        assert _shutdown_has_work()
    finally:
        hook(before)


def test_a_running_thread_that_is_not_a_daemon_is_waited_for() -> None:
    done = _child("""
        import threading, time
        from torchenv.cli import leave
        def late():
            time.sleep(0.3)
            print("thread finished", flush=True)
        threading.Thread(target=late).start()
        leave(4)
    """)
    assert done.returncode == 4
    assert done.stdout == "thread finished\n"


def test_output_nobody_reads_any_more_makes_a_successful_command_fail() -> None:
    read, write = os.pipe()
    os.close(read)  # the reader has gone away before anything is written
    try:
        done = _child("""
            from torchenv.cli import leave
            print("unread")
            leave(0)
        """, capture_output=False, stdout=write, stderr=subprocess.PIPE)
    finally:
        os.close(write)
    assert done.returncode == 1


def test_a_profiler_still_gets_to_print_its_report() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCHENV_")}
    env["TORCHENV_NO_OVERLAY"] = "1"
    done = subprocess.run([sys.executable, "-m", "cProfile", "-m", "torchenv", "resolve",
                           "--no-gpu", "--json"], capture_output=True, text=True, timeout=120,
                          check=False, env=hermetic(env))
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
