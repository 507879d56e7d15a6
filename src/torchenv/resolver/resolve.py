"""``resolve(request, host, matrix) -> Plan``: the pure heart of torchenv.

Candidates are (release, variant) pairs. Each is checked against the rules of
docs/resolution.md in order, one function of :mod:`torchenv.resolver.rules` per rule
(:func:`~torchenv.resolver.candidate.evaluate`); the survivors are ranked by
:class:`~torchenv.resolver.rank.RankKey` and the first is the choice, explained by
:mod:`torchenv.resolver.explain`.

CPU is never chosen silently on an NVIDIA or AMD host: when no GPU build fits, ``NoMatch``
(exit 3) carries every rejection and the nearest fixes (:mod:`torchenv.resolver.fixes`). A host
with evidence of an NVIDIA GPU whose facts could not be read is not a host without one: it is
``NoMatch`` too, with the reason.
"""

from __future__ import annotations

from torchenv.detection.profile import HostProfile
from torchenv.detection.target import Target
from torchenv.matrix.index import index_url_for
from torchenv.matrix.model import Evidence, Matrix
from torchenv.resolver import explain
from torchenv.resolver.candidate import Candidate, as_target, evaluate
from torchenv.resolver.fixes import (
    evidence_alternative,
    gap_no_match,
    gpu_facts_gap,
    no_match,
)
from torchenv.resolver.plan import (
    Alternative,
    Build,
    BuildEvidence,
    EvidenceAlternative,
    NoMatch,
    Plan,
    Rejection,
)
from torchenv.resolver.rank import ranked
from torchenv.resolver.request import Request
from torchenv.values import Platform, optional_text

__all__ = [
    "Candidate",
    "NoMatch",
    "Target",
    "evaluate",
    "gpu_facts_gap",
    "resolve",
]

_ACCELERATOR = {"cuda": "cuda", "rocm": "rocm", "xpu": "xpu"}
_MACOS_ARM64 = Platform("macos-arm64")


def resolve(request: Request, host: HostProfile | Target, matrix: Matrix) -> Plan:
    """The one build to install on ``host``; raises :class:`NoMatch` (exit 3) when none fits.

    ``host`` is the :class:`Target` the caller read (:func:`torchenv.detection.target.
    read_target`), or a profile, read into its target here before anything is judged; from
    there the path runs straight down: the facts gap, the candidates and their rules, the
    ranking, the plan or the fixes, each reading the one target.
    """
    target = as_target(host, matrix)
    if not request.explicit_variant:
        gap = gpu_facts_gap(target, matrix)
        if gap is not None:
            raise gap_no_match(target, matrix, *gap)
    compatible, rejected = ranked(request, target, matrix)
    if not compatible:
        raise no_match(request, target, matrix, rejected)
    return _plan(request, target, matrix, compatible, rejected)


def _plan(request: Request, target: Target, matrix: Matrix, compatible: list[Candidate],
          rejected: list[Rejection]) -> Plan:
    """The first of ``compatible`` (best first) as a :class:`Plan`, explained."""
    best = compatible[0]
    warnings = list(best.warnings)
    reasons = explain.reasons(best, target, request)
    alternative: EvidenceAlternative | None = None
    newer: Candidate | None = None
    if best.gpu_build and best.arch_evidence is Evidence.UNKNOWN:
        alternative = evidence_alternative(request, target, matrix)
        warnings.append(explain.evidence_warning(best, alternative))
    elif best.gpu_build:
        newer = explain.newer_unverified(best, compatible)
        if newer is not None:
            reasons.append(explain.newer_unverified_reason(newer, target.platform))
        distant = explain.distant_ptx_reason(best, compatible)
        if distant is not None:
            reasons.append(distant)
    warnings += explain.host_warnings(best, target, request)
    torchvision, torchaudio, missing = explain.companions(best.release, request)
    warnings += missing
    reasons += explain.companion_reasons(best.release, request)
    # a choice that fits only with warnings names the best build that fits without any
    confirmed = None if best.fully_compatible else next(
        (c for c in compatible if c.fully_compatible and c.gpu_build == best.gpu_build), None)
    variant = str(best.variant.name)
    return Plan(
        torch=str(best.release.torch),
        torchvision=optional_text(torchvision),
        torchaudio=optional_text(torchaudio),
        variant=variant,
        index_url=None if best.from_pypi else index_url_for(variant, request.index_base),
        python=target.python,
        platform=str(target.platform),
        accelerator=_accelerator(best, target),
        level="full" if best.fully_compatible else "compat",
        matrix_version=matrix.matrix_version,
        local_tag=None if best.from_pypi else variant,
        reasons=tuple(reasons),
        warnings=tuple(dict.fromkeys(warnings)),
        rejected=tuple(rejected),
        alternatives=tuple(_alternative(c) for c in compatible[1:6]),
        cuda=optional_text(best.variant.cuda_version),
        glibc_floor=best.release.manylinux.get(target.platform),
        conda_forge=best.release.conda.conda_forge,
        pytorch_channel=best.release.conda.pytorch_channel,
        evidence=_evidence(best),
        confirmed_alternative=_build(confirmed) if confirmed is not None else None,
        evidence_alternative=alternative,
        newer_unverified=_build(newer) if newer is not None else None,
        host_warnings=target.profile.warnings,
    )


def _accelerator(c: Candidate, target: Target) -> str:
    if c.variant.kind == "cpu" and target.platform == _MACOS_ARM64:
        return "mps"
    return _ACCELERATOR.get(c.variant.kind, "cpu")


def _build(c: Candidate) -> Build:
    return Build(str(c.release.torch), str(c.variant.name))


def _alternative(c: Candidate) -> Alternative:
    return Alternative(str(c.release.torch), str(c.variant.name),
                       "full" if c.fully_compatible else "compat", c.warnings,
                       c.arch_evidence_name)


def _evidence(c: Candidate) -> BuildEvidence:
    return BuildEvidence(
        arch=c.arch_evidence_name,
        arch_rule=c.arch_rule,
        arch_sources=c.arch_sources,
        index=c.index.value,
        index_sources=c.release.sources if c.from_pypi else c.variant.sources,
    )
