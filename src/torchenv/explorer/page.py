"""The explorer page: one self-contained HTML file (no network, no framework, works from file://).

The lookup tables (:mod:`torchenv.explorer.tables`), the matrix facts to browse and the GPU
catalog are one JSON document, gzip-compressed and base64-encoded into the page; the page's
script inflates it with the browser's ``DecompressionStream`` and only looks answers up.
"""

from __future__ import annotations

import base64
import gzip
import json
from collections.abc import Sequence
from importlib import resources
from typing import Any

from torchenv import __version__
from torchenv.explorer.classes import CC_MAJORS, TOKENS
from torchenv.explorer.tables import Tables, build_tables, python_tags
from torchenv.matrix.document import matrix_to_json
from torchenv.matrix.model import PLATFORMS, Matrix
from torchenv.resolver.plan import Speller
from torchenv.values import optional_text

__all__ = ["MAX_PAGE_BYTES", "build_page", "page_data", "render_page"]

MAX_PAGE_BYTES = 2 * 1024 * 1024
"""The page must stay small enough to mail or publish anywhere; a larger one is an error."""


def page_data(matrix: Matrix, tables: Tables) -> dict[str, Any]:
    """Everything the page reads, as one JSON-ready document."""
    floors = {
        "toolkit": [{"cuda": str(f.cuda), "linux": optional_text(f.linux),
                     "windows": optional_text(f.windows),
                     "newest_arch": optional_text(f.newest_arch),
                     "oldest_arch": optional_text(f.oldest_arch),
                     "sources": list(f.sources), "note": f.note}
                    for f in matrix.toolkit_floors],
        "compat": [{"major": f.major, "linux": optional_text(f.linux),
                    "windows": optional_text(f.windows),
                    "sources": list(f.sources), "note": f.note} for f in matrix.compat_floors],
    }
    catalog = {
        "nvidia": [{"name": g.name, "cc": str(g.compute_capability),
                    "architecture": g.architecture,
                    "segment": g.segment, "aliases": list(g.aliases),
                    "sources": list(g.sources)} for g in matrix.nvidia_gpus],
        "amd": [{"name": g.name, "gfx": g.gfx, "architecture": g.architecture,
                 "aliases": list(g.aliases), "sources": list(g.sources)}
                for g in matrix.amd_gpus],
    }
    rocm = [{"name": str(r.name), "gfx": list(r.gfx), "torch": [str(t) for t in r.torch],
             "sources": list(r.sources)} for r in matrix.rocm_variants]
    return {
        "torchenv": __version__,
        "matrix_version": matrix.matrix_version,
        "overlay": matrix.overlay is not None,
        "platforms": list(PLATFORMS),
        "pythons": {p: python_tags(matrix, p) for p in PLATFORMS},
        "ccMajors": [CC_MAJORS.start, CC_MAJORS.stop - 1],
        "tokens": TOKENS,
        "specifiers": tables.specifiers,
        "releases": tables.releases,
        "plans": tables.plans,
        "windows": tables.windows,
        "grid": tables.grid,
        "verdicts": tables.verdicts,
        "matrix": matrix_to_json(matrix, list(matrix.releases), with_sources=True),
        "floors": floors,
        "catalog": catalog,
        "rocm": rocm,
    }


def _asset(name: str) -> str:
    return (resources.files("torchenv.explorer") / "assets" / name).read_text(encoding="utf-8")


def render_page(matrix: Matrix, tables: Tables) -> str:
    """The HTML text of the page; raises ValueError when it would exceed :data:`MAX_PAGE_BYTES`."""
    raw = json.dumps(page_data(matrix, tables), separators=(",", ":"), ensure_ascii=False,
                     sort_keys=True).encode("utf-8")
    packed = base64.b64encode(gzip.compress(raw, compresslevel=9, mtime=0)).decode("ascii")
    html = _asset("page.html")
    for marker, value in (("@@CSS@@", _asset("page.css")), ("@@JS@@", _asset("page.js")),
                          ("@@MATRIX_VERSION@@", matrix.matrix_version),
                          ("@@TORCHENV_VERSION@@", __version__), ("@@DATA@@", packed)):
        html = html.replace(marker, value)
    size = len(html.encode("utf-8"))
    if size > MAX_PAGE_BYTES:
        raise ValueError(f"the explorer page would be {size} bytes, over {MAX_PAGE_BYTES}")
    return html


def build_page(matrix: Matrix, *, spell: Speller, specifiers: Sequence[str] | None = None,
               workers: int | None = None) -> str:
    """Precompute the tables of ``matrix`` and render the page (see :func:`build_tables`)."""
    return render_page(matrix, build_tables(matrix, spell=spell, specifiers=specifiers,
                                            workers=workers))
