"""Node health for ``validate --level full``: what the NVIDIA driver says about each GPU's state.

A reader asks NVML (through nvidia-ml-py, ``pynvml``) for one :class:`GpuHealth` per GPU; pure
judges turn those readings into :class:`~torchenv.validation.report.CheckResult` values named
``health_<check>[gpuN]`` (N is NVML's index, the one nvidia-smi shows, not a CUDA ordinal), and a
last check reads the size of ``/dev/shm`` with ``os.statvfs``. docs/validation-health.md lists the
checks, which findings are required (they fail the run) and which are advisory.

What a reading cannot prove is never a pass:

* a query the GPU or its driver does not support (``NVML_ERROR_NOT_SUPPORTED``, or a function the
  driver's library lacks) makes the check a skip that names the query;
* any other NVML error makes it a skip whose reason starts with ``unknown:``, and so does an NVML
  that cannot start (no library, failed ``nvmlInit``) or does not answer in time;
* ``NVML_ERROR_GPU_IS_LOST`` is a finding of its own: the GPU has fallen off the bus.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, TypeVar, Union

from torchenv.detection._nvml import (
    NVML_ERROR_FUNCTION_NOT_FOUND,
    NVML_ERROR_GPU_IS_LOST,
    NVML_ERROR_NOT_SUPPORTED,
    _library_available,
    _load_explicit,
    call_bounded,
    describe_init_error,
    nvml_library_setting,
)
from torchenv.validation.expected import FabricPath
from torchenv.validation.report import CheckResult

__all__ = [
    "CHECKS",
    "FREE_MEMORY_FLOOR",
    "SHM_FLOOR_BYTES",
    "GpuHealth",
    "GpuProcess",
    "HealthCheck",
    "LoadSampler",
    "MemoryUse",
    "RemappedRows",
    "Unread",
    "XidWatch",
    "fabric_path",
    "judge_clocks_under_load",
    "judge_gpu",
    "judge_link_errors",
    "judge_shm",
    "judge_xid",
    "node_health",
    "nvml_gpu_of",
    "read_gpus",
    "read_shm",
    "vgpus",
]

T = TypeVar("T")

NVML_ERROR_INVALID_ARGUMENT = 2  # nvml.h; what nvmlDeviceGetNvLinkState answers past the last link
NVML_CLOCK_SM = 1
NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1
NVML_VOLATILE_ECC = 0
NVML_AGGREGATE_ECC = 1
NVML_COMPUTEMODE_DEFAULT = 0
NVML_COMPUTEMODE_EXCLUSIVE_THREAD = 1  # no longer supported by the driver; read as exclusive
NVML_COMPUTEMODE_PROHIBITED = 2
NVML_COMPUTEMODE_EXCLUSIVE_PROCESS = 3
NVLINK_MAX_LINKS = 36  # NVML_NVLINK_MAX_LINKS in nvml.h 13.x; older drivers answer fewer links

FREE_MEMORY_FLOOR = 0.90
"""Below this fraction of free GPU memory something else holds the GPU (advisory)."""
SHM_FLOOR_BYTES = 1 << 30
"""A /dev/shm smaller than 1 GiB (Docker's default is 64 MB) starves NCCL's shared-memory
transport and DataLoader workers (advisory)."""
DEFAULT_TIMEOUT = 30.0

# Clocks event reasons (nvmlClocksEventReason* in nvml.h; the bits of the older
# nvmlDeviceGetCurrentClocksThrottleReasons are the same)
_IDLE = 0x1
_REQUIRED_REASONS = {
    0x8: "HW slowdown (temperature, power draw or an external power brake)",
    0x40: "HW thermal slowdown (the GPU is too hot)",
    0x80: "HW power brake slowdown (the system asserted the power brake)",
}
_ADVISORY_REASONS = {
    0x4: "SW power cap (the GPU runs at its power limit)",
    0x20: "SW thermal slowdown (the GPU is above its software temperature limit)",
}
_RECORDED_REASONS = {
    0x1: "idle",
    0x2: "application clocks setting",
    0x10: "sync boost",
    0x100: "display clock setting",
    0x200: "board limit",
    0x400: "reliability limit",
}


@dataclass(frozen=True)
class Unread:
    """An NVML query without an answer: the pynvml function, NVML's return code and its text."""

    query: str
    code: int
    text: str

    @property
    def unsupported(self) -> bool:
        """The GPU or its driver cannot answer this query: nothing is wrong, nothing is known."""
        return self.code in (NVML_ERROR_NOT_SUPPORTED, NVML_ERROR_FUNCTION_NOT_FOUND)

    @property
    def gpu_lost(self) -> bool:
        return self.code == NVML_ERROR_GPU_IS_LOST

    def __str__(self) -> str:
        return f"{self.query}: {self.text}"


Reading = Union[T, Unread]
"""A value NVML answered, or why it did not."""


@dataclass(frozen=True)
class RemappedRows:
    """``nvmlDeviceGetRemappedRows``: rows remapped so far, and whether a remap waits or failed."""

    correctable: int
    uncorrectable: int
    pending: bool
    failed: bool


@dataclass(frozen=True)
class GpuProcess:
    pid: int
    used_bytes: Optional[int]  # None where the driver cannot tell (Windows WDDM)


@dataclass(frozen=True)
class MemoryUse:
    total_bytes: int
    free_bytes: int


@dataclass(frozen=True)
class GpuHealth:
    """Everything the health checks read from one GPU: each reading a value or an :class:`Unread`.

    The reader fills every field; there are no defaults that could pass for a reading.
    """

    index: int
    name: Optional[str]
    uuid: Optional[str]
    pci_bus_id: Optional[str]
    ecc_mode: Reading[tuple[bool, bool]]  # (current, pending after the next reboot)
    ecc_volatile_uncorrected: Reading[int]  # since the driver loaded
    ecc_aggregate_uncorrected: Reading[int]  # over the GPU's lifetime
    retired_pages_pending: Reading[bool]
    remapped_rows: Reading[RemappedRows]
    clock_reasons: Reading[int]
    sm_clock_mhz: Reading[int]
    sm_clock_max_mhz: Reading[int]
    pcie_gen: Reading[int]
    pcie_gen_max: Reading[int]
    pcie_width: Reading[int]
    pcie_width_max: Reading[int]
    nvlink: tuple[Reading[bool], ...]  # link i's state, up to the GPU's last link
    persistence: Reading[bool]
    compute_mode: Reading[int]
    mig_mode: Reading[tuple[bool, bool]]  # (current, pending after the next GPU reset)
    processes: Reading[tuple[GpuProcess, ...]]
    memory: Reading[MemoryUse]
    virtualization_mode: Reading[int]  # nvmlGpuVirtualizationMode_t; 2 is a vGPU in a VM
    nvlink_version: Reading[int]  # of the first link that is up
    pcie_replay: Reading[int]  # PCIe replays since the driver loaded
    nvlink_errors: Reading[Mapping[str, int]]  # replay/recovery/CRC counts, summed over links

    @property
    def label(self) -> str:
        """``GPU 0 (NVIDIA H200, GPU-…, 00000000:18:00.0)``: the GPU as an admin finds it."""
        facts = [self.name or "name unknown", self.uuid or "UUID unknown",
                 self.pci_bus_id or "PCI bus id unknown"]
        return f"GPU {self.index} ({', '.join(facts)})"

    @property
    def identity(self) -> dict[str, Any]:
        return {"gpu_index": self.index, "uuid": self.uuid, "pci_bus_id": self.pci_bus_id,
                "gpu_name": self.name}


# ----------------------------------------------------------------------------------- judging

@dataclass(frozen=True)
class _Finding:
    text: str
    required: bool
    hint: str


@dataclass
class _Verdict:
    """What a judge concluded. Order of precedence: findings, unread readings, skip, pass."""

    detail: str = ""
    metrics: dict[str, Any] = field(default_factory=dict)
    findings: list[_Finding] = field(default_factory=list)
    unread: list[Unread] = field(default_factory=list)  # readings the verdict needed and lacks
    skip: Optional[str] = None  # why what was read proves nothing


@dataclass(frozen=True)
class HealthCheck:
    """One per-GPU health check. ``required``: whether any of its findings fails the run."""

    name: str
    required: bool
    judge: Callable[[GpuHealth], _Verdict]


def _unread(*readings: object) -> list[Unread]:
    return [r for r in readings if isinstance(r, Unread)]


def _on(flag: bool) -> str:
    return "on" if flag else "off"


def _mib(n: int) -> int:
    return n // (1024 * 1024)


def _judge_ecc(g: GpuHealth) -> _Verdict:
    mode = g.ecc_mode
    if isinstance(mode, Unread):
        return _Verdict(unread=[mode])
    current, pending = mode
    change = f"; ECC turns {_on(pending)} at the next reboot" if pending != current else ""
    metrics: dict[str, Any] = {"ecc_enabled": current, "ecc_pending": pending}
    if not current:
        return _Verdict(metrics=metrics,
                        skip=f"ECC is off, so the GPU counts no memory errors{change}")
    volatile, aggregate = g.ecc_volatile_uncorrected, g.ecc_aggregate_uncorrected
    verdict = _Verdict(metrics=metrics, unread=_unread(volatile, aggregate))
    counts = []
    if isinstance(volatile, int):
        metrics["ecc_volatile_uncorrected"] = volatile
        counts.append(f"{volatile} since the driver loaded")
    if isinstance(aggregate, int):
        metrics["ecc_aggregate_uncorrected"] = aggregate
        counts.append(f"{aggregate} in the GPU's lifetime")
    text = "uncorrectable ECC errors: " + ", ".join(counts)
    verdict.detail = f"ECC on; {text}{change}"
    if isinstance(volatile, int) and volatile > 0:
        verdict.findings.append(_Finding(text, True, (
            f"drain the node, reset the GPU (nvidia-smi -r -i {g.index}) or reboot, then run "
            "the field diagnostic (dcgmi diag -r 3); errors that come back mean the GPU needs "
            "replacing")))
    elif isinstance(aggregate, int) and aggregate > 0:
        # advisory: errors from before the driver loaded were usually absorbed by row remapping
        # or page retirement, which health_memory_remap judges (pending or failed is required)
        verdict.findings.append(_Finding(text, False, (
            "the errors happened before the driver last loaded: check that row remapping or page "
            f"retirement absorbed them (nvidia-smi -q -d ROW_REMAPPER,PAGE_RETIREMENT -i "
            f"{g.index}) and run the field diagnostic (dcgmi diag -r 3) before trusting this GPU")))
    return verdict


def _judge_memory_remap(g: GpuHealth) -> _Verdict:
    rows, pages = g.remapped_rows, g.retired_pages_pending
    answered = [r for r in (rows, pages) if not isinstance(r, Unread)]
    # A GPU has one of the two mechanisms (page retirement before Ampere, row remapping since):
    # the other one's NOT_SUPPORTED is expected as long as one answered.
    verdict = _Verdict(unread=[u for u in _unread(rows, pages)
                               if not (u.unsupported and answered)])
    parts = []
    reset = f"reset the GPU (nvidia-smi -r -i {g.index}) or reboot"
    if isinstance(rows, RemappedRows):
        verdict.metrics.update({"remapped_rows_correctable": rows.correctable,
                                "remapped_rows_uncorrectable": rows.uncorrectable,
                                "row_remap_pending": rows.pending,
                                "row_remap_failed": rows.failed})
        parts.append(f"row remapping: {'a remap pending' if rows.pending else 'none pending'}, "
                     f"{'a remap FAILED' if rows.failed else 'no failure'} ({rows.correctable} "
                     f"rows remapped after correctable, {rows.uncorrectable} after "
                     "uncorrectable errors)")
        if rows.failed:
            verdict.findings.append(_Finding(
                "row remapping failed: the memory has no spare row left for a failing one", True,
                "take the GPU out of service and have it replaced (RMA); nvidia-smi -q -d "
                f"ROW_REMAPPER -i {g.index} shows the counts"))
        if rows.pending:
            verdict.findings.append(_Finding(
                "a row remap is pending: the failing memory row stays in use until the GPU is "
                "reset", True, f"drain the node and {reset}"))
    if isinstance(pages, bool):
        verdict.metrics["retired_pages_pending"] = pages
        parts.append(f"page retirement: {'pages pending' if pages else 'none pending'}")
        if pages:
            verdict.findings.append(_Finding(
                "retired pages are pending: the failing pages stay in use until the GPU is reset",
                True, f"drain the node and {reset}"))
    verdict.detail = "; ".join(parts)
    return verdict


def _reason_names(bits: int, table: Mapping[int, str]) -> list[str]:
    return [text for bit, text in table.items() if bits & bit]


def _judge_clocks(g: GpuHealth) -> _Verdict:
    reasons = g.clock_reasons
    metrics: dict[str, Any] = {}
    clocks = ""
    if isinstance(g.sm_clock_mhz, int) and isinstance(g.sm_clock_max_mhz, int):
        metrics.update({"sm_clock_mhz": g.sm_clock_mhz, "sm_clock_max_mhz": g.sm_clock_max_mhz})
        clocks = f"SM clock {g.sm_clock_mhz} of {g.sm_clock_max_mhz} MHz; "
    if isinstance(reasons, Unread):
        return _Verdict(metrics=metrics, unread=[reasons])
    known = {**_REQUIRED_REASONS, **_ADVISORY_REASONS, **_RECORDED_REASONS}
    names = [known[bit] for bit in sorted(known) if reasons & bit]
    unknown_bits = reasons & ~sum(known)
    if unknown_bits:
        names.append(f"other reasons {unknown_bits:#x}")
    metrics.update({"clock_reasons": f"{reasons:#x}", "clock_reason_names": names})
    verdict = _Verdict(metrics=metrics,
                       detail=clocks + "clocks limited by: " + (", ".join(names) or "nothing"))
    for text in _reason_names(reasons, _REQUIRED_REASONS):
        verdict.findings.append(_Finding(text, True, (
            "check the node's cooling (fans, airflow, inlet temperature) and power supplies, "
            f"and its BMC log; nvidia-smi -q -d PERFORMANCE,TEMPERATURE,POWER -i {g.index} "
            "shows the details")))
    for text in _reason_names(reasons, _ADVISORY_REASONS):
        verdict.findings.append(_Finding(text, False, (
            "expected under sustained full load; on a quiet GPU check its power limit and "
            f"temperature (nvidia-smi -q -d POWER,TEMPERATURE -i {g.index})")))
    return verdict


def _judge_pcie(g: GpuHealth) -> _Verdict:
    gen, gen_max, width, width_max = g.pcie_gen, g.pcie_gen_max, g.pcie_width, g.pcie_width_max
    if isinstance(gen, Unread) or isinstance(gen_max, Unread) or isinstance(width, Unread) \
            or isinstance(width_max, Unread):
        return _Verdict(unread=_unread(gen, gen_max, width, width_max))
    verdict = _Verdict(
        detail=f"PCIe gen {gen} of {gen_max}, width x{width} of x{width_max}",
        metrics={"pcie_gen": gen, "pcie_gen_max": gen_max, "pcie_width": width,
                 "pcie_width_max": width_max})
    hint = ("reseat the GPU (and its riser), check the slot's link speed in the BIOS and "
            f"nvidia-smi -q -d PCIE -i {g.index}; host↔device copies run slower meanwhile")
    if width < width_max:
        verdict.findings.append(_Finding(
            f"the PCIe link runs at width x{width} of x{width_max}", False, hint))
    if gen < gen_max:
        busy = isinstance(g.clock_reasons, int) and not g.clock_reasons & _IDLE
        if busy:
            verdict.findings.append(_Finding(
                f"the PCIe link runs at gen {gen} of {gen_max}", False, hint))
        elif not verdict.findings:
            # an idle GPU lowers its link speed to save power and raises it under load
            idle = ("while the GPU is idle" if isinstance(g.clock_reasons, int)
                    else "and whether the GPU is idle is unknown")
            verdict.skip = (f"the PCIe link runs at gen {gen} of {gen_max} {idle} (links slow "
                            "down at idle), so its speed cannot be judged now; width "
                            f"x{width} of x{width_max}")
    return verdict


def _judge_nvlink(g: GpuHealth) -> _Verdict:
    states = {i: s for i, s in enumerate(g.nvlink) if isinstance(s, bool)}
    # NOT_SUPPORTED for a link means the GPU has no such link
    verdict = _Verdict(unread=[u for u in _unread(*g.nvlink) if not u.unsupported])
    if not states:
        if not verdict.unread:
            verdict.skip = "this GPU has no NVLink"
        return verdict
    down = [i for i, up in states.items() if not up]
    verdict.metrics.update({"nvlink_links": len(states), "nvlink_up": len(states) - len(down),
                            "nvlink_down": down})
    verdict.detail = f"{len(states) - len(down)} of {len(states)} NVLink links up"
    if down:
        verdict.findings.append(_Finding(
            f"NVLink link{'s' if len(down) > 1 else ''} {', '.join(map(str, down))} down "
            f"({verdict.detail})", False,
            f"nvidia-smi nvlink -s -i {g.index} shows each link; on NVSwitch systems check that "
            "nvidia-fabricmanager runs; collectives over a down link take slower paths"))
    return verdict


def _judge_persistence(g: GpuHealth) -> _Verdict:
    mode = g.persistence
    if isinstance(mode, Unread):
        return _Verdict(unread=[mode])
    verdict = _Verdict(detail=f"persistence mode {_on(mode)}", metrics={"persistence": mode})
    if not mode:
        verdict.findings.append(_Finding(
            "persistence mode is off: the driver tears the GPU down whenever no process uses "
            "it, so every job's first CUDA call pays to bring it up again", False,
            f"run nvidia-persistenced, or sudo nvidia-smi -pm 1 -i {g.index}"))
    return verdict


_COMPUTE_MODES = {NVML_COMPUTEMODE_DEFAULT: "Default",
                  NVML_COMPUTEMODE_EXCLUSIVE_THREAD: "Exclusive_Thread",
                  NVML_COMPUTEMODE_PROHIBITED: "Prohibited",
                  NVML_COMPUTEMODE_EXCLUSIVE_PROCESS: "Exclusive_Process"}


def _judge_compute_mode(g: GpuHealth) -> _Verdict:
    mode = g.compute_mode
    if isinstance(mode, Unread):
        return _Verdict(unread=[mode])
    if mode not in _COMPUTE_MODES:
        return _Verdict(unread=[Unread("nvmlDeviceGetComputeMode", -1,
                                       f"unknown compute mode {mode}")])
    name = _COMPUTE_MODES[mode]
    verdict = _Verdict(detail=f"compute mode {name}", metrics={"compute_mode": name})
    fix = f"sudo nvidia-smi -c DEFAULT -i {g.index}"
    if mode == NVML_COMPUTEMODE_PROHIBITED:
        verdict.findings.append(_Finding(
            "compute mode is Prohibited: no process can create a CUDA context on this GPU",
            True, fix))
    elif mode != NVML_COMPUTEMODE_DEFAULT:
        verdict.findings.append(_Finding(
            f"compute mode is {name}: one process at a time, so a second rank or job on this "
            "GPU fails to create its context", False,
            f"{fix} if several processes should share the GPU"))
    return verdict


def _judge_mig(g: GpuHealth) -> _Verdict:
    mode = g.mig_mode
    if isinstance(mode, Unread):
        return _Verdict(unread=[mode])
    current, pending = mode
    verdict = _Verdict(detail=f"MIG {_on(current)}",
                       metrics={"mig_enabled": current, "mig_pending": pending})
    if current:
        verdict.findings.append(_Finding(
            "MIG is on: CUDA sees MIG instances, not the whole GPU, and NCCL cannot span them",
            False, "run on one instance through CUDA_VISIBLE_DEVICES=MIG-<uuid> (nvidia-smi -L "
            f"lists them), or turn MIG off: sudo nvidia-smi -mig 0 -i {g.index}"))
    if pending != current:
        verdict.findings.append(_Finding(
            f"MIG turns {_on(pending)} at the next GPU reset", False,
            f"reset the GPU (nvidia-smi -r -i {g.index}) or reboot to apply the change"))
    return verdict


def _judge_occupancy(g: GpuHealth, own_pid: int) -> _Verdict:
    processes, memory = g.processes, g.memory
    answered = [r for r in (processes, memory) if not isinstance(r, Unread)]
    verdict = _Verdict(unread=[u for u in _unread(processes, memory)
                               if not (u.unsupported and answered)])
    parts = []
    if isinstance(processes, tuple):
        others = [p for p in processes if p.pid != own_pid]
        verdict.metrics["processes"] = [
            {"pid": p.pid, "used_mib": None if p.used_bytes is None else _mib(p.used_bytes)}
            for p in others]
        listing = ", ".join(f"pid {p.pid}" + ("" if p.used_bytes is None
                                              else f" ({_mib(p.used_bytes)} MiB)")
                            for p in others)
        parts.append(f"{len(others)} other compute process{'es' if len(others) != 1 else ''}"
                     + (f": {listing}" if others else ""))
        if others:
            verdict.findings.append(_Finding(
                parts[-1], False,
                "they compete for memory and compute, so results and timings here are not "
                "those of an idle GPU; nvidia-smi --query-compute-apps=pid,process_name,"
                f"used_memory --format=csv -i {g.index} names them"))
    else:
        parts.append("compute processes not reported by this driver")
    if isinstance(memory, MemoryUse) and memory.total_bytes > 0:
        free = memory.free_bytes / memory.total_bytes
        verdict.metrics.update({"memory_total_mib": _mib(memory.total_bytes),
                                "memory_free_mib": _mib(memory.free_bytes)})
        parts.append(f"{free:.0%} of memory free ({_mib(memory.free_bytes)} of "
                     f"{_mib(memory.total_bytes)} MiB)")
        if free < FREE_MEMORY_FLOOR:
            verdict.findings.append(_Finding(
                f"only {parts[-1]}", False,
                "another process or a leftover context holds the memory; large runs here may "
                "run out of memory"))
    elif isinstance(memory, MemoryUse):
        verdict.unread.append(Unread("nvmlDeviceGetMemoryInfo", -1, "reported 0 bytes in total"))
    else:
        parts.append("memory use not reported by this driver")
    verdict.detail = "; ".join(parts)
    return verdict


CHECKS: tuple[HealthCheck, ...] = (
    HealthCheck("ecc", True, _judge_ecc),
    HealthCheck("memory_remap", True, _judge_memory_remap),
    HealthCheck("clocks", True, _judge_clocks),
    HealthCheck("pcie", False, _judge_pcie),
    HealthCheck("nvlink", False, _judge_nvlink),
    HealthCheck("persistence", False, _judge_persistence),
    HealthCheck("compute_mode", True, _judge_compute_mode),
    HealthCheck("mig", False, _judge_mig),
    HealthCheck("occupancy", False, lambda g: _judge_occupancy(g, os.getpid())),
)
"""The per-GPU checks in report order. Findings carry their own class: ``clocks`` and
``compute_mode`` also have advisory findings (SW slowdowns; an exclusive compute mode)."""


def _conclude(check: HealthCheck, gpu: GpuHealth, verdict: _Verdict) -> CheckResult:
    common: dict[str, Any] = {
        "name": f"health_{check.name}[gpu{gpu.index}]", "device": f"gpu{gpu.index}",
        "level": "full", "metrics": {**gpu.identity, **verdict.metrics}}
    findings = list(verdict.findings)
    lost = [u for u in verdict.unread if u.gpu_lost]
    if lost:
        findings.append(_Finding(
            f"the GPU is lost ({lost[0]}): it has fallen off the bus", check.required,
            "drain the node and check the GPU (dmesg shows Xid 79); a reboot or GPU reset may "
            "bring it back, a repeat means hardware"))
    if findings:
        hints = list(dict.fromkeys(f.hint for f in findings))
        return CheckResult(status="fail", required=any(f.required for f in findings),
                           error=f"{gpu.label}: " + "; ".join(f.text for f in findings),
                           hint="; ".join(hints), detail=verdict.detail or None, **common)
    unknown = [u for u in verdict.unread if not u.unsupported]
    if unknown:
        return CheckResult(status="skip", required=check.required,
                           reason=f"{gpu.label}: unknown: " + "; ".join(map(str, unknown)),
                           **common)
    if verdict.unread:
        return CheckResult(status="skip", required=check.required,
                           reason=f"{gpu.label}: not supported: "
                                  + "; ".join(map(str, verdict.unread)), **common)
    if verdict.skip is not None:
        return CheckResult(status="skip", required=check.required,
                           reason=f"{gpu.label}: {verdict.skip}", **common)
    return CheckResult(status="pass", required=check.required,
                       detail=f"{gpu.label}: {verdict.detail}", **common)


def judge_link_errors(before: GpuHealth, after: Optional[GpuHealth]) -> CheckResult:
    """``health_link_errors[gpuN]``: the PCIe replay and NVLink error counters before and after
    the run's workload. A link that needed recovery under load fails (required); more PCIe or
    NVLink replays or CRC errors are advisory (a marginal link corrected them)."""
    common: dict[str, Any] = {"name": f"health_link_errors[gpu{before.index}]",
                              "device": f"gpu{before.index}", "level": "full",
                              "metrics": dict(before.identity)}
    if after is None:
        return CheckResult(status="skip", required=True, reason=f"{before.label}: unknown: not "
                           "read again after the workload", **common)
    deltas: dict[str, int] = {}
    unread = []
    if isinstance(before.pcie_replay, int) and isinstance(after.pcie_replay, int):
        deltas["pcie_replay"] = after.pcie_replay - before.pcie_replay
    else:
        unread += _unread(before.pcie_replay, after.pcie_replay)
    b_nv, a_nv = before.nvlink_errors, after.nvlink_errors
    if isinstance(b_nv, Unread) or isinstance(a_nv, Unread):
        unread += [u for u in _unread(b_nv, a_nv) if not (u.unsupported and deltas)]
    else:
        deltas.update({f"nvlink_{k}": a_nv.get(k, 0) - v for k, v in b_nv.items()})
    if not deltas:
        kind = "unknown" if any(not u.unsupported for u in unread) else "not supported"
        return CheckResult(status="skip", required=True, reason=f"{before.label}: {kind}: "
                           + "; ".join(map(str, unread)), **common)
    common["metrics"].update({f"{k}_during_run": v for k, v in deltas.items()})
    grew = {k: v for k, v in deltas.items() if v > 0}
    shown = ", ".join(f"{k.replace('_', ' ')} +{v}" for k, v in grew.items())
    detail = (f"{before.label}: during the run " + (shown or "no link error counter grew")
              + f" (read: {', '.join(k.replace('_', ' ') for k in deltas)})")
    if not grew:
        return CheckResult(status="pass", required=True, detail=detail, **common)
    required = "nvlink_recovery" in grew
    hint = ("an NVLink link had to recover under load: drain the node and run the field "
            f"diagnostic (dcgmi diag -r 3); nvidia-smi nvlink -e -i {before.index} shows the "
            "counters" if required else
            "a marginal link: replays and CRC errors were corrected, at a cost in bandwidth; "
            "reseat the GPU or its bridge if they keep growing (nvidia-smi -q -d PCIE -i "
            f"{before.index}, nvidia-smi nvlink -e -i {before.index})")
    return CheckResult(status="fail", required=required, detail=detail, hint=hint,
                       error=f"{before.label}: link errors during the run: {shown}", **common)


def judge_clocks_under_load(gpu: GpuHealth, reasons: int, samples: int) -> CheckResult:
    """``health_clocks_under_load[gpuN]``: the clock event reasons NVML reported while the
    performance probe ran (every reading ORed). HW slowdown, HW thermal slowdown and the power
    brake fail (required): the node cannot hold its clocks under load. A power cap under full
    load is recorded, not judged."""
    common: dict[str, Any] = {"name": f"health_clocks_under_load[gpu{gpu.index}]",
                              "device": f"gpu{gpu.index}", "level": "full", "required": True,
                              "metrics": {**gpu.identity, "clock_reasons_under_load":
                                          f"{reasons:#x}", "readings": samples}}
    if samples == 0:
        return CheckResult(status="skip", reason=f"{gpu.label}: no reading was taken while the "
                           "performance probe ran", **common)
    known = {**_REQUIRED_REASONS, **_ADVISORY_REASONS, **_RECORDED_REASONS}
    names = [known[bit] for bit in sorted(known) if reasons & bit]
    detail = (f"{gpu.label}: {samples} readings under load; clocks limited by: "
              + (", ".join(names) or "nothing"))
    hard = _reason_names(reasons, _REQUIRED_REASONS)
    if not hard:
        return CheckResult(status="pass", detail=detail, **common)
    return CheckResult(status="fail", detail=detail,
                       error=f"{gpu.label}: under load: " + "; ".join(hard),
                       hint="check the node's cooling and power supplies, and its BMC log; "
                            f"nvidia-smi -q -d PERFORMANCE,TEMPERATURE,POWER -i {gpu.index}",
                       **common)


def judge_gpu(gpu: GpuHealth) -> list[CheckResult]:
    """Every check in :data:`CHECKS` for one GPU's readings (pure)."""
    return [_conclude(check, gpu, check.judge(gpu)) for check in CHECKS]


# ----------------------------------------------------------------------------------- /dev/shm

def read_shm(path: str = "/dev/shm") -> Union[os.statvfs_result, OSError, None]:
    """``os.statvfs(path)``; the OSError it raised; None where the platform has no statvfs."""
    statvfs = getattr(os, "statvfs", None)
    if statvfs is None:
        return None
    try:
        result: os.statvfs_result = statvfs(path)
    except OSError as exc:
        return exc
    return result


def judge_shm(reading: Union[os.statvfs_result, OSError, None], path: str = "/dev/shm", *,
              linux: Optional[bool] = None) -> CheckResult:
    """The ``health_shm`` result for what :func:`read_shm` returned (pure but for the platform)."""
    linux = sys.platform.startswith("linux") if linux is None else linux
    common: dict[str, Any] = {"name": "health_shm", "device": "cpu", "required": False,
                              "level": "full"}
    hint = ("Docker gives a container 64 MB: run it with --shm-size=16g (or --ipc=host); on "
            "Kubernetes mount an emptyDir with medium: Memory at /dev/shm")
    if reading is None or (isinstance(reading, FileNotFoundError) and not linux):
        return CheckResult(status="skip", reason=f"this platform has no {path}", **common)
    if isinstance(reading, FileNotFoundError):
        return CheckResult(status="fail", error=f"{path} does not exist: NCCL's shared-memory "
                           "transport and DataLoader workers cannot share memory", hint=hint,
                           **common)
    if isinstance(reading, OSError):
        return CheckResult(status="skip", reason=f"unknown: cannot read {path} "
                           f"({reading.strerror or reading})", **common)
    block = reading.f_frsize or reading.f_bsize
    size, free = reading.f_blocks * block, reading.f_bavail * block
    metrics = {"shm_bytes": size, "shm_free_bytes": free}
    text = f"{path} is {_mib(size)} MiB ({_mib(free)} MiB free)"
    if size < SHM_FLOOR_BYTES:
        return CheckResult(status="fail", error=f"{text}, below 1 GiB: NCCL's shared-memory "
                           "transport and DataLoader workers fail with bus errors or hang",
                           hint=hint, metrics=metrics, **common)
    return CheckResult(status="pass", detail=text, metrics=metrics, **common)


# ----------------------------------------------------------------------------------- reading

def _text(value: Any) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def _convert(value: Any, convert: Callable[[Any], T]) -> Reading[T]:
    return value if isinstance(value, Unread) else convert(value)


def _asker(pynvml: Any) -> Callable[..., Any]:
    """``ask(name, *args)``: ``pynvml.<name>(*args)``, or an :class:`Unread` for an NVML error."""
    mismatch = getattr(pynvml, "NVMLLibraryMismatchError", None)

    def ask(name: str, *args: Any, **kwargs: Any) -> Any:
        fn = getattr(pynvml, name, None)
        if fn is None:
            return Unread(name, NVML_ERROR_FUNCTION_NOT_FOUND, "not in this nvidia-ml-py")
        try:
            return fn(*args, **kwargs)
        except pynvml.NVMLError as exc:
            return Unread(name, int(getattr(exc, "value", -1)), str(exc))
        except Exception as exc:
            # pynvml raises this when the driver's library lacks the versioned function
            if mismatch is None or not isinstance(exc, mismatch):
                raise
            return Unread(name, NVML_ERROR_FUNCTION_NOT_FOUND, "Function Not Found")

    return ask


def _read_gpu(pynvml: Any, index: int) -> GpuHealth:
    query = _asker(pynvml)
    handle = query("nvmlDeviceGetHandleByIndex", index)

    def ask(name: str, *args: Any, **kwargs: Any) -> Any:
        if isinstance(handle, Unread):
            return handle  # every reading of a GPU without a handle is that failure
        return query(name, handle, *args, **kwargs)

    def pair(value: Any) -> tuple[bool, bool]:
        return bool(value[0]), bool(value[1])

    reasons = ask("nvmlDeviceGetCurrentClocksEventReasons")
    if isinstance(reasons, Unread) and reasons.code == NVML_ERROR_FUNCTION_NOT_FOUND:
        reasons = ask("nvmlDeviceGetCurrentClocksThrottleReasons")  # drivers before 535
    memory = ask("nvmlDeviceGetMemoryInfo")
    if isinstance(memory, Unread) and memory.code == NVML_ERROR_FUNCTION_NOT_FOUND \
            and hasattr(pynvml, "nvmlMemory_v2"):
        memory = ask("nvmlDeviceGetMemoryInfo", version=pynvml.nvmlMemory_v2)
    nvlink: list[Reading[bool]] = []
    for link in range(NVLINK_MAX_LINKS):
        state = _convert(ask("nvmlDeviceGetNvLinkState", link), bool)
        if isinstance(state, Unread) and state.code == NVML_ERROR_INVALID_ARGUMENT:
            break  # past the GPU's last link
        nvlink.append(state)
        if isinstance(state, Unread) and not state.unsupported:
            break  # one failure answers for the rest
    name, uuid, pci = (ask("nvmlDeviceGetName"), ask("nvmlDeviceGetUUID"),
                       ask("nvmlDeviceGetPciInfo"))
    return GpuHealth(
        index=index,
        name=None if isinstance(name, Unread) else _text(name),
        uuid=None if isinstance(uuid, Unread) else _text(uuid),
        pci_bus_id=None if isinstance(pci, Unread) else _text(pci.busId),
        ecc_mode=_convert(ask("nvmlDeviceGetEccMode"), pair),
        ecc_volatile_uncorrected=_convert(ask(
            "nvmlDeviceGetTotalEccErrors", NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC),
            int),
        ecc_aggregate_uncorrected=_convert(ask(
            "nvmlDeviceGetTotalEccErrors", NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
            NVML_AGGREGATE_ECC), int),
        retired_pages_pending=_convert(ask("nvmlDeviceGetRetiredPagesPendingStatus"), bool),
        remapped_rows=_convert(ask("nvmlDeviceGetRemappedRows"), lambda v: RemappedRows(
            int(v[0]), int(v[1]), bool(v[2]), bool(v[3]))),
        clock_reasons=_convert(reasons, int),
        sm_clock_mhz=_convert(ask("nvmlDeviceGetClockInfo", NVML_CLOCK_SM), int),
        sm_clock_max_mhz=_convert(ask("nvmlDeviceGetMaxClockInfo", NVML_CLOCK_SM), int),
        pcie_gen=_convert(ask("nvmlDeviceGetCurrPcieLinkGeneration"), int),
        pcie_gen_max=_convert(ask("nvmlDeviceGetMaxPcieLinkGeneration"), int),
        pcie_width=_convert(ask("nvmlDeviceGetCurrPcieLinkWidth"), int),
        pcie_width_max=_convert(ask("nvmlDeviceGetMaxPcieLinkWidth"), int),
        nvlink=tuple(nvlink),
        persistence=_convert(ask("nvmlDeviceGetPersistenceMode"), bool),
        compute_mode=_convert(ask("nvmlDeviceGetComputeMode"), int),
        mig_mode=_convert(ask("nvmlDeviceGetMigMode"), pair),
        processes=_convert(ask("nvmlDeviceGetComputeRunningProcesses"), lambda procs: tuple(
            GpuProcess(int(p.pid), None if p.usedGpuMemory is None else int(p.usedGpuMemory))
            for p in procs)),
        memory=_convert(memory, lambda m: MemoryUse(int(m.total), int(m.free))),
        virtualization_mode=_convert(ask("nvmlDeviceGetVirtualizationMode"), int),
        nvlink_version=_nvlink_version(ask, nvlink),
        pcie_replay=_convert(ask("nvmlDeviceGetPcieReplayCounter"), int),
        nvlink_errors=_nvlink_errors(ask, nvlink),
    )


NVLINK_ERROR_COUNTERS = {0: "replay", 1: "recovery", 2: "crc_flit", 3: "crc_data"}
"""nvmlNvLinkErrorCounter_t: NVML_NVLINK_ERROR_DL_REPLAY, _RECOVERY, _CRC_FLIT, _CRC_DATA."""


def _nvlink_version(ask: Callable[..., Any], links: list[Reading[bool]]) -> Reading[int]:
    up = [i for i, state in enumerate(links) if state is True]
    if not up:
        return Unread("nvmlDeviceGetNvLinkVersion", NVML_ERROR_NOT_SUPPORTED, "no link is up")
    return _convert(ask("nvmlDeviceGetNvLinkVersion", up[0]), int)


def _nvlink_errors(ask: Callable[..., Any], links: list[Reading[bool]]
                   ) -> Reading[Mapping[str, int]]:
    up = [i for i, state in enumerate(links) if state is True]
    if not up:
        return Unread("nvmlDeviceGetNvLinkErrorCounter", NVML_ERROR_NOT_SUPPORTED,
                      "no link is up")
    totals = dict.fromkeys(NVLINK_ERROR_COUNTERS.values(), 0)
    for link in up:
        for counter, name in NVLINK_ERROR_COUNTERS.items():
            value = ask("nvmlDeviceGetNvLinkErrorCounter", link, counter)
            if isinstance(value, Unread):
                return value
            totals[name] += int(value)
    return totals


def _read_all(pynvml: Any, out: list[GpuHealth]) -> Optional[str]:
    """Append each GPU's readings to ``out`` as they finish; a reason when NVML cannot be used."""
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        code = int(getattr(exc, "value", -1))
        return "unknown: " + (describe_init_error(code, str(exc))
                              or "NVML: the NVIDIA driver library was not found")
    try:
        try:
            count = int(pynvml.nvmlDeviceGetCount())
        except pynvml.NVMLError as exc:
            return f"unknown: NVML cannot count the GPUs ({exc})"
        for index in range(count):
            out.append(_read_gpu(pynvml, index))
    finally:
        with contextlib.suppress(pynvml.NVMLError):
            pynvml.nvmlShutdown()
    return None if count else "NVML lists no GPU"


def read_gpus(environ: Optional[Mapping[str, str]] = None, *,
              timeout: float = DEFAULT_TIMEOUT) -> tuple[list[GpuHealth], Optional[str]]:
    """Every GPU's readings, and why NVML could not (fully) answer, or None.

    The library is the one detection uses (``TORCHENV_NVML_LIBRARY``: ``off``, a path, or the
    loader's ``libnvidia-ml.so.1``). NVML runs in-process, so the reading runs in a daemon thread
    abandoned after ``timeout`` seconds; the GPUs read by then are returned.
    """
    setting = nvml_library_setting(os.environ if environ is None else environ)
    if setting is not None and setting.lower() == "off":
        return [], "NVML is turned off (TORCHENV_NVML_LIBRARY=off)"
    if setting is not None:
        if not os.path.isfile(setting):
            return [], f"unknown: TORCHENV_NVML_LIBRARY: {setting} does not exist"
        problem = _load_explicit(setting)
        if problem is not None:
            return [], f"unknown: {problem}"
    elif not _library_available(wsl=os.path.exists("/usr/lib/wsl/lib/libnvidia-ml.so.1")):
        return [], "no NVIDIA driver library (libnvidia-ml.so.1) on this machine"
    import pynvml

    gpus: list[GpuHealth] = []
    done, outcome = call_bounded(lambda: _read_all(pynvml, gpus), timeout,
                                 name="torchenv-health")
    if done:
        return list(gpus), outcome
    read = list(gpus)
    return read, (f"unknown: NVML did not answer within {timeout:g} s (a hung driver?); "
                  + (f"{len(read)} GPUs were read before it stopped" if read
                     else "no GPU was read"))


def fabric_path(g: GpuHealth) -> FabricPath:
    """The GPU's links as NVML reports them, for judging the bus bandwidth: NVLink links up and
    their generation, the PCIe link's maximum generation and width."""
    return FabricPath(
        nvlink_up=sum(1 for s in g.nvlink if s is True),
        nvlink_version=g.nvlink_version if isinstance(g.nvlink_version, int) else None,
        pcie_gen=g.pcie_gen_max if isinstance(g.pcie_gen_max, int) else None,
        pcie_width=g.pcie_width_max if isinstance(g.pcie_width_max, int) else None)


def nvml_gpu_of(identity: Mapping[str, Any], gpus: Sequence[GpuHealth]) -> Optional[GpuHealth]:
    """The NVML reading of the CUDA device ``identity`` names (its ``uuid`` or ``pci_bus_id``, as
    the probe reports them): CUDA's ordinals and NVML's indices need not agree."""
    uuid = str(identity.get("uuid") or "").lower()
    bus = str(identity.get("pci_bus_id") or "").lower()
    for g in gpus:
        if uuid and g.uuid and g.uuid.lower() == uuid:
            return g
        if bus and g.pci_bus_id and g.pci_bus_id.lower() == bus:
            return g
    return None


NVML_GPU_VIRTUALIZATION_MODE_VGPU = 2  # nvml.h: "Device is associated with vGPU inside VM"


def vgpus(gpus: Sequence[GpuHealth]) -> list[str]:
    """Each GPU that NVML says is a vGPU (a virtual machine's share of a GPU), described."""
    return [f"{g.label} is a vGPU (NVML virtualization mode VGPU)" for g in gpus
            if g.virtualization_mode == NVML_GPU_VIRTUALIZATION_MODE_VGPU]


def node_health(environ: Optional[Mapping[str, str]] = None, *, shm_path: str = "/dev/shm",
                timeout: float = DEFAULT_TIMEOUT,
                readings: Optional[tuple[list[GpuHealth], Optional[str]]] = None,
                after: Optional[Sequence[GpuHealth]] = None,
                under_load: Optional[Mapping[int, tuple[int, int]]] = None,
                xid: Optional[XidWatch] = None) -> list[CheckResult]:
    """The node health checks: each of :data:`CHECKS` for every GPU NVML lists, then /dev/shm.

    ``readings`` are what :func:`read_gpus` returned, when the caller read them already (the
    validation run reads the GPUs before its workload); else they are read now. When NVML
    cannot be used (no driver library, a failed ``nvmlInit``, no answer within ``timeout``
    seconds) a ``health_nvml`` skip says why, and the GPUs' checks are absent rather than
    passed. Raises only for a bug, never for what the driver answers.

    ``after``: the GPUs read again after the run's workload, for the link error counters;
    ``under_load``: per NVML index, the clock event reasons seen (ORed) and how many readings
    were taken while the performance probe ran (see :class:`LoadSampler`); ``xid``: the Xid
    events watched during the workload (see :class:`XidWatch`).
    """
    started = time.monotonic()
    gpus, problem = readings if readings is not None else read_gpus(environ, timeout=timeout)
    results: list[CheckResult] = []
    if problem is not None:
        results.append(CheckResult(name="health_nvml", status="skip", device="gpu",
                                   level="full", reason=problem,
                                   seconds=time.monotonic() - started))
    for check in CHECKS:
        for gpu in gpus:
            results.append(_conclude(check, gpu, check.judge(gpu)))
    if under_load is not None:
        for gpu in gpus:
            results.append(judge_clocks_under_load(gpu, *under_load.get(gpu.index, (0, 0))))
    if after is not None:
        later = {g.index: g for g in after}
        for gpu in gpus:
            results.append(judge_link_errors(gpu, later.get(gpu.index)))
    if xid is not None:
        for gpu in gpus:
            results.append(judge_xid(gpu, xid))
    results.append(judge_shm(read_shm(shm_path), shm_path))
    return results


class LoadSampler:
    """Reads every GPU's clock event reasons through NVML while a workload runs.

    ``with sampler.sampling(): ...`` polls in a daemon thread every ``interval`` seconds and ORs
    what it sees into :attr:`seen` (NVML index → (reasons, readings)); a hung driver only
    stops the sampling (the thread is abandoned). Without NVML nothing is read.
    """

    def __init__(self, environ: Mapping[str, str], interval: float = 0.25) -> None:
        self.environ = environ
        self.interval = interval
        self.seen: dict[int, tuple[int, int]] = {}
        self.used = False  # whether any workload was sampled

    @contextlib.contextmanager
    def sampling(self) -> Iterator[LoadSampler]:
        import threading

        self.used = True
        stop = threading.Event()
        thread = threading.Thread(target=self._poll, args=(stop,), daemon=True,
                                  name="torchenv-load-sampler")
        thread.start()
        try:
            yield self
        finally:
            stop.set()
            thread.join(timeout=2.0)

    def _poll(self, stop: Any) -> None:
        setting = nvml_library_setting(self.environ)
        if setting is not None and (setting.lower() == "off" or not os.path.isfile(setting)
                                    or _load_explicit(setting) is not None):
            return
        import pynvml

        try:
            pynvml.nvmlInit()
        except pynvml.NVMLError:  # no NVML here: nothing is sampled and the checks say so
            return
        try:
            handles = [pynvml.nvmlDeviceGetHandleByIndex(i)
                       for i in range(pynvml.nvmlDeviceGetCount())]
            read = getattr(pynvml, "nvmlDeviceGetCurrentClocksEventReasons", None) \
                or pynvml.nvmlDeviceGetCurrentClocksThrottleReasons
            while not stop.is_set():
                for i, handle in enumerate(handles):
                    with contextlib.suppress(pynvml.NVMLError):
                        bits, count = self.seen.get(i, (0, 0))
                        self.seen[i] = (bits | int(read(handle)), count + 1)
                stop.wait(self.interval)
        except pynvml.NVMLError:
            return
        finally:
            with contextlib.suppress(pynvml.NVMLError):
                pynvml.nvmlShutdown()


NVML_ERROR_TIMEOUT = 10  # nvml.h: what nvmlEventSetWait answers when no event is waiting


class XidWatch:
    """The Xid events (critical errors the driver logs for a GPU, e.g. 79: fallen off the bus)
    that happen around the run's workload, through an NVML event set.

    :meth:`start` registers every GPU before the workload, then waits up to ``settle`` seconds
    for events already waiting: those go to ``before`` (the GPU was raising errors before
    validation's workload touched it). :meth:`collect` drains the events that came after into
    ``events``. Each NVML call runs bounded (a hung driver abandons the watch, and ``problem``
    says so); ``watched`` holds the GPUs registered. Events are (NVML index, Xid).

    NVML hands over only what happens once a set is registered; an Xid logged earlier (since
    boot) is in the kernel log (``dmesg``), not here.
    """

    def __init__(self, environ: Mapping[str, str], timeout: float = 10.0,
                 settle: float = 0.5) -> None:
        self.environ = environ
        self.timeout = timeout
        self.settle = settle
        self.before: list[tuple[int, int]] = []
        self.events: list[tuple[int, int]] = []
        self.watched: set[int] = set()
        self.problem: Optional[str] = None
        self._set: Any = None

    def start(self) -> None:
        done, outcome = call_bounded(self._register, self.timeout, name="torchenv-xid")
        if not done:
            self.problem = f"unknown: NVML did not register for events within {self.timeout:g} s"
            return
        if outcome:
            self.problem = outcome
        if self._set is None:
            return
        limit = self.timeout + self.settle
        done, _ = call_bounded(lambda: self._take(self.before, int(self.settle * 1000)), limit,
                               name="torchenv-xid")
        if not done:
            self.problem = (f"unknown: NVML did not hand over the events waiting at the start "
                            f"within {limit:g} s")

    def _register(self) -> Optional[str]:
        setting = nvml_library_setting(self.environ)
        if setting is not None and (setting.lower() == "off" or not os.path.isfile(setting)
                                    or _load_explicit(setting) is not None):
            return "NVML is not in use"
        import pynvml

        ask = _asker(pynvml)
        try:
            pynvml.nvmlInit()
        except pynvml.NVMLError as exc:
            return f"unknown: {exc}"
        event_set = ask("nvmlEventSetCreate")
        if isinstance(event_set, Unread):
            pynvml.nvmlShutdown()
            return f"{'not supported' if event_set.unsupported else 'unknown'}: {event_set}"
        self._set = event_set
        reasons = []
        for index in range(int(pynvml.nvmlDeviceGetCount())):
            handle = ask("nvmlDeviceGetHandleByIndex", index)
            answer = handle if isinstance(handle, Unread) else ask(
                "nvmlDeviceRegisterEvents", handle, pynvml.nvmlEventTypeXidCriticalError,
                event_set)
            if isinstance(answer, Unread):
                reasons.append(f"GPU {index}: {answer}")
            else:
                self.watched.add(index)
        if self.watched:
            return None
        return "; ".join(reasons) or "NVML lists no GPU"

    def _take(self, into: list[tuple[int, int]], first_wait_ms: int) -> None:
        """Append the events waiting to ``into``: the first wait up to ``first_wait_ms``, the
        rest none. Bounded: a GPU logging without end is reported, not drained."""
        import pynvml

        wait_ms = first_wait_ms
        for _ in range(1000):
            try:
                data = pynvml.nvmlEventSetWait_v2(self._set, wait_ms)
            except pynvml.NVMLError as exc:
                if int(getattr(exc, "value", -1)) != NVML_ERROR_TIMEOUT:
                    self.problem = f"unknown: nvmlEventSetWait_v2: {exc}"
                return
            into.append((int(pynvml.nvmlDeviceGetIndex(data.device)), int(data.eventData)))
            wait_ms = 0

    def collect(self) -> None:
        """Drain the events that arrived since :meth:`start`; then release the event set and
        NVML."""
        if self._set is None:
            return
        done, _ = call_bounded(self._drain, self.timeout, name="torchenv-xid")
        if not done:
            self.problem = (f"unknown: NVML did not hand over its events within "
                            f"{self.timeout:g} s")

    def _drain(self) -> None:
        import pynvml

        try:
            self._take(self.events, 0)
        finally:
            with contextlib.suppress(pynvml.NVMLError):
                pynvml.nvmlEventSetFree(self._set)
            with contextlib.suppress(pynvml.NVMLError):
                pynvml.nvmlShutdown()
            self._set = None


def judge_xid(gpu: GpuHealth, watch: XidWatch) -> CheckResult:
    """``health_xid[gpuN]``: any Xid the driver raised for this GPU fails (required). Those
    already waiting when the watch began (``metrics.xid_before``) are reported apart from those
    that came during the run (``metrics.xid_events``): the first were there before validation's
    workload; the second came while it ran, and the workload is known-good, so the GPU or the
    driver is not."""
    common: dict[str, Any] = {"name": f"health_xid[gpu{gpu.index}]", "device": f"gpu{gpu.index}",
                              "level": "full", "required": True, "metrics": dict(gpu.identity)}
    if gpu.index not in watch.watched:
        return CheckResult(status="skip", reason=f"{gpu.label}: Xid events not watched: "
                           + (watch.problem or "unknown"), **common)
    before = [xid for index, xid in watch.before if index == gpu.index]
    during = [xid for index, xid in watch.events if index == gpu.index]
    common["metrics"]["xid_before"] = before
    common["metrics"]["xid_events"] = during
    if watch.problem and not before and not during:
        return CheckResult(status="skip", reason=f"{gpu.label}: {watch.problem}", **common)
    if not before and not during:
        return CheckResult(status="pass", detail=f"{gpu.label}: no Xid event before or during "
                           "the run", **common)
    said = []
    if before:
        said.append(f"Xid {', '.join(str(x) for x in dict.fromkeys(before))} already raised "
                    "when validation began, before its workload")
    if during:
        said.append(f"Xid {', '.join(str(x) for x in dict.fromkeys(during))} during the run")
    return CheckResult(status="fail", error=f"{gpu.label}: " + "; ".join(said),
                       hint="look the Xid up in NVIDIA's Xid catalogue (docs.nvidia.com/deploy/"
                            "xid-errors) and dmesg; drain the node: 79 means the GPU fell off "
                            "the bus, 48/63/64/94/95 memory errors, 74 an NVLink error",
                       **common)
