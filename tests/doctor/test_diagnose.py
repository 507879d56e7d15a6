"""The pure rules of doctor, on HostProfiles built directly (a GPU host, no GPU needed)."""

from __future__ import annotations

from typing import Any

import pytest

from torchenv.detection.profile import Gpu, HostProfile, NvidiaInfo, PythonInfo, TorchInfo
from torchenv.doctor import CondaRecord, Distribution, Installs, diagnose
from torchenv.matrix import load_matrix
from torchenv.values import ComputeCapability, CudaVersion, DriverVersion, Platform

MATRIX = load_matrix()
GOOD_TORCH = TorchInfo(version="2.7.1+cu128", variant="cu128", cuda_version="12.8",
                       arch_list=("sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120",
                                  "compute_120"),
                       torchvision="0.22.1+cu128", torchaudio="2.7.1+cu128")


def host(torch: TorchInfo | None = GOOD_TORCH, *, driver: str = "580.65.06", cc: str = "8.6",
         warnings: tuple[str, ...] = ()) -> HostProfile:
    return HostProfile(
        platform=Platform("linux-x86_64"),
        python=PythonInfo(version="3.12", executable="/v/bin/python"),
        # NVML reports the CUDA version of the driver it runs; only 580.65.06's is given here
        nvidia=NvidiaInfo(driver_version=DriverVersion(driver),
                          cuda_driver_version=(CudaVersion("13.0") if driver == "580.65.06"
                                               else None),
                          source="nvml",
                          gpus=(Gpu(index=0, name="NVIDIA GeForce RTX 3090",
                                    compute_capability=ComputeCapability(cc), uuid="GPU-1234"),)),
        torch=torch, warnings=warnings)


def codes(findings: list[Any]) -> list[str]:
    return [f.code for f in findings]


def test_healthy_gpu_host_has_no_findings() -> None:
    assert diagnose(host(), {}, MATRIX, Installs()) == []


CASES = [
    ("cpu-build", {"torch": TorchInfo(version="2.7.1+cpu", variant="cpu")}, {},
     Installs(), "cpu-build-on-gpu-host", "error"),
    ("arch", {"cc": "6.1"}, {}, Installs(), "gpu-arch-unsupported", "error"),
    ("driver-too-old", {"driver": "520.61.05"}, {}, Installs(), "driver-too-old", "error"),
    ("driver-below-toolkit", {"driver": "550.54.15"}, {}, Installs(), "driver-below-toolkit",
     "warning"),
    ("torchvision-unpaired", {"torch": TorchInfo(
        version="2.7.1+cu128", variant="cu128", cuda_version="12.8",
        arch_list=GOOD_TORCH.arch_list, torchvision="0.21.0+cu128")}, {}, Installs(),
     "torchvision-unpaired", "error"),
    ("torchaudio-variant", {"torch": TorchInfo(
        version="2.7.1+cu128", variant="cu128", cuda_version="12.8",
        arch_list=GOOD_TORCH.arch_list, torchaudio="2.7.1+cpu")}, {}, Installs(),
     "torchaudio-variant", "error"),
    ("several-torch", {}, {}, Installs(distributions=(
        Distribution("torch", "2.7.1+cu128", "/v/lib/site-packages", "pip"),
        Distribution("torch", "2.5.1", "/home/u/.local/lib/site-packages", "pip"))),
     "multiple-torch", "error"),
    ("pip-and-conda", {}, {}, Installs(
        distributions=(Distribution("torch", "2.7.1+cu128", "/v/lib/site-packages", "pip"),),
        conda=(CondaRecord("pytorch", "2.5.1", "pytorch", "py3.12_cuda12.4_cudnn9_0"),)),
     "multiple-torch", "error"),
    ("conda-pytorch-channel", {}, {}, Installs(conda=(
        CondaRecord("torchvision", "0.20.1", "https://conda.anaconda.org/pytorch"),)),
     "conda-pytorch-channel", "warning"),
    ("ld-library-path", {}, {"LD_LIBRARY_PATH": "/usr/local/cuda/lib64:/opt/x"}, Installs(
        cuda_libs_on_ld_path={"/usr/local/cuda/lib64": ("libcudart.so.12",), "/opt/x": ()}),
     "ld-library-path-cuda", "warning"),
    ("cvd-empty", {}, {"CUDA_VISIBLE_DEVICES": ""}, Installs(),
     "cuda-visible-devices-hides-all", "error"),
    ("cvd-wrong-index", {}, {"CUDA_VISIBLE_DEVICES": "3,0"}, Installs(),
     "cuda-visible-devices-hides-all", "error"),
    ("cuda-memory-pool", {}, {"CUDA_MEMORY_POOL": "1"}, Installs(), "cuda-memory-pool",
     "warning"),
    ("nvml-mismatch", {"warnings": ("NVML: Driver/library version mismatch",)}, {}, Installs(),
     "nvml-mismatch", "error"),
    ("no-torch", {"torch": None}, {}, Installs(), "torch-missing", "error"),
]


@pytest.mark.parametrize(("host_args", "env", "installs", "code", "severity"),
                         [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_each_planted_problem_is_found(host_args: dict[str, Any], env: dict[str, str],
                                       installs: Installs, code: str, severity: str) -> None:
    findings = diagnose(host(**host_args), env, MATRIX, installs)
    found = {f.code: f for f in findings}
    assert code in found, codes(findings)
    f = found[code]
    assert f.severity == severity
    assert f.title and f.explanation
    assert f.fix
    assert [x.severity for x in findings] == sorted(
        (x.severity for x in findings), key=["error", "warning", "info"].index)


@pytest.mark.parametrize("value", ["0", "GPU-1234", "GPU-12"], ids=["index", "uuid", "prefix"])
def test_cuda_visible_devices_naming_a_gpu_is_fine(value: str) -> None:
    assert diagnose(host(), {"CUDA_VISIBLE_DEVICES": value}, MATRIX, Installs()) == []


def test_arch_list_falls_back_to_the_matrix() -> None:
    torch = TorchInfo(version="2.7.1+cu126", variant="cu126", cuda_version="12.6")
    found = codes(diagnose(host(torch=torch, cc="12.0"), {}, MATRIX, Installs()))
    assert "gpu-arch-unsupported" in found  # cu126 of 2.7.1 stops at 9.0 in the matrix


def test_pairing_fix_pins_the_paired_release() -> None:
    torch = TorchInfo(version="2.7.1+cu128", variant="cu128", cuda_version="12.8",
                      arch_list=GOOD_TORCH.arch_list, torchvision="0.21.0+cu124")
    [f] = [f for f in diagnose(host(torch=torch), {}, MATRIX, Installs())
           if f.code == "torchvision-unpaired"]
    assert f.fix is not None
    assert "torchvision==0.22.1" in f.fix and "whl/cu128" in f.fix


def test_pairing_fix_is_the_exact_command_resolve_would_pin() -> None:
    torch = TorchInfo(version="2.7.1+cu128", variant="cu128", cuda_version="12.8",
                      arch_list=GOOD_TORCH.arch_list, torchvision="0.21.0+cu124")
    [f] = [f for f in diagnose(host(torch=torch), {}, MATRIX, Installs())
           if f.code == "torchvision-unpaired"]
    assert f.fix == ("pip install --force-reinstall --no-deps torchvision==0.22.1+cu128 "
                     "--index-url https://download.pytorch.org/whl/cu128")


def _torch_2_13(**companions: str) -> TorchInfo:
    return TorchInfo(version="2.13.0+cu130", variant="cu130", cuda_version="13.0",
                     arch_list=("sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"),
                     **companions)


def test_a_companion_its_maintainers_state_works_with_the_torch_is_paired() -> None:
    # torchaudio 2.11.1 is "compatible with PyTorch 2.11 and later"; the matrix pairs 2.13.0
    # with 2.11.0 (2.11.1 came out later, with 2.15.0), yet 2.11.1 is not a mismatch
    torch = _torch_2_13(torchaudio="2.11.1+cu130", torchvision="0.28.0+cu130")
    assert "torchaudio-unpaired" not in codes(diagnose(host(torch=torch), {}, MATRIX,
                                                       Installs()))


def test_a_companion_no_statement_covers_is_unpaired_and_the_fix_pins_the_stated_one() -> None:
    torch = _torch_2_13(torchaudio="2.10.0+cu130")
    [f] = [f for f in diagnose(host(torch=torch), {}, MATRIX, Installs())
           if f.code == "torchaudio-unpaired"]
    assert f.fix == ("pip install --force-reinstall --no-deps torchaudio==2.11.0+cu130 "
                     "--index-url https://download.pytorch.org/whl/cu130")


@pytest.mark.parametrize("value", ["MIG-GPU-1234/1/0", "GPU-1234,0"], ids=["mig", "uuid-then-0"])
def test_cuda_visible_devices_is_read_as_detection_reads_it(value: str) -> None:
    # a MIG instance of the GPU is a visible device: no false "hides every GPU"
    assert diagnose(host(), {"CUDA_VISIBLE_DEVICES": value}, MATRIX, Installs()) == []


def test_cuda_visible_devices_hiding_every_gpu_is_an_error_with_the_fix() -> None:
    [f] = diagnose(host(), {"CUDA_VISIBLE_DEVICES": "7"}, MATRIX, Installs())
    assert (f.code, f.severity, f.fix) == ("cuda-visible-devices-hides-all", "error",
                                           "unset CUDA_VISIBLE_DEVICES")


def test_a_gpu_whose_driver_cannot_be_read_is_an_error_not_silence() -> None:
    broken = HostProfile(platform=Platform("linux-x86_64"), python=PythonInfo(version="3.12"),
                         torch=GOOD_TORCH,
                         nvidia_evidence=("/dev/nvidia0", "/usr/bin/nvidia-smi exists but failed: "
                                          "couldn't communicate with the NVIDIA driver"))
    [f] = [f for f in diagnose(broken, {}, MATRIX, Installs()) if f.code == "nvidia-unreadable"]
    assert f.severity == "error"
    assert f.explanation.startswith("An NVIDIA GPU is present but its driver version could not "
                                    "be read (evidence: /dev/nvidia0)")
    assert f.fix == "load or repair the NVIDIA driver (nvidia-smi must answer), then run this again"
