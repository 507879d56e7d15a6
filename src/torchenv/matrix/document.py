"""The ``matrix show --json`` document of CLI.md: releases, variants and their evidence as data."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from torchenv.matrix.inference import describe
from torchenv.matrix.model import ALL_PLATFORMS, COMPANIONS, Matrix, Release
from torchenv.values import optional_text

__all__ = ["matrix_to_json", "release_to_json"]


def release_to_json(r: Release, *, with_sources: bool = False) -> dict[str, Any]:
    variants = []
    for v in r.variants:
        entry: dict[str, Any] = {
            "name": str(v.name),
            "platforms": [str(p) for p in v.platforms],
            "arch_list": _texts(v.arch_list),
        }
        if v.arch_list_by_platform:
            entry["arch_list_by_platform"] = {
                str(k): _texts(a) for k, a in v.arch_list_by_platform.items()
            }
        if v.python:
            entry["python"] = {str(k): list(t) for k, t in v.python.items()}
        entry.update(cudnn=v.cudnn, nccl=v.nccl, status=v.status, index=v.index)
        if v.index_rule:
            entry["index_rule"] = v.index_rule
            entry["index_sources"] = list(v.index_sources)
        if v.arch_facts:
            entry["evidence"] = {str(plat): describe(f) for plat, f in v.arch_facts.items()}
        if with_sources:
            entry["sources"] = list(v.sources)
            entry["note"] = v.note
        variants.append(entry)
    doc: dict[str, Any] = {
        "torch": str(r.torch),
        "torchvision": optional_text(r.torchvision),
        "torchaudio": optional_text(r.torchaudio),
        "released": r.released,
        "python": {str(p): list(r.python[p]) for p in ALL_PLATFORMS if p in r.python},
        "pypi_default": {str(p): str(v) for p, v in r.pypi_default.items()},
        "manylinux": {str(p): floor for p, floor in r.manylinux.items()},
        "variants": variants,
        "conda": {"pytorch_channel": r.conda.pytorch_channel, "conda_forge": r.conda.conda_forge},
        # how each companion pairing is known: confirmed / inferred (by a maintainer's range
        # statement, quoted) / unknown / none
        "pairings": {p: r.pairing(p).to_json() for p in COMPANIONS},
    }
    if r.unconfirmed:
        doc["unconfirmed"] = list(r.unconfirmed)  # null above means "not confirmed" for these
    if with_sources:
        doc["sources"] = list(r.sources)
        doc["note"] = r.note
    return doc


def _texts(values: Sequence[object] | None) -> list[str] | None:
    return [str(v) for v in values] if values is not None else None


def matrix_to_json(
    matrix: Matrix, releases: Sequence[Release], *, with_sources: bool = False
) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "matrix_version": matrix.matrix_version,
        "schema_version": matrix.schema_version,
        "releases": [release_to_json(r, with_sources=with_sources) for r in releases],
    }
    if with_sources:
        doc["sources"] = {k: {"title": s.title, "url": s.url} for k, s in matrix.sources.items()}
    if matrix.overlay:
        doc["overlay"] = matrix.overlay
        doc["overlay_error"] = matrix.overlay_error
    return doc
