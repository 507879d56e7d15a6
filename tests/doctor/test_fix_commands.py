"""doctor's fix commands are commands: quoted for the shell of the host they are for.

A path with a space must stay one argument, and on Windows the fix is typed into PowerShell,
which has no ``&&``, no ``unset`` and needs ``&`` to run a quoted program path.
"""

from __future__ import annotations

import shlex

import pytest

from torchenv.detection.profile import HostProfile, PythonInfo, TorchInfo
from torchenv.doctor import CondaRecord, Distribution, Installs, diagnose
from torchenv.matrix import load_matrix
from torchenv.values import Platform

MATRIX = load_matrix(overlay=False)
WIN_PYTHON = r"C:\Program Files\Python312\python.exe"
LINUX_PYTHON = "/home/me/my projects/venv/bin/python"
CPU_TORCH = TorchInfo(version="2.7.1+cpu", variant="cpu")


def _host(platform: str, executable: str, torch: TorchInfo | None = None) -> HostProfile:
    return HostProfile(platform=Platform(platform), python=PythonInfo(version="3.12",
                                                            executable=executable),
                       torch=torch)


def _fix(host: HostProfile, code: str, env: dict[str, str] | None = None,
         installs: Installs | None = None) -> str:
    found = {f.code: f for f in diagnose(host, env or {}, MATRIX, installs or Installs())}
    assert code in found, sorted(found)
    fix = found[code].fix
    assert fix is not None
    return fix


def test_missing_torch_on_windows_is_fixed_with_a_powershell_command() -> None:
    fix = _fix(_host("win-amd64", WIN_PYTHON), "torch-missing")
    # a quoted program path runs only through PowerShell's call operator
    assert fix.startswith(f"& '{WIN_PYTHON}' -m pip install torch==")


def test_missing_torch_on_linux_keeps_the_path_one_argument() -> None:
    fix = _fix(_host("linux-x86_64", LINUX_PYTHON), "torch-missing")
    argv = shlex.split(fix)
    assert argv[:4] == [LINUX_PYTHON, "-m", "pip", "install"]


SEVERAL = Installs(distributions=(
    Distribution("torch", "2.7.1+cpu", "/a/site-packages", "pip"),
    Distribution("torch", "2.5.1", "/b/site-packages", "pip")))


@pytest.mark.parametrize(("platform", "python", "expected"), [
    ("linux-x86_64", LINUX_PYTHON, f"'{LINUX_PYTHON}' -m pip uninstall -y torch"),
    ("win-amd64", WIN_PYTHON, f"& '{WIN_PYTHON}' -m pip uninstall -y torch"),
], ids=["posix", "powershell"])
def test_several_torch_installs_fix_quotes_the_interpreter(platform: str, python: str,
                                                           expected: str) -> None:
    installs = Installs(python=python, distributions=SEVERAL.distributions)
    fix = _fix(_host(platform, python, CPU_TORCH), "multiple-torch", installs=installs)
    command, _, comment = fix.partition("  # ")
    assert command == expected
    assert "torchenv install" in comment


def test_retired_conda_channel_fix_chains_the_powershell_way_on_windows() -> None:
    installs = Installs(conda=(
        CondaRecord("pytorch", "2.5.1", "https://conda.anaconda.org/pytorch"),
        CondaRecord("torchvision", "0.20.1", "pytorch")))
    linux = _fix(_host("linux-x86_64", LINUX_PYTHON, CPU_TORCH), "conda-pytorch-channel",
                 installs=installs)
    assert linux == "conda remove pytorch torchvision && conda install -c conda-forge pytorch"
    windows = _fix(_host("win-amd64", WIN_PYTHON, CPU_TORCH), "conda-pytorch-channel",
                   installs=installs)
    assert windows == ("conda remove pytorch torchvision; if ($?) { conda install -c "
                       "conda-forge pytorch }")


def test_unsetting_a_variable_on_windows() -> None:
    fix = _fix(_host("win-amd64", WIN_PYTHON, CPU_TORCH), "cuda-memory-pool",
               env={"CUDA_MEMORY_POOL": "1"})
    assert fix.startswith("Remove-Item Env:CUDA_MEMORY_POOL  # ")
    linux = _fix(_host("linux-x86_64", LINUX_PYTHON, CPU_TORCH), "cuda-memory-pool",
                 env={"CUDA_MEMORY_POOL": "1"})
    assert linux.startswith("unset CUDA_MEMORY_POOL  # ")


def test_ld_library_path_fix_keeps_a_directory_with_a_space() -> None:
    env = {"LD_LIBRARY_PATH": "/usr/local/cuda/lib64:/opt/my libs"}
    installs = Installs(cuda_libs_on_ld_path={"/usr/local/cuda/lib64": ("libcudart.so.12",),
                                              "/opt/my libs": ()})
    fix = _fix(_host("linux-x86_64", LINUX_PYTHON, CPU_TORCH), "ld-library-path-cuda", env=env,
               installs=installs)
    command = fix.partition("  # ")[0]
    assert shlex.split(command) == ["export", "LD_LIBRARY_PATH=/opt/my libs"]
