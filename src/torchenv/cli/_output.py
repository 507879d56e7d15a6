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

Bidirectional overrides and isolates (U+202A-U+202E, U+2066-U+2069) and the Unicode line
and paragraph separators are shown as ``?`` too: they reorder or break what follows them on
the line, so a name could show as something it is not.

The same filter hides the secret of any URL's credentials (``https://user:****@host``), as pip
and uv do: an ``--index-base`` with a password is used where a command runs, never printed.

The stream is the user's, whatever it can carry: a character its encoding has no byte for (a
Windows console's code page, ``PYTHONIOENCODING=ascii``, a lone surrogate from a file name) is
written as ``?`` instead of failing the command. JSON documents are ASCII (``\\u`` escapes), so
they stay valid on any stream. A stream that is closed (``>&-``) or whose reader has gone
raises :class:`OutputNotDelivered` on the first write: the command stops and says so, with a
non-zero exit, instead of reporting success for output nobody got.
"""

from __future__ import annotations

import contextlib
import re
import sys
from collections.abc import Iterator
from typing import Any, TextIO

__all__ = ["OutputNotDelivered", "clean", "cleaned_output", "clip_long_words"]

_SGR = re.compile(r"(\x1b\[[0-9;]*m)")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


class OutputNotDelivered(OSError):
    """Raised when standard output is closed or its reader has gone: what the command printed
    did not reach anyone. An OSError, as the failure it stands for: code that writes and
    expects I/O errors (``logging``'s flush at exit) still knows it."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why
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
    """A text stream that writes through :func:`clean`, in what its encoding can carry;
    everything else is the wrapped one's."""

    def __init__(self, stream: TextIO, name: str) -> None:
        self._stream = stream
        self._name = name
        try:
            self._terminal = stream.isatty()
        except (AttributeError, ValueError):
            self._terminal = False

    def write(self, text: str) -> int:
        cleaned = clean(text, keep_colour=self._terminal)
        try:
            try:
                self._stream.write(cleaned)
            except UnicodeEncodeError:  # nothing was written: a text stream encodes first
                encoding = getattr(self._stream, "encoding", None) or "utf-8"
                self._stream.write(cleaned.encode(encoding, "replace").decode(encoding))
        except (OSError, ValueError) as exc:  # EPIPE, EBADF, EIO, ENOSPC; a closed file
            raise OutputNotDelivered(_why(self._name, exc)) from exc
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except (OSError, ValueError) as exc:
            raise OutputNotDelivered(_why(self._name, exc)) from exc

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _why(name: str, exc: BaseException) -> str:
    if isinstance(exc, BrokenPipeError):
        return f"the reader of {name} has gone"
    return f"cannot write to {name}: {getattr(exc, 'strerror', None) or exc}"


class _ClosedStream:
    """What ``sys.stdout`` is when the command started with it closed (``>&-``, where Python
    sets it to None): a command that prints nothing works, the first write stops it."""

    encoding = "utf-8"
    errors = "strict"

    def __init__(self) -> None:
        self._refused = False

    def write(self, text: str) -> int:
        self._refused = True
        raise OutputNotDelivered("standard output is closed")

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        # once more at the end, should code that expects I/O errors have caught the first
        if self._refused:
            raise OutputNotDelivered("standard output is closed")

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        import io

        raise io.UnsupportedOperation("standard output is closed")


@contextlib.contextmanager
def cleaned_output() -> Iterator[None]:
    """Wrap ``sys.stdout`` and ``sys.stderr`` for the duration of one command; a closed
    ``sys.stdout`` becomes one whose first write raises :class:`OutputNotDelivered`."""
    saved = sys.stdout, sys.stderr
    sys.stdout = _CleanStream(sys.stdout, "standard output") if sys.stdout is not None \
        else _ClosedStream()
    if sys.stderr is not None:
        sys.stderr = _CleanStream(sys.stderr, "standard error")
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved
