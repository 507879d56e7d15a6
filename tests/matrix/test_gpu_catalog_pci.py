"""PCI device ids of the NVIDIA GPU catalog, and the tool that derives them from pci.ids."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest
import yaml

from torchenv.matrix.model import Matrix

ROOT = Path(__file__).resolve().parents[2]
CATALOG = ROOT / "src/torchenv/matrix/data/gpus.yaml"
SYSTEM_PCI_IDS = Path("/usr/share/misc/pci.ids")


@pytest.fixture(scope="module")
def tool() -> ModuleType:
    path = ROOT / "tools/derive_pci_ids.py"
    spec = importlib.util.spec_from_file_location("derive_pci_ids", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while being built
    spec.loader.exec_module(module)
    return module


# Each row checked by hand against pci.ids 2023.04.10 (vendor 10de).
WELL_KNOWN = [
    ("2204", "NVIDIA GeForce RTX 3090", "8.6"),  # GA102 [GeForce RTX 3090]
    ("2330", "NVIDIA H100 80GB HBM3", "9.0"),  # GH100[H100 SXM5 80GB]
    ("1b80", "NVIDIA GeForce GTX 1080", "6.1"),  # GP104 [GeForce GTX 1080]
    ("1ba0", "NVIDIA GeForce GTX 1080", "6.1"),  # GP104M [GeForce GTX 1080 Mobile]
    ("2216", "NVIDIA GeForce RTX 3080", "8.6"),  # GA102 [GeForce RTX 3080 Lite Hash Rate]
    ("1eb8", "Tesla T4", "7.5"),  # TU104GL [Tesla T4]
    ("20b0", "NVIDIA A100-SXM4-40GB", "8.0"),  # GA100 [A100 SXM4 40GB]
    ("20b5", "NVIDIA A100 80GB PCIe", "8.0"),  # GA100 [A100 PCIe 80GB]
    ("27b8", "NVIDIA L4", "8.9"),  # AD104GL [L4]
    ("26b1", "NVIDIA RTX 6000 Ada Generation", "8.9"),  # AD102GL [L6000 / RTX 6000 Ada Generation]
    ("2684", "NVIDIA GeForce RTX 4090", "8.9"),  # AD102 [GeForce RTX 4090]
]


@pytest.mark.parametrize(("device", "name", "cc"), WELL_KNOWN, ids=[r[0] for r in WELL_KNOWN])
def test_well_known_device_ids(matrix: Matrix, device: str, name: str, cc: str) -> None:
    entry = matrix.nvidia_gpu_by_pci(device)
    assert entry is not None and (entry.name, str(entry.compute_capability)) == (name, cc)
    assert matrix.nvidia_gpu_by_pci(f"0x{device.upper()}") == entry


@pytest.mark.parametrize("device", ["222b", "222f"], ids=["3090 sample", "3080 sample"])
def test_engineering_samples_get_no_entry(matrix: Matrix, device: str) -> None:
    assert matrix.nvidia_gpu_by_pci(device) is None


def test_no_device_id_belongs_to_two_entries(matrix: Matrix) -> None:
    seen: dict[str, str] = {}
    for gpu in matrix.nvidia_gpus:
        assert len(set(gpu.pci_ids)) == len(gpu.pci_ids), gpu.name
        for device in gpu.pci_ids:
            assert seen.setdefault(device, gpu.name) == gpu.name, device


def test_device_ids_cite_the_dated_pci_database(matrix: Matrix) -> None:
    source = matrix.sources["pci-ids"]
    assert re.search(r"version \d{4}\.\d{2}\.\d{2}, dated \d{4}-\d{2}-\d{2}", source.title)
    with_ids = [g for g in matrix.nvidia_gpus if g.pci_ids]
    assert len(with_ids) >= 40
    assert [g.name for g in with_ids if "pci-ids" not in g.sources] == []
    assert [g.name for g in matrix.nvidia_gpus if "pci-ids" in g.sources and not g.pci_ids] == []


# --- the derivation tool, on a made-up database in the pci.ids format ----------------------------

SAMPLE_DB = """\
#
#\tVersion: 2099.01.02
#\tDate:    2099-01-02 03:04:05
#
0f00  Some Other Vendor
\taaaa  XY100 [Widget 100]
10de  NVIDIA Corporation
\t0a01  XY100 Memory Controller
\t0a02  GA100
\t0a03  GA102 [Widget 100]
\t\t10de 0001  Widget 100 Founders Edition
\t0a04  GA102M [Widget 100 Mobile / Max-Q]
\t0a05  GA102 [Widget 100 Lite Hash Rate]
\t0a06  GA102 [Widget 100 8GB]
\t0a07  GA102 [Widget 100 Ti]
\t0a08  GA102 [Widget 100 Engineering Sample]
\t0a09  GA102 [Widget 100 / Widget 200]
\t0a0a  AD102 [Widget 200]
\t0a0b  GA100 [Gizmo PCIe 40GB]
\t0a0c  GA100 [Gizmo 80GB PCIe]
\t0a0d  GA102 [Twin]
\t0a0e  GP104 [Widget 100 Rev. A]
0f01  Yet Another Vendor
\tbbbb  GA102 [Widget 100]
"""

SAMPLE_CATALOG = """\
# a comment that must survive
schema_version: 1
sources:
- id: maker
  title: Maker's table
  url: https://example.com/table
nvidia:
- name: NVIDIA Widget 100
  compute_capability: '8.6'
  architecture: ampere
  segment: consumer
  sources:
  - maker
  note: kept as is
- name: NVIDIA Widget 100 Ti
  compute_capability: '8.6'
  pci_ids: ['0fff']
  architecture: ampere
  segment: consumer
  sources:
  - maker
  - pci-ids
- name: NVIDIA Widget 200
  compute_capability: '8.9'
  architecture: ampere
  segment: consumer
  sources:
  - maker
- name: Gizmo-PCIE-40GB
  aliases:
  - Gizmo 80GB PCIe
  compute_capability: '8.0'
  architecture: ampere
  segment: datacenter
  sources:
  - maker
- name: Twin
  compute_capability: '8.6'
  architecture: ampere
  segment: consumer
  sources:
  - maker
- name: NVIDIA twin
  compute_capability: '8.0'
  architecture: ampere
  segment: consumer
  sources:
  - maker
amd: []
"""


def test_the_database_header_and_nvidia_products(tool: ModuleType) -> None:
    db = tool.parse_pci_ids(SAMPLE_DB)
    assert (db.version, db.date) == ("2099.01.02", "2099-01-02 03:04:05")
    ids = [d.device_id for d in db.devices]
    assert ids == ["0a03", "0a04", "0a05", "0a06", "0a07", "0a08", "0a09", "0a0a", "0a0b",
                   "0a0c", "0a0d", "0a0e"]  # no bare chip, chipset function or other vendor
    assert db.devices[0] == tool.PciDevice("0a03", "GA102", "Widget 100")


def test_matching_rules(tool: ModuleType) -> None:
    db = tool.parse_pci_ids(SAMPLE_DB)
    derived = tool.derive(db, yaml.safe_load(SAMPLE_CATALOG)["nvidia"])
    assert derived.ids == {
        # exact; mobile, LHR and memory variants; the first of two alternatives
        "NVIDIA Widget 100": ["0a03", "0a04", "0a05", "0a06"],
        "NVIDIA Widget 100 Ti": ["0a07"],  # "Ti" is part of the name, never stripped
        "NVIDIA Widget 200": [],  # 0a0a is an Ada chip; the entry says Ampere
        "Gizmo-PCIE-40GB": ["0a0b", "0a0c"],  # word order and punctuation do not matter
        "Twin": [],
        "NVIDIA twin": [],
    }
    assert derived.samples == ["0a08 GA102 [Widget 100 Engineering Sample]"]
    assert derived.ambiguous == [
        "0a09 GA102 [Widget 100 / Widget 200] -> NVIDIA Widget 100, NVIDIA Widget 200",
        "0a0d GA102 [Twin] -> NVIDIA twin, Twin",
    ]
    assert derived.conflicts == [
        "0a0a AD102 [Widget 200] -> NVIDIA Widget 200: chip is ada, entry is ampere",
        "0a0e GP104 [Widget 100 Rev. A] -> NVIDIA Widget 100: chip is pascal, entry is ampere",
    ]
    assert derived.unmatched(derived.ids) == ["NVIDIA Widget 200", "Twin", "NVIDIA twin"]


def test_patching_touches_only_ids_and_their_source(tool: ModuleType) -> None:
    db = tool.parse_pci_ids(SAMPLE_DB)
    derived = tool.derive(db, yaml.safe_load(SAMPLE_CATALOG)["nvidia"])
    out = tool.patch_catalog(SAMPLE_CATALOG, db, derived)
    assert out.startswith("# a comment that must survive\n")
    assert "0fff" not in out  # a stale id is replaced
    doc = yaml.safe_load(out)
    entries = {e["name"]: e for e in doc["nvidia"]}
    assert entries["NVIDIA Widget 100"]["pci_ids"] == ["0a03", "0a04", "0a05", "0a06"]
    assert entries["NVIDIA Widget 100"]["sources"] == ["maker", "pci-ids"]
    assert entries["NVIDIA Widget 100"]["note"] == "kept as is"
    assert "pci_ids" not in entries["Twin"] and entries["Twin"]["sources"] == ["maker"]
    source = doc["sources"][-1]
    assert source["id"] == "pci-ids" and "version 2099.01.02" in source["title"]
    assert source["primary"] is False
    tool._check(SAMPLE_CATALOG, out, derived)  # nothing else changed
    assert tool.patch_catalog(out, db, derived) == out  # re-running changes nothing


def test_long_id_lists_wrap(tool: ModuleType) -> None:
    ids = [f"{n:04x}" for n in range(20)]
    lines = tool._flow_list("pci_ids", ids, "  ")
    assert len(lines) == 2 and all(len(line) <= tool.WIDTH for line in lines)
    assert yaml.safe_load("\n".join(lines).replace("  ", "", 1))["pci_ids"] == ids


@pytest.mark.skipif(not SYSTEM_PCI_IDS.is_file(), reason="no /usr/share/misc/pci.ids here")
def test_the_catalog_is_what_the_tool_derives(tool: ModuleType, matrix: Matrix) -> None:
    db = tool.parse_pci_ids(SYSTEM_PCI_IDS.read_text(encoding="utf-8", errors="replace"))
    if f"version {db.version}," not in matrix.sources["pci-ids"].title:
        pytest.skip(f"this pci.ids is version {db.version}, the catalog cites another")
    text = CATALOG.read_text(encoding="utf-8")
    derived = tool.derive(db, yaml.safe_load(text)["nvidia"])
    assert tool.patch_catalog(text, db, derived) == text
