"""The one funnel for child processes: every call has a timeout and a uniform result.

Every child starts in its own process group and is registered until it has ended, so that
:func:`reap_children` (called when the command is interrupted) can end whatever is still running.
Every wait is bounded, including the ones after a kill: a child stuck in the kernel (an
uninterruptible driver call) is given up on rather than waited for.
"""

from __future__ import annotations

import _thread
import contextlib
import os
import time
from collections.abc import Mapping, Sequence

from torchenv._record import record

TYPE_CHECKING = False
if TYPE_CHECKING:
    import subprocess
    from typing import Any, Callable, Optional

__all__ = ["RUN_TOKEN_ENV", "ProcessResult", "kill_token", "reap_children", "run_process",
           "run_to_files", "start_process", "stop_process"]

RUN_TOKEN_ENV = "TORCHENV_RUN_TOKEN"
"""An environment variable that marks every process of one run, however it was started."""

_AFTER_KILL = 10.0
"""Seconds to wait for a killed child before giving up on it."""
_DRAIN = 2.0
"""Seconds to wait for a killed child's pipes to close (a descendant may hold them)."""

_LIVE: set[Any] = set()
_LIVE_LOCK = _thread.allocate_lock()  # threading itself is imported only to spawn


def _register(proc: Any) -> None:
    with _LIVE_LOCK:
        _LIVE.add(proc)


def _unregister(proc: Any) -> None:
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
        with contextlib.suppress(Exception):
            proc.wait(timeout=_AFTER_KILL)
    return killed


def kill_token(token: str, *, rounds: int = 3) -> int:
    """SIGKILL every process of this user whose environment carries ``RUN_TOKEN_ENV=token``.

    This finds the processes that left the process group (torchrun starts its workers in their
    own sessions). Linux only (it reads ``/proc/PID/environ``); elsewhere it does nothing.
    Returns how many processes were signalled.
    """
    import signal

    needle = f"{RUN_TOKEN_ENV}={token}".encode()
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


@record
class ProcessResult:
    """What a child process did. ``returncode`` is None when it timed out or could not start."""

    argv: tuple[str, ...]
    returncode: int | None
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool = False
    error: str | None = None

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
            import signal

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

    On timeout the whole process group is killed, so grandchildren go too. Each stream keeps at
    most ``max_output`` bytes: a child that prints more (an nvidia-smi printing forever) is
    killed and the result says so. ``on_output(stream, chunk)`` sees every chunk as it arrives
    (``stream`` is ``"stdout"`` or ``"stderr"``), for showing progress live; it runs in a reader
    thread, or in the calling thread where the child is spawned directly (below).

    On Linux and macOS, with no ``cwd``, the child is started with ``os.posix_spawn`` and its
    pipes are read with ``poll`` in the calling thread: the same contract without importing
    :mod:`subprocess`, :mod:`signal` and :mod:`threading` or starting reader threads, which
    cost more than the child itself on the detection path (one nvidia-smi call).
    """
    if cwd is None and _can_spawn():
        spawned = _run_spawned(argv, timeout=timeout, env=env, max_output=max_output,
                               on_output=on_output)
        if spawned is not None:
            return spawned
    import subprocess  # imported here: most commands never start a child

    start = time.monotonic()
    try:
        proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=dict(env) if env is not None else None,
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
        )
    _register(proc)
    readers = [_Reader(proc, name, stream, max_output, on_output)
               for name, stream in (("stdout", proc.stdout), ("stderr", proc.stderr))]
    deadline = start + timeout
    timed_out = False
    try:
        _join_readers(proc, readers, deadline)
        try:
            proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(proc)
    except BaseException:  # interrupted: the child must not outlive the command
        _kill_group(proc)
        raise
    finally:
        if proc.poll() is None:
            _kill_group(proc)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=_AFTER_KILL)
        for r in readers:  # a descendant may still hold a pipe: never wait for it long
            r.thread.join(_DRAIN)
        _unregister(proc)
    out, err = (r.text() for r in readers)
    flooded = next((r.name for r in readers if r.overflow), None)
    return _finished(argv, start, proc.returncode, out, err, timed_out, flooded, max_output)


def _finished(argv: Sequence[str], start: float, returncode: Optional[int], out: str, err: str,
              timed_out: bool, flooded: Optional[str], max_output: int) -> ProcessResult:
    """The result of a child that has ended or was stopped (``flooded``: the stream that went
    past ``max_output``)."""
    if flooded is not None:
        return ProcessResult(tuple(argv), None, out, err, time.monotonic() - start,
                             error=f"{argv[0]} printed more than {max_output >> 20} MiB on "
                                   f"{flooded} and was stopped")
    return ProcessResult(tuple(argv), None if timed_out else returncode, out, err,
                         time.monotonic() - start, timed_out=timed_out)


def _can_spawn() -> bool:
    import sys

    return (os.name == "posix" and hasattr(os, "posix_spawn") and hasattr(os, "POSIX_SPAWN_DUP2")
            and sys.platform != "cygwin")


def _which(program: str, env: Mapping[str, str] | None) -> str:
    """The file :func:`os.execvpe` would run for ``program`` in ``env`` (its PATH, as
    :mod:`subprocess` searches it); OSError(ENOENT) naming ``program`` when there is none."""
    import errno

    if "/" in program:
        candidates = [program]
    else:
        candidates = [os.path.join(d, program) for d in os.get_exec_path(env)]
    denied = False
    for path in candidates:
        if os.path.isfile(path):
            if os.access(path, os.X_OK):
                return path
            denied = True
    code = errno.EACCES if denied else errno.ENOENT
    raise OSError(code, os.strerror(code), program)


class _Spawned:
    """A child started by ``posix_spawn``: the part of :class:`subprocess.Popen` that
    :func:`reap_children` and :func:`_kill_group` use."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: Optional[int] = None

    def poll(self) -> Optional[int]:
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:  # reaped elsewhere: nothing to wait for
                self.returncode = -1
                return self.returncode
            if pid == self.pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float) -> Optional[int]:
        """The exit status, or None when the child is still running after ``timeout``."""
        end = time.monotonic() + timeout
        pause = 0.00005  # the child is usually gone within microseconds of closing its pipes
        while self.poll() is None:
            left = end - time.monotonic()
            if left <= 0:
                return None
            time.sleep(min(pause, left))
            pause = min(pause * 2, 0.05)
        return self.returncode

    def kill(self) -> None:
        if self.poll() is None:  # never signal a pid that was reaped (it may be reused)
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, _SIGKILL)


_SIGKILL = 9
"""SIGKILL, the same number on every POSIX system (the signal module costs an enum build)."""


def _run_spawned(
    argv: Sequence[str],
    *,
    timeout: float,
    env: Mapping[str, str] | None,
    max_output: int,
    on_output: Optional[Callable[[str, bytes], None]],
) -> Optional[ProcessResult]:
    """:func:`run_process` through ``posix_spawn`` and ``poll``: same results, same bounds.
    None when this system's ``posix_spawn`` cannot start a new session (the caller falls back
    to :mod:`subprocess`)."""
    import select

    start = time.monotonic()
    child_env = os.environ if env is None else env
    try:
        path = _which(argv[0], child_env)
    except OSError as exc:
        return ProcessResult(tuple(argv), None, "", "", time.monotonic() - start,
                             error=f"cannot run {argv[0]}: {exc}")
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    try:
        pid = os.posix_spawn(path, list(argv), child_env, file_actions=[
            (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
            (os.POSIX_SPAWN_DUP2, out_w, 1),
            (os.POSIX_SPAWN_DUP2, err_w, 2),
        ], setsid=True)
    except (OSError, NotImplementedError) as exc:
        for fd in (out_r, out_w, err_r, err_w):
            os.close(fd)
        if isinstance(exc, NotImplementedError):
            return None
        return ProcessResult(tuple(argv), None, "", "", time.monotonic() - start,
                             error=f"cannot run {argv[0]}: {exc}")
    os.close(out_w)
    os.close(err_w)
    proc = _Spawned(pid)
    _register(proc)
    names = {out_r: "stdout", err_r: "stderr"}
    data = {out_r: bytearray(), err_r: bytearray()}
    flooded: Optional[str] = None
    timed_out = False
    poller = select.poll()
    for fd in names:
        poller.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
    open_fds = set(names)
    deadline = start + timeout
    exited_at: Optional[float] = None
    try:
        while open_fds:
            now = time.monotonic()
            if now >= deadline:
                timed_out = proc.poll() is None
                break
            if exited_at is not None and now - exited_at >= _DRAIN:
                break  # a descendant holds a pipe: its output is not waited for
            for fd, _ in poller.poll(max(1, int(1000 * min(0.25, deadline - now)))):
                chunk = os.read(fd, 65536)
                if not chunk:
                    poller.unregister(fd)
                    open_fds.discard(fd)
                    continue
                if on_output is not None:
                    on_output(names[fd], chunk)
                kept = data[fd]
                room = max_output - len(kept)
                kept += chunk[:max(room, 0)]
                if len(chunk) > room:
                    flooded = names[fd]
                    _kill_group(proc)
                    poller.unregister(fd)
                    open_fds.discard(fd)
            if exited_at is None and open_fds and proc.poll() is not None:
                exited_at = time.monotonic()
        if not timed_out and proc.wait(max(0.0, deadline - time.monotonic())) is None:
            timed_out = True
    except BaseException:  # interrupted: the child must not outlive the command
        _kill_group(proc)
        raise
    finally:
        if proc.poll() is None:
            _kill_group(proc)
        proc.wait(_AFTER_KILL)
        for fd in names:
            os.close(fd)
        _unregister(proc)
    out, err = (bytes(data[fd]).decode("utf-8", "replace") for fd in (out_r, err_r))
    return _finished(argv, start, proc.returncode, out, err, timed_out, flooded, max_output)


def _join_readers(proc: Any, readers: Sequence[_Reader], deadline: float) -> None:
    """Wait for EOF on every pipe (the child is done) until ``deadline``; once the child has
    exited, a pipe a descendant still holds gets only ``_DRAIN`` seconds more."""
    exited_at: Optional[float] = None
    for r in readers:
        while r.thread.is_alive():
            now = time.monotonic()
            if now >= deadline or (exited_at is not None and now - exited_at >= _DRAIN):
                return
            r.thread.join(min(0.25, deadline - now))
            if exited_at is None and proc.poll() is not None:
                exited_at = time.monotonic()


class _Reader:
    """Reads one pipe of a child in a thread, keeping at most ``cap`` bytes; past the cap the
    child's process group is killed."""

    def __init__(self, proc: Any, name: str, stream: Any, cap: int,
                 on_output: Optional[Callable[[str, bytes], None]]) -> None:
        self.name = name
        self.data = bytearray()
        self.overflow = False
        self._proc, self._stream, self._cap, self._on_output = proc, stream, cap, on_output
        import threading

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
    import signal
    import subprocess

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
    import subprocess

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
    import subprocess

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


def _kill_group(proc: Any) -> None:
    if os.name == "posix":
        try:
            os.killpg(proc.pid, _SIGKILL)
            return
        except (ProcessLookupError, PermissionError):
            pass
    with contextlib.suppress(ProcessLookupError):
        proc.kill()
