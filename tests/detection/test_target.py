"""The target: a host read once for deciding, before any candidate is judged; the rules, the
explanations and the fixes read its fields and never go back to the GPU catalog."""

from __future__ import annotations

import pytest

from torchenv.detection.profile import Gpu, HostProfile, NvidiaInfo, PciDevice, PythonInfo
from torchenv.detection.target import PciHint, read_target
from torchenv.matrix.model import Matrix
from torchenv.resolver import NoMatch, Request, resolve
from torchenv.values import ComputeCapability, DriverVersion, Platform

GTX_1080 = PciDevice("0000:01:00.0", "10de", "1b80", "0x030000", "nvidia")


def _host(*gpus: Gpu, pci: tuple[PciDevice, ...] = (), driver: str | None = "550.54.15",
          visible: tuple[int, ...] | None = None, wsl: bool = False) -> HostProfile:
    nvidia = NvidiaInfo(DriverVersion(driver) if driver else None, source="proc", gpus=gpus,
                        visible=visible) if gpus or driver else None
    return HostProfile(platform=Platform("linux-x86_64"), python=PythonInfo("3.12"),
                       glibc="2.35", wsl=wsl, nvidia=nvidia, pci=pci)


def test_gpus_are_completed_from_the_catalog_once_and_judged_one_per_capability(
        matrix: Matrix) -> None:
    host = _host(Gpu(0, "NVIDIA GeForce GTX 1080"), Gpu(1, "NVIDIA GeForce GTX 1080"),
                 Gpu(2, compute_capability=ComputeCapability("8.6")), Gpu(3, "no such GPU"))
    target = read_target(host, matrix)
    assert [str(g.compute_capability) for g in target.gpus] == ["6.1", "6.1", "8.6", "None"]
    assert target.profile.nvidia is not None
    assert target.profile.nvidia.gpus[0].compute_capability_source == "catalog"
    assert [(g.index, str(cc)) for g, cc in target.capabilities] == [(0, "6.1"), (2, "8.6")]
    assert [g.index for g in target.capability_unknown] == [3]
    assert target.kinds == {"cuda"} and target.gpu_host


def test_hidden_gpus_are_not_the_targets(matrix: Matrix) -> None:
    host = _host(Gpu(0, compute_capability=ComputeCapability("6.1")),
                 Gpu(1, compute_capability=ComputeCapability("8.6")), visible=(1,))
    assert [g.index for g in read_target(host, matrix).gpus] == [1]


def test_wsl_reads_the_windows_driver_floors(matrix: Matrix) -> None:
    assert not read_target(_host(Gpu(0)), matrix).windows_driver
    assert read_target(_host(Gpu(0), wsl=True), matrix).windows_driver


def test_the_first_nvidia_device_on_the_bus_is_looked_up_once(matrix: Matrix) -> None:
    target = read_target(_host(pci=(GTX_1080,), driver=None), matrix)
    assert target.pci_hint == PciHint("0000:01:00.0", "10de:1b80", "NVIDIA GeForce GTX 1080",
                                      ComputeCapability("6.1"))
    unknown = GTX_1080._replace(device="ffff")
    assert read_target(_host(pci=(unknown,), driver=None), matrix).pci_hint == PciHint(
        "0000:01:00.0", "10de:ffff")


def test_the_fixes_take_the_device_from_the_target_not_the_catalog(matrix: Matrix) -> None:
    """A driver that did not answer, with a GPU on the bus: the fix names what the target
    says of it; a target whose hint says otherwise changes the fix (nothing looks again)."""
    host = _host(pci=(GTX_1080,), driver=None)
    host = host.with_changes(nvidia_evidence=("PCI 10de:1b80 at 0000:01:00.0",))
    target = read_target(host, matrix)
    other = target._replace(pci_hint=PciHint("0000:01:00.0", "10de:1b80", "Some Other GPU",
                                             ComputeCapability("7.5")))
    for t, name, cc in ((target, "NVIDIA GeForce GTX 1080", "6.1"),
                        (other, "Some Other GPU", "7.5")):
        with pytest.raises(NoMatch) as info:
            resolve(Request(), t, matrix)
        assert f"{name} per the GPU catalog, compute capability {cc}" in info.value.message
        assert {"driver": "VERSION", "gpus": (cc,)} in info.value.fixes[1].changes
