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
    from torchenv.resolver.rules import runs_on
    from torchenv.values import ArchEntry, ComputeCapability

    compared = 0
    for t_major, t_minor in _TARGETS:
        if suffix == "+PTX":
            probe_name, entry = f"compute_{t_major}{t_minor}", f"{t_major}.{t_minor}+PTX"
        else:
            probe_name, entry = f"sm_{t_major}{t_minor}{suffix}", f"{t_major}.{t_minor}{suffix}"
        for major, minor in _CAPABILITIES:
            want = runs_on(ArchEntry(entry), ComputeCapability.from_parts(major, minor),
                           jit_ok=True)
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


def test_a_figure_above_the_catalogued_peak_is_a_failed_measurement() -> None:
    """Timing cuda:1's work with events on cuda:0's stream measures launch time only: thousands
    of TFLOP/s. That is a broken measurement, never a pass."""
    result = CheckResult(name="perf[cuda:1]", status="pass", device="cuda:1", required=False,
                         metrics={"gpu_name": "NVIDIA H100 80GB HBM3",
                                  "tflops": {"fp16": 4200.0, "bf16": 700.0}})
    peaks = {"fp16_tflops": 989.4, "bf16_tflops": 989.4, "memory_bandwidth_gbs": None}
    judged = compare_with_peak(result, lambda name: peaks)
    assert judged.status == "fail"
    assert judged.error is not None and "measurement is wrong" in judged.error
    assert "fp16 4200/989.4" in judged.error and "bf16" not in judged.error


def test_one_wrong_lane_fails_the_element_wise_matmul_comparison() -> None:
    import torch

    g = torch.Generator().manual_seed(3)
    a = torch.randn(257, 131, generator=g).to(torch.float16)
    b = torch.randn(131, 67, generator=g).to(torch.float16)
    good = a @ b
    tol = _probe.MATMUL_TOLERANCE["fp16"]
    assert _probe.matmul_violations(torch, good, a, b, tol)[0] == 0
    bad = good.clone()
    bad[200, 33] += float(bad[200, 33].abs()) * 0.05 + 0.5  # one lane, a few percent off
    count, worst, where = _probe.matmul_violations(torch, bad, a, b, tol)
    assert (count, where) == (1, (200, 33))
    assert worst > tol
    # the norm-wise relative error the check used before does not see it
    assert _probe.rel_err(torch, bad, a.double() @ b.double()) < 5e-3


def test_nan_in_a_result_is_a_violation() -> None:
    import torch

    a = torch.ones(4, 4)
    out = a @ a
    out[1, 2] = float("nan")
    assert _probe.matmul_violations(torch, out, a, a, 1e-5)[0] == 1


@pytest.mark.parametrize(("value", "forced"), [("1", True), ("0", False), ("", False),
                                               (None, False)])
def test_tf32_override_of_ngc_containers_is_detected(monkeypatch: pytest.MonkeyPatch,
                                                     value: str | None, forced: bool) -> None:
    if value is None:
        monkeypatch.delenv(_probe.TF32_OVERRIDE_ENV, raising=False)
    else:
        monkeypatch.setenv(_probe.TF32_OVERRIDE_ENV, value)
    assert _probe.tf32_forced() is forced


def test_fp32_under_forced_tf32_fails_fp32_tolerance_and_passes_tf32s() -> None:
    """What cuBLAS returns for float32 under the override: inputs rounded to TF32's 10-bit
    mantissa. Judged as fp32 it is 'wrong'; judged as TF32 (the labelled case) it is right."""
    import torch

    g = torch.Generator().manual_seed(0)
    a = torch.randn(256, 192, generator=g)
    b = torch.randn(192, 128, generator=g)

    def to_tf32(t: torch.Tensor) -> torch.Tensor:
        bits = t.view(torch.int32) & ~0x1FFF  # drop the 13 low mantissa bits
        return bits.view(torch.float32)

    out = to_tf32(a) @ to_tf32(b)
    assert _probe.matmul_violations(torch, out, a, b, _probe.MATMUL_TOLERANCE["fp32"])[0] > 0
    assert _probe.matmul_violations(torch, out, a, b, _probe.MATMUL_TOLERANCE["tf32"])[0] == 0


@pytest.mark.parametrize(("message", "expected"), [
    ("CUDA unknown error - this may be due to an incorrectly set up environment, e.g. changing "
     "env variable CUDA_VISIBLE_DEVICES after program start. Setting the available devices to "
     "be zero. (Triggered internally at ...) Error 802: system not yet initialized",
     "Fabric Manager"),
    ("Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before "
     "calling NumCudaDevices() that might have already set an error? Error 804: forward "
     "compatibility was attempted on non supported HW", "forward-compatibility"),
    ("Error 803: system has unsupported display driver / cuda driver combination",
     "cuda-compat"),
    ("The NVIDIA driver on your system is too old (found version 11040).", "upgrade the driver"),
    ("Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU and "
     "installed a driver", "container toolkit"),
    ("Failed to initialize NVML: Driver/library version mismatch", "reboot"),
    ("something nobody has seen", "torchenv doctor"),
], ids=["802", "804", "803", "old-driver", "no-driver", "mismatch", "unknown"])
def test_the_reason_cuda_is_unavailable_gets_a_specific_hint(message: str,
                                                             expected: str) -> None:
    assert expected in _probe.cuda_init_hint(message)


def test_cuda_init_on_a_cpu_build_has_no_error() -> None:
    import torch

    assert _probe.cuda_init(torch) == (0, None)


def test_a_stale_extension_lock_is_cleared_only_when_no_build_holds_the_directory(
        tmp_path: Path) -> None:
    """A killed build leaves torch's ``lock`` file and every later build would wait for it."""
    import fcntl
    import subprocess
    import sys

    (tmp_path / "lock").write_text("")
    held = _probe.clear_stale_lock(str(tmp_path))
    assert held is not None
    try:
        assert not (tmp_path / "lock").exists()
        # while one build holds the directory, another waits instead of removing its lock
        (tmp_path / "lock").write_text("")
        probe = subprocess.run(
            [sys.executable, "-c",
             "import fcntl, sys; f = open(sys.argv[1], 'a+b'); "
             "fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)",
             str(tmp_path / ".torchenv.lock")], capture_output=True, text=True, check=False)
        assert probe.returncode != 0 and "BlockingIOError" in probe.stderr
        assert (tmp_path / "lock").exists()
    finally:
        held.close()
    assert fcntl is not None


def test_collective_launches_never_run_a_single_rank_alone() -> None:
    from torchenv.validation.runner import collective_launches

    def plan(**kw: object) -> list[tuple[str, int, int]]:
        args = {"cuda_devices": 0, "nccl_available": True, "nnodes": 1, "nproc_per_node": None}
        args.update(kw)
        return [(la.backend, la.nproc, la.nnodes)
                for la in collective_launches(**args)]  # type: ignore[arg-type]

    assert plan() == [("gloo", 2, 1)]
    assert plan(cuda_devices=8) == [("nccl", 8, 1)]
    # one GPU: NCCL is initialised alone (its checks skip) and gloo gets two ranks of its own
    assert plan(cuda_devices=1) == [("nccl", 1, 1), ("gloo", 2, 1)]
    assert plan(cuda_devices=1, nnodes=2) == [("nccl", 1, 2)]
    # Windows builds have no NCCL
    assert plan(cuda_devices=2, nccl_available=False) == [("gloo", 2, 1)]


def test_rank_merge_skips_a_world_of_one_and_fails_a_missing_rank() -> None:
    skip = {"name": "nccl_allreduce", "status": "skip", "rank": 0, "device": "cuda:0",
            "reason": "world size 1: NCCL initialised on cuda:0; a collective needs at least 2 "
                      "ranks", "seconds": 0.0}
    [merged] = merge_rank_results([[skip]], expected_ranks=1)
    assert merged.status == "skip" and "world size 1" in (merged.reason or "")
    ok = {"name": "gloo_allreduce", "status": "pass", "rank": 0, "detail": "sum",
          "seconds": 0.1}
    [partial] = merge_rank_results([[ok]], expected_ranks=2)
    assert partial.status == "fail"
    assert partial.error == "1 of 2 local ranks reported no result (they hung or died)"


def test_nccl_transports_are_read_from_its_debug_logs(tmp_path: Path) -> None:
    from torchenv.validation.runner import nccl_transports

    (tmp_path / "nccl.node1.4001.log").write_text(
        "node1:4001:4100 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read\n"
        "node1:4001:4100 [0] NCCL INFO Channel 01/0 : 0[0] -> 1[1] via SHM/direct/direct\n")
    (tmp_path / "nccl.node1.4002.log").write_text(
        "node1:4002:4101 [1] NCCL INFO Channel 00/0 : 1[1] -> 2[0] [send] via NET/IB/0\n")
    (tmp_path / "other.log").write_text("via NET/Socket/0\n")
    assert nccl_transports(tmp_path) == ["NET/IB", "P2P/CUMEM", "SHM"]
    assert nccl_transports(tmp_path / "missing") == []


class _FakeRocmTorch:
    """Only the attributes a ROCm build's arch check reads; no ROCm GPU runs here."""

    def __init__(self, gcn: str, archs: list[str]) -> None:
        self.version = type("V", (), {"hip": "6.4.43482", "cuda": None})()
        props = type("P", (), {"gcnArchName": gcn})()
        self.cuda = type("C", (), {
            "get_device_name": staticmethod(lambda i: "AMD Instinct MI250X"),
            "get_arch_list": staticmethod(lambda: archs),
            "get_device_properties": staticmethod(lambda i: props)})()


@pytest.mark.parametrize(("gcn", "archs", "status"), [
    ("gfx90a:sramecc+:xnack-", ["gfx900", "gfx90a", "gfx942"], "pass"),
    ("gfx1100", ["gfx900", "gfx90a", "gfx942"], "fail"),
    ("", ["gfx90a"], "skip"),
], ids=["listed", "not-built", "unreported"])
def test_rocm_devices_are_judged_by_their_gfx_target(gcn: str, archs: list[str],
                                                     status: str) -> None:
    torch = _FakeRocmTorch(gcn, archs)
    result = _probe.run_one(torch, {"name": "cuda_arch", "check": "cuda_arch",
                                    "device": "cuda:0", "required": True}, True)
    assert result["status"] == status, result
