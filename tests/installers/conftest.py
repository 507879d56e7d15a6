"""The installer tests: make installer_helpers importable and give each test a clean cwd."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)


@pytest.fixture
def cli_cwd(tmp_path: Path) -> Path:
    """An empty working directory, so no ./pyproject.toml [tool.torchenv] leaks in."""
    d = tmp_path / "cwd"
    d.mkdir()
    return d
