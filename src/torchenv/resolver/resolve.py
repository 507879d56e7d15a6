"""``resolve(request, host, matrix) -> Plan``: the pure heart of torchenv.

Candidates are (release, variant) pairs. Each is checked against the rules of DESIGN.md in order
(platform and Python, glibc, driver, GPU architecture, user constraints); survivors are ranked:

1. on a host with a GPU, every GPU build above every CPU build;
2. newest torch first;
3. within a release: the PyPI build when fully compatible, then the newest fully compatible
   variant, then variants that work only with warnings (minor-version compatibility,
   unconfirmed arch lists), closest CUDA to the driver first.

CPU is never chosen silently on an NVIDIA or AMD host: when no GPU build fits, ``Unsatisfiable``
(exit 3) carries every rejection and the nearest fixes.
"""

from __future__ import annotations

from typing import Any, Optional

from torchenv._record import record, replace
from torchenv.detection.profile import HostProfile
from torchenv.errors import Unsatisfiable
from torchenv.installers.commands import index_url_for
from torchenv.matrix.model import Matrix, Release, Variant, cuda_version_of, parse_version_tuple
from torchenv.resolver.plan import Alternative, Plan, Rejection
from torchenv.resolver.request import Request, torch_specifier
from torchenv.resolver.rules import (
    arch_range,
    check_driver,
    check_gpu_arch,
    driver_floors,
    ptx_only_gpus,
)

__all__ = ["Candidate", "NoMatch", "evaluate", "resolve"]


@record
class Candidate:
    release: Release
    variant: Variant
    from_pypi: bool
    gpu_build: bool
    full: bool
    warnings: tuple[str, ...]
    driver_full: bool = True
    arch_known: bool = True
    ptx_only: bool = False


class NoMatch(Unsatisfiable):
    """Unsatisfiable with the evidence: every rejection and the suggested fixes."""

    def __init__(
        self,
        message: str,
        hint: str | None,
        rejected: tuple[Rejection, ...],
        fixes: tuple[str, ...],
        matrix_version: str,
        python: str,
        platform: str,
    ) -> None:
        super().__init__(message, hint)
        self.rejected = rejected
        self.fixes = fixes
        self.matrix_version = matrix_version
        self.python = python
        self.platform = platform

    def to_json(self) -> dict[str, Any]:
        return {
            "torch": None,
            "torchvision": None,
            "torchaudio": None,
            "variant": None,
            "index_url": None,
            "python": self.python,
            "platform": self.platform,
            "commands": {},
            "warnings": [],
            "error": self.message,
            "fixes": list(self.fixes),
            "rejected": [r.to_json() for r in self.rejected],
            "matrix_version": self.matrix_version,
        }


def _gpu_kinds(host: HostProfile) -> set[str]:
    kinds = set()
    if host.nvidia is not None and (host.nvidia.gpus or host.nvidia.driver_version):
        kinds.add("cuda")
    if host.rocm is not None and host.rocm.gfx_targets:
        kinds.add("rocm")
    if host.xpu is not None and host.xpu.devices and host.xpu.level_zero:
        # an Intel display device without the Level Zero runtime is usually an iGPU that the
        # xpu build cannot use; it must not steer the choice
        kinds.add("xpu")
    return kinds


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
            listed = Variant(
                name=default,
                platforms=(platform,),
                status="verified" if default == "cpu" else "unverified",
                sources=release.sources,
            )
        out.append((listed, True))
    return out


def evaluate(
    request: Request, host: HostProfile, matrix: Matrix, *, only_kind: str | None = None
) -> tuple[list[Candidate], list[Rejection]]:
    """Every candidate checked against every rule: (compatible, rejected).

    ``only_kind`` (``"cuda"``, ...) limits the candidates to one accelerator family.
    """
    spec: Any = torch_specifier(request.torch)
    kinds = _gpu_kinds(host)
    platform = host.platform
    py = host.python.version
    ok: list[Candidate] = []
    rejected: list[Rejection] = []

    def reject(rel: Release, name: str, reason: str, category: str) -> None:
        rejected.append(Rejection(rel.torch, name, reason, category))

    for rel in matrix.releases:
        if spec is not None and not spec.contains(rel.torch, prereleases=True):
            continue
        variants = _variants_for(rel, platform)
        if not variants:
            reject(rel, "*", f"no wheels for {platform}", "platform")
            continue
        for variant, from_pypi in variants:
            name = variant.name
            kind = variant.kind
            if request.explicit_variant and name != request.variant:
                continue
            if only_kind is not None and kind != only_kind:
                continue
            if request.cuda is not None and variant.cuda_version != request.cuda:
                continue
            tags = rel.python_tags(platform, None if from_pypi else variant)
            if py not in tags:
                have = ", ".join(tags) if tags else "none"
                reject(rel, name, f"no wheel for Python {py} on {platform} (has {have})", "python")
                continue
            floor = rel.manylinux.get(platform)
            if platform.startswith("linux") and floor:
                if host.musl and not host.glibc:
                    reject(
                        rel,
                        name,
                        f"musl libc {host.musl}: the wheels need glibc ≥ {floor}",
                        "glibc",
                    )
                    continue
                if host.glibc and parse_version_tuple(host.glibc) < parse_version_tuple(floor):
                    reject(
                        rel,
                        name,
                        f"glibc {host.glibc} is older than the wheels' manylinux floor {floor}",
                        "glibc",
                    )
                    continue
            warnings: list[str] = []
            full = True
            driver_full = True
            arch_known = True
            ptx_only = False
            gpu_build = kind != "cpu" or platform == "macos-arm64"
            if kind == "cuda":
                cuda = variant.cuda_version
                assert cuda is not None
                if "cuda" not in kinds:
                    if request.explicit_variant:
                        warnings.append(
                            f"no NVIDIA GPU found: {name} was asked for explicitly "
                            "and will run on the CPU here"
                        )
                        full = False
                    else:
                        reject(rel, name, "no NVIDIA GPU or driver", "no-gpu")
                        continue
                else:
                    dv = check_driver(host, matrix, cuda)
                    if not dv.ok:
                        reject(rel, name, dv.reason or "driver too old", "driver")
                        continue
                    warnings.extend(dv.warnings)
                    full = full and dv.full
                    driver_full = dv.full
                    arch = variant.arch_list_for(platform)
                    too_new = _beyond_toolkit(host, matrix, cuda) if arch is None else None
                    if too_new:
                        reject(rel, name, too_new, "arch")
                        continue
                    if arch is None:
                        warnings.append(
                            f"the arch list of torch {rel.torch} {name} on "
                            f"{platform} is not confirmed; GPU support unchecked"
                        )
                        full = False
                        arch_known = False
                    else:
                        why = check_gpu_arch(host, arch, jit_ok=dv.full)
                        if why:
                            reject(rel, name, why, "arch")
                            continue
                        jit = ptx_only_gpus(host, arch)
                        if jit:
                            ptx_only = True
                            full = False
                            warnings.append(
                                f"{', '.join(jit)} not compiled for in {name}: runs "
                                "only by JIT-compiling PTX (slow first start, some "
                                "kernels may be missing)"
                            )
                    if host.nvidia and any(
                        g.compute_capability is None for g in host.nvidia.visible_gpus()
                    ):
                        warnings.append(
                            "the compute capability of some GPU is unknown; "
                            "architecture not checked for it"
                        )
            elif kind == "rocm":
                if "rocm" not in kinds:
                    if request.explicit_variant:
                        warnings.append(f"no AMD GPU found: {name} was asked for explicitly")
                        full = False
                    else:
                        reject(rel, name, "no AMD ROCm GPU", "no-gpu")
                        continue
                else:
                    assert host.rocm is not None
                    targets = matrix.rocm_targets(name, rel.torch)
                    if targets is None:
                        warnings.append(
                            f"the gfx targets of {name} are not known; GPU support unchecked"
                        )
                        full = False
                    else:
                        missing = [g for g in host.rocm.gfx_targets if g not in targets.gfx]
                        if missing:
                            reject(
                                rel,
                                name,
                                f"GPU target {missing[0]} not in {name}'s list "
                                f"({', '.join(targets.gfx)})",
                                "arch",
                            )
                            continue
            elif kind == "xpu" and "xpu" not in kinds:
                if not request.explicit_variant:
                    reject(rel, name, "no Intel GPU with the Level Zero runtime", "no-gpu")
                    continue
                warnings.append("no Intel GPU found: xpu was asked for explicitly")
                full = False
            arch_gap = kind == "cuda" and variant.arch_list_for(platform) is None
            if variant.status != "verified" and not from_pypi and not arch_gap:
                warnings.append(
                    f"that torch {rel.torch} has a {name} build on the PyTorch index is not "
                    "confirmed by a primary source (see 'torchenv matrix show --release "
                    f"{rel.torch}')"
                )
                full = False
            ok.append(
                Candidate(
                    rel,
                    variant,
                    from_pypi,
                    gpu_build,
                    full,
                    tuple(warnings),
                    driver_full,
                    arch_known,
                    ptx_only,
                )
            )
    return ok, rejected


def _beyond_toolkit(host: HostProfile, matrix: Matrix, cuda: str) -> str | None:
    """A reason when a visible GPU is newer than anything CUDA ``cuda`` can compile for.

    Used only where the variant's own arch list is unknown: whatever it holds, it cannot hold
    code for an architecture its toolkit does not know (and PTX never runs on an older GPU).
    """
    floor = matrix.toolkit_floor(cuda)
    if floor is None or host.nvidia is None:
        return None
    for gpu in host.nvidia.visible_gpus():
        cc = gpu.compute_capability
        if not cc:
            continue
        have = parse_version_tuple(cc.rstrip("af"))
        sm = "sm_" + cc.rstrip("af").replace(".", "")
        if floor.newest_arch and have > parse_version_tuple(floor.newest_arch.rstrip("af")):
            return (
                f"GPU {gpu.index} ({sm}) is newer than anything CUDA {cuda} compiles for "
                f"(newest sm_{floor.newest_arch.replace('.', '')})"
            )
        if floor.oldest_arch and have < parse_version_tuple(floor.oldest_arch):
            return (
                f"GPU {gpu.index} ({sm}) is older than anything CUDA {cuda} compiles for "
                f"(oldest sm_{floor.oldest_arch.replace('.', '')})"
            )
    return None


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


def _rank_key(c: Candidate, strict_gpu: bool, prefer_gpu: bool) -> tuple[Any, ...]:
    """Sort key (smaller first): GPU builds, newest torch, then the tiers of DESIGN.md.

    Within a release: the PyPI build when fully compatible; other fully compatible variants,
    newest first; then variants that work with warnings: unconfirmed arch list (PyPI's first,
    then newest), a GPU reached only through PTX JIT, and last minor-version-compatibility
    drivers (the CUDA closest to the driver first).
    """
    version = _variant_version(c.variant.name)
    newest_first = tuple(-x for x in version)
    sub: tuple[int, ...]
    if c.full and c.from_pypi:
        tier, sub = 0, (0,)
    elif c.full:
        tier, sub = 1, newest_first
    elif c.driver_full and not c.arch_known:
        tier, sub = 2, (0 if c.from_pypi else 1, *newest_first)
    elif c.driver_full and c.ptx_only:
        tier, sub = 3, newest_first
    elif c.driver_full:
        tier, sub = 2, (0 if c.from_pypi else 1, *newest_first)  # other warnings (no GPU seen)
    else:
        tier, sub = 4, version
    gpu_first = 0 if (c.gpu_build or not (strict_gpu or prefer_gpu)) else 1
    return (gpu_first, tuple(-x for x in c.release.key), tier, sub, c.variant.name)


def resolve(request: Request, host: HostProfile, matrix: Matrix) -> Plan:
    """The one build to install on ``host``; raises :class:`NoMatch` (exit 3) when none fits."""
    compatible, rejected = evaluate(request, host, matrix)
    kinds = _gpu_kinds(host)
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
        raise _no_match(request, host, matrix, rejected)
    compatible.sort(key=lambda c: _rank_key(c, strict_gpu, prefer_gpu))
    best = compatible[0]
    rel, variant = best.release, best.variant
    warnings = list(best.warnings)
    reasons = _reasons(best, host, request)
    if "xpu" in kinds and variant.kind == "cpu" and not request.explicit_variant:
        warnings.append("an Intel GPU is present but no xpu build fits; using the CPU build")
    if host.nvidia is not None and host.nvidia.visible == () and variant.kind == "cuda":
        warnings.append(
            "CUDA_VISIBLE_DEVICES hides every GPU: torch will see none until it "
            "is unset or lists a GPU"
        )
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
    confirmed = None
    if not best.full:
        # DESIGN ranks the newest torch first even when it only works with warnings; name the
        # newest build that fits without any, so the choice is the user's
        fit = next((c for c in compatible if c.full and c.gpu_build == best.gpu_build), None)
        if fit is not None:
            confirmed = {"torch": fit.release.torch, "variant": fit.variant.name}
    alternatives = tuple(
        Alternative(c.release.torch, c.variant.name, "full" if c.full else "compat", c.warnings)
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
        extras={"confirmed_alternative": confirmed} if confirmed else {},
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
        if arch and gpus and c.ptx_only:
            out.append(f"its arch list {arch_range(arch)} reaches every visible GPU, some only "
                       "through PTX JIT")
        elif arch and gpus:
            out.append(
                f"every visible GPU ({', '.join(g.compute_capability or '?' for g in gpus)}"
                f") is in its arch list {arch_range(arch)}"
            )
    elif v.kind == "rocm" and host.rocm is not None:
        out.append(f"{v.name} is built for {', '.join(host.rocm.gfx_targets)}")
    elif v.kind == "cpu":
        if host.platform == "macos-arm64":
            out.append("the macOS arm64 build uses the GPU through MPS")
        elif not _gpu_kinds(host):
            out.append("no NVIDIA, AMD or Intel GPU was found, so the CPU build is the right one")
    out.append(
        f"torch {c.release.torch} is the newest release with a wheel for Python "
        f"{host.python.version} on {host.platform} that fits"
        if not request.torch
        else f"torch {c.release.torch} is the newest release matching {request.torch!r} that fits"
    )
    if c.from_pypi:
        out.append(f"PyPI's own {host.platform} build is {v.name}, so no extra index is needed")
    return out


def _no_match(
    request: Request, host: HostProfile, matrix: Matrix, rejected: list[Rejection]
) -> NoMatch:
    fixes: list[str] = []
    kinds = _gpu_kinds(host)
    nv = host.nvidia
    if nv is not None and nv.driver_version is None and nv.cuda_driver_version is None:
        fixes.append("no NVIDIA driver version is known: pass --driver VERSION (as nvidia-smi "
                     "prints it), or install the NVIDIA driver")
    elif any(r.category == "driver" for r in rejected) and nv is not None:
        lowest, newest = _driver_upgrades(request, host, matrix)
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
    )


def _driver_upgrades(
    request: Request, host: HostProfile, matrix: Matrix
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

    def best_at(floor: str) -> tuple[str, str, str] | None:
        assert host.nvidia is not None
        trial = host.with_changes(
            nvidia=replace(host.nvidia, driver_version=floor, cuda_driver_version=None)
        )
        fits, _ = evaluate(request, trial, matrix, only_kind="cuda")
        if not fits:
            return None
        top = min(fits, key=lambda c: _rank_key(c, True, True))
        return floor, top.release.torch, top.variant.name

    ceiling = best_at(ordered[-1])  # the newest torch any known driver reaches
    if ceiling is None:
        return None, None
    lowest: tuple[str, str, str] | None = None
    for floor in ordered:
        found = best_at(floor) if floor != ordered[-1] else ceiling
        if found is None:
            continue
        if lowest is None:
            lowest = found
        if found[1] == ceiling[1]:
            return lowest, found
    return lowest, ceiling
