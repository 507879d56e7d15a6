"""Target overrides: flags and ``TORCHENV_*`` variables that replace detected facts.

A supplied value both replaces the detected one and stops its probe from running: asking about
another machine must not depend on (or wait for) this one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

from torchenv.errors import BadInput
from torchenv.values import (
    PLATFORMS,
    ComputeCapability,
    CudaVersion,
    DriverVersion,
    InvalidValue,
    Platform,
)

if TYPE_CHECKING:
    from typing import Optional

__all__ = [
    "Overrides",
    "normalize_glibc",
    "normalize_python",
    "normalize_rocm_arch",
    "read_compute_capability",
    "read_cuda_driver_version",
    "read_driver_version",
    "read_platform",
]

# Each value is read with an ASCII grammar: a fullwidth "８.６" is not the compute capability 8.6.
_PYTHON = re.compile(r"(?:cp|py)?3\.?([0-9]{1,2})(t?)")
_PYTHON_2 = re.compile(r"[12]\.[0-9]+")
_GLIBC = re.compile(r"2\.[0-9]{1,2}")
_GFX = re.compile(r"gfx[0-9a-f]{3,4}")


def _not_ascii(value: str) -> str:
    """A note for an error message when ``value`` holds characters outside ASCII (a fullwidth
    ``８`` looks like the digit 8, but is not one)."""
    if value.isascii():
        return ""
    return " (it holds characters outside ASCII, such as fullwidth digits; type it in ASCII)"


# The readers below turn the text of a flag, a variable or a host file into a value of
# torchenv.values. ``field`` names the fact in the library's terms (the command line says which
# flag or variable gave it); ``origin`` is for text read from a file, which the message names
# (``node.json: nvidia.driver_version``).


def _said(origin: Optional[str], problem: str) -> str:
    return f"{origin}: {problem}" if origin else problem


def read_driver_version(value: str, *, origin: Optional[str] = None,
                        field: str = "driver") -> DriverVersion:
    """``"550.54.15"``; raises BadInput for anything that is not a driver version."""
    try:
        return DriverVersion(value)
    except InvalidValue as exc:
        raise BadInput(_said(origin, f"{exc.message}{_not_ascii(value)}"),
                       hint="give it as nvidia-smi prints it, e.g. 550.54.15 or 580.65",
                       field=field, value=value) from None


def read_cuda_driver_version(value: str, *, origin: Optional[str] = "cuda_driver_version",
                             field: str = "host") -> CudaVersion:
    """The newest CUDA a driver supports, as NVML reports it: ``"12.8"``, ``"13.0"``."""
    try:
        return CudaVersion(value)
    except InvalidValue as exc:
        raise BadInput(_said(origin, f"{exc.message}{_not_ascii(value)}"),
                       hint="give it as nvidia-smi prints it, e.g. 12.8",
                       field=field, value=value) from None


def read_compute_capability(value: str, *, origin: Optional[str] = None,
                            field: str = "gpus") -> ComputeCapability:
    """``"8.6"``, ``"sm_86"``, ``"86"`` -> 8.6; ``"sm_90a"`` -> 9.0a."""
    try:
        return ComputeCapability(value)
    except InvalidValue as exc:
        if "any GPU has" in exc.message:
            hint = ("NVIDIA GPUs have compute capabilities 1.0 to 12.x; give it as major.minor "
                    "(8.6) or sm_86")
        else:
            hint = ("give it as major.minor (8.6) or sm_86; see 'nvidia-smi "
                    "--query-gpu=compute_cap --format=csv'")
        raise BadInput(_said(origin, f"{exc.message}{_not_ascii(value)}"), hint=hint,
                       field=field, value=value) from None


def read_platform(value: str, *, origin: Optional[str] = None,
                  field: str = "platform") -> Platform:
    try:
        return Platform(value)
    except InvalidValue as exc:
        raise BadInput(_said(origin, exc.message), hint="use one of " + ", ".join(PLATFORMS),
                       field=field, value=value) from None


def normalize_python(value: str, *, origin: Optional[str] = None,
                     field: str = "python") -> str:
    """``"3.12"``, ``"cp312"``, ``"3.13t"`` -> ``"3.12"``/``"3.13t"``."""
    m = _PYTHON.fullmatch(value.strip().lower())
    if not m and _PYTHON_2.match(value.strip()):
        raise BadInput(_said(origin, f"Python {value.strip()} has no torch wheels"),
                       hint="torch needs Python 3; use X.Y, e.g. 3.12", field=field, value=value)
    if not m:
        raise BadInput(_said(origin, f"{value!r} is not a Python version{_not_ascii(value)}"),
                       hint="use X.Y, e.g. 3.12, or 3.13t for the free-threaded build",
                       field=field, value=value)
    return f"3.{int(m.group(1))}{m.group(2)}"


def normalize_glibc(value: str, *, origin: Optional[str] = None, field: str = "glibc") -> str:
    text = value.strip()
    if not _GLIBC.fullmatch(text):
        raise BadInput(_said(origin, f"{value!r} is not a glibc version{_not_ascii(value)}"),
                       hint="give it as 'ldd --version' prints it, e.g. 2.17 or 2.35",
                       field=field, value=value)
    return text


def normalize_rocm_arch(value: str, *, origin: Optional[str] = None,
                        field: str = "rocm_archs") -> str:
    text = value.strip().lower().split(":")[0]
    if not _GFX.fullmatch(text):
        raise BadInput(_said(origin, f"{value!r} is not an AMD GPU target{_not_ascii(value)}"),
                       hint="give it as rocminfo prints it, e.g. gfx90a or gfx1100",
                       field=field, value=value)
    return text


class Overrides(NamedTuple):
    """Values that replace detection. ``gpus=()`` means "no NVIDIA GPU"; None means detect."""

    driver: Optional[DriverVersion] = None
    gpus: Optional[tuple[ComputeCapability, ...]] = None
    rocm_archs: Optional[tuple[str, ...]] = None
    platform: Optional[Platform] = None
    python: Optional[str] = None
    glibc: Optional[str] = None
    no_gpu: bool = False

    @property
    def any(self) -> bool:
        return any(
            v not in (None, False)
            for v in (self.driver, self.gpus, self.rocm_archs, self.platform, self.python,
                      self.glibc, self.no_gpu)
        )

    @property
    def nvidia_given(self) -> bool:
        """True when the NVIDIA facts are fully supplied, so no NVIDIA probe needs to run.

        One of driver and GPUs alone is merged with what the probes find for the other.
        """
        return self.no_gpu or (self.driver is not None and self.gpus is not None)

    @classmethod
    def from_sources(
        cls,
        *,
        driver: str | None = None,
        gpus: Sequence[str] | None = None,
        rocm_archs: Sequence[str] | None = None,
        platform: str | None = None,
        python: str | None = None,
        glibc: str | None = None,
        no_gpu: bool = False,
    ) -> Overrides:
        """The overrides for these values as given (None: not given; each GPU entry may be a
        comma-separated list); every value read and validated (BadInput naming its field,
        exit 2). ``no_gpu`` means no accelerator: a driver or GPUs given beside it are read
        (a malformed one is bad input wherever it is) and then left out.

        Which of a flag and an environment variable gives a value is the caller's to decide
        (the command line's ``overrides_from_args``); this reads what it decided.
        """
        gpu_list = [part.strip() for g in gpus for part in g.split(",")] if gpus is not None \
            else None
        if gpu_list is not None and "" in gpu_list:
            raise BadInput(f"{', '.join(map(repr, gpus or ()))} has an empty entry",
                           hint="give compute capabilities, e.g. 8.6,9.0",
                           field="gpus", value=",".join(gpus or ()))
        driver_version = read_driver_version(driver) if driver else None
        capabilities = (tuple(read_compute_capability(g) for g in gpu_list)
                        if gpu_list is not None else None)
        if no_gpu:
            driver_version, capabilities = None, ()
        return cls(
            driver=driver_version,
            gpus=capabilities,
            rocm_archs=tuple(normalize_rocm_arch(a) for a in rocm_archs) if rocm_archs else None,
            platform=read_platform(platform) if platform else None,
            python=normalize_python(python) if python else None,
            glibc=normalize_glibc(glibc) if glibc else None,
            no_gpu=no_gpu,
        )
