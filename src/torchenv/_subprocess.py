"""The one funnel for child processes: every call has a timeout and a uniform result.

Every child starts in its own process group and is registered until it has ended, so that
:func:`reap_children` (called when the command is interrupted) can end whatever is still running.
What a :func:`run_process` child starts ends with it: the group is killed when the child exits.
Every wait is bounded, including the ones after a kill: a child stuck in the kernel (an
uninterruptible driver call) is given up on rather than waited for.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple, Optional

__all__ = ["RUN_TOKEN_ENV", "ProcessResult", "kill_token", "reap_children", "run_process",
           "run_to_files", "start_process", "stop_process"]

RUN_TOKEN_ENV = "TORCHENV_RUN_TOKEN"
"""An environment variable that marks every process of one run, however it was started."""
_CALL_TOKEN_ENV = "TORCHENV_CALL_TOKEN"
"""The same for the processes of one :func:`run_process` call (a run's token is its own)."""

_AFTER_KILL = 10.0
"""Seconds to wait for a killed child before giving up on it."""
_DRAIN = 2.0
"""Seconds to wait for a killed child's pipes to close (a descendant may hold them)."""
_GROUP_GONE = 0.25
"""Seconds for the pipes to close once the child's group is killed, before what still holds
them is looked for by token."""

_LIVE: set[subprocess.Popen[bytes]] = set()
_LIVE_LOCK = threading.Lock()


def _register(proc: subprocess.Popen[bytes]) -> None:
    with _LIVE_LOCK:
        _LIVE.add(proc)


def _unregister(proc: subprocess.Popen[bytes]) -> None:
    with _LIVE_LOCK:
        _LIVE.discard(proc)


def reap_children() -> int:
    """Kill every child (with its process group) this process started that is still running.

    Returns how many were killed. Used when a command is interrupted (Ctrl-C, SIGTERM).
    """
    with _LIVE_LOCK:
        live = list(_LIVE)
        _LIVE.clear()
    killed = 0
    for proc in live:
        if proc.poll() is None:
            _kill_group(proc)
            killed += 1
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=_AFTER_KILL)
    return killed


def kill_token(token: str, *, rounds: int = 3, variable: str = RUN_TOKEN_ENV) -> int:
    """SIGKILL every process of this user whose environment carries ``variable=token``.

    This finds the processes that left the process group (torchrun starts its workers in their
    own sessions). Linux only (it reads ``/proc/PID/environ``); elsewhere it does nothing.
    Returns how many processes were signalled.
    """
    needle = f"{variable}={token}".encode()
    proc_root = "/proc"
    if not token or not os.path.isdir(proc_root):
        return 0
    me = os.getpid()
    total = 0
    for _ in range(rounds):  # a process may fork while the others are being killed
        found = 0
        for name in os.listdir(proc_root):
            if not name.isdigit() or int(name) == me:
                continue
            try:
                with open(os.path.join(proc_root, name, "environ"), "rb") as fh:
                    environ = fh.read()
            except OSError:
                continue
            if needle in environ.split(b"\0"):
                try:
                    os.kill(int(name), signal.SIGKILL)
                    found += 1
                except OSError:
                    pass
        total += found
        if not found:
            break
        time.sleep(0.05)
    return total


class ProcessResult(NamedTuple):
    """What a child process did. ``returncode`` is None when it timed out or could not start."""

    argv: tuple[str, ...]
    returncode: int | None
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool = False
    error: str | None = None
    started: bool = True
    """False when the program could not be started at all (missing, not executable, not a
    program: ``error`` says which)."""

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def describe_failure(self) -> str:
        """A one-line description of why the process did not succeed."""
        if self.error:
            return self.error
        if self.timed_out:
            return f"{self.argv[0]} did not finish within {self.seconds:.1f} s"
        if self.returncode is not None and self.returncode < 0:
            try:
                name = signal.Signals(-self.returncode).name
            except ValueError:
                name = f"signal {-self.returncode}"
            return f"{self.argv[0]} was killed by {name}"
        last = (self.stderr.strip().splitlines() or [""])[-1]
        return f"{self.argv[0]} exited with status {self.returncode}" + (
            f": {last}" if last else ""
        )


OUTPUT_CAP = 16 << 20
"""Bytes kept of each of a child's output streams; a child that prints more is stopped."""


def run_process(
    argv: Sequence[str],
    *,
    timeout: float,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    max_output: int = OUTPUT_CAP,
    on_output: Optional[Callable[[str, bytes], None]] = None,
) -> ProcessResult:
    """Run ``argv`` and capture its output; never raises for a missing program or a timeout.

    When the child ends, by itself or at the timeout, its whole process group is killed, so
    nothing it started outlives it (an nvidia-smi wrapper's daemon holding the pipes included);
    one that left the group and still holds a pipe is found by a token in its environment. Each
    stream keeps at
    most ``max_output`` bytes: a child that prints more (an nvidia-smi printing forever) is
    killed and the result says so. ``on_output(stream, chunk)`` sees every chunk as it arrives
    (``stream`` is ``"stdout"`` or ``"stderr"``), for showing progress live; it runs in a reader
    thread.
    """
    start = time.monotonic()
    token = os.urandom(8).hex()
    try:
        proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**(os.environ if env is None else env), _CALL_TOKEN_ENV: token},
            cwd=cwd,
            start_new_session=os.name == "posix",
        )
    except OSError as exc:
        return ProcessResult(
            tuple(argv),
            None,
            "",
            "",
            time.monotonic() - start,
            error=f"cannot run {argv[0]}: {exc}",
            started=False,
        )
    _register(proc)
    readers = [_Reader(proc, name, stream, max_output, on_output)
               for name, stream in (("stdout", proc.stdout), ("stderr", proc.stderr))]
    deadline = start + timeout
    timed_out = False
    try:
        _join_readers(proc, readers, deadline)
        timed_out = not _ended(proc, deadline)
    finally:  # also when interrupted: the child must not outlive the command
        # What the child started ends with it: its process group is killed before the child
        # is waited for (its pid, held until then, still names the group), so a daemon it
        # left holding the pipes (an nvidia-smi wrapper's) is gone too.
        if proc.returncode is None:
            _kill_group(proc)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=_AFTER_KILL)
        for r in readers:  # a descendant may still hold a pipe: never wait for it long
            r.thread.join(_GROUP_GONE)
            if r.thread.is_alive():  # one that left the group (setsid) holds it: by token
                kill_token(token, variable=_CALL_TOKEN_ENV)
                r.thread.join(_DRAIN)
        _unregister(proc)
    out, err = (r.text() for r in readers)
    flooded = next((r.name for r in readers if r.overflow), None)
    if flooded is not None:
        return ProcessResult(tuple(argv), None, out, err, time.monotonic() - start,
                             error=f"{argv[0]} printed more than {max_output >> 20} MiB on "
                                   f"{flooded} and was stopped")
    return ProcessResult(tuple(argv), None if timed_out else proc.returncode, out, err,
                         time.monotonic() - start, timed_out=timed_out)


def _exited(proc: subprocess.Popen[bytes]) -> bool:
    """Whether the child has exited, without waiting for it where the platform allows: until
    it is waited for, its pid (and so its process group's id) is not given to another
    process, and killing the group cannot reach a stranger."""
    if proc.returncode is not None:
        return True
    if hasattr(os, "waitid") and hasattr(os, "WNOWAIT"):
        try:
            return os.waitid(os.P_PID, proc.pid,
                             os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
        except ChildProcessError:  # already waited for
            return True
    return proc.poll() is not None


def _ended(proc: subprocess.Popen[bytes], deadline: float) -> bool:
    """Wait until the child has exited (not waited for: see :func:`_exited`) or ``deadline``
    has passed; whether it exited."""
    pause = 0.001
    while not _exited(proc):
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        time.sleep(min(pause, left))
        pause = min(pause * 2, 0.05)
    return True


def _join_readers(proc: subprocess.Popen[bytes], readers: Sequence[_Reader],
                  deadline: float) -> None:
    """Wait for EOF on every pipe (the child is done) until ``deadline``; once the child has
    exited, a pipe a descendant still holds is not waited for: the group kill that follows
    closes it."""
    for r in readers:
        while r.thread.is_alive():
            now = time.monotonic()
            if now >= deadline:
                return
            r.thread.join(min(0.05, deadline - now))
            if r.thread.is_alive() and _exited(proc):
                return


class _Reader:
    """Reads one pipe of a child in a thread, keeping at most ``cap`` bytes; past the cap the
    child's process group is killed."""

    def __init__(self, proc: subprocess.Popen[bytes], name: str, stream: Any, cap: int,
                 on_output: Optional[Callable[[str, bytes], None]]) -> None:
        self.name = name
        self.data = bytearray()
        self.overflow = False
        self._proc, self._stream, self._cap, self._on_output = proc, stream, cap, on_output
        self.thread = threading.Thread(target=self._run, daemon=True,
                                       name=f"torchenv-{name}-reader")
        self.thread.start()

    def _run(self) -> None:
        try:
            while True:
                chunk = self._stream.read1(65536)
                if not chunk:
                    break
                if self._on_output is not None:
                    self._on_output(self.name, chunk)
                room = self._cap - len(self.data)
                self.data += chunk[:max(room, 0)]
                if len(chunk) > room:
                    self.overflow = True
                    _kill_group(self._proc)
                    break
        except (OSError, ValueError):
            pass
        finally:
            with contextlib.suppress(OSError):
                self._stream.close()

    def text(self) -> str:
        return bytes(self.data).decode("utf-8", "replace")


def run_to_files(
    argv: Sequence[str],
    *,
    timeout: float,
    stdout_path: str,
    stderr_path: str,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    token: str | None = None,
    term_grace: float = 10.0,
    tail: int = 20000,
) -> ProcessResult:
    """Run a launcher (torchrun) whose descendants may leave its process group.

    Output goes to files, never to pipes a stray descendant could hold open. Past ``timeout``
    the launcher gets SIGTERM (torchrun forwards it to its workers) and ``term_grace`` seconds,
    then its group is killed. Whatever still carries ``token`` in its environment is killed in
    every case, so nothing of the run survives it. The result holds the last ``tail``
    characters of each file.
    """
    start = time.monotonic()
    run_env = dict(env if env is not None else os.environ)
    if token:
        run_env[RUN_TOKEN_ENV] = token
    try:
        with open(stdout_path, "ab") as out, open(stderr_path, "ab") as err:
            proc = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=out,
                                    stderr=err, env=run_env, cwd=cwd,
                                    start_new_session=os.name == "posix")
    except OSError as exc:
        return ProcessResult(tuple(argv), None, "", "", time.monotonic() - start,
                             error=f"cannot run {argv[0]}: {exc}")
    _register(proc)
    timed_out = False
    try:
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            try:
                proc.send_signal(signal.SIGTERM)
                proc.wait(timeout=term_grace)
            except (subprocess.TimeoutExpired, OSError):
                pass
    except BaseException:
        _kill_group(proc)
        raise
    finally:
        if proc.poll() is None:
            _kill_group(proc)
        if token:
            kill_token(token)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=_AFTER_KILL)
        _unregister(proc)
    return ProcessResult(tuple(argv), None if timed_out else proc.returncode,
                         _tail(stdout_path, tail), _tail(stderr_path, tail),
                         time.monotonic() - start, timed_out=timed_out)


def _tail(path: str, limit: int) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - limit))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def start_process(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    stderr_path: str | None = None,
) -> subprocess.Popen[bytes]:
    """Start a long-lived child with binary stdin/stdout pipes for a line protocol.

    The caller owns the timeouts (read with a deadline) and must end it with
    :func:`stop_process`. stderr goes to ``stderr_path`` (so it can never fill a pipe) or is
    discarded. Raises OSError when the program cannot be started.
    """
    err = open(stderr_path, "ab") if stderr_path else subprocess.DEVNULL  # noqa: SIM115
    try:
        proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err,
            env=dict(env) if env is not None else None,
            cwd=cwd,
            start_new_session=os.name == "posix",
        )
    finally:
        if stderr_path:
            err.close()  # type: ignore[union-attr]
    _register(proc)
    return proc


def stop_process(proc: subprocess.Popen[bytes], *, grace: float = 2.0) -> Optional[int]:
    """Close the child's stdin, wait up to ``grace`` seconds, then kill its process group.

    After the kill it waits at most ``_AFTER_KILL`` seconds: a child stuck in a driver call
    cannot die until the call returns, and is then left behind (the result is None).
    stdout is left open: a thread blocked reading it would deadlock a close; it sees EOF once
    the child is gone and the caller closes it then.
    """
    try:
        if proc.stdin is not None:
            proc.stdin.close()
    except OSError:
        pass
    try:
        code = proc.wait(timeout=grace) if grace > 0 else proc.poll()
    except subprocess.TimeoutExpired:
        code = None
    if code is None:
        _kill_group(proc)
        try:
            code = proc.wait(timeout=_AFTER_KILL)
        except subprocess.TimeoutExpired:
            code = None
    if code is not None:
        _unregister(proc)
    return code


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    if os.name == "posix":
        try:
            os.killpg(proc.pid, signal.SIGKILL)
            return
        except (ProcessLookupError, PermissionError):
            pass
    with contextlib.suppress(ProcessLookupError):
        proc.kill()
