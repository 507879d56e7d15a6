"""What the driver's tools did not say, completed with its source on every probe path: the CUDA
version (nvidia-smi's table header, else derived from the driver table) and a GPU's compute
capability (the GPU catalog, by name)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from detection_helpers import clean_env, cli_exact, data, detect_json, fake_smi, run_cli
from tests.conftest import Cli

from torchenv.detection import _nvml
from torchenv.detection.catalog import cuda_from_driver
from torchenv.detection.detect import detect
from torchenv.detection.profile import HostProfile
from torchenv.errors import BadInput
from torchenv.matrix.model import Matrix
from torchenv.values import CudaVersion, DriverVersion

# the GPU of table_single_rtx4080super_595.71.05_fedora44.txt, as the query prints it
RTX4080S_QUERY = ("0, NVIDIA GeForce RTX 4080 SUPER, 8.9, 16376, "
                  "GPU-00000000-0000-0000-0000-000000000000, 595.71.05\n")
# the GPU of table_old_440.100_rtx2070_laptop.txt, asked without compute_cap (440's nvidia-smi
# has no such field: error_compute_cap_not_a_valid_field_smi470.txt)
RTX2070_QUERY = "0, GeForce RTX 2070, 7973, GPU-00000000-0000-0000-0000-000000000000, 440.100\n"


@pytest.fixture
def no_nvml(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_nvml, "probe_nvml_bounded", lambda **_: _nvml.NvmlResult(ok=False))


def test_a_host_with_only_nvidia_smi_reports_its_cuda_version(tmp_path: Path, cli: Cli) -> None:
    """No NVML, no /proc: the CUDA version is the table header's, and says so."""
    smi = fake_smi(tmp_path / "bin", query=RTX4080S_QUERY,
                   table=data("table_single_rtx4080super_595.71.05_fedora44.txt"))
    doc = detect_json(cli, clean_env(PATH=f"{smi.parent}:/usr/bin:/bin"))
    nv = doc["nvidia"]
    assert (nv["driver_version"], nv["cuda_driver_version"], nv["cuda_driver_version_source"],
            nv["source"]) == ("595.71.05", "13.2", "nvidia-smi", "nvidia-smi")
    assert doc["sources"]["nvidia.cuda_driver_version"] == "nvidia-smi"
    assert [(g["compute_capability"], g["compute_capability_source"]) for g in nv["gpus"]] == [
        ("8.9", "driver")]


def test_an_old_nvidia_smi_gets_its_capabilities_from_the_catalog(tmp_path: Path, cli: Cli) -> None:
    """nvidia-smi 440: no compute_cap field. detect fills the capability from the GPU catalog
    by the name nvidia-smi printed, in its JSON with the source, as resolve does."""
    smi = fake_smi(tmp_path / "bin", query=RTX2070_QUERY, no_compute_cap=True,
                   table=data("table_old_440.100_rtx2070_laptop.txt"))
    doc = detect_json(cli, clean_env(PATH=f"{smi.parent}:/usr/bin:/bin"))
    nv = doc["nvidia"]
    assert (nv["driver_version"], nv["cuda_driver_version"]) == ("440.100", "10.2")
    assert nv["gpus"][0]["name"] == "GeForce RTX 2070"
    assert (nv["gpus"][0]["compute_capability"],
            nv["gpus"][0]["compute_capability_source"]) == ("7.5", "catalog")
    cited = doc["sources"]["nvidia.gpus[0].compute_capability"]
    assert cited.startswith("GPU catalog (NVIDIA GeForce RTX 2070; sources: ")
    assert not any("compute capability unknown" in w for w in doc["warnings"])
    # the document reads back with the same facts
    host = HostProfile.from_json(doc, origin="host.json")
    assert host.nvidia is not None
    assert host.nvidia.gpus[0].compute_capability_source == "catalog"
    assert host.nvidia.cuda_driver_version_source == "nvidia-smi"


def test_the_console_says_where_a_completed_fact_came_from(tmp_path: Path, cli: Cli) -> None:
    (tmp_path / "root/proc/driver/nvidia/gpus/0000:01:00.0").mkdir(parents=True)
    (tmp_path / "root/proc/driver/nvidia/version").write_text(
        data("proc_driver_nvidia_version_open_565.57.01.txt"))
    (tmp_path / "root/proc/driver/nvidia/gpus/0000:01:00.0/information").write_text(
        "Model: \t\t NVIDIA H200\nDevice Minor: \t 0\n")
    res = cli_exact(cli, ["detect"], clean_env(TORCHENV_PROBE_ROOT=str(tmp_path / "root"),
                                        TORCHENV_NVIDIA_SMI="off"))
    assert res.returncode == 0, res.stderr
    assert "driver 565.57.01, CUDA ≥ 12.6 (by the driver table)" in res.stdout
    assert "9.0 (GPU catalog)" in res.stdout


@pytest.mark.usefixtures("no_nvml")
def test_a_host_with_only_the_kernel_module_derives_its_cuda_version(tmp_path: Path) -> None:
    """/proc names the driver and the GPUs, no tool runs: the CUDA version is derived from the
    driver table (a lower bound, said so) and the capability comes from the catalog."""
    (tmp_path / "proc/driver/nvidia/gpus/0000:01:00.0").mkdir(parents=True)
    (tmp_path / "proc/driver/nvidia/version").write_text(
        data("proc_driver_nvidia_version_open_565.57.01.txt"))
    (tmp_path / "proc/driver/nvidia/gpus/0000:01:00.0/information").write_text(
        "Model: \t\t NVIDIA H200\nDevice Minor: \t 0\n")
    profile = detect(root=tmp_path, environ={"PATH": "", "TORCHENV_NVIDIA_SMI": "off"})
    nv = profile.nvidia
    assert nv is not None
    assert (str(nv.driver_version), nv.source) == ("565.57.01", "proc")
    # 565.57.01 meets 12.6's floor (560.28.03), not 12.8's (570.26)
    assert (nv.cuda_driver_version, nv.cuda_driver_version_source) == (CudaVersion("12.6"),
                                                                       "derived")
    assert "may support a newer CUDA" in profile.sources["nvidia.cuda_driver_version"]
    assert [(str(g.compute_capability), g.compute_capability_source) for g in nv.gpus] == [
        ("9.0", "catalog")]
    doc = profile.to_json()
    assert doc["nvidia"]["cuda_driver_version_source"] == "derived"


@pytest.mark.usefixtures("no_nvml")
def test_resolve_on_a_kernel_module_only_host_builds_the_matrix_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Detection completes the facts from the matrix the command has already loaded."""
    from torchenv.cli import main
    from torchenv.matrix import loader

    (tmp_path / "proc/driver/nvidia/gpus/0000:01:00.0").mkdir(parents=True)
    (tmp_path / "proc/driver/nvidia/version").write_text(
        data("proc_driver_nvidia_version_open_565.57.01.txt"))
    (tmp_path / "proc/driver/nvidia/gpus/0000:01:00.0/information").write_text(
        "Model: \t\t NVIDIA H200\nDevice Minor: \t 0\n")
    for key, value in clean_env(TORCHENV_PROBE_ROOT=str(tmp_path), TORCHENV_NVIDIA_SMI="off",
                                TORCHENV_NO_OVERLAY="1").items():
        monkeypatch.setenv(key, value)
    built: list[int] = []
    real = loader.load_matrix

    def counted(*args: object, **kwargs: object) -> Matrix:
        built.append(1)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(loader, "load_matrix", counted)
    assert main(["resolve", "--json", "--python", "3.12"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["variant"].startswith("cu") and len(built) == 1


@pytest.mark.usefixtures("no_nvml")
def test_a_jetson_module_derives_nothing(tmp_path: Path) -> None:
    """35.3.1 is an L4T release, below every desktop driver floor: no CUDA version is made up."""
    (tmp_path / "proc/driver/nvidia").mkdir(parents=True)
    (tmp_path / "proc/driver/nvidia/version").write_text(
        data("proc_driver_nvidia_version_open_aarch64_jetson_35.3.1.txt"))
    profile = detect(root=tmp_path, environ={"PATH": "", "TORCHENV_NVIDIA_SMI": "off"})
    assert profile.nvidia is not None
    assert (profile.nvidia.cuda_driver_version, profile.nvidia.cuda_driver_version_source) == (
        None, None)


@pytest.mark.parametrize(
    ("driver", "windows", "cuda"),
    [("580.173.02", False, "13.0"), ("565.57.01", False, "12.6"), ("570.26", False, "12.8"),
     ("570.25", False, "12.6"), ("450.51.05", False, "11.0"), ("440.100", False, None),
     # Windows numbers its drivers apart (a WSL2 host reports the Windows driver)
     ("531.68", True, "12.1"), ("531.13", True, "12.0"),
     # the table has no Windows floor for 13.x: a 591 Windows driver is at least 12.9
     ("591.86", True, "12.9")],
)
def test_cuda_from_driver_is_the_newest_floor_met(matrix: Matrix, driver: str, windows: bool,
                                                  cuda: str | None) -> None:
    got = cuda_from_driver(DriverVersion(driver), matrix, windows=windows)
    assert (str(got[0]) if got else None) == cuda
    if got:
        assert got[1].startswith(f"derived: driver {driver} meets CUDA {cuda}'s toolkit driver "
                                 f"floor ({'Windows' if windows else 'Linux'} ≥ ")


def test_a_host_file_with_a_source_of_the_wrong_type_is_bad_input() -> None:
    doc = {"platform": "linux-x86_64", "python": "3.12",
           "nvidia": {"driver_version": "580.65.06", "source": "file",
                      "gpus": [{"index": 0, "compute_capability": "9.0",
                                "compute_capability_source": 7}]}}
    with pytest.raises(BadInput, match=r"compute_capability_source: expected a string"):
        HostProfile.from_json(json.loads(json.dumps(doc)), origin="host.json")


def test_nvml_without_a_cuda_version_or_a_capability_is_completed_too(
        fake_nvml: Callable[..., Path]) -> None:
    """An old libnvidia-ml that lacks nvmlDeviceGetCudaComputeCapability, and reports no CUDA
    version (0): the same completions, with the same sources, on the NVML path."""
    lib = fake_nvml("nvmlDeviceGetCudaComputeCapability")
    doc = detect_json(None, clean_env(TORCHENV_NVML_LIBRARY=str(lib / "libnvidia-ml.so.1"),
                                FAKE_NVML_GPUS="NVIDIA H200:9.0:143771:0",
                                FAKE_NVML_DRIVER="580.82.07", FAKE_NVML_CUDA="0"))
    nv = doc["nvidia"]
    assert (nv["source"], nv["cuda_driver_version"], nv["cuda_driver_version_source"]) == (
        "nvml", "13.0", "derived")
    assert [(g["compute_capability"], g["compute_capability_source"]) for g in nv["gpus"]] == [
        ("9.0", "catalog")]


def test_a_named_nvidia_smi_that_is_not_there_is_bad_input_even_when_nvml_answers(
        fake_nvml: Callable[..., Path], tmp_path: Path) -> None:
    env = clean_env(TORCHENV_NVML_LIBRARY=str(fake_nvml() / "libnvidia-ml.so.1"),
                    FAKE_NVML_GPUS="NVIDIA H200:9.0:143771:0",
                    TORCHENV_NVIDIA_SMI=str(tmp_path / "nvidia-smi"))
    res = run_cli(["detect"], env)
    assert res.returncode == 2, res.stdout + res.stderr
    assert f"TORCHENV_NVIDIA_SMI: {tmp_path / 'nvidia-smi'} does not exist" in res.stderr
