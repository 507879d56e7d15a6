"""Shell-safe install command strings (pure functions, no Plan needed).

The requirements and index URLs they install are facts of the matrix
(:mod:`torchenv.matrix.index`).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from typing import Literal

# resolver.request still imports it from here; its home is matrix.index

Shell = Literal["posix", "powershell"]

__all__ = [
    "SHELLS",
    "Shell",
    "chain_commands",
    "pip_install_argv",
    "pip_install_command",
    "quote_command",
    "shell_for",
    "uv_install_argv",
    "uv_install_command",
]

SHELLS: tuple[Shell, ...] = ("posix", "powershell")
"""The shells a displayed command is quoted for; commands themselves are argument lists."""


def shell_for(platform: str) -> Shell:
    """The shell a command for ``platform`` is pasted into: PowerShell on Windows."""
    return "powershell" if platform.startswith("win") else "posix"


# Words PowerShell passes to a program as they are: no quotes, variables, sub-expressions,
# array commas, splatting, redirection or comments. A leading `=` or `~` is quoted too (zsh
# expands `=word` to the path of a program, and `~` is a path for some PowerShell providers),
# and so is a word PowerShell would read as a number (`12.0`, `3.12`, `1kb`).
_POWERSHELL_BARE = r"[A-Za-z0-9_./:\\+-][A-Za-z0-9_./:\\+=-]*"
_POWERSHELL_NUMBER = r"[-+.]?[0-9]"
_POWERSHELL_QUOTES = "'\u2018\u2019\u201a\u201b"  # PowerShell reads the typographic ones as '


def _quote_posix(word: str) -> str:
    """:func:`shlex.quote`, and a bare word starting with ``=`` quoted too (zsh would expand it
    to the path of a program)."""
    quoted = shlex.quote(word)
    return f"'{word}'" if quoted == word and word.startswith("=") else quoted


def _quote_powershell(word: str) -> str:
    if re.fullmatch(_POWERSHELL_BARE, word) and not re.match(_POWERSHELL_NUMBER, word):
        return word
    for q in _POWERSHELL_QUOTES:
        word = word.replace(q, q + q)
    return f"'{word}'"


def quote_command(argv: Sequence[str], shell: Shell = "posix") -> str:
    """``argv`` as one line to paste into ``shell``, every argument reaching the program intact.

    In PowerShell a quoted program path is a string, not a command, so it is called with ``&``.
    """
    if shell == "powershell":
        words = [_quote_powershell(a) for a in argv]
        if words and words[0] != argv[0]:
            words.insert(0, "&")
        return " ".join(words)
    return " ".join(_quote_posix(a) for a in argv)


def chain_commands(commands: Sequence[Sequence[str]], shell: Shell = "posix") -> str:
    """One line that runs each command only when the one before it succeeded.

    PowerShell 5.1 (the one Windows ships) has no ``&&``: ``$?`` tells instead.
    """
    lines = [quote_command(argv, shell) for argv in commands]
    if shell == "powershell":
        out = lines[-1]
        for line in reversed(lines[:-1]):
            out = f"{line}; if ($?) {{ {out} }}"
        return out
    return " && ".join(lines)


def _index_flags(index_url: str | None, extra_index_url: str | None) -> list[str]:
    flags: list[str] = []
    if index_url:
        flags += ["--index-url", index_url]
    if extra_index_url:
        flags += ["--extra-index-url", extra_index_url]
    return flags


def pip_install_argv(
    requirements: Sequence[str],
    index_url: str | None,
    extra_index_url: str | None = None,
    *,
    python: str | None = None,
    force_reinstall: bool = False,
) -> list[str]:
    """``pip install torch==2.7.1 ... --index-url URL`` (or ``python -m pip``) as arguments.

    ``force_reinstall`` replaces what is installed even when it satisfies the pins: a leftover
    ``2.7.1+cpu`` satisfies ``torch==2.7.1``.
    """
    head = [python, "-m", "pip", "install"] if python else ["pip", "install"]
    tail = ["--force-reinstall"] if force_reinstall else []
    return [*head, *requirements, *_index_flags(index_url, extra_index_url), *tail]


def pip_install_command(
    requirements: Sequence[str],
    index_url: str | None,
    extra_index_url: str | None = None,
    *,
    python: str | None = None,
    shell: Shell = "posix",
) -> str:
    """:func:`pip_install_argv`, quoted for ``shell``."""
    return quote_command(
        pip_install_argv(requirements, index_url, extra_index_url, python=python), shell
    )


def uv_install_argv(
    requirements: Sequence[str],
    index_url: str | None,
    extra_index_url: str | None = None,
    *,
    python: str | None = None,
    uv: str = "uv",
    reinstall: Sequence[str] = (),
) -> list[str]:
    """``uv pip install ...`` as arguments; uv's default first-index strategy keeps one index
    per package. ``reinstall`` names packages to replace even when what is installed satisfies
    the pins; ``uv`` is the program (a path when it is not on PATH)."""
    head = [uv, "pip", "install"]
    if python:
        head += ["--python", python]
    tail = [arg for name in reinstall for arg in ("--reinstall-package", name)]
    return [*head, *requirements, *_index_flags(index_url, extra_index_url), *tail]


def uv_install_command(
    requirements: Sequence[str],
    index_url: str | None,
    extra_index_url: str | None = None,
    *,
    python: str | None = None,
    shell: Shell = "posix",
) -> str:
    """:func:`uv_install_argv`, quoted for ``shell``."""
    return quote_command(
        uv_install_argv(requirements, index_url, extra_index_url, python=python), shell
    )
