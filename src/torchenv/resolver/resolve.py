"""``resolve(request, host, matrix) -> Plan``: the pure heart of torchenv.

Candidates are (release, variant) pairs. Each is checked against the rules of DESIGN.md in order
(platform and Python, glibc, driver, GPU architecture, index entry, user constraints), one
function of :mod:`torchenv.resolver.rules` per rule; survivors are ranked:

1. on a host with a GPU, every GPU build above every CPU build;
2. evidence before recency: a build whose support for every visible GPU is confirmed or
   inferred above every build whose support is unknown, across releases;
3. newest torch first;
4. within a release: the PyPI build when fully compatible, then the newest fully compatible
   variant, then variants that work only with warnings; an index entry whose existence is
   unconfirmed below a confirmed one of the same tier.

CPU is never chosen silently on an NVIDIA or AMD host: when no GPU build fits, ``NoMatch``
(exit 3) carries every rejection and the nearest fixes (:mod:`torchenv.resolver.fixes`). A host
with evidence of an NVIDIA GPU whose facts could not be read is not a host without one: it is
``NoMatch`` too, with the reason.
"""

from __future__ import annotations

from dataclasses import replace

from torchenv._record import record
from torchenv.detection.profile import HostProfile
from torchenv.installers.commands import index_url_for
from torchenv.matrix.model import Matrix, Release, Variant, cuda_version_of, parse_version_tuple
from torchenv.resolver.plan import (
    Alternative,
    Build,
    BuildEvidence,
    EvidenceAlternative,
    NoMatch,
    Plan,
    Rejection,
)
from torchenv.resolver.request import Request, torch_specifier
from torchenv.resolver.rules import (
    DriverVerdict,
    arch_range,
    check_cuda_arch,
    check_driver,
    check_glibc,
    check_python,
    check_rocm,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Optional

__all__ = ["Candidate", "NoMatch", "complete_gpu_facts", "evaluate", "gpu_facts_gap", "resolve"]


@record
class Candidate:
    release: Release
    variant: Variant
    from_pypi: bool
    gpu_build: bool
    full: bool
    warnings: tuple[str, ...]
    driver_full: bool = True
    arch_evidence: str = "n/a"  # confirmed / inferred / unknown, or n/a when no GPU decides
    ptx_only: bool = False
    index: str = "confirmed"
    arch_rule: Optional[str] = None
    arch_sources: tuple[str, ...] = ()

    @property
    def arch_known(self) -> bool:
        return self.arch_evidence != "unknown"

    def evidence(self) -> BuildEvidence:
        return BuildEvidence(self.arch_evidence, self.arch_rule, self.arch_sources, self.index,
                             self.release.sources if self.from_pypi else self.variant.sources)


def gpu_kinds(host: HostProfile) -> set[str]:
    """The accelerator families on ``host`` that steer the choice."""
    kinds = set()
    if host.nvidia is not None and (host.nvidia.gpus or host.nvidia.driver_version
                                    or host.nvidia.cuda_driver_version):
        kinds.add("cuda")
    if host.rocm is not None and host.rocm.gfx_targets:
        kinds.add("rocm")
    if host.xpu is not None and host.xpu.devices and host.xpu.level_zero:
        # an Intel display device without the Level Zero runtime is usually an iGPU that the
        # xpu build cannot use; it must not steer the choice
        kinds.add("xpu")
    return kinds


def complete_gpu_facts(host: HostProfile, matrix: Matrix) -> HostProfile:
    """``host`` with each GPU's unknown compute capability taken from the GPU catalog.

    Old drivers' nvidia-smi has no ``compute_cap`` field and /proc gives names only; the catalog
    (gpus.yaml, sourced from NVIDIA's compute capability tables) maps those names. A GPU whose
    name is missing or not in the catalog is completed from the host's PCI devices instead, when
    :func:`_capability_by_pci` finds one answer for all of them.
    """
    nv = host.nvidia
    if nv is None or all(g.compute_capability for g in nv.gpus):
        return host
    sources = dict(host.sources)
    by_pci = _capability_by_pci(host, matrix)
    gpus = []
    for g in nv.gpus:
        entry = matrix.nvidia_gpu(g.name) if g.name and not g.compute_capability else None
        if entry is not None:
            g = replace(g, compute_capability=entry.compute_capability.rstrip("af"))
            sources[f"nvidia.gpus[{g.index}].compute_capability"] = (
                f"GPU catalog ({entry.name}; sources: {', '.join(entry.sources)})")
        elif not g.compute_capability and by_pci is not None:
            g = replace(g, compute_capability=by_pci[0])
            sources[f"nvidia.gpus[{g.index}].compute_capability"] = by_pci[1]
        gpus.append(g)
    return host.with_changes(nvidia=replace(nv, gpus=tuple(gpus)), sources=sources)


def _capability_by_pci(host: HostProfile, matrix: Matrix) -> tuple[str, str] | None:
    """(compute capability, where it came from) shared by every NVIDIA GPU on the PCI bus.

    A GPU's record does not say which PCI function it is, so the catalog's answer is used only
    when it holds for all of them: every NVIDIA display device is in the catalog, the entries
    agree on one compute capability, and the scan shows at least as many devices as the driver
    lists GPUs (a shorter scan may have missed the one in question).
    """
    nv = host.nvidia
    devices = [d for d in host.pci if d.vendor == "10de"]
    if nv is None or not devices or len(devices) < len(nv.gpus):
        return None
    entries = {f"{d.vendor}:{d.device}": matrix.nvidia_gpu_by_pci(d.device) for d in devices}
    found = {pci: e for pci, e in entries.items() if e is not None}
    if len(found) != len(entries):
        return None
    capabilities = {e.compute_capability.rstrip("af") for e in found.values()}
    if len(capabilities) != 1:
        return None
    ids = ", ".join(f"{pci} = {found[pci].name}" for pci in sorted(found))
    cited = ", ".join(dict.fromkeys(s for e in found.values() for s in e.sources))
    return capabilities.pop(), f"GPU catalog by PCI id ({ids}; sources: {cited})"


def gpu_facts_gap(host: HostProfile, matrix: Matrix) -> tuple[str, list[str]] | None:
    """(reason, fixes) when there is evidence of an NVIDIA GPU whose facts could not be read.

    A failed probe is "unknown", never "absent": without the driver version no CUDA build can be
    chosen, and without a GPU's compute capability no arch list can be checked.
    """
    nv = host.nvidia
    evidence = host.nvidia_evidence
    hw = _hardware_hint(host, matrix)
    gpu_flag = f"--gpu {hw[1]}" if hw and hw[1] else "--gpu CC"
    if nv is None or (nv.driver_version is None and nv.cuda_driver_version is None):
        if not evidence and nv is None:
            return None
        seen = evidence[0] if evidence else f"{len(nv.gpus) if nv else 0} GPU(s) listed"
        what = f" ({hw[0]})" if hw else ""
        if host.container and nv is None and evidence and all(
                e.startswith("PCI ") for e in evidence):
            return (f"an NVIDIA GPU is on the PCI bus{what}, but this container has no "
                    "/dev/nvidia* device: the GPU is not passed in", [
                        "run the container with the GPU (docker run --gpus all …, or the "
                        "NVIDIA Container Toolkit's runtime), then run this again",
                        f"or describe the machine: --driver VERSION {gpu_flag}",
                        "or choose the CPU build knowingly: --variant cpu"])
        reason = (f"an NVIDIA GPU is present{what} but its driver version could not be read "
                  f"(evidence: {seen})")
        return reason, [
            "load or repair the NVIDIA driver (nvidia-smi must answer), then run this again",
            f"or describe the machine: --driver VERSION {gpu_flag}",
            "or choose the CPU build knowingly: --variant cpu",
        ]
    if nv.source.startswith("override") and not nv.gpus:
        return None  # --driver alone: the GPUs were left out on purpose (evidence is unknown)
    if not nv.gpus and nv.visible is None:
        return ("the NVIDIA driver " + (nv.driver_version or "") + " answered but the facts "
                "of its GPUs could not be read", [
                    f"pass the GPUs' compute capabilities: {gpu_flag} (repeat for each)",
                    "or choose the CPU build knowingly: --variant cpu"])
    unknown = [g for g in nv.visible_gpus() if not g.compute_capability]
    if unknown:
        names = ", ".join(f"GPU {g.index}" + (f" ({g.name})" if g.name else "")
                          for g in unknown)
        return (f"the compute capability of {names} could not be read and the GPU catalog "
                "does not know it", [
                    "pass it: --gpu CC (e.g. --gpu 8.6; repeat for each GPU)",
                    "or choose the CPU build knowingly: --variant cpu"])
    return None


def _hardware_hint(host: HostProfile, matrix: Matrix) -> tuple[str, str | None] | None:
    """("PCI 10de:1b80, GeForce GTX 1080 per the catalog", "6.1") for the first NVIDIA device."""
    for dev in host.pci:
        if dev.vendor != "10de":
            continue
        entry = matrix.nvidia_gpu_by_pci(dev.device)
        if entry is None:
            return f"PCI {dev.vendor}:{dev.device} at {dev.address}", None
        cc = entry.compute_capability.rstrip("af")
        return (f"PCI {dev.vendor}:{dev.device}, {entry.name} per the GPU catalog, "
                f"compute capability {cc}"), cc
    return None


def _variants_for(release: Release, platform: str) -> list[tuple[Variant, bool]]:
    """(variant, served-by-PyPI) pairs available on ``platform``."""
    out: list[tuple[Variant, bool]] = []
    default = release.pypi_default.get(platform)
    seen = set()
    for v in release.variants:
        if platform in v.platforms:
            out.append((v, v.name == default))
            seen.add(v.name)
    if default is not None and default not in seen and platform in release.python:
        listed = release.variant(default)
        if default == "cpu" or listed is None:
            # the PyPI build itself: its wheels are facts of releases.yaml; only a CUDA
            # build's arch list can be missing
            listed = Variant(name=default, platforms=(platform,), index="confirmed",
                             sources=release.sources)
        out.append((listed, True))
    return out


@record
class _Verdict:
    """What the accelerator rules said of one candidate (reject when ``reason`` is set)."""

    reason: Optional[str] = None
    category: str = "other"
    warnings: tuple[str, ...] = ()
    full: bool = True
    driver_full: bool = True
    evidence: str = "n/a"
    ptx_only: bool = False
    rule: Optional[str] = None
    sources: tuple[str, ...] = ()


_FITS = _Verdict()
"""The verdict of a candidate no GPU rule applies to (a CPU build): it fits, without warnings."""
_NO_NVIDIA = _Verdict("no NVIDIA GPU or driver", "no-gpu")
_NO_AMD = _Verdict("no AMD ROCm GPU", "no-gpu")
_NO_INTEL = _Verdict("no Intel GPU with the Level Zero runtime", "no-gpu")


class Trials:
    """What stays the same across evaluations of one request on hosts that differ only in the
    NVIDIA driver (the fixes try every known driver floor): the candidates with the verdict of
    rules 1a and 1b (:data:`Slate`), and rules 2 and 3 per (arch fact, driver verdict). Each
    entry keyed by an id keeps the object it names, so the id stays that object's."""

    __slots__ = ("cuda", "drivers", "refused", "slates")

    def __init__(self) -> None:
        self.slates: dict[str | None, Slate] = {}  # by only_kind
        self.drivers: dict[DriverVerdict, DriverVerdict] = {}  # one object per distinct verdict
        self.refused: dict[int, _Verdict] = {}  # by id of a failing driver verdict
        self.cuda: CudaVerdicts = {}


if TYPE_CHECKING:
    # Rules 2 and 3 of CUDA candidates by (id of the arch fact, variant, the release when the
    # arch list is unknown (it is named in the warning), id of the driver verdict, one object
    # per distinct verdict): patch releases and adjacent minors share arch facts, so each
    # distinct one is judged once.
    CudaVerdicts = dict[tuple[int, str, str, int], tuple[object, "_Verdict"]]


def _check_cuda(request: Request, host: HostProfile, matrix: Matrix, kinds: set[str],
                rel: Release, variant: Variant, drivers: dict[str, DriverVerdict],
                trials: Trials) -> _Verdict:
    """Rules 2 and 3 for a CUDA variant: the driver floors, then the arch list with evidence.

    ``drivers`` keeps rule 2's verdict per CUDA version (within one evaluation it depends on
    nothing else, and hundreds of candidates share a dozen CUDA versions); ``trials.cuda``
    keeps the whole verdict (:data:`CudaVerdicts`)."""
    cuda = variant.cuda_version
    assert cuda is not None
    if "cuda" not in kinds:
        if request.explicit_variant:
            return _Verdict(warnings=(f"no NVIDIA GPU found: {variant.name} was asked for "
                                      "explicitly and will run on the CPU here",), full=False)
        return _NO_NVIDIA
    dv = drivers.get(cuda)
    if dv is None:
        found = check_driver(host, matrix, cuda)
        dv = drivers[cuda] = trials.drivers.setdefault(found, found)
    if not dv.ok:
        refused = trials.refused.get(id(dv))
        if refused is None:
            refused = trials.refused[id(dv)] = _Verdict(dv.reason or "driver too old", "driver")
        return refused
    fact = variant.arch_facts.get(host.platform)
    if fact is None:
        return _cuda_verdict(host, matrix, rel, variant, dv)
    key = (id(fact), variant.name, rel.torch if fact.sass == "unknown" else "", id(dv))
    seen = trials.cuda.get(key)
    if seen is not None and seen[0] is fact:
        return seen[1]
    verdict = _cuda_verdict(host, matrix, rel, variant, dv)
    trials.cuda[key] = (fact, verdict)  # dv stays alive in trials.drivers
    return verdict


def _cuda_verdict(host: HostProfile, matrix: Matrix, rel: Release, variant: Variant,
                  dv: DriverVerdict) -> _Verdict:
    av = check_cuda_arch(host, matrix, rel, variant, jit_ok=dv.full)
    if av.reason:
        return _Verdict(av.reason, "arch", rule=av.rule)
    full = dv.full and not av.ptx_only and av.evidence != "unknown"
    return _Verdict(warnings=(*dv.warnings, *av.warnings), full=full, driver_full=dv.full,
                    evidence=av.evidence, ptx_only=av.ptx_only, rule=av.rule,
                    sources=av.sources)


def _check_rocm(request: Request, host: HostProfile, matrix: Matrix, kinds: set[str],
                rel: Release, variant: Variant) -> _Verdict:
    if "rocm" not in kinds:
        if request.explicit_variant:
            return _Verdict(warnings=(f"no AMD GPU found: {variant.name} was asked for "
                                      "explicitly",), full=False)
        return _NO_AMD
    av = check_rocm(host, matrix, rel, variant)
    if av.reason:
        return _Verdict(av.reason, "arch")
    return _Verdict(warnings=av.warnings, full=av.evidence != "unknown", evidence=av.evidence,
                    sources=av.sources)


def _check_xpu(request: Request, kinds: set[str]) -> _Verdict:
    if "xpu" in kinds:
        return _FITS
    if not request.explicit_variant:
        return _NO_INTEL
    return _Verdict(warnings=("no Intel GPU found: xpu was asked for explicitly",), full=False)


def _index_warning(rel: Release, variant: Variant, from_pypi: bool) -> tuple[str, str | None]:
    """(evidence class of the index entry, its warning when not confirmed)."""
    if from_pypi:
        return "confirmed", None
    if variant.index == "confirmed":
        return "confirmed", None
    return variant.index, (
        f"that torch {rel.torch} has a {variant.name} build on the PyTorch index is "
        f"{'only inferred' if variant.index == 'inferred' else 'not confirmed'} "
        f"(see 'torchenv matrix show --release {rel.torch}')")


def evaluate(
    request: Request, host: HostProfile, matrix: Matrix, *, only_kind: str | None = None,
    trials: Trials | None = None, with_rejected: bool = True,
) -> tuple[list[Candidate], list[Rejection]]:
    """Every candidate checked against every rule: (compatible, rejected).

    ``only_kind`` (``"cuda"``, ...) limits the candidates to one accelerator family;
    ``trials`` (:class:`Trials`) is shared by evaluations of one request on hosts that differ
    only in the driver; ``with_rejected=False`` leaves the rejected list empty, for a caller
    that only asks what fits.
    """
    kinds = gpu_kinds(host)
    platform = host.platform
    ok: list[Candidate] = []
    rejected: list[Rejection] = []
    drivers: dict[str, DriverVerdict] = {}
    if trials is None:
        trials = Trials()
    slate = trials.slates.get(only_kind)
    if slate is None:
        every = trials.slates.get(None)
        if every is not None:  # the same entries as _slate(only_kind): those of that kind
            slate = [e for e in every if e[1] is None or e[1].kind == only_kind]
        else:
            slate = _slate(request, host, matrix, only_kind)
        trials.slates[only_kind] = slate

    for rel, variant, from_pypi, why, category in slate:
        if why is not None:
            if with_rejected:
                rejected.append(Rejection(rel.torch, variant.name if variant else "*", why,
                                          category))
            continue
        assert variant is not None  # a release without wheels here always has a reason
        kind = variant.kind
        if kind == "cuda":
            verdict = _check_cuda(request, host, matrix, kinds, rel, variant, drivers,
                                  trials)
        elif kind == "rocm":
            verdict = _check_rocm(request, host, matrix, kinds, rel, variant)
        elif kind == "xpu":
            verdict = _check_xpu(request, kinds)
        else:
            verdict = _FITS
        if verdict.reason is not None:
            if with_rejected:
                rejected.append(Rejection(rel.torch, variant.name, verdict.reason,
                                          verdict.category))
            continue
        index, index_warning = _index_warning(rel, variant, from_pypi)
        warnings = list(verdict.warnings)
        if index_warning:
            warnings.append(index_warning)
        ok.append(
            Candidate(rel, variant, from_pypi, kind != "cpu" or platform == "macos-arm64",
                      verdict.full and index_warning is None, tuple(warnings),
                      driver_full=verdict.driver_full, arch_evidence=verdict.evidence,
                      ptx_only=verdict.ptx_only, index=index, arch_rule=verdict.rule,
                      arch_sources=verdict.sources)
        )
    return ok, rejected


if TYPE_CHECKING:
    # The candidates of one request on one platform, in release order, with the verdict of the
    # rules that do not depend on the GPU driver: (release, variant (None for a release without
    # wheels here), from PyPI, why not (None when the wheels fit), category).
    Slate = list[tuple[Release, Optional[Variant], bool, Optional[str], str]]


def _slate(request: Request, host: HostProfile, matrix: Matrix,
           only_kind: str | None) -> Slate:
    spec: Any = torch_specifier(request.torch)
    platform = host.platform
    slate: Slate = []
    for rel in matrix.releases:
        if spec is not None and not spec.contains(rel.torch, prereleases=True):
            continue
        variants = _variants_for(rel, platform)
        if not variants:
            slate.append((rel, None, False, f"no wheels for {platform}", "platform"))
            continue
        for variant, from_pypi in variants:
            if request.explicit_variant and variant.name != request.variant:
                continue
            if only_kind is not None and variant.kind != only_kind:
                continue
            if request.cuda is not None and variant.cuda_version != request.cuda:
                continue
            why, category = _check_wheels(host, rel, variant, from_pypi)
            slate.append((rel, variant, from_pypi, why, category))
    return slate


def _check_wheels(host: HostProfile, rel: Release, variant: Variant,
                  from_pypi: bool) -> tuple[str | None, str]:
    """Rules 1a and 1b: (why not, "python" or "glibc"), or (None, "") when the wheels fit."""
    why = check_python(rel, variant, from_pypi, host.platform, host.python.version)
    if why is not None:
        return why, "python"
    why = check_glibc(host, rel)
    return (why, "glibc") if why is not None else (None, "")


def _variant_version(name: str) -> tuple[int, ...]:
    """``cu128`` -> (12, 8), ``rocm6.2.4`` -> (6, 2, 4), anything else -> (0,)."""
    cuda = cuda_version_of(name)
    if cuda:
        return parse_version_tuple(cuda)
    if name.startswith("rocm"):
        try:
            return parse_version_tuple(name[4:])
        except ValueError:
            return (0,)
    return (0,)


_VARIANT_ORDER: dict[str, tuple[tuple[int, ...], tuple[int, ...]]] = {}


def _variant_order(name: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(version, version negated) of a variant name, kept per name: every candidate of every
    resolve asks for them."""
    parts = _VARIANT_ORDER.get(name)
    if parts is None:
        version = _variant_version(name)
        parts = _VARIANT_ORDER[name] = (version, tuple(-x for x in version))
    return parts


_NEWEST_FIRST: dict[str, tuple[int, ...]] = {}


def _newest_first(torch: str) -> tuple[int, ...]:
    """A release's version negated (newest sorts first), kept per release."""
    key = _NEWEST_FIRST.get(torch)
    if key is None:
        key = _NEWEST_FIRST[torch] = tuple(-x for x in parse_version_tuple(torch))
    return key


def rank_key(c: Candidate, strict_gpu: bool, prefer_gpu: bool) -> tuple[Any, ...]:
    """Sort key (smaller first): GPU builds, evidence, newest torch, then the tiers of DESIGN.md.

    Evidence: a build whose arch support for the visible GPUs is unknown ranks below every build
    whose support is confirmed or inferred, whatever the release. Within a release: the PyPI
    build when fully compatible; other fully compatible variants, newest first; then variants
    that work with warnings (PyPI's first, then newest), a GPU reached only through PTX JIT,
    and last minor-version-compatibility drivers (the CUDA closest to the driver first). An
    index entry that is not confirmed comes after a confirmed one of the same tier.
    """
    version, newest_first = _variant_order(c.variant.name)
    sub: tuple[int, ...]
    if c.full and c.from_pypi:
        tier, sub = 0, (0,)
    elif c.full:
        tier, sub = 1, newest_first
    elif c.driver_full and c.ptx_only:
        tier, sub = 3, newest_first
    elif c.driver_full:
        tier, sub = 2, (0 if c.from_pypi else 1, *newest_first)
    else:
        tier, sub = 4, version
    gpu_first = 0 if (c.gpu_build or not (strict_gpu or prefer_gpu)) else 1
    unknown = 1 if c.arch_evidence == "unknown" else 0
    index_rank = 0 if c.index == "confirmed" else 1
    return (gpu_first, unknown, _newest_first(c.release.torch), tier, index_rank, sub,
            c.variant.name)


def resolve(request: Request, host: HostProfile, matrix: Matrix) -> Plan:
    """The one build to install on ``host``; raises :class:`NoMatch` (exit 3) when none fits."""
    host = complete_gpu_facts(host, matrix)
    if not request.explicit_variant:
        gap = gpu_facts_gap(host, matrix)
        if gap is not None:
            reason, fixes = gap
            raise NoMatch(reason, fixes[0], (), tuple(fixes), matrix.matrix_version,
                          host.python.version, host.platform, host.warnings)
    trials = Trials()  # shared with the fixes' trial hosts, should nothing fit
    compatible, rejected = evaluate(request, host, matrix, trials=trials)
    kinds = gpu_kinds(host)
    strict_gpu = bool(kinds & {"cuda", "rocm"}) and not request.explicit_variant
    prefer_gpu = bool(kinds) or host.mps
    if strict_gpu:
        gpu_ok = [c for c in compatible if c.gpu_build]
        cpu_only = [c for c in compatible if not c.gpu_build]
        if not gpu_ok:
            for c in cpu_only:
                rejected.append(
                    Rejection(
                        c.release.torch,
                        c.variant.name,
                        "CPU build: not chosen on a GPU host without --variant cpu",
                        "cpu-on-gpu-host",
                    )
                )
            compatible = []
    if not compatible:
        from torchenv.resolver.fixes import no_match

        raise no_match(request, host, matrix, rejected, trials=trials)
    compatible.sort(key=lambda c: rank_key(c, strict_gpu, prefer_gpu))
    best = compatible[0]
    rel, variant = best.release, best.variant
    warnings = list(best.warnings)
    reasons = _reasons(best, host, request)
    alt: EvidenceAlternative | None = None
    newer_unverified: Build | None = None
    confirmed_alternative: Build | None = None
    if best.arch_evidence == "unknown" and best.gpu_build:
        from torchenv.resolver.fixes import evidence_alternative

        alt = evidence_alternative(request, host, matrix)
        if alt is not None:
            warnings.append(
                f"nothing proves torch {rel.torch} {variant.name} runs on this GPU; the newest "
                f"build whose support is {alt.evidence} is torch {alt.torch} "
                f"{alt.variant} (--torch =={alt.torch} --variant {alt.variant})")
        else:
            warnings.append(
                f"nothing proves torch {rel.torch} {variant.name} runs on this GPU, and no "
                "build in the matrix has confirmed support for it; run 'torchenv validate' "
                "after installing")
    elif best.gpu_build:
        newer = [c for c in compatible if c.arch_evidence == "unknown" and c.gpu_build
                 and c.release.key > rel.key]
        if newer:
            top = newer[0]  # already ranked: the newest of them
            newer_unverified = Build(top.release.torch, top.variant.name)
            reasons.append(
                f"newer builds exist whose support for this GPU is unknown, e.g. torch "
                f"{top.release.torch} {top.variant.name} (arch list on {host.platform} not "
                f"known; --torch =={top.release.torch} --variant {top.variant.name} takes "
                "the risk)")
    if "xpu" in kinds and variant.kind == "cpu" and not request.explicit_variant:
        warnings.append("an Intel GPU is present but no xpu build fits; using the CPU build")
    if host.nvidia is not None and host.nvidia.visible == () and variant.kind == "cuda":
        warnings.append(
            "CUDA_VISIBLE_DEVICES hides every GPU: torch will see none until it "
            "is unset or lists a GPU"
        )
    if (variant.kind == "cuda" and host.nvidia is not None and not host.nvidia.gpus
            and host.nvidia.source.startswith("override")):
        warnings.append("no GPU was described (only the driver): the arch list was not "
                        "checked; give the GPUs with --gpu")
    torchvision = rel.torchvision
    torchaudio = rel.torchaudio
    if not request.with_torchvision:
        torchvision = None
    elif torchvision is None and "torchvision" in rel.unconfirmed:
        warnings.append(
            f"which torchvision pairs with torch {rel.torch} is not confirmed; left out "
            f"(see 'torchenv matrix show --release {rel.torch}')"
        )
    elif torchvision is None:
        warnings.append(
            f"no torchvision release pairs with torch {rel.torch}; left out "
            "(--torch with an older release brings it, --no-torchvision silences this)"
        )
    if not request.with_torchaudio:
        torchaudio = None
    elif torchaudio is None and "torchaudio" in rel.unconfirmed:
        warnings.append(f"which torchaudio pairs with torch {rel.torch} is not confirmed; left out")
    elif torchaudio is None:
        warnings.append(f"no torchaudio release pairs with torch {rel.torch}; left out")
    index_url: Optional[str] = None
    local_tag: Optional[str] = None
    if not best.from_pypi:
        index_url = index_url_for(variant.name, request.index_base)
        local_tag = variant.name
    accelerator = {"cuda": "cuda", "rocm": "rocm", "xpu": "xpu"}.get(variant.kind, "cpu")
    if variant.kind == "cpu" and host.platform == "macos-arm64":
        accelerator = "mps"
    if not best.full:
        # the pick works only with warnings; name the best build that fits without any, so the
        # choice is the user's
        fit = next((c for c in compatible if c.full and c.gpu_build == best.gpu_build), None)
        if fit is not None:
            confirmed_alternative = Build(fit.release.torch, fit.variant.name)
    alternatives = tuple(
        Alternative(c.release.torch, c.variant.name, "full" if c.full else "compat", c.warnings,
                    c.arch_evidence)
        for c in compatible[1:6]
    )
    return Plan(
        torch=rel.torch,
        torchvision=torchvision,
        torchaudio=torchaudio,
        variant=variant.name,
        index_url=index_url,
        python=host.python.version,
        platform=host.platform,
        accelerator=accelerator,
        level="full" if best.full else "compat",
        matrix_version=matrix.matrix_version,
        local_tag=local_tag,
        reasons=tuple(reasons),
        warnings=tuple(dict.fromkeys(warnings)),
        rejected=tuple(rejected),
        alternatives=alternatives,
        cuda=variant.cuda_version,
        glibc_floor=rel.manylinux.get(host.platform),
        conda_forge=rel.conda.conda_forge,
        pytorch_channel=rel.conda.pytorch_channel,
        evidence=best.evidence(),
        confirmed_alternative=confirmed_alternative,
        evidence_alternative=alt,
        newer_unverified=newer_unverified,
        host_warnings=host.warnings,
    )


def _reasons(c: Candidate, host: HostProfile, request: Request) -> list[str]:
    out = []
    v = c.variant
    if request.explicit_variant:
        out.append(f"variant {v.name} was asked for")
    if v.kind == "cuda" and host.nvidia is not None:
        nv = host.nvidia
        drv = nv.driver_version or f"CUDA {nv.cuda_driver_version}"
        out.append(
            f"driver {drv} supports CUDA {v.cuda_version}"
            + ("" if c.driver_full else " through minor-version compatibility")
        )
        arch = v.arch_list_for(host.platform)
        gpus = nv.visible_gpus()
        how = {"confirmed": "confirmed", "inferred": f"inferred: {c.arch_rule}"}.get(
            c.arch_evidence, c.arch_evidence)
        if arch and gpus and c.ptx_only:
            out.append(f"its arch list {arch_range(arch)} ({how}) reaches every visible GPU, "
                       "some only through PTX JIT")
        elif arch and gpus:
            out.append(
                f"every visible GPU ({', '.join(g.compute_capability or '?' for g in gpus)}"
                f") is in its arch list {arch_range(arch)} ({how})"
            )
    elif v.kind == "rocm" and host.rocm is not None:
        out.append(f"{v.name} is built for {', '.join(host.rocm.gfx_targets)}")
    elif v.kind == "cpu":
        if host.platform == "macos-arm64":
            out.append("the macOS arm64 build uses the GPU through MPS")
        elif not gpu_kinds(host):
            out.append("no NVIDIA, AMD or Intel GPU was found, so the CPU build is the right one")
    newest = ("the newest release" if c.arch_evidence != "unknown"
              else "the newest release (no build with known support fits)")
    out.append(
        f"torch {c.release.torch} is {newest} with a wheel for Python "
        f"{host.python.version} on {host.platform} that fits"
        if not request.torch
        else f"torch {c.release.torch} is {newest} matching {request.torch!r} that fits"
    )
    if c.from_pypi:
        out.append(f"PyPI's own {host.platform} build is {v.name}, so no extra index is needed")
    return out
