"""A GPU the driver lists without a usable name gets its compute capability by PCI device id."""

from __future__ import annotations

from pathlib import Path

import pytest

from torchenv.detection._pci import scan_pci
from torchenv.detection.profile import Gpu, HostProfile, NvidiaInfo, PciDevice, PythonInfo
from torchenv.detection.target import read_target
from torchenv.matrix.model import Matrix
from torchenv.resolver import NoMatch, Request, resolve
from torchenv.values import ComputeCapability, DriverVersion, Platform

BASE = HostProfile(platform=Platform("linux-x86_64"), python=PythonInfo("3.12"), glibc="2.35")
KEY = "nvidia.gpus[0].compute_capability"


def _text(cc: ComputeCapability | None) -> str | None:
    return str(cc) if cc is not None else None


def nvidia_pci(address: str, device: str) -> PciDevice:
    return PciDevice(address, "10de", device, "0x030000", "nvidia")


def proc_host(*gpus: Gpu, pci: tuple[PciDevice, ...] = ()) -> HostProfile:
    """Driver read from /proc (names only, no compute capability), plus a PCI scan."""
    return BASE.with_changes(nvidia=NvidiaInfo(DriverVersion("580.65.06"), None, "proc", gpus),
                             pci=pci, nvidia_evidence=("/proc/driver/nvidia",))


GTX_1080 = nvidia_pci("0000:01:00.0", "1b80")
RTX_3090 = nvidia_pci("0000:02:00.0", "2204")
RTX_A6000 = nvidia_pci("0000:03:00.0", "2230")
NOT_IN_CATALOG = nvidia_pci("0000:04:00.0", "ffff")
RADEON = PciDevice("0000:c1:00.0", "1002", "744c", "0x030000", "amdgpu")

# (id, GPUs the driver lists, PCI devices, compute capabilities after completion)
TABLE = [
    ("unrecognised name, one GPU", (Gpu(0, "NVIDIA Prototype X"),), (GTX_1080,), ["6.1"]),
    ("no name at all", (Gpu(0),), (GTX_1080,), ["6.1"]),
    ("two ids, one capability", (Gpu(0), Gpu(1)), (RTX_3090, RTX_A6000), ["8.6", "8.6"]),
    ("another vendor's GPU does not count", (Gpu(0),), (GTX_1080, RADEON), ["6.1"]),
    ("a name in the catalog wins", (Gpu(0, "Tesla K80"),), (GTX_1080,), ["3.7"]),
    ("a read capability is kept", (Gpu(0, None, ComputeCapability("8.9")),), (GTX_1080,), ["8.9"]),
    ("two capabilities: which GPU is which is unknown", (Gpu(0), Gpu(1)),
     (GTX_1080, RTX_3090), [None, None]),
    ("an id the catalog lacks", (Gpu(0), Gpu(1)), (GTX_1080, NOT_IN_CATALOG), [None, None]),
    ("the scan shows fewer devices than GPUs", (Gpu(0), Gpu(1)), (GTX_1080,), [None, None]),
    ("no PCI scan", (Gpu(0, "NVIDIA Prototype X"),), (), [None]),
]


@pytest.mark.parametrize(("gpus", "pci", "want"), [row[1:] for row in TABLE],
                         ids=[row[0] for row in TABLE])
def test_capability_by_pci_only_when_unambiguous(
    matrix: Matrix, gpus: tuple[Gpu, ...], pci: tuple[PciDevice, ...], want: list[str | None]
) -> None:
    done = read_target(proc_host(*gpus, pci=pci), matrix).profile
    assert done.nvidia is not None
    assert [_text(g.compute_capability) for g in done.nvidia.gpus] == want


def test_the_value_is_marked_as_taken_from_the_catalog_by_pci_id(matrix: Matrix) -> None:
    done = read_target(proc_host(Gpu(0, "NVIDIA Prototype X"), pci=(GTX_1080,)), matrix).profile
    entry = matrix.nvidia_gpu_by_pci("1b80")
    assert entry is not None
    assert done.sources[KEY] == (f"GPU catalog by PCI id (10de:1b80 = {entry.name}; "
                                 f"sources: {', '.join(entry.sources)})")
    assert "pci-ids" in entry.sources


def test_two_ids_name_both_entries(matrix: Matrix) -> None:
    done = read_target(proc_host(Gpu(0), Gpu(1), pci=(RTX_A6000, RTX_3090)), matrix).profile
    text = done.sources["nvidia.gpus[1].compute_capability"]
    assert text.startswith("GPU catalog by PCI id (10de:2204 = NVIDIA GeForce RTX 3090, "
                           "10de:2230 = NVIDIA RTX A6000; sources: ")


def test_a_name_match_keeps_its_own_record(matrix: Matrix) -> None:
    done = read_target(proc_host(Gpu(0, "Tesla K80"), pci=(GTX_1080,)), matrix).profile
    assert done.sources[KEY].startswith("GPU catalog (Tesla K80; ")


def test_resolve_picks_a_gpu_build_where_the_name_alone_fails(matrix: Matrix) -> None:
    unnamed = proc_host(Gpu(0, "NVIDIA Prototype X"))
    with pytest.raises(NoMatch, match="could not be read and the GPU catalog does not know it"):
        resolve(Request(), unnamed, matrix)
    plan = resolve(Request(), unnamed.with_changes(pci=(GTX_1080,)), matrix)
    assert plan.variant.startswith("cu")
    assert "6.1" in " ".join(plan.reasons)


def test_the_pci_list_of_a_host_file_is_used(matrix: Matrix) -> None:
    doc = {
        "platform": "linux-x86_64", "python": "3.12", "glibc": "2.35",
        "nvidia": {"driver_version": "580.65.06", "source": "proc",
                   "gpus": [{"index": 0, "name": None, "compute_capability": None}]},
        "pci": [{"address": "0000:01:00.0", "vendor": "10de", "device": "2204",
                 "class": "0x030000", "driver": "nvidia"}],
    }
    done = read_target(HostProfile.from_json(doc, origin="node.json"), matrix).profile
    assert done.nvidia is not None
    assert done.nvidia.gpus[0].compute_capability == ComputeCapability("8.6")


def test_the_pci_scan_of_sysfs_is_used(matrix: Matrix, tmp_path: Path) -> None:
    dev = tmp_path / "sys/bus/pci/devices/0000:41:00.0"
    dev.mkdir(parents=True)
    (dev / "vendor").write_text("0x10de\n")
    (dev / "device").write_text("0x2330\n")  # H100 SXM5, a 3D controller
    (dev / "class").write_text("0x030200\n")
    done = read_target(proc_host(Gpu(0), pci=scan_pci(tmp_path)), matrix).profile
    assert done.nvidia is not None
    assert done.nvidia.gpus[0].compute_capability == ComputeCapability("9.0")
