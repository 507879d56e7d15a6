"""Shell-safe install command strings (pure functions, no Plan needed)."""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from torchenv.errors import BadInput

__all__ = [
    "DEFAULT_INDEX_BASE",
    "check_index_base",
    "index_url_for",
    "pin",
    "pins",
    "pip_install_command",
    "quote_command",
    "uv_install_command",
]

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


def quote_command(argv: Sequence[str]) -> str:
    """``argv`` as one string safe to paste into a POSIX shell."""
    return " ".join(shlex.quote(a) for a in argv)


def _index_flags(index_url: str | None, extra_index_url: str | None) -> list[str]:
    flags: list[str] = []
    if index_url:
        flags += ["--index-url", index_url]
    if extra_index_url:
        flags += ["--extra-index-url", extra_index_url]
    return flags


def pip_install_command(
    requirements: Sequence[str],
    index_url: str | None,
    extra_index_url: str | None = None,
    *,
    python: str | None = None,
) -> str:
    """``pip install torch==2.7.1 ... --index-url URL`` (or ``python -m pip``)."""
    head = [python, "-m", "pip", "install"] if python else ["pip", "install"]
    return quote_command([*head, *requirements, *_index_flags(index_url, extra_index_url)])


def uv_install_command(
    requirements: Sequence[str],
    index_url: str | None,
    extra_index_url: str | None = None,
    *,
    python: str | None = None,
) -> str:
    """``uv pip install ...``; uv's default first-index strategy keeps one index per package."""
    head = ["uv", "pip", "install"]
    if python:
        head += ["--python", python]
    return quote_command([*head, *requirements, *_index_flags(index_url, extra_index_url)])


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
