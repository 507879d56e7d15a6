"""The ``matrix show --json`` document of CLI.md: releases, variants and their evidence as data."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from torchenv.matrix.inference import describe
from torchenv.matrix.model import PLATFORMS, Matrix, Release

__all__ = ["matrix_to_json", "release_to_json"]


def release_to_json(r: Release, *, with_sources: bool = False) -> dict[str, Any]:
    variants = []
    for v in r.variants:
        entry: dict[str, Any] = {
            "name": v.name,
            "platforms": list(v.platforms),
            "arch_list": list(v.arch_list) if v.arch_list is not None else None,
        }
        if v.arch_list_by_platform:
            entry["arch_list_by_platform"] = {
                k: list(a) if a is not None else None for k, a in v.arch_list_by_platform.items()
            }
        if v.python:
            entry["python"] = {k: list(t) for k, t in v.python.items()}
        entry.update(cudnn=v.cudnn, nccl=v.nccl, status=v.status, index=v.index)
        if v.arch_facts:
            entry["evidence"] = {plat: describe(f) for plat, f in v.arch_facts.items()}
        if with_sources:
            entry["sources"] = list(v.sources)
            entry["note"] = v.note
        variants.append(entry)
    doc: dict[str, Any] = {
        "torch": r.torch,
        "torchvision": r.torchvision,
        "torchaudio": r.torchaudio,
        "released": r.released,
        "python": {p: list(r.python[p]) for p in PLATFORMS if p in r.python},
        "pypi_default": dict(r.pypi_default),
        "manylinux": dict(r.manylinux),
        "variants": variants,
        "conda": {"pytorch_channel": r.conda.pytorch_channel, "conda_forge": r.conda.conda_forge},
    }
    if r.unconfirmed:
        doc["unconfirmed"] = list(r.unconfirmed)  # null above means "not confirmed" for these
    if with_sources:
        doc["sources"] = list(r.sources)
        doc["note"] = r.note
    return doc


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
