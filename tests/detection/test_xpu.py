from __future__ import annotations

import os
from pathlib import Path

from torchenv.detection._xpu import is_intel_gpu, probe_xpu


def pci(root: Path, bus: str, vendor: str, device: str, cls: str, driver: str | None) -> None:
    d = root / "sys/bus/pci/devices" / bus
    d.mkdir(parents=True)
    (d / "vendor").write_text(vendor + "\n")
    (d / "device").write_text(device + "\n")
    (d / "class").write_text(cls + "\n")
    if driver:
        target = root / "sys/bus/pci/drivers" / driver
        target.mkdir(parents=True, exist_ok=True)
        os.symlink(target, d / "driver")


def test_is_intel_gpu() -> None:
    assert is_intel_gpu("0x8086", "0x030000")
    assert is_intel_gpu("0x8086", "0x038000")
    assert not is_intel_gpu("0x8086", "0x060400")  # a PCI bridge
    assert not is_intel_gpu("0x10de", "0x030000")  # NVIDIA
    assert not is_intel_gpu("", "")


def test_probe_fake_sysfs(tmp_path: Path) -> None:
    pci(tmp_path, "0000:00:01.0", "0x8086", "0x7d55", "0x060400", None)
    pci(tmp_path, "0000:01:00.0", "0x10de", "0x2684", "0x030000", "nvidia")
    pci(tmp_path, "0000:03:00.0", "0x8086", "0x56a0", "0x030000", "xe")
    facts = probe_xpu(tmp_path, {})
    assert facts.devices == ("8086:56a0 (0000:03:00.0, driver xe)",)
    assert not facts.level_zero
    lib = tmp_path / "usr/lib/x86_64-linux-gnu"
    lib.mkdir(parents=True)
    (lib / "libze_loader.so.1").write_text("")
    assert probe_xpu(tmp_path, {}).level_zero


def test_no_pci_bus(tmp_path: Path) -> None:
    assert probe_xpu(tmp_path, {}).devices == ()
