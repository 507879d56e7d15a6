"""Candidates and their verdicts: a candidate is a (release, variant) pair; :func:`judge` puts one
through the rules of :mod:`torchenv.resolver.rules` in order and assembles what they said into a
:class:`Candidate` (it fits) or a :class:`Rejection`; :func:`evaluate` does so for every
candidate of a request.
"""

from __future__ import annotations

from dataclasses import dataclass

from torchenv.detection.profile import HostProfile
from torchenv.detection.target import Target, read_target
from torchenv.matrix.model import Evidence, Matrix, Release, Variant
from torchenv.resolver.plan import Rejection
from torchenv.resolver.request import Request
from torchenv.resolver.rules import (
    ArchVerdict,
    DriverVerdict,
    check_cuda_arch,
    check_driver,
    check_gpu_present,
    check_index,
    check_rocm,
    check_wheels,
    torch_wanted,
    variant_wanted,
)
from torchenv.values import Platform

__all__ = ["Candidate", "as_target", "evaluate", "judge", "offered"]


@dataclass(frozen=True)
class Candidate:
    """A (release, variant) pair that passes every rule, with what each rule said of it."""

    release: Release
    variant: Variant
    from_pypi: bool  # PyTorch's own build on PyPI for this platform: no extra index
    gpu_build: bool  # uses a GPU (the macOS arm64 build through MPS counts)
    warnings: tuple[str, ...] = ()
    # asked for by name on a host without the GPU it is built for: it runs on the CPU
    without_its_gpu: bool = False
    # rule 2: the driver is at the toolkit floor (False: minor-version compatibility only)
    driver_at_toolkit_floor: bool = True
    # rule 3: some visible GPU runs it only by JIT-compiling PTX
    ptx_jit_only: bool = False
    # rule 3: how its arch (gfx) list is known for the visible GPUs; None when no GPU decides
    arch_evidence: Evidence | None = None
    arch_rule: str | None = None  # the inference rule behind an inferred arch list
    arch_sources: tuple[str, ...] = ()
    index: Evidence = Evidence.CONFIRMED  # how its entry on the PyTorch index is known
    # rule 3: some GPU is reached only by PTX of an architecture more than one major older
    ptx_jit_distant: bool = False
    # an unknown list: do the variant's confirmed lists in other releases all run every GPU
    # (True), all leave one out (False), or neither (None)
    neighbours: bool | None = None

    @property
    def fully_compatible(self) -> bool:
        """It fits with nothing to warn of: its GPU present, the driver at the toolkit floor,
        every GPU run natively, the arch list and the index entry known, confirmed or inferred
        by a rule (plan level ``full``)."""
        return (not self.without_its_gpu and self.driver_at_toolkit_floor
                and not self.ptx_jit_only and self.arch_evidence is not Evidence.UNKNOWN
                and self.index is not Evidence.UNKNOWN)

    @property
    def arch_evidence_name(self) -> str:
        """``confirmed``, ``inferred``, ``unknown`` or ``n/a`` (no GPU decides), as in JSON."""
        return self.arch_evidence.value if self.arch_evidence is not None else "n/a"


_MACOS_ARM64 = Platform("macos-arm64")


def offered(release: Release, platform: Platform) -> list[tuple[Variant, bool]]:
    """(variant, served by PyPI) for each build of ``release`` on ``platform``."""
    out: list[tuple[Variant, bool]] = []
    default = release.pypi_default.get(platform)
    seen = set()
    for v in release.variants:
        if platform in v.platforms:
            out.append((v, v.name == default))
            seen.add(v.name)
    if default is not None and default not in seen and platform in release.python:
        listed = release.variant(default)
        if default.kind == "cpu" or listed is None:
            # the PyPI build itself: its wheels are facts of releases.yaml; only a CUDA
            # build's arch list can be missing
            listed = Variant(name=default, platforms=(platform,), index=Evidence.CONFIRMED,
                             sources=release.sources)
        out.append((listed, True))
    return out


def as_target(host: HostProfile | Target, matrix: Matrix) -> Target:
    """``host`` as its :class:`Target`: a profile is read into one here (the one step that
    completes its GPUs from the catalog), a target is taken as it is."""
    return host if isinstance(host, Target) else read_target(host, matrix)


def evaluate(request: Request, host: HostProfile | Target, matrix: Matrix, *,
             only_kind: str | None = None) -> tuple[list[Candidate], list[Rejection]]:
    """Every candidate the request's constraints allow (rule 4), checked against the other rules:
    (compatible, rejected), both in the matrix's release order. ``only_kind`` (``"cuda"``, ...)
    limits the candidates to one accelerator family."""
    target = as_target(host, matrix)
    compatible: list[Candidate] = []
    rejected: list[Rejection] = []
    for release in matrix.releases:
        if not torch_wanted(request.torch, release):
            continue
        variants = offered(release, target.platform)
        if not variants:
            rejected.append(Rejection.of(release.torch, None, f"no wheels for {target.platform}",
                                         "platform"))
        for variant, from_pypi in variants:
            if variant_wanted(request, variant) and only_kind in (None, variant.kind):
                verdict = judge(request, target, matrix, release, variant, from_pypi)
                if isinstance(verdict, Candidate):
                    compatible.append(verdict)
                else:
                    rejected.append(verdict)
    return compatible, rejected


def judge(request: Request, target: Target, matrix: Matrix, release: Release, variant: Variant,
          from_pypi: bool) -> Candidate | Rejection:
    """Rules 1 to 3 in order for one candidate."""
    rejection = check_wheels(target, release, variant, from_pypi)
    if rejection is not None:
        return rejection
    absent = check_gpu_present(release, variant, target.kinds,
                               asked_for=request.explicit_variant)
    if isinstance(absent, Rejection):
        return absent
    if absent is not None:  # asked for without its GPU: there is nothing to check it against
        return _assemble(release, variant, from_pypi, target.platform, absent=absent)
    driver: DriverVerdict | None = None
    arch: ArchVerdict | None = None
    if variant.kind == "cuda":
        assert variant.cuda_version is not None
        driver = check_driver(target, matrix, variant.cuda_version)
        if not driver.ok:
            return Rejection.of(release.torch, variant.name, driver.reason or "driver too old",
                                "driver")
        arch = check_cuda_arch(target, matrix, release, variant, jit_ok=driver.full)
    elif variant.kind == "rocm":
        arch = check_rocm(target, matrix, release, variant)
    if arch is not None and arch.reason is not None:
        return Rejection.of(release.torch, variant.name, arch.reason, "arch", arch.rejected_by)
    return _assemble(release, variant, from_pypi, target.platform, driver=driver, arch=arch)


def _assemble(release: Release, variant: Variant, from_pypi: bool, platform: Platform, *,
              absent: str | None = None, driver: DriverVerdict | None = None,
              arch: ArchVerdict | None = None) -> Candidate:
    """The verdicts of a candidate that passes, as one :class:`Candidate` (``absent``: the
    warning of a variant asked for without its GPU)."""
    index, index_warning = check_index(release, variant, from_pypi)
    warnings = (
        *((absent,) if absent else ()),
        *(driver.warnings if driver else ()),
        *(arch.warnings if arch else ()),
        *((index_warning,) if index_warning else ()),
    )
    return Candidate(
        release, variant, from_pypi,
        gpu_build=variant.kind != "cpu" or platform == _MACOS_ARM64,
        warnings=warnings,
        without_its_gpu=absent is not None,
        driver_at_toolkit_floor=driver.full if driver else True,
        ptx_jit_only=arch.ptx_jit_only if arch else False,
        arch_evidence=arch.evidence if arch else None,
        arch_rule=arch.rule if arch else None,
        arch_sources=arch.sources if arch else (),
        index=index,
        ptx_jit_distant=arch.ptx_jit_distant if arch else False,
        neighbours=arch.neighbours if arch else None,
    )
