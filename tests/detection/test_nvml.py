"""NVML through the real nvidia-ml-py against a stand-in libnvidia-ml.so.1 built from C."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from detection_helpers import clean_env, detect_json, fake_smi
from hypothesis import given
from hypothesis import strategies as st

from torchenv.detection._nvml import cuda_version_from_int, describe_init_error

H200 = "NVIDIA H200:9.0:143771:0"
MIXED = "NVIDIA GeForce GTX 1080:6.1:8192;NVIDIA GeForce RTX 3090:8.6:24576"
EIGHT_A100 = ";".join(["NVIDIA A100-SXM4-80GB:8.0:81920:0"] * 8)


@pytest.mark.parametrize(("value", "text"), [(13000, "13.0"), (12080, "12.8"), (11040, "11.4"),
                                              (12090, "12.9"), (0, None), (-1, None)])
def test_cuda_version_from_int(value: int, text: str | None) -> None:
    found = cuda_version_from_int(value)
    assert (str(found) if found is not None else None) == text


@given(st.integers(1, 40), st.integers(0, 9))
def test_cuda_version_roundtrip(major: int, minor: int) -> None:
    assert str(cuda_version_from_int(major * 1000 + minor * 10)) == f"{major}.{minor}"


def test_init_errors_are_sentences() -> None:
    assert describe_init_error(12, "NVML Shared Library Not Found") is None
    assert "reboot" in (describe_init_error(18, "") or "")
    assert "not loaded" in (describe_init_error(9, "") or "")
    assert "error 999" in (describe_init_error(999, "") or "")


def nvml_env(lib: Path, gpus: str, path: str = "/usr/bin:/bin", **extra: str) -> dict[str, str]:
    return clean_env(TORCHENV_NVML_LIBRARY=str(lib / "libnvidia-ml.so.1"), FAKE_NVML_GPUS=gpus,
                     PATH=path, **extra)


def test_h200_on_580(fake_nvml: Callable[..., Path]) -> None:
    doc = detect_json(None, nvml_env(fake_nvml(), H200, FAKE_NVML_DRIVER="580.82.07",
                               FAKE_NVML_CUDA="13000"))
    nv = doc["nvidia"]
    assert (nv["driver_version"], nv["cuda_driver_version"], nv["source"]) == (
        "580.82.07", "13.0", "nvml")
    assert nv["cuda_driver_version_source"] == "nvml"
    assert nv["gpus"] == [{"index": 0, "name": "NVIDIA H200", "compute_capability": "9.0",
                           "compute_capability_source": "driver", "memory_mib": 143771,
                           "uuid": "GPU-00000000-0000-0000-0000-000000000000",
                           "mig_mode": False}]
    assert doc["sources"]["nvidia"] == "nvml"
    assert doc["warnings"] == []


def test_mixed_pascal_ampere(fake_nvml: Callable[..., Path]) -> None:
    doc = detect_json(None, nvml_env(fake_nvml(), MIXED, FAKE_NVML_DRIVER="550.54.15",
                               FAKE_NVML_CUDA="12040"))
    gpus = doc["nvidia"]["gpus"]
    assert [(g["name"], g["compute_capability"]) for g in gpus] == [
        ("NVIDIA GeForce GTX 1080", "6.1"), ("NVIDIA GeForce RTX 3090", "8.6")]
    assert all(g["mig_mode"] is None for g in gpus)  # NOT_SUPPORTED degrades quietly
    assert doc["nvidia"]["cuda_driver_version"] == "12.4"


def test_eight_a100(fake_nvml: Callable[..., Path]) -> None:
    doc = detect_json(None, nvml_env(fake_nvml(), EIGHT_A100, CUDA_VISIBLE_DEVICES="4,5,6,7"))
    nv = doc["nvidia"]
    assert [g["index"] for g in nv["gpus"]] == list(range(8))
    assert {g["compute_capability"] for g in nv["gpus"]} == {"8.0"}
    assert nv["visible"] == [4, 5, 6, 7]
    assert nv["cuda_visible_devices"] == "4,5,6,7"


def test_version_mismatch_warns_and_next_probe_runs(fake_nvml: Callable[..., Path],
                                                     tmp_path: Path) -> None:
    smi = fake_smi(tmp_path / "bin", query="0, NVIDIA H200, 9.0, 143771, GPU-1, 580.82.07\n",
                   version="DRIVER version      : 580.82.07\nCUDA Version        : 13.0\n")
    doc = detect_json(None, nvml_env(fake_nvml(), H200, path=f"{smi.parent}:/usr/bin:/bin",
                               FAKE_NVML_INIT_ERROR="18"))
    assert any("driver/library version mismatch" in w and "reboot" in w
               for w in doc["warnings"])
    nv = doc["nvidia"]
    assert nv["source"] == "nvidia-smi"
    assert nv["gpus"][0]["compute_capability"] == "9.0"
    assert doc["sources"]["nvidia.gpus"] == "nvidia-smi --query-gpu"


def test_driver_not_loaded_warns(fake_nvml: Callable[..., Path]) -> None:
    doc = detect_json(None, nvml_env(fake_nvml(), H200, FAKE_NVML_INIT_ERROR="9"))
    assert doc["nvidia"] is None
    assert any("driver is not loaded" in w for w in doc["warnings"])


def test_missing_function_degrades_one_field(fake_nvml: Callable[..., Path]) -> None:
    doc = detect_json(None, nvml_env(fake_nvml("nvmlDeviceGetUUID"), MIXED))
    gpus = doc["nvidia"]["gpus"]
    assert [g["uuid"] for g in gpus] == [None, None]
    assert [g["compute_capability"] for g in gpus] == ["6.1", "8.6"]
    assert any("lacks nvmlDeviceGetUUID" in w for w in doc["warnings"])


def test_missing_cuda_v2_falls_back_to_v1(fake_nvml: Callable[..., Path]) -> None:
    doc = detect_json(None, nvml_env(fake_nvml("nvmlSystemGetCudaDriverVersion_v2"), H200,
                               FAKE_NVML_CUDA="12080"))
    assert doc["nvidia"]["cuda_driver_version"] == "12.8"
    assert doc["warnings"] == []


def test_missing_count_fails_the_probe_not_the_profile(fake_nvml: Callable[..., Path]) -> None:
    doc = detect_json(None, nvml_env(fake_nvml("nvmlDeviceGetCount_v2"), H200))
    assert doc["nvidia"] is None
    assert any("cannot count GPUs" in w for w in doc["warnings"])
    assert doc["interpreter"]["executable"]


def test_a_hung_nvml_is_abandoned_after_the_probe_timeout(fake_nvml: Callable[..., Path]) -> None:
    import time

    env = nvml_env(fake_nvml(), H200, FAKE_NVML_DRIVER="580.82.07", FAKE_NVML_CUDA="13000",
                   FAKE_NVML_HANG_SECONDS="30", TORCHENV_PROBE_TIMEOUT="1")
    start = time.monotonic()
    doc = detect_json(None, env)
    assert time.monotonic() - start < 10
    assert any("NVML did not answer within 1 s" in w for w in doc["warnings"])


def test_one_supplied_nvidia_value_is_merged_with_the_detected_other(
    fake_nvml: Callable[..., Path],
) -> None:
    env = nvml_env(fake_nvml(), H200, FAKE_NVML_DRIVER="580.82.07", FAKE_NVML_CUDA="13000")
    doc = detect_json(None, env, "--gpu", "8.6")
    assert doc["nvidia"]["driver_version"] == "580.82.07"
    assert [g["compute_capability"] for g in doc["nvidia"]["gpus"]] == ["8.6"]
    doc = detect_json(None, env, "--driver", "550.54.15")
    assert doc["nvidia"]["driver_version"] == "550.54.15"
    assert doc["nvidia"]["cuda_driver_version"] is None  # NVML's CUDA version was for 580
    assert [g["name"] for g in doc["nvidia"]["gpus"]] == ["NVIDIA H200"]
