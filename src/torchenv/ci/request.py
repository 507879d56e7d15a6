"""What a CI matrix should cover: the user's filters, parsed and checked, as one frozen value.

Parsing lives here (strings from argv in, a :class:`CiRequest` out, :class:`BadInput` naming the
flag on a bad value); generation in :mod:`torchenv.ci.rows` only reads the finished request.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal, Optional, get_args

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from torchenv.errors import BadInput
from torchenv.matrix.model import ALL_PLATFORMS
from torchenv.values import PLATFORMS, InvalidValue, Platform, TorchSpec, VariantName

__all__ = [
    "ACCELERATORS",
    "DEFAULT_RUNNERS",
    "STRATEGIES",
    "CiRequest",
    "PythonFilter",
    "Strategy",
    "parse_accelerators",
    "parse_platforms",
    "parse_python_filter",
    "parse_runners",
    "parse_torch_spec",
    "parse_variants",
]

Strategy = Literal["all", "latest-patch", "edges"]
STRATEGIES: tuple[str, ...] = get_args(Strategy)
ACCELERATORS: tuple[str, ...] = ("cpu", "cuda", "rocm", "xpu")

#: GitHub-hosted runner labels per platform (macos-13 is the last Intel macOS image).
DEFAULT_RUNNERS: Mapping[str, str] = {
    "linux-x86_64": "ubuntu-latest",
    "linux-aarch64": "ubuntu-24.04-arm",
    "win-amd64": "windows-latest",
    "macos-arm64": "macos-latest",
    "macos-x86_64": "macos-13",
}

#: Short names accepted by ``--os`` besides platform names and runner labels.
_OS_ALIASES: Mapping[str, tuple[str, ...]] = {
    "linux": ("linux-x86_64",),
    "linux-arm": ("linux-aarch64",),
    "ubuntu": ("linux-x86_64",),
    "windows": ("win-amd64",),
    "win": ("win-amd64",),
    "macos": ("macos-arm64",),
    "macos-intel": ("macos-x86_64",),
}

_PY_TAG_RE = re.compile(r"^3\.(\d{1,2})(t?)$")
_SPEC_START = ("<", ">", "=", "!", "~")
_LONG_NUMBER = re.compile(r"[0-9]{5,}")
_MAX_FILTER = 256


@dataclass(frozen=True)
class PythonFilter:
    """Which Python tags to keep: an explicit tag set, or a specifier (or neither: all).

    Free-threaded tags (``3.13t``) are kept only when listed explicitly or when
    ``free_threaded`` is set; a specifier matches them by their version (``3.13``).
    """

    tags: Optional[frozenset[str]] = None
    spec: Optional[SpecifierSet] = None
    free_threaded: bool = False

    def accepts(self, tag: str) -> bool:
        if self.tags is not None:
            return tag in self.tags
        threaded = tag.endswith("t")
        if threaded and not self.free_threaded:
            return False
        if self.spec is None:
            return True
        return self.spec.contains(tag.rstrip("t"), prereleases=True)


@dataclass(frozen=True)
class CiRequest:
    """Filters and shape of a CI matrix; every field has an "everything" default."""

    torch: Optional[TorchSpec] = None
    python: PythonFilter = field(default_factory=PythonFilter)
    variants: Optional[frozenset[VariantName]] = None
    accelerators: Optional[frozenset[str]] = None
    platforms: tuple[Platform, ...] = ALL_PLATFORMS
    runners: Mapping[Platform, str] = field(default_factory=lambda: parse_runners(None))
    strategy: Strategy = "all"
    max_rows: Optional[int] = None
    index_base: Optional[str] = None


def _items(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def parse_torch_spec(text: str | None) -> TorchSpec | None:
    """``'>=2.5,<2.9'``, a bare series (``2.7`` means ``==2.7.*``) or a bare version (``2.7.1``
    means ``==2.7.1``), as ``--torch`` reads it everywhere."""
    if text is None or not text.strip():
        return None
    try:
        return TorchSpec(text)
    except InvalidValue:
        raise BadInput(f"{text!r} is not a PEP 440 specifier",
                       hint="write it like '>=2.5' or '==2.7.*'", field="torch",
                       value=text) from None


def parse_python_filter(text: str | None, *, free_threaded: bool = False) -> PythonFilter:
    """``'>=3.10'`` (a specifier), ``'3.11,3.12,3.13t'`` (a list) or None (all)."""
    if text is None or not text.strip():
        return PythonFilter(free_threaded=free_threaded)
    raw = text.strip()
    long_number = _LONG_NUMBER.search(raw)
    if len(raw) > _MAX_FILTER or long_number:  # checked before any number reaches int()
        what = (f"a number of {len(long_number.group())} digits is no Python version"
                if long_number else f"longer than {_MAX_FILTER} characters")
        raise BadInput(f"--python: {text[:40]!r}{'...' if len(text) > 40 else ''} is not a "
                       f"Python filter: {what}",
                       hint="use '>=3.10' or a list like '3.11,3.12,3.13t'")
    if raw.startswith(_SPEC_START):
        try:
            return PythonFilter(spec=SpecifierSet(raw), free_threaded=free_threaded)
        except InvalidSpecifier as exc:
            raise BadInput(f"--python: {text!r} is not a specifier",
                           hint="use '>=3.10' or a list like '3.11,3.12,3.13t'") from exc
    tags: set[str] = set()
    for item in _items(raw):
        if not _PY_TAG_RE.match(item):
            raise BadInput(f"--python: {item!r} is not a Python version like '3.12' or '3.13t'",
                           hint="use '>=3.10' or a list like '3.11,3.12,3.13t'")
        tags.add(item)
        if free_threaded and not item.endswith("t"):
            tags.add(item + "t")
    return PythonFilter(tags=frozenset(tags), free_threaded=free_threaded)


def parse_variants(text: str | None) -> frozenset[VariantName] | None:
    if text is None or not text.strip():
        return None
    names = set()
    for name in _items(text):
        try:
            names.add(VariantName(name))
        except InvalidValue:
            raise BadInput(f"--variants: {name!r} is not a variant name",
                           hint="variants look like cpu, cu126, rocm6.3, xpu",
                           field="variants", value=name) from None
    return frozenset(names)


def parse_accelerators(text: str | None) -> frozenset[str] | None:
    if text is None or not text.strip():
        return None
    names = _items(text)
    for name in names:
        if name not in ACCELERATORS:
            raise BadInput(f"--accelerators: {name!r} is not one of " + ", ".join(ACCELERATORS))
    return frozenset(names)


def parse_platforms(values: Iterable[str] | None) -> tuple[Platform, ...]:
    """Platforms from ``--platforms``/``--os`` values: names, runner labels or short aliases.

    Each value may itself be a comma list; the result keeps :data:`PLATFORMS` order.
    """
    if not values:
        return ALL_PLATFORMS
    by_label = {label: plat for plat, label in DEFAULT_RUNNERS.items()}
    wanted: set[str] = set()
    for value in values:
        for item in _items(value):
            if item in PLATFORMS:
                wanted.add(item)
            elif item in by_label:
                wanted.add(by_label[item])
            elif item in _OS_ALIASES:
                wanted.update(_OS_ALIASES[item])
            else:
                raise BadInput(f"--platforms: {item!r} is not a platform or runner label",
                               hint="use " + ", ".join(PLATFORMS) + " or a label like "
                               "ubuntu-latest, windows-latest, macos-latest",
                               field="platforms", value=item)
    return tuple(p for p in ALL_PLATFORMS if str(p) in wanted)


def parse_runners(values: Iterable[str] | None) -> dict[Platform, str]:
    """``--runner PLATFORM=LABEL`` overrides on top of :data:`DEFAULT_RUNNERS`."""
    runners = {Platform(plat): label for plat, label in DEFAULT_RUNNERS.items()}
    for value in values or ():
        plat, sep, label = value.partition("=")
        plat, label = plat.strip(), label.strip()
        if not sep or not label:
            raise BadInput(f"--runner: {value!r} is not PLATFORM=LABEL",
                           hint="e.g. --runner linux-x86_64=self-hosted-gpu")
        if plat not in PLATFORMS:
            raise BadInput(f"--runner: {plat!r} is not a platform; expected one of "
                           + ", ".join(PLATFORMS), field="runners", value=plat)
        runners[Platform(plat)] = label
    return runners
