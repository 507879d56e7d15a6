"""``resolve --with``: torch together with the extensions that must match its build.

A layer over :func:`torchenv.resolver.resolve.resolve`, a pure function of the request, the
host, the matrix and the companion data (docs/companions.md, "Resolving with companions"):

1. **Pins first.** A companion whose every prebuilt build for the target's platform pins one
   torch release (coupling ``exact``: vLLM, xformers up to 0.0.34 alone) narrows the torch
   specifier before torch is resolved, intersected with the user's.
2. **Per torch pick.** Each companion that follows torch (``minor``, ``floor``) is chosen for
   the torch build the resolver picks: its newest release with a prebuilt build that
   :func:`~torchenv.resolver.companions.judge_companion` finds fitting (that torch release,
   variant, Python, platform, C++11 ABI, and every visible GPU runs its code).
3. **Prebuilt first.** When a companion has no prebuilt build for that torch, torch is resolved
   again below it (``<X`` added to the specifier), until every companion has one; the plan then
   says which package held torch back from which build to which (``held_back``), and what the
   newer pair's source build needs, as the data states it. With ``allow_build`` naming the
   package, its source build is taken for the first pick instead.
4. **No pair.** When no torch build leaves every companion a prebuilt file, :class:`NoMatch`
   (exit 3) carries the companions' reasons and the fixes: the data's ``instead`` entries (what
   runs where the package does not) and a source build where one exists.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

from packaging.utils import canonicalize_name

from torchenv.detection.profile import HostProfile
from torchenv.detection.target import Target, read_target
from torchenv.errors import BadInput
from torchenv.matrix.companions import (
    CompanionBuild,
    CompanionPackage,
    CompanionRelease,
    Companions,
)
from torchenv.matrix.index import PYPI_INDEX
from torchenv.matrix.model import Matrix
from torchenv.resolver.companions import RULES, CompanionVerdict, gpu_floor, judge_release
from torchenv.resolver.plan import ChosenCompanion, Fix, HeldBack, NoMatch, Plan, Rejection
from torchenv.resolver.request import Request
from torchenv.resolver.resolve import resolve
from torchenv.values import ComputeCapability, Platform, TorchSpec, TorchVersion, VariantName

__all__ = ["ALIASES", "known_names", "read_with", "resolve_stack"]

ALIASES: Mapping[str, tuple[str, ...]] = {"pyg": ("pyg-lib", "torch-scatter", "torch-sparse")}
"""Names that stand for several packages: ``pyg`` is PyG's compiled trio."""

def known_names(data: Companions) -> list[str]:
    """What ``--with`` accepts: every package of the data and the aliases."""
    return [p.name for p in data.packages] + sorted(ALIASES)


def read_with(values: Iterable[str], data: Companions) -> tuple[str, ...]:
    """The package names of ``--with`` values (each may list several, comma-separated), in the
    data's spelling, without repeats; raises :class:`BadInput` naming an unknown one."""
    names: list[str] = []
    for raw in values:
        for part in raw.split(","):
            text = part.strip()
            if not text:
                raise BadInput(f"{raw!r} names an empty package", field="with", value=raw,
                               hint="known: " + ", ".join(known_names(data)))
            for name in ALIASES.get(canonicalize_name(text), (text,)):
                package = data.package(name)
                if package is None:
                    raise BadInput(f"{text!r} is not a companion package torchenv knows",
                                   hint="known: " + ", ".join(known_names(data)),
                                   field="with", value=text)
                names.append(package.name)
    return tuple(dict.fromkeys(names))


def _newest_first(package: CompanionPackage) -> list[CompanionRelease]:
    return sorted(package.releases, key=lambda r: r.version, reverse=True)


def _binaries(package: CompanionPackage, platform: Platform) -> list[CompanionBuild]:
    return [b for r in package.releases for b in r.builds
            if not b.is_source_build and platform in b.platforms]


def _source_build(package: CompanionPackage) -> tuple[CompanionRelease, CompanionBuild] | None:
    """The newest release with a source distribution."""
    for release in _newest_first(package):
        for build in release.builds:
            if build.is_source_build:
                return release, build
    return None


def _source_build_needs(package: CompanionPackage) -> str | None:
    found = _source_build(package)
    if found is None:
        return None
    release = found[0]
    # what a build needs is said once, on the release whose sdist the sources were read for
    note = next((b.note for r in _newest_first(package) for b in r.builds
                 if b.is_source_build and b.note), None)
    return f"{package.name} {release.version} from source" + (f" ({note})" if note else "")


# --------------------------------------------------------------------------- pins


def _pinned_spec(request: Request, matrix: Matrix, packages: Sequence[CompanionPackage],
                 platform: Platform, allow_build: frozenset[str]
                 ) -> tuple[TorchSpec | None, list[str], bool]:
    """The torch specifier with every exact-pinning companion's releases intersected in, a
    sentence per pin (the user's specifier when nothing pins), and whether any release is
    left."""
    allowed: set[TorchVersion] | None = None
    said: list[str] = []
    for package in packages:
        builds = _binaries(package, platform)
        if not builds or any(b.coupling != "exact" for b in builds):
            continue
        if package.name in allow_build and _source_build(package) is not None:
            continue
        pins = {t for b in builds for t in b.torch_exact}
        allowed = pins if allowed is None else allowed & pins
        said.append(f"{package.name} pins torch to "
                    + ", ".join(str(t) for t in sorted(pins, reverse=True))
                    + f" on {platform} (its wheels' metadata)")
    if allowed is None:
        return request.torch, said, True
    user = request.torch
    releases = sorted((r.torch for r in matrix.releases
                       if r.torch in allowed and (user is None or user.contains(r.torch))),
                      reverse=True)
    if not releases:
        return None, said, False
    spec = ",".join(f"=={t}" for t in releases[:1]) if len(releases) == 1 else \
        f">={releases[-1]},<={releases[0]}," + ",".join(
            f"!={r.torch}" for r in matrix.releases
            if releases[-1] < r.torch < releases[0] and r.torch not in releases)
    return _intersect(user, spec.rstrip(",")), said, True


def _intersect(user: TorchSpec | None, more: str) -> TorchSpec:
    mine = str(user) if user is not None else ""
    return TorchSpec(f"{mine},{more}" if mine else more)


# --------------------------------------------------------------------------- one torch pick


def _gpus(host: Target, plan: Plan) -> tuple[ComputeCapability, ...]:
    """The GPUs a CUDA build's companions must run on (none for another build): those torch
    will see, capabilities completed."""
    if plan.cuda is None:
        return ()
    return tuple(g.compute_capability for g in host.gpus if g.compute_capability is not None)


def _choose(data: Companions, package: CompanionPackage, plan: Plan,
            gpus: tuple[ComputeCapability, ...], allow_build: bool
            ) -> tuple[ChosenCompanion | None, list[CompanionVerdict]]:
    """The newest prebuilt build of ``package`` that fits the plan's torch build; else, when
    allowed, its source build; and every verdict read, nearest first."""
    torch = TorchVersion.plain(plan.torch)
    verdicts: list[CompanionVerdict] = []
    for release in _newest_first(package):
        judged = judge_release(data, package, release, torch=torch,
                               variant=VariantName(plan.variant),
                               platform=Platform(plan.platform), python=plan.python,
                               gpus=gpus, jit_ok=plan.level == "full")
        verdicts.extend(judged)
        if judged[0].fits:
            return _chosen(package, release, judged[0], plan), verdicts
    verdicts.sort(key=_nearness)
    if allow_build:
        found = _source_build(package)
        if found is not None and gpu_floor(package, found[0].version, gpus).holds:
            release, build = found
            reason = (f"{package.name} {release.version}: no prebuilt file serves torch "
                      f"{plan.torch} {plan.variant}; a source build was allowed for it")
            return ChosenCompanion(package.name, str(release.version), "sdist", build.coupling,
                                   build.fact_evidence("exists"),
                                   (reason, *((build.note,) if build.note else ())),
                                   index_url=PYPI_INDEX), verdicts
    return None, verdicts


def _nearness(v: CompanionVerdict) -> int:
    return -RULES.index(v.rule)


def _chosen(package: CompanionPackage, release: CompanionRelease, verdict: CompanionVerdict,
            plan: Plan) -> ChosenCompanion:
    build = verdict.build
    url = verdict.url
    sha256 = None
    if url is not None and build.where == "release-asset":
        file = url.rsplit("/", 1)[-1]
        sha256 = next((a.sha256 for a in build.assets if a.file == file), None)
    index = {"pypi": PYPI_INDEX, "pytorch-index": plan.index_url}.get(build.where)
    reasons = [verdict.reason]
    warnings = list(verdict.warnings)
    if build.where == "release-asset" and sha256 is None:
        warnings.append(f"{package.name} {release.version}: no digest of {url} is recorded, "
                        "so the command cannot check the file it downloads")
    elif sha256 is not None:
        asset = next(a for a in build.assets if a.sha256 == sha256)
        reasons.append(f"{package.name}: the command checks the file's sha256 (how the digest "
                       f"is known: {asset.evidence})")
    if build.coupling == "exact":
        reasons.append(f"{package.name} {release.version} pins torch {build.torch_text()}")
    return ChosenCompanion(package.name, str(release.version), build.where, build.coupling,
                           verdict.evidence, tuple(reasons), url=url, index_url=index,
                           sha256=sha256, warnings=tuple(warnings))


# --------------------------------------------------------------------------- the stack


def resolve_stack(request: Request, host: HostProfile | Target, matrix: Matrix,
                  data: Companions, names: Sequence[str], allow_build: Iterable[str] = ()
                  ) -> Plan:
    """The torch build and one build of each companion ``names`` (as :func:`read_with` gives
    them) that fit together on ``host``: a :class:`Plan` whose ``companions``, ``held_back``
    and ``extra_constraints`` are filled in. Raises :class:`NoMatch` (exit 3) when no torch
    build leaves every companion a prebuilt file (or an allowed source build)."""
    allowed = frozenset(allow_build)
    packages = [p for p in (data.package(n) for n in names) if p is not None]
    host = host if isinstance(host, Target) else read_target(host, matrix)  # read once
    spec, pin_reasons, left = _pinned_spec(request, matrix, packages, host.platform, allowed)
    if not left:
        raise _no_torch_for_pins(request, host, matrix, pin_reasons)
    try:
        first = resolve(replace(request, torch=spec), host, matrix)
    except NoMatch as exc:
        if not pin_reasons:
            raise
        raise NoMatch(f"{'; '.join(pin_reasons)}: {exc.message}", exc.rejected, exc.fixes,
                      exc.matrix_version, exc.python, exc.platform,
                      exc.host_warnings) from None
    plan = first
    tried: list[tuple[Plan, dict[str, list[CompanionVerdict]]]] = []
    while True:
        chosen, missing = _choose_all(data, packages, plan, host, allowed)
        if missing and request.variant is None and request.cuda is None:
            other = _other_cuda(data, packages, plan, missing, request, spec, host, matrix,
                                allowed)
            if other is not None:
                tried.append((plan, missing))
                plan, chosen, missing = other
        if not missing:
            break
        tried.append((plan, missing))
        if any(not _binaries(p, host.platform)
               or not any(gpu_floor(p, r.version, _gpus(host, plan)).holds
                          for r in p.releases)
               for p in packages if p.name in missing):
            break  # no older torch changes the platform or the GPUs: no pair can fit
        try:
            plan = resolve(replace(request, torch=_intersect(spec, f"<{plan.torch}")), host,
                           matrix)
        except NoMatch:
            raise _no_pair(data, request, host, matrix, tried, allowed) from None
    if missing:
        raise _no_pair(data, request, host, matrix, tried, allowed)
    return _finish(data, plan, first, tried, chosen, pin_reasons)


def _choose_all(data: Companions, packages: Sequence[CompanionPackage], plan: Plan,
                host: Target, allowed: frozenset[str]
                ) -> tuple[list[ChosenCompanion], dict[str, list[CompanionVerdict]]]:
    gpus = _gpus(host, plan)
    chosen: list[ChosenCompanion] = []
    missing: dict[str, list[CompanionVerdict]] = {}
    for package in packages:
        pick, verdicts = _choose(data, package, plan, gpus, package.name in allowed)
        if pick is None:
            missing[package.name] = verdicts
        else:
            chosen.append(pick)
    return chosen, missing


def _other_cuda(data: Companions, packages: Sequence[CompanionPackage], plan: Plan,
                missing: Mapping[str, list[CompanionVerdict]], request: Request,
                spec: TorchSpec | None, host: Target, matrix: Matrix,
                allowed: frozenset[str]
                ) -> tuple[Plan, list[ChosenCompanion], dict[str, list[CompanionVerdict]]] | None:
    """The same torch release with another CUDA, when a companion lacked only the variant
    (PyG's pages carry some CUDA builds of a torch minor, not all): newest CUDA first."""
    variants = {v for verdicts in missing.values() for v_ in verdicts if v_.rule == "variant"
                for v in v_.build.variants if v.cuda is not None and str(v) != plan.variant}
    for variant in sorted(variants, key=lambda v: v.cuda or 0, reverse=True):
        try:
            other = resolve(replace(request, torch=_intersect(spec, f"=={plan.torch}"),
                                    cuda=variant.cuda), host, matrix)
        except NoMatch:
            continue
        chosen, still = _choose_all(data, packages, other, host, allowed)
        if not still:
            return other, chosen, still
    return None


def _finish(data: Companions, plan: Plan, first: Plan,
            tried: list[tuple[Plan, dict[str, list[CompanionVerdict]]]],
            chosen: list[ChosenCompanion], pin_reasons: list[str]) -> Plan:
    held: list[HeldBack] = []
    if tried:
        for name, verdicts in tried[0][1].items():
            package = data.package(name)
            assert package is not None
            served = ", ".join(dict.fromkeys(
                b.torch_text() for b in _binaries(package, Platform(first.platform))))
            if plan.torch == first.torch and verdicts:  # the same torch, another variant
                reason = verdicts[0].reason
            elif served:
                reason = (f"{name}'s prebuilt files serve torch {served}, not {first.torch} "
                          f"{first.variant}")
            else:
                reason = f"{name} has no prebuilt file for {first.platform}"
            held.append(HeldBack(name, first.torch, first.variant, plan.torch, plan.variant,
                                 reason, _source_build_needs(package)))
    reasons = [*plan.reasons, *pin_reasons]
    if held:  # the resolver's sentence would quote the specifier narrowed here, not the user's
        newest = f"torch {plan.torch} is the newest release matching"
        names = ", ".join(h.package for h in held)
        reasons = [f"torch {plan.torch} is the newest release with a prebuilt {names} that fits"
                   if r.startswith(newest) else r for r in reasons]
    for h in held:
        reasons.append(f"{h.package} held torch back from {h.from_torch} {h.from_variant} to "
                       f"{h.to_torch} {h.to_variant}: {h.reason}")
    for c in chosen:
        reasons.extend(c.reasons)
    warnings = [*plan.warnings, *(w for c in chosen for w in c.warnings)]
    extra: list[str] = []
    pin = data.triton_pin(TorchVersion.plain(plan.torch))
    if (pin is not None and pin.requirement is not None and plan.cuda is not None
            and plan.platform.startswith("linux")):
        extra.append(f"{pin.requirement} ; {pin.marker}" if pin.marker else pin.requirement)
    return replace(plan, companions=tuple(chosen), held_back=tuple(held),
                   extra_constraints=tuple(extra), reasons=tuple(dict.fromkeys(reasons)),
                   warnings=tuple(dict.fromkeys(warnings)))


def _no_torch_for_pins(request: Request, host: Target, matrix: Matrix,
                       pin_reasons: list[str]) -> NoMatch:
    wanted = (f" and the torch specifier {request.torch.text!r}" if request.torch is not None
              else "")
    return NoMatch(f"no torch release in the matrix satisfies {'; '.join(pin_reasons)}{wanted}",
                   (), (Fix(("drop or widen ", {"torch": None}),),),
                   matrix.matrix_version, host.python, str(host.platform),
                   host.profile.warnings)


def _no_pair(data: Companions, request: Request, host: Target, matrix: Matrix,
             tried: list[tuple[Plan, dict[str, list[CompanionVerdict]]]],
             allowed: frozenset[str]) -> NoMatch:
    """Exit 3: every torch pick left some companion without a build; the reasons of the first
    (newest) pick and the fixes the data gives."""
    first, missing = tried[0]
    rejected = tuple(Rejection(plan.torch, plan.variant, verdicts[0].reason, "companion",
                               verdicts[0].rule)
                     for plan, gaps in tried for verdicts in gaps.values() if verdicts)
    fixes: list[Fix] = []
    whys: list[str] = []
    gpus = _gpus(host, first)
    for name in missing:
        package = data.package(name)
        assert package is not None
        rules = {v.rule for _, gaps in tried for v in gaps.get(name, ())}
        if not rules:  # no build on this platform at all
            rules = {"platform"}
        # the data's ``gpu`` advice is about the package's GPU floor: it is given when that
        # floor is what fails, not when a build merely lacks one GPU's compiled target
        rules.discard("gpu")
        floors = [gpu_floor(package, r.version, gpus) for r in _newest_first(package)]
        runs = any(f.holds for f in floors)
        if not runs:
            rules.add("gpu")
            floor = floors[0]
            whys.append(f"{name} needs compute capability {floor.least} or newer, and "
                        + ", ".join(f"GPU {i} is {g.sm}" for i, g in floor.below))
        else:
            nearest = _nearest(tried, name)
            if nearest is not None:
                plan, verdict = nearest
                whys.append(f"nearest: torch {plan.torch} {plan.variant}: {verdict.reason}")
        for instead in package.instead:
            if instead.rule in rules:
                fixes.append(Fix((f"{name}: {instead.text}",)))
        needs = _source_build_needs(package)
        if needs is not None and name not in allowed and runs:
            fixes.append(Fix(({"allow_build": name}, f" builds {needs}")))
    names = ", ".join(missing)
    why = "; ".join(whys) or f"newest pick torch {first.torch} {first.variant}"
    return NoMatch(f"no torch build for this host has a prebuilt {names} ({why})",
                   rejected, tuple(fixes), matrix.matrix_version, host.python,
                   str(host.platform), host.profile.warnings)


def _nearest(tried: list[tuple[Plan, dict[str, list[CompanionVerdict]]]], name: str
             ) -> tuple[Plan, CompanionVerdict] | None:
    """The torch pick and the verdict of ``name`` that got furthest through the rules: what
    really keeps it out (the newest pick on a tie)."""
    found = [(plan, v) for plan, gaps in tried for v in gaps.get(name, ())]
    if not found:
        return None
    return max(found, key=lambda pv: RULES.index(pv[1].rule))
