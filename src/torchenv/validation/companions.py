"""``validate --with``: which companions to prove, what the child needs to know of each, and
whether the version installed is the one the companion data pairs with the installed torch.

The child (``_probe.py``) imports each companion and runs one small real operation with it; this
module decides what it is told (:func:`probe_requests`) and judges the versions it reports
(:func:`judge_pairing`), both pure functions of the companion data.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, Optional

from torchenv.matrix.companions import CompanionBuild, CompanionPackage, Companions
from torchenv.matrix.model import Evidence
from torchenv.resolver.stack import ALIASES, known_names, read_with
from torchenv.values import InvalidValue, Platform, TorchVersion, VariantName

if TYPE_CHECKING:
    from torchenv.validation.report import Report

__all__ = ["ALIASES", "CompanionRequest", "Pairing", "install_command", "judge_pairing",
           "known_names", "probe_requests", "read_with", "with_pairings"]

class CompanionRequest(NamedTuple):
    """What the validation child is told of one companion (``TORCHENV_VALIDATE_COMPANIONS``)."""

    name: str
    import_name: str
    install: str
    min_capability: Optional[str]

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "import": self.import_name, "install": self.install,
                "min_capability": self.min_capability}


def install_command(name: str) -> str:
    return f"torchenv resolve --with {name}"


def probe_requests(names: Iterable[str], data: Companions) -> tuple[CompanionRequest, ...]:
    """One request per package name (as :func:`read_with` returns them). The GPU floor is the
    lowest the data states for any release of the package: the child skips an operation only on
    a GPU below every stated floor."""
    out = []
    for name in names:
        package = data.package(name)
        if package is None:
            raise KeyError(name)
        floors = [g.min_compute_capability for g in package.gpu]
        out.append(CompanionRequest(package.name, package.import_name, install_command(
            package.name), str(min(floors)) if floors else None))
    return tuple(out)


Verdict = Literal["paired", "other-torch", "unknown"]


class Pairing(NamedTuple):
    """Whether the installed companion version is one the data pairs with the installed torch.

    ``paired`` only where a prebuilt build of that release is made for torch's release and, as
    far as the data states them, its variant and platform. ``other-torch`` only where it is
    known: the companion's local tag names another variant than torch's (``pt212cpu`` beside
    ``+cu130``) and the data has that build, or every prebuilt file of that release is made
    for other torch builds, with a known coupling, and the release has no source distribution
    that could have been built here against this torch. Anything less certain is ``unknown``.
    """

    verdict: Verdict
    text: str
    evidence: str
    sources: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"verdict": self.verdict, "text": self.text, "evidence": self.evidence,
                "sources": list(self.sources)}


def _release_of(text: str) -> Optional[TorchVersion]:
    """The bare release of an installed version (``2.13.0+cpu`` → ``2.13.0``)."""
    try:
        version = TorchVersion(text)
    except InvalidValue:
        return None
    return TorchVersion(".".join(str(n) for n in (*version.release, 0, 0)[:3]))


def _coupling_evidence(build: CompanionBuild) -> str:
    return Evidence(build.fact_evidence("coupling")).value


class _Tag(NamedTuple):
    """The torch build a companion's local version tag names: an exact variant (PyG's
    ``pt212cu130``, a plain ``cu130``) or a CUDA major alone (flash-attn's ``cu12torch2.8...``)."""

    text: str
    variant: Optional[VariantName] = None
    cuda_major: Optional[int] = None

    def contradicts(self, torch: VariantName) -> bool:
        if self.variant is not None:
            return torch != self.variant
        return torch.cuda is None or torch.cuda.major != self.cuda_major

    def names(self, build: CompanionBuild) -> bool:
        """Whether ``build`` is one the tag names (by the variants or CUDA major it states)."""
        if self.variant is not None:
            if build.variants:
                return self.variant in build.variants
            return build.cuda_major is not None and self.variant.cuda is not None and (
                self.variant.cuda.major == build.cuda_major)
        return build.cuda_major == self.cuda_major or any(
            v.cuda is not None and v.cuda.major == self.cuda_major for v in build.variants)


_VARIANT_TAG = re.compile(r"(?:pt[0-9]+)?(cpu|xpu|cu[0-9]{3}|rocm[0-9]+(?:\.[0-9]+){1,2})",
                          re.IGNORECASE)
_CUDA_MAJOR_TAG = re.compile(r"cu(1[0-9])(?:torch.*)?", re.IGNORECASE)


def _tag_of(version: TorchVersion) -> Optional[_Tag]:
    """What the local tag of an installed companion says of the torch build it is made for;
    None when it has none or says nothing torchenv reads."""
    local = version.local
    if local is None:
        return None
    if (m := _VARIANT_TAG.fullmatch(local)) is not None:
        try:
            return _Tag(local, variant=VariantName(m[1].lower()))
        except InvalidValue:
            return None
    if (m := _CUDA_MAJOR_TAG.fullmatch(local)) is not None:
        return _Tag(local, cuda_major=int(m[1]))
    return None


def _variant_of(torch: str) -> Optional[VariantName]:
    """The variant an installed torch names in its local tag (``2.13.0+cu130``); None when it
    has none (a PyPI build) or one that is not a variant."""
    local = TorchVersion(torch).local
    if local is None:
        return None
    try:
        return VariantName(local)
    except InvalidValue:
        return None


Fit = Literal["fits", "other", "unchecked"]


def _fit(build: CompanionBuild, variant: Optional[VariantName],
         platform: Optional[Platform]) -> Fit:
    """Whether ``build`` is made for torch's variant and platform as far as the data states
    them: ``unchecked`` where it states variants but torch's is unknown."""
    if platform is not None and platform not in build.platforms:
        return "other"
    if not build.variants and build.cuda_major is None:
        return "fits"
    if variant is None:
        return "unchecked"
    if build.variants and variant not in build.variants:
        return "other"
    if build.cuda_major is not None and (variant.cuda is None
                                         or variant.cuda.major != build.cuda_major):
        return "other"
    return "fits"


def _build_text(build: CompanionBuild) -> str:
    """``2.12 (cpu)``, ``2.4 (CUDA 12)``: the torch a build is made for, with its variants."""
    if build.variants:
        return f"{build.torch_text()} ({', '.join(map(str, build.variants))})"
    if build.cuda_major is not None:
        return f"{build.torch_text()} (CUDA {build.cuda_major})"
    return build.torch_text()


def _other_torch(name: str, what: str, targets: Iterable[CompanionBuild], torch: str
                 ) -> Pairing:
    builds = list(targets)
    made_for = " / ".join(sorted({_build_text(b) for b in builds}))
    sources = tuple(dict.fromkeys(s for b in builds for s in b.sources))
    return Pairing("other-torch", f"{what} is made for torch {made_for}, not {torch} "
                   f"(companion data); install the {name} made for this torch: "
                   f"{install_command(name)}", _coupling_evidence(builds[0]), sources)


def judge_pairing(package: CompanionPackage, installed: Optional[str],
                  torch: Optional[str], platform: Optional[Platform] = None) -> Pairing:
    """Judge ``installed`` (the companion's version, as its metadata says) against ``torch``
    (the installed torch's version, its local tag naming its variant) on ``platform`` (when
    known) by the companion data. A build pairs only where the release, the variant and the
    platform the data states all agree; what cannot be checked is ``unknown``."""
    name = package.name
    torch_release = _release_of(torch) if torch else None
    version = _release_of(installed) if installed else None
    if version is None or torch_release is None or installed is None or torch is None:
        return Pairing("unknown", f"the version of {name} or of torch could not be read",
                       "unknown")
    installed_version = TorchVersion(installed)
    release = package.release(installed_version.without_local()) or package.release(version)
    if release is None:
        known = ", ".join(str(r.version) for r in package.releases)
        return Pairing("unknown", f"{name} {installed} is not in torchenv's companion data "
                       f"(it lists {known}): which torch it is made for is unknown", "unknown")
    variant = _variant_of(torch)
    binaries = [b for b in release.builds if not b.is_source_build]
    tag = _tag_of(installed_version)
    if tag is not None and variant is not None and tag.contradicts(variant):
        named = [b for b in binaries if tag.names(b)
                 and _coupling_evidence(b) != Evidence.UNKNOWN.value]
        named = [b for b in named if b.binds(torch_release)] or named
        if named:
            return _other_torch(name, f"{name} {installed} (its local tag names the {tag.text} "
                                "build)", named, torch)
        return Pairing("unknown", f"{name} {installed}: its local tag ({tag.text}) names "
                       f"another build than torch {torch}'s, and the companion data has no "
                       "such build to say which torch it is made for", "unknown")
    if tag is not None:  # the installed files are the build the tag names
        binaries = [b for b in binaries if not (b.variants or b.cuda_major) or tag.names(b)]
    made_for = [b for b in binaries if b.binds(torch_release)]
    fits = [b for b in made_for if _fit(b, variant, platform) == "fits"]
    if fits:
        build = fits[0]
        evidence = _coupling_evidence(build)
        return Pairing("paired", f"the companion data pairs {name} {release.version} with "
                       f"torch {torch} (made for {_build_text(build)}, {build.coupling} "
                       f"coupling, {evidence})", evidence, build.sources)
    unchecked = [b for b in made_for if _fit(b, variant, platform) == "unchecked"]
    if unchecked:
        return Pairing("unknown", f"the companion data has {name} {release.version} for torch "
                       f"{' / '.join(sorted({_build_text(b) for b in unchecked}))}, and the "
                       f"variant of torch {torch} cannot be read from its version",
                       "unknown")
    for_others = [b for b in binaries if _coupling_evidence(b) != Evidence.UNKNOWN.value]
    has_sdist = any(b.is_source_build for b in release.builds)
    if not for_others or has_sdist:
        why = ("a source build of it is made against the torch installed when it was built"
               if has_sdist else "the data does not know which torch its files are made for")
        return Pairing("unknown", f"no prebuilt {name} {release.version} in the companion data "
                       f"is made for torch {torch}; {why}", "unknown")
    return _other_torch(name, f"{name} {release.version}", for_others, torch)


def with_pairings(report: Report, data: Companions,
                  platform: Optional[Platform] = None) -> Report:
    """Each ``companion:NAME`` check with its :class:`Pairing` in its metrics (``pairing``);
    a passing one says it in its detail too, led by ``warning:`` where the data says the
    version is made for another torch."""
    from dataclasses import replace

    checks = []
    for check in report.checks:
        package = data.package(check.name.removeprefix("companion:")) if (
            check.name.startswith("companion:") and check.name.count(":") == 1) else None
        version = check.metrics.get("version") if package is not None else None
        if package is None or not isinstance(version, str):
            checks.append(check)
            continue
        pairing = judge_pairing(package, version, report.torch, platform)
        detail = check.detail
        if check.status == "pass":
            lead = "warning: " if pairing.verdict == "other-torch" else ""
            detail = f"{detail}; {lead}{pairing.text}" if detail else lead + pairing.text
        checks.append(replace(check, detail=detail,
                              metrics={**check.metrics, "pairing": pairing.to_json()}))
    return replace(report, checks=tuple(checks))
