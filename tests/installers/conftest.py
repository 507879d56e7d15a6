"""The installer tests: make the helpers importable, serve the local index, give each test a
clean cwd."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

from index_server import local_index  # noqa: E402  (the session fixture, for every test here)

__all__ = ["cli_cwd", "local_index"]


@pytest.fixture
def cli_cwd(tmp_path: Path) -> Path:
    """An empty working directory, so no ./pyproject.toml [tool.torchenv] leaks in."""
    d = tmp_path / "cwd"
    d.mkdir()
    return d
