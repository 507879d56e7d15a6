"""The plan's constraints file keeps the chosen build: real pip against the local index.

The plan (``resolve --json`` for this interpreter's CPU build from the local mirror) is installed
into a fresh venv; then a later ``pip install`` of an extension that requires another torch
(``torch==2.8.0``, served beside it) fails with a resolver error when the plan's constraints
file is in ``PIP_CONSTRAINT``, and replaces torch without it (the control).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from index_server import LocalIndex, build_wheel, write_project_page, write_root_page
from installer_helpers import LINUX_CPU, clean_env, resolve_json

from torchenv.installers.render import render_constraints
from torchenv.matrix.loader import load_matrix
from torchenv.resolver import Request, resolve
from torchenv.values import TorchSpec, VariantName


def test_the_constraints_file_pins_every_chosen_build_with_its_local_version() -> None:
    from torchenv.detection.profile import HostProfile, PythonInfo
    from torchenv.values import Platform

    host = HostProfile(platform=Platform("linux-x86_64"), python=PythonInfo(version="3.12"))
    plan = resolve(Request(torch=TorchSpec("==2.7.1"), variant=VariantName("cu128")), host,
                   load_matrix(overlay=False))
    lines = [line for line in render_constraints(plan).splitlines()
             if line and not line.startswith("#")]
    assert lines == ["torch==2.7.1+cu128", "torchvision==0.22.1+cu128",
                     "torchaudio==2.7.1+cu128"]


@pytest.fixture
def later(tmp_path: Path, local_index: LocalIndex) -> Path:
    """A simple index with another torch and an extension that requires it."""
    links = tmp_path / "later"
    for name, requires in (("torch", ()), ("someext", ("torch==2.8.0",))):
        project = links / name
        project.mkdir(parents=True)
        version = "2.8.0" if name == "torch" else "1.0"
        write_project_page(project, [build_wheel(project, name, version, local_index.tag,
                                                 requires)])
    write_root_page(links, ["torch", "someext"])
    return links


def _pip(python: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install",
                           "--no-cache-dir", "--disable-pip-version-check", *args],
                          env=env, capture_output=True, text=True, timeout=180, check=False)


def _installed_torch(python: Path) -> str:
    out = subprocess.run([str(python), "-c", "import importlib.metadata as m; "
                          "print(m.version('torch'))"], capture_output=True, text=True,
                         timeout=60, check=True)
    return out.stdout.strip()


@pytest.mark.slow  # two real pip installs into a fresh venv (about 4 s)
@pytest.mark.parametrize("constrained", [True, False], ids=["with-constraints", "control"])
def test_a_later_install_cannot_replace_the_chosen_torch(
        constrained: bool, tmp_path: Path, cli_cwd: Path, local_index: LocalIndex,
        later: Path) -> None:
    plan = resolve_json(*LINUX_CPU, "--variant", "cpu", "--torch", "==2.7.1", "--index-base",
                        local_index.base, cwd=cli_cwd)
    constraints = tmp_path / plan["constraints"]["file"]
    constraints.write_text(plan["constraints"]["text"])
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   timeout=120)
    python = venv / "bin" / "python"
    env = clean_env()
    first = _pip(python, *plan["constraints"]["requirements"], "--index-url",
                 plan["index_url"], "-c", str(constraints), env=env)
    assert first.returncode == 0, first.stderr
    assert _installed_torch(python) == "2.7.1+cpu"

    if constrained:
        env = clean_env(PIP_CONSTRAINT=str(constraints))
    second = _pip(python, "someext", "--index-url", later.as_uri(), env=env)
    if constrained:
        assert second.returncode != 0
        assert "ResolutionImpossible" in second.stderr, second.stderr  # pip's resolver refused
        assert _installed_torch(python) == "2.7.1+cpu"
    else:
        assert second.returncode == 0, second.stderr
        assert _installed_torch(python) == "2.8.0"
