from __future__ import annotations

import time
from pathlib import Path

import pytest
from detection_helpers import data, fake_smi

from torchenv.detection._nvidia_smi import (
    drivers_own,
    find_nvidia_smi,
    lacks_compute_cap,
    parse_query_csv,
    parse_smi_error,
    parse_smi_versions,
    probe_nvidia_smi,
)
from torchenv.values import ComputeCapability, CudaVersion, DriverVersion


# The shape of --query-gpu=index,name,compute_cap,memory.total,uuid,driver_version
# --format=csv,noheader,nounits (no capture with both flags exists; see data/README.md)
def _text(value: object) -> str | None:
    return str(value) if value is not None else None


SINGLE = "0, NVIDIA H200, 9.0, 143771, GPU-00000000-0000-0000-0000-000000000000, 580.82.07\n"
MULTI = (
    "0, NVIDIA GeForce GTX 1080, 6.1, 8192, GPU-00000000-0000-0000-0000-000000000000, 550.54.15\n"
    "1, NVIDIA GeForce RTX 3090, 8.6, 24576, GPU-00000000-0000-0000-0000-000000000001, 550.54.15\n"
)


def test_query_single() -> None:
    (gpu,), driver = parse_query_csv(SINGLE)
    assert driver == DriverVersion("580.82.07")
    assert (gpu.index, gpu.name, gpu.compute_capability, gpu.memory_mib) == (
        0, "NVIDIA H200", ComputeCapability("9.0"), 143771)


def test_query_multi_and_na_fields() -> None:
    gpus, driver = parse_query_csv(MULTI + "2, NVIDIA A100, [N/A], [N/A], [N/A], 550.54.15\n")
    assert driver == DriverVersion("550.54.15")
    assert [_text(g.compute_capability) for g in gpus] == ["6.1", "8.6", None]
    assert gpus[2].memory_mib is None
    assert gpus[2].uuid is None


def test_query_capture_with_header() -> None:
    fields = ("compute_cap", "compute_mode", "driver_version", "name", "index")
    gpus, driver = parse_query_csv(data("query_csv_header_2gpu_mixed_570.86.15.csv"), fields)
    assert driver == DriverVersion("570.86.15")
    assert [(g.index, g.name, _text(g.compute_capability)) for g in gpus] == [
        (0, "NVIDIA TITAN V", "7.0"), (1, "NVIDIA RTX 5880 Ada Generation", "8.9")]


def test_query_capture_driver_only_wsl() -> None:
    gpus, driver = parse_query_csv(data("query_csv_noheader_driver_version_wsl2_2gpu.txt"),
                                   ("driver_version",))
    assert driver == DriverVersion("572.60")
    assert len(gpus) == 2


def test_query_name_with_comma() -> None:
    (gpu,), _ = parse_query_csv("0, Odd, Name, 8.0, 40960, GPU-1, 550.1\n")
    assert gpu.name == "Odd, Name"
    assert gpu.compute_capability == ComputeCapability("8.0")


def test_query_malformed_names_the_line() -> None:
    with pytest.raises(ValueError, match="'what is this'"):
        parse_query_csv("what is this\n")


@pytest.mark.parametrize(
    ("fixture", "driver", "cuda"),
    [
        ("table_single_rtx4080super_595.71.05_fedora44.txt", "595.71.05", "13.2"),
        ("table_kmd_umd_header_rtx2080super_610.57.04.txt", "610.57.04", "13.3"),
        ("table_8x_h100_sxm_565.57.01.txt", "565.57.01", "12.7"),
        ("table_old_440.100_rtx2070_laptop.txt", "440.100", "10.2"),
        ("table_wsl2_rtx3070_smi530.47_driver531.68.txt", "531.68", "12.1"),
        ("table_wsl2_segfault_smi555.42.03_driver555.85.txt", "555.85", "12.5"),
        ("table_windows_wddm_rtx2080super_591.86.txt", "591.86", "13.1"),
        ("table_mig_h100_590.48.01.txt", "590.48.01", "13.1"),
        ("version_610.57.04_kmd.txt", "610.57.04", "13.3"),
        ("version_wsl2_smi555.42.03_driver555.85.txt", "555.85", "12.5"),
        ("q_excerpt_610.57.04_rtx2080super.txt", "610.57.04", "13.3"),
    ],
    ids=lambda v: v.split("_")[0] + "-" + v.split("_")[-1] if "_" in v else v,
)
def test_versions_from_captures(fixture: str, driver: str, cuda: str) -> None:
    assert parse_smi_versions(data(fixture)) == (DriverVersion(driver), CudaVersion(cuda))


def test_errors_from_captures() -> None:
    mismatch = parse_smi_error(data("error_nvml_driver_library_mismatch_550.144.txt"))
    assert mismatch is not None
    assert "mismatch" in mismatch
    assert "550.144" in mismatch
    down = parse_smi_error(data("error_couldnt_communicate_with_driver.txt"))
    assert down is not None
    assert "could not talk to the NVIDIA driver" in down
    assert parse_smi_error("something else") is None


def test_probe_asks_the_query_then_the_table_for_the_cuda_version(tmp_path: Path) -> None:
    """Two nvidia-smi processes: the query (GPUs, driver version), then the plain table, whose
    header is the only place that names the CUDA version the driver supports."""
    marker = tmp_path / "calls.txt"
    query = ("0, NVIDIA GeForce RTX 4080 SUPER, 8.9, 16376, "
             "GPU-00000000-0000-0000-0000-000000000000, 595.71.05\n")
    exe = fake_smi(tmp_path, query=query, marker=marker,
                   table=data("table_single_rtx4080super_595.71.05_fedora44.txt"))
    res = probe_nvidia_smi(str(exe))
    assert res.ok
    assert res.warnings == ()
    assert (res.driver_version, res.cuda_driver_version) == (DriverVersion("595.71.05"),
                                                             CudaVersion("13.2"))
    assert [g.name for g in res.gpus] == ["NVIDIA GeForce RTX 4080 SUPER"]
    assert len(res.calls) == 2
    assert marker.read_text().splitlines() == [res.calls[0], ""]  # the table: no arguments


@pytest.mark.parametrize(
    ("table", "end", "cuda"),
    [("table_kmd_umd_header_rtx2080super_610.57.04.txt", "exit 0", "13.3"),
     # WSL2's nvidia-smi printed its header, then died: the header is still its own reading
     ("table_wsl2_segfault_smi555.42.03_driver555.85.txt", "kill -SEGV $$", "12.5"),
     ("error_couldnt_communicate_with_driver.txt", "exit 9", None)],
    ids=["kmd-umd-header", "segfault-after-header", "no-header"],
)
def test_the_cuda_version_is_what_the_table_header_says(tmp_path: Path, table: str, end: str,
                                                        cuda: str | None) -> None:
    exe = fake_smi(tmp_path, query=SINGLE, table=data(table), table_end=end)
    res = probe_nvidia_smi(str(exe))
    assert res.ok  # the query answered; the table only adds the CUDA version
    assert res.cuda_driver_version == (CudaVersion(cuda) if cuda else None)


def test_probe_multi(tmp_path: Path) -> None:
    exe = fake_smi(tmp_path, query=MULTI,
                   version=data("version_wsl2_smi555.42.03_driver555.85.txt"))
    res = probe_nvidia_smi(str(exe))
    assert [_text(g.compute_capability) for g in res.gpus] == ["6.1", "8.6"]
    assert res.driver_version is not None and res.cuda_driver_version is None


def test_probe_old_smi_without_compute_cap(tmp_path: Path) -> None:
    query = "0, NVIDIA GeForce GTX 1080, 8192, GPU-00000000-0000-0000-0000-0000000, 470.256.02\n"
    exe = fake_smi(tmp_path, query=query, no_compute_cap=True)
    res = probe_nvidia_smi(str(exe))
    assert res.ok
    # the query, the query without compute_cap, the table
    assert len(res.calls) == 3
    assert res.gpus[0].compute_capability is None
    assert res.gpus[0].memory_mib == 8192
    assert any("compute_cap" in w for w in res.warnings)


@pytest.mark.parametrize(("kernel", "lacks"), [
    ("470.256.02", True), ("470.82.01", True), ("440.100", True), ("384.98", True),
    ("495.29.05", False), ("510.39.01", False), ("580.95.05", False), (None, False), ("", False),
    ("35.3.1", False),  # a Jetson module carries its L4T release, not a driver branch
])
def test_only_an_old_kernel_driver_says_in_advance_that_compute_cap_is_missing(
        kernel: str | None, lacks: bool) -> None:
    assert lacks_compute_cap(DriverVersion(kernel) if kernel else None) is lacks


def test_only_an_nvidia_smi_where_drivers_put_it_is_the_drivers_own(tmp_path: Path) -> None:
    assert drivers_own("/usr/bin/nvidia-smi") and drivers_own("/bin/nvidia-smi")
    assert not drivers_own(str(tmp_path / "nvidia-smi"))
    assert not drivers_own("/snap/app/current/usr/bin/nvidia-smi")
    link = tmp_path / "nvidia-smi-link"
    link.symlink_to("/usr/bin/nvidia-smi")  # a link is judged by what it names
    assert drivers_own(str(link))


def test_an_old_kernel_driver_spares_the_query_its_nvidia_smi_would_refuse(
        tmp_path: Path) -> None:
    query = "0, GeForce RTX 2070, 7973, GPU-00000000-0000-0000-0000-000000000000, 440.100\n"
    marker = tmp_path / "calls.txt"
    exe = fake_smi(tmp_path, query=query, no_compute_cap=True, marker=marker,
                   table=data("table_old_440.100_rtx2070_laptop.txt"))
    res = probe_nvidia_smi(str(exe), kernel_driver=DriverVersion("440.100"))
    assert res.ok
    # one query, without compute_cap, then the table
    assert len(marker.read_text().splitlines()) == 2
    assert "compute_cap" not in res.calls[0]
    assert (res.driver_version, res.gpus[0].compute_capability) == (DriverVersion("440.100"),
                                                                    None)
    assert res.cuda_driver_version == CudaVersion("10.2")
    assert any("driver 440.100" in w and "compute_cap" in w for w in res.warnings)


def test_a_newer_kernel_driver_than_its_nvidia_smi_still_falls_back(tmp_path: Path) -> None:
    """A bundled nvidia-smi 470 on a 580 driver (the capture in the error's README): the
    kernel's version says nothing about the binary, so the first query asks and the refusal
    leads to the second."""
    query = "0, NVIDIA RTX PRO 500, 4096, GPU-00000000-0000-0000-0000-000000000000, 580.95.05\n"
    marker = tmp_path / "calls.txt"
    exe = fake_smi(tmp_path, query=query, no_compute_cap=True, marker=marker)
    res = probe_nvidia_smi(str(exe), kernel_driver=DriverVersion("580.95.05"))
    assert res.ok
    assert len(marker.read_text().splitlines()) == 3  # two queries and the table
    assert "compute_cap" in res.calls[0] and "compute_cap" not in res.calls[1]


def test_probe_nonzero_exit(tmp_path: Path) -> None:
    exe = fake_smi(tmp_path, error=data("error_nvml_driver_library_mismatch_550.144.txt"), rc=18)
    res = probe_nvidia_smi(str(exe))
    assert not res.ok
    assert res.gpus == ()
    assert "driver/library version mismatch" in res.warnings[0]


def test_probe_unknown_failure_says_status(tmp_path: Path) -> None:
    exe = fake_smi(tmp_path, error="boom\n", rc=4)
    res = probe_nvidia_smi(str(exe))
    assert "exited with status 4: boom" in res.warnings[0]


def test_probe_hang_returns_within_timeout(tmp_path: Path) -> None:
    exe = fake_smi(tmp_path, hang=True)
    start = time.monotonic()
    res = probe_nvidia_smi(str(exe), timeout=0.5)
    assert time.monotonic() - start < 3
    assert not res.ok
    assert "did not answer within 0.5 s" in res.warnings[0]


def test_find_nvidia_smi(tmp_path: Path) -> None:
    assert find_nvidia_smi({"PATH": str(tmp_path)}) is None
    exe = fake_smi(tmp_path / "bin", query=SINGLE)
    assert find_nvidia_smi({"PATH": f"/nonexistent:{tmp_path / 'bin'}"}) == str(exe)
