"""Compare measured GPU throughput with the catalogue's expected peak (pure)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Callable, Optional

from torchenv.validation.report import CheckResult

__all__ = ["FLAG_ABOVE", "FLAG_BELOW", "compare_with_peak"]

FLAG_BELOW = 0.5
"""A measurement under this fraction of the expected peak is flagged."""
FLAG_ABOVE = 1.15
"""A measurement over this fraction of the peak is impossible: the timing measured something
else (work on another device's stream, launch time only), so it is a failed measurement."""

_PEAK_KEYS = (("fp16", "fp16_tflops", "TFLOP/s"), ("bf16", "bf16_tflops", "TFLOP/s"),
              ("d2d", "memory_bandwidth_gbs", "GB/s"))


def compare_with_peak(result: CheckResult,
                      lookup: Callable[[str], Optional[Mapping[str, Optional[float]]]]
                      ) -> CheckResult:
    """``result`` with the percentages of peak added; status ``fail`` when any is below 50 % of
    the peak, or above 115 % (no GPU beats its datasheet: the measurement is wrong)."""
    metrics = dict(result.metrics)
    name = metrics.get("gpu_name")
    peak = lookup(str(name)) if name else None
    if not peak:
        return replace(result, detail=(result.detail or "")
                       + f"; no expected peak for {name!r} in the GPU catalogue")
    tflops = metrics.get("tflops") or {}
    measured = {"fp16": tflops.get("fp16"), "bf16": tflops.get("bf16"),
                "d2d": metrics.get("d2d_gbs")}
    notes, low, high = [], [], []
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
        elif fraction > FLAG_ABOVE:
            high.append(text)
    detail = (result.detail or "") + ("; vs peak: " + ", ".join(notes) if notes else "")
    if high:
        return replace(result, status="fail", metrics=metrics, detail=detail,
                       error="above the catalogued peak, so the measurement is wrong, not the "
                             "GPU fast: " + ", ".join(high),
                       hint="the timing did not cover the work (events on another device's "
                            "stream?); report it with 'torchenv validate --json'")
    if low:
        return replace(result, status="fail", metrics=metrics, detail=detail,
                       error="below 50 % of the expected peak: " + ", ".join(low),
                       hint="check clocks/power limits (nvidia-smi -q -d PERFORMANCE), PCIe "
                            "link width, and other processes on the GPU")
    return replace(result, metrics=metrics, detail=detail)
