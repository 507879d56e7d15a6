"""The compatibility rules, one pure function per rule (see DESIGN.md, "The resolution rules").

Each check returns None when the candidate passes, a ``Fail`` with a one-line reason when it does
not, and may add warnings (``Verdict``) when it passes only at the minor-version-compatibility
level or with facts that could not be confirmed.
"""

from __future__ import annotations

from collections.abc import Sequence

from torchenv._record import field, record
from torchenv.detection.profile import HostProfile
from torchenv.matrix.model import Matrix, parse_version_tuple
from torchenv.matrix.validate import ARCH_RE

__all__ = [
    "ArchEntry",
    "DriverVerdict",
    "arch_range",
    "check_driver",
    "check_gpu_arch",
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


def parse_arch(text: str) -> ArchEntry:
    m = ARCH_RE.match(text)
    if not m:
        raise ValueError(f"{text!r} is not a compute capability")
    return ArchEntry(int(m.group(1)), int(m.group(2)), m.group(3), bool(m.group(4)))


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
