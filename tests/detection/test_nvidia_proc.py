from __future__ import annotations

from pathlib import Path

import pytest
from detection_helpers import data
from hypothesis import given
from hypothesis import strategies as st

from torchenv.detection._nvidia_proc import (
    parse_gpu_information,
    parse_proc_driver_version,
    parse_sys_module_version,
    read_kernel_driver_version,
    read_proc_gpus,
)
from torchenv.values import DriverVersion


@pytest.mark.parametrize(
    ("fixture", "version"),
    [
        ("proc_driver_nvidia_version_proprietary_384.98.txt", "384.98"),
        ("proc_driver_nvidia_version_proprietary_580.173.02.txt", "580.173.02"),
        ("proc_driver_nvidia_version_open_565.57.01.txt", "565.57.01"),
        ("proc_driver_nvidia_version_open_525.60.11_arch_nodate.txt", "525.60.11"),
        ("proc_driver_nvidia_version_open_aarch64_jetson_35.3.1.txt", "35.3.1"),
    ],
    ids=["proprietary-384", "proprietary-580", "open-565", "open-525-nodate", "jetson"],
)
def test_proc_version_captures(fixture: str, version: str) -> None:
    assert str(parse_proc_driver_version(data(fixture))) == version


def test_sys_module_capture() -> None:
    assert str(parse_sys_module_version(data("sys_module_nvidia_version_550.78.txt"))) == "550.78"


@pytest.mark.parametrize("text", ["", "GCC version:  gcc version 12.2.0\n", "NVRM version: ?\n",
                                  "garbage 1.2.3"])
def test_proc_version_without_one(text: str) -> None:
    assert parse_proc_driver_version(text) is None
    assert parse_sys_module_version(text) is None


@given(st.integers(300, 999), st.integers(0, 299), st.one_of(st.none(), st.integers(0, 99)),
       st.booleans())
def test_proc_version_roundtrip(major: int, minor: int, patch: int | None, open_module: bool
                                ) -> None:
    version = f"{major}.{minor:02d}" + (f".{patch:02d}" if patch is not None else "")
    module = "Open Kernel Module for x86_64" if open_module else "x86_64 Kernel Module"
    line = f"NVRM version: NVIDIA UNIX {module}  {version}  Release Build  (b@h)  date\n"
    assert str(parse_proc_driver_version(line)) == version
    assert str(parse_sys_module_version(version + "\n")) == version


GPU_INFO = """Model: \t\t NVIDIA GeForce RTX 3090
IRQ:   \t\t 171
GPU UUID: \t GPU-00000000-0000-0000-0000-000000000001
Video BIOS: \t 94.02.42.00.a9
Bus Type: \t PCIe
Bus Location: \t 0000:01:00.0
Device Minor: \t 0
GPU Excluded:\t No
"""


def test_gpu_information() -> None:
    info = parse_gpu_information(GPU_INFO)
    assert (info.name, info.uuid, info.minor, info.bus_id) == (
        "NVIDIA GeForce RTX 3090", "GPU-00000000-0000-0000-0000-000000000001", 0, "0000:01:00.0")


def test_readers_on_fake_trees(tmp_path: Path) -> None:
    assert read_kernel_driver_version(tmp_path) == (None, None)
    assert read_proc_gpus(tmp_path) == ()
    sys_mod = tmp_path / "sys/module/nvidia"
    sys_mod.mkdir(parents=True)
    (sys_mod / "version").write_text(data("sys_module_nvidia_version_550.78.txt"))
    assert read_kernel_driver_version(tmp_path) == (DriverVersion("550.78"), "sysfs")
    proc = tmp_path / "proc/driver/nvidia"
    (proc / "gpus/0000:01:00.0").mkdir(parents=True)
    (proc / "version").write_text(data("proc_driver_nvidia_version_proprietary_580.173.02.txt"))
    (proc / "gpus/0000:01:00.0/information").write_text(GPU_INFO)
    assert read_kernel_driver_version(tmp_path) == (DriverVersion("580.173.02"), "proc")
    (gpu,) = read_proc_gpus(tmp_path)
    assert (gpu.index, gpu.name, gpu.compute_capability) == (0, "NVIDIA GeForce RTX 3090", None)
