"""Shared fixtures of the explorer tests: the tables and the page (built once), one browser for
the whole run, where artifacts go."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
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


_CHROMIUM = next(filter(None, map(shutil.which, ("chromium", "chromium-browser",
                                                 "google-chrome"))), None)
_CHROMEDRIVER = shutil.which("chromedriver")


@pytest.fixture(scope="session")
def page(matrix: Matrix, explorer_tables: Tables,
         tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The page ``torchenv matrix html`` writes for the test tables."""
    from torchenv.explorer.page import render_page

    path = tmp_path_factory.mktemp("explorer") / "explorer.html"
    path.write_text(render_page(matrix, explorer_tables), encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """One headless Chromium for the whole run; skipped, saying why, without Chromium,
    chromedriver or Selenium."""
    if _CHROMIUM is None or _CHROMEDRIVER is None:
        pytest.skip("Chromium and chromedriver are not installed "
                    "(Debian: apt-get install -y chromium chromium-driver)")
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed "
                                    "(pip install -e '.[test]')")
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1280,1000"):
        options.add_argument(arg)
    options.binary_location = _CHROMIUM
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(_CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()
