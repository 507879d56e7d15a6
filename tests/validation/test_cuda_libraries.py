"""The probe's judgement of the CUDA libraries a torch loads (cuDNN, NCCL, the CUDA runtime,
cuBLAS) and of the CUDA extension build, on a machine without a GPU.

The runtime and cuBLAS are read from the libraries mapped into the process, so the library
cases load stand-ins built from C here (``fake_cuda_libraries.c``) into a child and let the
probe find and query them through ctypes, as it does the real ones; pip's wheels are real
``.dist-info`` folders on the child's path.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable, Optional

import pytest

from torchenv.validation import _probe

HERE = Path(__file__).resolve().parent


def _entry(name: str, device: str = "cpu") -> dict[str, Any]:
    return {"name": name, "check": name, "device": device, "required": True}


class _Namespace:
    def __init__(self, **attrs: Any) -> None:
        self.__dict__.update(attrs)


def _nccl(answer: Callable[[], Any], *, built_in: bool = True) -> Any:
    """A CUDA build whose ``torch.cuda.nccl.version()`` is ``answer``; with ``built_in``
    False, ``torch._C`` has no ``_nccl_version`` (a build without NCCL)."""
    c_attrs = {"_nccl_version": answer} if built_in else {}
    return _Namespace(
        __version__="2.7.1+cu126", _C=_Namespace(**c_attrs),
        version=_Namespace(cuda="12.6", hip=None),
        backends=_Namespace(cudnn=_Namespace(is_available=lambda: False)),
        cuda=_Namespace(nccl=_Namespace(version=answer), get_arch_list=lambda: ["sm_90"],
                        is_available=lambda: False))


def _raise(exc: BaseException) -> Callable[[], Any]:
    def answer() -> Any:
        raise exc
    return answer


@pytest.mark.parametrize(("torch", "want"), [
    (_nccl(lambda: (2, 21, 5)), ((2, 21, 5), None)),
    (_nccl(lambda: (2, 27, 3, "a")), ((2, 27, 3), None)),
    (_nccl(lambda: 2708), ((2708,), None)),
    (_nccl(_raise(AttributeError("x")), built_in=False), (None, None)),
    (_nccl(_raise(RuntimeError("NCCL error in: nccl.cpp:41, unhandled system error"))),
     (None, "RuntimeError: NCCL error in: nccl.cpp:41, unhandled system error")),
    (_nccl(_raise(OSError("libnccl.so.2: cannot open shared object file"))),
     (None, "OSError: libnccl.so.2: cannot open shared object file")),
], ids=["tuple", "suffix", "old-int", "not-built-in", "broken", "unloadable"])
def test_nccl_absent_and_nccl_broken_are_told_apart(
        torch: Any, want: tuple[Optional[tuple[int, ...]], Optional[str]]) -> None:
    assert _probe.nccl_version(torch) == want


def test_a_bug_in_reading_nccl_surfaces_as_a_bug() -> None:
    """Only the failures of a broken library are caught; anything else is not 'no NCCL'."""
    with pytest.raises(TypeError):
        _probe.nccl_version(_nccl(_raise(TypeError("bug"))))


def test_a_broken_nccl_is_reported_as_broken_by_build_and_fails_the_library_check() -> None:
    torch = _nccl(_raise(RuntimeError("NCCL error: unhandled system error")))
    build = _probe.run_one(torch, _entry("build"), False)
    assert build["status"] == "pass", build
    assert "NCCL unreadable (RuntimeError: NCCL error: unhandled system error)" \
        in build["detail"]
    assert "no NCCL" not in build["detail"]
    libs = _probe.run_one(torch, _entry("cuda_libraries"), False)
    assert libs["status"] == "fail", libs
    assert "NCCL is built in but cannot say its version: RuntimeError" in libs["error"]
    absent = _probe.run_one(_nccl(_raise(AttributeError("x")), built_in=False),
                            _entry("build"), False)
    assert "no NCCL" in absent["detail"], absent


_MAPS = """\
55d0c0a00000-55d0c0a01000 r--p 00000000 103:02 11  /usr/bin/python3.12
7f3a1b000000-7f3a1b200000 r-xp 00000000 103:02 12  /v/nvidia/cublas/lib/libcublasLt.so.12
7f3a1c000000-7f3a1c0b2000 r--p 00000000 103:02 13  /v/nvidia/cuda_runtime/lib/libcudart.so.12
7f3a1c0b2000-7f3a1c0c2000 r-xp 000b2000 103:02 13  /v/nvidia/cuda_runtime/lib/libcudart.so.12
7f3a1d000000-7f3a1d100000 r-xp 00000000 103:02 14  /opt/my cuda/lib64/libcublas.so.12.8.4.1
7f3a1e000000-7f3a1e021000 rw-p 00000000 00:00 0
7ffd5b1d2000-7ffd5b1f3000 rw-p 00000000 00:00 0  [stack]
"""


def test_the_loaded_cuda_libraries_are_found_in_the_process_map() -> None:
    assert _probe.mapped_libraries(_MAPS) == {
        "cudart": "/v/nvidia/cuda_runtime/lib/libcudart.so.12",
        "cublas": "/opt/my cuda/lib64/libcublas.so.12.8.4.1"}
    assert _probe.mapped_libraries(_MAPS.replace("libcublas.so", "libcublasXt.so")) == {
        "cudart": "/v/nvidia/cuda_runtime/lib/libcudart.so.12"}


@pytest.mark.parametrize(("compiled", "runtime", "ok"), [
    ((12, 8), (12, 8), True), ((12, 6), (12, 8), True), ((12, 8), (12, 4), False),
    ((12, 8), (13, 0), False), ((11, 8), (12, 1), False),
], ids=["same", "newer-minor", "older-minor", "newer-major", "other-major"])
def test_the_cuda_runtime_must_serve_the_build(compiled: tuple[int, int],
                                                runtime: tuple[int, int], ok: bool) -> None:
    problem = _probe.runtime_mismatch(compiled, runtime, "/lib/libcudart.so.12")
    assert (problem is None) is ok, problem


@pytest.mark.parametrize(("compiled", "cublas", "ok"), [
    ((12, 8), (12, 8, 4), True), ((12, 8), (12, 4, 5), True), ((12, 8), (11, 11, 3), False),
], ids=["same", "other-minor", "other-major"])
def test_cublas_must_come_from_the_builds_cuda_major(compiled: tuple[int, int],
                                                     cublas: tuple[int, int, int],
                                                     ok: bool) -> None:
    problem = _probe.cublas_mismatch(compiled, cublas, "/lib/libcublas.so.12")
    assert (problem is None) is ok, problem


@pytest.fixture(scope="module")
def stand_ins(tmp_path_factory: pytest.TempPathFactory) -> Path:
    compiler = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if compiler is None or not sys.platform.startswith("linux"):
        pytest.skip("the stand-in CUDA libraries are Linux shared objects built with a C "
                    "compiler")
    out = tmp_path_factory.mktemp("fake-cuda")
    for name, flag in (("libcudart.so.12", "CUDART"), ("libcublas.so.12", "CUBLAS")):
        subprocess.run([compiler, "-shared", "-fPIC", f"-DSTAND_IN_{flag}", "-o",
                        str(out / name), str(HERE / "fake_cuda_libraries.c")],
                       check=True, capture_output=True, timeout=60)
    return out


_CHILD = """
import ctypes, json, sys
libs, site = sys.argv[1], sys.argv[2]
for name in ("libcudart.so.12", "libcublas.so.12"):
    ctypes.CDLL(f"{libs}/{name}")  # loaded, as torch's own libraries are at import
sys.path.insert(0, site)
from torchenv.validation import _probe

class Ns:
    def __init__(self, **attrs):
        self.__dict__.update(attrs)

torch = Ns(__version__="2.7.1+cu128", _C=Ns(), version=Ns(cuda="12.8", hip=None))
print(json.dumps(_probe.run_one(torch, {"name": "cuda_libraries", "check": "cuda_libraries",
                                        "device": "cpu", "required": True}, False)))
"""


def _libraries_check(stand_ins: Path, tmp_path: Path, *, cudart: str, cublas: str,
                     wheels: tuple[tuple[str, str], ...] = ()) -> dict[str, Any]:
    site = tmp_path / "site"
    site.mkdir()
    for name, version in wheels:  # what pip leaves behind for an installed wheel
        info = site / f"{name.replace('-', '_')}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\n"
                                       f"Version: {version}\n")
    env = {"PATH": "/usr/bin:/bin", "FAKE_CUDART_VERSION": cudart,
           "FAKE_CUBLAS_VERSION": cublas, "PYTHONPATH": str(Path(_probe.__file__).parents[2])}
    proc = subprocess.run([sys.executable, "-c", _CHILD, str(stand_ins), str(site)], env=env,
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


def test_the_runtime_and_cublas_that_serve_the_build_pass(stand_ins: Path,
                                                          tmp_path: Path) -> None:
    result = _libraries_check(stand_ins, tmp_path, cudart="12080", cublas="12.8.4",
                              wheels=(("nvidia-cuda-runtime-cu12", "12.8.90"),
                                      ("nvidia-cublas-cu11", "11.11.3.6"),
                                      ("nvidia-cublas-cu12", "12.8.4.1")))
    assert result["status"] == "pass", result
    assert "CUDA runtime 12.8 (built with CUDA 12.8)" in result["detail"]
    assert "cuBLAS 12.8.4 (built with CUDA 12.8)" in result["detail"]
    assert result["metrics"] == {"cuda": "12.8", "cudart": "12.8", "cublas": "12.8.4"}


@pytest.mark.parametrize(("cudart", "cublas", "wheels", "error"), [
    ("12040", "12.4.5", (), "the CUDA runtime 12.4 is loaded ({libs}/libcudart.so.12), but "
                            "torch was built with CUDA 12.8"),
    ("12080", "11.11.3", (), "cuBLAS 11.11.3 is loaded ({libs}/libcublas.so.12), but torch "
                             "was built with CUDA 12.8"),
    ("12090", "12.4.5", (("nvidia-cublas-cu12", "12.8.4.1"),),
     "cuBLAS 12.4 is loaded, but pip's nvidia-cublas-cu12 is 12.8.4.1 "
     "({libs}/libcublas.so.12 comes first)"),
    ("12080", "", (), "the loaded cuBLAS ({libs}/libcublas.so.12) cannot say its version: "
                      "cublasGetProperty returned error 1"),
], ids=["runtime-older-than-build", "cublas-of-cuda-11", "cublas-shadows-the-wheel",
        "cublas-cannot-answer"])
def test_a_runtime_or_cublas_that_does_not_serve_the_build_fails(
        stand_ins: Path, tmp_path: Path, cudart: str, cublas: str,
        wheels: tuple[tuple[str, str], ...], error: str) -> None:
    result = _libraries_check(stand_ins, tmp_path, cudart=cudart, cublas=cublas, wheels=wheels)
    assert result["status"] == "fail", result
    assert error.format(libs=stand_ins) in result["error"], result["error"]
    assert "LD_LIBRARY_PATH" in result["hint"]


def test_a_cpu_build_skips_the_cuda_extension_saying_why() -> None:
    """The real torch of this machine (a CPU build): no CUDA extension can be built."""
    torch = pytest.importorskip("torch")
    if torch.version.cuda:
        pytest.skip("this torch is a CUDA build; the gpu-marked test covers it")
    result = _probe.run_one(torch, _entry("cuda_extension"), False)
    assert result["status"] == "skip", result
    assert result["reason"] == "a CPU-only build of torch cannot build CUDA extensions"


def _cuda_torch(hip: Optional[str] = None) -> Any:
    return _Namespace(version=_Namespace(cuda="12.8", hip=hip))


@pytest.mark.parametrize(("torch", "device", "home", "reason"), [
    (_cuda_torch(), "cuda:0", None, "no CUDA toolkit with nvcc (torch looks in CUDA_HOME"),
    (_cuda_torch(), "cuda:0", "/nonexistent/cuda", "no CUDA toolkit with nvcc"),
    (_cuda_torch(), "cpu", "/usr/local/cuda", "no CUDA device: the compiled kernel has nowhere"),
    (_cuda_torch("6.4.1"), "cuda:0", "/opt/rocm", "a ROCm build"),
], ids=["no-toolkit", "toolkit-without-nvcc", "no-device", "rocm"])
def test_what_keeps_a_cuda_extension_from_being_built_is_named(
        torch: Any, device: str, home: Optional[str], reason: str) -> None:
    assert (_probe.cuda_extension_unmet(torch, device, home) or "").startswith(reason)


def test_a_toolkit_with_nvcc_and_a_compiler_can_build(tmp_path: Path) -> None:
    if not (shutil.which("c++") or shutil.which("g++")):
        pytest.skip("no C++ compiler")
    nvcc = tmp_path / "cuda" / "bin" / "nvcc"
    nvcc.parent.mkdir(parents=True)
    nvcc.write_text("#!/bin/sh\n")
    assert _probe.cuda_extension_unmet(_cuda_torch(), "cuda:0", str(tmp_path / "cuda")) is None


def test_a_torch_distributed_that_cannot_be_imported_is_not_taken_for_no_nccl(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The hello then leaves nccl_available out (the runner takes it as available), so the NCCL
    checks run and fail with the error rather than skip as 'no NCCL'."""
    from torchenv.validation.collectives import nccl_unavailable

    pytest.importorskip("torch")
    monkeypatch.setitem(sys.modules, "torch.distributed", None)
    facts = _probe.nccl_facts()
    assert "nccl_available" not in facts, facts
    assert facts["distributed_error"].startswith("ModuleNotFoundError: import of "
                                                 "torch.distributed halted"), facts
    available = bool(facts.get("nccl_available", True))  # as the runner reads the hello
    assert nccl_unavailable(cuda_devices=2, nccl_available=available) is None
    monkeypatch.undo()
    assert set(_probe.nccl_facts()) == {"nccl_available"}
