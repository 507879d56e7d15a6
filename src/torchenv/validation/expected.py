"""What healthy hardware can do: the sourced figures of ``expected.yaml`` and the pure bounds
validation judges its measurements by (a GPU's most tensor TFLOP/s from its own clocks; the bus
bandwidth a fabric path should reach)."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

__all__ = ["Expected", "FabricPath", "expected_busbw", "load_expected", "tensor_ceiling_tflops"]

_DATA = Path(__file__).resolve().parent / "expected.yaml"


@dataclass(frozen=True)
class Expected:
    tensor_flops_per_clock_per_sm: Mapping[str, int]
    nvlink_gbs_per_link: Mapping[int, float]
    pcie_gbs_per_lane: Mapping[int, float]
    busbw_floor_fraction: float
    sources: Mapping[str, str]


def _values(table: Mapping[Any, Any], key: Any, sources: Mapping[str, Any]) -> dict[Any, Any]:
    out = {}
    for k, entry in table.items():
        missing = [s for s in entry.get("sources") or () if s not in sources]
        if not entry.get("sources") or missing:
            raise ValueError(f"expected.yaml: {k!r} names no source or an unknown one {missing}")
        out[key(k)] = entry["value"]
    return out


@functools.lru_cache(maxsize=1)
def load_expected() -> Expected:
    """The figures, validated on load (every one has a known source)."""
    import yaml

    doc = yaml.safe_load(_DATA.read_text("utf-8"))
    sources = doc["sources"]
    return Expected(
        tensor_flops_per_clock_per_sm=_values(doc["tensor_flops_per_clock_per_sm"], str,
                                              sources),
        nvlink_gbs_per_link=_values(doc["nvlink_gbs_per_link"], int, sources),
        pcie_gbs_per_lane=_values(doc["pcie_gbs_per_lane"], int, sources),
        busbw_floor_fraction=float(doc["busbw_floor_fraction"]),
        sources={k: str(v["url"]) for k, v in sources.items()})


def tensor_ceiling_tflops(capability: str, sm_count: int, max_sm_clock_mhz: int,
                          expected: Optional[Expected] = None) -> Optional[float]:
    """The most dense FP16/BF16 tensor TFLOP/s a GPU of ``capability`` (``"9.0"``) with
    ``sm_count`` SMs can reach at its own maximum SM clock; None where the table has no rate."""
    rate = (expected or load_expected()).tensor_flops_per_clock_per_sm.get(capability)
    if rate is None or sm_count <= 0 or max_sm_clock_mhz <= 0:
        return None
    return sm_count * max_sm_clock_mhz * 1e6 * rate / 1e12


@dataclass(frozen=True)
class FabricPath:
    """The slowest GPU's link, as NVML reports it: NVLink links up and their generation, and
    the PCIe link's maximum generation and width."""

    nvlink_up: int
    nvlink_version: Optional[int]
    pcie_gen: Optional[int]
    pcie_width: Optional[int]


def expected_busbw(transports: Sequence[str], paths: Sequence[FabricPath],
                   expected: Optional[Expected] = None) -> tuple[Optional[float], str]:
    """(the one-direction GB/s the all_reduce's path is rated for, what that path is).

    NCCL's transports decide the path: P2P or NVLS with NVLink up on every GPU is NVLink
    (links x per-link rate, the slowest GPU's); P2P or SHM otherwise is PCIe (generation x
    width, the slowest GPU's); a network transport (several nodes) is not judged here. None
    (with the reason) when the path or its figures are unknown.
    """
    e = expected or load_expected()
    if not paths:
        return None, "NVML did not describe the GPUs' links"
    if not transports:
        return None, "NCCL did not log its transports"
    if any(t.startswith(("NET", "CollNet")) for t in transports):
        return None, "a network transport (" + ", ".join(transports) + ") is not judged here"
    nvlink = any(t.startswith(("P2P", "NVLS")) for t in transports) and all(
        p.nvlink_up > 0 for p in paths)
    rated: list[tuple[float, str]] = []
    for p in paths:
        if nvlink:
            per_link = e.nvlink_gbs_per_link.get(p.nvlink_version or 0)
            if per_link is None:
                return None, f"NVLink generation {p.nvlink_version} has no figure"
            rated.append((p.nvlink_up * per_link,
                          f"NVLink {p.nvlink_version}, {p.nvlink_up} links"))
        else:
            per_lane = e.pcie_gbs_per_lane.get(p.pcie_gen or 0)
            if per_lane is None or not p.pcie_width:
                return None, "a PCIe link of unknown generation or width"
            rated.append((p.pcie_width * per_lane, f"PCIe gen {p.pcie_gen} x{p.pcie_width}"))
    return min(rated)
