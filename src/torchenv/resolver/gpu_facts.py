"""What the resolver reads of the host's GPUs: each NVIDIA GPU's compute capability completed
from the GPU catalog where the driver did not report it. (The accelerator families present are
the profile's own: ``HostProfile.gpu_kinds``.)"""

from __future__ import annotations

from torchenv.detection.catalog import complete_capabilities
from torchenv.detection.profile import HostProfile
from torchenv.matrix.model import Matrix

__all__ = ["complete_gpu_facts"]


def complete_gpu_facts(host: HostProfile, matrix: Matrix) -> HostProfile:
    """``host`` with each GPU's unknown compute capability taken from the GPU catalog (by name,
    else by PCI id): what detection does itself, done again for a host read from a file."""
    return complete_capabilities(host, matrix)
