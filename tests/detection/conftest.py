"""Fixtures for detection tests; the helpers live in detection_helpers.py."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Optional

import pytest

# --import-mode=importlib does not put test folders on sys.path; the helpers module needs it
sys.path.insert(0, str(Path(__file__).parent))

from detection_helpers import build_fake_nvml


@pytest.fixture(scope="session")
def fake_nvml(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Path]:
    """Build (once per variant) the stand-in libnvidia-ml.so.1; returns its folder."""
    compiler = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if compiler is None:
        pytest.skip("no C compiler (cc/gcc/clang) to build the stand-in libnvidia-ml.so.1")
    if not sys.platform.startswith("linux"):
        pytest.skip("the stand-in NVML library is a Linux shared object")
    built: dict[Optional[str], Path] = {}

    def build(omit: Optional[str] = None) -> Path:
        if omit not in built:
            out = tmp_path_factory.mktemp(f"nvml-{omit or 'full'}")
            build_fake_nvml(compiler, out, omit)
            built[omit] = out
        return built[omit]

    return build


