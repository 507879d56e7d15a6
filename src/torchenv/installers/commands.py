"""Shell-safe install command strings (pure functions, no Plan needed)."""

from __future__ import annotations

import shlex
from collections.abc import Sequence

__all__ = [
    "DEFAULT_INDEX_BASE",
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
