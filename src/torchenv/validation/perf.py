"""Judge measured GPU throughput (pure): against the catalogue's expected peak from below, and
against what the GPU can do at its own clocks from above."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Callable, Optional

from torchenv.validation.report import CheckResult

__all__ = ["FLAG_ABOVE_CATALOG", "FLAG_BELOW", "compare_with_peak"]

FLAG_BELOW = 0.5
"""A measurement under this fraction of the expected peak is flagged."""
CEILING_MARGIN = 1.02
"""Timing noise allowed above the most the GPU can do at its own maximum clock."""
FLAG_ABOVE_CATALOG = 1.5
"""Without the GPU's own clocks, a measurement this far above the catalogued peak is impossible
(factory overclocks add a few percent, not half): the timing measured something else (work on
another device's stream, launch time only)."""

_PEAK_KEYS = (("fp16", "fp16_tflops", "TFLOP/s"), ("bf16", "bf16_tflops", "TFLOP/s"),
              ("d2d", "memory_bandwidth_gbs", "GB/s"))
_TENSOR = ("fp16", "bf16")


def compare_with_peak(result: CheckResult,
                      lookup: Callable[[str], Optional[Mapping[str, Optional[float]]]],
                      max_sm_clock_mhz: Optional[int] = None) -> CheckResult:
    """``result`` with the percentages of peak added; status ``fail`` when any is below 50 % of
    the catalogued peak, or when a tensor figure is above what the GPU can do at its own maximum
    SM clock (``max_sm_clock_mhz``, from NVML; SM count and capability come with the result):
    no GPU beats its own clocks, so the measurement is wrong. Without the clock, above 150 % of
    the catalogued peak is the same verdict."""
    from torchenv.validation.expected import tensor_ceiling_tflops

    metrics = dict(result.metrics)
    name = metrics.get("gpu_name")
    peak = lookup(str(name)) if name else None
    tflops = metrics.get("tflops") or {}
    ceiling = None
    if max_sm_clock_mhz and metrics.get("capability") and metrics.get("sm_count"):
        ceiling = tensor_ceiling_tflops(str(metrics["capability"]), int(metrics["sm_count"]),
                                        int(max_sm_clock_mhz))
    high = []
    if ceiling is not None:
        metrics.update(tensor_ceiling_tflops=round(ceiling, 1), max_sm_clock_mhz=max_sm_clock_mhz)
        high = [f"{k} {float(tflops[k]):g} TFLOP/s > {ceiling:.1f} ({metrics['sm_count']} SMs "
                f"at {max_sm_clock_mhz} MHz)" for k in _TENSOR
                if tflops.get(k) is not None and float(tflops[k]) > ceiling * CEILING_MARGIN]
    if not peak:
        result = replace(result, metrics=metrics, detail=(result.detail or "")
                         + f"; no expected peak for {name!r} in the GPU catalogue")
        return _too_high(result, high) if high else result
    measured = {"fp16": tflops.get("fp16"), "bf16": tflops.get("bf16"),
                "d2d": metrics.get("d2d_gbs")}
    notes, low = [], []
    for key, peak_key, unit in _PEAK_KEYS:
        got, want = measured.get(key), peak.get(peak_key)
        if got is None or not want:
            continue
        fraction = float(got) / float(want)
        metrics[f"{key}_fraction_of_peak"] = round(fraction, 3)
        text = f"{key} {float(got):g}/{float(want):g} {unit} ({fraction:.0%})"
        notes.append(text)
        if fraction < FLAG_BELOW:
            low.append(text)
        elif ceiling is None and fraction > FLAG_ABOVE_CATALOG:
            high.append(text + " of the catalogued peak")
    detail = (result.detail or "") + ("; vs peak: " + ", ".join(notes) if notes else "")
    if ceiling is not None:
        detail += f"; at most {ceiling:.1f} TFLOP/s at its own {max_sm_clock_mhz} MHz"
    result = replace(result, metrics=metrics, detail=detail)
    if high:
        return _too_high(result, high)
    if low:
        return replace(result, status="fail",
                       error="below 50 % of the expected peak: " + ", ".join(low),
                       hint="check clocks/power limits (nvidia-smi -q -d PERFORMANCE), PCIe "
                            "link width, and other processes on the GPU")
    return result


def _too_high(result: CheckResult, high: list[str]) -> CheckResult:
    return replace(result, status="fail",
                   error="more than the GPU can do, so the measurement is wrong, not the GPU "
                         "fast: " + ", ".join(high),
                   hint="the timing did not cover the work (events on another device's "
                        "stream?); report it with 'torchenv validate --json'")
