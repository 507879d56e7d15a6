"""CI matrix rows: every (torch release, variant, platform, Python) that exists, then filtered.

A row exists only when the matrix says a wheel exists: the variant is published for the platform
(or it is the build PyPI serves there), and the release — or that variant, where the index's
Python tags differ — has a wheel for the Python tag. Generation is a pure function of the
:class:`~torchenv.matrix.model.Matrix` and the :class:`~torchenv.ci.request.CiRequest`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Optional

from torchenv.ci.request import CiRequest
from torchenv.installers.commands import pip_install_command
from torchenv.matrix.index import index_url_for, pins
from torchenv.matrix.model import Matrix, Release, python_sort_key
from torchenv.resolver.candidate import offered
from torchenv.values import Platform, TorchVersion, VariantName, optional_text

__all__ = ["CiRow", "candidate_rows", "generate_rows", "row_sort_key"]


@dataclass(frozen=True)
class CiRow:
    """One CI job: a torch build on one platform and Python."""

    torch: TorchVersion
    torchvision: Optional[TorchVersion]
    torchaudio: Optional[TorchVersion]
    python: str
    variant: VariantName
    platform: Platform
    os: str
    index_url: Optional[str]
    install: str

    @property
    def name(self) -> str:
        return f"torch {self.torch} {self.variant} py{self.python} {self.platform}"

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "torch": str(self.torch),
            "torchvision": optional_text(self.torchvision),
            "torchaudio": optional_text(self.torchaudio),
            "python": self.python,
            "variant": str(self.variant),
            "platform": str(self.platform),
            "os": self.os,
            "index_url": self.index_url,
            "install": self.install,
        }


def row_sort_key(row: CiRow) -> tuple[Any, ...]:
    """Newest torch first, then platform, variant (cpu, CUDA, ROCm, XPU; ascending), Python."""
    return (
        tuple(-n for n in row.torch.release),
        row.platform,
        row.variant,
        python_sort_key(row.python),
    )


def _variants_on(release: Release,
                 platform: Platform) -> list[tuple[VariantName, tuple[str, ...]]]:
    """(variant name, Python tags) of each build of ``release`` on ``platform``: the builds the
    resolver offers (:func:`torchenv.resolver.candidate.offered`, the PyPI build included),
    each with the tags its wheels carry."""
    return [(variant.name, release.python_tags(platform, variant))
            for variant, _ in offered(release, platform)]


def candidate_rows(matrix: Matrix, request: CiRequest) -> Iterator[CiRow]:
    """Every existing combination that passes the filters, in matrix order (unsorted)."""
    torch_spec = request.torch
    for release in matrix.releases:
        if torch_spec is not None and not torch_spec.contains(release.torch):
            continue
        versions = (("torch", str(release.torch)),
                    ("torchvision", optional_text(release.torchvision)),
                    ("torchaudio", optional_text(release.torchaudio)))
        for platform in request.platforms:
            runner = request.runners.get(platform, str(platform))
            default = release.pypi_default.get(platform)
            for name, tags in _variants_on(release, platform):
                if request.variants is not None and name not in request.variants:
                    continue
                if request.accelerators is not None and name.kind not in request.accelerators:
                    continue
                index_url = (None if name == default
                             else index_url_for(str(name), request.index_base))
                # an index build is pinned with its local tag, as `torchenv resolve` pins it
                install = pip_install_command(
                    pins(versions, None if index_url is None else str(name)), index_url
                )
                for tag in tags:
                    if not request.python.accepts(tag):
                        continue
                    yield CiRow(
                        torch=release.torch,
                        torchvision=release.torchvision,
                        torchaudio=release.torchaudio,
                        python=tag,
                        variant=name,
                        platform=platform,
                        os=runner,
                        index_url=index_url,
                        install=install,
                    )


def _latest_patches(rows: Sequence[CiRow]) -> list[CiRow]:
    newest: dict[str, TorchVersion] = {}
    for row in rows:
        series = row.torch.series
        if series not in newest or row.torch > newest[series]:
            newest[series] = row.torch
    keep = set(newest.values())
    return [r for r in rows if r.torch in keep]


def _edges(rows: Sequence[CiRow]) -> list[CiRow]:
    """Rows whose torch is the oldest or newest with a wheel for their (Python, platform)."""
    bounds: dict[tuple[str, Platform], tuple[TorchVersion, TorchVersion]] = {}
    for row in rows:
        key = (row.python, row.platform)
        v = row.torch
        lo, hi = bounds.get(key, (v, v))
        bounds[key] = (min(lo, v), max(hi, v))
    return [r for r in rows if r.torch in bounds[(r.python, r.platform)]]


def _spread(rows: Sequence[CiRow], limit: int) -> list[CiRow]:
    """``limit`` rows evenly spaced over the sorted list, first and last included."""
    if limit <= 0:
        return []
    if len(rows) <= limit:
        return list(rows)
    if limit == 1:
        return [rows[0]]
    last = len(rows) - 1
    picks = sorted({(i * last) // (limit - 1) for i in range(limit)})
    return [rows[i] for i in picks]


def generate_rows(matrix: Matrix, request: CiRequest) -> list[CiRow]:
    """The sorted, de-duplicated rows for ``request``; the same inputs give the same list."""
    rows = sorted(set(candidate_rows(matrix, request)), key=row_sort_key)
    if request.strategy == "latest-patch":
        rows = _latest_patches(rows)
    elif request.strategy == "edges":
        rows = _edges(rows)
    if request.max_rows is not None:
        rows = _spread(rows, request.max_rows)
    return rows
