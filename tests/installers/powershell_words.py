"""How PowerShell reads a command line, for the tests: enough of its parser to check that a
rendered command reaches each program with the intended arguments.

Covers what torchenv renders: bare words, single-quoted strings (``''`` for a quote; the
typographic quotes count as quotes), the call operator ``&`` in front of a quoted program, and
the ``A; if ($?) { B }`` chain. Anything else PowerShell would treat specially in a bare word
(variables, sub-expressions, backticks, commas, splatting, redirection, comments, a word that
reads as a number) is an error.
"""

from __future__ import annotations

import re

__all__ = ["SPECIAL", "NotPlain", "powershell_commands"]

QUOTES = "'\u2018\u2019\u201a\u201b"
SPECIAL = set("$`\"(){};,@#<>|&") | set(QUOTES)
_IF_OK = "if ($?) {"


class NotPlain(ValueError):
    """The line uses PowerShell syntax a rendered command must not contain."""


def _quoted(line: str, i: int) -> tuple[str, int]:
    """The single-quoted string starting at ``line[i]``, and the index after it."""
    out = []
    i += 1
    while True:
        if i >= len(line):
            raise NotPlain(f"unterminated quote in {line!r}")
        ch = line[i]
        if ch in QUOTES:
            if i + 1 < len(line) and line[i + 1] in QUOTES:
                out.append(ch)
                i += 2
                continue
            return "".join(out), i + 1
        out.append(ch)
        i += 1


def _tokens(line: str) -> list[tuple[str, bool] | None]:
    """(word, was it quoted), with None for the boundary between two chained commands."""
    tokens: list[tuple[str, bool] | None] = []
    i, depth = 0, 0
    while i < len(line):
        ch = line[i]
        if ch == " ":
            i += 1
        elif line.startswith("; " + _IF_OK, i):
            tokens.append(None)
            depth += 1
            i += len("; " + _IF_OK)
        elif ch == "}" and depth and (i + 1 == len(line) or line[i + 1] in " }"):
            depth -= 1
            i += 1
        elif ch in QUOTES:
            word, i = _quoted(line, i)
            tokens.append((word, True))
        elif ch == "&" and (i + 1 < len(line) and line[i + 1] == " "):
            tokens.append(("&", False))
            i += 1
        else:
            j = i
            while j < len(line) and line[j] != " " and not line.startswith("; " + _IF_OK, j):
                j += 1
            word = line[i:j]
            bad = SPECIAL & set(word)
            if bad or word.startswith(("=", "~")) or re.match(r"[-+.]?[0-9]", word):
                raise NotPlain(f"{word!r} in {line!r} is not a plain word ({sorted(bad)})")
            tokens.append((word, False))
            i = j
    if depth:
        raise NotPlain(f"unbalanced chain in {line!r}")
    return tokens


def powershell_commands(line: str) -> list[list[str]]:
    """The argument lists PowerShell runs for ``line``, in order (each only if the one before it
    succeeded). A quoted program must follow the call operator ``&``: on its own it is a
    string, not a command."""
    commands: list[list[tuple[str, bool]]] = [[]]
    for token in _tokens(line):
        if token is None:
            commands.append([])
        else:
            commands[-1].append(token)
    out = []
    for words in commands:
        if words and words[0] == ("&", False):
            words = words[1:]
        elif words and words[0][1]:
            raise NotPlain(f"{line!r}: a quoted program without the call operator &")
        out.append([word for word, _ in words])
    return out
