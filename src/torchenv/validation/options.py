"""What a validation run is asked to do (:class:`ValidationOptions`) and what it tells its caller
as it goes (:data:`ProgressEvent`): the types the runner and the multi-process collectives share.

Kept apart from :mod:`torchenv.validation.runner`, which starts the collectives, so that
:mod:`torchenv.validation.collectives` can take them without importing the runner.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Literal, Optional, Union

from torchenv.validation.host import GpuHost
from torchenv.validation.report import CheckResult

if TYPE_CHECKING:
    from torchenv.validation.companions import CompanionRequest

__all__ = ["Level", "Peak", "ProgressEvent", "ValidationOptions"]

Level = Literal["quick", "full"]

ProgressEvent = Union[tuple[Literal["plan"], list[str]], tuple[Literal["start"], str],
                      tuple[Literal["result"], CheckResult]]
Peak = Mapping[str, Optional[float]]


@dataclass(frozen=True)
class ValidationOptions:
    """What to validate and how. ``timeout`` (seconds) replaces every check's own budget."""

    python: str
    level: Level = "quick"
    timeout: Optional[float] = None
    nnodes: int = 1
    node_rank: Optional[int] = None
    rdzv_endpoint: Optional[str] = None
    nproc_per_node: Optional[int] = None
    env: Mapping[str, str] = field(default_factory=dict)
    peak_lookup: Optional[Callable[[str], Optional[Peak]]] = None
    """GPU name → expected peaks (``fp16_tflops``, ``bf16_tflops``, ``memory_bandwidth_gbs``)."""
    host: Optional[GpuHost] = None
    """Detection's view of the NVIDIA GPUs; handed to the child and compared with torch's."""
    only: Optional[frozenset[str]] = None
    """Run only these checks (``matmul`` also selects ``matmul[cuda:1]``; ``health`` selects
    every node-health check); import_torch, device_count and the companion checks always
    run."""
    companions: tuple[CompanionRequest, ...] = ()
    """The companions ``--with`` names: each is imported and given one small real operation in
    the child (checks ``companion:NAME`` and ``companion:NAME:OP``)."""

    def selects(self, name: str) -> bool:
        if self.only is None or name.startswith("companion:"):
            return True
        base = name.split("[", 1)[0]
        return (name in self.only or base in self.only
                or (base.startswith("health_") and "health" in self.only))
