"""``resolve --with``'s pip command, run for real against the local index: a stand-in exact-pin
companion (xformers 0.0.31, whose metadata says ``torch==2.7.1``, as the real wheel's does)
installs beside the planned torch, with the plan's constraints file, and torch stays the build
the plan chose; and where only the companion's sdist exists (its build backend fails at once),
the command's ``--only-binary`` keeps pip from building it, which pip does without the flag."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from index_server import (
    FAILING_BACKEND,
    LocalIndex,
    build_wheel,
    failing_sdist,
    write_project_page,
    write_root_page,
)
from installer_helpers import LINUX_CPU, clean_env, resolve_json

PYPI = "https://pypi.org/simple"


@pytest.fixture
def pypi_standin(tmp_path: Path, local_index: LocalIndex) -> Path:
    """What PyPI holds for the companion: xformers 0.0.31 pinning torch==2.7.1."""
    root = tmp_path / "pypi-standin"
    project = root / "xformers"
    project.mkdir(parents=True)
    write_project_page(project, [build_wheel(project, "xformers", "0.0.31", local_index.tag,
                                             ("torch==2.7.1",))])
    write_root_page(root, ["xformers"])
    return root


def _versions(python: Path) -> dict[str, str]:
    out = subprocess.run([str(python), "-c", "import importlib.metadata as m\n"
                          "for d in ('torch', 'xformers'):\n"
                          "    try: print(d, m.version(d))\n"
                          "    except m.PackageNotFoundError: pass"],
                         capture_output=True, text=True, timeout=60, check=True)
    return dict(line.split() for line in out.stdout.splitlines())


@pytest.mark.slow  # two real installs into a fresh venv
@pytest.mark.parametrize("installer", ["pip", "uv"])
def test_the_planned_exact_pin_companion_installs_without_touching_torch(
        installer: str, tmp_path: Path, cli_cwd: Path, local_index: LocalIndex,
        pypi_standin: Path) -> None:
    plan = resolve_json(*LINUX_CPU, "--variant", "cpu", "--torch", "==2.7.1", "--index-base",
                        local_index.base, "--with", "xformers", cwd=cli_cwd)
    assert [(c["name"], c["version"]) for c in plan["companions"]] == [("xformers", "0.0.31")]
    constraints = tmp_path / plan["constraints"]["file"]
    constraints.write_text(plan["constraints"]["text"])
    assert "xformers==0.0.31" in plan["constraints"]["text"].splitlines()
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   timeout=120)
    python = venv / "bin" / "python"
    pip = [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-cache-dir"]
    env = clean_env()
    first = subprocess.run([*pip, *plan["constraints"]["requirements"], "--index-url",
                            plan["index_url"]], env=env, capture_output=True, text=True,
                           timeout=180, check=False)
    assert first.returncode == 0, first.stderr
    assert _versions(python) == {"torch": "2.7.1+cpu"}

    # the rendered command as it is, PyPI's address pointed at its stand-in
    argv = shlex.split(plan["commands"][installer])
    if installer == "pip":
        assert argv[:2] == ["pip", "install"] and "--only-binary" in argv and PYPI in argv
        head = pip
        tail = ["-c", str(constraints)]
    else:
        assert argv[:3] == ["uv", "pip", "install"] and "--only-binary" in argv
        head = [str(Path(sys.executable).parent / "uv"), "pip", "install", "--python",
                str(python), "--no-cache"]
        tail = ["--constraint", str(constraints)]
    argv = [pypi_standin.as_uri() if word == PYPI else word
            for word in argv[3 if installer == "uv" else 2:]]
    second = subprocess.run([*head, *argv, *tail], env=env,
                            capture_output=True, text=True, timeout=180, check=False)
    assert second.returncode == 0, second.stderr
    assert _versions(python) == {"torch": "2.7.1+cpu", "xformers": "0.0.31"}
    # the companion alone was installed: torch, torchvision and torchaudio were left alone
    if installer == "pip":
        installed = [line for line in second.stdout.splitlines()
                     if line.startswith("Successfully installed")]
        assert installed == ["Successfully installed xformers-0.0.31"], second.stdout
    else:
        added = [line.strip() for line in second.stderr.splitlines()
                 if line.strip().startswith(("+ ", "- "))]
        assert added == ["+ xformers==0.0.31"], second.stderr


@pytest.mark.slow  # real pip resolving against a local index, twice
@pytest.mark.parametrize("only_binary", [True, False], ids=["as-planned", "control"])
def test_the_command_never_lets_pip_build_a_prebuilt_companion(
        only_binary: bool, tmp_path: Path, cli_cwd: Path, local_index: LocalIndex) -> None:
    root = tmp_path / "sdist-only"
    project = root / "xformers"
    project.mkdir(parents=True)
    write_project_page(project, [failing_sdist(project)])
    write_root_page(root, ["xformers"])
    plan = resolve_json(*LINUX_CPU, "--variant", "cpu", "--torch", "==2.7.1", "--index-base",
                        local_index.base, "--with", "xformers", cwd=cli_cwd)
    argv = [root.as_uri() if word == PYPI else word
            for word in shlex.split(plan["commands"]["pip"])[2:]]
    if not only_binary:
        at = argv.index("--only-binary")
        del argv[at:at + 2]
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   timeout=120)
    run = subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"),
                          "install", "--no-cache-dir", *argv], env=clean_env(),
                         capture_output=True, text=True, timeout=180, check=False)
    assert run.returncode != 0
    said = " ".join((run.stdout + run.stderr).split())  # an installer may wrap long lines
    if only_binary:
        assert FAILING_BACKEND not in said
        assert "No matching distribution found for xformers" in run.stderr, run.stderr
    else:  # without the flag pip takes the sdist and runs its build backend
        assert FAILING_BACKEND in said, run.stderr
