"""The one reader of counts and ports a user passes: ASCII digits, a length cap before ``int()``
sees them, and a range checked at the edge, so ``--nproc-per-node 99999999999999999999`` or
``--jobs 100000`` never reaches the code that would act on it."""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable

__all__ = ["MAX_DIGITS", "count", "port"]

MAX_DIGITS = 9
"""More digits than any count or port torchenv takes; longer text is refused unread."""

_DIGITS = re.compile(r"[+-]?[0-9]+")


def count(low: int, high: int) -> Callable[[str], int]:
    """An argparse ``type`` for a whole number from ``low`` to ``high``."""
    def parse(text: str) -> int:
        return _bounded(text, low, high)

    parse.__name__ = "number"  # argparse names the type in its message: "invalid number value"
    return parse


def port(text: str) -> int:
    """A TCP port, 1 to 65535."""
    return _bounded(text, 1, 65535)


def _bounded(text: str, low: int, high: int) -> int:
    stripped = text.strip()
    if not _DIGITS.fullmatch(stripped) or len(stripped.lstrip("+-")) > MAX_DIGITS:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number from {low} to {high}")
    value = int(stripped)
    if not low <= value <= high:
        raise argparse.ArgumentTypeError(f"{value} is out of range: give {low} to {high}")
    return value
