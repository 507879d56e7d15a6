"""Node health checks through the real nvidia-ml-py against the stand-in libnvidia-ml.so.1.

Each case builds a node from the stand-in's FAKE_NVML_* variables (tests/detection/fake_nvml.c
documents them) and runs :func:`node_health` in a child process, so every case loads the library
afresh, as a real run does.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Optional

import pytest
from tests.detection.detection_helpers import build_fake_nvml, clean_env
from tests.validation.helpers import check_contract

from torchenv.validation.health import SHM_FLOOR_BYTES, judge_shm, read_shm

H200 = "NVIDIA H200:9.0:143771:0"
GPU0 = "GPU 0 (NVIDIA H200, GPU-00000000-0000-0000-0000-000000000000, 00000000:01:00.0)"
GPU_CHECKS = ("ecc", "memory_remap", "clocks", "pcie", "nvlink", "persistence", "compute_mode",
              "mig", "occupancy")

_CHILD = """
import json, sys
from torchenv.validation.health import node_health
from torchenv.validation.report import Report
checks = node_health(shm_path=sys.argv[1], timeout=float(sys.argv[2]))
print(json.dumps(Report(python=sys.executable, torch=None, level="full",
                        checks=tuple(checks)).to_json()))
"""

Build = Callable[..., Path]


@pytest.fixture(scope="module")
def stand_in(tmp_path_factory: pytest.TempPathFactory) -> Build:
    """Builds (once per variant) the stand-in library; returns its path."""
    compiler = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if compiler is None:
        pytest.skip("no C compiler (cc/gcc/clang) to build the stand-in libnvidia-ml.so.1")
    if not sys.platform.startswith("linux"):
        pytest.skip("the stand-in NVML library is a Linux shared object")
    built: dict[Optional[str], Path] = {}

    def build(omit: Optional[str] = None) -> Path:
        if omit not in built:
            out = tmp_path_factory.mktemp(f"health-nvml-{omit or 'full'}")
            built[omit] = build_fake_nvml(compiler, out, omit)
        return built[omit]

    return build


def run_health(library: str, gpus: str = H200, *, timeout: float = 30.0,
               shm: str = "/dev/shm", **fake: str) -> dict[str, dict[str, Any]]:
    """``node_health()`` in a child; ``fake`` are FAKE_NVML_* settings without the prefix."""
    env = clean_env(TORCHENV_NVML_LIBRARY=library, FAKE_NVML_GPUS=gpus,
                    **{f"FAKE_NVML_{key.upper()}": value for key, value in fake.items()})
    proc = subprocess.run([sys.executable, "-c", _CHILD, shm, str(timeout)], env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    check_contract(doc)
    return {c["name"]: c for c in doc["checks"]}


def gpu_checks(results: dict[str, dict[str, Any]], index: int = 0) -> dict[str, dict[str, Any]]:
    return {name: results[f"health_{name}[gpu{index}]"] for name in GPU_CHECKS}


def one(stand_in: Build, check: str, *, omit: Optional[str] = None, gpus: str = H200,
        **fake: str) -> dict[str, Any]:
    return run_health(str(stand_in(omit)), gpus, **fake)[f"health_{check}[gpu0]"]


def assert_fail(result: dict[str, Any], required: bool, *texts: str) -> None:
    assert result["status"] == "fail", result
    assert result["required"] is required, result
    assert result["error"].startswith(GPU0), result
    assert result["hint"]
    for text in texts:
        assert text in result["error"], result


def assert_skip(result: dict[str, Any], *texts: str) -> None:
    assert result["status"] == "skip", result
    for text in texts:
        assert text in result["reason"], result


# ----------------------------------------------------------------------------- a healthy node

def test_a_healthy_gpu_passes_every_check_it_can_prove(stand_in: Build) -> None:
    results = run_health(str(stand_in()), NVLINK="1,1,1,1")
    checks = gpu_checks(results)
    assert {name: c["status"] for name, c in checks.items()} == dict.fromkeys(GPU_CHECKS, "pass")
    for c in checks.values():
        assert c["detail"].startswith(GPU0)
        assert c["device"] == "gpu0" and c["level"] == "full"
        assert {k: c["metrics"][k] for k in ("gpu_index", "uuid", "pci_bus_id")} == {
            "gpu_index": 0, "uuid": "GPU-00000000-0000-0000-0000-000000000000",
            "pci_bus_id": "00000000:01:00.0"}
    assert "health_nvml" not in results
    assert "health_shm" in results
    assert [name for name in results if name.startswith("health_")
            and name != "health_shm"] == [f"health_{n}[gpu0]" for n in GPU_CHECKS]


def test_each_gpu_is_judged_and_named_on_its_own(stand_in: Build) -> None:
    gpus = ";".join([H200] * 3)
    results = run_health(str(stand_in()), gpus, ECC_UNCORRECTED="0/0;0/0;4/4")
    assert [results[f"health_ecc[gpu{i}]"]["status"] for i in range(3)] == [
        "pass", "pass", "fail"]
    error = results["health_ecc[gpu2]"]["error"]
    assert error.startswith("GPU 2 (NVIDIA H200, GPU-00000000-0000-0000-0000-000000000002, "
                            "00000000:03:00.0)")
    assert results["health_ecc[gpu2]"]["device"] == "gpu2"


# ----------------------------------------------------------------------------- ECC

def test_ecc_records_mode_and_counts(stand_in: Build) -> None:
    c = one(stand_in, "ecc")
    assert c["status"] == "pass"
    assert "ECC on" in c["detail"]
    assert {k: c["metrics"][k] for k in ("ecc_enabled", "ecc_volatile_uncorrected",
                                         "ecc_aggregate_uncorrected")} == {
        "ecc_enabled": True, "ecc_volatile_uncorrected": 0, "ecc_aggregate_uncorrected": 0}


@pytest.mark.parametrize(("counts", "required", "texts"), [
    ("2/2", True, ("2 since the driver loaded", "2 in the GPU's lifetime")),
    ("0/3", False, ("0 since the driver loaded", "3 in the GPU's lifetime")),
], ids=["volatile-required", "aggregate-only-advisory"])
def test_uncorrectable_ecc_errors_fail(stand_in: Build, counts: str, required: bool,
                                       texts: tuple[str, ...]) -> None:
    """Errors since the driver loaded fail the node; older ones alone are advisory, since row
    remapping or page retirement usually absorbed them (health_memory_remap judges that)."""
    assert_fail(one(stand_in, "ecc", ECC_UNCORRECTED=counts), required, "uncorrectable", *texts)


def test_ecc_off_proves_nothing(stand_in: Build) -> None:
    assert_skip(one(stand_in, "ecc", ECC_MODE="0/1"), "ECC is off", "turns on at the next reboot")


@pytest.mark.parametrize(("fake", "texts"), [
    ({"ECC_MODE": "err:3"}, ("not supported", "nvmlDeviceGetEccMode")),
    ({"ECC_UNCORRECTED": "err:3"}, ("not supported", "nvmlDeviceGetTotalEccErrors")),
    ({"ECC_UNCORRECTED": "err:999"}, ("unknown:", "nvmlDeviceGetTotalEccErrors")),
], ids=["mode-not-supported", "counts-not-supported", "counts-unknown"])
def test_ecc_that_cannot_be_read_is_a_skip(stand_in: Build, fake: dict[str, str],
                                           texts: tuple[str, ...]) -> None:
    assert_skip(one(stand_in, "ecc", **fake), *texts)


# ----------------------------------------------------------------------------- memory repair

@pytest.mark.parametrize(("fake", "texts"), [
    ({"REMAPPED_ROWS": "0/1/1/0"}, ("row remap is pending",)),
    ({"REMAPPED_ROWS": "0/7/0/1"}, ("row remapping failed",)),
    ({"RETIRED_PENDING": "1"}, ("retired pages are pending",)),
], ids=["remap-pending", "remap-failed", "retired-pages-pending"])
def test_pending_or_failed_memory_repair_fails(stand_in: Build, fake: dict[str, str],
                                               texts: tuple[str, ...]) -> None:
    assert_fail(one(stand_in, "memory_remap", **fake), True, *texts)


def test_memory_repair_passes_with_either_mechanism(stand_in: Build) -> None:
    rows_only = one(stand_in, "memory_remap", RETIRED_PENDING="err:3", REMAPPED_ROWS="3/1/0/0")
    assert rows_only["status"] == "pass"
    assert "3 rows remapped after correctable, 1 after uncorrectable" in rows_only["detail"]
    pages_only = one(stand_in, "memory_remap", omit="nvmlDeviceGetRemappedRows")
    assert pages_only["status"] == "pass"
    assert "page retirement: none pending" in pages_only["detail"]


@pytest.mark.parametrize(("fake", "texts"), [
    ({"RETIRED_PENDING": "err:3", "REMAPPED_ROWS": "err:3"}, ("not supported",)),
    ({"RETIRED_PENDING": "err:3", "REMAPPED_ROWS": "err:999"},
     ("unknown:", "nvmlDeviceGetRemappedRows")),
], ids=["neither-supported", "rows-unknown"])
def test_memory_repair_that_cannot_be_read_is_a_skip(stand_in: Build, fake: dict[str, str],
                                                     texts: tuple[str, ...]) -> None:
    assert_skip(one(stand_in, "memory_remap", **fake), *texts)


# ----------------------------------------------------------------------------- clocks

@pytest.mark.parametrize(("reasons", "required", "text"), [
    ("0x8", True, "HW slowdown"),
    ("0x48", True, "HW thermal slowdown"),
    ("0x88", True, "HW power brake slowdown"),
    ("0x4", False, "SW power cap"),
    ("0x20", False, "SW thermal slowdown"),
    ("0x24", False, "SW power cap"),
    ("0x4c", True, "SW power cap"),
], ids=["hw-slowdown", "hw-thermal", "hw-power-brake", "sw-power-cap", "sw-thermal",
        "sw-both", "hw-and-sw"])
def test_clock_slowdowns(stand_in: Build, reasons: str, required: bool, text: str) -> None:
    assert_fail(one(stand_in, "clocks", CLOCK_REASONS=reasons), required, text)


def test_clocks_record_sm_clock_against_its_maximum(stand_in: Build) -> None:
    c = one(stand_in, "clocks", CLOCK_REASONS="0x1", SM_CLOCK="345/1980")
    assert c["status"] == "pass"
    assert "SM clock 345 of 1980 MHz" in c["detail"] and "idle" in c["detail"]
    assert (c["metrics"]["sm_clock_mhz"], c["metrics"]["sm_clock_max_mhz"]) == (345, 1980)
    assert c["metrics"]["clock_reason_names"] == ["idle"]


def test_clocks_fall_back_to_throttle_reasons_on_older_drivers(stand_in: Build) -> None:
    c = one(stand_in, "clocks", omit="nvmlDeviceGetCurrentClocksEventReasons",
            CLOCK_REASONS="0x48")
    assert_fail(c, True, "HW thermal slowdown")


def test_clock_reasons_not_supported_is_a_skip(stand_in: Build) -> None:
    assert_skip(one(stand_in, "clocks", CLOCK_REASONS="err:3"), "not supported")


# ----------------------------------------------------------------------------- PCIe

@pytest.mark.parametrize(("pcie", "text"), [
    ("5/5/8/16", "width x8 of x16"),
    ("3/5/16/16", "gen 3 of 5"),
], ids=["narrow", "slow"])
def test_a_downtrained_pcie_link_is_advisory(stand_in: Build, pcie: str, text: str) -> None:
    assert_fail(one(stand_in, "pcie", PCIE=pcie), False, text)


def test_an_idle_gpus_slow_link_cannot_be_judged(stand_in: Build) -> None:
    assert_skip(one(stand_in, "pcie", PCIE="1/5/16/16", CLOCK_REASONS="0x1"),
                "gen 1 of 5 while the GPU is idle", "width x16 of x16")


def test_pcie_records_the_link(stand_in: Build) -> None:
    c = one(stand_in, "pcie", PCIE="4/4/16/16")
    assert c["status"] == "pass"
    assert "PCIe gen 4 of 4, width x16 of x16" in c["detail"]


def test_pcie_not_supported_is_a_skip(stand_in: Build) -> None:
    assert_skip(one(stand_in, "pcie", PCIE="err:3"), "not supported")


# ----------------------------------------------------------------------------- NVLink

def test_no_nvlink_is_a_skip(stand_in: Build) -> None:
    assert_skip(one(stand_in, "nvlink"), "this GPU has no NVLink")


def test_a_down_nvlink_is_advisory(stand_in: Build) -> None:
    c = one(stand_in, "nvlink", NVLINK="1,0,1,1,0,1")
    assert_fail(c, False, "links 1, 4 down", "4 of 6 NVLink links up")
    assert c["metrics"]["nvlink_down"] == [1, 4]


def test_nvlink_failure_is_unknown(stand_in: Build) -> None:
    assert_skip(one(stand_in, "nvlink", NVLINK="err:999"), "unknown:", "nvmlDeviceGetNvLinkState")


# ----------------------------------------------------------------------------- modes

def test_persistence_off_is_advisory(stand_in: Build) -> None:
    assert_fail(one(stand_in, "persistence", PERSISTENCE="0"), False, "persistence mode is off")


@pytest.mark.parametrize(("mode", "required", "text"), [
    ("2", True, "Prohibited"),
    ("3", False, "Exclusive_Process"),
], ids=["prohibited", "exclusive-process"])
def test_compute_modes(stand_in: Build, mode: str, required: bool, text: str) -> None:
    assert_fail(one(stand_in, "compute_mode", COMPUTE_MODE=mode), required, text)


def test_mig_on_is_advisory(stand_in: Build) -> None:
    c = one(stand_in, "mig", gpus="NVIDIA H200:9.0:143771:1")
    assert_fail(c, False, "MIG is on")
    assert c["metrics"]["mig_enabled"] is True


def test_a_gpu_without_mig_is_a_skip(stand_in: Build) -> None:
    assert_skip(one(stand_in, "mig", gpus="NVIDIA GeForce RTX 3090:8.6:24576"),
                "not supported", "nvmlDeviceGetMigMode")


# ----------------------------------------------------------------------------- occupancy

def test_other_processes_are_advisory(stand_in: Build) -> None:
    c = one(stand_in, "occupancy", PROCESSES="4242/2048,4343")
    assert_fail(c, False, "2 other compute processes", "pid 4242 (2048 MiB)", "pid 4343")
    assert [p["pid"] for p in c["metrics"]["processes"]] == [4242, 4343]


def test_little_free_memory_is_advisory(stand_in: Build) -> None:
    c = one(stand_in, "occupancy", MEMORY_USED_MIB="20000")
    assert_fail(c, False, "only 86% of memory free (123771 of 143771 MiB)")


def test_occupancy_without_process_list_judges_memory(stand_in: Build) -> None:
    """A library without the versioned process query (pynvml's version-mismatch error)."""
    c = one(stand_in, "occupancy", omit="nvmlDeviceGetComputeRunningProcesses_v3")
    assert c["status"] == "pass"
    assert "compute processes not reported" in c["detail"]


# ----------------------------------------------------------------------------- NVML failures

def test_nothing_supported_passes_nothing(stand_in: Build) -> None:
    fake = dict.fromkeys(("ECC_MODE", "ECC_UNCORRECTED", "RETIRED_PENDING", "REMAPPED_ROWS",
                          "CLOCK_REASONS", "SM_CLOCK", "PCIE", "NVLINK", "PERSISTENCE",
                          "COMPUTE_MODE", "PROCESSES"), "err:3")
    checks = gpu_checks(run_health(str(stand_in("nvmlDeviceGetMemoryInfo")),
                                   "NVIDIA H200:9.0:143771", MEMORY_USED_MIB="err:3", **fake))
    assert {c["status"] for c in checks.values()} == {"skip"}
    for name, c in checks.items():
        assert ("not supported" if name != "nvlink" else "no NVLink") in c["reason"], c


def test_nvml_errors_are_unknown_never_pass(stand_in: Build) -> None:
    fake = dict.fromkeys(("ECC_MODE", "RETIRED_PENDING", "REMAPPED_ROWS", "CLOCK_REASONS",
                          "PCIE", "NVLINK", "PERSISTENCE", "COMPUTE_MODE", "PROCESSES",
                          "MEMORY_USED_MIB"), "err:999")
    checks = gpu_checks(run_health(str(stand_in()), "NVIDIA H200:9.0:143771", **fake))
    assert {c["status"] for c in checks.values()} == {"skip"}
    checks.pop("mig")  # the stand-in plants no MIG error; see the not-supported case
    for c in checks.values():
        assert "unknown:" in c["reason"], c


def test_a_lost_gpu_fails(stand_in: Build) -> None:
    fake = dict.fromkeys(("ECC_MODE", "RETIRED_PENDING", "REMAPPED_ROWS", "CLOCK_REASONS",
                          "PCIE", "NVLINK", "PERSISTENCE", "COMPUTE_MODE", "PROCESSES",
                          "MEMORY_USED_MIB"), "err:15")
    checks = gpu_checks(run_health(str(stand_in()), **fake))
    for name in ("ecc", "memory_remap", "clocks", "compute_mode"):
        assert_fail(checks[name], True, "GPU is lost")
    for name in ("pcie", "nvlink", "persistence", "occupancy"):
        assert_fail(checks[name], False, "GPU is lost")


@pytest.mark.parametrize(("code", "text"), [
    ("18", "driver/library version mismatch"),
    ("9", "driver is not loaded"),
], ids=["version-mismatch", "driver-not-loaded"])
def test_failed_nvml_init_is_unknown(stand_in: Build, code: str, text: str) -> None:
    results = run_health(str(stand_in()), INIT_ERROR=code)
    assert_skip(results["health_nvml"], "unknown:", text)
    assert [name for name in results if name != "health_shm"] == ["health_nvml"]


def test_a_hung_nvml_is_abandoned(stand_in: Build) -> None:
    start = time.monotonic()
    results = run_health(str(stand_in()), timeout=1, HANG_SECONDS="30")
    assert time.monotonic() - start < 15
    assert_skip(results["health_nvml"], "unknown:", "did not answer within 1 s")
    assert [name for name in results if name != "health_shm"] == ["health_nvml"]


def test_no_gpu_listed_is_a_skip(stand_in: Build) -> None:
    results = run_health(str(stand_in()), "")
    assert_skip(results["health_nvml"], "NVML lists no GPU")


@pytest.mark.parametrize(("setting", "text"), [
    ("off", "NVML is turned off"),
    ("/nonexistent/libnvidia-ml.so.1", "does not exist"),
], ids=["off", "missing"])
def test_nvml_not_used_is_a_skip(setting: str, text: str) -> None:
    results = run_health(setting)
    assert_skip(results["health_nvml"], text)
    assert [name for name in results if name != "health_shm"] == ["health_nvml"]


# ----------------------------------------------------------------------------- /dev/shm

def _statvfs(size: int, free: Optional[int] = None, block: int = 4096) -> os.statvfs_result:
    free = size if free is None else free
    return os.statvfs_result((block, block, size // block, free // block, free // block,
                              1000, 1000, 1000, 0, 255))


def test_a_docker_default_shm_is_advisory() -> None:
    r = judge_shm(_statvfs(64 * 1024 * 1024), linux=True)
    assert (r.name, r.status, r.required) == ("health_shm", "fail", False)
    assert r.error and "/dev/shm is 64 MiB" in r.error and "below 1 GiB" in r.error
    assert r.hint and "--shm-size" in r.hint


def test_a_large_shm_passes() -> None:
    r = judge_shm(_statvfs(16 << 30, free=8 << 30), linux=True)
    assert r.status == "pass"
    assert r.detail == "/dev/shm is 16384 MiB (8192 MiB free)"
    assert r.metrics == {"shm_bytes": 16 << 30, "shm_free_bytes": 8 << 30}
    assert judge_shm(_statvfs(SHM_FLOOR_BYTES), linux=True).status == "pass"
    assert judge_shm(_statvfs(SHM_FLOOR_BYTES - 4096), linux=True).status == "fail"


def test_shm_that_cannot_be_read(tmp_path: Path) -> None:
    missing = read_shm(str(tmp_path / "no-shm"))
    assert isinstance(missing, FileNotFoundError)
    on_linux = judge_shm(missing, linux=True)
    assert (on_linux.status, on_linux.required) == ("fail", False)
    assert on_linux.error and "does not exist" in on_linux.error
    assert judge_shm(missing, linux=False).status == "skip"
    assert judge_shm(None).status == "skip"  # no statvfs on this platform
    denied = judge_shm(PermissionError(13, "Permission denied"), linux=True)
    assert denied.status == "skip" and denied.reason and denied.reason.startswith("unknown:")


def test_shm_reads_the_real_filesystem(stand_in: Build, tmp_path: Path) -> None:
    results = run_health(str(stand_in()), shm=str(tmp_path))
    stat = os.statvfs(tmp_path)
    size = stat.f_blocks * (stat.f_frsize or stat.f_bsize)
    shm = results["health_shm"]
    assert shm["status"] == ("pass" if size >= SHM_FLOOR_BYTES else "fail")
    assert shm["metrics"]["shm_bytes"] == size


_SAMPLER = """
import json, os, time
from torchenv.validation.health import LoadSampler
sampler = LoadSampler(os.environ, interval=0.05)
with sampler.sampling():
    time.sleep(0.5)
print(json.dumps(sampler.seen))
"""


def test_throttle_reasons_are_read_while_the_workload_runs(stand_in: Build) -> None:
    """The sampler ORs every reading per GPU: a HW slowdown on GPU 1 is seen under load."""
    env = clean_env(TORCHENV_NVML_LIBRARY=str(stand_in()), FAKE_NVML_GPUS=f"{H200};{H200}",
                    FAKE_NVML_CLOCK_REASONS="0x4;0x8")
    proc = subprocess.run([sys.executable, "-c", _SAMPLER], env=env, capture_output=True,
                          text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    seen = {int(k): v for k, v in json.loads(proc.stdout).items()}
    assert seen[0][0] == 0x4 and seen[1][0] == 0x8
    assert seen[0][1] >= 3 and seen[1][1] >= 3, seen


_AROUND = """
import json, os, sys
from torchenv.validation.health import XidWatch, node_health, read_gpus
from torchenv.validation.report import Report
before = read_gpus()
xid = XidWatch(os.environ)
xid.start()
after = read_gpus()[0]
xid.collect()
checks = node_health(shm_path=sys.argv[1], readings=before, after=after, under_load={0: (0, 4)},
                     xid=xid)
print(json.dumps(Report(python=sys.executable, torch=None, level="full",
                        checks=tuple(checks)).to_json()))
"""


def test_what_a_driver_cannot_watch_around_the_workload_is_a_skip(stand_in: Build) -> None:
    """The stand-in, like an old driver, has no event sets and no PCIe replay counter: the Xid
    and link-error checks say so; throttling under load is judged from its readings."""
    env = clean_env(TORCHENV_NVML_LIBRARY=str(stand_in()), FAKE_NVML_GPUS=H200)
    proc = subprocess.run([sys.executable, "-c", _AROUND, "/dev/shm"], env=env,
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    check_contract(doc)
    checks = {c["name"]: c for c in doc["checks"]}
    xid = checks["health_xid[gpu0]"]
    assert xid["status"] == "skip" and "nvmlEventSetCreate" in xid["reason"], xid
    links = checks["health_link_errors[gpu0]"]
    assert links["status"] == "skip" and "not supported" in links["reason"], links
    assert checks["health_clocks_under_load[gpu0]"]["status"] == "pass"


@pytest.fixture(scope="module")
def stand_in_with_events(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The stand-in with NVML's event sets (``fake_nvml_events.c``: FAKE_NVML_XIDS)."""
    from tests.detection.detection_helpers import FAKE_NVML_SOURCE

    compiler = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if compiler is None or not sys.platform.startswith("linux"):
        pytest.skip("the stand-in NVML library is a Linux shared object built with a C compiler")
    out = tmp_path_factory.mktemp("health-nvml-events") / "libnvidia-ml.so.1"
    subprocess.run([compiler, "-shared", "-fPIC", "-O1", "-I", str(FAKE_NVML_SOURCE.parent),
                    "-o", str(out), str(Path(__file__).parent / "fake_nvml_events.c")],
                   check=True, capture_output=True, timeout=60)
    return out


_XID_RUN = """
import json, os, sys, time
from torchenv.validation.health import XidWatch, judge_xid, read_gpus
gpus = read_gpus()[0]
xid = XidWatch(os.environ, settle=float(sys.argv[1]))
began = time.monotonic()
xid.start()
started = time.monotonic() - began
time.sleep(float(sys.argv[2]))  # the workload
xid.collect()
print(json.dumps({"started": started, "before": xid.before, "events": xid.events,
                  "checks": [judge_xid(g, xid).to_json() for g in gpus]}))
"""


def _xid_run(library: Path, xids: str, *, settle: float = 0.5, workload: float = 1.5
             ) -> dict[str, Any]:
    env = clean_env(TORCHENV_NVML_LIBRARY=str(library), FAKE_NVML_GPUS=f"{H200};{H200}",
                    FAKE_NVML_XIDS=xids)
    proc = subprocess.run([sys.executable, "-c", _XID_RUN, str(settle), str(workload)],
                          env=env, capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    doc: dict[str, Any] = json.loads(proc.stdout)
    return doc


def test_xids_waiting_at_the_start_are_told_apart_from_those_during_the_run(
        stand_in_with_events: Path) -> None:
    """GPU 0 has Xid 79 waiting when the watch begins and Xid 48 a second into the workload;
    GPU 1 has Xid 94 only during the run. The real nvidia-ml-py reads the stand-in's set."""
    doc = _xid_run(stand_in_with_events, "0:79@0,0:48@1000,1:94@1200")
    assert doc["before"] == [[0, 79]]
    assert sorted(map(tuple, doc["events"])) == [(0, 48), (1, 94)]
    gpu0, gpu1 = doc["checks"]
    assert gpu0["status"] == "fail" and gpu0["required"] is True, gpu0
    assert "Xid 79 already raised when validation began, before its workload" in gpu0["error"]
    assert "Xid 48 during the run" in gpu0["error"]
    assert gpu0["metrics"]["xid_before"] == [79] and gpu0["metrics"]["xid_events"] == [48]
    assert gpu1["status"] == "fail" and "already raised" not in gpu1["error"], gpu1
    assert "Xid 94 during the run" in gpu1["error"]
    assert gpu1["metrics"]["xid_before"] == [] and gpu1["metrics"]["xid_events"] == [94]


def test_an_xid_only_before_the_run_still_fails_and_the_wait_for_it_is_bounded(
        stand_in_with_events: Path) -> None:
    doc = _xid_run(stand_in_with_events, "1:79@0", settle=0.3, workload=0.1)
    assert doc["started"] < 5, doc["started"]
    gpu0, gpu1 = doc["checks"]
    assert gpu0["status"] == "pass", gpu0
    assert gpu1["status"] == "fail", gpu1
    assert gpu1["error"].endswith("Xid 79 already raised when validation began, before its "
                                  "workload"), gpu1


def test_without_events_the_start_waits_only_its_settle_time(stand_in_with_events: Path) -> None:
    doc = _xid_run(stand_in_with_events, "", settle=0.4, workload=0.1)
    assert 0.35 < doc["started"] < 5, doc["started"]
    assert [c["status"] for c in doc["checks"]] == ["pass", "pass"]
    assert doc["checks"][0]["detail"].endswith("no Xid event before or during the run")
