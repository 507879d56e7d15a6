"""``torchenv doctor`` for real: stand-in dist-info directories seen by a throwaway venv."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from torchenv.doctor import gather_installs

pytestmark = pytest.mark.slow


def _dist(site: Path, name: str, version: str) -> None:
    info = site / f"{name}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n\n")
    (info / "INSTALLER").write_text("pip\n")


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    base = tmp_path_factory.mktemp("doctor")
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site_a, site_b = base / "site-a", base / "site-b"
    _dist(site_a, "torch", "2.7.1+cu128")
    _dist(site_a, "torchvision", "0.21.0+cu124")
    _dist(site_b, "torch", "2.6.0")
    conda = base / "conda"
    (conda / "conda-meta").mkdir(parents=True)
    (conda / "conda-meta" / "pytorch-2.5.1-py3.12_cuda12.4_cudnn9_0.json").write_text(json.dumps(
        {"name": "pytorch", "version": "2.5.1", "channel": "https://conda.anaconda.org/pytorch",
         "build": "py3.12_cuda12.4_cudnn9_0"}))
    libs = base / "cuda-lib64"
    libs.mkdir()
    (libs / "libcudart.so.12").write_bytes(b"")
    env = {"PYTHONPATH": f"{site_a}{os.pathsep}{site_b}", "CONDA_PREFIX": str(conda),
           "LD_LIBRARY_PATH": str(libs), "CUDA_MEMORY_POOL": "1"}
    return {"python": venv / "bin" / "python", "env": env, "libs": libs}


def test_gatherer_sees_the_planted_installs(planted: dict[str, object]) -> None:
    env = {**os.environ, **planted["env"]}  # type: ignore[dict-item]
    installs = gather_installs(str(planted["python"]), env)
    assert sorted(d.version for d in installs.dists("torch")) == ["2.6.0", "2.7.1+cu128"]
    assert [d.version for d in installs.dists("torchvision")] == ["0.21.0+cu124"]
    assert [(r.name, r.channel) for r in installs.conda] == [
        ("pytorch", "https://conda.anaconda.org/pytorch")]
    assert installs.cuda_libs_on_ld_path == {str(planted["libs"]): ("libcudart.so.12",)}


def test_doctor_cli_finds_each_planted_problem(planted: dict[str, object]) -> None:
    env = {**os.environ, **planted["env"]}  # type: ignore[dict-item]
    proc = subprocess.run([sys.executable, "-m", "torchenv", "doctor", "--json", "--python",
                           str(planted["python"])], capture_output=True, text=True, env=env,
                          timeout=120, check=False)
    assert proc.returncode == 1, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["ok"] is False
    found = {f["code"] for f in doc["findings"]}
    assert {"multiple-torch", "torchvision-unpaired", "conda-pytorch-channel",
            "ld-library-path-cuda", "cuda-memory-pool"} <= found, found
    multiple = next(f for f in doc["findings"] if f["code"] == "multiple-torch")
    assert "from conda" in multiple["explanation"]  # the child's view and conda's records
    assert len(multiple["evidence"]["shadowed"]) == 1 and multiple["evidence"]["conda"]
    for f in doc["findings"]:
        assert f["severity"] in ("error", "warning", "info")
        assert f["title"] and f["explanation"]


def test_doctor_table_prints_the_fix(planted: dict[str, object]) -> None:
    env = {**os.environ, **planted["env"]}  # type: ignore[dict-item]
    proc = subprocess.run([sys.executable, "-m", "torchenv", "doctor", "--python",
                           str(planted["python"])], capture_output=True, text=True, env=env,
                          timeout=120, check=False)
    assert proc.returncode == 1
    assert "fix:" in proc.stdout
    assert "PYTORCH_CUDA_ALLOC_CONF" in proc.stdout


def test_doctor_missing_interpreter_exits_2() -> None:
    proc = subprocess.run([sys.executable, "-m", "torchenv", "doctor", "--python",
                           "/nonexistent/python"], capture_output=True, text=True, timeout=60,
                          check=False)
    assert proc.returncode == 2
    assert "does not exist" in proc.stderr


def test_doctor_asks_the_interpreter_twice(planted: dict[str, object], tmp_path: Path) -> None:
    """One isolated child (-I) answers for doctor's inventory and for detection's interpreter
    facts; one more imports torch as the user's python would (no -I: the current folder,
    PYTHONPATH and the user site count)."""
    log = tmp_path / "calls.log"
    wrapper = tmp_path / "python"
    wrapper.write_text(f'#!/bin/sh\necho "$1" >> "{log}"\nexec "{planted["python"]}" "$@"\n')
    wrapper.chmod(0o755)
    env = {**os.environ, **planted["env"]}  # type: ignore[dict-item]
    proc = subprocess.run([sys.executable, "-m", "torchenv", "doctor", "--json", "--python",
                           str(wrapper)], capture_output=True, text=True, env=env, timeout=120,
                          check=False)
    doc = json.loads(proc.stdout)
    assert doc["findings"], proc.stderr
    assert sorted(log.read_text().splitlines()) == ["-I", "-c"]


@pytest.mark.parametrize("how", ["flags", "variables"])
def test_doctor_diagnoses_a_described_host(how: str, tmp_path: Path) -> None:
    """The target flags and variables of resolve describe the machine: this venv's CPU torch on
    a host given a GPU is the CPU-build-on-a-GPU-host error."""
    from tests.conftest import run_cli

    args = ["--gpu", "8.6", "--driver", "550.54.15"] if how == "flags" else []
    env = {"TORCHENV_GPUS": "8.6", "TORCHENV_DRIVER_VERSION": "550.54.15"} \
        if how == "variables" else {}
    proc = run_cli(["doctor", "--json", "--python", sys.executable, *args], env=env,
                   cwd=str(tmp_path), timeout=180)
    doc = json.loads(proc.stdout)
    assert proc.returncode == 1, proc.stderr
    assert [f["code"] for f in doc["findings"]] == ["cpu-build-on-gpu-host"]
    assert doc["interpreter"] == {"path": sys.executable, "source": "--python"}


@pytest.mark.parametrize("value", ["0", "-1", "4000"])
def test_a_bad_import_timeout_is_bad_input(value: str) -> None:
    from tests.conftest import run_cli

    proc = run_cli(["doctor", "--import-timeout", value])
    assert proc.returncode == 2
    assert "--import-timeout" in proc.stderr and value in proc.stderr
