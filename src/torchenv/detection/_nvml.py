"""NVML through nvidia-ml-py (``pynvml``): the first and most precise NVIDIA probe.

``pynvml`` is imported only after ``libnvidia-ml.so.1`` has been seen to load, so a machine without
an NVIDIA driver pays for one failed ``dlopen`` and nothing else. A function that an older driver's
library lacks (``NVMLError_FunctionNotFound``) or that a GPU does not support degrades that one
field; an initialisation error (driver/library version mismatch, driver not loaded) becomes a
warning and detection moves on to the next probe.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, NamedTuple

from torchenv.detection.profile import Gpu
from torchenv.values import ComputeCapability, CudaVersion, DriverVersion, InvalidValue

if TYPE_CHECKING:
    from typing import Any, Optional, TypeVar

    T = TypeVar("T")

__all__ = ["NvmlResult", "cuda_version_from_int", "describe_init_error", "probe_nvml_bounded"]


# NVML return codes (nvml.h) that get their own sentence
NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_NO_PERMISSION = 4
NVML_ERROR_DRIVER_NOT_LOADED = 9
NVML_ERROR_LIBRARY_NOT_FOUND = 12
NVML_ERROR_FUNCTION_NOT_FOUND = 13
NVML_ERROR_GPU_IS_LOST = 15
NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18


def cuda_version_from_int(value: int) -> Optional[CudaVersion]:
    """NVML's CUDA driver version integer as a CUDA version: ``13000`` -> 13.0.

    ``nvmlSystemGetCudaDriverVersion_v2`` returns ``1000 * major + 10 * minor`` (12080 = 12.8).
    Zero or a negative number (no CUDA driver), or one too large to be a version, gives None.
    """
    try:
        return CudaVersion.from_nvml(value)
    except InvalidValue:
        return None


def describe_init_error(code: int, text: str) -> Optional[str]:
    """The warning for an ``nvmlInit`` failure; None when NVML is simply not installed."""
    if code == NVML_ERROR_LIBRARY_NOT_FOUND:
        return None
    if code == NVML_ERROR_LIB_RM_VERSION_MISMATCH:
        return ("NVML: driver/library version mismatch — the loaded NVIDIA kernel module differs "
                "from the installed libnvidia-ml, usually after a driver upgrade without a "
                "reboot; reboot (or reload the nvidia kernel module) before using CUDA")
    if code == NVML_ERROR_DRIVER_NOT_LOADED:
        return ("NVML: the NVIDIA driver is not loaded (libnvidia-ml is installed but the kernel "
                "module is not running, or no GPU was passed into this container)")
    if code == NVML_ERROR_NO_PERMISSION:
        return "NVML: no permission to open the NVIDIA device files (/dev/nvidia*)"
    return f"NVML: initialisation failed ({text or f'error {code}'})"


class NvmlResult(NamedTuple):
    """What NVML said. ``ok`` is False when NVML could not be used at all."""

    ok: bool
    driver_version: Optional[DriverVersion] = None
    cuda_driver_version: Optional[CudaVersion] = None
    gpus: tuple[Gpu, ...] = ()
    warnings: tuple[str, ...] = ()


def _text(value: Any) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


_LIBRARY = "libnvidia-ml.so.1"
_DEFAULT_DIRS = ("/lib", "/usr/lib", "/lib64", "/usr/lib64", "/usr/lib/x86_64-linux-gnu",
                 "/usr/lib/aarch64-linux-gnu", "/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu")


def _library_may_exist(extra_paths: tuple[str, ...]) -> bool:
    """Whether the dynamic loader could find libnvidia-ml.so.1 at all, without loading ctypes.

    Looks where dlopen looks: LD_LIBRARY_PATH, the loader cache (/etc/ld.so.cache names every
    library it knows), the default directories, and the explicit extra paths. A yes only means
    the real load is worth trying.
    """
    dirs = [d for d in os.environ.get("LD_LIBRARY_PATH", "").split(":") if d]
    if any(os.path.exists(os.path.join(d, _LIBRARY)) for d in (*dirs, *_DEFAULT_DIRS)):
        return True
    if any(os.path.exists(p) for p in extra_paths):
        return True
    try:
        with open("/etc/ld.so.cache", "rb") as cache:
            return _LIBRARY.encode() in cache.read()
    except OSError:
        return True  # no cache to ask: let the loader decide


def _library_loads(extra_paths: tuple[str, ...]) -> bool:
    if sys.platform.startswith("linux") and not _library_may_exist(extra_paths):
        return False
    import ctypes

    for name in ("libnvidia-ml.so.1", *extra_paths):
        try:
            ctypes.CDLL(name)
            return True
        except OSError:
            continue
    return False


def nvml_library_setting(environ: Mapping[str, str]) -> Optional[str]:
    """``TORCHENV_NVML_LIBRARY``: ``off`` (NVML is not used), a path (that library, instead of
    the loader's ``libnvidia-ml.so.1``), or unset/empty (the default search)."""
    value = environ.get("TORCHENV_NVML_LIBRARY", "").strip()
    return value or None


def probe_nvml_bounded(*, wsl: bool = False, timeout: float = 5.0,
                       environ: Optional[Mapping[str, str]] = None) -> NvmlResult:
    """Query NVML in a daemon thread, abandoned after ``timeout`` seconds.

    NVML is called in-process, so a wedged driver could block it forever; a thread is the only
    way to put a limit on a foreign call without a child process (which would cost more than
    the whole probe).
    """
    setting = nvml_library_setting(os.environ if environ is None else environ)
    if setting is not None and setting.lower() == "off":
        return NvmlResult(ok=False)
    if setting is not None:
        _use_named_library(setting)
    elif not _library_available(wsl):
        return NvmlResult(ok=False)  # no driver library: nothing can hang, no thread needed
    done, result = call_bounded(_query_nvml, timeout, name="torchenv-nvml")
    if done and result is not None:
        return result
    return NvmlResult(ok=False, warnings=(
        f"NVML did not answer within {timeout:g} s (a hung driver?); falling back to "
        "/proc and nvidia-smi",))


def call_bounded(fn: Callable[[], T], timeout: float, *, name: str
                 ) -> tuple[bool, Optional[T]]:
    """(True, ``fn()``) when it returns within ``timeout`` seconds, else (False, None).

    NVML runs in-process and a wedged driver can block a call for minutes, so the call runs in
    a daemon thread that is abandoned when it does not return in time. What ``fn`` raises is
    raised here, in the caller's thread.
    """
    import threading

    box: list[T] = []
    failure: list[BaseException] = []

    def work() -> None:
        try:
            box.append(fn())
        except BaseException as exc:  # handed to the caller below
            failure.append(exc)

    worker = threading.Thread(target=work, name=name, daemon=True)
    worker.start()
    worker.join(timeout)  # a hung call is left behind in its daemon thread
    if failure:
        raise failure[0]
    return (True, box[0]) if box else (False, None)


_NVML_HINT = ("set TORCHENV_NVML_LIBRARY to the path of libnvidia-ml.so.1, or to 'off' to "
              "leave NVML out, or unset it to let the loader find the driver's own")


def _use_named_library(path: str) -> None:
    """Make nvidia-ml-py use the library ``TORCHENV_NVML_LIBRARY`` names.

    The user named it: a path that is no file, or a file that does not load, is bad input
    (BadInput), not a sign of a driver.
    """
    from torchenv.errors import BadInput

    why = ("does not exist" if not os.path.exists(path) else
           "is not a file" if not os.path.isfile(path) else _open_library(path))
    if why is not None:
        raise BadInput(f"TORCHENV_NVML_LIBRARY: {path} {why}", hint=_NVML_HINT, value=path)


def _load_explicit(path: str) -> Optional[str]:
    """Make nvidia-ml-py use the library at ``path``; a warning when it does not load."""
    why = _open_library(path)
    if why is None:
        return None
    if "nvidia-ml-py" in why:
        return "NVML: the nvidia-ml-py package is missing; reinstall torchenv"
    return f"TORCHENV_NVML_LIBRARY: {path} {why}; NVML not used"


def _open_library(path: str) -> Optional[str]:
    """Make nvidia-ml-py use the library at ``path``; why it cannot, or None."""
    import ctypes

    try:
        import pynvml
    except ImportError:
        return "cannot be used: the nvidia-ml-py package is missing; reinstall torchenv"
    try:
        lib = ctypes.CDLL(os.path.abspath(path))
    except OSError as exc:
        return f"does not load ({exc})"
    if not hasattr(lib, "nvmlInit_v2"):  # every NVML has it; nvidia-ml-py starts with it
        return "is not an NVML library (it has no nvmlInit_v2)"
    pynvml.nvmlLib = lib  # nvidia-ml-py loads its library only while this is None
    return None


def _library_available(wsl: bool) -> bool:
    if sys.platform == "darwin":
        return False
    if sys.platform == "win32":
        return True  # nvidia-ml-py finds nvml.dll itself
    return _library_loads(("/usr/lib/wsl/lib/libnvidia-ml.so.1",) if wsl else ())


def _query_nvml() -> NvmlResult:
    """The NVML queries themselves, once the library is known to load. Every NVML error is
    answered where it can occur; anything else raised here is a bug and surfaces as one."""
    try:
        import pynvml
    except ImportError:
        return NvmlResult(ok=False, warnings=(
            "NVML: the nvidia-ml-py package is missing; reinstall torchenv",))
    return _query(pynvml)


def _query(pynvml: Any) -> NvmlResult:
    error = pynvml.NVMLError
    try:
        pynvml.nvmlInit()
    except error as exc:
        code = int(getattr(exc, "value", -1))
        warning = describe_init_error(code, str(exc))
        return NvmlResult(ok=False, warnings=(warning,) if warning else ())
    missing: list[str] = []
    failed: list[str] = []

    def field(fn_name: str, call: Callable[[], T]) -> Optional[T]:
        try:
            return call()
        except error as exc:
            code = getattr(exc, "value", None)
            if code == NVML_ERROR_FUNCTION_NOT_FOUND:
                if fn_name not in missing:
                    missing.append(fn_name)
            elif code != NVML_ERROR_NOT_SUPPORTED:
                text = f"{fn_name}: {exc}"
                if text not in failed:
                    failed.append(text)
            return None

    try:
        driver = field("nvmlSystemGetDriverVersion",
                       lambda: _text(pynvml.nvmlSystemGetDriverVersion()))
        cuda_int = field("nvmlSystemGetCudaDriverVersion_v2",
                         lambda: int(pynvml.nvmlSystemGetCudaDriverVersion_v2()))
        if cuda_int is None:
            cuda_int = field("nvmlSystemGetCudaDriverVersion",
                             lambda: int(pynvml.nvmlSystemGetCudaDriverVersion()))
            if cuda_int is not None and "nvmlSystemGetCudaDriverVersion_v2" in missing:
                missing.remove("nvmlSystemGetCudaDriverVersion_v2")
        try:
            count = int(pynvml.nvmlDeviceGetCount())
        except error as exc:
            return NvmlResult(ok=False, warnings=(f"NVML: cannot count GPUs ({exc})",))
        gpus = []
        for index in range(count):
            try:
                handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            except error as exc:
                failed.append(f"GPU {index}: {exc}")
                gpus.append(Gpu(index=index))
                continue
            gpus.append(_gpu(pynvml, index, handle, field, missing))
    finally:
        with contextlib.suppress(error):
            pynvml.nvmlShutdown()
    warnings = []
    if missing:
        warnings.append("NVML: this driver's libnvidia-ml lacks " + ", ".join(missing)
                        + "; those fields are unknown")
    warnings.extend(f"NVML: {text}" for text in failed)
    driver_version = None
    if driver is not None:
        try:
            driver_version = DriverVersion(driver)
        except InvalidValue as exc:
            warnings.append(f"NVML: the driver version is malformed: {exc.message}")
    return NvmlResult(
        ok=True,
        driver_version=driver_version,
        cuda_driver_version=cuda_version_from_int(cuda_int) if cuda_int is not None else None,
        gpus=tuple(gpus),
        warnings=tuple(warnings),
    )


def _gpu(pynvml: Any, index: int, handle: Any, field: Any, missing: list[str]) -> Gpu:
    name = field("nvmlDeviceGetName", lambda: _text(pynvml.nvmlDeviceGetName(handle)))
    cc = field("nvmlDeviceGetCudaComputeCapability",
               lambda: pynvml.nvmlDeviceGetCudaComputeCapability(handle))
    mem = field("nvmlDeviceGetMemoryInfo", lambda: pynvml.nvmlDeviceGetMemoryInfo(handle))
    if mem is None:
        mem = field("nvmlDeviceGetMemoryInfo_v2",
                    lambda: pynvml.nvmlDeviceGetMemoryInfo(handle, version=pynvml.nvmlMemory_v2))
        if mem is not None and "nvmlDeviceGetMemoryInfo" in missing:
            missing.remove("nvmlDeviceGetMemoryInfo")
    uuid = field("nvmlDeviceGetUUID", lambda: _text(pynvml.nvmlDeviceGetUUID(handle)))
    mig = field("nvmlDeviceGetMigMode", lambda: pynvml.nvmlDeviceGetMigMode(handle))
    capability = None
    if cc:
        try:
            capability = ComputeCapability.from_parts(int(cc[0]), int(cc[1]))
        except InvalidValue:  # a number no GPU has: as unknown as no answer
            capability = None
    return Gpu(
        index=index,
        name=name,
        compute_capability=capability,
        memory_mib=int(mem.total) // (1024 * 1024) if mem is not None else None,
        uuid=uuid,
        mig_mode=bool(mig[0]) if mig is not None else None,
    )
