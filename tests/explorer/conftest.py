"""Shared fixtures of the explorer tests: the tables (built once), the page, where artifacts go."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

from torchenv.cli._fields import spell
from torchenv.explorer.tables import Tables, build_tables
from torchenv.matrix.model import Matrix

# --import-mode=importlib does not put test folders on sys.path; explorer_hosts needs it
sys.path.insert(0, str(Path(__file__).parent))

_ARTIFACTS: list[Path] = []


def specifiers_under_test(matrix: Matrix) -> list[str]:
    """The series the test tables precompute: the newest, one in the middle and the oldest, so
    every kind of specifier window (wide, CUDA-era changes, Python long gone) is covered
    without the cost of all of them."""
    minors = list(dict.fromkeys(r.torch.series for r in reversed(matrix.releases)))
    return sorted({minors[-1], minors[len(minors) // 2], minors[0]})


@pytest.fixture(scope="session")
def explorer_tables(matrix: Matrix) -> Tables:
    return build_tables(matrix, spell=spell, specifiers=specifiers_under_test(matrix))


@pytest.fixture(scope="session")
def artifacts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where screenshots go: ``TORCHENV_TEST_ARTIFACTS`` or a folder of this run's temp dir;
    printed at the end of the run."""
    given = os.environ.get("TORCHENV_TEST_ARTIFACTS")
    path = Path(given) if given else tmp_path_factory.getbasetemp() / "explorer-artifacts"
    path.mkdir(parents=True, exist_ok=True)
    _ARTIFACTS.append(path)
    return path


def pytest_terminal_summary(terminalreporter: Any) -> None:
    for path in _ARTIFACTS:
        files = sorted(p.name for p in path.iterdir())
        if files:
            terminalreporter.write_line(f"explorer artifacts in {path}: {', '.join(files)}")
