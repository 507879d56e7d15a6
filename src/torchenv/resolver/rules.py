"""The compatibility rules of docs/resolution.md, one pure function per rule, each returning its
typed verdict.

1. the wheels: :func:`check_wheels` (:func:`check_python`, then :func:`check_glibc`);
2. the driver: :func:`check_driver` (a :class:`DriverVerdict`);
3. the architecture: :func:`check_cuda_arch` and :func:`check_rocm` (an :class:`ArchVerdict`),
   once :func:`check_gpu_present` has found the GPU the variant is built for;
4. the user's constraints: :func:`torch_wanted` and :func:`variant_wanted`.

:func:`check_index` says how the index entry of a candidate that passes is known. A "no" is a
:class:`~torchenv.resolver.plan.Rejection` (or a verdict whose ``reason`` is set): a one-line
reason and the rule's category.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

from torchenv.detection.profile import Gpu, HostProfile
from torchenv.matrix.inference import toolkit_excludes
from torchenv.matrix.model import (
    ArchFact,
    Matrix,
    Release,
    Variant,
    arch_parts,
    parse_version_tuple,
)
from torchenv.resolver.plan import Rejection

TYPE_CHECKING = False
if TYPE_CHECKING:
    from packaging.specifiers import SpecifierSet

    from torchenv.resolver.request import Request

__all__ = [
    "ArchEntry",
    "ArchVerdict",
    "DriverVerdict",
    "Evidence",
    "arch_range",
    "check_cuda_arch",
    "check_driver",
    "check_glibc",
    "check_gpu_arch",
    "check_gpu_present",
    "check_index",
    "check_python",
    "check_rocm",
    "check_wheels",
    "driver_floors",
    "parse_arch",
    "runs_on",
    "torch_wanted",
    "variant_wanted",
]


@functools.total_ordering
class Evidence(Enum):
    """How an arch list or an index entry is known (docs/resolution.md, "Evidence classes"),
    strongest first; a verdict over several GPUs is as strong as the weakest fact it used."""

    CONFIRMED = "confirmed"
    INFERRED = "inferred"
    UNKNOWN = "unknown"

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Evidence):
            return NotImplemented
        order = list(Evidence)
        return order.index(self) < order.index(other)


# --- compiled targets -------------------------------------------------------------------------


@dataclass(frozen=True)
class ArchEntry:
    """One compiled target: ``8.6`` (SASS), ``12.0+PTX`` (SASS and PTX), ``9.0a`` (exact arch)."""

    major: int
    minor: int
    suffix: str  # "", "a" (exactly this arch) or "f" (family: same major, minor >= this)
    ptx: bool

    @property
    def sm(self) -> str:
        return f"sm_{self.major}{self.minor}{self.suffix}"


def parse_arch(text: str) -> ArchEntry:
    parts = arch_parts(text)
    if parts is None:
        raise ValueError(f"{text!r} is not a compute capability")
    return ArchEntry(*parts)


def _cc(text: str) -> tuple[int, int]:
    major, minor = text.rstrip("af").split(".")
    return int(major), int(minor)


def runs_on(entry: ArchEntry, cc: str, *, jit_ok: bool) -> bool:
    """Can code compiled for ``entry`` run on a device of compute capability ``cc``?

    SASS runs on the same major with an equal or higher minor; ``a`` targets only on exactly that
    arch; PTX on any device at or above it, but only through the driver's JIT (``jit_ok``).
    """
    return _runs(entry, _cc(cc), jit_ok=jit_ok)


def _runs(entry: ArchEntry, cc: tuple[int, int], *, jit_ok: bool) -> bool:
    """:func:`runs_on` for a compute capability already split into (major, minor)."""
    target = (entry.major, entry.minor)
    if entry.suffix == "a":
        if cc == target:
            return True
    elif cc[0] == entry.major and cc[1] >= entry.minor:
        return True
    return entry.ptx and jit_ok and cc >= target


def arch_range(arch_list: Sequence[str]) -> str:
    """``7.5–12.0+PTX`` style summary for messages."""
    if not arch_list:
        return "(empty)"
    return arch_list[0] if len(arch_list) == 1 else f"{arch_list[0]}–{arch_list[-1]}"


def _sm(cc: str) -> str:
    return "sm_" + cc.replace(".", "")


def _not_in_list(gpu: Gpu, cc: str, arch_list: Sequence[str], entries: Sequence[ArchEntry],
                 *, jit_ok: bool) -> str:
    """The reason a list cannot run ``gpu``, naming the PTX it could JIT with a newer driver."""
    name = f", {gpu.name}" if gpu.name else ""
    ptx_hint = ""
    have = _cc(cc)
    if not jit_ok and any(e.ptx and have >= (e.major, e.minor) for e in entries):
        ptx_hint = " (its PTX needs a driver at the toolkit level to JIT)"
    return f"GPU {gpu.index} ({_sm(cc)}{name}) not in arch list {arch_range(arch_list)}{ptx_hint}"


def check_gpu_arch(host: HostProfile, arch_list: Sequence[str], *, jit_ok: bool) -> str | None:
    """The first visible GPU the arch list cannot run on, as a reason; None when all can."""
    if host.nvidia is None:
        return None
    entries = [parse_arch(a) for a in arch_list]
    for gpu in host.nvidia.visible_gpus():
        cc = gpu.compute_capability
        if cc is not None and not any(runs_on(e, cc, jit_ok=jit_ok) for e in entries):
            return _not_in_list(gpu, cc, arch_list, entries, jit_ok=jit_ok)
    return None


# --- rule 1: the wheels -----------------------------------------------------------------------


def check_python(release: Release, variant: Variant, from_pypi: bool, platform: str,
                 python: str) -> str | None:
    """Rule 1a: a wheel for the interpreter's tag on this platform (the index's own tags when
    the variant lists them)."""
    tags = release.python_tags(platform, None if from_pypi else variant)
    if python in tags:
        return None
    have = ", ".join(tags) if tags else "none"
    return f"no wheel for Python {python} on {platform} (has {have})"


def check_glibc(host: HostProfile, release: Release) -> str | None:
    """Rule 1b: on Linux the host's glibc meets the wheels' manylinux floor; musl never does."""
    floor = release.manylinux.get(host.platform)
    if not host.platform.startswith("linux") or not floor:
        return None
    if host.musl and not host.glibc:
        return f"musl libc {host.musl}: the wheels need glibc ≥ {floor}"
    if host.glibc and parse_version_tuple(host.glibc) < parse_version_tuple(floor):
        return f"glibc {host.glibc} is older than the wheels' manylinux floor {floor}"
    return None


def check_wheels(host: HostProfile, release: Release, variant: Variant,
                 from_pypi: bool) -> Rejection | None:
    """Rule 1: a wheel for the platform and the interpreter (1a), a glibc that loads it (1b)."""
    why = check_python(release, variant, from_pypi, host.platform, host.python.version)
    if why is not None:
        return Rejection(release.torch, variant.name, why, "python")
    why = check_glibc(host, release)
    return Rejection(release.torch, variant.name, why, "glibc") if why is not None else None


# --- the GPU the variant is built for -----------------------------------------------------------


_ABSENT = {
    "cuda": "no NVIDIA GPU or driver",
    "rocm": "no AMD ROCm GPU",
    "xpu": "no Intel GPU with the Level Zero runtime",
}
_ASKED_FOR = {
    "cuda": "no NVIDIA GPU found: {name} was asked for explicitly and will run on the CPU here",
    "rocm": "no AMD GPU found: {name} was asked for explicitly",
    "xpu": "no Intel GPU found: {name} was asked for explicitly",
}


def check_gpu_present(release: Release, variant: Variant, kinds: set[str], *,
                      asked_for: bool) -> Rejection | str | None:
    """The host has the GPU family the variant is built for (``kinds``: ``gpu_kinds``).

    None when it has, or when the variant needs none (cpu). Without it, a variant asked for by
    name (``--variant``) still fits, running on the CPU: the answer is the warning that says so;
    any other is rejected.
    """
    kind = variant.kind
    if kind == "cpu" or kind in kinds:
        return None
    if asked_for:
        return _ASKED_FOR[kind].format(name=variant.name)
    return Rejection(release.torch, variant.name, _ABSENT[kind], "no-gpu")


# --- rule 2: the driver -----------------------------------------------------------------------


@dataclass(frozen=True)
class DriverVerdict:
    """Rule 2 for one CUDA version: ``ok`` when the driver runs it at all; ``full`` when it is at
    the toolkit floor (not only through minor-version compatibility, which has a warning)."""

    ok: bool
    full: bool
    reason: str | None = None
    warnings: tuple[str, ...] = ()
    needed: str | None = None  # the driver version that would make this variant fully work


def driver_floors(matrix: Matrix, cuda: str, *, windows: bool) -> tuple[str | None, str | None]:
    """(toolkit floor, minor-version-compatibility floor) for CUDA ``cuda`` on Linux or Windows."""
    tk = matrix.toolkit_floor(cuda)
    major = int(cuda.split(".")[0])
    cf = matrix.compat_floor(major)
    toolkit = (tk.windows if windows else tk.linux) if tk else None
    compat = (cf.windows if windows else cf.linux) if cf else None
    return toolkit, compat


def _ge(a: str, b: str) -> bool:
    return parse_version_tuple(a) >= parse_version_tuple(b)


def check_driver(host: HostProfile, matrix: Matrix, cuda: str) -> DriverVerdict:
    """Rule 2: the driver against the toolkit and minor-version-compatibility floors of ``cuda``.

    The CUDA version the driver reports (NVML, nvidia-smi) is the authority when present.
    """
    nv = host.nvidia
    if nv is None or (nv.driver_version is None and nv.cuda_driver_version is None):
        return DriverVerdict(False, False, "no NVIDIA driver found")
    windows = host.platform == "win-amd64" or host.wsl
    toolkit, compat = driver_floors(matrix, cuda, windows=windows)
    if nv.cuda_driver_version:
        return _by_reported_cuda(nv.driver_version, nv.cuda_driver_version, cuda, toolkit,
                                 compat)
    assert nv.driver_version is not None
    return _by_driver_version(nv.driver_version, cuda, toolkit, compat)


def _by_reported_cuda(driver: str | None, reported: str, cuda: str, toolkit: str | None,
                      compat: str | None) -> DriverVerdict:
    """Rule 2 when the driver says which CUDA it supports."""
    want_major, want_minor = (int(x) for x in cuda.split("."))
    have_major, have_minor = (int(x) for x in reported.split(".")[:2])
    if (have_major, have_minor) >= (want_major, want_minor):
        return DriverVerdict(True, True)
    if have_major != want_major:
        return DriverVerdict(
            False, False,
            f"driver supports CUDA {reported}, CUDA {cuda} needs "
            + (f"driver ≥ {compat}" if compat else f"a CUDA {want_major}.x driver"),
            needed=compat or toolkit)
    if compat and driver and not _ge(driver, compat):
        return DriverVerdict(
            False, False,
            f"driver {driver} is below the CUDA {want_major}.x compatibility floor {compat}",
            needed=toolkit or compat)
    warning = _compat_warning(driver or f"for CUDA {reported}", cuda, toolkit)
    return DriverVerdict(True, False, warnings=(warning,), needed=toolkit)


def _by_driver_version(driver: str, cuda: str, toolkit: str | None,
                       compat: str | None) -> DriverVerdict:
    """Rule 2 from the driver's version alone."""
    if toolkit and _ge(driver, toolkit):
        return DriverVerdict(True, True)
    if compat is None:
        return DriverVerdict(False, False, f"no known driver floor for CUDA {cuda}")
    want_major = cuda.split(".")[0]
    if not _ge(driver, compat):
        return DriverVerdict(
            False, False,
            f"driver {driver} is below the CUDA {want_major}.x compatibility floor {compat}",
            needed=toolkit or compat)
    if toolkit is None:
        return DriverVerdict(True, False, warnings=(
            f"the toolkit driver floor of CUDA {cuda} is not known; driver {driver} meets the "
            f"CUDA {want_major}.x compatibility floor {compat}",))
    return DriverVerdict(True, False, warnings=(_compat_warning(driver, cuda, toolkit),),
                         needed=toolkit)


def _compat_warning(driver: str, cuda: str, toolkit: str | None) -> str:
    floor = f" (≥ {toolkit})" if toolkit else ""
    return (
        f"driver {driver} runs CUDA {cuda} only through minor-version compatibility: no PTX "
        f"JIT and some features need the toolkit-level driver{floor}"
    )


# --- rule 3: the architecture -----------------------------------------------------------------


@dataclass(frozen=True)
class ArchVerdict:
    """Rule 3 for one candidate: does every visible GPU run it, and how do we know.

    ``evidence`` is the weakest class over the visible GPUs (None when no GPU decides);
    ``ptx_jit_only`` when some GPU runs it only by JIT-compiling PTX; ``rule`` names the
    inference rule behind an ``inferred`` verdict or a rejection by rule.
    """

    reason: str | None
    evidence: Evidence | None = None
    ptx_jit_only: bool = False
    warnings: tuple[str, ...] = ()
    rule: str | None = None
    sources: tuple[str, ...] = ()


_CC_UNKNOWN = "the compute capability of some GPU is unknown; architecture not checked for it"


def check_cuda_arch(host: HostProfile, matrix: Matrix, release: Release, variant: Variant,
                    *, jit_ok: bool) -> ArchVerdict:
    """Rule 3 with evidence: every visible GPU against the variant's arch facts on the platform.

    A known list decides by :func:`runs_on`; its verdict is as strong as the SASS (or, for a GPU
    reached only through PTX, the PTX) evidence. An unknown list still rejects a GPU the toolkit
    cannot compile for (rule ``toolkit-bounds``); otherwise the verdict is ``unknown``.
    """
    if host.nvidia is None:
        return ArchVerdict(None)
    gpus = host.nvidia.visible_gpus()
    known = [g for g in gpus if g.compute_capability]
    if not known:
        if not gpus:
            return ArchVerdict(None)  # nothing torch would use; nothing to check
        return ArchVerdict(None, Evidence.UNKNOWN, warnings=(_CC_UNKNOWN,))
    fact = variant.arch_fact(host.platform)
    if fact.sass == "unknown" or fact.arch_list is None:
        return _unknown_list(matrix, release, variant, host.platform, known)
    verdict = _known_list(fact, fact.arch_list, variant, known, jit_ok=jit_ok)
    if verdict.reason is None and len(known) < len(gpus):
        return ArchVerdict(None, Evidence.UNKNOWN, verdict.ptx_jit_only,
                           (*verdict.warnings, _CC_UNKNOWN), verdict.rule, verdict.sources)
    return verdict


def _unknown_list(matrix: Matrix, release: Release, variant: Variant, platform: str,
                  known: Sequence[Gpu]) -> ArchVerdict:
    """Rule 3 for a list nobody knows: only the toolkit's compile bounds can reject."""
    cuda = variant.cuda_version
    assert cuda is not None
    floor = matrix.toolkit_floor(cuda)
    for g in known:  # the first GPU of each capability names the reason
        cc = g.compute_capability
        assert cc is not None
        why = toolkit_excludes(cc, cuda, floor)
        if why:
            return ArchVerdict(f"GPU {g.index} ({_sm(cc.rstrip('af'))}) {why}",
                               Evidence.INFERRED, rule="toolkit-bounds",
                               sources=floor.sources if floor else ())
    labels = ", ".join(f"GPU {g.index} ({_sm(g.compute_capability or '?')}"
                       f"{', ' + g.name if g.name else ''})" for g in known)
    return ArchVerdict(None, Evidence.UNKNOWN, warnings=(
        f"the arch list of torch {release.torch} {variant.name} on {platform} is not "
        f"known: it may not run on {labels}",))


def _known_list(fact: ArchFact, arch: Sequence[str], variant: Variant, known: Sequence[Gpu],
                *, jit_ok: bool) -> ArchVerdict:
    """Rule 3 for a known list: each GPU by SASS, else by PTX JIT (its evidence is the weaker
    of SASS and PTX), else the candidate is rejected."""
    sass, ptx = Evidence(fact.sass), Evidence(fact.ptx)
    entries = [parse_arch(a) for a in arch]
    classes: list[Evidence] = []
    jit: list[str] = []
    for g in known:
        cc = g.compute_capability
        assert cc is not None
        have = _cc(cc)
        if any(_runs(e, have, jit_ok=False) for e in entries):
            classes.append(sass)
        elif any(_runs(e, have, jit_ok=jit_ok) for e in entries):
            classes.append(max(sass, ptx))
            jit.append(f"GPU {g.index} ({_sm(cc)})")
        else:
            why = _not_in_list(g, cc, arch, entries, jit_ok=jit_ok)
            if ptx is Evidence.UNKNOWN:
                why = f"{why} (whether it carries PTX is not known)"
            return ArchVerdict(why, sass, rule=fact.rule, sources=fact.sources)
    warnings: tuple[str, ...] = ()
    if jit:
        warnings = (f"{', '.join(jit)} not compiled for in {variant.name}: runs only by "
                    "JIT-compiling PTX (slow first start, some kernels may be missing)",)
    return ArchVerdict(None, max(classes), ptx_jit_only=bool(jit), warnings=warnings,
                       rule=fact.rule, sources=fact.sources)


def check_rocm(host: HostProfile, matrix: Matrix, release: Release,
               variant: Variant) -> ArchVerdict:
    """Rule 3 for ROCm: every gfx target of the host in the variant's list."""
    assert host.rocm is not None
    targets = matrix.rocm_targets(variant.name, release.torch)
    if targets is None:
        return ArchVerdict(None, Evidence.UNKNOWN, warnings=(
            f"the gfx targets of {variant.name} are not known; GPU support unchecked",))
    missing = [g for g in host.rocm.gfx_targets if g not in targets.gfx]
    if missing:
        return ArchVerdict(
            f"GPU target {missing[0]} not in {variant.name}'s list ({', '.join(targets.gfx)})",
            Evidence.CONFIRMED, sources=targets.sources)
    return ArchVerdict(None, Evidence.CONFIRMED, sources=targets.sources)


# --- rule 4: the user's constraints -----------------------------------------------------------


def torch_wanted(spec: SpecifierSet | None, release: Release) -> bool:
    """Rule 4, ``--torch``: the release matches the specifier (``torch_specifier``)."""
    return spec is None or spec.contains(release.torch, prereleases=True)


def variant_wanted(request: Request, variant: Variant) -> bool:
    """Rule 4, ``--variant`` and ``--cuda``."""
    if request.explicit_variant and variant.name != request.variant:
        return False
    return request.cuda is None or variant.cuda_version == request.cuda


# --- the index entry --------------------------------------------------------------------------


def check_index(release: Release, variant: Variant,
                from_pypi: bool) -> tuple[Evidence, str | None]:
    """How the PyTorch index's entry for a candidate is known, and the warning unless it is
    confirmed: PyPI's own build is a fact of the release; others are as the data says."""
    if from_pypi or variant.index == "confirmed":
        return Evidence.CONFIRMED, None
    evidence = Evidence(variant.index)
    return evidence, (
        f"that torch {release.torch} has a {variant.name} build on the PyTorch index is "
        f"{'only inferred' if evidence is Evidence.INFERRED else 'not confirmed'} "
        f"(see 'torchenv matrix show --release {release.torch}')")
