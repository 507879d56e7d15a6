"""What would make an unsatisfiable request work, and the evidence-backed alternative.

Kept apart from the rules: these functions rank candidates again on changed requests or hosts
(a newer driver, no constraints) to say what the nearest fix is. A fix is data
(:class:`~torchenv.resolver.plan.Fix`): a change of the request names its fields, and the
caller writes it in its own terms (the command line as flags).
"""

from __future__ import annotations

from dataclasses import replace

from torchenv.detection.target import Target
from torchenv.matrix.model import Evidence, Matrix, glibc_sort_key, python_sort_key
from torchenv.resolver.candidate import Candidate, evaluate, offered
from torchenv.resolver.plan import Change, EvidenceAlternative, Fix, NoMatch, Rejection
from torchenv.resolver.rank import rank_key, ranked
from torchenv.resolver.request import Request
from torchenv.resolver.rules import check_driver, driver_floors
from torchenv.values import DriverVersion, TorchVersion, VariantName

__all__ = ["evidence_alternative", "gap_no_match", "gpu_facts_gap", "no_match"]

_CPU = VariantName("cpu")


_CPU_KNOWINGLY = Fix(("or choose the CPU build knowingly: ", {"variant": "cpu"}))


def gpu_facts_gap(target: Target, matrix: Matrix) -> tuple[str, list[Fix]] | None:
    """(reason, fixes) when there is evidence of an NVIDIA GPU whose facts could not be read.

    A failed probe is "unknown", never "absent": without the driver version no CUDA build can be
    chosen, and without a GPU's compute capability no arch list can be checked.
    """
    nv = target.nvidia
    if nv is None or (target.driver is None and target.cuda_driver is None):
        return _driver_gap(target, matrix)
    if nv.source.startswith("override") and not nv.gpus:
        return None  # --driver alone: the GPUs were left out on purpose (evidence is unknown)
    if not nv.gpus and nv.visible is None:
        return (f"the NVIDIA driver {target.driver or ''} answered but the facts "
                "of its GPUs could not be read", [
                    Fix(("pass the GPUs' compute capabilities: ", _gpus(target),
                         " (repeat for each)")),
                    *_or_cpu(target, matrix)])
    unknown = target.capability_unknown
    if unknown:
        names = ", ".join(f"GPU {g.index}" + (f" ({g.name})" if g.name else "")
                          for g in unknown)
        return (f"the compute capability of {names} could not be read and the GPU catalog "
                "does not know it", [
                    Fix(("pass it: ", {"gpus": ("CC",)}, " (e.g. ", {"gpus": ("8.6",)},
                         "; repeat for each GPU)")),
                    *_or_cpu(target, matrix)])
    return None


def _driver_gap(target: Target, matrix: Matrix) -> tuple[str, list[Fix]] | None:
    """The gap when no driver version was read: a GPU the evidence shows, or none at all."""
    nv = target.nvidia
    evidence = target.profile.nvidia_evidence
    if not evidence and nv is None:
        return None
    what = f" ({_hardware_text(target)})" if target.pci_hint is not None else ""
    describe = Fix(("or describe the machine: ", {"driver": "VERSION", **_gpus(target)}))
    if target.profile.container and nv is None and all(e.startswith("PCI ") for e in evidence):
        return (f"an NVIDIA GPU is on the PCI bus{what}, but this container has no "
                "/dev/nvidia* device: the GPU is not passed in", [
                    Fix(("run the container with the GPU (docker run --gpus all …, or the "
                         "NVIDIA Container Toolkit's runtime), then run this again",)),
                    describe, *_or_cpu(target, matrix)])
    seen = evidence[0] if evidence else f"{len(nv.gpus) if nv else 0} GPU(s) listed"
    return (f"an NVIDIA GPU is present{what} but its driver version could not be read "
            f"(evidence: {seen})", [
                Fix(("load or repair the NVIDIA driver (nvidia-smi must answer), then run this "
                     "again",)),
                describe, *_or_cpu(target, matrix)])


def _or_cpu(target: Target, matrix: Matrix) -> list[Fix]:
    """The CPU build as the last way out, when one fits this machine; on musl, where none does,
    what would."""
    if _cpu_fits(Request(), target, matrix):
        return [_CPU_KNOWINGLY]
    if target.musl and not target.glibc:
        return [Fix((f"PyTorch publishes no wheels for musl libc ({target.musl}), CPU builds "
                     "included: run this on a glibc-based Linux (a Debian, Ubuntu or "
                     "RHEL-family host or container image)",))]
    return []


def _gpus(target: Target) -> Change:
    """The GPUs to describe: the catalog's capability of the first NVIDIA device, else ``CC``."""
    hint = target.pci_hint
    cc = hint.capability if hint is not None else None
    return {"gpus": (str(cc) if cc is not None else "CC",)}


def _hardware_text(target: Target) -> str:
    """"PCI 10de:1b80, GeForce GTX 1080 per the GPU catalog, compute capability 6.1" for the
    first NVIDIA device on the PCI bus."""
    hint = target.pci_hint
    assert hint is not None
    if hint.name is None:
        return f"PCI {hint.pci_id} at {hint.address}"
    return (f"PCI {hint.pci_id}, {hint.name} per the GPU catalog, compute capability "
            f"{hint.capability}")


def gap_no_match(target: Target, matrix: Matrix, reason: str, fixes: list[Fix]) -> NoMatch:
    """:class:`NoMatch` for a GPU whose facts could not be read (:func:`gpu_facts_gap`)."""
    return NoMatch(reason, (), tuple(fixes), matrix.matrix_version, target.python,
                   str(target.platform), target.profile.warnings)


def _unconstrained(request: Request) -> Request:
    """``request`` without its torch, variant and CUDA constraints."""
    return Request(with_torchvision=request.with_torchvision,
                   with_torchaudio=request.with_torchaudio, index_base=request.index_base)


def evidence_alternative(request: Request, target: Target,
                         matrix: Matrix) -> EvidenceAlternative | None:
    """The best GPU build whose support for the visible GPUs is confirmed or inferred.

    Looked for without the user's torch, variant and CUDA constraints (they may be what rules
    every evidence-backed build out); None when no build in the matrix has such support.
    """
    fits, _ = evaluate(_unconstrained(request), target, matrix)
    backed = [c for c in fits if c.gpu_build
              and c.arch_evidence in (Evidence.CONFIRMED, Evidence.INFERRED)]
    if not backed:
        return None
    top = min(backed, key=lambda c: rank_key(c, True))
    assert top.arch_evidence is not None
    return EvidenceAlternative(str(top.release.torch), str(top.variant.name),
                               top.arch_evidence.value, top.arch_rule)


def no_match(request: Request, target: Target, matrix: Matrix,
             rejected: list[Rejection]) -> NoMatch:
    """Unsatisfiable, with the nearest fixes first."""
    driver_fixes = _driver_fixes(request, target, matrix, rejected)
    fixes = list(driver_fixes)
    best = None
    if request.torch or request.explicit_variant or request.cuda:
        best = _best_without_constraints(request, target, matrix)
        if best is not None:
            fixes.append(Fix((f"without the constraints, torch {best.release.torch} "
                              f"{best.variant.name} fits this machine",)))
    kinds = target.kinds
    # with only --cuda or --variant narrowing, a build for this GPU exists when one fits
    # without them, and one exists when a newer driver gives one: then "no build was compiled
    # for this GPU" would be false
    if kinds & {"cuda", "rocm"} and any(r.category == "arch" for r in rejected) \
            and (request.torch or best is None) and not driver_fixes:
        first_rel = matrix.releases[-1].torch if matrix.releases else "?"
        last_rel = matrix.releases[0].torch if matrix.releases else "?"
        fixes.append(
            Fix((f"no build of torch {first_rel} – {last_rel} in the matrix was compiled for "
                 "this GPU (see ", {"explain": None}, "); releases older than the matrix may "
                 "have been"))
            if not request.torch
            else Fix(("a release outside ", {"torch": None}, " may support this GPU: drop the "
                      "constraint to see"))
        )
    fixes += _libc_fixes(request, target, matrix, rejected)
    if request.variant != _CPU and kinds and _cpu_fits(request, target, matrix):
        fixes.append(Fix(({"variant": "cpu"}, " installs the CPU build explicitly")))
    fixes += _python_fixes(target, matrix, rejected)
    what = "GPU build" if kinds & {"cuda", "rocm"} and request.variant != _CPU else "build"
    constraint = f" matching {request.torch.text!r}" if request.torch else ""
    driver = f", driver {target.driver}" if target.nvidia and target.driver else ""
    message = (f"no {what} of torch{constraint} fits this machine ({target.platform}, "
               f"Python {target.python}{driver})")
    return NoMatch(message, tuple(rejected), tuple(fixes), matrix.matrix_version,
                   target.python, str(target.platform), target.profile.warnings)


def _cpu_fits(request: Request, target: Target, matrix: Matrix) -> bool:
    """Whether ``--variant cpu`` added to ``request`` resolves on ``host``: a fix is offered
    only when it works (on musl, or with a torch no CPU wheel matches, it does not)."""
    cpu = replace(request, variant=_CPU, cuda=None)
    return bool(evaluate(cpu, target, matrix)[0])


def _libc_fixes(request: Request, target: Target, matrix: Matrix,
                rejected: list[Rejection]) -> list[Fix]:
    """The glibc that would give a build, when the C library is what refused every candidate
    the platform and the interpreter allow: musl (no PyTorch wheel is built for it) or a glibc
    older than every wheel's manylinux floor.

    The floor named is the one of the build a glibc host would get, and the fix is offered
    only when resolving with it (``--glibc FLOOR``, which answers for such a host) succeeds.
    """
    if not any(r.category == "glibc" for r in rejected):
        return []
    floors = {f for r in matrix.releases
              if (f := r.manylinux.get(target.platform)) is not None}
    if not floors:
        return []
    newest = max(floors, key=glibc_sort_key)
    best = ranked(request, target.with_glibc(newest), matrix)[0]
    if not best:
        return []
    floor = best[0].release.manylinux.get(target.platform, newest)
    if not ranked(request, target.with_glibc(floor), matrix)[0]:
        return []  # never: the same build passes at its own floor
    where = (f"PyTorch publishes no wheels for musl libc ({target.musl}): run this on a "
             f"glibc-based Linux with glibc ≥ {floor} (a Debian, Ubuntu or RHEL-family host "
             "or container image, e.g. python:3-slim)" if target.musl and not target.glibc else
             f"this glibc ({target.glibc}) is older than every matching wheel needs: run this "
             f"on a Linux with glibc ≥ {floor}")
    return [Fix((where, "; ", {"glibc": floor}, " shows what it would install "
                 f"(torch {best[0].release.torch} {best[0].variant.name})"))]


def _best_without_constraints(request: Request, target: Target,
                              matrix: Matrix) -> Candidate | None:
    """What resolve() would choose without the constraints; None where it would find nothing."""
    if gpu_facts_gap(target, matrix) is not None:
        return None
    compatible, _ = ranked(_unconstrained(request), target, matrix)
    return compatible[0] if compatible else None


def _driver_fixes(request: Request, target: Target, matrix: Matrix,
                  rejected: list[Rejection]) -> list[Fix]:
    """The driver to install or upgrade to, when the driver is what refused."""
    nv = target.nvidia
    if nv is not None and target.driver is None and target.cuda_driver is None:
        return [Fix(("no NVIDIA driver version is known: pass ", {"driver": "VERSION"},
                     " (as nvidia-smi prints it), or install the NVIDIA driver"))]
    if nv is None or not any(r.category == "driver" for r in rejected):
        return []
    fixes = []
    lowest, newest = _driver_upgrades(request, target, matrix)
    if newest is not None:
        fixes.append(Fix((f"upgrade the NVIDIA driver to ≥ {newest[0]} for torch {newest[1]} "
                          f"{newest[2]}",)))
    if lowest is not None and lowest != newest:
        fixes.append(Fix((f"the smallest driver upgrade that gives a GPU build: ≥ {lowest[0]} "
                          f"(torch {lowest[1]} {lowest[2]})",)))
    return fixes


def _python_fixes(target: Target, matrix: Matrix, rejected: list[Rejection]) -> list[Fix]:
    """The Pythons with wheels, when the interpreter or the platform is all that refused."""
    py_rej = [r for r in rejected if r.category in ("python", "platform")]
    if not py_rej or len(py_rej) != len(rejected):
        return []
    platform = target.platform
    have = sorted({t for r in matrix.releases for t in r.python.get(platform, ())},
                  key=python_sort_key)
    if not have:
        return [Fix((f"no release has wheels for {platform}",))]
    return [Fix((f"no release has a wheel for Python {target.python} on {platform}; "
                 f"Pythons with wheels there: {', '.join(have)}",))]


_Upgrade = tuple[DriverVersion, TorchVersion, VariantName]


def _driver_upgrades(request: Request, target: Target,
                     matrix: Matrix) -> tuple[_Upgrade | None, _Upgrade | None]:
    """(lowest, best): the smallest known driver floor that gives some CUDA build, and the
    smallest one that gives the newest torch reachable by any driver; each (driver, torch,
    variant), found by trying the CUDA builds at the floors above the current driver.
    """
    assert target.nvidia is not None
    cudas = {v.cuda_version for r in matrix.releases for v in r.variants
             if v.cuda_version and target.platform in v.platforms}
    floors = {f for cuda in cudas
              for f in driver_floors(matrix, cuda, windows=target.windows_driver) if f}
    current = target.driver
    above = sorted(f for f in floors if not current or f > current)
    # a newer driver never loses a build: nothing at the highest floor, nothing at any
    ceiling = _best_cuda_build(request, target, matrix, above[-1]) if above else None
    if ceiling is None:
        return None, None
    # the ceiling's torch can be the best only at a floor that runs one of its CUDA builds
    release = matrix.release(ceiling[1])
    assert release is not None
    needs = {v.cuda_version for v, _ in offered(release, target.platform) if v.cuda_version}
    lowest = None
    for floor in above:
        if floor == above[-1]:
            found: _Upgrade | None = ceiling
        elif lowest is not None and not any(
                check_driver(target.with_driver(floor), matrix, cuda).ok for cuda in needs):
            continue
        else:
            found = _best_cuda_build(request, target, matrix, floor)
        if found is None:
            continue
        lowest = lowest or found
        if found[1] == ceiling[1]:
            return lowest, found
    return lowest, ceiling


def _best_cuda_build(request: Request, target: Target, matrix: Matrix,
                     driver: DriverVersion) -> _Upgrade | None:
    """(driver, torch, variant) of the best CUDA build with ``driver`` in place of the host's."""
    fits, _ = evaluate(request, target.with_driver(driver), matrix, only_kind="cuda")
    if not fits:
        return None
    top = min(fits, key=lambda c: rank_key(c, True))
    return driver, top.release.torch, top.variant.name
