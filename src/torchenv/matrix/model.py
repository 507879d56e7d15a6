"""The typed, frozen model of the compatibility matrix.

Everything here is plain data: the loader builds it from YAML (or the verified cache), and the
resolver, installers and renderers read it. Every fact is a value of :mod:`torchenv.values`
(parsed once, when the data is validated), so nothing that reads the matrix splits a string.
Nothing in this module touches the outside world.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, NamedTuple

from torchenv.values import (
    PLATFORMS,
    ArchEntry,
    ComputeCapability,
    CudaVersion,
    DriverVersion,
    Platform,
    TorchVersion,
    VariantName,
)

if TYPE_CHECKING:
    from typing import Any, Literal, Optional

    from torchenv.values import VariantKind

__all__ = [
    "ALL_PLATFORMS",
    "COMPANIONS",
    "EVIDENCE_CLASSES",
    "PLATFORMS",
    "AmdGpu",
    "ArchFact",
    "CompanionStatement",
    "CompatFloor",
    "CondaAvailability",
    "Evidence",
    "IndexRow",
    "Matrix",
    "Neighbours",
    "NvidiaGpu",
    "OpenQuestion",
    "Pairing",
    "PartialList",
    "Release",
    "RocmTargets",
    "SameAs",
    "Source",
    "ToolkitFloor",
    "Variant",
    "glibc_sort_key",
    "python_sort_key",
]

ALL_PLATFORMS: tuple[Platform, ...] = tuple(Platform(name) for name in PLATFORMS)
"""The platforms of :data:`PLATFORMS` as values, in that order."""

class Evidence(str, Enum):
    """How a fact is known (docs/resolution.md, "Evidence classes"): ``confirmed`` by a primary
    source for that exact build, ``inferred`` by a named rule of :mod:`torchenv.matrix.inference`
    from confirmed facts, or ``unknown``. The one scale of the matrix, the resolver, doctor and
    the explorer.

    Ordered by strength, ``UNKNOWN < INFERRED < CONFIRMED``: a verdict over several facts is as
    strong as the weakest, ``min()``. Each member is its text (``Evidence.CONFIRMED ==
    "confirmed"``, written so in JSON and read so from the YAML).
    """

    UNKNOWN = "unknown"
    INFERRED = "inferred"
    CONFIRMED = "confirmed"

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)

    @property
    def strength(self) -> int:
        return _STRENGTH[self]

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Evidence):
            return NotImplemented
        return _STRENGTH[self] < _STRENGTH[other]

    def __le__(self, other: object) -> bool:
        if not isinstance(other, Evidence):
            return NotImplemented
        return _STRENGTH[self] <= _STRENGTH[other]

    def __gt__(self, other: object) -> bool:
        if not isinstance(other, Evidence):
            return NotImplemented
        return _STRENGTH[self] > _STRENGTH[other]

    def __ge__(self, other: object) -> bool:
        if not isinstance(other, Evidence):
            return NotImplemented
        return _STRENGTH[self] >= _STRENGTH[other]


_STRENGTH = {e: i for i, e in enumerate(Evidence)}

EVIDENCE_CLASSES: tuple[Evidence, ...] = tuple(sorted(Evidence, reverse=True))
"""The classes strongest first, as tables and messages list them."""


# Python tags and glibc versions are the two facts of the matrix kept as text (``3.13t``,
# ``2.28``: the loader checks their spelling); these are their orders.


def python_sort_key(tag: str) -> tuple[int, int, int]:
    """Order Python tags as versions, each free-threaded tag after its plain one:
    ``3.9 < 3.10 < 3.13 < 3.13t < 3.14``."""
    major, _, minor = tag.removesuffix("t").partition(".")
    return int(major), int(minor), int(tag.endswith("t"))


def glibc_sort_key(version: str) -> tuple[int, ...]:
    """Order glibc versions: ``2.17 < 2.28 < 2.35``."""
    return tuple(map(int, version.split(".")))


class Source(NamedTuple):
    """Where facts come from. ``primary`` is False for copies, third-party reports and
    documentation, which corroborate a fact but cannot confirm it alone."""

    id: str
    title: str
    url: str
    primary: bool = True


class Neighbours(NamedTuple):
    """What the per-GPU inference rules read of an unknown list, filled when the matrix is built:
    the confirmed lists of the same variant on the same platform in the other releases, oldest
    first, split at this release (``older``, ``newer``), and, for a Windows list, the known list
    of the same build on Linux x86_64 (``linux``). Kept with the fact, so a matrix cut down to
    some releases answers as the whole one does."""

    older: tuple[tuple[TorchVersion, ArchFact], ...] = ()
    newer: tuple[tuple[TorchVersion, ArchFact], ...] = ()
    linux: Optional[ArchFact] = None


class PartialList(NamedTuple):
    """What a primary source says of a list it does not give whole: ``oldest``, the oldest
    target the build carries (no SASS and no PTX below it, so a GPU older than it cannot run the
    build), and ``includes``, SASS targets it is known to carry."""

    oldest: Optional[ArchEntry] = None  # SASS only, no suffix: ``7.0``
    includes: tuple[ArchEntry, ...] = ()
    sources: tuple[str, ...] = ()
    note: Optional[str] = None

    def to_json(self) -> dict[str, Any]:
        return {
            "oldest": str(self.oldest) if self.oldest is not None else None,
            "includes": [str(a) for a in self.includes],
            "sources": list(self.sources),
            "note": self.note,
        }


class ArchFact(NamedTuple):
    """What is known of one CUDA variant's compiled targets on one platform.

    SASS and PTX are judged apart: a wheel read confirms both (a missing ``compute_XX`` entry
    confirms there is no PTX), a build script that is later post-processed may confirm only the
    SASS entries. ``rule`` names the inference rule when a class is ``inferred``. An unknown
    list may still have a :class:`PartialList` (``partial``) from a primary source.
    """

    arch_list: Optional[tuple[ArchEntry, ...]]
    sass: Evidence = Evidence.UNKNOWN
    ptx: Evidence = Evidence.UNKNOWN
    rule: Optional[str] = None
    sources: tuple[str, ...] = ()
    note: Optional[str] = None
    neighbours: Optional[Neighbours] = None  # an unknown list only: see :class:`Neighbours`
    partial: Optional[PartialList] = None  # an unknown list only

    @property
    def known(self) -> bool:
        return self.arch_list is not None and self.sass != Evidence.UNKNOWN

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "arch_list": ([str(a) for a in self.arch_list] if self.arch_list is not None
                          else None),
            "sass": str(self.sass),
            "ptx": str(self.ptx),
            "rule": self.rule,
            "sources": list(self.sources),
            "note": self.note,
        }
        if self.partial is not None:
            doc["partial"] = self.partial.to_json()
        return doc


class SameAs(NamedTuple):
    """A primary source's word that a build is an earlier release's build unchanged (the
    release manager's "no changes to CUDA 11.8" of 2.6 and 2.7): rule
    ``unchanged-by-statement`` gives it that release's lists where its own are unknown."""

    torch: TorchVersion
    sources: tuple[str, ...]
    note: Optional[str] = None


@dataclass(frozen=True)
class Variant:
    """A build of a release on the wheel index: ``cpu``, ``cu128``, ``rocm6.3``, ``xpu``."""

    name: VariantName
    platforms: tuple[Platform, ...]
    arch_list: Optional[tuple[ArchEntry, ...]] = None
    arch_list_by_platform: Mapping[Platform, Optional[tuple[ArchEntry, ...]]] = field(
        default_factory=dict)
    python: Mapping[Platform, tuple[str, ...]] = field(default_factory=dict)
    cudnn: Optional[str] = None
    nccl: Optional[str] = None
    index: Evidence = Evidence.CONFIRMED  # how "the index has this build" is known
    sources: tuple[str, ...] = ()
    # an ``inferred`` index entry: the rule that inferred it and the sources of its premise
    index_rule: Optional[str] = None
    index_sources: tuple[str, ...] = ()
    note: Optional[str] = None
    # per platform, filled by the loader and the inference rules; platforms of a CUDA variant only
    arch_facts: Mapping[Platform, ArchFact] = field(default_factory=dict)
    same_as: Optional[SameAs] = None

    @property
    def status(self) -> str:
        """``verified`` when the index entry and every platform's arch list are known."""
        facts_known = all(f.known for f in self.arch_facts.values())
        return ("verified" if self.index != Evidence.UNKNOWN and facts_known
                else "unverified")

    @property
    def kind(self) -> VariantKind:
        return self.name.kind

    @property
    def cuda_version(self) -> CudaVersion | None:
        return self.name.cuda

    def arch_fact(self, platform: Platform) -> ArchFact:
        """The compiled targets on ``platform`` with their evidence."""
        fact = self.arch_facts.get(platform)
        if fact is not None:
            return fact
        arch = self.arch_list_for(platform)
        known = Evidence.CONFIRMED if arch is not None else Evidence.UNKNOWN
        return ArchFact(arch, known, known, sources=self.sources)

    def arch_list_for(self, platform: Platform) -> tuple[ArchEntry, ...] | None:
        """The compiled targets on ``platform`` (confirmed or inferred); None when unknown."""
        fact = self.arch_facts.get(platform)
        if fact is not None:
            return fact.arch_list if fact.sass != Evidence.UNKNOWN else None
        if platform in self.arch_list_by_platform:
            return self.arch_list_by_platform[platform]
        return self.arch_list


class CondaAvailability(NamedTuple):
    """Whether a release is on the pytorch conda channel and on conda-forge (or unknown)."""

    pytorch_channel: bool | Literal["unknown"]
    conda_forge: bool | Literal["unknown"]


class IndexRow(NamedTuple):
    """The maintainers' row for ``releases``: the builds (``variants``) a go-live change of the
    binary build matrix or a RELEASE.md compatibility row names, for ``platforms`` (rule
    ``index-in-release-row``)."""

    releases: tuple[TorchVersion, ...]
    variants: tuple[VariantName, ...]
    platforms: tuple[Platform, ...]
    sources: tuple[str, ...]
    note: Optional[str] = None


class OpenQuestion(NamedTuple):
    """A question about the data that the sources read so far do not settle: what is asked,
    what is known, and why it stays open (``docs/data-coverage.md`` lists them)."""

    topic: str
    releases: tuple[TorchVersion, ...]
    known: str
    why_open: str
    sources: tuple[str, ...]


COMPANIONS: tuple[str, ...] = ("torchvision", "torchaudio")
"""The packages paired with a torch release."""


class CompanionStatement(NamedTuple):
    """A maintainer's statement that a torchvision or torchaudio release works with every torch
    from ``torch`` on ("compatible with PyTorch 2.11 and later"), quoted in ``statement``.
    Rule ``companion-by-statement`` pairs it with the releases whose own pairing the data does
    not confirm."""

    package: str
    version: TorchVersion
    torch: TorchVersion  # the oldest torch the statement names ("2.11": 2.11.0 and later)
    released: str  # ISO date of the companion release (its first upload to PyPI)
    statement: str
    sources: tuple[str, ...]
    note: Optional[str] = None

    def covers(self, torch: TorchVersion) -> bool:
        """The statement's range holds ``torch`` (its public release; a local tag is ignored)."""
        return TorchVersion(torch.public) >= self.torch


class Pairing(NamedTuple):
    """How the release of a companion package that pairs with a torch release is known:
    ``confirmed`` (its wheels pin this torch, or a maintainer names the pair), ``inferred`` (a
    :class:`CompanionStatement`'s range holds the release: rule ``companion-by-statement``),
    ``unknown`` (no source settles it), or ``none`` (no release of it pairs)."""

    version: Optional[TorchVersion]
    evidence: str
    rule: Optional[str] = None
    statement: Optional[str] = None
    sources: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"version": str(self.version) if self.version is not None else None,
                "evidence": self.evidence, "rule": self.rule, "statement": self.statement,
                "sources": list(self.sources)}


@dataclass(frozen=True)
class Release:
    """One torch patch release and everything known about its builds."""

    torch: TorchVersion
    released: str
    torchvision: Optional[TorchVersion]
    torchaudio: Optional[TorchVersion]
    python: Mapping[Platform, tuple[str, ...]]
    manylinux: Mapping[Platform, str]
    pypi_default: Mapping[Platform, VariantName]
    variants: tuple[Variant, ...]
    conda: CondaAvailability
    sources: tuple[str, ...] = ()
    note: Optional[str] = None
    unconfirmed: tuple[str, ...] = ()  # packages whose pairing is "unknown" in the data
    # how each companion's pairing is known, where a rule or the data says more than the
    # version fields (see :meth:`pairing`)
    pairings: Mapping[str, Pairing] = field(default_factory=dict)

    def pairing(self, package: str) -> Pairing:
        """How the ``package`` release paired with this one is known."""
        found = self.pairings.get(package)
        if found is not None:
            return found
        version = self.torchvision if package == "torchvision" else self.torchaudio
        if version is not None:
            return Pairing(version, "confirmed", sources=self.sources)
        return Pairing(None, "unknown" if package in self.unconfirmed else "none")

    def variant(self, name: VariantName) -> Variant | None:
        for v in self.variants:
            if v.name == name:
                return v
        return None

    def python_tags(self, platform: Platform,
                    variant: Variant | None = None) -> tuple[str, ...]:
        """Python versions with a wheel for ``platform`` (of ``variant`` when it says otherwise)."""
        if variant is not None and platform in variant.python:
            return variant.python[platform]
        if platform in self.python:
            return self.python[platform]
        return ()


class ToolkitFloor(NamedTuple):
    """Minimum driver released with a CUDA toolkit minor."""

    cuda: CudaVersion
    linux: Optional[DriverVersion]
    windows: Optional[DriverVersion]
    sources: tuple[str, ...] = ()
    note: Optional[str] = None
    # highest compute capability this toolkit emits SASS for
    newest_arch: Optional[ComputeCapability] = None
    oldest_arch: Optional[ComputeCapability] = None  # lowest one it still compiles for


class CompatFloor(NamedTuple):
    """Minimum driver for CUDA minor-version compatibility within a major."""

    major: int
    linux: Optional[DriverVersion]
    windows: Optional[DriverVersion]
    sources: tuple[str, ...] = ()
    note: Optional[str] = None


class RocmTargets(NamedTuple):
    """The gfx targets a ROCm variant is built for (of the releases in ``torch``, or of all).

    ``evidence``: how well the list is known for the releases it covers; ``observed_on``: the
    releases whose own wheel was seen to list it (confirmed for those, whatever ``evidence``);
    ``may_have``: targets a source says the wheels may or may not have (unknown for those).
    """

    name: VariantName
    gfx: tuple[str, ...]
    torch: tuple[TorchVersion, ...] = ()
    sources: tuple[str, ...] = ()
    note: Optional[str] = None
    evidence: Evidence = Evidence.INFERRED
    observed_on: tuple[TorchVersion, ...] = ()
    may_have: tuple[str, ...] = ()

    def evidence_for(self, torch: TorchVersion) -> Evidence:
        return Evidence.CONFIRMED if torch in self.observed_on else self.evidence


class NvidiaGpu(NamedTuple):
    """An NVIDIA GPU of the catalog: its compute capability and how it is named."""

    name: str
    compute_capability: ComputeCapability
    architecture: str
    segment: str
    aliases: tuple[str, ...] = ()
    fp16_tflops: Optional[float] = None
    bf16_tflops: Optional[float] = None
    memory_bandwidth_gbs: Optional[float] = None
    sources: tuple[str, ...] = ()
    note: Optional[str] = None
    pci_ids: tuple[str, ...] = ()  # PCI device ids ("1b80") under vendor 0x10de


class AmdGpu(NamedTuple):
    """An AMD GPU of the catalog: its gfx target and how it is named."""

    name: str
    gfx: str
    architecture: str
    aliases: tuple[str, ...] = ()
    fp16_tflops: Optional[float] = None
    bf16_tflops: Optional[float] = None
    memory_bandwidth_gbs: Optional[float] = None
    sources: tuple[str, ...] = ()
    note: Optional[str] = None


@dataclass(frozen=True)
class Matrix:
    """The whole matrix: releases newest first, driver floors, ROCm targets, GPU catalog."""

    schema_version: int
    matrix_version: str
    sources: Mapping[str, Source]
    releases: tuple[Release, ...]
    toolkit_floors: tuple[ToolkitFloor, ...]
    compat_floors: tuple[CompatFloor, ...]
    rocm_variants: tuple[RocmTargets, ...]
    nvidia_gpus: tuple[NvidiaGpu, ...]
    amd_gpus: tuple[AmdGpu, ...]
    companion_statements: tuple[CompanionStatement, ...] = ()
    index_rows: tuple[IndexRow, ...] = ()
    open_questions: tuple[OpenQuestion, ...] = ()
    overlay: Optional[str] = None
    overlay_error: Optional[str] = None

    def release(self, torch: TorchVersion) -> Release | None:
        for r in self.releases:
            if r.torch == torch:
                return r
        return None

    def companion_statement(self, package: str, version: TorchVersion,
                            torch: TorchVersion) -> CompanionStatement | None:
        """A maintainer's statement that ``package`` ``version`` works with ``torch``, if any."""
        for s in self.companion_statements:
            if s.package == package and s.version == version and s.covers(torch):
                return s
        return None

    def toolkit_floor(self, cuda: CudaVersion) -> ToolkitFloor | None:
        for f in self.toolkit_floors:
            if f.cuda == cuda:
                return f
        return None

    def compat_floor(self, major: int) -> CompatFloor | None:
        for f in self.compat_floors:
            if f.major == major:
                return f
        return None

    def rocm_targets(self, name: VariantName,
                     torch: TorchVersion | None = None) -> RocmTargets | None:
        """The gfx list of a ROCm variant, preferring an entry specific to ``torch``."""
        generic = None
        for entry in self.rocm_variants:
            if entry.name != name:
                continue
            if torch is not None and torch in entry.torch:
                return entry
            if not entry.torch:
                generic = entry
        return generic

    def nvidia_gpu(self, name: str) -> NvidiaGpu | None:
        """Catalog entry for a GPU name as NVML or nvidia-smi prints it (case-insensitive)."""
        wanted = _norm_gpu_name(name)
        for gpu in self.nvidia_gpus:
            if wanted in {_norm_gpu_name(n) for n in (gpu.name, *gpu.aliases)}:
                return gpu
        return None

    def nvidia_gpu_by_pci(self, device_id: str) -> NvidiaGpu | None:
        """Catalog entry for a PCI device id under NVIDIA's vendor id (``"1b80"``)."""
        wanted = device_id.lower().removeprefix("0x")
        for gpu in self.nvidia_gpus:
            if wanted in gpu.pci_ids:
                return gpu
        return None

    def amd_gpu(self, name: str) -> AmdGpu | None:
        wanted = _norm_gpu_name(name)
        for gpu in self.amd_gpus:
            if wanted in {_norm_gpu_name(n) for n in (gpu.name, *gpu.aliases)}:
                return gpu
        return None


def _norm_gpu_name(name: str) -> str:
    text = name.lower().strip()
    for prefix in ("nvidia ", "amd "):
        if text.startswith(prefix):
            text = text[len(prefix) :]
    return " ".join(text.split())
