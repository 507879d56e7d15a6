"""What would make an unsatisfiable request work, and the evidence-backed alternative.

Kept apart from the rules: these functions re-run the resolver on changed requests or hosts
(a newer driver, no constraints) to say what the nearest fix is.
"""

from __future__ import annotations

from dataclasses import replace

from torchenv.detection.profile import HostProfile
from torchenv.errors import Unsatisfiable
from torchenv.matrix.model import Matrix, parse_version_tuple
from torchenv.resolver.plan import EvidenceAlternative, NoMatch, Rejection
from torchenv.resolver.request import Request
from torchenv.resolver.resolve import (
    Trials,
    _variants_for,
    evaluate,
    gpu_kinds,
    rank_key,
    resolve,
)
from torchenv.resolver.rules import check_driver, driver_floors

__all__ = ["evidence_alternative", "no_match"]


def evidence_alternative(
    request: Request, host: HostProfile, matrix: Matrix
) -> EvidenceAlternative | None:
    """The best GPU build whose support for the visible GPUs is confirmed or inferred.

    Looked for without the user's torch, variant and CUDA constraints (they may be what rules
    every evidence-backed build out); None when no build in the matrix has such support.
    """
    free = Request(with_torchvision=request.with_torchvision,
                   with_torchaudio=request.with_torchaudio, index_base=request.index_base)
    fits, _ = evaluate(free, host, matrix, with_rejected=False)
    backed = [c for c in fits if c.gpu_build and c.arch_evidence in ("confirmed", "inferred")]
    if not backed:
        return None
    top = min(backed, key=lambda c: rank_key(c, True, True))
    return EvidenceAlternative(top.release.torch, top.variant.name, top.arch_evidence,
                               top.arch_rule)


def no_match(
    request: Request, host: HostProfile, matrix: Matrix, rejected: list[Rejection], *,
    trials: Trials | None = None,
) -> NoMatch:
    """Unsatisfiable, with the nearest fixes; ``trials``: those of the evaluation that found
    nothing (the fixes try the same request on hosts that differ only in the driver)."""
    fixes: list[str] = []
    kinds = gpu_kinds(host)
    nv = host.nvidia
    if nv is not None and nv.driver_version is None and nv.cuda_driver_version is None:
        fixes.append("no NVIDIA driver version is known: pass --driver VERSION (as nvidia-smi "
                     "prints it), or install the NVIDIA driver")
    elif any(r.category == "driver" for r in rejected) and nv is not None:
        lowest, newest = _driver_upgrades(request, host, matrix, trials or Trials())
        if newest is not None:
            fixes.append(f"upgrade the NVIDIA driver to ≥ {newest[0]} for torch {newest[1]} "
                         f"{newest[2]}")
        if lowest is not None and lowest != newest:
            fixes.append(f"the smallest driver upgrade that gives a GPU build: ≥ {lowest[0]} "
                         f"(torch {lowest[1]} {lowest[2]})")
    if request.torch or request.explicit_variant or request.cuda:
        try:
            alt = resolve(
                Request(
                    with_torchvision=request.with_torchvision,
                    with_torchaudio=request.with_torchaudio,
                    index_base=request.index_base,
                ),
                host,
                matrix,
            )
            fixes.append(
                f"without the constraints, torch {alt.torch} {alt.variant} fits this machine"
            )
        except Unsatisfiable:
            pass
    if kinds & {"cuda", "rocm"} and any(r.category == "arch" for r in rejected):
        first_rel = matrix.releases[-1].torch if matrix.releases else "?"
        last_rel = matrix.releases[0].torch if matrix.releases else "?"
        fixes.append(
            f"no build of torch {first_rel} – {last_rel} in the matrix was compiled for this GPU "
            "(see --explain); releases older than the matrix may have been"
            if not request.torch
            else "a release outside --torch may support this GPU: drop the constraint to see"
        )
    if request.variant != "cpu" and kinds:
        fixes.append("--variant cpu installs the CPU build explicitly")
    py_rej = [r for r in rejected if r.category in ("python", "platform")]
    if py_rej and len(py_rej) == len(rejected):
        have = sorted(
            {t for r in matrix.releases for t in r.python.get(host.platform, ())},
            key=lambda t: (parse_version_tuple(t.rstrip("t")), t.endswith("t")),
        )
        if have:
            fixes.append(
                f"no release has a wheel for Python {host.python.version} on {host.platform}; "
                f"Pythons with wheels there: {', '.join(have)}"
            )
        else:
            fixes.append(f"no release has wheels for {host.platform}")
    what = "GPU build" if kinds & {"cuda", "rocm"} and request.variant != "cpu" else "build"
    constraint = f" matching {request.torch!r}" if request.torch else ""
    message = (
        f"no {what} of torch{constraint} fits this machine ({host.platform}, "
        f"Python {host.python.version}"
        + (
            f", driver {host.nvidia.driver_version}"
            if host.nvidia and host.nvidia.driver_version
            else ""
        )
        + ")"
    )
    return NoMatch(
        message,
        fixes[0] if fixes else None,
        tuple(rejected),
        tuple(fixes),
        matrix.matrix_version,
        host.python.version,
        host.platform,
        host.warnings,
    )


def _driver_upgrades(
    request: Request, host: HostProfile, matrix: Matrix, trials: Trials
) -> tuple[tuple[str, str, str] | None, tuple[str, str, str] | None]:
    """(lowest, best): the smallest known driver floor that gives some CUDA build, and the
    smallest one that gives the newest torch reachable by any driver; each (driver, torch,
    variant). Only the CUDA candidates are re-checked, at each floor above the current driver.
    """
    assert host.nvidia is not None
    windows = host.platform == "win-amd64" or host.wsl
    cudas = {
        v.cuda_version
        for r in matrix.releases
        for v in r.variants
        if v.cuda_version and host.platform in v.platforms
    }
    floors: set[str] = set()
    for cuda in cudas:
        for floor in driver_floors(matrix, cuda, windows=windows):
            if floor:
                floors.add(floor)
    current = host.nvidia.driver_version
    ordered = sorted(floors, key=parse_version_tuple)
    if current:
        ordered = [f for f in ordered if parse_version_tuple(f) > parse_version_tuple(current)]
    if not ordered:
        return None, None

    def trial_host(floor: str) -> HostProfile:
        assert host.nvidia is not None
        return host.with_changes(
            nvidia=replace(host.nvidia, driver_version=floor, cuda_driver_version=None)
        )

    def best_at(floor: str) -> tuple[str, str, str] | None:
        fits, _ = evaluate(request, trial_host(floor), matrix, only_kind="cuda", trials=trials,
                           with_rejected=False)
        if not fits:
            return None
        top = min(fits, key=lambda c: rank_key(c, True, True))
        return floor, top.release.torch, top.variant.name

    ceiling = best_at(ordered[-1])  # the newest torch any known driver reaches
    if ceiling is None:
        return None, None
    release = matrix.release(ceiling[1])
    assert release is not None
    # every CUDA build of that torch needs its driver floor met: at a floor meeting none of them
    # it cannot be the best, so once the lowest fitting floor is known such floors are skipped
    needs = {v.cuda_version for v, _ in _variants_for(release, host.platform) if v.cuda_version}
    lowest: tuple[str, str, str] | None = None
    for floor in ordered:
        if lowest is not None and floor != ordered[-1]:
            trial = trial_host(floor)
            if not any(check_driver(trial, matrix, cuda).ok for cuda in needs):
                continue
        found = best_at(floor) if floor != ordered[-1] else ceiling
        if found is None:
            continue
        if lowest is None:
            lowest = found
        if found[1] == ceiling[1]:
            return lowest, found
    return lowest, ceiling
