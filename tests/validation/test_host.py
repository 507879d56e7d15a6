"""The parent's view of the GPUs, from detection, handed to the validation child."""

from __future__ import annotations

from torchenv.detection import Gpu, HostProfile, NvidiaInfo, PythonInfo
from torchenv.validation.host import device_count_result, gpu_host


def _profile(**changes: object) -> HostProfile:
    return HostProfile(platform="linux-x86_64", python=PythonInfo("3.11")).with_changes(**changes)


def test_no_trace_of_nvidia_is_a_cpu_host() -> None:
    host = gpu_host(_profile())
    assert not host.nvidia
    assert device_count_result(host, 0) == ("skip", "detection found no NVIDIA GPU")


def test_a_gpu_only_the_pci_scan_saw_is_still_a_gpu_host() -> None:
    """WSL2, a container without NVML: a CPU-only torch must not pass 'quick' there."""
    host = gpu_host(_profile(nvidia_evidence=("PCI device 10de:2204",)))
    assert host.nvidia and host.expected is None
    status, text = device_count_result(host, 0)
    assert status == "skip" and "10de:2204" in text


def test_torch_seeing_fewer_gpus_than_nvml_fails() -> None:
    gpus = tuple(Gpu(index=i, name="NVIDIA H100 80GB HBM3", compute_capability="9.0")
                 for i in range(8))
    host = gpu_host(_profile(nvidia=NvidiaInfo(driver_version="570.86.15", gpus=gpus)))
    assert host.expected == 8
    assert device_count_result(host, 8)[0] == "pass"
    status, text = device_count_result(host, 7)
    assert status == "fail" and "torch sees 7" in text and "8 visible" in text


def test_cuda_visible_devices_is_applied_before_comparing() -> None:
    gpus = tuple(Gpu(index=i) for i in range(4))
    nv = NvidiaInfo(driver_version="570.86.15", gpus=gpus, cuda_visible_devices="1,3",
                    visible=(1, 3))
    assert gpu_host(_profile(nvidia=nv)).expected == 2


def test_mig_makes_the_count_unknown() -> None:
    gpus = (Gpu(index=0, mig_mode=True), Gpu(index=1))
    host = gpu_host(_profile(nvidia=NvidiaInfo(driver_version="570.86.15", gpus=gpus)))
    assert host.nvidia and host.expected is None
    assert device_count_result(host, 3)[0] == "skip"
