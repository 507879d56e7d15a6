"""``validate --with``: which companions to prove, what the child needs to know of each, and
whether the version installed is the one the companion data pairs with the installed torch.

The child (``_probe.py``) imports each companion and runs one small real operation with it; this
module decides what it is told (:func:`probe_requests`) and judges the versions it reports
(:func:`judge_pairing`), both pure functions of the companion data.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, Optional

from torchenv.matrix.companions import CompanionBuild, CompanionPackage, Companions
from torchenv.matrix.model import Evidence
from torchenv.resolver.stack import ALIASES, known_names, read_with
from torchenv.values import InvalidValue, TorchVersion

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

    ``other-torch`` only where the data knows it: every prebuilt file of that release is made
    for other torch releases, with a known coupling, and the release has no source distribution
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


def judge_pairing(package: CompanionPackage, installed: Optional[str],
                  torch: Optional[str]) -> Pairing:
    """Judge ``installed`` (the companion's version, as its metadata says) against ``torch``
    (the installed torch's version) by the companion data."""
    name = package.name
    torch_release = _release_of(torch) if torch else None
    version = _release_of(installed) if installed else None
    if version is None or torch_release is None or installed is None:
        return Pairing("unknown", f"the version of {name} or of torch could not be read",
                       "unknown")
    release = package.release(TorchVersion(installed).without_local()) or package.release(
        version)
    if release is None:
        known = ", ".join(str(r.version) for r in package.releases)
        return Pairing("unknown", f"{name} {installed} is not in torchenv's companion data "
                       f"(it lists {known}): which torch it is made for is unknown", "unknown")
    binaries = [b for b in release.builds if not b.is_source_build]
    made_for = [b for b in binaries if b.binds(torch_release)]
    if made_for:
        build = made_for[0]
        evidence = _coupling_evidence(build)
        return Pairing("paired", f"the companion data pairs {name} {release.version} with "
                       f"torch {torch_release} (made for {build.torch_text()}, {build.coupling} "
                       f"coupling, {evidence})", evidence, build.sources)
    for_others = [b for b in binaries if _coupling_evidence(b) != Evidence.UNKNOWN.value]
    has_sdist = any(b.is_source_build for b in release.builds)
    if not for_others or has_sdist:
        why = ("a source build of it is made against the torch installed when it was built"
               if has_sdist else "the data does not know which torch its files are made for")
        return Pairing("unknown", f"no prebuilt {name} {release.version} in the companion data "
                       f"is made for torch {torch_release}; {why}", "unknown")
    targets = sorted({b.torch_text() for b in for_others})
    sources = tuple(dict.fromkeys(s for b in for_others for s in b.sources))
    return Pairing("other-torch", f"{name} {release.version} is made for torch "
                   f"{' / '.join(targets)}, not {torch_release} (companion data); install the "
                   f"{name} made for this torch: {install_command(name)}",
                   _coupling_evidence(for_others[0]), sources)


def with_pairings(report: Report, data: Companions) -> Report:
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
        pairing = judge_pairing(package, version, report.torch)
        detail = check.detail
        if check.status == "pass":
            lead = "warning: " if pairing.verdict == "other-torch" else ""
            detail = f"{detail}; {lead}{pairing.text}" if detail else lead + pairing.text
        checks.append(replace(check, detail=detail,
                              metrics={**check.metrics, "pairing": pairing.to_json()}))
    return replace(report, checks=tuple(checks))
