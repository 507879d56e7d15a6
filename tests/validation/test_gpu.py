"""What only a machine with an NVIDIA GPU can show (``pytest -m gpu``; skipped elsewhere).

Each test asserts a value a broken install gets wrong. They judge one full-level report, shared
(``TORCHENV_GPU_TEST_FULL_REPORT`` names one already written, as tools/gpu-check.sh does; else
the first test that needs it runs ``validate --level full`` once), against what torch and NVML
say directly. Collection needs nothing optional: torch and nvidia-ml-py are imported by the
children and fixtures that use them.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.validation.helpers import by_name, check_contract, has_cuda_gpu, load, run_cli

from torchenv.validation import _probe

pytestmark = [pytest.mark.gpu, pytest.mark.slow,
              pytest.mark.skipif(not has_cuda_gpu(), reason="no NVIDIA GPU on this host")]

# these tests are about the real machine: detection may use its driver (empty = unset, so the
# suite's hermetic defaults do not apply)
REAL = {"TORCHENV_NVML_LIBRARY": "", "TORCHENV_PROBE_ROOT": "", "TORCHENV_NVIDIA_SMI": ""}
REPORT_ENV = "TORCHENV_GPU_TEST_FULL_REPORT"

_TORCH_FACTS = r"""
import json, torch
devices = []
for i in range(torch.cuda.device_count()):
    p = torch.cuda.get_device_properties(i)
    with torch.cuda.device(i):
        try:
            bf16 = torch.cuda.is_bf16_supported(including_emulation=False)
        except TypeError:
            bf16 = torch.cuda.is_bf16_supported()
    uuid = str(getattr(p, "uuid", "") or "")
    devices.append({"name": p.name, "capability": [p.major, p.minor],
                    "sm_count": p.multi_processor_count, "bf16": bool(bf16),
                    "uuid": uuid if uuid.startswith("GPU-") or not uuid else "GPU-" + uuid})
cudnn = torch.backends.cudnn
print(json.dumps({"torch": torch.__version__, "cuda": torch.version.cuda,
                  "devices": devices, "arch_list": torch.cuda.get_arch_list(),
                  "cudnn_runtime": cudnn.version() if cudnn.is_available() else None,
                  "cudnn_compiled": getattr(torch._C, "_cudnn", None)
                  and torch._C._cudnn.getCompileVersion(),
                  "nccl_built_in": hasattr(torch._C, "_nccl_version")}))
"""


@pytest.fixture(scope="module")
def full() -> dict[str, Any]:
    """The full-level report: the one named by TORCHENV_GPU_TEST_FULL_REPORT, or a fresh run."""
    given = os.environ.get(REPORT_ENV)
    if given:
        doc: dict[str, Any] = json.loads(Path(given).read_text("utf-8"))
        check_contract(doc)
        return doc
    proc = run_cli("validate", "--level", "full", "--json", env=REAL, timeout=900)
    return load(proc.stdout)


@pytest.fixture(scope="module")
def facts() -> dict[str, Any]:
    """What torch says about the devices, asked in a child (no CUDA context in pytest)."""
    proc = subprocess.run([sys.executable, "-c", _TORCH_FACTS], capture_output=True, text=True,
                          timeout=300, check=False)
    if proc.returncode != 0 and "No module named 'torch'" in proc.stderr:
        pytest.skip("torch is not installed in this interpreter")
    assert proc.returncode == 0, proc.stderr
    doc: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return doc


@pytest.fixture(scope="module")
def nvml() -> list[dict[str, Any]]:
    """Every GPU as NVML lists it: name, UUID, capability, maximum SM clock, MIG mode."""
    pynvml = pytest.importorskip("pynvml")
    pynvml.nvmlInit()
    try:
        gpus = []
        for i in range(pynvml.nvmlDeviceGetCount()):
            h = pynvml.nvmlDeviceGetHandleByIndex(i)
            try:
                mig = bool(pynvml.nvmlDeviceGetMigMode(h)[0])
            except pynvml.NVMLError:
                mig = False
            uuid = pynvml.nvmlDeviceGetUUID(h)
            gpus.append({"index": i, "uuid": uuid.decode() if isinstance(uuid, bytes) else uuid,
                         "capability": list(pynvml.nvmlDeviceGetCudaComputeCapability(h)),
                         "max_sm_clock_mhz": pynvml.nvmlDeviceGetMaxClockInfo(
                             h, pynvml.NVML_CLOCK_SM), "mig": mig})
        return gpus
    finally:
        pynvml.nvmlShutdown()


def _whole_gpus_all_visible(nvml: list[dict[str, Any]]) -> bool:
    return os.environ.get("CUDA_VISIBLE_DEVICES") is None and not any(g["mig"] for g in nvml)


def _named(doc: dict[str, Any], base: str) -> list[dict[str, Any]]:
    """Results of one check on every device: ``perf``, ``perf[cuda:1]``, ..."""
    return [c for c in doc["checks"] if c["name"] == base or c["name"].startswith(base + "[")]


def test_the_full_level_is_ok(full: dict[str, Any]) -> None:
    failed = [(c["name"], c.get("error")) for c in full["checks"]
              if c["status"] == "fail" and c["required"]]
    assert full["ok"] is True and not failed, failed


def test_no_check_is_skipped_for_want_of_a_gpu(full: dict[str, Any]) -> None:
    """A CPU build, or GPUs hidden from torch, turns the GPU checks into 'no CUDA device'."""
    missing = [c["name"] for c in full["checks"]
               if c["status"] == "skip" and c.get("reason") == _probe.NO_CUDA]
    assert missing == []


def test_torch_sees_every_gpu_nvml_lists(full: dict[str, Any], facts: dict[str, Any],
                                         nvml: list[dict[str, Any]]) -> None:
    if not _whole_gpus_all_visible(nvml):
        pytest.skip("CUDA_VISIBLE_DEVICES or MIG: torch need not see every GPU NVML lists")
    assert len(facts["devices"]) == len(nvml)
    assert by_name(full)["import_torch"]["metrics"]["cuda_devices"] == len(nvml)
    assert by_name(full)["device_count"]["status"] == "pass", by_name(full)["device_count"]


def test_torch_and_nvml_name_the_same_gpus(facts: dict[str, Any],
                                           nvml: list[dict[str, Any]]) -> None:
    if not _whole_gpus_all_visible(nvml):
        pytest.skip("CUDA_VISIBLE_DEVICES or MIG: torch need not see every GPU NVML lists")
    torch_uuids = sorted(d["uuid"] for d in facts["devices"])
    if not all(torch_uuids):
        pytest.skip("this torch does not report device UUIDs")
    assert torch_uuids == sorted(g["uuid"] for g in nvml)


def test_the_arch_list_covers_every_gpus_capability(full: dict[str, Any],
                                                    facts: dict[str, Any]) -> None:
    for i, device in enumerate(facts["devices"]):
        major, minor = device["capability"]
        runs = [a for a in facts["arch_list"] if _probe.arch_runs(a, major, minor)]
        assert runs, f"cuda:{i} sm_{major}{minor} not in {facts['arch_list']}"
    arch = _named(full, "cuda_arch")
    assert len(arch) == len(facts["devices"])
    assert all(c["status"] == "pass" for c in arch), arch


def test_bf16_support_follows_the_capability(full: dict[str, Any],
                                             facts: dict[str, Any]) -> None:
    """bf16 in hardware from compute capability 8.0 on; the AMP check trains in bf16 exactly
    there (a build or check that emulates it, or misses it, gets this wrong)."""
    for device in facts["devices"]:
        assert device["bf16"] is (tuple(device["capability"]) >= (8, 0)), device
    amp = by_name(full)["amp"]
    assert amp["status"] == "pass", amp
    assert ("bfloat16" in amp["detail"]) is facts["devices"][0]["bf16"], amp["detail"]


def test_perf_is_within_the_bounds_of_each_gpus_own_clocks(
        full: dict[str, Any], facts: dict[str, Any], nvml: list[dict[str, Any]]) -> None:
    """Below the most the GPU can do at its own maximum SM clock (a timing that misses the
    work is faster than that), and above a quarter of it (a throttled or wrong-path GPU)."""
    from torchenv.validation.expected import tensor_ceiling_tflops

    perf = _named(full, "perf")
    assert len(perf) == len(facts["devices"])
    clocks = {g["uuid"]: g["max_sm_clock_mhz"] for g in nvml}
    judged = 0
    for c in perf:
        assert c["status"] == "pass", c
        m = c["metrics"]
        clock = clocks.get(m["gpu"].get("uuid"))
        ceiling = clock and tensor_ceiling_tflops(m["capability"], m["sm_count"], clock)
        if not ceiling:
            continue
        for dtype in ("fp16", "bf16"):
            if dtype in m["tflops"]:
                assert 0.25 * ceiling <= m["tflops"][dtype] <= 1.02 * ceiling, (dtype, m)
                judged += 1
    if not judged:
        pytest.skip("no GPU here has a tensor rate in expected.yaml")


def test_cudnn_at_run_time_is_the_one_torch_was_built_with(facts: dict[str, Any]) -> None:
    """A cuDNN from another major release on the library path breaks convolutions."""
    runtime, compiled = facts["cudnn_runtime"], facts["cudnn_compiled"]
    assert runtime, "cuDNN is not available in this CUDA build"
    if not compiled:
        pytest.skip("this torch does not report the cuDNN it was built with")
    compiled_major = compiled[0] if isinstance(compiled, (list, tuple)) else compiled // 10000
    runtime_major = runtime // 10000 if runtime >= 10000 else runtime // 1000
    assert runtime_major == compiled_major, (runtime, compiled)


def test_a_device_side_assert_surfaces_as_an_error() -> None:
    code = ("import torch\nx = torch.zeros(4, device='cuda')\n"
            "try:\n    x[torch.tensor([7], device='cuda')] = 1.0\n    torch.cuda.synchronize()\n"
            "except RuntimeError as e:\n    print('raised:', 'device-side assert' in str(e))\n"
            "else:\n    print('not raised')\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, check=False)
    assert "raised: True" in proc.stdout, proc.stdout + proc.stderr[-2000:]


def test_nccl_runs_on_every_gpu(full: dict[str, Any], facts: dict[str, Any]) -> None:
    n = len(facts["devices"])
    if n < 2:
        pytest.skip("NCCL collectives need 2 GPUs")
    checks = by_name(full)
    for name in ("nccl_allreduce", "nccl_broadcast", "nccl_allgather"):
        assert checks[name]["status"] == "pass", checks[name]
        assert f"({n} local ranks agree)" in checks[name]["detail"]


def test_nccl_bus_bandwidth_is_above_the_transports_floor(full: dict[str, Any],
                                                          facts: dict[str, Any]) -> None:
    if len(facts["devices"]) < 2:
        pytest.skip("bus bandwidth needs 2 GPUs")
    bw = by_name(full)["nccl_bus_bandwidth"]
    assert bw["status"] == "pass", bw
    m = bw["metrics"]
    if m.get("expected_busbw_gbs") is None:
        pytest.skip(f"the path is not judged: {m.get('path')}")
    assert m["busbw_gbs"] >= m["floor_busbw_gbs"] > 0, m


def test_forced_tf32_of_ngc_containers_passes_as_tf32_and_says_so() -> None:
    proc = run_cli("validate", "--json", "--only", "matmul,autograd",
                   env={**REAL, "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE": "1"})
    checks = by_name(load(proc.stdout))
    assert checks["matmul"]["status"] == "pass", checks["matmul"]
    assert "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE" in checks["matmul"]["detail"]
    assert checks["autograd"]["status"] == "pass", checks["autograd"]


def test_hidden_gpus_fail_build_with_the_reason() -> None:
    proc = run_cli("validate", "--json", "--only", "build",
                   env={**REAL, "CUDA_VISIBLE_DEVICES": ""})
    assert proc.returncode == 1
    build = by_name(load(proc.stdout))["build"]
    assert build["status"] == "fail"
    assert "is_available() is False" in build["error"]
    assert "CUDA_VISIBLE_DEVICES" in build["hint"] or "doctor" in build["hint"]


def test_the_nccl_torch_is_built_with_answers(full: dict[str, Any],
                                              facts: dict[str, Any]) -> None:
    """A build with NCCL names its version; a broken one is 'unreadable', never 'no NCCL'."""
    build = by_name(full)["build"]
    assert build["status"] == "pass", build
    if not facts["nccl_built_in"]:
        assert "no NCCL" in build["detail"], build["detail"]
        pytest.skip("this torch is built without NCCL")
    assert re.search(r"NCCL [0-9]+\.[0-9]+\.[0-9]+", build["detail"]), build["detail"]


def test_the_cuda_runtime_and_cublas_loaded_serve_the_build(full: dict[str, Any],
                                                            facts: dict[str, Any]) -> None:
    """The libcudart and libcublas mapped into the probe are of torch's CUDA major version,
    and the runtime is not older than the build."""
    libs = by_name(full)["cuda_libraries"]
    assert libs["status"] == "pass", libs
    metrics = libs.get("metrics", {})
    compiled = tuple(int(p) for p in facts["cuda"].split(".")[:2])
    assert metrics.get("cuda") == ".".join(map(str, compiled)), metrics
    judged = 0
    if "cudart" in metrics:
        runtime = tuple(int(p) for p in metrics["cudart"].split("."))
        assert runtime[0] == compiled[0] and runtime >= compiled, (runtime, compiled)
        judged += 1
    if "cublas" in metrics:
        assert int(metrics["cublas"].split(".")[0]) == compiled[0], metrics
        judged += 1
    if not judged:
        pytest.skip("no separate libcudart or libcublas is loaded: " + libs["detail"])


def test_a_cuda_extension_built_by_nvcc_runs_on_the_gpu(full: dict[str, Any]) -> None:
    ext = by_name(full)["cuda_extension"]
    if ext["status"] == "skip" and ext["reason"].startswith(("no CUDA toolkit", "ninja")):
        pytest.skip(ext["reason"])
    assert ext["status"] == "pass", ext
    assert "agree with the CPU" in ext["detail"] and "cuda:0" in ext["detail"], ext


def test_xids_are_watched_before_and_during_the_run(full: dict[str, Any],
                                                    nvml: list[dict[str, Any]]) -> None:
    """Every GPU NVML lists has its Xid check; where events could be registered, both the
    events waiting at the start and those during the run were read, and there were none."""
    xid = _named(full, "health_xid")
    assert len(xid) == len(nvml), [c["name"] for c in xid]
    watched = [c for c in xid if c["status"] != "skip"]
    if not watched:
        pytest.skip("the driver registers no Xid events here: " + xid[0]["reason"])
    for c in watched:
        assert c["status"] == "pass", c
        assert c["metrics"]["xid_before"] == [] and c["metrics"]["xid_events"] == [], c
