"""What only a machine with an NVIDIA GPU can show (``pytest -m gpu``; skipped elsewhere).

tools/gpu-check.sh runs these with the rest of the GPU checks."""

from __future__ import annotations

import pytest
from tests.validation.helpers import by_name, has_cuda_gpu, load, run_cli

pytestmark = [pytest.mark.gpu, pytest.mark.slow,
              pytest.mark.skipif(not has_cuda_gpu(), reason="no NVIDIA GPU on this host")]

# these tests are about the real machine: detection may use its driver (empty = unset, so the
# suite's hermetic defaults do not apply)
REAL = {"TORCHENV_NVML_LIBRARY": "", "TORCHENV_PROBE_ROOT": "", "TORCHENV_NVIDIA_SMI": ""}


def test_forced_tf32_of_ngc_containers_passes_as_tf32_and_says_so() -> None:
    proc = run_cli("validate", "--json", env={**REAL, "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE": "1"})
    checks = by_name(load(proc.stdout))
    assert checks["matmul"]["status"] == "pass", checks["matmul"]
    assert "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE" in checks["matmul"]["detail"]
    assert checks["autograd"]["status"] == "pass", checks["autograd"]


def test_hidden_gpus_fail_build_with_the_reason() -> None:
    proc = run_cli("validate", "--json", env={**REAL, "CUDA_VISIBLE_DEVICES": ""})
    assert proc.returncode == 1
    checks = by_name(load(proc.stdout))
    build = checks["build"]
    assert build["status"] == "fail"
    assert "is_available() is False" in build["error"]
    assert "CUDA_VISIBLE_DEVICES" in build["hint"] or "doctor" in build["hint"]


def test_every_gpu_is_named_and_its_perf_is_a_real_measurement() -> None:
    proc = run_cli("validate", "--level", "full", "--json", env=REAL, timeout=900)
    doc = load(proc.stdout)
    checks = by_name(doc)
    assert checks["device_count"]["status"] in ("pass", "skip"), checks["device_count"]
    perf = [c for c in doc["checks"] if c["name"].startswith("perf")]
    assert perf
    for c in perf:
        assert c["status"] == "pass", c
        gpu = c["metrics"]["gpu"]
        assert gpu["uuid"].startswith("GPU-") and gpu["pci_bus_id"]
        for key in ("fp16_fraction_of_peak", "bf16_fraction_of_peak"):
            if key in c["metrics"]:
                assert 0.5 <= c["metrics"][key] <= 1.15, c
