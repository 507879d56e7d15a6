"""What the resolver reads of the host's GPUs: the accelerator families present, and each NVIDIA
GPU's compute capability completed from the GPU catalog where the driver did not report it."""

from __future__ import annotations

from torchenv.detection.catalog import complete_capabilities
from torchenv.detection.profile import HostProfile
from torchenv.matrix.model import Matrix

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
    """``host`` with each GPU's unknown compute capability taken from the GPU catalog (by name,
    else by PCI id): what detection does itself, done again for a host read from a file."""
    return complete_capabilities(host, matrix)
