from __future__ import annotations

import time
from pathlib import Path

import pytest
from detection_helpers import data, make_exe
from hypothesis import given
from hypothesis import strategies as st

from torchenv.detection._rocm import (
    gfx_from_target_version,
    parse_hsa_override,
    parse_kfd_properties,
    parse_rocm_agent_enumerator,
    parse_rocm_version,
    parse_rocminfo,
    probe_rocm,
)


def test_rocminfo_mi210() -> None:
    agents = parse_rocminfo(data("rocminfo_4x_mi210_gfx90a_rocm6.0.0.txt"))
    assert agents == (("gfx90a", "AMD Instinct MI210"),) * 4


def test_rocminfo_wsl_gfx1100() -> None:
    agents = parse_rocminfo(data("rocminfo_wsl2_rx7900xtx_gfx1100_rocm6.3.4.txt"))
    assert [gfx for gfx, _ in agents] == ["gfx1100"]


def test_agent_enumerator() -> None:
    assert parse_rocm_agent_enumerator(data("rocm_agent_enumerator_8x_gfx942_mi300x.txt")) == (
        ("gfx942",) * 8)
    assert parse_rocm_agent_enumerator(
        data("rocm_agent_enumerator_gfx000_legacy_gfx803_gfx902.txt")) == ("gfx803", "gfx902")


def test_rocm_version() -> None:
    assert parse_rocm_version(data("opt_rocm_info_version_7.0.1.txt")) == "7.0.1"
    assert parse_rocm_version("6.3.4-1234\n") == "6.3.4"
    assert parse_rocm_version("") is None


@pytest.mark.parametrize(
    ("value", "gfx"),
    [(90010, "gfx90a"), (110000, "gfx1100"), (90402, "gfx942"), (100300, "gfx1030"),
     (80003, "gfx803"), (120001, "gfx1201"), (0, None)],
    ids=["mi210", "rx7900", "mi300", "rdna2", "polaris", "rdna4", "cpu"],
)
def test_gfx_from_target_version(value: int, gfx: str | None) -> None:
    assert gfx_from_target_version(value) == gfx


@given(st.integers(7, 12), st.integers(0, 15), st.integers(0, 15))
def test_gfx_target_roundtrip(major: int, minor: int, step: int) -> None:
    gfx = gfx_from_target_version(major * 10000 + minor * 100 + step)
    assert gfx == f"gfx{major}{minor:x}{step:x}"
    assert parse_hsa_override(f"{major}.{minor}.{step}") == gfx


def kfd_tree(root: Path, versions: list[int]) -> None:
    for i, v in enumerate(versions):
        node = root / f"sys/class/kfd/kfd/topology/nodes/{i}"
        node.mkdir(parents=True)
        (node / "properties").write_text(f"cpu_cores_count 0\nsimd_count 0\n"
                                         f"gfx_target_version {v}\nvendor_id 4098\n")


def test_kfd_properties() -> None:
    assert parse_kfd_properties("simd_count 416\ngfx_target_version 90010\n") == "gfx90a"
    assert parse_kfd_properties("cpu_cores_count 64\ngfx_target_version 0\n") is None


def test_probe_kfd_tree(tmp_path: Path) -> None:
    kfd_tree(tmp_path, [0, 90010, 90010])
    (tmp_path / "opt/rocm/.info").mkdir(parents=True)
    (tmp_path / "opt/rocm/.info/version").write_text(data("opt_rocm_info_version_7.0.1.txt"))
    facts = probe_rocm(tmp_path, {"PATH": ""})
    assert (facts.version, facts.gfx_targets, facts.source) == ("7.0.1", ("gfx90a",) * 2, "kfd")


def test_probe_rocminfo_when_no_kfd(tmp_path: Path) -> None:
    (tmp_path / "data.txt").write_text(data("rocminfo_wsl2_rx7900xtx_gfx1100_rocm6.3.4.txt"))
    make_exe(tmp_path / "opt/rocm/bin", "rocminfo", f'cat "{tmp_path / "data.txt"}"\n')
    facts = probe_rocm(tmp_path, {"PATH": ""})
    assert (facts.gfx_targets, facts.source) == (("gfx1100",), "rocminfo")


def test_probe_rocminfo_hang(tmp_path: Path) -> None:
    make_exe(tmp_path / "bin", "rocminfo", "exec sleep 30\n")
    start = time.monotonic()
    facts = probe_rocm(tmp_path, {"PATH": str(tmp_path / "bin")}, timeout=0.5)
    assert time.monotonic() - start < 3
    assert facts.gfx_targets == ()
    assert "did not finish" in facts.warnings[0]


def test_hsa_override(tmp_path: Path) -> None:
    kfd_tree(tmp_path, [100302])
    facts = probe_rocm(tmp_path, {"HSA_OVERRIDE_GFX_VERSION": "10.3.0"})
    assert facts.gfx_targets == ("gfx1030",)
    assert "gfx1032" in facts.warnings[0]


def test_no_amd_at_all(tmp_path: Path) -> None:
    facts = probe_rocm(tmp_path, {"PATH": ""})
    assert facts.gfx_targets == ()
    assert facts.version is None
    assert facts.warnings == ()
