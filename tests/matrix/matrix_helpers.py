"""Entries for matrix overlays in tests."""

from __future__ import annotations

from typing import Any

from torchenv.matrix.model import Matrix

__all__ = ["overlay_release"]


def overlay_release(matrix: Matrix, torch: str = "2.99.0") -> dict[str, Any]:
    """A release entry an overlay may add: CPU wheels for Python 3.12 on linux-x86_64, with the
    sources of ``matrix``'s newest release."""
    return {
        "torch": torch,
        "released": "2099-01-01",
        "torchvision": None,
        "torchaudio": None,
        "python": {"linux-x86_64": ["3.12"]},
        "pypi_default": {"linux-x86_64": "cpu"},
        "conda": {},
        "sources": list(matrix.releases[0].sources),
    }
