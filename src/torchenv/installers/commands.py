"""Shell-safe install command strings (pure functions, no Plan needed)."""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from typing import Literal, Optional

from torchenv.errors import BadInput

Shell = Literal["posix", "powershell"]

__all__ = [
    "DEFAULT_INDEX_BASE",
    "SHELLS",
    "Shell",
    "chain_commands",
    "check_index_base",
    "index_base_of",
    "index_url_for",
    "pin",
    "pins",
    "pip_install_argv",
    "pip_install_command",
    "quote_command",
    "shell_for",
    "uv_install_argv",
    "uv_install_command",
]

SHELLS: tuple[Shell, ...] = ("posix", "powershell")
"""The shells a displayed command is quoted for; commands themselves are argument lists."""

DEFAULT_INDEX_BASE = "https://download.pytorch.org/whl"


def pin(package: str, version: str, local_tag: str | None = None) -> str:
    """``torch==2.7.1`` or, for a build from a variant index, ``torch==2.7.1+cu128``.

    The one place a requirement is written: the plan, the installers, CI rows and doctor's fixes
    all pin through it, so an index build is always pinned with its local tag (a bare
    ``torch==2.7.1`` is satisfied by a leftover ``2.7.1+cpu``).
    """
    return f"{package}=={version}" + (f"+{local_tag}" if local_tag else "")


def pins(versions: Sequence[tuple[str, str | None]], local_tag: str | None = None) -> list[str]:
    """:func:`pin` for each (package, version) that has a version, in order."""
    return [pin(p, v, local_tag) for p, v in versions if v]


def index_url_for(variant: str, base: str | None = None) -> str:
    """The wheel index of ``variant``: ``https://download.pytorch.org/whl/cu128``.

    ``base`` replaces the PyTorch host (mirrors, air-gapped sites); the CLI reads it from
    ``--index-base`` or ``TORCHENV_INDEX_BASE`` (:func:`torchenv.cli._common.index_base`).
    """
    root = base or DEFAULT_INDEX_BASE
    return f"{root.rstrip('/')}/{variant}"


def index_base_of(index_url: str, variant: str) -> Optional[str]:
    """The ``base`` that :func:`index_url_for` turned into ``index_url``; None for the default
    host (so a command that repeats the decision names a mirror only when one was used)."""
    if index_url == index_url_for(variant):
        return None
    suffix = f"/{variant}"
    if not index_url.endswith(suffix):
        raise ValueError(f"{index_url!r} is not the index of {variant!r}")
    return index_url[: -len(suffix)]


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


def check_index_base(value: str, *, origin: str = "--index-base") -> str:
    """``value`` when it is an ``https://``, ``http://`` or ``file://`` URL with a host or path,
    printable and without surrounding blanks; raises :class:`BadInput` naming ``origin``.

    A space inside a path is allowed (pip accepts it and every rendered command quotes it);
    line breaks, tabs and other control characters are not: they would split a
    requirements file or a shell line.
    """
    from urllib.parse import urlsplit

    hint = "give the root of a wheel index mirror, e.g. https://mirror.example/whl"
    if any((ch.isspace() and ch != " ") or not ch.isprintable() for ch in value):
        raise BadInput(f"{origin}: {value!r} contains a line break or control character",
                       hint=hint)
    if value != value.strip():
        raise BadInput(f"{origin}: {value!r} starts or ends with a space", hint=hint)
    scheme, sep, _ = value.partition("://")
    try:
        parts = urlsplit(value)
        # a host for http(s), a path for file://; never a blank in the host
        usable = bool(parts.path if scheme == "file" else parts.netloc) and " " not in parts.netloc
    except ValueError:  # e.g. an unclosed [IPv6 address
        usable = False
    if not sep or scheme not in ("https", "http", "file") or not usable:
        raise BadInput(f"{origin}: {value!r} is not an https://, http:// or file:// URL",
                       hint=hint)
    return value
