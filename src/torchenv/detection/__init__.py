"""Host detection: probes at the edge, one frozen HostProfile out."""

from torchenv.detection.overrides import Overrides
from torchenv.detection.profile import (
    Gpu,
    HostProfile,
    NvidiaInfo,
    PythonInfo,
    RocmInfo,
    TorchInfo,
    XpuInfo,
)

__all__ = [
    "Gpu",
    "HostProfile",
    "NvidiaInfo",
    "Overrides",
    "PythonInfo",
    "RocmInfo",
    "TorchInfo",
    "XpuInfo",
]
