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

from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

from torchenv.detection.profile import Gpu
from torchenv.detection.target import Target, one_per_capability
from torchenv.matrix.inference import (
    WINDOWS,
    entry_runs,
    excluded_by_family,
    family_includes,
    reach,
    toolkit_excludes,
    windows_covers_linux,
)
from torchenv.matrix.model import ArchFact, Evidence, Matrix, Release, Variant, glibc_sort_key
from torchenv.resolver.plan import Rejection
from torchenv.values import ArchEntry, ComputeCapability, CudaVersion, DriverVersion, Platform

if TYPE_CHECKING:
    from torchenv.resolver.request import Request
    from torchenv.values import TorchSpec, TorchVersion

__all__ = [
    "ArchVerdict",
    "DriverVerdict",
    "arch_range",
    "check_cuda_arch",
    "check_driver",
    "check_glibc",
    "check_gpu_present",
    "check_index",
    "check_python",
    "check_rocm",
    "check_wheels",
    "driver_floors",
    "one_per_capability",
    "torch_wanted",
    "variant_wanted",
]


# --- compiled targets -------------------------------------------------------------------------


def arch_range(arch_list: Sequence[ArchEntry]) -> str:
    """``7.5–12.0+PTX`` style summary for messages."""
    if not arch_list:
        return "(empty)"
    return str(arch_list[0]) if len(arch_list) == 1 else f"{arch_list[0]}–{arch_list[-1]}"


def _not_in_list(gpu: Gpu, cc: ComputeCapability, arch_list: Sequence[ArchEntry], *,
                 jit_ok: bool) -> str:
    """The reason a list cannot run ``gpu``, naming the PTX it could JIT with a newer driver."""
    name = f", {gpu.name}" if gpu.name else ""
    ptx_hint = ""
    if not jit_ok and any(entry_runs(e, cc, jit_ok=True) for e in arch_list if e.ptx):
        ptx_hint = " (its PTX needs a driver at the toolkit level to JIT)"
    return f"GPU {gpu.index} ({cc.sm}{name}) not in arch list {arch_range(arch_list)}{ptx_hint}"


# --- rule 1: the wheels -----------------------------------------------------------------------


def check_python(release: Release, variant: Variant, from_pypi: bool, platform: Platform,
                 python: str) -> str | None:
    """Rule 1a: a wheel for the interpreter's tag on this platform (the index's own tags when
    the variant lists them)."""
    tags = release.python_tags(platform, None if from_pypi else variant)
    if python in tags:
        return None
    have = ", ".join(tags) if tags else "none"
    return f"no wheel for Python {python} on {platform} (has {have})"


def check_glibc(target: Target, release: Release) -> str | None:
    """Rule 1b: on Linux the host's glibc meets the wheels' manylinux floor; musl never does."""
    floor = release.manylinux.get(target.platform)
    if target.platform.system != "linux" or not floor:
        return None
    if target.musl and not target.glibc:
        return f"musl libc {target.musl}: the wheels need glibc ≥ {floor}"
    if target.glibc and glibc_sort_key(target.glibc) < glibc_sort_key(floor):
        return f"glibc {target.glibc} is older than the wheels' manylinux floor {floor}"
    return None


def check_wheels(target: Target, release: Release, variant: Variant,
                 from_pypi: bool) -> Rejection | None:
    """Rule 1: a wheel for the platform and the interpreter (1a), a glibc that loads it (1b)."""
    why = check_python(release, variant, from_pypi, target.platform, target.python)
    if why is not None:
        return Rejection.of(release.torch, variant.name, why, "python")
    why = check_glibc(target, release)
    return Rejection.of(release.torch, variant.name, why, "glibc") if why is not None else None


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


def check_gpu_present(release: Release, variant: Variant, kinds: frozenset[str], *,
                      asked_for: bool) -> Rejection | str | None:
    """The host has the GPU family the variant is built for (``kinds``: ``Target.kinds``).

    None when it has, or when the variant needs none (cpu). Without it, a variant asked for by
    name (``--variant``) still fits, running on the CPU: the answer is the warning that says so;
    any other is rejected.
    """
    kind = variant.kind
    if kind == "cpu" or kind in kinds:
        return None
    if asked_for:
        return _ASKED_FOR[kind].format(name=variant.name)
    return Rejection.of(release.torch, variant.name, _ABSENT[kind], "no-gpu")


# --- rule 2: the driver -----------------------------------------------------------------------


class DriverVerdict(NamedTuple):
    """Rule 2 for one CUDA version: ``ok`` when the driver runs it at all; ``full`` when it is at
    the toolkit floor (not only through minor-version compatibility, which has a warning)."""

    ok: bool
    full: bool
    reason: str | None = None
    warnings: tuple[str, ...] = ()
    # the driver version that would make this variant fully work
    needed: DriverVersion | None = None


def driver_floors(matrix: Matrix, cuda: CudaVersion, *,
                  windows: bool) -> tuple[DriverVersion | None, DriverVersion | None]:
    """(toolkit floor, minor-version-compatibility floor) for CUDA ``cuda`` on Linux or Windows."""
    tk = matrix.toolkit_floor(cuda)
    cf = matrix.compat_floor(cuda.major)
    toolkit = (tk.windows if windows else tk.linux) if tk else None
    compat = (cf.windows if windows else cf.linux) if cf else None
    return toolkit, compat


def check_driver(target: Target, matrix: Matrix, cuda: CudaVersion) -> DriverVerdict:
    """Rule 2: the driver against the toolkit and minor-version-compatibility floors of ``cuda``.

    The CUDA version the driver reports (NVML, nvidia-smi) is the authority when present.
    """
    if target.driver is None and target.cuda_driver is None:
        return DriverVerdict(False, False, "no NVIDIA driver found")
    toolkit, compat = driver_floors(matrix, cuda, windows=target.windows_driver)
    if target.cuda_driver:
        return _by_reported_cuda(target.driver, target.cuda_driver, cuda, toolkit, compat)
    assert target.driver is not None
    return _by_driver_version(target.driver, cuda, toolkit, compat)


def _by_reported_cuda(driver: DriverVersion | None, reported: CudaVersion, cuda: CudaVersion,
                      toolkit: DriverVersion | None,
                      compat: DriverVersion | None) -> DriverVerdict:
    """Rule 2 when the driver says which CUDA it supports."""
    if reported >= cuda:
        return DriverVerdict(True, True)
    if reported.major != cuda.major:
        return DriverVerdict(
            False, False,
            f"driver supports CUDA {reported}, CUDA {cuda} needs "
            + (f"driver ≥ {compat}" if compat else f"a CUDA {cuda.major}.x driver"),
            needed=compat or toolkit)
    if compat and driver and driver < compat:
        return DriverVerdict(
            False, False,
            f"driver {driver} is below the CUDA {cuda.major}.x compatibility floor {compat}",
            needed=toolkit or compat)
    warning = _compat_warning(driver or f"for CUDA {reported}", cuda, toolkit)
    return DriverVerdict(True, False, warnings=(warning,), needed=toolkit)


def _by_driver_version(driver: DriverVersion, cuda: CudaVersion, toolkit: DriverVersion | None,
                       compat: DriverVersion | None) -> DriverVerdict:
    """Rule 2 from the driver's version alone."""
    if toolkit and driver >= toolkit:
        return DriverVerdict(True, True)
    if compat is None:
        return DriverVerdict(False, False, f"no known driver floor for CUDA {cuda}")
    want_major = cuda.major
    if driver < compat:
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


def _compat_warning(driver: DriverVersion | str, cuda: CudaVersion,
                    toolkit: DriverVersion | None) -> str:
    floor = f" (≥ {toolkit})" if toolkit else ""
    return (
        f"driver {driver} runs CUDA {cuda} only through minor-version compatibility: no PTX "
        f"JIT and some features need the toolkit-level driver{floor}"
    )


# --- rule 3: the architecture -----------------------------------------------------------------


class ArchVerdict(NamedTuple):
    """Rule 3 for one candidate: does every visible GPU run it, and how do we know.

    ``evidence`` is the weakest class over the visible GPUs (None when no GPU decides);
    ``ptx_jit_only`` when some GPU runs it only by JIT-compiling PTX, ``ptx_jit_distant`` when
    that PTX is of an architecture more than one major older than the GPU; ``rule`` names the
    inference rule behind an ``inferred`` verdict or a rejection by rule, or, for an ``unknown``
    list, the ranking hint ``neighbours-include``. ``neighbours`` (unknown lists only): True when
    the confirmed lists of the same variant in the other releases all run every visible GPU,
    False when they all leave one out, None otherwise. ``rejected_by``: with a ``reason``, the
    id of the rule that rejects (:data:`torchenv.resolver.plan.ARCH_RULES`).
    """

    reason: str | None
    evidence: Evidence | None = None
    ptx_jit_only: bool = False
    warnings: tuple[str, ...] = ()
    rule: str | None = None
    sources: tuple[str, ...] = ()
    ptx_jit_distant: bool = False
    neighbours: bool | None = None
    rejected_by: str | None = None


_CC_UNKNOWN = "the compute capability of some GPU is unknown; architecture not checked for it"


def check_cuda_arch(target: Target, matrix: Matrix, release: Release, variant: Variant,
                    *, jit_ok: bool) -> ArchVerdict:
    """Rule 3 with evidence: every visible GPU against the variant's arch facts on the platform.

    Each GPU is judged by :func:`torchenv.matrix.inference.reach`: a known list decides, and its
    verdict is as strong as the SASS (or, for a GPU reached only through PTX, the weaker of SASS
    and PTX) evidence. An unknown list still rejects a GPU the toolkit
    cannot compile for (rule ``toolkit-bounds``); otherwise the verdict is ``unknown``.
    """
    known = target.capabilities
    if not known:
        if not target.gpus:
            return ArchVerdict(None)  # nothing torch would use; nothing to check
        return ArchVerdict(None, Evidence.UNKNOWN, warnings=(_CC_UNKNOWN,))
    fact = variant.arch_fact(target.platform)
    if fact.sass == Evidence.UNKNOWN or fact.arch_list is None:
        return _unknown_list(matrix, release, variant, target.platform, known)
    verdict = _known_list(fact, fact.arch_list, variant, known, jit_ok=jit_ok)
    if verdict.reason is None and target.capability_unknown:
        return ArchVerdict(None, Evidence.UNKNOWN, verdict.ptx_jit_only,
                           (*verdict.warnings, _CC_UNKNOWN), verdict.rule, verdict.sources)
    return verdict


def _unknown_list(matrix: Matrix, release: Release, variant: Variant, platform: Platform,
                  known: Sequence[tuple[Gpu, ComputeCapability]]) -> ArchVerdict:
    """Rule 3 for a list nobody knows. Rejects a GPU the toolkit cannot compile for (rule
    ``toolkit-bounds``) or that the confirmed lists of the variant around it leave out (rule
    ``excluded-by-family``); on Windows, infers support the Linux x86_64 list of the same build
    shows (rule ``windows-covers-linux``); otherwise the verdict is ``unknown``, with what the
    variant's other releases say (``neighbours``)."""
    cuda = variant.cuda_version
    assert cuda is not None
    floor = matrix.toolkit_floor(cuda)
    for g, cc in known:  # the first GPU of each capability names the reason
        why = toolkit_excludes(cc, cuda, floor)
        if why:
            return ArchVerdict(f"GPU {g.index} ({cc.base.sm}) {why}",
                               Evidence.INFERRED, rule="toolkit-bounds",
                               sources=floor.sources if floor else (),
                               rejected_by="toolkit-bounds")
    fact = variant.arch_fact(platform)
    part = fact.partial
    if part is not None:
        # what the partial list says of each GPU (the list is not known, so JIT is no question)
        reaches = [(g, cc, reach(fact, cc, jit_ok=False)) for g, cc in known]
        for g, cc, r in reaches:
            if r.runs is False:
                assert part.oldest is not None
                return ArchVerdict(
                    f"GPU {g.index} ({cc.base.sm}) is older than every target of torch "
                    f"{release.torch} {variant.name} on {platform} (nothing below "
                    f"{part.oldest.sm}; the rest of its list is not known)",
                    Evidence.CONFIRMED, rule="oldest-target", sources=part.sources,
                    rejected_by="oldest-target")
        if all(r.runs for _, _, r in reaches):
            return ArchVerdict(None, Evidence.CONFIRMED, rule="named-in-list",
                               sources=part.sources)
    around = fact.neighbours
    for g, cc in known:
        out = excluded_by_family(cc, around)
        if out is not None:
            shown = (", ".join(f"{t} {_fact_text(f)}" for t, f in out)
                     if len(out) <= 2 else
                     f"{out[0][0]} to {out[-1][0]}, none below {_oldest(out).sm}")
            return ArchVerdict(
                f"GPU {g.index} ({cc.base.sm}) is left out by the confirmed {variant.name} "
                f"lists on {platform} around torch {release.torch} ({shown}), whose own list "
                "is not known (rule excluded-by-family)",
                Evidence.INFERRED, rule="excluded-by-family",
                sources=tuple(dict.fromkeys(s for _, f in out for s in f.sources)),
                rejected_by="excluded-by-family")
    linux = around.linux if around is not None else None
    if platform == WINDOWS and linux is not None and all(
            windows_covers_linux(cc, linux) for _, cc in known):
        return ArchVerdict(None, Evidence.INFERRED, rule=(
            f"{linux.rule} + windows-covers-linux" if linux.rule
            else "windows-covers-linux"), sources=linux.sources)
    says = [family_includes(cc, around) for _, cc in known]
    neighbours = (True if all(s is True for s in says)
                  else False if any(s is False for s in says) else None)
    labels = ", ".join(f"GPU {g.index} ({cc.sm}{', ' + g.name if g.name else ''})"
                       for g, cc in known)
    return ArchVerdict(None, Evidence.UNKNOWN, warnings=(
        f"the arch list of torch {release.torch} {variant.name} on {platform} is not "
        f"known: it may not run on {labels}",),
        rule="neighbours-include" if neighbours else None, neighbours=neighbours)


def _fact_text(fact: ArchFact) -> str:
    if fact.arch_list is None and fact.partial is not None and fact.partial.oldest is not None:
        return f"(nothing below {fact.partial.oldest.sm})"
    return arch_range(fact.arch_list) if fact.arch_list else "(none)"


def _oldest(facts: Sequence[tuple[TorchVersion, ArchFact]]) -> ArchEntry:
    """The oldest target over whole lists and partial lists' ``oldest``."""
    targets = [e for _, f in facts for e in f.arch_list or ()]
    targets += [f.partial.oldest for _, f in facts
                if f.partial is not None and f.partial.oldest is not None]
    return min(targets)


def _known_list(fact: ArchFact, arch: Sequence[ArchEntry], variant: Variant,
                known: Sequence[tuple[Gpu, ComputeCapability]], *, jit_ok: bool) -> ArchVerdict:
    """Rule 3 for a known list: each GPU by SASS, else by PTX JIT (its evidence is the weaker
    of SASS and PTX), else the candidate is rejected."""
    sass, ptx = Evidence(fact.sass), Evidence(fact.ptx)
    classes: list[Evidence] = []
    jit: list[str] = []
    distant = False
    for g, cc in known:
        r = reach(fact, cc, jit_ok=jit_ok)
        if r.runs:
            classes.append(Evidence(r.evidence))
            if r.by_ptx:
                assert r.ptx_major is not None
                jit.append(f"GPU {g.index} ({cc.sm})")
                distant = distant or cc.major - r.ptx_major > 1
        else:
            why = _not_in_list(g, cc, arch, jit_ok=jit_ok)
            if ptx is Evidence.UNKNOWN:
                why = f"{why} (whether it carries PTX is not known)"
            return ArchVerdict(why, sass, rule=fact.rule, sources=fact.sources,
                               rejected_by="arch-list")
    warnings: tuple[str, ...] = ()
    if jit:
        warnings = (f"{', '.join(jit)} not compiled for in {variant.name}: runs only by "
                    "JIT-compiling PTX (slow first start, some kernels may be missing)",)
    evidence = min(classes)  # as strong as the weakest
    # the list's rule names how a part not confirmed was inferred: of no account to a verdict
    # that is confirmed (SASS confirmed, the list's PTX inferred, a GPU run by SASS)
    return ArchVerdict(None, evidence, ptx_jit_only=bool(jit), warnings=warnings,
                       rule=fact.rule if evidence is not Evidence.CONFIRMED else None,
                       sources=fact.sources, ptx_jit_distant=distant)


def check_rocm(target: Target, matrix: Matrix, release: Release,
               variant: Variant) -> ArchVerdict:
    """Rule 3 for ROCm: every gfx target of the host in the variant's list."""
    host_targets = target.rocm_targets
    targets = matrix.rocm_targets(variant.name, release.torch)
    if targets is None:
        return ArchVerdict(None, Evidence.UNKNOWN, warnings=(
            f"the gfx targets of {variant.name} are not known; GPU support unchecked",))
    evidence = Evidence(targets.evidence_for(release.torch))
    missing = [g for g in host_targets if g not in targets.gfx and g not in targets.may_have]
    if missing:
        return ArchVerdict(
            f"GPU target {missing[0]} not in {variant.name}'s list ({', '.join(targets.gfx)})",
            evidence, sources=targets.sources, rejected_by="rocm-targets")
    if any(g in targets.may_have for g in host_targets):
        return ArchVerdict(None, Evidence.UNKNOWN, sources=targets.sources)
    return ArchVerdict(None, evidence, sources=targets.sources)


# --- rule 4: the user's constraints -----------------------------------------------------------


def torch_wanted(spec: TorchSpec | None, release: Release) -> bool:
    """Rule 4, ``--torch``: the release matches the specifier."""
    return spec is None or spec.contains(release.torch)


def variant_wanted(request: Request, variant: Variant) -> bool:
    """Rule 4, ``--variant`` and ``--cuda``."""
    if request.explicit_variant and variant.name != request.variant:
        return False
    return request.cuda is None or variant.cuda_version == request.cuda


# --- the index entry --------------------------------------------------------------------------


def check_index(release: Release, variant: Variant,
                from_pypi: bool) -> tuple[Evidence, str | None]:
    """How the PyTorch index's entry for a candidate is known, and the warning when it is
    unknown: PyPI's own build is a fact of the release; others are as the data says (an entry a
    rule infers is named among the reasons, as an inferred arch list is)."""
    if from_pypi or variant.index == Evidence.CONFIRMED:
        return Evidence.CONFIRMED, None
    evidence = Evidence(variant.index)
    if evidence is Evidence.INFERRED:
        return evidence, None
    return evidence, (
        f"that torch {release.torch} has a {variant.name} build on the PyTorch index is "
        f"not confirmed (see 'torchenv matrix show --release {release.torch}')")
