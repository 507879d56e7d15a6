"""GPUs on the PCI bus, read from sysfs: evidence of hardware that no driver has to confirm.

Each function in ``/sys/bus/pci/devices/<address>/`` has ``vendor`` (``0x10de``), ``device``
(``0x1b80``) and ``class`` (``0x030000``) files; class ``0x03xxxx`` is a display controller
(``0x0300`` VGA, ``0x0302`` 3D controller such as a data-center GPU). The ``driver`` link names
the kernel driver bound to it. Reading a few small files per device costs well under a
millisecond and never blocks on a GPU.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING

from torchenv.detection.profile import PciDevice

if TYPE_CHECKING:
    from torchenv._files import StrPath

__all__ = ["GPU_VENDORS", "is_display_class", "parse_hex_id", "scan_pci"]

GPU_VENDORS = {"10de": "NVIDIA", "1002": "AMD", "8086": "Intel"}


def parse_hex_id(text: str) -> str | None:
    """``"0x10de\\n"`` -> ``"10de"``; None for anything that is not a 16-bit hex id."""
    m = re.fullmatch(r"(?:0x)?([0-9a-f]{4})", text.strip().lower())
    return m.group(1) if m else None


def is_display_class(text: str) -> bool:
    """True for a sysfs ``class`` value ``0x03xxxx`` (display controller of any kind)."""
    try:
        return (int(text.strip(), 16) >> 16) == 0x03
    except ValueError:
        return False


def _read(path: str) -> str:
    try:
        with open(path, encoding="ascii", errors="replace") as f:
            return f.read(64)
    except OSError:
        return ""


def scan_pci(root: StrPath) -> tuple[PciDevice, ...]:
    """The display-class functions of NVIDIA, AMD and Intel under ``root``/sys/bus/pci/devices."""
    base = os.path.join(root, "sys/bus/pci/devices")
    try:
        entries = sorted(os.listdir(base))
    except OSError:
        return ()
    found = []
    for name in entries:
        dev = os.path.join(base, name)
        vendor = parse_hex_id(_read(os.path.join(dev, "vendor")))
        if vendor not in GPU_VENDORS:
            continue
        pci_class = _read(os.path.join(dev, "class")).strip()
        if not is_display_class(pci_class):
            continue
        device = parse_hex_id(_read(os.path.join(dev, "device")))
        if device is None:
            continue
        try:
            driver: str | None = os.path.basename(os.readlink(os.path.join(dev, "driver")))
        except OSError:
            driver = None
        found.append(PciDevice(address=name, vendor=vendor, device=device,
                               pci_class=pci_class.lower(), driver=driver))
    return tuple(found)
