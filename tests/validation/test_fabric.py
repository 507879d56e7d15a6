"""Judging the fabric: the bus bandwidth against the path NCCL used, link error counters before
and after the workload, throttling under load. Readings are planted as :class:`GpuHealth`."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Optional

import pytest

from torchenv.validation.collectives import judge_bus_bandwidth
from torchenv.validation.expected import FabricPath, expected_busbw, load_expected
from torchenv.validation.health import (
    NVML_ERROR_NOT_SUPPORTED,
    GpuHealth,
    MemoryUse,
    Unread,
    fabric_path,
    judge_clocks_under_load,
    judge_link_errors,
)
from torchenv.validation.report import CheckResult

UNSUPPORTED = Unread("nvmlDeviceGetNvLinkErrorCounter", NVML_ERROR_NOT_SUPPORTED,
                     "Not Supported")


def _gpu(**changes: Any) -> GpuHealth:
    """A healthy H100 SXM with 18 NVLink 4 links up, PCIe gen 5 x16."""
    healthy = GpuHealth(
        index=0, name="NVIDIA H100 80GB HBM3", uuid="GPU-1", pci_bus_id="00000000:18:00.0",
        ecc_mode=(True, True), ecc_volatile_uncorrected=0, ecc_aggregate_uncorrected=0,
        retired_pages_pending=UNSUPPORTED, remapped_rows=UNSUPPORTED, clock_reasons=0x1,
        sm_clock_mhz=345, sm_clock_max_mhz=1980, pcie_gen=1, pcie_gen_max=5, pcie_width=16,
        pcie_width_max=16, nvlink=(True,) * 18, persistence=True, compute_mode=0,
        mig_mode=(False, False), processes=(), memory=MemoryUse(80 << 30, 79 << 30),
        virtualization_mode=0, nvlink_version=4, pcie_replay=0,
        nvlink_errors={"replay": 0, "recovery": 0, "crc_flit": 0, "crc_data": 0})
    return replace(healthy, **changes)


NVLINK4_X18 = fabric_path(_gpu())
PCIE4_X16 = fabric_path(_gpu(nvlink=(), nvlink_version=UNSUPPORTED, pcie_gen_max=4))


def test_a_gpus_links_as_nvml_reports_them() -> None:
    assert FabricPath(nvlink_up=18, nvlink_version=4, pcie_gen=5, pcie_width=16) == NVLINK4_X18
    assert FabricPath(nvlink_up=0, nvlink_version=None, pcie_gen=4, pcie_width=16) == PCIE4_X16


@pytest.mark.parametrize(("transports", "paths", "gbs", "path"), [
    (["P2P/CUMEM"], [NVLINK4_X18, NVLINK4_X18], 450.0, "NVLink 4, 18 links"),
    (["NVLS", "P2P/CUMEM"], [NVLINK4_X18, replace(NVLINK4_X18, nvlink_up=17)], 425.0,
     "NVLink 4, 17 links"),
    (["SHM"], [PCIE4_X16, PCIE4_X16], 16 * 1.969, "PCIe gen 4 x16"),
    (["P2P/IPC"], [PCIE4_X16, replace(PCIE4_X16, pcie_width=8)], 8 * 1.969, "PCIe gen 4 x8"),
    (["NET/IB"], [NVLINK4_X18], None, "a network transport (NET/IB) is not judged here"),
    ([], [NVLINK4_X18], None, "NCCL did not log its transports"),
    (["P2P/CUMEM"], [], None, "NVML did not describe the GPUs' links"),
    (["P2P/CUMEM"], [replace(NVLINK4_X18, nvlink_version=9)], None,
     "NVLink generation 9 has no figure"),
], ids=["nvlink", "slowest-gpu", "pcie-shm", "narrow-slot", "network", "no-log", "no-nvml",
        "unknown-nvlink"])
def test_the_rated_bandwidth_of_the_path_nccl_used(
        transports: list[str], paths: list[FabricPath], gbs: Optional[float],
        path: str) -> None:
    want, said = expected_busbw(transports, paths)
    assert said == path
    assert want == (pytest.approx(gbs) if gbs is not None else None)


def _busbw(value: float) -> CheckResult:
    return CheckResult(name="nccl_bus_bandwidth", status="pass", device="cuda:0",
                       required=False, level="full", detail="all_reduce sweep",
                       metrics={"busbw_gbs": value, "algbw_gbs": value / 2 * 1.0})


def test_bus_bandwidth_below_the_paths_floor_is_a_required_failure() -> None:
    fraction = load_expected().busbw_floor_fraction
    slow = judge_bus_bandwidth(_busbw(450 * fraction - 1), ["P2P/CUMEM"],
                               [NVLINK4_X18, NVLINK4_X18])
    assert (slow.status, slow.required) == ("fail", True)
    assert "of the 450 GB/s one direction of NVLink 4, 18 links is rated for" in (slow.error or "")
    healthy = judge_bus_bandwidth(_busbw(380.0), ["P2P/CUMEM"], [NVLINK4_X18, NVLINK4_X18])
    assert (healthy.status, healthy.required) == ("pass", True)
    assert healthy.metrics["floor_busbw_gbs"] == pytest.approx(450 * fraction)
    # the same figure over a PCIe gen 4 x16 path is plenty
    assert judge_bus_bandwidth(_busbw(20.0), ["SHM"], [PCIE4_X16, PCIE4_X16]).status == "pass"


def test_a_path_that_cannot_be_judged_stays_optional_and_says_why() -> None:
    result = judge_bus_bandwidth(_busbw(3.0), ["NET/Socket"], [NVLINK4_X18])
    assert (result.status, result.required) == ("pass", False)
    assert "not judged: a network transport (NET/Socket)" in (result.detail or "")


def test_link_errors_are_judged_by_what_grew_during_the_run() -> None:
    before = _gpu(pcie_replay=7)
    assert judge_link_errors(before, before).status == "pass"
    replays = judge_link_errors(before, _gpu(pcie_replay=12))
    assert (replays.status, replays.required) == ("fail", False)
    assert "pcie replay +5" in (replays.error or "")
    recovered = judge_link_errors(before, _gpu(pcie_replay=7, nvlink_errors={
        "replay": 3, "recovery": 1, "crc_flit": 40, "crc_data": 0}))
    assert (recovered.status, recovered.required) == ("fail", True)
    assert "nvlink recovery +1" in (recovered.error or "")
    assert recovered.metrics["nvlink_crc_flit_during_run"] == 40


def test_link_errors_nobody_can_read_are_a_skip() -> None:
    plain = _gpu(pcie_replay=UNSUPPORTED, nvlink_errors=UNSUPPORTED)
    result = judge_link_errors(plain, plain)
    assert result.status == "skip" and "not supported" in (result.reason or "")
    # a GPU without NVLink still has its PCIe counter judged
    pcie_only = _gpu(nvlink_errors=UNSUPPORTED)
    assert judge_link_errors(pcie_only, pcie_only).status == "pass"
    assert judge_link_errors(_gpu(), None).status == "skip"


@pytest.mark.parametrize(("bits", "status"), [(0x0, "pass"), (0x4, "pass"), (0x8, "fail"),
                                              (0x40 | 0x4, "fail"), (0x80, "fail")],
                         ids=["none", "power-cap", "hw-slowdown", "hw-thermal", "power-brake"])
def test_throttling_under_load(bits: int, status: str) -> None:
    result = judge_clocks_under_load(_gpu(), bits, samples=40)
    assert result.status == status and result.required
    assert judge_clocks_under_load(_gpu(), bits, samples=0).status == "skip"


def test_an_xid_during_the_run_fails_the_gpu_it_names() -> None:
    from torchenv.validation.health import XidWatch, judge_xid

    watch = XidWatch({})
    watch.watched = {0, 1}
    watch.events = [(1, 79), (1, 79)]
    assert judge_xid(_gpu(), watch).status == "pass"
    lost = judge_xid(_gpu(index=1), watch)
    assert (lost.status, lost.required) == ("fail", True)
    assert "Xid 79 during the run" in (lost.error or "")
    assert judge_xid(_gpu(index=2), watch).status == "skip"


def test_xid_events_without_nvml_are_a_skip_saying_so() -> None:
    from torchenv.validation.health import XidWatch, judge_xid

    watch = XidWatch({"TORCHENV_NVML_LIBRARY": "off"})
    watch.start()
    watch.collect()
    result = judge_xid(_gpu(), watch)
    assert result.status == "skip" and "NVML is not in use" in (result.reason or "")
