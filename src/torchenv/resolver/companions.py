"""Does one companion build serve one torch build on a target? The pure judgement of a pair.

The rules, in the order a verdict names the first that fails:

1. ``source-build``: an sdist is never a fit, only a reason (installing it compiles).
2. ``platform``: the build has files for the target's platform.
3. ``python``: and for its Python tag (an abi3 wheel does not load in a free-threaded Python).
4. ``torch``: the build's coupling binds this torch release (exact, minor, floor).
5. ``variant``: a find-links or index build carries torch's variant; a release asset named by
   CUDA major needs a CUDA build of torch with that major.
6. ``abi``: a release asset named by C++11 ABI flag is taken with the flag whose build matches
   torch's own ABI on Linux (``cxx11_abi``); when that ABI is unknown no file can be chosen.
7. ``gpu``: every GPU runs the build's code: its arch list by the matrix's rule 3 for one GPU
   (:func:`torchenv.matrix.inference.reach`, SASS and PTX as for torch), and the package's
   stated GPU floor.

Each verdict carries the weakest evidence class of the facts it used and, for a fit, the
resolved file or page. ``resolve`` does not call this yet: it is the rule the planner of
``resolve --with`` is to stand on (docs/companions.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from torchenv.matrix.companions import (
    CompanionBuild,
    CompanionPackage,
    CompanionRelease,
    Companions,
    GpuRequirement,
)
from torchenv.matrix.inference import reach
from torchenv.matrix.model import EVIDENCE_CLASSES
from torchenv.values import ComputeCapability, Platform, TorchVersion, VariantName

__all__ = ["RULES", "CompanionVerdict", "GpuFloor", "gpu_floor", "judge_companion",
           "judge_release"]

RULES: tuple[str, ...] = ("source-build", "platform", "python", "torch", "variant", "abi",
                          "gpu", "fits")
"""The verdict's rule ids in the order they are applied (a source build first: it is never a
fit); a verdict whose failing rule comes later got further."""


@dataclass(frozen=True)
class CompanionVerdict:
    """The answer for one (torch build, companion build) pair.

    ``rule`` is the id of the first rule that failed, or ``fits``; ``reason`` says it in one
    line; ``evidence`` is the weakest class among the facts used; ``url`` is the release asset
    file or find-links page the fit uses (None for an index or PyPI build); ``warnings`` say
    what the fit could not prove.
    """

    fits: bool
    rule: str
    reason: str
    evidence: str
    build: CompanionBuild
    url: str | None = None
    warnings: tuple[str, ...] = ()


def _weakest(classes: Sequence[str]) -> str:
    return max(classes, key=EVIDENCE_CLASSES.index, default="confirmed")


def _py_digits(tag: str) -> str:
    """``3.12`` → ``312`` (the ``cp312`` of a wheel name)."""
    return tag.replace(".", "")


def judge_companion(
    data: Companions,
    package: CompanionPackage,
    release: CompanionRelease,
    build: CompanionBuild,
    *,
    torch: TorchVersion,
    variant: VariantName,
    platform: Platform,
    python: str,
    gpus: Sequence[ComputeCapability] = (),
    jit_ok: bool = True,
) -> CompanionVerdict:
    """Judge ``build`` (of ``package`` ``release``) for torch ``torch`` + ``variant`` on
    ``platform`` with Python ``python`` and the visible ``gpus`` (none: no GPU rule applies).
    ``jit_ok``: the driver can JIT PTX (it is at the toolkit level, as for torch)."""
    name = f"{package.name} {release.version}"
    used = [build.fact_evidence("exists")]

    def no(rule: str, reason: str, *extra: str) -> CompanionVerdict:
        return CompanionVerdict(False, rule, f"{name}: {reason}", _weakest([*used, *extra]),
                                build)

    if build.is_source_build:
        return no("source-build", "only a source build here (it compiles against the "
                  "installed torch)")
    if platform not in build.platforms:
        return no("platform", f"no {platform} file (it has "
                  f"{', '.join(map(str, build.platforms))})")
    used.append(build.fact_evidence("python"))
    if not build.fits_python(python):
        return no("python", f"no wheel for Python {python} ({build.python_text()})")
    used.append(build.fact_evidence("coupling"))
    if not build.binds(torch):
        return no("torch", f"built for torch {build.torch_text()} ({build.coupling}), "
                  f"not {torch}")
    cuda = variant.cuda
    if build.variants and variant not in build.variants:
        return no("variant", f"no {variant} build (it has "
                  f"{', '.join(map(str, build.variants))})")
    if build.cuda_major is not None and (cuda is None or cuda.major != build.cuda_major):
        have = "a CPU build" if cuda is None else f"CUDA {cuda.major} ({variant})"
        return no("variant", f"built for CUDA {build.cuda_major} builds of torch, and "
                  f"torch {torch} {variant} is {have}")
    url = build.url
    if url is not None:
        url = url.replace("{torch_minor}", torch.series).replace("{variant}", str(variant))
        url = url.replace("{py}", _py_digits(python))
    if build.abi_flags:
        used.append(build.fact_evidence("abi"))
        flag, abi_evidence = _abi_flag(data, build, torch, variant, platform)
        if flag is None:
            return no("abi", f"the C++11 ABI of torch {torch} {variant} on {platform} is not "
                      "known, so no file can be chosen by its ABI flag", abi_evidence)
        used.append(abi_evidence)
        assert url is not None  # the validator requires {abi_flag} in the url for abi_flags
        url = url.replace("{abi_flag}", flag)
    warnings: list[str] = []
    if gpus:
        verdict = _gpu_rule(package, release, build, gpus, jit_ok, used, warnings)
        if verdict is not None:
            rule, reason, evidence = verdict
            return no(rule, reason, evidence)
    return CompanionVerdict(True, "fits", f"{name}: {build.where} build for torch "
                            f"{build.torch_text()} serves torch {torch} {variant}",
                            _weakest(used), build, url, tuple(warnings))


def _abi_flag(data: Companions, build: CompanionBuild, torch: TorchVersion,
              variant: VariantName, platform: Platform) -> tuple[str | None, str]:
    """The asset flag whose build has torch's ABI, and how torch's ABI is known.

    A flag built ``true``/``false`` matches that ABI. A ``follows-torch`` flag was built with
    the ABI of the torch it was built against: that is torch's own only where one fact covers
    every variant of the release on this platform (where the release's builds differ, as 2.6's
    do, which torch built the file decides, and that is not recorded)."""
    fact = data.abi_fact(torch, platform, variant)
    if fact is None or fact.value is None:
        return None, "unknown"
    uniform = not fact.variants and not fact.except_variants
    for wanted in ("true" if fact.value else "false", "follows-torch"):
        for flag, built in build.abi_flags.items():
            if built == wanted and (wanted != "follows-torch" or uniform):
                return flag, fact.evidence
    return None, fact.evidence


@dataclass(frozen=True)
class GpuFloor:
    """A package release's GPU floor against the GPUs: the requirement the data states (None
    when no source states one) and the GPUs below it, as (index, capability)."""

    requirement: GpuRequirement | None
    below: tuple[tuple[int, ComputeCapability], ...]

    @property
    def holds(self) -> bool:
        """Every GPU is at or above the floor (or no floor is stated)."""
        return not self.below

    @property
    def least(self) -> ComputeCapability | None:
        return None if self.requirement is None else self.requirement.min_compute_capability


def gpu_floor(package: CompanionPackage, version: TorchVersion,
              gpus: Sequence[ComputeCapability]) -> GpuFloor:
    """The one rule of a companion's GPU floor: the floor the data states for release
    ``version`` and which of ``gpus`` lie below it."""
    requirement = package.gpu_requirement(version)
    if requirement is None:
        return GpuFloor(None, ())
    least = requirement.min_compute_capability
    return GpuFloor(requirement, tuple(
        (i, cc) for i, cc in enumerate(gpus)
        if (cc.major, cc.minor) < (least.major, least.minor)))


def _gpu_rule(package: CompanionPackage, release: CompanionRelease, build: CompanionBuild,
              gpus: Sequence[ComputeCapability], jit_ok: bool, used: list[str],
              warnings: list[str]) -> tuple[str, str, str] | None:
    """The first GPU the build cannot run, as (rule, reason, evidence); None when all can."""
    stated = False
    if build.arch_list is not None:
        stated = True
        fact = build.arch_fact
        targets = " ".join(map(str, build.arch_list))
        for i, cc in enumerate(gpus):
            answer = reach(fact, cc, jit_ok=jit_ok)
            used.append(answer.evidence)
            if not answer.runs:
                return "gpu", f"GPU {i} ({cc.sm}) is not among its compiled targets " \
                              f"({targets})", answer.evidence
            if answer.by_ptx:
                warnings.append(f"{package.name} {release.version} runs on GPU {i} ({cc.sm}) "
                                f"only by JIT-compiling its PTX for {answer.ptx_major}.x")
    floor = gpu_floor(package, release.version, gpus)
    if floor.requirement is not None:
        stated = True
        used.append(floor.requirement.evidence)
        if floor.below:
            i, cc = floor.below[0]
            return "gpu", f"needs compute capability {floor.least} or newer; GPU {i} is " \
                          f"{cc.sm}", floor.requirement.evidence
    if not stated:
        used.append("unknown")
        warnings.append(f"{package.name} {release.version}: no source read states which GPUs "
                        "its kernels run on")
    return None


def judge_release(
    data: Companions,
    package: CompanionPackage,
    release: CompanionRelease,
    *,
    torch: TorchVersion,
    variant: VariantName,
    platform: Platform,
    python: str,
    gpus: Sequence[ComputeCapability] = (),
    jit_ok: bool = True,
) -> tuple[CompanionVerdict, ...]:
    """Every build of ``release`` judged for the same torch build and target: the fits first,
    then the builds that failed a later rule (they came nearer), a source build last; ties in
    the data's order."""
    verdicts = [judge_companion(data, package, release, b, torch=torch, variant=variant,
                                platform=platform, python=python, gpus=gpus, jit_ok=jit_ok)
                for b in release.builds]
    return tuple(sorted(verdicts, key=lambda v: -RULES.index(v.rule)))
