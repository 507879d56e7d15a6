"""What torchenv's own detection says about the GPUs the validation child should find.

The child (``_probe.py``) cannot import torchenv, so the parent decides from its HostProfile
whether this is an NVIDIA GPU host (NVML, nvidia-smi, the PCI scan, /dev/nvidia*, WSL2's GPU
bridge) and how many GPUs torch should see, and hands the first to the child. Pure: a profile
in, facts out.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    from torchenv.detection import HostProfile

__all__ = ["GpuHost", "device_count_result", "gpu_host", "gpu_slices"]


_MIG_NAME = re.compile(r"\bMIG\b")


@dataclass(frozen=True)
class GpuHost:
    """``nvidia``: detection found an NVIDIA GPU or a trace of one. ``expected``: how many CUDA
    devices torch should report (None when that cannot be known: no list of GPUs, MIG)."""

    nvidia: bool
    expected: Optional[int]
    why: str


def gpu_host(profile: HostProfile) -> GpuHost:
    nv = profile.nvidia
    if nv is not None and nv.gpus:
        if any(g.mig_mode for g in nv.gpus):
            return GpuHost(True, None, "MIG mode is on: torch counts MIG instances, not GPUs")
        visible = nv.visible_gpus()
        source = "NVML/nvidia-smi" + (f" with CUDA_VISIBLE_DEVICES={nv.cuda_visible_devices}"
                                      if nv.visible is not None else "")
        return GpuHost(True, len(visible), f"{len(visible)} visible by {source}")
    if (nv is not None and nv.driver_version) or profile.nvidia_evidence:
        traces = ", ".join(profile.nvidia_evidence) or "an NVIDIA driver"
        return GpuHost(True, None, f"an NVIDIA GPU is present ({traces}) but not listed")
    return GpuHost(False, 0, "detection found no NVIDIA GPU")


def device_count_result(host: GpuHost, torch_devices: int) -> tuple[str, str]:
    """(status, text) for comparing detection's GPU count with ``torch.cuda.device_count()``."""
    if not host.nvidia:
        return "skip", "detection found no NVIDIA GPU"
    if host.expected is None:
        return "skip", f"cannot compare: {host.why}"
    if host.expected == torch_devices:
        return "pass", f"torch sees {torch_devices} CUDA device(s); {host.why}"
    return "fail", (f"torch sees {torch_devices} CUDA device(s) but {host.why}: a GPU torch "
                    "cannot use is missing from every check")


def gpu_slices(device_names: Sequence[str], vgpus: Sequence[str] = ()) -> list[str]:
    """Each CUDA device that is a slice of a GPU rather than a whole one, described.

    ``device_names``: torch's name of each CUDA device; CUDA names a MIG instance after the GPU
    and its profile (``NVIDIA A100-SXM4-40GB MIG 1g.5gb``). ``vgpus``: the GPUs NVML reports in
    vGPU mode (a virtual machine's share of a GPU), already described.
    """
    slices = [f"cuda:{i} is a MIG instance ({name})" for i, name in enumerate(device_names)
              if _MIG_NAME.search(name)]
    return slices + list(vgpus)
