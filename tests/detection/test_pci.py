"""The PCI scan, and what a host with a GPU but a failed probe resolves to (exit 3, not CPU)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from detection_helpers import clean_env, cli_exact, fake_smi, run_cli
from tests.conftest import Cli

from torchenv.detection import _nvml
from torchenv.detection._pci import is_display_class, parse_hex_id, scan_pci
from torchenv.detection.detect import detect
from torchenv.detection.profile import PciDevice


def pci_device(root: Path, address: str, vendor: str, device: str, pci_class: str,
               driver: str | None = None) -> None:
    """A sysfs PCI function as the kernel lays it out (values end in a newline)."""
    dev = root / "sys/bus/pci/devices" / address
    dev.mkdir(parents=True)
    (dev / "vendor").write_text(f"0x{vendor}\n")
    (dev / "device").write_text(f"0x{device}\n")
    (dev / "class").write_text(f"{pci_class}\n")
    if driver:
        target = root / "sys/bus/pci/drivers" / driver
        target.mkdir(parents=True, exist_ok=True)
        os.symlink(target, dev / "driver")


@pytest.fixture
def bus(tmp_path: Path) -> Path:
    pci_device(tmp_path, "0000:00:00.0", "8086", "3e0f", "0x060000")  # host bridge
    pci_device(tmp_path, "0000:00:02.0", "8086", "56a0", "0x030000", "i915")  # Intel Arc
    pci_device(tmp_path, "0000:01:00.0", "10de", "1b80", "0x030000", "nvidia")  # GTX 1080
    pci_device(tmp_path, "0000:01:00.1", "10de", "10f0", "0x040300", "snd_hda_intel")  # HDMI audio
    pci_device(tmp_path, "0000:41:00.0", "10de", "2330", "0x030200")  # H100 SXM, 3D controller
    pci_device(tmp_path, "0000:c1:00.0", "1002", "744c", "0x030000", "amdgpu")  # RX 7900 XTX
    pci_device(tmp_path, "0000:05:00.0", "14e4", "1751", "0x020000")  # NIC
    return tmp_path


def test_scan_keeps_display_functions_of_gpu_vendors(bus: Path) -> None:
    assert scan_pci(bus) == (
        PciDevice("0000:00:02.0", "8086", "56a0", "0x030000", "i915"),
        PciDevice("0000:01:00.0", "10de", "1b80", "0x030000", "nvidia"),
        PciDevice("0000:41:00.0", "10de", "2330", "0x030200", None),
        PciDevice("0000:c1:00.0", "1002", "744c", "0x030000", "amdgpu"),
    )


def test_no_sysfs_means_no_devices(tmp_path: Path) -> None:
    assert scan_pci(tmp_path) == ()


@pytest.mark.parametrize(("text", "want"), [
    ("0x10de\n", "10de"), ("0X10DE", "10de"), ("10de", "10de"), ("0x10d", None), ("zzzz", None),
    ("", None),
])
def test_hex_ids(text: str, want: str | None) -> None:
    assert parse_hex_id(text) == want


def test_display_class() -> None:
    assert is_display_class("0x030000") and is_display_class("0x030200")
    assert not is_display_class("0x040300") and not is_display_class("garbage")


def test_detect_records_nvidia_hardware_as_evidence(bus: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_nvml, "probe_nvml_bounded", lambda **_: _nvml.NvmlResult(ok=False))
    (bus / "dev").mkdir()
    (bus / "dev/nvidia0").write_text("")
    (bus / "dev/nvidiactl").write_text("")
    profile = detect(root=bus, environ={"PATH": "", "TORCHENV_NVIDIA_SMI": "off"})
    assert profile.nvidia is None
    assert profile.nvidia_evidence == (
        "PCI 10de:1b80 at 0000:01:00.0 (driver nvidia)",
        "PCI 10de:2330 at 0000:41:00.0 (no driver bound)",
        "/dev/nvidia0",
    )
    assert [d.vendor for d in profile.pci] == ["8086", "10de", "10de", "1002"]
    assert profile.sources["pci"] == "/sys/bus/pci/devices"
    # the Intel device still reaches the XPU probe, from the same scan
    assert profile.xpu is not None and profile.xpu.devices[0].startswith("8086:56a0")


def _gpu_box(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    pci_device(root, "0000:01:00.0", "10de", "1b80", "0x030000", "nvidia")
    return root


def test_resolve_with_a_hung_nvidia_smi_exits_3_and_says_why(tmp_path: Path) -> None:
    root = _gpu_box(tmp_path)
    smi = fake_smi(tmp_path / "bin", hang=True)
    env = clean_env(PATH=f"{smi.parent}:/usr/bin:/bin", TORCHENV_PROBE_ROOT=str(root),
                    TORCHENV_PROBE_TIMEOUT="1")
    res = run_cli(["resolve", "--json"], env)
    assert res.returncode == 3, res.stderr
    doc = json.loads(res.stdout)
    assert doc["torch"] is None
    assert doc["error"].startswith("an NVIDIA GPU is present")
    assert "could not be read" in doc["error"]
    assert any("did not answer within 1 s" in w for w in doc["host_warnings"])
    assert doc["fixes"][-1] == "or choose the CPU build knowingly: --variant cpu"
    console = run_cli(["resolve"], env)
    assert console.returncode == 3
    assert "an NVIDIA GPU is present" in console.stderr
    assert "no NVIDIA, AMD or Intel GPU was found" not in console.stdout + console.stderr


def test_resolve_when_nvidia_smi_cannot_reach_the_driver_exits_3(tmp_path: Path, cli: Cli) -> None:
    from detection_helpers import data

    root = _gpu_box(tmp_path)
    smi = fake_smi(tmp_path / "bin", error=data("error_couldnt_communicate_with_driver.txt"))
    env = clean_env(PATH=f"{smi.parent}:/usr/bin:/bin", TORCHENV_PROBE_ROOT=str(root))
    res = cli_exact(cli, ["resolve", "--json"], env)
    assert res.returncode == 3, res.stderr
    doc = json.loads(res.stdout)
    assert "could not talk to the NVIDIA driver" in " ".join(doc["host_warnings"])


def test_the_cpu_build_can_still_be_asked_for_knowingly(tmp_path: Path, cli: Cli) -> None:
    root = _gpu_box(tmp_path)
    env = clean_env(PATH="/usr/bin:/bin", TORCHENV_PROBE_ROOT=str(root))
    res = cli_exact(cli, ["resolve", "--json", "--variant", "cpu"], env)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["variant"] == "cpu"


def test_given_facts_replace_the_failed_probe(tmp_path: Path, cli: Cli) -> None:
    root = _gpu_box(tmp_path)
    env = clean_env(PATH="/usr/bin:/bin", TORCHENV_PROBE_ROOT=str(root))
    res = cli_exact(cli, ["resolve", "--json", "--driver", "580.65.06", "--gpu", "6.1"], env)
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["variant"].startswith("cu") and doc["evidence"]["arch"] in ("confirmed", "inferred")
