"""The NVIDIA kernel module's own word: ``/proc/driver/nvidia`` and ``/sys/module/nvidia``.

These files exist whenever the kernel module is loaded, need no library and no child process, and
name the driver that is *running* (which, after an upgrade without a reboot, is not the one whose
``libnvidia-ml`` is installed).
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, NamedTuple

from torchenv.detection.profile import Gpu
from torchenv.values import DriverVersion, InvalidValue

if TYPE_CHECKING:
    from typing import Optional

    from torchenv._files import StrPath

__all__ = [
    "ProcGpu",
    "driver_version_in",
    "parse_gpu_information",
    "parse_proc_driver_version",
    "parse_sys_module_version",
    "read_kernel_driver_version",
    "read_proc_gpus",
]

# "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.173.02  Tue Jun 23 08:38:17 UTC 2026"
# "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  565.57.01  Release Build  (...)  date"
_NVRM = re.compile(r"^NVRM version:.*?Kernel Module(?: for \S+)?\s+([0-9]+(?:\.[0-9]+){1,2})\b",
                   re.ASCII | re.MULTILINE)
_SYS = re.compile(r"\s*([0-9]+(?:\.[0-9]+){1,2})\s*", re.ASCII)
_NUMBER = re.compile(r"[0-9]+")


def driver_version_in(text: Optional[str]) -> Optional[DriverVersion]:
    """``text``, found where a tool prints the driver version, as one; None when there is none
    or it is malformed (a 5-digit branch is no driver's)."""
    if text is None:
        return None
    try:
        return DriverVersion(text)
    except InvalidValue:
        return None


def parse_proc_driver_version(text: str) -> Optional[DriverVersion]:
    """The driver version in ``/proc/driver/nvidia/version``, or None when it names none.

    Sample (proprietary and open modules)::

        NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.173.02  Tue Jun 23 08:38:17 UTC 2026
        GCC version:  gcc version 14.2.0 (Ubuntu 14.2.0-4ubuntu2~24.04.1)

        NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  565.57.01  Release Build  (...)
    """
    m = _NVRM.search(text)
    return driver_version_in(m.group(1) if m else None)


def parse_sys_module_version(text: str) -> Optional[DriverVersion]:
    """``/sys/module/nvidia/version`` holds the bare version: ``550.78``."""
    m = _SYS.fullmatch(text)
    return driver_version_in(m.group(1) if m else None)


class ProcGpu(NamedTuple):
    """One GPU as ``/proc/driver/nvidia/gpus/<bus>/information`` describes it."""

    minor: Optional[int]
    name: Optional[str]
    uuid: Optional[str]
    bus_id: str


def parse_gpu_information(text: str, bus_id: str = "") -> ProcGpu:
    """Parse ``/proc/driver/nvidia/gpus/0000:01:00.0/information``.

    Sample::

        Model: 		 NVIDIA GeForce RTX 3090
        IRQ:   		 171
        GPU UUID: 	 GPU-00000000-0000-0000-0000-000000000000
        Bus Location: 	 0000:01:00.0
        Device Minor: 	 0
    """
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            fields[key.strip().lower()] = value.strip()
    minor_text = fields.get("device minor", "")
    uuid = fields.get("gpu uuid") or None
    if uuid is not None and not uuid.startswith("GPU-"):
        uuid = None  # "Unknown" or "N/A" on some drivers
    return ProcGpu(
        minor=int(minor_text) if _NUMBER.fullmatch(minor_text) else None,
        name=fields.get("model") or None,
        uuid=uuid,
        bus_id=fields.get("bus location") or bus_id,
    )


def _read(path: str) -> Optional[str]:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except OSError:
        return None


def read_kernel_driver_version(root: StrPath
                               ) -> tuple[Optional[DriverVersion], Optional[str]]:
    """(version, source) from the loaded kernel module; (None, None) when it is not loaded."""
    text = _read(os.path.join(root, "proc/driver/nvidia/version"))
    if text is not None:
        version = parse_proc_driver_version(text)
        if version:
            return version, "proc"
    text = _read(os.path.join(root, "sys/module/nvidia/version"))
    if text is not None:
        version = parse_sys_module_version(text)
        if version:
            return version, "sysfs"
    return None, None


def read_proc_gpus(root: StrPath) -> tuple[Gpu, ...]:
    """The GPUs the kernel module lists, in PCI bus order (which is NVML's index order)."""
    base = os.path.join(root, "proc/driver/nvidia/gpus")
    try:
        names = sorted(n for n in os.listdir(base) if os.path.isdir(os.path.join(base, n)))
    except OSError:
        return ()
    gpus = []
    for i, name in enumerate(names):
        text = _read(os.path.join(base, name, "information"))
        if text is None:
            continue
        info = parse_gpu_information(text, name)
        gpus.append(Gpu(index=i, name=info.name, uuid=info.uuid))
    return tuple(gpus)
