"""Shared fixtures: the embedded matrix, loaded once, and a CLI runner in a child process."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping, Sequence

import pytest

sys.path.insert(0, os.path.dirname(__file__))  # importlib mode: make tests/hermetic.py importable

from hermetic import hermetic
from torchenv.matrix.loader import load_matrix
from torchenv.matrix.model import Matrix


@pytest.fixture(autouse=True)
def _no_host_gpu_facts(monkeypatch: pytest.MonkeyPatch) -> None:
    """In-process detection in any test sees no NVML, no nvidia-smi and an empty /sys, /proc and
    /dev, whatever driver the machine running the tests has (tests of those probes set their own
    values)."""
    for key, value in hermetic({}).items():
        monkeypatch.setenv(key, value)


@pytest.fixture(scope="session")
def matrix() -> Matrix:
    return load_matrix(overlay=False)


def run_cli(
    args: Sequence[str],
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    timeout: float = 60,
) -> subprocess.CompletedProcess[str]:
    """``python -m torchenv ARGS`` in a child, with no user overlay and no TORCHENV_* leaking in."""
    child_env = {k: v for k, v in os.environ.items() if not k.startswith("TORCHENV_")}
    child_env["TORCHENV_NO_OVERLAY"] = "1"
    child_env.update(env or {})
    hermetic(child_env)
    return subprocess.run(
        [sys.executable, "-m", "torchenv", *args],
        capture_output=True,
        text=True,
        env=child_env,
        cwd=cwd,
        timeout=timeout,
        check=False,
    )
