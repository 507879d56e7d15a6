"""The compatibility rules, one pure function per rule (see DESIGN.md, "The resolution rules").

Each check returns None when the candidate passes, a ``Fail`` with a one-line reason when it does
not, and may add warnings (``Verdict``) when it passes only at the minor-version-compatibility
level or with facts that could not be confirmed.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from torchenv._record import field, record
from torchenv.detection.profile import Gpu, HostProfile
from torchenv.matrix.inference import toolkit_excludes
from torchenv.matrix.model import Matrix, Release, Variant, arch_parts, parse_version_tuple

EVIDENCE_ORDER = {"confirmed": 0, "inferred": 1, "unknown": 2}
"""Weakest wins when several GPUs or entries decide one verdict."""

__all__ = [
    "EVIDENCE_ORDER",
    "ArchEntry",
    "ArchVerdict",
    "DriverVerdict",
    "arch_range",
    "check_cuda_arch",
    "check_driver",
    "check_glibc",
    "check_gpu_arch",
    "check_python",
    "check_rocm",
    "driver_floors",
    "parse_arch",
    "ptx_only_gpus",
    "runs_on",
]


@record
class ArchEntry:
    """One compiled target: ``8.6`` (SASS), ``12.0+PTX`` (SASS and PTX), ``9.0a`` (exact arch)."""

    major: int
    minor: int
    suffix: str  # "", "a" (exactly this arch) or "f" (family: same major, minor >= this)
    ptx: bool

    @property
    def sm(self) -> str:
        return f"sm_{self.major}{self.minor}{self.suffix}"


@functools.lru_cache(maxsize=1024)
def parse_arch(text: str) -> ArchEntry:
    parts = arch_parts(text)
    if parts is None:
        raise ValueError(f"{text!r} is not a compute capability")
    return ArchEntry(*parts)


@functools.lru_cache(maxsize=1024)
def _cc(text: str) -> tuple[int, int]:
    major, minor = text.rstrip("af").split(".")
    return int(major), int(minor)


def runs_on(entry: ArchEntry, cc: str, *, jit_ok: bool) -> bool:
    """Can code compiled for ``entry`` run on a device of compute capability ``cc``?

    SASS runs on the same major with an equal or higher minor; ``a`` targets only on exactly that
    arch; PTX on any device at or above it, but only through the driver's JIT (``jit_ok``).
    """
    major, minor = _cc(cc)
    if entry.suffix == "a":
        if (major, minor) == (entry.major, entry.minor):
            return True
    elif major == entry.major and minor >= entry.minor:
        return True
    return entry.ptx and jit_ok and (major, minor) >= (entry.major, entry.minor)


def ptx_only_gpus(host: HostProfile, arch_list: Sequence[str]) -> list[str]:
    """GPUs the list covers only through PTX, no SASS: ``["GPU 0 (sm_120)"]``."""
    if host.nvidia is None:
        return []
    entries = [parse_arch(a) for a in arch_list]
    out = []
    for gpu in host.nvidia.visible_gpus():
        cc = gpu.compute_capability
        if cc and not any(runs_on(e, cc, jit_ok=False) for e in entries):
            out.append(f"GPU {gpu.index} (sm_{cc.replace('.', '')})")
    return out


def arch_range(arch_list: Sequence[str]) -> str:
    """``7.5–12.0+PTX`` style summary for messages."""
    if not arch_list:
        return "(empty)"
    return arch_list[0] if len(arch_list) == 1 else f"{arch_list[0]}–{arch_list[-1]}"


def check_gpu_arch(host: HostProfile, arch_list: Sequence[str], *, jit_ok: bool) -> str | None:
    """The first visible GPU the arch list cannot run on, as a reason; None when all can."""
    if host.nvidia is None:
        return None
    entries = [parse_arch(a) for a in arch_list]
    for gpu in host.nvidia.visible_gpus():
        cc = gpu.compute_capability
        if cc is None:
            continue
        if any(runs_on(e, cc, jit_ok=jit_ok) for e in entries):
            continue
        name = f", {gpu.name}" if gpu.name else ""
        sm = "sm_" + cc.replace(".", "")
        ptx_hint = ""
        if not jit_ok and any(e.ptx and _cc(cc) >= (e.major, e.minor) for e in entries):
            ptx_hint = " (its PTX needs a driver at the toolkit level to JIT)"
        return f"GPU {gpu.index} ({sm}{name}) not in arch list {arch_range(arch_list)}{ptx_hint}"
    return None


@record
class DriverVerdict:
    ok: bool
    full: bool
    reason: str | None = None
    warnings: tuple[str, ...] = field(default_factory=tuple)
    needed: str | None = None  # the driver version that would make this variant fully work


def driver_floors(matrix: Matrix, cuda: str, *, windows: bool) -> tuple[str | None, str | None]:
    """(toolkit floor, minor-version-compatibility floor) for CUDA ``cuda`` on Linux or Windows."""
    tk = matrix.toolkit_floor(cuda)
    major = int(cuda.split(".")[0])
    cf = matrix.compat_floor(major)
    toolkit = (tk.windows if windows else tk.linux) if tk else None
    compat = (cf.windows if windows else cf.linux) if cf else None
    return toolkit, compat


def _ge(a: str, b: str) -> bool:
    return parse_version_tuple(a) >= parse_version_tuple(b)


def check_driver(host: HostProfile, matrix: Matrix, cuda: str) -> DriverVerdict:
    """Rule 2: the driver against the toolkit and minor-version-compatibility floors of ``cuda``."""
    nv = host.nvidia
    if nv is None or (nv.driver_version is None and nv.cuda_driver_version is None):
        return DriverVerdict(False, False, "no NVIDIA driver found")
    windows = host.platform == "win-amd64" or host.wsl
    toolkit, compat = driver_floors(matrix, cuda, windows=windows)
    want_major, want_minor = (int(x) for x in cuda.split("."))
    if nv.cuda_driver_version:
        # the CUDA version the driver reports is the authority when present
        have_major, have_minor = (int(x) for x in nv.cuda_driver_version.split(".")[:2])
        if (have_major, have_minor) >= (want_major, want_minor):
            return DriverVerdict(True, True)
        if have_major == want_major:
            if compat and nv.driver_version and not _ge(nv.driver_version, compat):
                return DriverVerdict(
                    False,
                    False,
                    f"driver {nv.driver_version} is below the CUDA {want_major}.x "
                    f"compatibility floor {compat}",
                    needed=toolkit or compat,
                )
            return DriverVerdict(
                True,
                False,
                warnings=(
                    _compat_warning(
                        nv.driver_version or f"for CUDA {nv.cuda_driver_version}", cuda, toolkit
                    ),
                ),
                needed=toolkit,
            )
        return DriverVerdict(
            False,
            False,
            f"driver supports CUDA {nv.cuda_driver_version}, CUDA {cuda} needs "
            + (f"driver ≥ {compat}" if compat else f"a CUDA {want_major}.x driver"),
            needed=compat or toolkit,
        )
    driver = nv.driver_version
    assert driver is not None
    if toolkit and _ge(driver, toolkit):
        return DriverVerdict(True, True)
    if compat is None:
        return DriverVerdict(False, False, f"no known driver floor for CUDA {cuda}")
    if not _ge(driver, compat):
        return DriverVerdict(
            False,
            False,
            f"driver {driver} is below the CUDA {want_major}.x compatibility floor {compat}",
            needed=toolkit or compat,
        )
    if toolkit is None:
        return DriverVerdict(
            True,
            False,
            warnings=(
                f"the toolkit driver floor of CUDA {cuda} is not known; driver {driver} meets the "
                f"CUDA {want_major}.x compatibility floor {compat}",
            ),
            needed=None,
        )
    return DriverVerdict(
        True, False, warnings=(_compat_warning(driver, cuda, toolkit),), needed=toolkit
    )


def _compat_warning(driver: str, cuda: str, toolkit: str | None) -> str:
    floor = f" (≥ {toolkit})" if toolkit else ""
    return (
        f"driver {driver} runs CUDA {cuda} only through minor-version compatibility: no PTX "
        f"JIT and some features need the toolkit-level driver{floor}"
    )


def check_python(release: Release, variant: Variant, from_pypi: bool, platform: str,
                 python: str) -> str | None:
    """Rule 1a: a wheel for the interpreter's tag on this platform (the index's own tags when
    the variant lists them)."""
    tags = release.python_tags(platform, None if from_pypi else variant)
    if python in tags:
        return None
    have = ", ".join(tags) if tags else "none"
    return f"no wheel for Python {python} on {platform} (has {have})"


def check_glibc(host: HostProfile, release: Release) -> str | None:
    """Rule 1b: on Linux the host's glibc meets the wheels' manylinux floor; musl never does."""
    floor = release.manylinux.get(host.platform)
    if not host.platform.startswith("linux") or not floor:
        return None
    if host.musl and not host.glibc:
        return f"musl libc {host.musl}: the wheels need glibc ≥ {floor}"
    if host.glibc and parse_version_tuple(host.glibc) < parse_version_tuple(floor):
        return f"glibc {host.glibc} is older than the wheels' manylinux floor {floor}"
    return None


@record
class ArchVerdict:
    """Rule 3 for one CUDA candidate: does every visible GPU run it, and how do we know.

    ``evidence`` is the weakest class over the visible GPUs (``n/a`` when no GPU is visible);
    ``rule`` names the inference rule behind an ``inferred`` verdict or a rejection by rule.
    """

    reason: str | None
    evidence: str = "n/a"
    ptx_only: bool = False
    warnings: tuple[str, ...] = ()
    rule: str | None = None
    sources: tuple[str, ...] = ()


def _weakest(classes: Sequence[str]) -> str:
    return max(classes, key=lambda c: EVIDENCE_ORDER.get(c, 2)) if classes else "n/a"


def _gpu_label(index: int, cc: str, name: str | None) -> str:
    return f"GPU {index} (sm_{cc.replace('.', '')}{', ' + name if name else ''})"


_LABELS: list[tuple[object, str]] = []  # (the NVIDIA facts, their GPUs' labels): the last host


def _gpu_labels(nvidia: object, known: Sequence[Gpu]) -> str:
    """``GPU 0 (sm_90, NVIDIA H100), ...`` for the GPUs of ``known``, written once per host (a
    resolve asks for it for every release whose arch list is unknown)."""
    if _LABELS and _LABELS[0][0] is nvidia:
        return _LABELS[0][1]
    labels = ", ".join(_gpu_label(g.index, g.compute_capability or "?", g.name) for g in known)
    _LABELS[:] = [(nvidia, labels)]
    return labels


def check_cuda_arch(host: HostProfile, matrix: Matrix, release: Release, variant: Variant,
                    *, jit_ok: bool) -> ArchVerdict:
    """Rule 3 with evidence: every visible GPU against the variant's arch facts on the platform.

    A known list decides by :func:`runs_on`; its verdict is as strong as the SASS (or, for a GPU
    reached only through PTX, the PTX) evidence. An unknown list still rejects a GPU the toolkit
    cannot compile for (rule ``toolkit-bounds``); otherwise the verdict is ``unknown``.
    """
    if host.nvidia is None:
        return ArchVerdict(None)
    gpus = host.nvidia.visible_gpus()
    cuda = variant.cuda_version
    assert cuda is not None
    platform = host.platform
    fact = variant.arch_fact(platform)
    known = [g for g in gpus if g.compute_capability]
    if not known:
        if not gpus:
            return ArchVerdict(None)  # nothing torch would use; nothing to check
        return ArchVerdict(None, "unknown", warnings=(
            "the compute capability of some GPU is unknown; architecture not checked for it",))
    arch = fact.arch_list if fact.sass != "unknown" else None
    if arch is None:
        floor = matrix.toolkit_floor(cuda)
        checked: set[str] = set()
        for g in known:  # the first GPU of each capability in order: it names the reason
            assert g.compute_capability is not None
            if g.compute_capability in checked:
                continue
            checked.add(g.compute_capability)
            why = toolkit_excludes(g.compute_capability, cuda, floor)
            if why:
                sm = "sm_" + g.compute_capability.rstrip("af").replace(".", "")
                return ArchVerdict(f"GPU {g.index} ({sm}) {why}", "inferred",
                                   rule="toolkit-bounds",
                                   sources=floor.sources if floor else ())
        labels = _gpu_labels(host.nvidia, known)
        return ArchVerdict(None, "unknown", warnings=(
            f"the arch list of torch {release.torch} {variant.name} on {platform} is not "
            f"known: it may not run on {labels}",))
    entries = [parse_arch(a) for a in arch]
    classes: list[str] = []
    jit: list[str] = []
    how: dict[str, str] = {}  # per distinct capability: "sass", "jit" or "none"

    def reach(cc: str) -> str:
        if cc not in how:
            how[cc] = ("sass" if any(runs_on(e, cc, jit_ok=False) for e in entries) else
                       "jit" if any(runs_on(e, cc, jit_ok=jit_ok) for e in entries) else "none")
        return how[cc]

    for g in known:
        cc = g.compute_capability
        assert cc is not None
        if reach(cc) == "sass":
            classes.append(fact.sass)
        elif reach(cc) == "jit":
            classes.append(_weakest([fact.sass, fact.ptx]))
            jit.append(f"GPU {g.index} (sm_{cc.replace('.', '')})")
        else:
            why = check_gpu_arch(host, arch, jit_ok=jit_ok)
            if fact.ptx == "unknown":
                why = f"{why} (whether it carries PTX is not known)"
            return ArchVerdict(why, _weakest([fact.sass]), rule=fact.rule,
                               sources=fact.sources)
    warnings: list[str] = []
    if jit:
        warnings.append(f"{', '.join(jit)} not compiled for in {variant.name}: runs only by "
                        "JIT-compiling PTX (slow first start, some kernels may be missing)")
    if len(known) < len(gpus):
        warnings.append("the compute capability of some GPU is unknown; architecture not "
                        "checked for it")
    evidence = _weakest(classes) if len(known) == len(gpus) else "unknown"
    return ArchVerdict(None, evidence, ptx_only=bool(jit), warnings=tuple(warnings),
                       rule=fact.rule, sources=fact.sources)


def check_rocm(host: HostProfile, matrix: Matrix, release: Release,
               variant: Variant) -> ArchVerdict:
    """Rule 3 for ROCm: every gfx target of the host in the variant's list."""
    assert host.rocm is not None
    targets = matrix.rocm_targets(variant.name, release.torch)
    if targets is None:
        return ArchVerdict(None, "unknown", warnings=(
            f"the gfx targets of {variant.name} are not known; GPU support unchecked",))
    missing = [g for g in host.rocm.gfx_targets if g not in targets.gfx]
    if missing:
        return ArchVerdict(
            f"GPU target {missing[0]} not in {variant.name}'s list ({', '.join(targets.gfx)})",
            "confirmed", sources=targets.sources)
    return ArchVerdict(None, "confirmed", sources=targets.sources)
