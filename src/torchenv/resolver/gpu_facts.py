"""What the resolver reads of the host's GPUs: the accelerator families present, and each NVIDIA
GPU's compute capability completed from the GPU catalog where the driver did not report it."""

from __future__ import annotations

from dataclasses import replace

from torchenv.detection.profile import HostProfile
from torchenv.matrix.model import Matrix
from torchenv.values import ComputeCapability

__all__ = ["complete_gpu_facts", "gpu_kinds"]


def gpu_kinds(host: HostProfile) -> set[str]:
    """The accelerator families on ``host`` that steer the choice: ``cuda``, ``rocm``, ``xpu``."""
    kinds = set()
    if host.nvidia is not None and (host.nvidia.gpus or host.nvidia.driver_version
                                    or host.nvidia.cuda_driver_version):
        kinds.add("cuda")
    if host.rocm is not None and host.rocm.gfx_targets:
        kinds.add("rocm")
    if host.xpu is not None and host.xpu.devices and host.xpu.level_zero:
        # an Intel display device without the Level Zero runtime is usually an iGPU that the
        # xpu build cannot use; it must not steer the choice
        kinds.add("xpu")
    return kinds


def complete_gpu_facts(host: HostProfile, matrix: Matrix) -> HostProfile:
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
            g = replace(g, compute_capability=entry.compute_capability.base)
            sources[f"nvidia.gpus[{g.index}].compute_capability"] = (
                f"GPU catalog ({entry.name}; sources: {', '.join(entry.sources)})")
        elif not g.compute_capability and by_pci is not None:
            g = replace(g, compute_capability=by_pci[0])
            sources[f"nvidia.gpus[{g.index}].compute_capability"] = by_pci[1]
        gpus.append(g)
    return host.with_changes(nvidia=replace(nv, gpus=tuple(gpus)), sources=sources)


def _capability_by_pci(host: HostProfile,
                       matrix: Matrix) -> tuple[ComputeCapability, str] | None:
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
