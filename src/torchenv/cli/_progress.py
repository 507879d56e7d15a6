"""Progress of long work, on stderr: a live bar on a terminal; anywhere else (a pipe, a file, a
CI log) one line per step, as pip and uv print there, so long work is never silent."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress

__all__ = ["StepHook", "Steps", "stderr_is_a_terminal", "step_progress"]

StepHook = Callable[[str, int, int], None]
"""Told ``(what, done, total)`` as the steps of a piece of work finish."""


def stderr_is_a_terminal() -> bool:
    try:
        return sys.stderr is not None and sys.stderr.isatty()
    except ValueError:  # a closed stream
        return False


class Steps:
    """One line per step on stderr, each ``torchenv COMMAND: TEXT (S s)`` with the seconds since
    the previous line; ``throttle`` (seconds) drops the lines of steps that come faster, except
    the last of each ``what``."""

    def __init__(self, command: str, *, throttle: float = 0.0) -> None:
        self.command = command
        self.throttle = throttle
        self._last = time.monotonic()

    def line(self, text: str, *, timed: bool = True) -> None:
        now = time.monotonic()
        took = f" ({now - self._last:.1f} s)" if timed else ""
        self._last = now
        with suppress(OSError, ValueError):  # stderr went away: the work goes on, unreported
            print(f"torchenv {self.command}: {text}{took}", file=sys.stderr, flush=True)

    def __call__(self, what: str, done: int, total: int) -> None:
        if done < total and time.monotonic() - self._last < self.throttle:
            return
        self.line(f"{what} {done}/{total}")


@contextmanager
def step_progress(command: str, *, quiet: bool = False,
                  throttle: float = 0.0) -> Iterator[StepHook | None]:
    """A :data:`StepHook` for the work inside: a transient bar on a terminal, else
    :class:`Steps` lines; None with ``quiet``."""
    if quiet:
        yield None
        return
    if not stderr_is_a_terminal():
        yield Steps(command, throttle=throttle)
        return
    from rich.markup import escape
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from torchenv.cli._common import console

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  console=console(stderr=True), transient=True) as bar:
        task = bar.add_task("", total=None, visible=False)  # shown with its first step

        def hook(what: str, done: int, total: int) -> None:
            bar.update(task, description=escape(what), completed=done, total=total,
                       visible=True)

        yield hook
