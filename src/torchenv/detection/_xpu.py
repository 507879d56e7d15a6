"""Intel GPUs (torch's ``xpu`` device): the PCI bus in sysfs, and the Level Zero loader.

A display-class PCI function (class ``0x03xxxx``) from vendor ``0x8086`` is an Intel GPU. torch's
XPU build reaches it through Level Zero (``libze_loader.so.1``), so its presence is recorded too.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, NamedTuple

from torchenv.detection.profile import PciDevice

if TYPE_CHECKING:
    from typing import Optional

    from torchenv._files import StrPath

__all__ = ["XpuFacts", "is_intel_gpu", "probe_xpu"]

INTEL_VENDOR = 0x8086
_LIB_DIRS = ("usr/lib/x86_64-linux-gnu", "usr/lib64", "usr/lib", "usr/local/lib",
             "lib/x86_64-linux-gnu", "opt/intel/oneapi/redist/lib")


def is_intel_gpu(vendor: str, pci_class: str) -> bool:
    """True for sysfs ``vendor`` ``0x8086`` with ``class`` ``0x03xxxx`` (display controller)."""
    try:
        v, c = int(vendor.strip(), 16), int(pci_class.strip(), 16)
    except ValueError:
        return False
    return v == INTEL_VENDOR and (c >> 16) == 0x03


class XpuFacts(NamedTuple):
    devices: tuple[str, ...] = ()
    level_zero: bool = False
    level_zero_path: Optional[str] = None


def _level_zero(root: StrPath, environ: Mapping[str, str]) -> Optional[str]:
    dirs = [d for d in environ.get("LD_LIBRARY_PATH", "").split(os.pathsep) if d]
    for d in [*dirs, *(os.path.join(root, d) for d in _LIB_DIRS)]:
        lib = os.path.join(d, "libze_loader.so.1")
        if os.path.exists(lib):
            return lib
    return None


def probe_xpu(root: StrPath, environ: Mapping[str, str],
              pci: Optional[tuple[PciDevice, ...]] = None) -> XpuFacts:
    """Intel GPUs as ``"8086:56a0 (0000:03:00.0, driver xe)"``; empty when there are none.

    ``pci`` is the host's PCI scan when the caller already made it.
    """
    from torchenv.detection._pci import scan_pci

    scanned = scan_pci(root) if pci is None else pci
    devices = [
        f"8086:{d.device} ({d.address}" + (f", driver {d.driver})" if d.driver else ", no driver)")
        for d in scanned
        if d.vendor == "8086"
    ]
    if not devices:
        return XpuFacts()
    lz = _level_zero(root, environ)
    return XpuFacts(devices=tuple(devices), level_zero=lz is not None, level_zero_path=lz)
