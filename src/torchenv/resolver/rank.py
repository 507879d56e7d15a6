"""The ranking of docs/resolution.md: one :class:`RankKey` per compatible candidate, whose fields
are the ranking's sentences in order; :func:`ranked` sorts by it.

Each fact counts once: the arch evidence only in sentence 2, the index entry only in its own
field, so neither decides the :class:`Level` within a release.
"""

from __future__ import annotations

from enum import IntEnum
from typing import NamedTuple

from torchenv.detection.profile import HostProfile
from torchenv.detection.target import Target
from torchenv.matrix.model import Evidence, Matrix
from torchenv.resolver.candidate import Candidate, as_target, evaluate
from torchenv.resolver.plan import Rejection
from torchenv.resolver.request import Request

__all__ = ["Level", "RankKey", "Tier", "rank_key", "ranked"]


class Tier(IntEnum):
    """The tiers of sentence 6 within a release, best first."""

    PYPI = 0  # PyTorch's PyPI build, fully compatible: the simplest command
    FULL = 1  # another fully compatible variant
    WITH_WARNINGS = 2  # any other: the driver, the GPUs' reach or the index entry warns


class Level(IntEnum):
    """Where a candidate stands within its tier, best first (sentence 6)."""

    PYPI = 0  # PyTorch's PyPI build, fully compatible: the simplest command
    FULL = 1  # another fully compatible variant
    WITHOUT_ITS_GPU = 2  # asked for by name on a host without its GPU
    PTX_JIT = 3  # a visible GPU is reached only by JIT-compiling PTX
    MINOR_VERSION_COMPAT = 4  # the driver is below the variant's toolkit floor


class RankKey(NamedTuple):
    """Smaller ranks first; compared field by field, in the order of the ranking's sentences."""

    # 1. on a host with a GPU, every GPU build above every CPU build
    cpu_build_on_gpu_host: bool
    # 2. evidence before recency: support for every visible GPU confirmed or inferred first
    arch_support_unknown: bool
    # 3. among known support, a GPU reached only by PTX of an architecture more than one major
    #    older (a long JIT, kernels may be missing) after every build that runs it natively
    ptx_jit_across_majors: bool
    # 4. among unknown support: the variant's confirmed lists in other releases all run the
    #    GPUs (0), say nothing clear (1), all leave one out (2)
    neighbours: int
    # 5. newest torch first (the release's version negated)
    older_torch: tuple[int, ...]
    # 6. within a release: the tier, a confirmed index entry before one that is not, the level
    tier: Tier
    index_unconfirmed: bool
    level: Level
    # within a level, newest CUDA (ROCm) first; at minor-version compatibility the CUDA closest
    # to the driver first, which is the oldest
    variant_order: tuple[int, ...]
    variant: str  # the name, last: a stable order


def level(c: Candidate) -> Level:
    """The candidate's :class:`Level`: the driver, how the GPUs are reached, PyPI or not."""
    if c.without_its_gpu:
        return Level.WITHOUT_ITS_GPU
    if not c.driver_at_toolkit_floor:
        return Level.MINOR_VERSION_COMPAT
    if c.ptx_jit_only:
        return Level.PTX_JIT
    return Level.PYPI if c.from_pypi else Level.FULL


def rank_key(c: Candidate, gpu_host: bool) -> RankKey:
    """``c``'s place in the ranking; ``gpu_host``: the host has a GPU that steers the choice."""
    where = level(c)
    version = c.variant.name.version or (0,)  # cpu and xpu: (0,), as a CUDA 0
    unknown = c.arch_evidence is Evidence.UNKNOWN
    return RankKey(
        cpu_build_on_gpu_host=gpu_host and not c.gpu_build,
        arch_support_unknown=unknown,
        ptx_jit_across_majors=c.ptx_jit_distant,
        neighbours=(0 if not unknown or c.neighbours is True
                    else 1 if c.neighbours is None else 2),
        older_torch=tuple(-x for x in c.release.torch.release),
        tier=(Tier.WITH_WARNINGS if not c.fully_compatible
              else Tier.PYPI if c.from_pypi else Tier.FULL),
        index_unconfirmed=c.index is not Evidence.CONFIRMED,
        level=where,
        variant_order=(version if where is Level.MINOR_VERSION_COMPAT
                       else tuple(-x for x in version)),
        variant=str(c.variant.name),
    )


def ranked(request: Request, host: HostProfile | Target,
           matrix: Matrix) -> tuple[list[Candidate], list[Rejection]]:
    """The compatible candidates best first, and the rejected ones.

    On a host with an NVIDIA or AMD GPU a CPU build is never chosen silently: when no build for
    one of its GPUs fits, the CPU builds are rejected too (unless a variant was asked for by
    name). The macOS arm64 build uses Apple's GPU, not one of those.
    """
    target = as_target(host, matrix)
    compatible, rejected = evaluate(request, target, matrix)
    kinds = target.kinds
    if (kinds & {"cuda", "rocm"} and not request.explicit_variant
            and not any(c.variant.kind in kinds for c in compatible)):
        rejected += [Rejection.of(c.release.torch, c.variant.name,
                                  "CPU build: not chosen on a GPU host without --variant cpu",
                                  "cpu-on-gpu-host") for c in compatible]
        compatible = []
    compatible.sort(key=lambda c: rank_key(c, target.gpu_host))
    return compatible, rejected
