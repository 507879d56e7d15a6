"""The typed, frozen model of the compatibility matrix.

Everything here is plain data: the loader builds it from YAML (or the verified cache), and the
resolver, installers and renderers read it. Nothing in this module touches the outside world.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Literal, Optional

    Platform = Literal["linux-x86_64", "linux-aarch64", "win-amd64", "macos-arm64",
                       "macos-x86_64"]
    VariantKind = Literal["cpu", "cuda", "rocm", "xpu"]
    Evidence = Literal["confirmed", "inferred", "unknown"]

__all__ = [
    "EVIDENCE_CLASSES",
    "PLATFORMS",
    "AmdGpu",
    "ArchFact",
    "CompatFloor",
    "CondaAvailability",
    "Matrix",
    "NvidiaGpu",
    "Release",
    "RocmTargets",
    "Source",
    "ToolkitFloor",
    "Variant",
    "arch_parts",
    "parse_version_tuple",
    "variant_kind",
]

PLATFORMS: tuple[str, ...] = (
    "linux-x86_64",
    "linux-aarch64",
    "win-amd64",
    "macos-arm64",
    "macos-x86_64",
)

EVIDENCE_CLASSES: tuple[str, ...] = ("confirmed", "inferred", "unknown")
"""How a fact is known: ``confirmed`` by a primary source for that exact build, ``inferred`` by a
named rule of :mod:`torchenv.matrix.inference` from confirmed facts, or ``unknown``."""

# The names and arch entries below are read with string methods, not regular expressions: the
# re module costs more to import than a whole resolve takes. Each reader accepts exactly what
# the pattern in its docstring matches with re.match (tested against it): \d is any Unicode
# decimal digit, and $ also matches before one trailing newline.


def _line(text: str) -> str:
    return text[:-1] if text.endswith("\n") else text


def _decimal(text: str, least: int = 1, most: int = 1 << 30) -> bool:
    return least <= len(text) <= most and text.isdecimal()


def _cuda_digits(name: str) -> str | None:
    """The digits of a CUDA variant name: ``^cu(\\d{2,3})$``."""
    core = _line(name)
    return core[2:] if core.startswith("cu") and _decimal(core[2:], 2, 3) else None


def _is_rocm(name: str) -> bool:
    """``^rocm(\\d+)\\.(\\d+)(?:\\.(\\d+))?$``."""
    core = _line(name)
    if not core.startswith("rocm"):
        return False
    parts = core[4:].split(".")
    return len(parts) in (2, 3) and all(_decimal(p) for p in parts)


def arch_parts(text: str) -> tuple[int, int, str, bool] | None:
    """(major, minor, suffix, +PTX) of an arch-list entry (``8.6``, ``9.0a``, ``10.0f``,
    ``12.0+PTX``), None when it is not one: ``^(\\d{1,2})\\.(\\d)([af]?)(\\+PTX)?$``."""
    core = _line(text)
    ptx = core.endswith("+PTX")
    if ptx:
        core = core[:-4]
    suffix = core[-1:] if core[-1:] in ("a", "f") else ""
    if suffix:
        core = core[:-1]
    major, dot, minor = core.partition(".")
    if not dot or not _decimal(major, 1, 2) or not _decimal(minor, 1, 1):
        return None
    return int(major), int(minor), suffix, ptx


# Answers for the few distinct names and versions one run meets, asked for hundreds of times by
# every resolve (each candidate's variant, driver floors, compute capabilities).
_KINDS: dict[str, VariantKind | None] = {}
_CUDA_VERSIONS: dict[str, str | None] = {}
_VERSION_TUPLES: dict[str, tuple[int, ...]] = {}


def variant_kind(name: str) -> VariantKind | None:
    """The accelerator family of a variant name, or None when the name is not one torchenv knows."""
    try:
        return _KINDS[name]
    except KeyError:
        pass
    kind: VariantKind | None = None
    if name == "cpu":
        kind = "cpu"
    elif name == "xpu":
        kind = "xpu"
    elif _cuda_digits(name) is not None:
        kind = "cuda"
    elif _is_rocm(name):
        kind = "rocm"
    if len(_KINDS) < 4096:
        _KINDS[name] = kind
    return kind


def cuda_version_of(name: str) -> str | None:
    """``cu128`` -> ``"12.8"``, ``cu118`` -> ``"11.8"``; None for non-CUDA variants."""
    try:
        return _CUDA_VERSIONS[name]
    except KeyError:
        pass
    digits = _cuda_digits(name)
    version = f"{digits[:-1]}.{digits[-1]}" if digits is not None else None
    if len(_CUDA_VERSIONS) < 4096:
        _CUDA_VERSIONS[name] = version
    return version


def parse_version_tuple(text: str) -> tuple[int, ...]:
    """A cheap numeric key for dotted versions (``"550.54.15"`` -> (550, 54, 15)).

    Raises ValueError when a part is not a number.
    """
    try:
        return _VERSION_TUPLES[text]
    except KeyError:
        pass
    key = tuple(int(part) for part in text.split("."))
    if len(_VERSION_TUPLES) < 65536:
        _VERSION_TUPLES[text] = key
    return key


@dataclass(frozen=True)
class Source:
    """Where facts come from. ``primary`` is False for copies, third-party reports and
    documentation, which corroborate a fact but cannot confirm it alone."""

    id: str
    title: str
    url: str
    primary: bool = True


@dataclass(frozen=True)
class ArchFact:
    """What is known of one CUDA variant's compiled targets on one platform.

    SASS and PTX are judged apart: a wheel read confirms both (a missing ``compute_XX`` entry
    confirms there is no PTX), a build script that is later post-processed may confirm only the
    SASS entries. ``rule`` names the inference rule when a class is ``inferred``.
    """

    arch_list: Optional[tuple[str, ...]]
    sass: str = "unknown"
    ptx: str = "unknown"
    rule: Optional[str] = None
    sources: tuple[str, ...] = ()
    note: Optional[str] = None

    @property
    def known(self) -> bool:
        return self.arch_list is not None and self.sass != "unknown"

    def to_json(self) -> dict[str, Any]:
        return {
            "arch_list": list(self.arch_list) if self.arch_list is not None else None,
            "sass": self.sass,
            "ptx": self.ptx,
            "rule": self.rule,
            "sources": list(self.sources),
            "note": self.note,
        }


@dataclass(frozen=True)
class Variant:
    """A build of a release on the wheel index: ``cpu``, ``cu128``, ``rocm6.3``, ``xpu``."""

    name: str
    platforms: tuple[str, ...]
    arch_list: Optional[tuple[str, ...]] = None
    arch_list_by_platform: Mapping[str, Optional[tuple[str, ...]]] = field(default_factory=dict)
    python: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    cudnn: Optional[str] = None
    nccl: Optional[str] = None
    index: str = "confirmed"  # evidence class of "the index has this build for these releases"
    sources: tuple[str, ...] = ()
    note: Optional[str] = None
    # per platform, filled by the loader and the inference rules; platforms of a CUDA variant only
    arch_facts: Mapping[str, ArchFact] = field(default_factory=dict)

    @property
    def status(self) -> str:
        """``verified`` when the index entry and every platform's arch list are known."""
        facts_known = all(f.known for f in self.arch_facts.values())
        return "verified" if self.index != "unknown" and facts_known else "unverified"

    @property
    def kind(self) -> VariantKind:
        kind = variant_kind(self.name)
        assert kind is not None, self.name  # the loader rejects unknown names
        return kind

    @property
    def cuda_version(self) -> str | None:
        return cuda_version_of(self.name)

    def arch_fact(self, platform: str) -> ArchFact:
        """The compiled targets on ``platform`` with their evidence."""
        fact = self.arch_facts.get(platform)
        if fact is not None:
            return fact
        arch = self.arch_list_for(platform)
        return ArchFact(arch, "confirmed" if arch is not None else "unknown",
                        "confirmed" if arch is not None else "unknown", sources=self.sources)

    def arch_list_for(self, platform: str) -> tuple[str, ...] | None:
        """The compiled targets on ``platform`` (confirmed or inferred); None when unknown."""
        fact = self.arch_facts.get(platform)
        if fact is not None:
            return fact.arch_list if fact.sass != "unknown" else None
        if platform in self.arch_list_by_platform:
            return self.arch_list_by_platform[platform]
        return self.arch_list


@dataclass(frozen=True)
class CondaAvailability:
    """Whether a release is on the pytorch conda channel and on conda-forge (or unknown)."""

    pytorch_channel: bool | Literal["unknown"]
    conda_forge: bool | Literal["unknown"]


@dataclass(frozen=True)
class Release:
    """One torch patch release and everything known about its builds."""

    torch: str
    released: str
    torchvision: Optional[str]
    torchaudio: Optional[str]
    python: Mapping[str, tuple[str, ...]]
    manylinux: Mapping[str, str]
    pypi_default: Mapping[str, str]
    variants: tuple[Variant, ...]
    conda: CondaAvailability
    sources: tuple[str, ...] = ()
    note: Optional[str] = None
    unconfirmed: tuple[str, ...] = ()  # packages whose pairing is "unknown" in the data

    @property
    def key(self) -> tuple[int, ...]:
        return parse_version_tuple(self.torch)

    @property
    def minor(self) -> str:
        return ".".join(self.torch.split(".")[:2])

    def variant(self, name: str) -> Variant | None:
        for v in self.variants:
            if v.name == name:
                return v
        return None

    def python_tags(self, platform: str, variant: Variant | None = None) -> tuple[str, ...]:
        """Python versions with a wheel for ``platform`` (of ``variant`` when it says otherwise)."""
        if variant is not None and platform in variant.python:
            return variant.python[platform]
        if platform in self.python:
            return self.python[platform]
        return ()


@dataclass(frozen=True)
class ToolkitFloor:
    """Minimum driver released with a CUDA toolkit minor."""

    cuda: str
    linux: Optional[str]
    windows: Optional[str]
    sources: tuple[str, ...] = ()
    note: Optional[str] = None
    newest_arch: Optional[str] = None  # highest compute capability this toolkit emits SASS for
    oldest_arch: Optional[str] = None  # lowest one it still compiles for


@dataclass(frozen=True)
class CompatFloor:
    """Minimum driver for CUDA minor-version compatibility within a major."""

    major: int
    linux: Optional[str]
    windows: Optional[str]
    sources: tuple[str, ...] = ()
    note: Optional[str] = None


@dataclass(frozen=True)
class RocmTargets:
    """The gfx targets a ROCm variant is built for (of the releases in ``torch``, or of all)."""

    name: str
    gfx: tuple[str, ...]
    torch: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()
    note: Optional[str] = None


@dataclass(frozen=True)
class NvidiaGpu:
    """An NVIDIA GPU of the catalog: its compute capability and how it is named."""

    name: str
    compute_capability: str
    architecture: str
    segment: str
    aliases: tuple[str, ...] = ()
    fp16_tflops: Optional[float] = None
    bf16_tflops: Optional[float] = None
    memory_bandwidth_gbs: Optional[float] = None
    sources: tuple[str, ...] = ()
    note: Optional[str] = None
    pci_ids: tuple[str, ...] = ()  # PCI device ids ("1b80") under vendor 0x10de


@dataclass(frozen=True)
class AmdGpu:
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
    overlay: Optional[str] = None
    overlay_error: Optional[str] = None

    def release(self, torch: str) -> Release | None:
        for r in self.releases:
            if r.torch == torch:
                return r
        return None

    def toolkit_floor(self, cuda: str) -> ToolkitFloor | None:
        for f in self.toolkit_floors:
            if f.cuda == cuda:
                return f
        return None

    def compat_floor(self, major: int) -> CompatFloor | None:
        for f in self.compat_floors:
            if f.major == major:
                return f
        return None

    def rocm_targets(self, name: str, torch: str | None = None) -> RocmTargets | None:
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
