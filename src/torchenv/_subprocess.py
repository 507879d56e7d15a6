"""The one funnel for child processes: every call has a timeout and a uniform result."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from torchenv._record import record

if TYPE_CHECKING:
    import subprocess

__all__ = ["ProcessResult", "run_process", "start_process", "stop_process"]


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


def run_process(
    argv: Sequence[str],
    *,
    timeout: float,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    input_text: str | None = None,
) -> ProcessResult:
    """Run ``argv`` and capture its output; never raises for a missing program or a timeout.

    On timeout the whole process group is killed, so grandchildren (torchrun workers) go too.
    """
    import subprocess  # imported here: most commands never start a child

    start = time.monotonic()
    try:
        proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE if input_text is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
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
    try:
        out, err = proc.communicate(input=input_text, timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        out, err = proc.communicate()
        return ProcessResult(
            tuple(argv), None, out or "", err or "", time.monotonic() - start, timed_out=True
        )
    return ProcessResult(tuple(argv), proc.returncode, out, err, time.monotonic() - start)


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
        return subprocess.Popen(
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


def stop_process(proc: subprocess.Popen[bytes], *, grace: float = 2.0) -> int | None:
    """Close the child's stdin, wait up to ``grace`` seconds, then kill its process group.

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
        code = proc.wait(timeout=grace) if grace > 0 else None
    except subprocess.TimeoutExpired:
        code = None
    if code is None:
        _kill_group(proc)  # type: ignore[arg-type]
        code = proc.wait()
    return code


def _kill_group(proc: subprocess.Popen[str]) -> None:
    import signal

    if os.name == "posix":
        try:
            os.killpg(proc.pid, signal.SIGKILL)
            return
        except (ProcessLookupError, PermissionError):
            pass
    proc.kill()
