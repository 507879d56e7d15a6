"""Pure pieces of validation: the arch rule, reports, peak comparison, the probe's helpers."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import pytest

from torchenv.validation import _probe
from torchenv.validation.perf import compare_with_peak
from torchenv.validation.report import CheckResult, Report, write_junit


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
    """The standalone probe's copy against ``matrix.inference.entry_runs`` (the entry rule under
    ``reach``) for every suffix, target and capability: ``sm_XYs`` is SASS ``X.Ys``;
    ``compute_XY`` is PTX, which the resolver writes ``X.Y+PTX`` and judges with the driver's
    JIT available."""
    from torchenv.matrix.inference import entry_runs
    from torchenv.values import ArchEntry, ComputeCapability

    compared = 0
    for t_major, t_minor in _TARGETS:
        if suffix == "+PTX":
            probe_name, entry = f"compute_{t_major}{t_minor}", f"{t_major}.{t_minor}+PTX"
        else:
            probe_name, entry = f"sm_{t_major}{t_minor}{suffix}", f"{t_major}.{t_minor}{suffix}"
        for major, minor in _CAPABILITIES:
            want = entry_runs(ArchEntry(entry), ComputeCapability.from_parts(major, minor),
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


class _FakeCudaTorch:
    """A CUDA build as the probe sees it, on a GPU of the given compute capability."""

    def __init__(self, version: str, capability: tuple[int, int]) -> None:
        self.__version__ = version
        self.version = type("V", (), {"hip": None, "cuda": "12.6"})()
        self.cuda = type("C", (), {
            "get_device_capability": staticmethod(lambda i: capability),
            "get_device_name": staticmethod(lambda i: "NVIDIA Tesla P100-PCIE-16GB")})()


@pytest.mark.parametrize(("version", "capability", "reason"), [
    ("2.5.1+cu121", (6, 0), "needs compute capability 7.0 or later; cuda:0 is 6.0 (torch.compile "
                            "arrived in torch 2.0; Triton"),
    ("1.13.1+cu117", (8, 0), "needs torch 2.0 or later; this is 1.13.1+cu117"),
], ids=["p100", "torch-1.13"])
def test_torch_compile_is_a_skip_where_the_platform_cannot_compile(
        version: str, capability: tuple[int, int], reason: str) -> None:
    torch = _FakeCudaTorch(version, capability)
    result = _probe.run_one(torch, {"name": "torch_compile", "check": "torch_compile",
                                    "device": "cuda:0", "required": True}, True)
    assert result["status"] == "skip", result
    assert result["reason"].startswith(reason)


@pytest.mark.parametrize(("needs", "version", "capability", "unmet"), [
    (_probe.Needs(capability=(7, 0)), "2.7.1", (7, 0), None),
    (_probe.Needs(capability=(7, 0)), "2.7.1", (6, 1), "needs compute capability 7.0"),
    (_probe.Needs(capability=(7, 0)), "2.7.1", None, None),  # the CPU, ROCm: not judged
    (_probe.Needs(torch=(2, 3)), "2.3.0a0+gitabc", None, None),
    (_probe.Needs(torch=(2, 3)), "2.2.2", None, "needs torch 2.3 or later; this is 2.2.2"),
    (_probe.Needs(torch=(2, 3)), "weird", None, "needs torch 2.3 or later; this is weird"),
], ids=["cc-equal", "cc-below", "cc-unknown", "torch-prerelease", "torch-below",
        "torch-unreadable"])
def test_unmet_needs(needs: _probe.Needs, version: str, capability: tuple[int, int] | None,
                     unmet: str | None) -> None:
    got = _probe.unmet_need(needs, torch_version=version, device="cuda:0",
                            capability=capability)
    assert got == unmet if unmet is None else (got or "").startswith(unmet)


@pytest.mark.parametrize("version", ["2.7.1", "2.7.1+cu128", "2.8.0.dev20250512+cpu",
                                     "2.6.0a0+ecf3bae40a.nv25.01", "1.13.1+cu117", "2.10.0rc1",
                                     "10.2"])
def test_the_probes_torch_release_is_torchenvs(version: str) -> None:
    from torchenv.values import TorchVersion

    release = TorchVersion(version).release
    assert _probe.torch_release(version) == (*release, 0, 0, 0)[:3]


def test_a_factory_overclocked_card_above_its_catalogued_peak_passes_within_its_own_clocks(
        ) -> None:
    """An overclocked RTX 4090 beats the catalogue's rated-boost figure; its own maximum clock
    (NVML) says how far it can go, so a figure within that is a pass, not a broken timing."""
    result = CheckResult(name="perf", status="pass", device="cuda:0", required=False,
                         metrics={"gpu_name": "NVIDIA GeForce RTX 4090", "capability": "8.9",
                                  "sm_count": 128, "tflops": {"fp16": 178.0, "bf16": 176.0}})
    peaks = {"fp16_tflops": 165.2, "bf16_tflops": 165.2, "memory_bandwidth_gbs": None}
    judged = compare_with_peak(result, lambda name: peaks, max_sm_clock_mhz=3105)
    assert judged.status == "pass", judged.error
    assert judged.metrics["tensor_ceiling_tflops"] == pytest.approx(128 * 3105e6 * 1024 / 1e12,
                                                                    abs=0.1)
    # the same card timed wrongly: above what 128 SMs at 3105 MHz can do
    wrong = replace(result, metrics={**result.metrics, "tflops": {"fp16": 600.0}})
    judged = compare_with_peak(wrong, lambda name: peaks, max_sm_clock_mhz=3105)
    assert judged.status == "fail" and "more than the GPU can do" in (judged.error or "")
    assert "128 SMs at 3105 MHz" in (judged.error or "")


def test_every_expected_figure_names_a_known_source() -> None:
    from torchenv.validation.expected import load_expected, tensor_ceiling_tflops

    expected = load_expected()
    assert expected.tensor_flops_per_clock_per_sm["9.0"] == 4096
    # the table's own check: H100 SXM5, 132 SMs at 1830 MHz, is NVIDIA's 989.4 TFLOP/s
    assert tensor_ceiling_tflops("9.0", 132, 1830) == pytest.approx(989.4, abs=0.1)
    assert tensor_ceiling_tflops("6.1", 28, 1900) is None
    assert all(url.startswith("https://") for url in expected.sources.values())


@pytest.mark.parametrize(("loaded", "wanted", "problem"), [
    ((9, 1, 0), (9, 1, 0, 70), None),
    ((2, 21, 5), (2, 21, 5), None),
    ((8, 9, 2), (9, 1, 0, 70), "cuDNN 8.9.2 is loaded, but pip's nvidia-cudnn-cu12 is 9.1.0.70"),
    ((2, 18, 1), (2, 21, 5), "cuDNN 2.18.1 is loaded, but pip's nvidia-cudnn-cu12 is 2.21.5"),
], ids=["cudnn-same", "nccl-same", "cudnn-shadowed", "older"])
def test_a_loaded_library_is_judged_against_the_wheel(
        loaded: tuple[int, ...], wanted: tuple[int, ...], problem: str | None) -> None:
    assert _probe.library_mismatch("cuDNN", loaded, wanted,
                                   "pip's nvidia-cudnn-cu12") == problem


@pytest.mark.parametrize(("text", "numbers"), [("9.1.0.70", (9, 1, 0, 70)),
                                                ("2.21.5", (2, 21, 5)), ("12.8.61rc1", (12, 8, 61)),
                                                ("x", ())])
def test_version_numbers_of_a_distribution(text: str, numbers: tuple[int, ...]) -> None:
    assert _probe.version_tuple(text) == numbers


class _CudnnTorch:
    """A CUDA build whose loaded cuDNN is not the one it was built with."""

    def __init__(self, runtime: tuple[int, int, int], compiled: tuple[int, int, int]) -> None:
        self.__version__ = "2.7.1+cu126"
        self.version = type("V", (), {"hip": None, "cuda": "12.6"})()
        cudnn = type("D", (), {"getRuntimeVersion": staticmethod(lambda: runtime),
                               "getCompileVersion": staticmethod(lambda: compiled)})()
        self._C = type("C", (), {"_cudnn": cudnn})()
        self.cuda = type("Cu", (), {"nccl": type("N", (), {
            "version": staticmethod(lambda: (2, 21, 5))})()})()


def test_a_cudnn_other_than_the_builds_fails_the_library_check() -> None:
    entry = {"name": "cuda_libraries", "check": "cuda_libraries", "device": "cpu",
             "required": True}
    bad = _probe.run_one(_CudnnTorch((8, 9, 7), (9, 1, 0)), entry, True)
    assert bad["status"] == "fail", bad
    assert "cuDNN 8.9.7 is loaded, but torch was built with 9.1.0" in bad["error"]
    good = _probe.run_one(_CudnnTorch((9, 1, 0), (9, 1, 0)), entry, True)
    assert good["status"] == "pass" and "cuDNN 9.1.0 (built with 9.1.0)" in good["detail"]
