"""Run the probes and assemble the HostProfile; apply target overrides.

This module is the only place that decides *which* probes run. A probe whose answer was supplied
by an override is not run at all.
"""

from __future__ import annotations

import os
import platform as _platform
import sys
from collections.abc import Mapping

from torchenv.detection.overrides import Overrides
from torchenv.detection.profile import Gpu, HostProfile, NvidiaInfo, PythonInfo, RocmInfo

__all__ = ["apply_overrides", "current_platform", "detect"]


def current_platform(system: str | None = None, machine: str | None = None) -> str:
    """This machine's platform name (``linux-x86_64``, ``win-amd64``, ``macos-arm64``, ...)."""
    system = (system or _platform.system()).lower()
    machine = (machine or _platform.machine()).lower()
    arm = machine in ("aarch64", "arm64")
    if system == "linux":
        return "linux-aarch64" if arm else "linux-x86_64"
    if system == "darwin":
        return "macos-arm64" if arm else "macos-x86_64"
    if system == "windows":
        return "win-amd64"
    return f"{system}-{machine}"


def _this_python() -> PythonInfo:
    free = bool(getattr(sys, "_is_gil_enabled", None)) and not sys._is_gil_enabled()  # type: ignore[attr-defined]
    ver = f"{sys.version_info.major}.{sys.version_info.minor}"
    return PythonInfo(
        version=ver + ("t" if free else ""),
        implementation=sys.implementation.name,
        free_threaded=free,
        executable=sys.executable,
        full_version=_platform.python_version(),
        env_kind="venv" if sys.prefix != sys.base_prefix else "system",
    )


def detect(
    overrides: Overrides | None = None,
    *,
    python: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> HostProfile:
    """Probe this machine (skipping what ``overrides`` supplies) and return its HostProfile."""
    overrides = overrides or Overrides()
    env = os.environ if environ is None else environ
    del env, python
    plat = overrides.platform or current_platform()
    glibc = None
    if plat.startswith("linux") and overrides.glibc is None and overrides.platform is None:
        libc, ver = _platform.libc_ver()
        glibc = ver if libc == "glibc" and ver else None
    profile = HostProfile(
        platform=plat,
        python=_this_python(),
        os=_platform.system().lower(),
        machine=_platform.machine().lower(),
        glibc=glibc,
        mps=plat == "macos-arm64",
    )
    return apply_overrides(profile, overrides)


def apply_overrides(profile: HostProfile, overrides: Overrides) -> HostProfile:
    """``profile`` with every supplied override in place of the detected fact."""
    if not overrides.any:
        return profile
    changes: dict[str, object] = {}
    sources = dict(profile.sources)
    if overrides.platform is not None:
        changes["platform"] = overrides.platform
        sources["platform"] = "override"
        if not overrides.platform.startswith("linux"):
            changes["glibc"] = None
        changes["mps"] = overrides.platform == "macos-arm64"
        if overrides.platform != profile.platform:
            # another platform's GPUs are not this machine's GPUs
            if overrides.driver is None and overrides.gpus is None:
                changes["nvidia"] = None
            if overrides.rocm_archs is None:
                changes["rocm"] = None
            changes["xpu"] = None
            changes["torch"] = None
            changes["wsl"] = False
            changes["container"] = None
            if overrides.glibc is None and overrides.platform.startswith("linux"):
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
        changes.update(nvidia=None, rocm=None, xpu=None, mps=False)
        sources["gpu"] = "override (--no-gpu)"
    else:
        if overrides.driver is not None or overrides.gpus is not None:
            base = profile.nvidia
            gpus: tuple[Gpu, ...]
            if overrides.gpus is not None:
                gpus = tuple(Gpu(index=i, compute_capability=cc)
                             for i, cc in enumerate(overrides.gpus))
            else:
                gpus = base.gpus if base else ()
            driver = overrides.driver or (base.driver_version if base else None)
            if overrides.gpus == () and overrides.driver is None:
                changes["nvidia"] = None
            else:
                changes["nvidia"] = NvidiaInfo(
                    driver_version=driver,
                    cuda_driver_version=None if overrides.driver else
                    (base.cuda_driver_version if base else None),
                    source="override",
                    gpus=gpus,
                )
            sources["nvidia"] = "override"
        if overrides.rocm_archs is not None:
            changes["rocm"] = RocmInfo(version=None, gfx_targets=overrides.rocm_archs,
                                       source="override")
            sources["rocm"] = "override"
    changes["sources"] = sources
    return profile.with_changes(**changes)
