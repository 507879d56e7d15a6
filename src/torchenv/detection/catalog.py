"""Facts the driver did not report, completed from the matrix: a GPU's compute capability from
the GPU catalog, and the CUDA version a driver supports from the driver table.

Each completion says where it came from: a GPU's ``compute_capability_source`` is ``catalog``
(the driver's own answer is ``driver``), a CUDA version read from no tool is ``derived``, and
``HostProfile.sources`` cites the catalog entry or the table row.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Optional

    from torchenv.detection.profile import HostProfile
    from torchenv.matrix.model import Matrix
    from torchenv.values import ComputeCapability, CudaVersion, DriverVersion

__all__ = ["CATALOG", "DERIVED", "DRIVER", "complete_capabilities", "cuda_from_driver"]

DRIVER = "driver"
"""A compute capability the driver reported (NVML, nvidia-smi)."""
CATALOG = "catalog"
"""A compute capability the GPU catalog gives for the GPU's name or PCI id."""
DERIVED = "derived"
"""A CUDA version no tool printed: the newest whose toolkit driver floor the driver meets."""


def complete_capabilities(host: HostProfile, matrix: Matrix) -> HostProfile:
    """``host`` with each GPU's unknown compute capability taken from the GPU catalog.

    Old drivers' nvidia-smi has no ``compute_cap`` field and /proc gives names only; the catalog
    (gpus.yaml, sourced from NVIDIA's compute capability tables) maps those names. A GPU whose
    name is missing or not in the catalog is completed from the host's PCI devices instead, when
    :func:`_capability_by_pci` finds one answer for all of them.
    """
    nv = host.nvidia
    if nv is None or all(g.compute_capability for g in nv.gpus):
        return host
    sources = dict(host.sources)
    by_pci = _capability_by_pci(host, matrix)
    gpus = []
    for g in nv.gpus:
        entry = matrix.nvidia_gpu(g.name) if g.name and not g.compute_capability else None
        if entry is not None:
            g = replace(g, compute_capability=entry.compute_capability.base,
                        compute_capability_source=CATALOG)
            sources[f"nvidia.gpus[{g.index}].compute_capability"] = (
                f"GPU catalog ({entry.name}; sources: {', '.join(entry.sources)})")
        elif not g.compute_capability and by_pci is not None:
            g = replace(g, compute_capability=by_pci[0], compute_capability_source=CATALOG)
            sources[f"nvidia.gpus[{g.index}].compute_capability"] = by_pci[1]
        gpus.append(g)
    return host.with_changes(nvidia=replace(nv, gpus=tuple(gpus)), sources=sources)


def _capability_by_pci(host: HostProfile,
                       matrix: Matrix) -> Optional[tuple[ComputeCapability, str]]:
    """(compute capability, where it came from) shared by every NVIDIA GPU on the PCI bus.

    A GPU's record does not say which PCI function it is, so the catalog's answer is used only
    when it holds for all of them: every NVIDIA display device is in the catalog, the entries
    agree on one compute capability, and the scan shows at least as many devices as the driver
    lists GPUs (a shorter scan may have missed the one in question).
    """
    nv = host.nvidia
    devices = [d for d in host.pci if d.vendor == "10de"]
    if nv is None or not devices or len(devices) < len(nv.gpus):
        return None
    entries = {f"{d.vendor}:{d.device}": matrix.nvidia_gpu_by_pci(d.device) for d in devices}
    found = {pci: e for pci, e in entries.items() if e is not None}
    if len(found) != len(entries):
        return None
    capabilities = {e.compute_capability.base for e in found.values()}
    if len(capabilities) != 1:
        return None
    ids = ", ".join(f"{pci} = {found[pci].name}" for pci in sorted(found))
    cited = ", ".join(dict.fromkeys(s for e in found.values() for s in e.sources))
    return capabilities.pop(), f"GPU catalog by PCI id ({ids}; sources: {cited})"


def cuda_from_driver(driver: DriverVersion, matrix: Matrix, *,
                     windows: bool) -> Optional[tuple[CudaVersion, str]]:
    """(CUDA version, where it came from) for a driver whose tools did not say: the newest CUDA
    minor whose toolkit driver floor (Linux or Windows) ``driver`` meets, or None when it meets
    none. A lower bound: a driver newer than the table's last floor may support more."""
    side = "Windows" if windows else "Linux"
    met = [(f.cuda, floor, f.sources) for f in matrix.toolkit_floors
           if (floor := f.windows if windows else f.linux) is not None and driver >= floor]
    if not met:
        return None
    cuda, floor, cited = max(met, key=lambda m: m[0])
    return cuda, (f"{DERIVED}: driver {driver} meets CUDA {cuda}'s toolkit driver floor "
                  f"({side} ≥ {floor}), the newest it meets in the matrix's driver table "
                  f"(sources: {', '.join(cited)}); no tool reported it, so it may support a "
                  "newer CUDA")
