"""Reading numbers out of probe output with string methods.

The probes read versions and numbers without regular expressions (importing :mod:`re` costs
more than a whole detection); each reader accepts exactly what the pattern it replaces matched.
"""

from __future__ import annotations

__all__ = ["digits_end"]


def digits_end(text: str, start: int) -> int:
    """Where the run of decimal digits at ``start`` ends (``start`` when there is none).

    A digit is what ``\\d`` matches in a str pattern: any Unicode decimal digit (``isdecimal``).
    """
    end = start
    while end < len(text) and text[end].isdecimal():
        end += 1
    return end
