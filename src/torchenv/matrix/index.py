"""Where a build's wheels live and how a requirement names one: the wheel index of a variant
(``https://download.pytorch.org/whl/cu128``, or a mirror's) and pins (``torch==2.7.1+cu128``).

Facts of the matrix that the resolver, the installers, CI rows and doctor all use; pure.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Optional

from torchenv.errors import BadInput

__all__ = [
    "DEFAULT_INDEX_BASE",
    "PYPI_INDEX",
    "check_index_base",
    "index_base_of",
    "index_url_for",
    "pin",
    "pins",
    "redact_credentials",
    "strip_credentials",
]

DEFAULT_INDEX_BASE = "https://download.pytorch.org/whl"
"""The root of PyTorch's own wheel indexes; a variant's index is ``ROOT/VARIANT``."""

PYPI_INDEX = "https://pypi.org/simple"
"""PyPI's simple index: where a companion published on PyPI is installed from beside a
variant index."""


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

    ``base`` replaces the PyTorch host (mirrors, air-gapped sites); it is checked by
    :func:`check_index_base` where it enters.
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


def check_index_base(value: str) -> str:
    """``value`` when it is an ``https://``, ``http://`` or ``file://`` URL with a host or path,
    printable and without surrounding blanks; raises :class:`BadInput` about the field
    ``index_base``.

    A space inside a path is allowed (pip accepts it and every rendered command quotes it);
    line breaks, tabs and other control characters are not: they would split a
    requirements file or a shell line.
    """
    from urllib.parse import urlsplit

    hint = "give the root of a wheel index mirror, e.g. https://mirror.example/whl"
    if any((ch.isspace() and ch != " ") or not ch.isprintable() for ch in value):
        raise BadInput(f"{value!r} contains a line break or control character", hint=hint,
                       field="index_base", value=value)
    if value != value.strip():
        raise BadInput(f"{value!r} starts or ends with a space", hint=hint,
                       field="index_base", value=value)
    scheme, sep, _ = value.partition("://")
    try:
        parts = urlsplit(value)
        # a host for http(s), a path for file://; never a blank in the host
        usable = bool(parts.path if scheme == "file" else parts.netloc) and " " not in parts.netloc
    except ValueError:  # e.g. an unclosed [IPv6 address
        usable = False
    if not sep or scheme not in ("https", "http", "file") or not usable:
        raise BadInput(f"{value!r} is not an https://, http:// or file:// URL", hint=hint,
                       field="index_base", value=value)
    return value


# scheme://user[:password]@ — what pip and uv hide when they print an index URL
_CREDENTIALS = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<user>[^\s/@:]*)"
                          r"(?::(?P<password>[^\s/@]*))?@")


def redact_credentials(text: str) -> str:
    """``text`` with the secret of every URL's credentials shown as ``****``, as pip prints
    them: ``https://user:****@host/…``, and a lone user name (often a token) ``https://****@``.
    """
    def hide(m: re.Match[str]) -> str:
        if m["password"] is None:
            return f"{m['scheme']}****@"
        return f"{m['scheme']}{m['user']}:****@"

    return _CREDENTIALS.sub(hide, text)


def strip_credentials(text: str) -> tuple[str, bool]:
    """``text`` with the credentials of every URL left out, and whether there were any (a file
    torchenv writes never holds a secret; pip and uv take it from a keyring, ``.netrc`` or
    ``PIP_INDEX_URL`` / ``UV_INDEX_URL``)."""
    stripped, count = _CREDENTIALS.subn(lambda m: m["scheme"], text)
    return stripped, bool(count)
