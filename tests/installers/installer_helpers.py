"""Shared helpers for the installer tests: run the real CLI in a clean environment.

Imported by the test modules (conftest.py puts this directory on sys.path).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from hermetic import hermetic

PY = f"{sys.version_info.major}.{sys.version_info.minor}"

#: A Linux x86-64 workstation with an Ampere GPU and a CUDA 12.8 driver, on this interpreter's
#: Python version (the stand-in wheels are tagged for this interpreter).
LINUX_GPU = ["--driver", "570.86.15", "--gpu", "8.6", "--python", PY, "--platform", "linux-x86_64"]
LINUX_CPU = ["--no-gpu", "--python", PY, "--platform", "linux-x86_64"]


def clean_env(**extra: str) -> dict[str, str]:
    """os.environ without anything that could steer torchenv, pip or uv from outside the test.

    This machine has pip find-links, extra index URLs and a constraint file in its pip config and
    environment, and proxies may be set; none of them may leak into a dry run.
    """
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PIP_", "UV_", "TORCHENV_", "CUDA_", "CONDA_", "VIRTUAL_ENV"))
        and k.lower() not in ("http_proxy", "https_proxy", "all_proxy", "no_proxy")
    }
    env["PIP_CONFIG_FILE"] = os.devnull
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env["PIP_NO_INPUT"] = "1"
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
    env.update(extra)
    hermetic(env)  # nor the machine's own NVIDIA driver
    return env


def torchenv(
    *args: str, cwd: Path, env: dict[str, str] | None = None, check: int | None = 0
) -> subprocess.CompletedProcess[str]:
    """Run ``torchenv ARGS`` in a child process, the way a user would."""
    proc = subprocess.run(
        [sys.executable, "-m", "torchenv", *args],
        cwd=cwd,
        env=env if env is not None else clean_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    if check is not None:
        assert proc.returncode == check, (args, proc.returncode, proc.stdout, proc.stderr)
    return proc


def torchenv_here(*args: str, cwd: Path, env: dict[str, str] | None = None) -> str:
    """``torchenv ARGS`` run in this process (the same ``main`` as the console script) with
    ``env`` as the whole environment and ``cwd`` as the working directory; its stdout. For
    tests that read many renderings: a child per rendering costs ~0.4 s of CPU."""
    from torchenv.cli import main

    out = io.StringIO()
    with pytest.MonkeyPatch.context() as mp:
        for key in list(os.environ):
            mp.delenv(key)
        for key, value in (env if env is not None else clean_env()).items():
            mp.setenv(key, value)
        mp.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()) as err:
            status = main(list(args))
    assert status == 0, (args, status, out.getvalue(), err.getvalue())
    return out.getvalue()


def resolve_json(*args: str, cwd: Path, env: dict[str, str] | None = None) -> dict[str, Any]:
    proc = torchenv("resolve", "--json", *args, cwd=cwd, env=env)
    data: dict[str, Any] = json.loads(proc.stdout)
    return data
