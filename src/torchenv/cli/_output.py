"""Everything a command prints passes one filter: control characters from data never reach the
terminal.

GPU names, host files, node names, file names and package metadata all come from outside, and
an escape sequence hidden in one of them could retitle the terminal, clear it or hide text. The
command line wraps ``sys.stdout`` and ``sys.stderr`` once, for the whole command, instead of
escaping each value where it is printed. On a terminal the colour sequences (SGR, ``ESC [ … m``)
that the console itself writes pass; every other control character (C0 but tab and newline,
DEL, C1, and escape sequences of any other kind) is shown as ``?``. Off a terminal the console
writes no sequences at all, so nothing passes. JSON documents are unaffected: ``json.dumps``
already writes control characters as ``\\u`` escapes.

The same filter hides the secret of any URL's credentials (``https://user:****@host``), as pip
and uv do: an ``--index-base`` with a password is used where a command runs, never printed.
"""

from __future__ import annotations

import contextlib
import re
import sys
from collections.abc import Iterator
from typing import Any, TextIO

__all__ = ["clean", "cleaned_output", "clip_long_words"]

_SGR = re.compile(r"(\x1b\[[0-9;]*m)")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_LONG_WORD = re.compile(r"\S{201,}")
_KEEP = 80


def clip_long_words(text: str) -> str:
    """``text`` with every run of over 200 non-space characters cut to its first 80 and a
    count of the rest: an error quoting a 5,000-digit version still fits on a screen and
    still shows which value it is about."""
    return _LONG_WORD.sub(
        lambda m: f"{m.group()[:_KEEP]}... [{len(m.group()) - _KEEP} more characters]", text)


def clean(text: str, *, keep_colour: bool = False) -> str:
    """``text`` with every control character but tab and newline shown as ``?``, and URL
    credentials redacted; with ``keep_colour``, colour sequences stay."""
    from torchenv.matrix.index import redact_credentials

    text = redact_credentials(text)
    if not keep_colour:
        return _CONTROL.sub("?", text)
    parts = _SGR.split(text)  # odd indexes are the colour sequences themselves
    return "".join(p if i % 2 else _CONTROL.sub("?", p) for i, p in enumerate(parts))


class _CleanStream:
    """A text stream that writes through :func:`clean`; everything else is the wrapped one's."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        try:
            self._terminal = stream.isatty()
        except (AttributeError, ValueError):
            self._terminal = False

    def write(self, text: str) -> int:
        self._stream.write(clean(text, keep_colour=self._terminal))
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextlib.contextmanager
def cleaned_output() -> Iterator[None]:
    """Wrap ``sys.stdout`` and ``sys.stderr`` for the duration of one command."""
    saved = sys.stdout, sys.stderr
    if sys.stdout is not None:
        sys.stdout = _CleanStream(sys.stdout)
    if sys.stderr is not None:
        sys.stderr = _CleanStream(sys.stderr)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved
