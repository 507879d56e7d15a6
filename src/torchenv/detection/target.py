"""The host as a decision reads it: :class:`Target`, made once from a :class:`HostProfile` and the
matrix by :func:`read_target`, before any candidate is judged.

A profile says what detection (or a host file, or the flags) found; a target is that profile
read for deciding: every visible GPU with its compute capability completed from the GPU
catalog, the first GPU of each capability, the accelerator families, the driver facts and
which side's driver floors apply, the Python, platform and C library, and what the catalog
says of the first NVIDIA device on the PCI bus. The resolver's rules, its explanations and its
fixes take this value and read its fields; none of them goes back to the profile's parts, to
detection or to the GPU catalog.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple, Optional

from torchenv.detection.catalog import complete_capabilities
from torchenv.detection.profile import Gpu, HostProfile, NvidiaInfo

if TYPE_CHECKING:
    from torchenv.matrix.model import Matrix
    from torchenv.values import ComputeCapability, CudaVersion, DriverVersion, Platform

__all__ = ["PciHint", "Target", "one_per_capability", "read_target"]


class PciHint(NamedTuple):
    """The first NVIDIA display device on the PCI bus, as the GPU catalog knows it: its name
    and compute capability, or None for both when the catalog does not know the PCI id."""

    address: str
    pci_id: str  # "10de:1b80"
    name: Optional[str] = None
    capability: Optional[ComputeCapability] = None


class Target(NamedTuple):
    """The host a decision is made for, read once (:func:`read_target`)."""

    profile: HostProfile
    """The profile with every GPU's compute capability completed (its warnings, its Python
    and the rest of what a plan reports)."""
    platform: Platform
    python: str  # "3.12", "3.13t"
    glibc: Optional[str]
    musl: Optional[str]
    kinds: frozenset[str]
    """The accelerator families that steer the choice (:attr:`HostProfile.gpu_kinds`)."""
    gpu_host: bool
    """Some accelerator torch could use is here: a family of ``kinds``, or Apple's MPS."""
    nvidia: Optional[NvidiaInfo]
    driver: Optional[DriverVersion]
    cuda_driver: Optional[CudaVersion]
    windows_driver: bool
    """The driver's floors are Windows' (win-amd64, or WSL, whose driver is the Windows one)."""
    gpus: tuple[Gpu, ...]
    """The NVIDIA GPUs torch will see (``CUDA_VISIBLE_DEVICES`` applied), capabilities
    completed."""
    capabilities: tuple[tuple[Gpu, ComputeCapability], ...]
    """The first of ``gpus`` for each compute capability: what rule 3 judges."""
    capability_unknown: tuple[Gpu, ...]
    """The visible GPUs whose compute capability neither the driver nor the catalog gave."""
    rocm_targets: tuple[str, ...]
    pci_hint: Optional[PciHint]

    def with_driver(self, driver: DriverVersion) -> Target:
        """This target with ``driver`` in place of its NVIDIA driver (and no reported CUDA
        version): the what-if of a driver upgrade."""
        return self._replace(driver=driver, cuda_driver=None)

    def with_glibc(self, glibc: str) -> Target:
        """This target on a Linux with ``glibc`` (the what-if of a newer C library)."""
        return self._replace(glibc=glibc)


def one_per_capability(gpus: Sequence[Gpu]) -> list[tuple[Gpu, ComputeCapability]]:
    """The first GPU of each compute capability among ``gpus`` (those without one left out):
    every rule judges a capability, so eight H100s, or 60,000 GPUs of four kinds, are judged
    once per kind, and the first of each kind names the reason."""
    first: dict[ComputeCapability, Gpu] = {}
    for gpu in gpus:
        cc = gpu.compute_capability
        if cc is not None and cc not in first:
            first[cc] = gpu
    return [(gpu, cc) for cc, gpu in first.items()]


def read_target(host: HostProfile, matrix: Matrix) -> Target:
    """``host`` read for deciding: GPUs completed from the GPU catalog (by name, else by PCI id:
    what detection does itself, done here for a profile read from a file), and every fact the
    rules read, worked out once."""
    host = complete_capabilities(host, matrix)
    nv = host.nvidia
    gpus = nv.visible_gpus() if nv is not None else ()
    return Target(
        profile=host,
        platform=host.platform,
        python=host.python.version,
        glibc=host.glibc,
        musl=host.musl,
        kinds=host.gpu_kinds,
        gpu_host=host.has_gpu,
        nvidia=nv,
        driver=nv.driver_version if nv is not None else None,
        cuda_driver=nv.cuda_driver_version if nv is not None else None,
        windows_driver=host.platform.system == "win" or host.wsl,
        gpus=gpus,
        capabilities=tuple(one_per_capability(gpus)),
        capability_unknown=tuple(g for g in gpus if g.compute_capability is None),
        rocm_targets=host.rocm.gfx_targets if host.rocm is not None else (),
        pci_hint=_pci_hint(host, matrix),
    )


def _pci_hint(host: HostProfile, matrix: Matrix) -> Optional[PciHint]:
    for dev in host.pci:
        if dev.vendor != "10de":
            continue
        entry = matrix.nvidia_gpu_by_pci(dev.device)
        pci_id = f"{dev.vendor}:{dev.device}"
        if entry is None:
            return PciHint(dev.address, pci_id)
        return PciHint(dev.address, pci_id, entry.name, entry.compute_capability.base)
    return None
