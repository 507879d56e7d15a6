"""The validation child: runs checks inside the interpreter being validated.

This file is executed by path in the *target* interpreter (``python _probe.py``), so it uses only
the standard library and torch, and must not import torchenv. It imports torch once, then serves
requests over a line-based JSON protocol:

* the child writes ``{"event": "hello", ...}`` with the torch version and the check list (or
  ``"import_error"`` when torch cannot be imported) as its first line;
* the parent writes ``{"run": NAME}``; the child answers ``{"event": "start", "name": NAME}`` and
  then ``{"event": "result", ...}``;
* the parent closes stdin (or writes ``{"quit": true}``) to end the child.

The protocol uses a private duplicate of the original stdout; file descriptor 1 is pointed at
stderr so that prints from checks or C++ libraries cannot corrupt the stream.

Test seam: ``TORCHENV_VALIDATE_EXTRA_CHECKS`` names Python files (separated by ``os.pathsep``);
each top-level function ``check_<name>(ctx)`` in them becomes a required quick-level check
``<name>``. The test suite plants hanging and crashing checks this way.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import io
import json
import math
import os
import re
import shutil
import sys
import time
import traceback
import warnings
from typing import Any, Callable, Optional

GPU_HOST_ENV = "TORCHENV_VALIDATE_GPU_HOST"
EXTRA_CHECKS_ENV = "TORCHENV_VALIDATE_EXTRA_CHECKS"
NO_CUDA = "no CUDA device"


class Skip(Exception):
    """Raised by a check that cannot run here; the message is the reason."""


class Fail(Exception):
    """Raised by a check that ran and found a problem; ``hint`` says what to do."""

    def __init__(self, message: str, hint: Optional[str] = None) -> None:
        super().__init__(message)
        self.hint = hint


class Ctx:
    """What a check gets: the torch module, its device and facts about the host."""

    def __init__(self, torch: Any, device: str, gpu_host: bool) -> None:
        self.torch = torch
        self.device = device
        self.gpu_host = gpu_host
        self.metrics: dict[str, Any] = {}
        self.poisoned = False  # set by a check that leaves the CUDA context unusable on purpose

    @property
    def cuda(self) -> bool:
        return self.device.startswith("cuda")


CheckFn = Callable[[Ctx], Optional[str]]


class Needs:
    """What a check needs of the platform; where a need is unmet the check is a skip saying
    which, never a failure. ``torch``: the oldest torch release (major, minor) that has what the
    check uses. ``capability``: the lowest NVIDIA compute capability it can run on (judged on
    CUDA devices only). ``why`` says where the limit comes from."""

    def __init__(self, *, torch: Optional[tuple[int, int]] = None,
                 capability: Optional[tuple[int, int]] = None, why: str = "") -> None:
        self.torch = torch
        self.capability = capability
        self.why = why


class Spec:
    """A registered check. ``scope`` is ``gpu`` (one per GPU, skipped without one), ``gpu_or_cpu``
    (one per GPU, or once on the CPU) or ``any`` (once, on the first GPU or the CPU)."""

    def __init__(self, name: str, fn: CheckFn, level: str, scope: str, required: bool,
                 timeout: float, needs: Optional[Needs] = None) -> None:
        self.name = name
        self.fn = fn
        self.level = level
        self.scope = scope
        self.required = required
        self.timeout = timeout
        self.needs = needs or Needs()


SPECS: list[Spec] = []


def check(name: str, *, level: str = "quick", scope: str = "any", required: bool = True,
          timeout: float = 60.0, needs: Optional[Needs] = None) -> Callable[[CheckFn], CheckFn]:
    def register(fn: CheckFn) -> CheckFn:
        SPECS.append(Spec(name, fn, level, scope, required, timeout, needs))
        return fn
    return register


_RELEASE = re.compile(r"\s*([0-9]+)\.([0-9]+)(?:\.([0-9]+))?", re.ASCII)


def torch_release(version: str) -> tuple[int, int, int]:
    """``2.7.0+cu126`` → ``(2, 7, 0)``; ``2.6.0a0+ecf3bae40a.nv25.01`` → ``(2, 6, 0)``.

    The probe cannot import torchenv; a test compares this with ``TorchVersion.release``.
    An unreadable version is ``(0, 0, 0)``: older than every need, so the check is skipped
    with the version named rather than run against an API that may not be there.
    """
    m = _RELEASE.match(version)
    if m is None:
        return (0, 0, 0)
    return (int(m.group(1)), int(m.group(2)), int(m.group(3) or 0))


def unmet_need(needs: Needs, *, torch_version: str, device: str,
               capability: Optional[tuple[int, int]]) -> Optional[str]:
    """Why this platform cannot run a check with ``needs``; None when it can.

    ``capability`` is the CUDA device's (None on the CPU and on ROCm, where NVIDIA's compute
    capabilities mean nothing).
    """
    why = f" ({needs.why})" if needs.why else ""
    if needs.torch is not None and torch_release(torch_version)[:2] < needs.torch:
        return (f"needs torch {needs.torch[0]}.{needs.torch[1]} or later; this is "
                f"{torch_version}{why}")
    if needs.capability is not None and capability is not None \
            and tuple(capability) < needs.capability:
        return (f"needs compute capability {needs.capability[0]}.{needs.capability[1]} or "
                f"later; {device} is {capability[0]}.{capability[1]}{why}")
    return None


# ---------------------------------------------------------------------------------- helpers

def gpu_host() -> bool:
    """True when the machine has an NVIDIA GPU, whether or not torch can use it.

    torchenv's own detection (NVML, nvidia-smi, the PCI scan) decides and passes the answer in
    ``TORCHENV_VALIDATE_GPU_HOST``; this fallback, for a probe started by hand, looks at the
    Linux driver's files and at WSL2's GPU bridge with NVIDIA's user-space driver.
    """
    forced = os.environ.get(GPU_HOST_ENV, "").strip()
    if forced:
        return forced.lower() in ("1", "true", "yes")
    try:
        return bool(os.listdir("/proc/driver/nvidia/gpus"))
    except OSError:
        pass
    if os.path.exists("/dev/dxg") and os.path.exists("/usr/lib/wsl/lib/libcuda.so.1"):
        return True
    return os.path.exists("/dev/nvidia0")


TF32_OVERRIDE_ENV = "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE"


def tf32_forced() -> bool:
    """NVIDIA's NGC containers set ``TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1``: cuBLAS then runs every
    float32 matmul in TF32 whatever torch asks, so float32 results carry TF32's error."""
    return os.environ.get(TF32_OVERRIDE_ENV, "").strip() not in ("", "0")


# absolute tolerance per element, relative to (|A| @ |B|), the scale of each dot product
MATMUL_TOLERANCE = {"fp32": 3e-5, "tf32": 4e-3, "fp16": 4e-3, "bf16": 2e-2}


def matmul_violations(torch: Any, out: Any, a: Any, b: Any, tol: float
                      ) -> tuple[int, float, tuple[int, ...]]:
    """Compare ``out`` with ``a @ b`` in float64, element by element.

    ``a`` and ``b`` are the inputs as the device got them (already rounded to its dtype), so
    only the product's own error is measured. Each element may differ from the float64
    reference by ``tol`` times its dot product's scale ``(|a| @ |b|)``: one wrong lane fails,
    however small a fraction of the result it is. Returns (bad elements, worst error/scale,
    index of the worst).
    """
    a64 = a.detach().to("cpu", torch.float64)
    b64 = b.detach().to("cpu", torch.float64)
    ref = a64 @ b64
    scale = (a64.abs() @ b64.abs()).clamp_min(1e-30)
    ratio = (out.detach().to("cpu", torch.float64) - ref).abs() / scale
    ratio = torch.nan_to_num(ratio, nan=float("inf"))
    worst = int(ratio.argmax())
    where = divmod(worst, int(ratio.shape[1]))  # torch.unravel_index needs torch 2.2
    return int((ratio > tol).sum()), float(ratio.max()), where


def bf16_supported(torch: Any, ctx: Ctx) -> bool:
    """bf16 in hardware on the device under test (not emulated, not another GPU's answer)."""
    if not ctx.cuda:
        return True
    with torch.cuda.device(_cuda_index(ctx)):
        try:
            return bool(torch.cuda.is_bf16_supported(including_emulation=False))
        except TypeError:  # releases before the argument existed did not emulate
            return bool(torch.cuda.is_bf16_supported())


CUDA_INIT_HINTS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("error 802", "system not yet initialized"),
     "CUDA error 802: on NVSwitch systems (HGX/DGX) the NVIDIA Fabric Manager must run, with "
     "the driver's exact version: 'systemctl status nvidia-fabricmanager'"),
    (("error 803", "unsupported display driver / cuda driver combination"),
     "CUDA error 803: the libcuda in use does not match the kernel driver, usually a "
     "cuda-compat package or a container's libcuda on LD_LIBRARY_PATH; remove it or match the "
     "versions"),
    (("error 804", "forward compatibility was attempted on non supported hw"),
     "CUDA error 804: CUDA forward-compatibility libraries work only on data-centre GPUs; take "
     "cuda-compat off LD_LIBRARY_PATH or upgrade the driver"),
    (("driver/library version mismatch",),
     "the kernel module and the user-space driver differ (an upgrade without a reboot): reboot "
     "or reload the nvidia kernel module"),
    (("driver version is insufficient", "driver on your system is too old"),
     "the driver is older than this build's CUDA needs: upgrade the driver, or install a build "
     "for an older CUDA ('torchenv resolve' picks one)"),
    (("found no nvidia driver",),
     "the NVIDIA driver is not loaded here; in a container run it with the NVIDIA container "
     "toolkit (docker run --gpus all)"),
    (("no cuda-capable device", "error 100"),
     "no device is visible: check CUDA_VISIBLE_DEVICES (an empty or wrong value hides every "
     "GPU) and the container's device mapping"),
)


def cuda_init_hint(reason: Optional[str]) -> str:
    """What to do about the error that made ``torch.cuda.is_available()`` False."""
    text = (reason or "").lower()
    for needles, hint in CUDA_INIT_HINTS:
        if any(n in text for n in needles):
            return hint
    return "run 'torchenv doctor' (driver too old, CUDA_VISIBLE_DEVICES, ...)"


def cuda_init(torch: Any) -> tuple[int, Optional[str]]:
    """(CUDA devices torch can use, the reason when it can use none but is a CUDA build).

    ``torch.cuda.is_available()`` turns the driver's error into a warning and False; the error
    itself (802 fabric manager, 803/804 compat libraries, ...) is what says what to fix.
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            available = bool(torch.cuda.is_available())
        except Exception as exc:
            return 0, f"{type(exc).__name__}: {exc}"
    if not torch.version.cuda:
        return 0, None
    try:
        if available:
            torch.cuda.init()
            return int(torch.cuda.device_count()), None
        torch.cuda.init()
    except Exception as exc:
        return 0, str(exc).strip() or type(exc).__name__
    said = "; ".join(str(w.message) for w in caught if "CUDA" in str(w.message))
    return 0, said or "torch.cuda.is_available() is False and torch gave no reason"


CUDA_INIT_ERROR: Optional[str] = None
"""Set once at start: why this CUDA build cannot use CUDA here (None when it can)."""


def die_with_parent() -> None:
    """Ask the kernel to SIGKILL this process when its parent dies (Linux only), so a killed
    torchenv or torchrun leaves no child behind."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes
        import signal

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() == 1:  # the parent was already gone before the request took effect
        sys.exit(1)


def rel_err(torch: Any, out: Any, ref: Any) -> float:
    out = out.detach().to("cpu", torch.float64)
    ref = ref.detach().to("cpu", torch.float64)
    denom = float(ref.norm()) or 1.0
    return float((out - ref).norm()) / denom


def arch_runs(arch: str, major: int, minor: int) -> bool:
    """Whether a compiled target from ``torch.cuda.get_arch_list()`` runs on ``major.minor``.

    ``sm_86`` (SASS) runs on 8.6 and later minors of major 8; ``sm_100f`` (family) likewise;
    ``sm_90a`` only on exactly 9.0; ``compute_90`` (PTX) on anything >= 9.0, by JIT.

    This probe runs standalone in the target interpreter, so it keeps its own copy of the
    resolver's rule (``torchenv.matrix.inference.entry_runs``); a test compares the two for every
    suffix and capability.
    """
    kind, _, digits = arch.partition("_")
    exact = digits.endswith("a")
    digits = digits.rstrip("af")
    if kind not in ("sm", "compute") or not digits.isdigit() or len(digits) < 2:
        return False
    a_major, a_minor = int(digits[:-1]), int(digits[-1])
    if kind == "compute":
        return (major, minor) >= (a_major, a_minor)
    if exact:
        return (major, minor) == (a_major, a_minor)
    return major == a_major and minor >= a_minor


def _cuda_index(ctx: Ctx) -> int:
    return int(ctx.device.split(":")[1]) if ":" in ctx.device else 0


def cuda_capability(torch: Any, ctx: Ctx) -> Optional[tuple[int, int]]:
    """The NVIDIA compute capability of the device under test; None on the CPU and on ROCm."""
    if not ctx.cuda or getattr(torch.version, "hip", None) or not torch.version.cuda:
        return None
    major, minor = torch.cuda.get_device_capability(_cuda_index(ctx))
    return int(major), int(minor)


# ----------------------------------------------------------------------------- quick level

@check("build")
def check_build(ctx: Ctx) -> str:
    torch = ctx.torch
    cuda = torch.version.cuda
    hip = getattr(torch.version, "hip", None)
    facts = [f"torch {torch.__version__}"]
    if cuda:
        facts.append(f"CUDA {cuda}")
        cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
        facts.append(f"cuDNN {cudnn}" if cudnn else "no cuDNN")
        nccl, broken = nccl_version(torch)
        facts.append(f"NCCL {dotted(nccl)}" if nccl else
                     f"NCCL unreadable ({broken})" if broken else "no NCCL")
        facts.append("arch " + " ".join(torch.cuda.get_arch_list()))
    elif hip:
        facts.append(f"ROCm {hip}")
    else:
        facts.append("CPU-only build")
    detail = ", ".join(facts)
    if ctx.gpu_host and not cuda and not hip:
        raise Fail(f"{torch.__version__} is a CPU-only build on a host with an NVIDIA GPU",
                   hint="install a CUDA build: 'torchenv resolve' shows it, "
                        "'torchenv install' runs it")
    if ctx.gpu_host and cuda and not torch.cuda.is_available():
        reason = CUDA_INIT_ERROR
        raise Fail(f"{torch.__version__} is a CUDA build but torch.cuda.is_available() is False"
                   + (f": {reason}" if reason else ""), hint=cuda_init_hint(reason))
    return detail


def version_tuple(text: str) -> tuple[int, ...]:
    """``9.1.0.70`` → ``(9, 1, 0, 70)``; the leading numbers of a distribution's version."""
    parts = []
    for piece in text.split("."):
        digits = re.match(r"[0-9]+", piece)
        if digits is None:
            break
        parts.append(int(digits.group()))
    return tuple(parts)


def library_mismatch(name: str, loaded: tuple[int, ...], wanted: tuple[int, ...],
                     wanted_from: str) -> Optional[str]:
    """Why the ``loaded`` library does not match what it should be (``wanted``, from
    ``wanted_from``), or None. Versions agree when every number both give agrees."""
    common = min(len(loaded), len(wanted))
    if common and loaded[:common] == wanted[:common]:
        return None
    shown = ".".join(map(str, loaded)), ".".join(map(str, wanted))
    return f"{name} {shown[0]} is loaded, but {wanted_from} is {shown[1]}"


def _installed(prefix: str, major: Optional[int] = None) -> Optional[tuple[str, str]]:
    """(distribution name, version) of an installed distribution named ``prefix*``: with
    ``major``, the one whose version starts with it when there is one (an environment may hold
    ``nvidia-cublas-cu11`` and ``nvidia-cublas-cu12``), else the first."""
    import importlib.metadata

    found = []
    for dist in importlib.metadata.distributions():
        name = str(dist.metadata["Name"] or "").lower()
        if name.startswith(prefix):
            found.append((name, str(dist.version)))
    for name, version in found:
        if major is not None and version_tuple(version)[:1] == (major,):
            return name, version
    return found[0] if found else None


@check("cuda_libraries")
def check_cuda_libraries(ctx: Ctx) -> str:
    """The CUDA libraries loaded are the ones torch was built with and pip installed: another
    libcudnn, libnccl, libcudart or libcublas earlier on the library path (LD_LIBRARY_PATH, a
    system CUDA) breaks convolutions, collectives and matmuls in ways the version numbers show
    first."""
    torch = ctx.torch
    if not torch.version.cuda:
        raise Skip("not a CUDA build")
    found, problems = [], []
    cudnn_c = getattr(torch._C, "_cudnn", None)
    if cudnn_c is not None:
        runtime = tuple(cudnn_c.getRuntimeVersion())
        compiled = tuple(cudnn_c.getCompileVersion())
        found.append(f"cuDNN {'.'.join(map(str, runtime))} (built with "
                     f"{'.'.join(map(str, compiled))})")
        if runtime[:1] != compiled[:1] or runtime < compiled:
            problems.append(f"cuDNN {'.'.join(map(str, runtime))} is loaded, but torch was "
                            f"built with {'.'.join(map(str, compiled))}")
        wheel = _installed("nvidia-cudnn-cu")
        if wheel:
            problem = library_mismatch("cuDNN", runtime, version_tuple(wheel[1]),
                                       f"pip's {wheel[0]}")
            problems += [problem] if problem else []
    nccl, broken = nccl_version(torch)
    if broken:
        problems.append(f"NCCL is built in but cannot say its version: {broken}")
    if nccl:
        found.append(f"NCCL {dotted(nccl)}")
        wheel = _installed("nvidia-nccl-cu")
        if wheel:
            problem = library_mismatch("NCCL", nccl, version_tuple(wheel[1]),
                                       f"pip's {wheel[0]}")
            problems += [problem] if problem else []
    runtime_found, notes, runtime_problems = cuda_runtime_libraries(torch, ctx)
    found += runtime_found
    problems += runtime_problems
    if problems:
        raise Fail("; ".join(problems),
                   hint="another copy of the library comes first on the library path: check "
                        "LD_LIBRARY_PATH and a system CUDA's libraries ('torchenv doctor' names "
                        "them), or reinstall the matching wheel")
    if not found:
        raise Skip("this CUDA build reports none of its libraries (cuDNN, NCCL, the CUDA "
                   "runtime, cuBLAS)" + "".join(f"; {n}" for n in notes))
    return "; ".join(found + notes)


_MAPPED = {"cudart": re.compile(r"/libcudart\.so(?:\.[0-9]+)*$"),
           "cublas": re.compile(r"/libcublas\.so(?:\.[0-9]+)*$")}


def mapped_libraries(maps: str) -> dict[str, str]:
    """The file of each CUDA library mapped into a process, from its ``/proc/PID/maps``::

        7f3a1c000000-7f3a1c0b2000 r--p 00000000 103:02 393  /v/nvidia/cu12/lib/libcudart.so.12

    gives ``{"cudart": "/v/nvidia/cu12/lib/libcudart.so.12"}``; ``cublas`` likewise (never
    ``libcublasLt``).
    """
    found: dict[str, str] = {}
    for line in maps.splitlines():
        fields = line.split(None, 5)
        if len(fields) < 6:
            continue
        path = fields[5].strip()
        for name, pattern in _MAPPED.items():
            if name not in found and pattern.search(path):
                found[name] = path
    return found


def cudart_version(path: str) -> tuple[int, int]:
    """``cudaRuntimeGetVersion`` of the loaded library at ``path`` (12080 → (12, 8)); loading
    a library already in the process hands back the same copy. Raises OSError when it cannot
    answer, AttributeError when ``path`` has no such function."""
    import ctypes

    value = ctypes.c_int()
    status = ctypes.CDLL(path).cudaRuntimeGetVersion(ctypes.byref(value))
    if status != 0:
        raise OSError(f"cudaRuntimeGetVersion returned error {status}")
    return value.value // 1000, value.value % 1000 // 10


def cublas_version(path: str) -> tuple[int, int, int]:
    """``cublasGetProperty`` MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL (needs no device)."""
    import ctypes

    lib = ctypes.CDLL(path)
    numbers = []
    for prop in (0, 1, 2):  # libraryPropertyType: MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL
        value = ctypes.c_int()
        status = lib.cublasGetProperty(prop, ctypes.byref(value))
        if status != 0:
            raise OSError(f"cublasGetProperty returned error {status}")
        numbers.append(value.value)
    return numbers[0], numbers[1], numbers[2]


def runtime_mismatch(compiled: tuple[int, ...], runtime: tuple[int, ...], path: str
                     ) -> Optional[str]:
    """The CUDA runtime must be of the build's major version and not older than the build (a
    newer minor of the same major serves a build, by CUDA's minor-version compatibility)."""
    if runtime[:1] == compiled[:1] and runtime[:2] >= compiled[:2]:
        return None
    return (f"the CUDA runtime {dotted(runtime)} is loaded ({path}), but torch was built with "
            f"CUDA {dotted(compiled)}")


def cublas_mismatch(compiled: tuple[int, ...], cublas: tuple[int, ...], path: str
                    ) -> Optional[str]:
    """cuBLAS ships with each CUDA release and carries its major version (cuBLAS 12.x with
    CUDA 12): another major is another toolkit's cuBLAS."""
    if cublas[:1] == compiled[:1]:
        return None
    return (f"cuBLAS {dotted(cublas)} is loaded ({path}), but torch was built with CUDA "
            f"{dotted(compiled)}")


def cuda_runtime_libraries(torch: Any, ctx: Ctx) -> tuple[list[str], list[str], list[str]]:
    """(facts judged, notes on what was not judged, problems) for the CUDA runtime and cuBLAS
    this process loaded, each against
    the CUDA torch was built with and against pip's wheel of it, as PyTorch's release smoke
    test compares cuDNN and NCCL. The libraries are found in ``/proc/self/maps`` (Linux)."""
    compiled = version_tuple(str(torch.version.cuda))
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as f:
            maps = f.read()
    except OSError:
        return [], ["CUDA runtime and cuBLAS not judged (no /proc/self/maps here)"], []
    if ctx.cuda:  # cuBLAS may load with the first matmul
        torch.ones(2, 2, device=ctx.device) @ torch.ones(2, 2, device=ctx.device)
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as f:
            maps = f.read()
    mapped = mapped_libraries(maps)
    found: list[str] = []
    notes: list[str] = []
    problems: list[str] = []
    ctx.metrics["cuda"] = dotted(compiled)
    for name, label, read, judge, wheel_prefix in (
            ("cudart", "CUDA runtime", cudart_version, runtime_mismatch, "nvidia-cuda-runtime"),
            ("cublas", "cuBLAS", cublas_version, cublas_mismatch, "nvidia-cublas")):
        path = mapped.get(name)
        if path is None:
            notes.append(f"no separate {label} library is loaded (not judged)")
            continue
        try:
            loaded: tuple[int, ...] = read(path)
        except (OSError, AttributeError) as exc:
            problems.append(f"the loaded {label} ({path}) cannot say its version: {exc}")
            continue
        ctx.metrics[name] = dotted(loaded)
        found.append(f"{label} {dotted(loaded)} (built with CUDA {dotted(compiled)})")
        problem = judge(compiled, loaded, path)
        problems += [problem] if problem else []
        wheel = _installed(wheel_prefix, loaded[0])
        if wheel:
            problem = library_mismatch(label, loaded[:2], version_tuple(wheel[1]),
                                       f"pip's {wheel[0]}")
            problems += [f"{problem} ({path} comes first)"] if problem else []
    return found, notes, problems


def dotted(version: tuple[int, ...]) -> str:
    return ".".join(map(str, version))


def nccl_version(torch: Any) -> tuple[Optional[tuple[int, ...]], Optional[str]]:
    """(NCCL's version, None), (None, None) for a build without NCCL, or (None, the error) for
    an NCCL that is built in but cannot answer: a broken NCCL is never taken for an absent one.

    A build has NCCL when ``torch._C`` has ``_nccl_version`` (CPU, macOS and Windows builds do
    not). ``torch.cuda.nccl.version()`` gives (2, 21, 5), with a suffix string on some builds
    ((2, 27, 3, 'a')); releases before 1.10 gave one int.
    """
    if not hasattr(torch._C, "_nccl_version"):
        return None, None
    try:
        answer = torch.cuda.nccl.version()
    except (RuntimeError, OSError) as exc:  # the library the build links cannot be used
        return None, f"{type(exc).__name__}: {exc}".strip()
    if isinstance(answer, int):
        return (answer,), None
    numbers = tuple(int(p) for p in answer if isinstance(p, int))
    if not numbers:
        return None, f"torch.cuda.nccl.version() answered {answer!r}"
    return numbers, None


@check("cuda_arch", scope="gpu")
def check_cuda_arch(ctx: Ctx) -> str:
    torch = ctx.torch
    i = _cuda_index(ctx)
    name = torch.cuda.get_device_name(i)
    archs = list(torch.cuda.get_arch_list())
    if getattr(torch.version, "hip", None):
        return _rocm_arch(torch, i, name, archs)
    major, minor = torch.cuda.get_device_capability(i)
    runs = [a for a in archs if arch_runs(a, major, minor)]
    if not runs:
        raise Fail(f"{name} (sm_{major}{minor}) is not compatible with this build; compiled for "
                   + " ".join(archs),
                   hint="install a build whose arch list covers this GPU: 'torchenv resolve'")
    if all(a.startswith("compute_") for a in runs):
        ctx.metrics["ptx_only"] = True
        return (f"{name} sm_{major}{minor}: PTX only ({' '.join(runs)}); kernels are "
                "JIT-compiled on first use (minutes on a first run, cached afterwards); a build "
                "with SASS for this GPU starts faster")
    return f"{name} sm_{major}{minor} in " + " ".join(archs)


def rocm_target(gcn_arch_name: str) -> str:
    """``gfx90a:sramecc+:xnack-`` → ``gfx90a``: the feature flags do not choose the code object."""
    return gcn_arch_name.split(":", 1)[0].strip()


def _rocm_arch(torch: Any, i: int, name: str, archs: list[str]) -> str:
    """ROCm builds list gfx targets; a GPU runs only code built for its exact target."""
    props = torch.cuda.get_device_properties(i)
    target = rocm_target(str(getattr(props, "gcnArchName", "") or ""))
    if not target:
        raise Skip("this ROCm torch does not report the GPU's gfx target (gcnArchName)")
    built = {rocm_target(a) for a in archs}
    if target not in built:
        raise Fail(f"{name} ({target}) is not compatible with this ROCm build; compiled for "
                   + " ".join(archs),
                   hint="install a ROCm build whose targets include this GPU: 'torchenv resolve'"
                        " (HSA_OVERRIDE_GFX_VERSION only helps for a compatible target)")
    return f"{name} {target} in " + " ".join(archs)


@check("roundtrip", scope="gpu")
def check_roundtrip(ctx: Ctx) -> str:
    torch = ctx.torch
    n = 1 << 20
    x = torch.randint(-(2 ** 31), 2 ** 31 - 1, (n,), dtype=torch.int64)
    weights = torch.arange(1, n + 1, dtype=torch.int64)
    checksum = int((x * weights).sum())
    paths = {"pageable": x, "pinned": x.pin_memory()}
    for label, src in paths.items():
        dev = src.to(ctx.device, non_blocking=(label == "pinned"))
        torch.cuda.synchronize(ctx.device)
        on_device = int((dev * weights.to(ctx.device)).sum())
        copy = dev.clone()  # device to device
        back = copy.to("cpu")
        if on_device != checksum or not torch.equal(back, x):
            raise Fail(f"{label} copy host→{ctx.device}→host changed the data "
                       f"(checksum {checksum} vs {on_device})",
                       hint="a hardware, driver or PCIe problem; run nvidia-smi -q and dmesg")
    return f"{n * 8 // (1 << 20)} MiB pageable and pinned, checksum {checksum & 0xFFFFFFFF:08x}"


@check("matmul", scope="gpu_or_cpu")
def check_matmul(ctx: Ctx) -> str:
    torch = ctx.torch
    g = torch.Generator().manual_seed(0)
    # a plain shape, an odd one (no tile divides it) and, on a GPU, a large one
    shapes = [(256, 192, 128), (257, 131, 67)] + ([(2048, 2048, 2048)] if ctx.cuda else [])
    forced = ctx.cuda and tf32_forced()
    cases: list[tuple[str, Any, str]] = [("fp32", torch.float32, "tf32" if forced else "fp32")]
    if ctx.cuda:
        cases.append(("tf32", torch.float32, "tf32"))
    cases.append(("fp16", torch.float16, "fp16"))
    if bf16_supported(torch, ctx):
        cases.append(("bf16", torch.bfloat16, "bf16"))
    worst: dict[str, float] = {}
    for label, dtype, tol_key in cases:
        tol = MATMUL_TOLERANCE[tol_key]
        for m, k, n in shapes:
            a = torch.randn(m, k, generator=g).to(dtype)
            b = torch.randn(k, n, generator=g).to(dtype)
            torch.set_float32_matmul_precision("high" if label == "tf32" else "highest")
            try:
                out = a.to(ctx.device) @ b.to(ctx.device)
            finally:
                torch.set_float32_matmul_precision("highest")
            bad, err, where = matmul_violations(torch, out, a, b, tol)
            if bad:
                raise Fail(f"{label} matmul {m}x{k}x{n} on {ctx.device}: {bad} element(s) differ "
                           f"from the float64 reference of the same inputs, worst {err:.1e} of "
                           f"the dot product's scale at {list(where)} (allowed {tol:.0e})",
                           hint="wrong results from the math library or the GPU; check the GPU "
                                "with 'nvidia-smi -q' and the build with 'torchenv doctor'")
            worst[label] = max(worst.get(label, 0.0), err)
    shown = ", ".join(f"{k} {v:.1e}" for k, v in worst.items())
    note = (f"; fp32 judged as TF32: {TF32_OVERRIDE_ENV}=1 makes cuBLAS use TF32"
            if forced else "")
    return (f"{len(shapes)} shapes, element-wise vs float64 of the same inputs: {shown}{note}")


def grad_scaler(torch: Any, device_type: str, *, enabled: bool) -> Any:
    """``torch.amp.GradScaler`` (torch 2.3 and later), else ``torch.cuda.amp.GradScaler``."""
    amp = getattr(torch, "amp", None)
    if hasattr(amp, "GradScaler"):
        return torch.amp.GradScaler(device_type, enabled=enabled)
    return torch.cuda.amp.GradScaler(enabled=enabled)


def _mlp(torch: Any) -> Any:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.Tanh(), torch.nn.Linear(32, 4))


@check("autograd")
def check_autograd(ctx: Ctx) -> str:
    torch = ctx.torch
    x = torch.randn(4, 5, dtype=torch.float64, device=ctx.device, requires_grad=True)
    w = torch.randn(5, 3, dtype=torch.float64, device=ctx.device, requires_grad=True)
    if not torch.autograd.gradcheck(lambda x, w: torch.tanh(x @ w).sin(), (x, w)):
        raise Fail("gradcheck failed in float64")
    torch.manual_seed(1)
    data = torch.randn(8, 16)
    target = torch.randn(8, 4)
    grads = []
    for device, dtype in (("cpu", torch.float64), (ctx.device, torch.float32)):
        model = _mlp(torch).to(device, dtype)
        loss = torch.nn.functional.mse_loss(model(data.to(device, dtype)),
                                            target.to(device, dtype))
        loss.backward()
        grads.append([p.grad for p in model.parameters()])
    worst = max(rel_err(torch, b, a) for a, b in zip(grads[0], grads[1]))
    forced = ctx.cuda and tf32_forced()
    tol = 5e-3 if forced else 1e-4
    if worst > tol:
        raise Fail(f"MLP gradients on {ctx.device} differ from the CPU: relative error "
                   f"{worst:.2e} > {tol:.0e}" + (" (TF32 tolerance)" if forced else ""))
    return (f"gradcheck float64 ok; MLP backward vs CPU float64: {worst:.1e}"
            + (f" (TF32 tolerance: {TF32_OVERRIDE_ENV}=1)" if forced else ""))


@check("nn_module")
def check_nn_module(ctx: Ctx) -> str:
    torch = ctx.torch
    nn = torch.nn

    module_base: Any = nn.Module

    class Net(module_base):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.body = nn.Linear(8, 16)
            self.head = nn.Linear(16, 4)
            self.register_buffer("scale", torch.ones(4))

        def forward(self, x: Any) -> Any:
            return self.head(torch.relu(self.body(x))) * self.scale

    net = Net().to(ctx.device)
    names = sorted(n for n, _ in net.named_parameters())
    if names != ["body.bias", "body.weight", "head.bias", "head.weight"]:
        raise Fail(f"parameter registration: got {names}")
    seen: list[Any] = []
    handle = net.head.register_forward_hook(lambda mod, inp, out: seen.append(tuple(out.shape)))
    x = torch.randn(5, 8, device=ctx.device)
    net(x)
    handle.remove()
    net(x)
    if seen != [(5, 4)]:
        raise Fail(f"forward hook: expected one call with (5, 4), got {seen}")
    buf = io.BytesIO()
    torch.save(net.state_dict(), buf)
    buf.seek(0)
    clone = Net().to(ctx.device)
    clone.load_state_dict(torch.load(buf, weights_only=True, map_location=ctx.device))
    if not torch.equal(clone(x), net(x)):
        raise Fail("state_dict round trip changed the model's output")
    losses = []
    for shape_name, model, inputs, target in (
        ("[N,C]", nn.Linear(8, 4), torch.randn(32, 8), torch.randint(0, 4, (32,))),
        ("[N,C,d1]", nn.Conv1d(8, 4, 1), torch.randn(32, 8, 6), torch.randint(0, 4, (32, 6))),
    ):
        model = model.to(ctx.device)
        inputs, target = inputs.to(ctx.device), target.to(ctx.device)
        # SGD, not Adam: Adam's first step imports torch._dynamo (~1 s) in recent releases
        opt = torch.optim.SGD(model.parameters(), lr=0.5, momentum=0.9)
        loss_fn = nn.CrossEntropyLoss()
        with torch.no_grad():
            first = last = float(loss_fn(model(inputs), target))
        for _ in range(25):
            opt.zero_grad()
            loss = loss_fn(model(inputs), target)
            loss.backward()
            opt.step()
            last = float(loss.detach())
        if not last < first * 0.95:
            raise Fail(f"optimizer steps did not lower CrossEntropyLoss on {shape_name}: "
                       f"{first:.3f} → {last:.3f}")
        losses.append(f"{shape_name} {first:.2f}→{last:.2f}")
    return "params, hook, state_dict ok; CrossEntropyLoss " + ", ".join(losses)


@check("amp")
def check_amp(ctx: Ctx) -> str:
    torch = ctx.torch
    torch.manual_seed(0)
    model = _mlp(torch).to(ctx.device)
    data = torch.randn(64, 16, device=ctx.device)
    target = torch.randint(0, 4, (64,), device=ctx.device)
    loss_fn = torch.nn.CrossEntropyLoss()
    done = []
    if ctx.cuda:
        dtypes = [torch.float16] + ([torch.bfloat16] if bf16_supported(torch, ctx) else [])
    else:
        dtypes = [torch.bfloat16]
    for dtype in dtypes:
        device_type = "cuda" if ctx.cuda else "cpu"
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        scaler = grad_scaler(torch, device_type, enabled=dtype == torch.float16)
        first = None
        last = 0.0
        for _ in range(10):
            opt.zero_grad()
            with torch.autocast(device_type, dtype=dtype):
                out = model(data)
                loss = loss_fn(out, target)
            if out.dtype != dtype:
                raise Fail(f"autocast({device_type}, {dtype}) produced {out.dtype}")
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            last = float(loss.detach())
            first = last if first is None else first
        if not math.isfinite(last) or first is None or not last < first:
            raise Fail(f"AMP {dtype} training did not lower the loss: {first} → {last}")
        done.append(f"{str(dtype).replace('torch.', '')} {first:.2f}→{last:.2f}")
    return f"autocast({'cuda' if ctx.cuda else 'cpu'}) + GradScaler: " + ", ".join(done)


@check("memory", scope="gpu")
def check_memory(ctx: Ctx) -> str:
    torch = ctx.torch
    dev = ctx.device
    torch.cuda.synchronize(dev)
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats(dev)
    base = torch.cuda.memory_allocated(dev)
    size = 64 << 20
    x = torch.empty(size, dtype=torch.uint8, device=dev)
    held = torch.cuda.memory_allocated(dev)
    del x
    after = torch.cuda.memory_allocated(dev)
    peak = torch.cuda.max_memory_allocated(dev)
    reserved = torch.cuda.memory_reserved(dev)
    torch.cuda.empty_cache()
    released = torch.cuda.memory_reserved(dev)
    if held - base < size or after != base or peak < base + size or released > reserved:
        raise Fail(f"allocator accounting is off: base {base}, held {held}, after free {after}, "
                   f"peak {peak}, reserved {reserved} → {released} after empty_cache")
    return (f"64 MiB: allocated +{(held - base) >> 20} MiB, freed, peak {peak >> 20} MiB, "
            f"empty_cache {reserved >> 20}→{released >> 20} MiB reserved")


# ------------------------------------------------------------------------------ full level

@check("cudnn_conv", level="full", scope="gpu")
def check_cudnn_conv(ctx: Ctx) -> str:
    torch = ctx.torch
    if not torch.backends.cudnn.is_available():
        raise Fail("cuDNN is not available in this CUDA build")
    torch.manual_seed(0)
    conv = torch.nn.Conv2d(3, 8, 3, padding=1).double()
    x = torch.randn(2, 3, 16, 16, dtype=torch.float64, requires_grad=True)
    ref = conv(x)
    ref.sum().backward()
    ref_grad = x.grad.clone()
    dconv = torch.nn.Conv2d(3, 8, 3, padding=1).to(ctx.device)
    dconv.load_state_dict({k: v.float() for k, v in conv.state_dict().items()})
    dx = x.detach().float().to(ctx.device).requires_grad_(True)
    saved = torch.backends.cudnn.allow_tf32
    torch.backends.cudnn.allow_tf32 = False
    try:
        out = dconv(dx)
        out.sum().backward()
    finally:
        torch.backends.cudnn.allow_tf32 = saved
    fwd, bwd = rel_err(torch, out, ref), rel_err(torch, dx.grad, ref_grad)
    if fwd > 1e-4 or bwd > 1e-4:
        raise Fail(f"cuDNN conv2d differs from the CPU: forward {fwd:.1e}, backward {bwd:.1e}")
    return f"cuDNN {torch.backends.cudnn.version()}: forward {fwd:.1e}, backward {bwd:.1e}"


@check("torch_compile", level="full", timeout=600.0, needs=Needs(
    torch=(2, 0), capability=(7, 0),
    why="torch.compile arrived in torch 2.0; Triton, its GPU compiler, runs on compute "
        "capability 7.0 and later only"))
def check_torch_compile(ctx: Ctx) -> str:
    torch = ctx.torch
    unsupported = dynamo_unsupported()
    if unsupported:
        raise Skip(f"this torch cannot compile on this Python: {unsupported}")
    if not ctx.cuda and not _compiler():
        raise Skip("no C++ compiler for inductor's CPU backend (set CXX or install g++)")
    if ctx.cuda:
        missing = triton_missing()
        if missing and sys.platform == "win32":
            raise Skip("Triton, torch.compile's GPU compiler, has no official Windows build "
                       "(missing: " + "; ".join(missing) + ")")
        if missing:
            raise Fail("torch.compile on a GPU needs Triton, which needs " + "; ".join(missing),
                       hint="install what is missing (Triton comes with Linux CUDA wheels of "
                            "torch; a C compiler: apt-get install gcc; Python.h: the "
                            "python3-dev package of this Python)")

    def fn(x: Any, y: Any) -> Any:
        return torch.sin(x) * torch.cos(y) + torch.relu(x - y) ** 2

    compiled = torch.compile(fn)
    x = torch.randn(64, 64, device=ctx.device)
    y = torch.randn(64, 64, device=ctx.device)
    err = rel_err(torch, compiled(x, y), fn(x, y))
    if err > 1e-5:
        raise Fail(f"torch.compile result differs from eager: relative error {err:.1e}")
    return f"inductor on {ctx.device}: relative error vs eager {err:.1e}"


_SCRIPTED_SOURCE = """
import torch


def branchy(x: torch.Tensor, n: int) -> torch.Tensor:
    for _ in range(n):
        if bool(x.sum() > 0):
            x = x * 2
        else:
            x = x - 1
    return x
"""


@check("torchscript", level="full")
def check_torchscript(ctx: Ctx) -> str:
    torch = ctx.torch
    # TorchScript reads the function's source, so it has to live in a real file
    path = os.path.join(os.environ.get("TMPDIR") or ".", "torchenv_scripted.py")
    with open(path, "w", encoding="utf-8") as f:
        f.write(_SCRIPTED_SOURCE)
    spec = importlib.util.spec_from_file_location("torchenv_scripted", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    branchy = module.branchy
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        scripted = torch.jit.script(branchy)
        buf = io.BytesIO()
        torch.jit.save(scripted, buf)
        buf.seek(0)
        loaded = torch.jit.load(buf, map_location=ctx.device)
    results = []
    for start in (torch.ones(3, device=ctx.device), -torch.ones(3, device=ctx.device)):
        want = branchy(start, 3)
        for got in (scripted(start, 3), loaded(start, 3)):
            if not torch.equal(got, want):
                raise Fail(f"TorchScript with control flow gave {got.tolist()}, eager "
                           f"{want.tolist()}")
        results.append(want[0].item())
    if "prim::If" not in str(scripted.graph) or "prim::Loop" not in str(scripted.graph):
        raise Fail("TorchScript graph lost the loop or the branch")
    return f"scripted loop + branch, saved and loaded: {results}"


@check("onnx_export", level="full", required=False, timeout=300.0)
def check_onnx_export(ctx: Ctx) -> str:
    missing = [m for m in ("onnx", "onnxscript") if importlib.util.find_spec(m) is None]
    if missing:
        raise Skip(" and ".join(missing) + " not installed (pip install onnx onnxscript)")
    torch = ctx.torch
    import onnx  # type: ignore[import-not-found,unused-ignore]

    model = torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.ReLU()).eval()
    path = os.path.join(os.environ.get("TMPDIR") or ".", "torchenv_probe.onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (torch.randn(2, 8),), path, input_names=["x"],
                          output_names=["y"], dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})
    proto = onnx.load(path)
    onnx.checker.check_model(proto)
    dim = proto.graph.input[0].type.tensor_type.shape.dim[0]
    if not dim.dim_param:
        raise Fail(f"exported batch dimension is fixed ({dim.dim_value}), not dynamic")
    return f"exported, checked; batch axis '{dim.dim_param}'"


@check("profiler", level="full")
def check_profiler(ctx: Ctx) -> str:
    torch = ctx.torch
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if ctx.cuda else [])
    a = torch.randn(128, 128, device=ctx.device)
    with profile(activities=activities) as prof:
        for _ in range(3):
            (a @ a).sum()
        if ctx.cuda:
            torch.cuda.synchronize(ctx.device)
    events = prof.events()
    names = {e.name for e in events}
    if not names & {"aten::mm", "aten::matmul"}:
        raise Fail(f"profiler recorded no matmul event ({len(names)} event names)")
    detail = f"{len(events)} events"
    if ctx.cuda:
        gpu = [e for e in events if getattr(e, "device_type", None) is not None
               and "CUDA" in str(e.device_type)]
        if not gpu:
            raise Fail("profiler recorded no CUDA kernel events",
                       hint="CUPTI may be missing or blocked (profiling permission)")
        detail += f", {len(gpu)} CUDA"
    return detail


def _compiler() -> Optional[str]:
    return shutil.which(os.environ.get("CXX", "c++")) or shutil.which("g++")


def dynamo_unsupported() -> Optional[str]:
    """torch's own word on whether torch.compile works on this Python (3.12 on torch before
    2.4, a free-threaded build before 3.13.3, ...): its message, or None."""
    try:
        eval_frame = importlib.import_module("torch._dynamo.eval_frame")
    except ImportError:
        return None  # torch.compile itself will say what is wrong
    check_supported = getattr(eval_frame, "check_if_dynamo_supported", None)
    if check_supported is None:
        return None
    try:
        check_supported()
    except RuntimeError as exc:
        return str(exc) or "torch._dynamo says this platform is unsupported"
    return None


def triton_missing() -> list[str]:
    """What Triton needs to compile its GPU launchers and is not here: the triton package, a C
    compiler (``CC``, cc, gcc or clang) and this Python's headers (``Python.h``)."""
    import sysconfig

    missing = []
    if importlib.util.find_spec("triton") is None:
        missing.append("the triton package (not installed)")
    compilers = [os.environ.get("CC", ""), "cc", "gcc", "clang"]
    if not any(c and shutil.which(c) for c in compilers):
        missing.append("a C compiler (no CC, cc, gcc or clang on PATH)")
    include = sysconfig.get_paths().get("include") or ""
    if not os.path.exists(os.path.join(include, "Python.h")):
        missing.append(f"Python.h (not in {include or 'this Python'})")
    return missing


def clear_stale_lock(build_dir: str, *, wait: bool = True) -> Optional[Any]:
    """Hold torchenv's advisory lock on ``build_dir`` and remove torch's lock file if a killed
    build left it there; returns the open lock file (close it to release), None without flock
    or, with ``wait=False``, when a live build holds the directory.

    torch's extension builder waits for as long as ``build_dir/lock`` exists. The advisory lock
    is released by the kernel when its holder dies, so once it is ours no other torchenv build
    is using the directory and a ``lock`` file there is stale. The validation parent calls this
    (without waiting) after it killed a child in the middle of a build.
    """
    try:
        import fcntl
    except ImportError:  # Windows: the caller builds in a private directory instead
        return None
    handle = open(os.path.join(build_dir, ".torchenv.lock"), "a+b")  # noqa: SIM115
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.close()
        return None
    stale = os.path.join(build_dir, "lock")
    if os.path.exists(stale):
        os.remove(stale)
    return handle


_EXT_SOURCE = """
torch::Tensor add_one(torch::Tensor x) { return x + 1; }
"""


def build_inline(torch: Any, name: str, **sources: Any) -> tuple[Any, float, str]:
    """Build (or load, when a build is cached) the inline extension ``name`` with
    ``torch.utils.cpp_extension.load_inline(**sources)``; returns (module, seconds, folder).

    The build runs in this child, so its ninja and compilers are the run's: they carry the
    run's token and end with it. A persistent cache (per torch, Python and extension) keeps
    later runs warm; torch's own lock there is cleared when a killed build left it, under
    torchenv's advisory lock. Without that lock the build goes to the run's private folder.
    """
    cpp_extension: Any = importlib.import_module("torch.utils.cpp_extension")
    tag = f"{torch.__version__}-py{sys.version_info[0]}{sys.version_info[1]}"
    tag += "" if name == _CPP_EXT_NAME else f"-{name}"  # the C++ build's folder predates others
    private = os.path.join(os.environ.get("TORCH_EXTENSIONS_DIR") or os.path.join(
        os.environ.get("TMPDIR") or ".", "torch_extensions"), name)
    cache = os.environ.get("TORCHENV_EXTENSIONS_CACHE")
    build_dir = os.path.join(cache, tag) if cache else private
    os.makedirs(build_dir, exist_ok=True)
    held = clear_stale_lock(build_dir) if cache else None
    if cache and held is None:  # no advisory lock here: a private directory is always safe
        build_dir = private
        os.makedirs(build_dir, exist_ok=True)
    start = time.monotonic()
    try:
        ext = cpp_extension.load_inline(name=name, build_directory=build_dir, verbose=False,
                                        **sources)
    finally:
        if held is not None:
            held.close()
    return ext, time.monotonic() - start, build_dir


_CPP_EXT_NAME = "torchenv_probe_ext"
_EXT_SOURCE = """
torch::Tensor add_one(torch::Tensor x) { return x + 1; }
"""


@check("cpp_extension", level="full", timeout=600.0)
def check_cpp_extension(ctx: Ctx) -> str:
    if not _compiler():
        raise Skip("no C++ compiler (install g++ or set CXX)")
    torch = ctx.torch
    cpp_extension: Any = importlib.import_module("torch.utils.cpp_extension")
    if not cpp_extension.is_ninja_available():
        raise Skip("ninja is not installed (pip install ninja)")
    ext, built, build_dir = build_inline(torch, _CPP_EXT_NAME, cpp_sources=[_EXT_SOURCE],
                                         functions=["add_one"])
    x = torch.arange(4.0)
    if not torch.equal(ext.add_one(x), x + 1):
        raise Fail("the compiled extension returned a wrong result")
    return f"load_inline built/loaded in {built:.1f} s ({build_dir})"


_CUDA_EXT_NAME = "torchenv_probe_cuda_ext"
_CUDA_EXT_DECLARATION = "torch::Tensor scale_add(torch::Tensor x, double a, double b);"
_CUDA_EXT_SOURCE = """
__global__ void scale_add_kernel(const float* x, float* y, float a, float b, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + b;
}

torch::Tensor scale_add(torch::Tensor x, double a, double b) {
  TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat && x.is_contiguous(),
              "scale_add takes a contiguous float32 CUDA tensor");
  auto y = torch::empty_like(x);
  int64_t n = x.numel();
  int threads = 256;
  int64_t blocks = (n + threads - 1) / threads;
  // the legacy default stream, which waits for torch's: no CUDAContext.h to compile
  scale_add_kernel<<<blocks, threads>>>(x.data_ptr<float>(), y.data_ptr<float>(), (float)a,
                                        (float)b, n);
  cudaError_t launched = cudaGetLastError();
  TORCH_CHECK(launched == cudaSuccess, "kernel launch failed: ", cudaGetErrorString(launched));
  return y;
}
"""


def cuda_extension_unmet(torch: Any, device: str, cuda_home: Optional[str]) -> Optional[str]:
    """Why a CUDA extension cannot be built and run here; None when it can. ``cuda_home`` is
    the toolkit torch's extension builder found (``torch.utils.cpp_extension.CUDA_HOME``)."""
    if getattr(torch.version, "hip", None):
        return "a ROCm build: its extensions go through hipify, not nvcc (not judged)"
    if not torch.version.cuda:
        return "a CPU-only build of torch cannot build CUDA extensions"
    if not device.startswith("cuda"):
        return f"{NO_CUDA}: the compiled kernel has nowhere to run"
    nvcc = os.path.join(cuda_home, "bin", "nvcc") if cuda_home else None
    if nvcc is None or not (os.path.exists(nvcc) or os.path.exists(nvcc + ".exe")):
        return ("no CUDA toolkit with nvcc (torch looks in CUDA_HOME, CUDA_PATH, PATH and "
                "/usr/local/cuda); install the toolkit matching torch's CUDA "
                f"{torch.version.cuda} to build CUDA extensions")
    if not _compiler():
        return "no C++ compiler for nvcc's host code (install g++ or set CXX)"
    return None


@check("cuda_extension", level="full", required=False, timeout=600.0)
def check_cuda_extension(ctx: Ctx) -> str:
    """A CUDA kernel built with nvcc through torch's extension builder runs on the device and
    agrees with the CPU. Optional: nvcc is the host's toolkit, not part of the install."""
    torch = ctx.torch
    cpp_extension: Any = importlib.import_module("torch.utils.cpp_extension")
    unmet = cuda_extension_unmet(torch, ctx.device,
                                 getattr(cpp_extension, "CUDA_HOME", None))
    if unmet:
        raise Skip(unmet)
    if not cpp_extension.is_ninja_available():
        raise Skip("ninja is not installed (pip install ninja)")
    try:
        ext, built, build_dir = build_inline(
            torch, _CUDA_EXT_NAME, cpp_sources=[_CUDA_EXT_DECLARATION],
            cuda_sources=[_CUDA_EXT_SOURCE], functions=["scale_add"])
    except RuntimeError as exc:  # torch refuses a toolkit of another CUDA major, or nvcc fails
        raise Fail(f"building a CUDA extension failed: {str(exc).strip()[:600]}",
                   hint=f"the usual causes: nvcc at {cpp_extension.CUDA_HOME} is of another "
                        f"CUDA major version than torch's {torch.version.cuda} (set CUDA_HOME "
                        "to a matching toolkit), or a host compiler this nvcc does not "
                        "support") from exc
    g = torch.Generator().manual_seed(0)
    x = torch.randn((1 << 20) + 3, generator=g)  # not a whole number of blocks
    with torch.cuda.device(_cuda_index(ctx)):
        got = ext.scale_add(x.to(ctx.device), 1.5, -2.0)
        torch.cuda.synchronize(ctx.device)
    want = x * 1.5 - 2.0
    bad = int((got.cpu() - want).abs().gt(1e-5 + 1e-6 * want.abs()).sum())
    if bad:
        raise Fail(f"the CUDA kernel built by nvcc gave {bad} wrong element(s) of {x.numel()} "
                   f"on {ctx.device}", hint="nvcc, the driver or the GPU; run 'torchenv doctor'")
    return (f"nvcc ({cpp_extension.CUDA_HOME}) built a kernel in {built:.1f} s ({build_dir}); "
            f"{x.numel()} elements on {ctx.device} agree with the CPU")


@check("torchvision_ops", level="full")
def check_torchvision_ops(ctx: Ctx) -> str:
    """torchvision's compiled operators load and run on the device (a torchvision built for
    another torch fails here: 'operator torchvision::nms does not exist')."""
    if importlib.util.find_spec("torchvision") is None:
        raise Skip("torchvision is not installed")
    torch = ctx.torch
    ops: Any = importlib.import_module("torchvision.ops")
    g = torch.Generator().manual_seed(0)
    xy = torch.rand(200, 2, generator=g) * 100
    boxes = torch.cat([xy, xy + 5 + torch.rand(200, 2, generator=g) * 20], dim=1)
    scores = torch.rand(200, generator=g)
    want = ops.nms(boxes, scores, 0.5)
    got = ops.nms(boxes.to(ctx.device), scores.to(ctx.device), 0.5).cpu()
    if not torch.equal(got, want):
        raise Fail(f"torchvision.ops.nms on {ctx.device} kept {got.numel()} boxes, the CPU "
                   f"{want.numel()} (or others)")
    return f"nms on {ctx.device}: {want.numel()} of 200 boxes kept, as on the CPU"


@check("torchaudio_ops", level="full")
def check_torchaudio_ops(ctx: Ctx) -> str:
    """torchaudio loads and resamples on the device as on the CPU."""
    if importlib.util.find_spec("torchaudio") is None:
        raise Skip("torchaudio is not installed")
    torch = ctx.torch
    functional: Any = importlib.import_module("torchaudio.functional")
    g = torch.Generator().manual_seed(0)
    wave = torch.randn(2, 16000, generator=g)
    want = functional.resample(wave, 16000, 8000)
    got = functional.resample(wave.to(ctx.device), 16000, 8000).cpu()
    err = rel_err(torch, got, want)
    if tuple(got.shape) != tuple(want.shape) or err > 1e-4:
        raise Fail(f"torchaudio resample on {ctx.device} differs from the CPU: shape "
                   f"{tuple(got.shape)} vs {tuple(want.shape)}, relative error {err:.1e}")
    return f"resample 16 kHz → 8 kHz on {ctx.device}: relative error vs CPU {err:.1e}"


def time_on_stream(torch: Any, stream: Any, fn: Callable[[], Any], *, min_seconds: float = 0.1,
                   trials: int = 5, warmup: int = 3) -> float:
    """Median seconds per call of ``fn``, timed with CUDA events on ``stream``: the device's own
    stream, since an event recorded on another device's stream times nothing of this work.
    Each trial repeats ``fn`` until it lasts at least ``min_seconds``."""
    for _ in range(warmup):
        fn()
    stream.synchronize()
    reps = 1
    samples: list[float] = []
    while len(samples) < trials:
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record(stream)
        for _ in range(reps):
            fn()
        end.record(stream)
        end.synchronize()
        seconds = float(start.elapsed_time(end)) / 1000.0
        if seconds < min_seconds and not samples:
            reps *= max(2, int(min_seconds / max(seconds, 1e-6)) + 1)
            continue
        samples.append(seconds / reps)
    samples.sort()
    return samples[len(samples) // 2]


@check("perf", level="full", scope="gpu", required=False, timeout=300.0)
def check_perf(ctx: Ctx) -> str:
    torch = ctx.torch
    dev = ctx.device
    i = _cuda_index(ctx)
    tflops: dict[str, float] = {}
    with torch.cuda.device(i):
        stream = torch.cuda.current_stream(i)
        cases = [("fp32", torch.float32, 4096), ("tf32", torch.float32, 8192),
                 ("fp16", torch.float16, 8192)]
        if bf16_supported(torch, ctx):
            cases.append(("bf16", torch.bfloat16, 8192))
        for label, dtype, n in cases:  # 8192^3 reaches peak on Hopper-class GPUs
            a = torch.randn(n, n, device=dev, dtype=dtype)
            b = torch.randn(n, n, device=dev, dtype=dtype)
            torch.set_float32_matmul_precision("high" if label == "tf32" else "highest")
            try:
                seconds = time_on_stream(torch, stream, lambda: a @ b)  # noqa: B023
            finally:
                torch.set_float32_matmul_precision("highest")
            tflops[label] = round(2 * n ** 3 / seconds / 1e12, 1)
        size = 256 << 20
        host = torch.empty(size, dtype=torch.uint8).pin_memory()
        dbuf = torch.empty(size, dtype=torch.uint8, device=dev)
        dbuf2 = torch.empty_like(dbuf)
        h2d = size / time_on_stream(torch, stream,
                                    lambda: dbuf.copy_(host, non_blocking=True)) / 1e9
        d2h = size / time_on_stream(torch, stream,
                                    lambda: host.copy_(dbuf, non_blocking=True)) / 1e9
        d2d = 2 * size / time_on_stream(torch, stream, lambda: dbuf2.copy_(dbuf)) / 1e9
    props = torch.cuda.get_device_properties(i)
    ctx.metrics.update({"gpu_name": torch.cuda.get_device_name(i), "tflops": tflops,
                        "capability": f"{props.major}.{props.minor}",
                        "sm_count": int(props.multi_processor_count),
                        "h2d_gbs": round(h2d, 1), "d2h_gbs": round(d2h, 1),
                        "d2d_gbs": round(d2d, 1)})
    return ("matmul TFLOP/s " + ", ".join(f"{k} {v}" for k, v in tflops.items())
            + f"; H2D {h2d:.1f} GB/s, D2H {d2h:.1f} GB/s, D2D {d2d:.0f} GB/s (median of 5, "
              "each >= 100 ms, on the device's own stream)")


@check("device_assert", level="full")
def check_device_assert(ctx: Ctx) -> str:
    """A failed assertion inside a kernel must surface as an error (PyTorch's own release smoke
    test does the same with ``torch._assert_async``). It leaves the CUDA context unusable, so
    the child is restarted after it."""
    torch = ctx.torch
    if not ctx.cuda:
        raise Skip(NO_CUDA)
    if getattr(torch.version, "hip", None):
        raise Skip("ROCm builds report a device assert differently; not judged")
    ctx.poisoned = True
    try:
        if hasattr(torch, "_assert_async"):
            torch._assert_async(torch.tensor(0, device=ctx.device))
        else:  # an index past the end trips the indexing kernel's own assert
            torch.zeros(4, device=ctx.device)[torch.tensor([7], device=ctx.device)] = 1.0
        torch.cuda.synchronize(ctx.device)
    except RuntimeError as exc:
        text = str(exc)
        if "CUDA" not in text and "device-side assert" not in text:
            raise Fail(f"the failed assertion surfaced as an error that does not name CUDA: "
                       f"{text[:300]}") from exc
        return f"a failed device assertion raised RuntimeError: {text.splitlines()[0][:200]}"
    raise Fail("a failed assertion inside a CUDA kernel raised nothing: kernel errors are lost",
               hint="CUDA_LAUNCH_BLOCKING or a debugger setting may hide them; run "
                    "'torchenv doctor'")


# ----------------------------------------------------------------------------- companions

COMPANIONS_ENV = "TORCHENV_VALIDATE_COMPANIONS"
"""A JSON list of the companions ``validate --with`` asks for: ``name`` (the distribution),
``import`` (its module), ``install`` (what installs it) and ``min_capability`` (the oldest GPU
its kernels run on, per the companion data, or null)."""
COMPANION_TIMEOUT = 180.0
"""Seconds a companion's import or operation may take (vLLM's import pulls in much)."""


def distribution_version(name: str) -> Optional[str]:
    """The installed version of distribution ``name``; None when none is installed."""
    from importlib import metadata

    try:
        return str(metadata.version(name))
    except metadata.PackageNotFoundError:
        return None


def check_companion_import(ctx: Ctx, companion: dict[str, Any]) -> str:
    """Import the companion in this interpreter: its version and file go into the metrics, an
    import failure carries its whole error text for the parent to classify."""
    name, module_name = str(companion["name"]), str(companion["import"])
    version = distribution_version(name)
    ctx.metrics.update(distribution=name, module=module_name, version=version)
    if version is None and importlib.util.find_spec(module_name) is None:
        raise Fail(f"{name} is not installed in this interpreter",
                   hint="pick the build made for this torch and install it: "
                        + str(companion.get("install") or name))
    try:
        module = importlib.import_module(module_name)
    except BaseException as exc:  # ImportError, OSError (undefined symbol), SystemExit ...
        ctx.metrics["import_error"] = traceback.format_exc()
        first = (str(exc).strip().splitlines() or [""])[0]
        raise Fail(f"import {module_name} fails: {type(exc).__name__}: {first}".strip(),
                   hint=f"reinstall the {name} built for this torch ({ctx.torch.__version__}): "
                        f"{companion.get('install')}") from None
    where = getattr(module, "__file__", None)
    ctx.metrics["file"] = where
    if version is None:
        version = str(getattr(module, "__version__", "") or "") or None
        ctx.metrics["version"] = version
    skipped = getattr(module, "_skip_reason", None) if module_name == "torchao" else None
    if skipped:  # torchao leaves out its kernels for a torch its .so files were not built for
        ctx.metrics["kernels_skipped"] = str(skipped)
    return (f"{name} {version or '(version unknown)'} from {where}"
            + (f"; its compiled kernels were skipped: {skipped}" if skipped else ""))


def _companion_module(companion: dict[str, Any]) -> Any:
    module_name = str(companion["import"])
    try:
        return importlib.import_module(module_name)
    except BaseException:  # the import check reports it; this one proves nothing without it
        raise Skip(f"not run: import {module_name} fails (see companion:{companion['name']})"
                   ) from None


def op_scatter(ctx: Ctx, companion: dict[str, Any]) -> str:
    """torch_scatter.scatter, sum and max, against torch's own scatter_reduce."""
    torch = ctx.torch
    ts = _companion_module(companion)
    g = torch.Generator().manual_seed(0)
    src = torch.randn(50, 4, generator=g).to(ctx.device)
    index = torch.randint(0, 7, (50,), generator=g).to(ctx.device)
    checked = []
    for reduce in ("sum", "max"):
        got = ts.scatter(src, index, dim=0, dim_size=7, reduce=reduce)
        want = torch.zeros(7, 4, device=ctx.device).scatter_reduce(
            0, index.unsqueeze(1).expand(-1, 4), src, reduce="sum" if reduce == "sum" else "amax",
            include_self=False)
        err = rel_err(torch, got, want)
        if tuple(got.shape) != (7, 4) or err > 1e-5:
            raise Fail(f"torch_scatter.scatter(reduce={reduce!r}) on {ctx.device} differs from "
                       f"torch's scatter_reduce: shape {tuple(got.shape)}, relative error "
                       f"{err:.1e}", hint="reinstall torch-scatter built for this torch "
                       f"({torch.__version__}): {companion.get('install')}")
        checked.append(f"{reduce} {err:.1e}")
    return f"scatter of 50 rows into 7 on {ctx.device} agrees with torch (" + ", ".join(
        checked) + ")"


def op_sparse_matmul(ctx: Ctx, companion: dict[str, Any]) -> str:
    """A torch_sparse SparseTensor times a dense matrix, against the dense product."""
    torch = ctx.torch
    tsp = _companion_module(companion)
    g = torch.Generator().manual_seed(0)
    dense = (torch.rand(6, 5, generator=g) < 0.4).float() * torch.randn(6, 5, generator=g)
    row, col = dense.nonzero(as_tuple=True)
    sparse = tsp.SparseTensor(row=row.to(ctx.device), col=col.to(ctx.device),
                              value=dense[row, col].to(ctx.device), sparse_sizes=(6, 5))
    other = torch.randn(5, 3, generator=g)
    got = tsp.matmul(sparse, other.to(ctx.device))
    want = dense @ other
    err = rel_err(torch, got, want)
    if tuple(got.shape) != (6, 3) or err > 1e-5:
        raise Fail(f"torch_sparse.matmul on {ctx.device} differs from the dense product: shape "
                   f"{tuple(got.shape)}, relative error {err:.1e}",
                   hint=f"reinstall torch-sparse built for this torch ({torch.__version__}): "
                        f"{companion.get('install')}")
    return (f"SparseTensor ({row.numel()} values) @ dense on {ctx.device} agrees with the dense "
            f"product ({err:.1e})")


def op_torchao_quantize(ctx: Ctx, companion: dict[str, Any]) -> str:
    """torchao's int8 weight-only quantization of a Linear layer, which runs on the CPU: the
    weight must become torchao's quantized tensor and the output stay near the float one."""
    torch = ctx.torch
    ao = _companion_module(companion)
    quantization: Any = importlib.import_module("torchao.quantization")
    config = getattr(quantization, "Int8WeightOnlyConfig", None)
    if config is not None:
        how = "Int8WeightOnlyConfig"
        make = config
    elif hasattr(quantization, "int8_weight_only"):  # releases before the config classes
        how, make = "int8_weight_only", quantization.int8_weight_only
    else:
        raise Skip(f"torchao {getattr(ao, '__version__', '')} has neither "
                   "Int8WeightOnlyConfig nor int8_weight_only")
    g = torch.Generator().manual_seed(0)
    layer = torch.nn.Linear(64, 32)
    with torch.no_grad():
        layer.weight.copy_(torch.randn(32, 64, generator=g) * 0.1)
        layer.bias.zero_()
    model = torch.nn.Sequential(layer).to(ctx.device)
    x = torch.randn(8, 64, generator=g).to(ctx.device)
    with torch.no_grad():
        want = model(x)
        quantization.quantize_(model, make())
        got = model(x)
    kind = type(model[0].weight).__name__
    if kind in ("Parameter", "Tensor"):
        raise Fail(f"torchao quantize_({how}()) left the weight a plain {kind}")
    err = rel_err(torch, got, want)
    if err > 0.05:
        raise Fail(f"the int8-quantized Linear on {ctx.device} is {err:.1%} off the float one "
                   "(int8 weights keep it within 5 %)")
    return (f"quantize_({how}()) made the weight {kind}; the int8 Linear on {ctx.device} is "
            f"within {err:.1e} of the float one")


def attention_reference(torch: Any, q: Any, k: Any, v: Any) -> Any:
    """softmax(q kᵀ / √d) v in float32, for (batch, sequence, heads, dim) tensors."""
    q32, k32, v32 = (t.float().transpose(1, 2) for t in (q, k, v))
    weights = torch.softmax(q32 @ k32.transpose(-1, -2) / math.sqrt(q.shape[-1]), dim=-1)
    return (weights @ v32).transpose(1, 2)


def _gpu_attention(ctx: Ctx, companion: dict[str, Any], what: str,
                   run: Callable[[Any, Any, Any, Any], Any]) -> str:
    torch = ctx.torch
    if not ctx.cuda:
        raise Skip(f"{what} runs only on a CUDA GPU; {NO_CUDA}")
    floor = companion.get("min_capability")
    capability = cuda_capability(torch, ctx)
    if floor and capability is not None:
        need = tuple(int(p) for p in str(floor).split(".")[:2])
        if capability < need:
            raise Skip(f"{what} needs compute capability {floor} or later (companion data); "
                       f"{ctx.device} is {capability[0]}.{capability[1]}")
    module = _companion_module(companion)
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 128, 4, 64, generator=g).to(ctx.device, torch.float16)
               for _ in range(3))
    got = run(module, q, k, v)
    torch.cuda.synchronize(ctx.device)
    want = attention_reference(torch, q, k, v)
    worst = float((got.float() - want).abs().max())
    if tuple(got.shape) != tuple(q.shape) or not worst <= 1e-2:
        raise Fail(f"{what} on {ctx.device} differs from softmax(qkᵀ/√d)v by up to {worst:.1e} "
                   "(fp16 keeps it within 1e-2)",
                   hint=f"reinstall {companion['name']} built for this torch and CUDA: "
                        f"{companion.get('install')}")
    return f"{what} on {ctx.device} (fp16, 2×128×4×64) within {worst:.1e} of the reference"


def op_memory_efficient_attention(ctx: Ctx, companion: dict[str, Any]) -> str:
    def run(xformers: Any, q: Any, k: Any, v: Any) -> Any:
        ops: Any = importlib.import_module("xformers.ops")
        return ops.memory_efficient_attention(q, k, v)
    return _gpu_attention(ctx, companion, "xformers.ops.memory_efficient_attention", run)


def op_flash_attn_func(ctx: Ctx, companion: dict[str, Any]) -> str:
    def run(flash_attn: Any, q: Any, k: Any, v: Any) -> Any:
        return flash_attn.flash_attn_func(q, k, v)
    return _gpu_attention(ctx, companion, "flash_attn.flash_attn_func", run)


def torch_pin(requirements: list[str]) -> Optional[str]:
    """The version an ``torch==X`` requirement pins (markers and extras aside); None when the
    requirements pin none. ``['torch==2.13.0', 'xgrammar; extra == "x"']`` → ``2.13.0``."""
    for line in requirements:
        text = line.split(";", 1)[0].strip()
        if ";" in line and "extra" in line.split(";", 1)[1]:
            continue
        m = re.fullmatch(r"torch\s*(?:\[[^\]]*\])?\s*\(?\s*===?\s*([^\s,)]+)\s*\)?", text)
        if m:
            return m.group(1)
    return None


def op_torch_pin(ctx: Ctx, companion: dict[str, Any]) -> str:
    """vLLM pins torch exactly: the pin its metadata declares must be the torch installed."""
    from importlib import metadata

    name = str(companion["name"])
    try:
        requires = metadata.requires(name) or []
    except metadata.PackageNotFoundError:
        raise Skip(f"not run: {name} is not installed (see companion:{name})") from None
    pin = torch_pin(list(requires))
    installed = str(ctx.torch.__version__)
    ctx.metrics.update(torch_pin=pin, torch=installed)
    if pin is None:
        raise Skip(f"{name}'s metadata pins no torch release")
    if installed.split("+", 1)[0] != pin.split("+", 1)[0]:
        raise Fail(f"{name} {distribution_version(name)} requires torch=={pin}, but torch "
                   f"{installed} is installed",
                   hint=f"install the torch {name} pins, or the {name} release made for torch "
                        f"{installed.split('+', 1)[0]}: {companion.get('install')}")
    return f"{name} pins torch=={pin}; torch {installed} is installed"


COMPANION_OPS: dict[str, tuple[str, Callable[[Ctx, dict[str, Any]], str]]] = {
    "torch_scatter": ("scatter", op_scatter),
    "torch_sparse": ("matmul", op_sparse_matmul),
    "torchao": ("quantize", op_torchao_quantize),
    "xformers": ("memory_efficient_attention", op_memory_efficient_attention),
    "flash_attn": ("flash_attn_func", op_flash_attn_func),
    "vllm": ("torch_pin", op_torch_pin),
}
"""Per import name: the small real operation that proves the companion works, and its check."""


def load_companion_checks() -> None:
    """Two checks per companion named in ``TORCHENV_VALIDATE_COMPANIONS``: ``companion:NAME``
    imports it, ``companion:NAME:OP`` runs its operation (where one is defined)."""
    raw = os.environ.get(COMPANIONS_ENV, "").strip()
    for companion in json.loads(raw) if raw else []:
        name = str(companion["name"])

        def imports(ctx: Ctx, companion: dict[str, Any] = companion) -> str:
            return check_companion_import(ctx, companion)
        SPECS.append(Spec(f"companion:{name}", imports, "quick", "any", True, COMPANION_TIMEOUT))
        op = COMPANION_OPS.get(str(companion["import"]))
        if op is not None:
            def operation(ctx: Ctx, companion: dict[str, Any] = companion,
                          fn: Callable[[Ctx, dict[str, Any]], str] = op[1]) -> str:
                return fn(ctx, companion)
            SPECS.append(Spec(f"companion:{name}:{op[0]}", operation, "quick", "any", True,
                              COMPANION_TIMEOUT))


# --------------------------------------------------------------------------------- serving

def load_extra_checks() -> None:
    for i, path in enumerate(p for p in os.environ.get(EXTRA_CHECKS_ENV, "").split(os.pathsep)
                             if p):
        spec = importlib.util.spec_from_file_location(f"torchenv_extra_checks_{i}", path)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load extra checks from {path}")
        module = importlib.util.module_from_spec(spec)
        module.Skip = Skip  # type: ignore[attr-defined]
        module.Fail = Fail  # type: ignore[attr-defined]
        spec.loader.exec_module(module)
        for attr, fn in vars(module).items():
            if attr.startswith("check_") and callable(fn):
                SPECS.append(Spec(attr[len("check_"):], fn, "quick", "any", True, 60.0))


def plan(torch: Any, n_cuda: int) -> list[dict[str, Any]]:
    """One entry per check to run, per GPU where the check's scope says so."""
    entries = []
    first = "cuda:0" if n_cuda else "cpu"
    for spec in SPECS:
        if spec.scope == "any":
            devices = [first]
        elif n_cuda:
            devices = [f"cuda:{i}" for i in range(n_cuda)]
        else:
            devices = ["cuda" if spec.scope == "gpu" else "cpu"]
        for dev in devices:
            name = spec.name if dev in ("cpu", "cuda", "cuda:0") or spec.scope == "any" \
                else f"{spec.name}[{dev}]"
            entries.append({"name": name, "check": spec.name, "device": dev,
                            "level": spec.level, "required": spec.required,
                            "timeout": spec.timeout})
    return entries


def run_one(torch: Any, entry: dict[str, Any], gpu: bool) -> dict[str, Any]:
    spec = next(s for s in SPECS if s.name == entry["check"])
    ctx = Ctx(torch, entry["device"], gpu)
    result: dict[str, Any] = {"name": entry["name"], "device": entry["device"],
                              "required": entry["required"]}
    start = time.monotonic()
    try:
        if spec.scope == "gpu" and entry["device"] == "cuda":
            raise Skip(NO_CUDA)
        if spec.needs.torch is not None or spec.needs.capability is not None:
            unmet = unmet_need(spec.needs, torch_version=str(torch.__version__),
                               device=ctx.device, capability=cuda_capability(torch, ctx))
            if unmet:
                raise Skip(unmet)
        detail = spec.fn(ctx)
        result["status"] = "pass"
        if detail:
            result["detail"] = detail
    except Skip as exc:
        result["status"] = "skip"
        result["reason"] = str(exc)
    except Fail as exc:
        result["status"] = "fail"
        result["error"] = str(exc)
        if exc.hint:
            result["hint"] = exc.hint
    except Exception as exc:
        result["status"] = "fail"
        result["error"] = f"{type(exc).__name__}: {exc}".strip()
        result["traceback"] = traceback.format_exc(limit=6)
        if poisons_context(str(exc)):
            result["poisoned"] = True
    result["seconds"] = round(time.monotonic() - start, 4)
    if ctx.poisoned:
        result["poisoned"] = True
    if ctx.cuda and not result.get("poisoned"):
        ctx.metrics.setdefault("gpu", gpu_identity(torch, _cuda_index(ctx)))
    if ctx.metrics:
        result["metrics"] = ctx.metrics
    return result


# CUDA errors after which the process's CUDA context is unusable: every later call fails with
# the same error, so the checks after it need a fresh process
_STICKY_ERRORS = ("illegal memory access", "illegal address", "illegal instruction",
                  "uncorrectable ecc error", "unspecified launch failure",
                  "device-side assert triggered", "misaligned address", "hardware stack error",
                  "cuda error: launch timed out")


def poisons_context(message: str) -> bool:
    """Whether an error leaves the CUDA context unusable for the rest of the process."""
    text = message.lower()
    return any(e in text for e in _STICKY_ERRORS)


def device_names(torch: Any, n_cuda: int) -> list[str]:
    """Each CUDA device's name: a MIG instance's says so (``NVIDIA A100-SXM4-40GB MIG 1g.5gb``)."""
    names = []
    for i in range(n_cuda):
        try:
            names.append(str(torch.cuda.get_device_name(i)))
        except Exception as exc:  # a device that cannot answer is named by its error
            names.append(f"cuda:{i} (name unreadable: {type(exc).__name__})")
    return names


def gpu_identity(torch: Any, index: int) -> dict[str, Any]:
    """Name, UUID and PCI bus id of ``cuda:index``: ``cuda:i`` alone is renumbered by
    CUDA_VISIBLE_DEVICES and by CUDA's device order."""
    ident: dict[str, Any] = {"index": index}
    try:
        props = torch.cuda.get_device_properties(index)
    except Exception:
        return ident
    ident["name"] = str(getattr(props, "name", "")) or None
    uuid = getattr(props, "uuid", None)
    if uuid is not None:
        ident["uuid"] = f"GPU-{uuid}" if not str(uuid).startswith("GPU-") else str(uuid)
    with contextlib.suppress(AttributeError, TypeError, ValueError):
        ident["pci_bus_id"] = (f"{int(props.pci_domain_id):08x}:{int(props.pci_bus_id):02x}:"
                               f"{int(props.pci_device_id):02x}.0")
    return ident


def nccl_facts() -> dict[str, Any]:
    """The hello's word on NCCL: ``nccl_available`` (the build has torch.distributed and NCCL),
    or ``distributed_error`` when torch.distributed cannot even be imported. That is a broken
    build, not one without NCCL: the hello then leaves ``nccl_available`` out, so the NCCL
    checks run and fail with the error instead of being skipped as absent."""
    try:
        dist: Any = importlib.import_module("torch.distributed")
    except Exception as exc:
        return {"distributed_error": f"{type(exc).__name__}: {exc}"}
    return {"nccl_available": bool(dist.is_available() and dist.is_nccl_available())}


def main() -> int:
    global CUDA_INIT_ERROR
    sys.dont_write_bytecode = True
    die_with_parent()
    proto = io.TextIOWrapper(os.fdopen(os.dup(1), "wb"), encoding="utf-8",
                             line_buffering=True)
    os.dup2(2, 1)  # stray prints go to stderr, never into the protocol
    sys.stdout = sys.stderr

    def send(doc: dict[str, Any]) -> None:
        proto.write(json.dumps(doc) + "\n")
        proto.flush()

    hello: dict[str, Any] = {"event": "hello", "python": sys.executable,
                             "python_version": sys.version.split()[0]}
    start = time.monotonic()
    try:
        warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
        torch = importlib.import_module("torch")
    except BaseException as exc:  # ImportError, OSError (undefined symbol), SystemExit ...
        hello["import_error"] = f"{type(exc).__name__}: {exc}"
        send(hello)
        return 0
    hello["import_seconds"] = round(time.monotonic() - start, 3)
    gpu = gpu_host()
    start = time.monotonic()  # CUDA's first initialisation can take long: timed on its own
    n_cuda, CUDA_INIT_ERROR = cuda_init(torch)
    hello["cuda_init_seconds"] = round(time.monotonic() - start, 3)
    hello["cuda_init_error"] = CUDA_INIT_ERROR
    hello.update(nccl_facts())
    try:
        load_extra_checks()
    except Exception as exc:
        hello["extra_checks_error"] = f"{type(exc).__name__}: {exc}"
    load_companion_checks()
    hello.update({"torch": torch.__version__, "cuda": torch.version.cuda, "gpu_host": gpu,
                  "cuda_devices": n_cuda, "cuda_device_names": device_names(torch, n_cuda),
                  "checks": plan(torch, n_cuda)})
    send(hello)
    entries = {e["name"]: e for e in hello["checks"]}
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        request = json.loads(line)
        if request.get("quit"):
            break
        entry = entries[request["run"]]
        send({"event": "start", "name": entry["name"]})
        send({"event": "result", **run_one(torch, entry, gpu)})
    proto.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
