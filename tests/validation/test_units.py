"""Pure pieces of validation: the arch rule, reports, rank merging, peak comparison."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from torchenv.validation import _probe
from torchenv.validation.perf import compare_with_peak
from torchenv.validation.report import CheckResult, Report, merge_rank_results, write_junit


@pytest.mark.parametrize(("arch", "cc", "runs"), [
    ("sm_86", (8, 6), True),
    ("sm_80", (8, 6), True),
    ("sm_86", (8, 0), False),
    ("sm_90", (12, 0), False),
    ("sm_90a", (9, 0), True),
    ("sm_90a", (9, 1), False),
    ("compute_90", (12, 0), True),
    ("compute_90", (8, 9), False),
    ("sm_120", (12, 0), True),
    ("sm_61", (6, 1), True),
], ids=lambda v: str(v))
def test_arch_rule(arch: str, cc: tuple[int, int], runs: bool) -> None:
    assert _probe.arch_runs(arch, *cc) is runs


_CAPABILITIES = [(major, minor) for major in range(3, 13) for minor in range(10)]
_TARGETS = [(major, minor) for major in (3, 5, 6, 7, 8, 9, 10, 11, 12) for minor in (0, 1, 5, 7)]


@pytest.mark.parametrize("suffix", ["", "a", "f", "+PTX"], ids=["sass", "arch-a", "family-f",
                                                                "ptx"])
def test_the_probes_arch_rule_is_the_resolvers(suffix: str) -> None:
    """The standalone probe's copy against ``resolver.rules.runs_on`` for every suffix, target and
    capability: ``sm_XYs`` is SASS ``X.Ys``; ``compute_XY`` is PTX, which the resolver writes
    ``X.Y+PTX`` and judges with the driver's JIT available."""
    from torchenv.resolver.rules import parse_arch, runs_on

    compared = 0
    for t_major, t_minor in _TARGETS:
        if suffix == "+PTX":
            probe_name, entry = f"compute_{t_major}{t_minor}", f"{t_major}.{t_minor}+PTX"
        else:
            probe_name, entry = f"sm_{t_major}{t_minor}{suffix}", f"{t_major}.{t_minor}{suffix}"
        for major, minor in _CAPABILITIES:
            want = runs_on(parse_arch(entry), f"{major}.{minor}", jit_ok=True)
            assert _probe.arch_runs(probe_name, major, minor) is want, (probe_name, major, minor)
            compared += 1
    assert compared == len(_TARGETS) * len(_CAPABILITIES)


def _report() -> Report:
    return Report(python="/p/python", torch="2.13.0+cpu", level="quick", checks=(
        CheckResult(name="a", status="pass", seconds=0.1, detail="fine"),
        CheckResult(name="b", status="skip", device="cuda", reason="no CUDA device"),
        CheckResult(name="c", status="fail", error="boom", hint="do x", required=False),
    ))


def test_optional_failure_keeps_ok_and_json_shape() -> None:
    doc = _report().to_json()
    assert doc["ok"] is True
    assert doc["checks"][1] == {"name": "b", "status": "skip", "seconds": 0.0, "device": "cuda",
                                "required": True, "level": "quick", "reason": "no CUDA device"}
    json.dumps(doc)


def test_junit_written_atomically(tmp_path: Path) -> None:
    target = tmp_path / "r.xml"
    write_junit(_report(), target)
    suite = ET.parse(target).getroot().find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("3", "1", "1")
    assert [p.name for p in tmp_path.iterdir()] == ["r.xml"]


def test_rank_results_merge_fails_when_one_rank_fails() -> None:
    ok = {"name": "gloo_allreduce", "status": "pass", "seconds": 0.1, "device": "cpu",
          "detail": "sum", "rank": 0}
    bad = {**ok, "status": "fail", "error": "wrong sum", "rank": 1}
    [merged] = merge_rank_results([[ok], [bad]])
    assert merged.status == "fail"
    assert merged.error == "rank 1: wrong sum"


def test_peak_comparison_flags_below_half() -> None:
    result = CheckResult(name="perf", status="pass", device="cuda:0", required=False,
                         metrics={"gpu_name": "NVIDIA H200", "tflops": {"fp16": 400.0,
                                                                        "bf16": 700.0},
                                  "d2d_gbs": 3500.0})
    peaks = {"fp16_tflops": 989.4, "bf16_tflops": 989.4, "memory_bandwidth_gbs": 4800.0}
    flagged = compare_with_peak(result, lambda name: peaks)
    assert flagged.status == "fail"
    assert flagged.error is not None and "fp16" in flagged.error and "bf16" not in flagged.error
    assert flagged.metrics["bf16_fraction_of_peak"] == pytest.approx(0.707, abs=1e-3)
    unknown = compare_with_peak(result, lambda name: None)
    assert unknown.status == "pass"
