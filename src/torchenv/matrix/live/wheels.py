"""Pure parsers: simple-index pages (PEP 503 HTML, PEP 691 JSON) and wheel filenames.

A wheel filename carries everything the matrix needs from an index::

    torch-2.7.1+cu128-cp312-cp312-manylinux_2_28_x86_64.whl
          ^^^^^ ^^^^^ ^^^^^^^^^^^ ^^^^^^^^^^^^^^^^^^^^^^^
          release variant  Python   platform and glibc floor (2.28)

A free-threaded build has the ABI tag ``cp313t`` (-> Python ``3.13t``). macOS wheels and the
PyPI build carry no local label (``variant`` is None).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Optional
from urllib.parse import unquote, urlsplit

from packaging.utils import InvalidWheelFilename, parse_wheel_filename

from torchenv.errors import NetworkError
from torchenv.matrix.model import glibc_sort_key, python_sort_key

__all__ = [
    "MAX_FILENAME",
    "PEP691_ACCEPT",
    "MalformedPage",
    "WheelFile",
    "manylinux_floor",
    "page_filenames",
    "parse_wheel",
    "platform_name",
    "python_sort_key",
    "safe_parse_wheel",
]

PEP691_ACCEPT = ("application/vnd.pypi.simple.v1+json, "
                 "application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.1")
_PEP691_JSON = "application/vnd.pypi.simple.v1+json"

_ANCHOR_RE = re.compile(r"<a\s([^>]*)>([^<]*)</a\s*>", re.IGNORECASE)
_HREF_RE = re.compile(r"""href\s*=\s*["']([^"']*)["']""", re.IGNORECASE)
_CLOSE_RE = re.compile(rb"</(html|body)\s*>\s*$", re.IGNORECASE)
_MANYLINUX_RE = re.compile(r"^manylinux_(\d+)_(\d+)_")
_LEGACY_MANYLINUX = {"manylinux1": "2.5", "manylinux2010": "2.12", "manylinux2014": "2.17"}


class MalformedPage(NetworkError):
    """Raised when a page does not parse as an index or API answer; names the URL."""


def page_filenames(url: str, body: bytes, content_type: str) -> list[str]:
    """The file names an index page lists (PEP 691 JSON or PEP 503 HTML).

    Raises :class:`MalformedPage` for a page that is not one (bad JSON, missing ``files``,
    HTML that stops before ``</html>``, i.e. truncated).
    """
    if content_type == _PEP691_JSON or content_type.endswith("+json") \
            or content_type == "application/json":
        try:
            doc = json.loads(body)
        except (ValueError, RecursionError) as exc:  # RecursionError: nested past any index
            raise MalformedPage(f"{url}: not valid JSON ({exc}); truncated or not an index "
                                "page") from exc
        files = doc.get("files") if isinstance(doc, dict) else None
        if not isinstance(files, list):
            raise MalformedPage(f"{url}: PEP 691 JSON without a 'files' list")
        names = []
        for i, entry in enumerate(files):
            name = entry.get("filename") if isinstance(entry, dict) else None
            if not isinstance(name, str) or not name:
                raise MalformedPage(f"{url}: files[{i}] has no 'filename'")
            names.append(name)
        return names
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MalformedPage(f"{url}: not UTF-8 HTML ({exc.reason} at byte {exc.start})") from exc
    if not _CLOSE_RE.search(body[-64:]):
        raise MalformedPage(f"{url}: the page ends before </html> (truncated?)",
                            hint="try again; if it persists the mirror serves a cut page")
    names = []
    for attrs, label in _ANCHOR_RE.findall(text):
        label = label.strip()
        if not label:
            href = _HREF_RE.search(attrs)
            if not href:
                continue
            label = unquote(urlsplit(href.group(1)).path.rsplit("/", 1)[-1])
        names.append(label)
    if not names and "<a" in text.lower():
        raise MalformedPage(f"{url}: links found but none could be read")
    return names


def manylinux_floor(platform_tag: str) -> str | None:
    """``manylinux_2_28_x86_64`` -> ``"2.28"``; ``manylinux2014_x86_64`` -> ``"2.17"``."""
    m = _MANYLINUX_RE.match(platform_tag)
    if m:
        return f"{m.group(1)}.{m.group(2)}"
    for legacy, floor in _LEGACY_MANYLINUX.items():
        if platform_tag.startswith(legacy + "_"):
            return floor
    return None


def _platform_of(tag: str) -> str | None:
    if tag.endswith("_x86_64"):
        if tag.startswith(("manylinux", "linux")):
            return "linux-x86_64"
        if tag.startswith("macosx"):
            return "macos-x86_64"
        return None
    if tag.endswith("_aarch64") and tag.startswith(("manylinux", "linux")):
        return "linux-aarch64"
    if tag == "win_amd64":
        return "win-amd64"
    if tag.startswith("macosx") and tag.endswith("_arm64"):
        return "macos-arm64"
    return None


def platform_name(tag: str) -> str | None:
    """The torchenv platform of a wheel's platform tag (``win_amd64`` -> ``win-amd64``), or
    None for one torchenv does not track."""
    return _platform_of(tag)


@lru_cache(maxsize=4096)
def _python_of(interpreter: str, abi: str) -> str | None:
    if not interpreter.startswith("cp3") or not interpreter[3:].isdigit():
        return None
    tag = f"3.{interpreter[3:]}"
    return tag + "t" if abi.endswith("t") and abi.startswith("cp") else tag


@dataclass(frozen=True)
class WheelFile:
    """What one wheel filename says (one per supported platform tag in the name)."""

    project: str
    version: str            # public version, e.g. "2.7.1"
    variant: Optional[str]  # local label, e.g. "cu128"; None for unlabelled (PyPI-style) wheels
    final: bool             # not a pre-, post- or dev-release
    python: str             # "3.12", "3.13t"
    platform: str           # torchenv platform name
    manylinux: Optional[str]
    build: int = 0          # the wheel's build tag (a re-upload), 0 when it has none


def parse_wheel(filename: str) -> list[WheelFile]:
    """The facts in a wheel filename; [] for non-wheels, other Pythons, other platforms.

    Raises :class:`packaging.utils.InvalidWheelFilename` for a ``.whl`` name that is not one.
    """
    if not filename.endswith(".whl"):
        return []
    name, version, build, tags = parse_wheel_filename(filename)
    out: dict[tuple[str, str], WheelFile] = {}
    final = not (version.is_prerelease or version.is_postrelease or version.is_devrelease)
    for tag in tags:
        py = _python_of(tag.interpreter, tag.abi)
        plat = _platform_of(tag.platform)
        if py is None or plat is None:
            continue
        floor = manylinux_floor(tag.platform) if plat.startswith("linux") else None
        prev = out.get((py, plat))
        if prev is not None and prev.manylinux is not None and floor is not None:
            floor = min(prev.manylinux, floor, key=glibc_sort_key)
        out[(py, plat)] = WheelFile(project=str(name), version=version.public,
                                    variant=version.local, final=final, python=py,
                                    platform=plat, manylinux=floor,
                                    build=build[0] if build else 0)
    return list(out.values())


MAX_FILENAME = 255
"""The longest file name any common file system holds; a mirror's longer "wheel" is none."""


def safe_parse_wheel(filename: str) -> list[WheelFile] | None:
    """:func:`parse_wheel`, with None instead of an exception for an invalid name: one longer
    than :data:`MAX_FILENAME` is not parsed at all (a 5,000-digit version would otherwise reach
    ``int``, which refuses it with a ValueError of its own)."""
    if len(filename) > MAX_FILENAME:
        return None
    try:
        return parse_wheel(filename)
    except (InvalidWheelFilename, ValueError):
        return None
