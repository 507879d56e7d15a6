"""Run the probes and assemble the HostProfile; apply target overrides.

This module is the only place that decides *which* probes run. A probe whose answer was supplied
by an override is not run at all. The order, and where each fact comes from:

1. Platform: ``platform.system()``/``machine()``; glibc from ``confstr(CS_GNU_LIBC_VERSION)``, or
   the musl loader's banner; WSL from ``/proc/version``; container hints from ``/.dockerenv``,
   ``/run/.containerenv``, ``$container`` and ``/proc/1/cgroup``.
2. NVIDIA, first answer wins for each fact:
   a. NVML (nvidia-ml-py, in-process): driver, CUDA driver version, every GPU's details.
   b. ``/proc/driver/nvidia/version``, then ``/sys/module/nvidia/version``: the loaded driver;
      ``/proc/driver/nvidia/gpus/*/information``: GPU names and UUIDs.
   c. ``nvidia-smi --query-gpu=...`` (only when on PATH; timeout ≤ 5 s): one call for GPUs with
      compute capability and the driver version, then the plain table, whose header names the
      CUDA version the driver supports.
   What no probe said is completed from the matrix, with its source: the CUDA version from the
   driver table (``derived``: the newest CUDA whose toolkit floor the driver meets), a GPU's
   compute capability from the GPU catalog by its name or PCI id (``catalog``).
   ``CUDA_VISIBLE_DEVICES`` then picks the GPUs torch will see.
3. AMD ROCm: KFD topology in sysfs, else ``rocm_agent_enumerator``/``rocminfo``; the version from
   ``/opt/rocm/.info/version``.
4. Intel XPU: Intel display devices on the PCI bus, and the Level Zero loader.
5. Apple: macOS on arm64 has MPS.
6. Python and torch: the current interpreter in-process, or ``python`` through one child process;
   torch is never imported.

A probe that fails or times out adds a warning and leaves the rest of the profile intact, with
exceptions that are the user's own input and so exit 2 (BadInput): an interpreter named to
be inspected that does not answer (never replaced by this one), a driver path named in
``TORCHENV_NVML_LIBRARY`` or ``TORCHENV_NVIDIA_SMI`` that cannot be used, and a
``TORCHENV_PROBE_ROOT`` that is not a directory.
The probes that wait on child processes or on the driver (NVIDIA, ROCm, another interpreter)
run at the same time, each in its own thread with its own warnings, and are merged in the order
above, so the profile does not depend on which finished first; all of them end within one
deadline.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from torchenv.detection._platform import current_platform, probe_platform
from torchenv.detection.overrides import Overrides
from torchenv.detection.profile import (
    Gpu,
    HostProfile,
    NvidiaInfo,
    PciDevice,
    PythonInfo,
    RocmInfo,
    TorchInfo,
    XpuInfo,
)
from torchenv.errors import BadInput
from torchenv.values import CudaVersion, DriverVersion, Platform

if TYPE_CHECKING:
    from threading import Thread
    from typing import Any, Optional, TypeVar, Union

    from torchenv._files import StrPath
    from torchenv.matrix.model import Matrix

    T = TypeVar("T")

__all__ = ["DEFAULT_TIMEOUT", "apply_overrides", "current_platform", "detect", "probe_timeout"]

_MACOS_ARM64 = Platform("macos-arm64")

DEFAULT_TIMEOUT = 5.0
"""Seconds any one probe's child processes may take; ``TORCHENV_PROBE_TIMEOUT`` lowers it."""


def probe_timeout(environ: Mapping[str, str]) -> float:
    """``TORCHENV_PROBE_TIMEOUT`` (seconds, 0 < t ≤ 5) or the default 5 s."""
    raw = environ.get("TORCHENV_PROBE_TIMEOUT", "").strip()
    if not raw:  # empty or blank means unset, as for every variable
        return DEFAULT_TIMEOUT
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 < value <= DEFAULT_TIMEOUT:
        raise BadInput(f"TORCHENV_PROBE_TIMEOUT: {raw!r} is not a number of seconds in (0, 5]",
                       hint="e.g. TORCHENV_PROBE_TIMEOUT=2")
    return value


def _expected_failure(exc: BaseException) -> bool:
    """The failures a probe may meet on a real machine: I/O, timeouts, NVML errors, output it
    cannot parse. Anything else is a bug in torchenv and must surface as one."""
    import subprocess

    if isinstance(exc, (OSError, TimeoutError, subprocess.SubprocessError, ValueError,
                        LookupError)):
        return True
    return any(k.__name__ == "NVMLError" for k in type(exc).__mro__)


def _guard(name: str, warnings: list[str], fn: Callable[[], T],
           evidence: Optional[list[str]] = None) -> Optional[T]:
    try:
        return fn()
    except BadInput:
        raise
    except Exception as exc:
        if not _expected_failure(exc):
            raise
        warnings.append(f"{name} probe failed ({type(exc).__name__}: {exc}); its facts are "
                        "unknown")
        if evidence is not None:
            evidence.append(f"the {name} probe failed ({type(exc).__name__})")
        return None


def detect(
    overrides: Overrides | None = None,
    *,
    python: str | None = None,
    environ: Mapping[str, str] | None = None,
    root: Union[StrPath, None] = None,
    timeout: float | None = None,
    python_facts: Mapping[str, Any] | None = None,
    matrix: Matrix | None = None,
) -> HostProfile:
    """Probe this machine (skipping what ``overrides`` supplies) and return its HostProfile.

    ``python`` names another interpreter to inspect (``python_facts``: what it already reported,
    so that no second child is started for it); ``environ`` replaces ``os.environ`` and
    ``root`` (or ``TORCHENV_PROBE_ROOT``) replaces ``/`` for every file the probes read: sysfs,
    /proc, /dev, /opt/rocm (a mounted system image, or the fake trees of tests). ``matrix``
    completes what the driver did not report (a GPU's compute capability from the GPU
    catalog, the CUDA version from the driver table); loaded only when needed if not given.
    """
    overrides = overrides or Overrides()
    env: Mapping[str, str] = os.environ if environ is None else environ
    if root is None and env.get("TORCHENV_PROBE_ROOT", "").strip():
        root = env["TORCHENV_PROBE_ROOT"].strip()
        if not os.path.isdir(root):  # every probe would find nothing: a GPU host read as none
            raise BadInput(f"TORCHENV_PROBE_ROOT: {root} is not a directory",
                           hint="give the folder to read in place of /, or unset it")
    base = os.fspath(root) if root is not None else "/"
    limit = probe_timeout(env) if timeout is None else timeout
    warnings: list[str] = []
    sources: dict[str, str] = {}

    facts = probe_platform(base, env, timeout=limit)
    sources["platform"] = "platform.system() + platform.machine()"
    if facts.glibc:
        sources["glibc"] = "confstr(CS_GNU_LIBC_VERSION)"
    if facts.musl:
        sources["musl"] = "musl loader"
    if facts.wsl:
        sources["wsl"] = "/proc/version"
        if facts.wsl_version == 1:
            warnings.append("WSL1 has no GPU support; use WSL2 for CUDA")
    if facts.container and facts.container_source:
        sources["container"] = facts.container_source
    foreign = overrides.platform is not None and overrides.platform != facts.platform
    probe_gpus = not foreign and not overrides.no_gpu

    matrices = _MatrixOnce(matrix)
    pci: tuple[PciDevice, ...] = ()
    evidence: list[str] = []
    if probe_gpus and facts.os == "linux":
        from torchenv.detection._pci import scan_pci

        pci = scan_pci(base)
        if pci:
            sources["pci"] = "/sys/bus/pci/devices"
        evidence.extend(f"PCI {d.vendor}:{d.device} at {d.address}"
                        + (f" (driver {d.driver})" if d.driver else " (no driver bound)")
                        for d in pci if d.vendor == "10de")
    # a probe that waits on a child runs in a thread of its own while the others go on; one that
    # only reads files runs here (a thread would cost more than it saves: the GIL is not free)
    rocm_job: Optional[_Job] = None
    if probe_gpus and overrides.rocm_archs is None and facts.os == "linux":
        from torchenv.detection._rocm import needs_tools

        rocm_job = _Job("ROCm", lambda w, s: _guard(
            "ROCm", w, lambda: _probe_rocm(base, env, limit, w, s)),
            background=needs_tools(base, env))
    py_job: Optional[_Job] = None
    if python is not None and python_facts is None:  # a child process, waited for in parallel
        py_job = _Job("Python", lambda w, s: _probe_python(python, env, w, s, timeout=limit),
                      background=True)
    nv_job: Optional[_Job] = None
    if probe_gpus and not overrides.nvidia_given and facts.os != "darwin":
        if facts.os == "linux":
            evidence.extend(_nvidia_device_files(base))
        nv_evidence: list[str] = []
        nv_job = _Job("NVIDIA", lambda w, s: _guard(
            "NVIDIA", w, lambda: _probe_nvidia(base, env, limit, facts.wsl, w, s, nv_evidence,
                                               windows=facts.os == "win", matrix=matrices),
            nv_evidence), evidence=nv_evidence, background=False)
    deadline = time.monotonic() + 2 * limit + 1.0  # every probe's children are bounded by limit
    xpu: Optional[XpuInfo] = None
    if probe_gpus and facts.os == "linux":
        xpu = _guard("Intel XPU", warnings, lambda: _probe_xpu(base, env, sources, pci))
    mps = facts.platform == _MACOS_ARM64
    if mps:
        sources["mps"] = "macOS on arm64"
    if py_job is None:
        py_info, torch = _probe_python(python, env, warnings, sources, facts=python_facts)
    nvidia = nv_job.join(deadline, warnings, sources, evidence) if nv_job else None
    rocm = rocm_job.join(deadline, warnings, sources) if rocm_job else None
    if py_job is not None:
        got = py_job.join(deadline, warnings, sources)
        if got is None:  # its child is bounded by ``limit``: never, but never another's facts
            raise _no_answer(str(python), limit)
        py_info, torch = got
    profile = HostProfile(
        platform=facts.platform,
        python=py_info,
        os=facts.os,
        machine=facts.machine,
        glibc=facts.glibc if overrides.glibc is None else None,
        musl=facts.musl,
        wsl=facts.wsl,
        container=facts.container,
        nvidia=nvidia,
        rocm=rocm,
        xpu=xpu,
        mps=mps,
        torch=torch,
        warnings=tuple(dict.fromkeys(warnings)),
        sources=sources,
        pci=pci,
        nvidia_evidence=tuple(dict.fromkeys(evidence)),
    )
    if nvidia is not None and not all(g.compute_capability for g in nvidia.gpus):
        profile = _complete_capabilities(profile, matrices())
    return apply_overrides(profile, overrides)


class _MatrixOnce:
    """The matrix, loaded the first time a probe needs it (most detections never do)."""

    def __init__(self, matrix: Optional[Matrix]) -> None:
        self._matrix = matrix

    def __call__(self) -> Matrix:
        if self._matrix is None:
            from torchenv.matrix.loader import load_matrix

            self._matrix = load_matrix()
        return self._matrix


def _complete_capabilities(profile: HostProfile, matrix: Matrix) -> HostProfile:
    """``profile`` with the GPU catalog's compute capability for each GPU the driver did not
    report one for, and a warning naming the GPUs still unknown."""
    from torchenv.detection.catalog import complete_capabilities

    profile = complete_capabilities(profile, matrix)
    assert profile.nvidia is not None
    unknown = [g for g in profile.nvidia.gpus if g.compute_capability is None]
    if not unknown:
        return profile
    named = ", ".join(f"{g.index}" + (f" ({g.name})" if g.name else "") for g in unknown)
    return profile.with_changes(warnings=(*profile.warnings, (
        f"compute capability unknown for GPU {named}: no NVML, no nvidia-smi that reports it, "
        "and not in the GPU catalog; give it with --gpu, e.g. --gpu 8.6")))


class _Job:
    """A probe with its own warnings and sources, run in a thread of its own (``background``)
    or at once, and merged at ``join`` (by deadline) in the order the caller chooses.

    A probe's expected failures are already warnings (``_guard``); anything else it raises is a
    bug and is raised again in the caller's thread at ``join``.
    """

    def __init__(self, name: str, fn: Callable[[list[str], dict[str, str]], Any], *,
                 background: bool, evidence: Optional[list[str]] = None) -> None:
        self.name = name
        self.warnings: list[str] = []
        self.sources: dict[str, str] = {}
        self.evidence = evidence
        self.result: Any = None
        self.error: Optional[BaseException] = None
        self._fn = fn
        self._thread: Optional[Thread] = None
        if not background:  # run now, in this thread; join only merges
            self._run()
            return
        import threading  # only for a probe that waits on a child

        self._thread = threading.Thread(target=self._run, name=f"torchenv-probe-{name}",
                                        daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self.result = self._fn(self.warnings, self.sources)
        except BaseException as exc:  # handed to the caller's thread by join
            self.error = exc

    def join(self, deadline: float, warnings: list[str], sources: dict[str, str],
             evidence: Optional[list[str]] = None) -> Any:
        if self._thread is not None:
            self._thread.join(max(0.0, deadline - time.monotonic()))
        if self._thread is not None and self._thread.is_alive():  # bounded children: never
            warnings.append(f"the {self.name} probe did not finish in time; its facts are "
                            "unknown")
            if evidence is not None:
                evidence.append(f"the {self.name} probe did not finish")
            return None
        if self.error is not None:
            raise self.error
        warnings.extend(self.warnings)
        sources.update(self.sources)
        if evidence is not None and self.evidence:
            evidence.extend(self.evidence)
        return self.result


def _current_python_fallback() -> PythonInfo:
    import platform
    import sys

    return PythonInfo(version=f"{sys.version_info[0]}.{sys.version_info[1]}",
                      executable=sys.executable, full_version=platform.python_version())


def _nvidia_device_files(root: str) -> list[str]:
    """``/dev/nvidia0`` .. and ``/proc/driver/nvidia``: the kernel driver is (or was) loaded."""
    found = []
    try:
        names = sorted(n for n in os.listdir(os.path.join(root, "dev"))
                       if re.fullmatch(r"nvidia[0-9]+", n))
    except OSError:
        names = []
    if names:
        found.append("/dev/" + names[0] + (f" (+{len(names) - 1} more)" if len(names) > 1
                                           else ""))
    if os.path.isdir(os.path.join(root, "proc/driver/nvidia")):
        found.append("/proc/driver/nvidia")
    return found


def _probe_nvidia(root: str, env: Mapping[str, str], limit: float, wsl: bool,
                  warnings: list[str], sources: dict[str, str],
                  evidence: list[str], *, windows: bool,
                  matrix: Callable[[], Matrix]) -> Optional[NvidiaInfo]:
    from torchenv.detection._nvidia_proc import read_kernel_driver_version, read_proc_gpus
    from torchenv.detection._nvidia_smi import drivers_own, find_nvidia_smi, probe_nvidia_smi
    from torchenv.detection._nvml import probe_nvml_bounded

    named_smi = bool(env.get("TORCHENV_NVIDIA_SMI", "").strip())
    if named_smi:
        find_nvidia_smi(env, wsl=wsl)  # a path the user named is checked even when NVML answers
    nvml = probe_nvml_bounded(wsl=wsl, timeout=limit, environ=env)
    warnings.extend(nvml.warnings)
    if not nvml.ok and nvml.warnings:
        evidence.append(f"NVML loaded but failed: {nvml.warnings[0]}")
    driver: Optional[DriverVersion] = None
    cuda: Optional[CudaVersion] = None
    source = "unknown"
    gpus: tuple[Gpu, ...] = ()
    if nvml.ok:
        driver, cuda, gpus, source = (nvml.driver_version, nvml.cuda_driver_version, nvml.gpus,
                                      "nvml")
        sources.update({"nvidia": "nvml", "nvidia.gpus": "nvml"})
        if cuda:
            sources["nvidia.cuda_driver_version"] = "nvml"
    kernel: Optional[DriverVersion] = None
    if driver is None:
        kernel, ksource = read_kernel_driver_version(root)
        if kernel and ksource:
            driver, source = kernel, source if nvml.ok else ksource
            sources["nvidia"] = ("/proc/driver/nvidia/version" if ksource == "proc"
                                 else "/sys/module/nvidia/version")
    if not nvml.ok:
        proc_gpus = read_proc_gpus(root)
        if proc_gpus:
            gpus = proc_gpus
            sources["nvidia.gpus"] = "/proc/driver/nvidia/gpus"
        exe = find_nvidia_smi(env, wsl=wsl)
        if exe is not None:
            # the module's version speaks for this nvidia-smi only when both are this system's
            same = root == "/" and kernel is not None and drivers_own(exe)
            smi = probe_nvidia_smi(exe, timeout=limit, env=dict(env),
                                   kernel_driver=kernel if same else None,
                                   named=named_smi)
            warnings.extend(smi.warnings)
            if not smi.ok:
                evidence.append(f"{exe} exists but failed: "
                                + (smi.warnings[0] if smi.warnings else "no answer"))
            if smi.ok:
                gpus = _merge_gpus(gpus, smi.gpus)
                sources["nvidia.gpus"] = "nvidia-smi --query-gpu"
                if driver is None and smi.driver_version:
                    driver, source = smi.driver_version, "nvidia-smi"
                    sources["nvidia"] = "nvidia-smi"
                if smi.cuda_driver_version and cuda is None:
                    cuda = smi.cuda_driver_version
                    sources["nvidia.cuda_driver_version"] = "nvidia-smi"
    if driver is None and not gpus:
        return None
    if wsl:
        sources["nvidia.wsl"] = "driver on the Windows side (/usr/lib/wsl/lib)"
    cuda_source = sources.get("nvidia.cuda_driver_version")
    if cuda is None and driver is not None:
        from torchenv.detection.catalog import DERIVED, cuda_from_driver

        derived = cuda_from_driver(driver, matrix(), windows=windows or wsl)
        if derived is not None:
            cuda, sources["nvidia.cuda_driver_version"] = derived
            cuda_source = DERIVED
    from torchenv.detection._cuda_visible import parse_cuda_visible_devices
    from torchenv.detection.catalog import DRIVER

    gpus = tuple(replace(g, compute_capability_source=DRIVER) if g.compute_capability else g
                 for g in gpus)
    cvd = env.get("CUDA_VISIBLE_DEVICES")
    visible, notes = parse_cuda_visible_devices(cvd, gpus, env)
    warnings.extend(notes)
    if cvd is not None:
        sources["nvidia.visible"] = "CUDA_VISIBLE_DEVICES"
    return NvidiaInfo(driver_version=driver, cuda_driver_version=cuda, source=source, gpus=gpus,
                      cuda_visible_devices=cvd, visible=visible,
                      cuda_driver_version_source=cuda_source if cuda else None)


def _merge_gpus(base: tuple[Gpu, ...], better: tuple[Gpu, ...]) -> tuple[Gpu, ...]:
    """``better``'s GPUs, with any field it lacks taken from ``base`` (same index)."""
    if not base:
        return better
    by_index = {g.index: g for g in base}
    merged = []
    for g in better:
        old = by_index.get(g.index)
        if old is not None:
            g = Gpu(index=g.index, name=g.name or old.name,
                    compute_capability=g.compute_capability or old.compute_capability,
                    memory_mib=g.memory_mib or old.memory_mib, uuid=g.uuid or old.uuid,
                    mig_mode=g.mig_mode if g.mig_mode is not None else old.mig_mode)
        merged.append(g)
    return tuple(merged)


def _probe_rocm(root: str, env: Mapping[str, str], limit: float, warnings: list[str],
                sources: dict[str, str]) -> Optional[RocmInfo]:
    from torchenv.detection._rocm import probe_rocm

    facts = probe_rocm(root, env, timeout=limit)
    warnings.extend(facts.warnings)
    if facts.version:
        sources["rocm.version"] = f"{facts.rocm_path}/.info/version"
    if not facts.gfx_targets:
        return None
    sources["rocm"] = facts.source or "unknown"
    return RocmInfo(version=facts.version, gfx_targets=facts.gfx_targets,
                    source=facts.source or "unknown")


def _probe_xpu(root: str, env: Mapping[str, str], sources: dict[str, str],
               pci: tuple[PciDevice, ...]) -> Optional[XpuInfo]:
    from torchenv.detection._xpu import probe_xpu

    facts = probe_xpu(root, env, pci)
    if not facts.devices:
        return None
    sources["xpu"] = "/sys/bus/pci/devices"
    if facts.level_zero_path:
        sources["xpu.level_zero"] = facts.level_zero_path
    return XpuInfo(devices=facts.devices, level_zero=facts.level_zero, source="sysfs")


def _no_answer(python: str, limit: float) -> BadInput:
    return BadInput(f"interpreter {python} did not answer within {limit:g} s",
                    hint="give the path of a Python 3.7 or newer interpreter that starts "
                    "(TORCHENV_PROBE_TIMEOUT sets how long it may take, at most 5 s)",
                    field="interpreter", value=python)


def _probe_python(python: Optional[str], env: Mapping[str, str], warnings: list[str],
                  sources: dict[str, str], *, facts: Mapping[str, Any] | None = None,
                  timeout: float = DEFAULT_TIMEOUT) -> tuple[PythonInfo, Optional[TorchInfo]]:
    from torchenv.detection import _python_env

    if python is not None:
        if facts is None:
            facts = _python_env.inspect_interpreter(python, environ=env, timeout=timeout)
        origin = f"child process: {python} -I -c"
    else:
        got = _guard("Python", warnings, lambda: _python_env.inspect_current(env))
        if got is None:
            return _current_python_fallback(), None
        facts = got
        origin = "this interpreter"
    sources["python"] = origin
    info = _python_env.python_info_from(facts)
    torch = _python_env.torch_info_from(facts)
    if torch is not None:
        sources["torch"] = "importlib.metadata + torch/version.py (" + origin + ")"
    return info, torch


def apply_overrides(profile: HostProfile, overrides: Overrides) -> HostProfile:
    """``profile`` with every supplied override in place of the detected fact."""
    if not overrides.any:
        return profile
    changes: dict[str, object] = {}
    sources = dict(profile.sources)
    if overrides.platform is not None:
        changes["platform"] = overrides.platform
        sources["platform"] = "override"
        if overrides.platform.system != "linux":
            changes["glibc"] = None
        changes["mps"] = overrides.platform == _MACOS_ARM64
        if overrides.platform != profile.platform:
            # another platform's GPUs are not this machine's GPUs
            if overrides.driver is None and overrides.gpus is None:
                changes["nvidia"] = None
            if overrides.rocm_archs is None:
                changes["rocm"] = None
            changes["xpu"] = None
            changes["torch"] = None
            changes["pci"] = ()
            changes["nvidia_evidence"] = ()
            changes["wsl"] = False
            changes["container"] = None
            if overrides.glibc is None and overrides.platform.system == "linux":
                changes["glibc"] = None
    if overrides.python is not None:
        free = overrides.python.endswith("t")
        changes["python"] = PythonInfo(version=overrides.python, free_threaded=free,
                                       env_kind="override")
        sources["python"] = "override"
        if overrides.python != profile.python.version:
            changes["torch"] = None
    if overrides.glibc is not None:
        changes["glibc"] = overrides.glibc
        sources["glibc"] = "override"
    if overrides.no_gpu:
        changes.update(nvidia=None, rocm=None, xpu=None, mps=False, nvidia_evidence=())
        sources["gpu"] = "override (--no-gpu)"
    else:
        if overrides.driver is not None or overrides.gpus is not None:
            base = profile.nvidia
            gpus: tuple[Gpu, ...]
            if overrides.gpus is not None:
                gpus = tuple(Gpu(index=i, compute_capability=cc,
                                 compute_capability_source="override")
                             for i, cc in enumerate(overrides.gpus))
            else:
                gpus = base.gpus if base else ()
            driver = overrides.driver or (base.driver_version if base else None)
            if overrides.gpus == () and overrides.driver is None:
                changes["nvidia"] = None
            else:
                keep_gpus = overrides.gpus is None and base is not None
                changes["nvidia"] = NvidiaInfo(
                    driver_version=driver,
                    cuda_driver_version=None if overrides.driver else
                    (base.cuda_driver_version if base else None),
                    cuda_driver_version_source=None if overrides.driver else
                    (base.cuda_driver_version_source if base else None),
                    # one supplied value is merged with what the probes found for the other
                    source="override" if (overrides.driver and overrides.gpus is not None)
                    or base is None else f"override+{base.source}",
                    gpus=gpus,
                    cuda_visible_devices=base.cuda_visible_devices if keep_gpus and base
                    else None,
                    visible=base.visible if keep_gpus and base else None,
                )
            sources["nvidia"] = "override"
        if overrides.rocm_archs is not None:
            changes["rocm"] = RocmInfo(version=None, gfx_targets=overrides.rocm_archs,
                                       source="override")
            sources["rocm"] = "override"
    changes["sources"] = sources
    return profile.with_changes(**changes)
