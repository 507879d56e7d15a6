"""Shared helpers for the torchenv benchmarks: alternating child-process timing and a table.

Every case is a command line run as a fresh child process with stdout/stderr discarded. Cases are
run round-robin (A B C A B C ...) so that drift in machine load hits every case alike; one warm-up
round runs first and is not counted. Times are wall-clock milliseconds from ``time.perf_counter``
around ``subprocess.run``.
"""

from __future__ import annotations

import argparse
import atexit
import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

REPO = Path(__file__).resolve().parents[1]


def _console_script(name: str) -> str:
    """The ``name`` console script installed with the running interpreter's torchenv."""
    exe = name + (".exe" if os.name == "nt" else "")
    for folder in (Path(sys.executable).parent, Path(sysconfig.get_path("scripts"))):
        if (folder / exe).is_file():
            return str(folder / exe)
    return shutil.which(name) or str(Path(sys.executable).parent / exe)


# The interpreter the benchmark runs under is the one measured: run a script with the Python
# whose environment has torchenv installed (``python bench/bench_startup.py``).
PYTHON = sys.executable
TORCHENV = _console_script("torchenv")

DEFAULT_RUNS = 15


# Children get a bytecode cache outside the repository (PYTHONPYCACHEPREFIX), so that torchenv's
# own modules are loaded from .pyc as in an installed wheel even where PYTHONDONTWRITEBYTECODE is
# set (some CI images set it, and an editable install has no __pycache__, so every run would
# otherwise recompile ~40 torchenv modules: ~30 ms). ``--no-pyc`` keeps the caller's setting.
PYCACHE_PREFIX = Path(tempfile.gettempdir()) / "torchenv-bench-pycache"
USE_PYC = True
# Children run in an empty directory: ``resolve`` reads ./pyproject.toml ([tool.torchenv]) and
# would otherwise pay for tomllib whenever the benchmark is started from a project folder.
CHILD_CWD: Optional[str] = None


def set_options(*, pyc: bool = True, cwd: Optional[str] = None) -> None:
    global USE_PYC, CHILD_CWD
    USE_PYC = pyc
    if cwd is None:
        cwd = tempfile.mkdtemp(prefix="torchenv-bench-cwd-")
        atexit.register(shutil.rmtree, cwd, True)
    CHILD_CWD = cwd


def child_cwd() -> str:
    if CHILD_CWD is None:
        set_options(pyc=USE_PYC)
    assert CHILD_CWD is not None
    return CHILD_CWD


def bench_env() -> dict[str, str]:
    """The environment children run in: ours, minus anything that would skew a measurement."""
    env = dict(os.environ)
    for var in ("PYTHONPROFILEIMPORTTIME", "PYTHONTRACEMALLOC", "PYTHONDEVMODE", "PYTHONVERBOSE"):
        env.pop(var, None)
    if USE_PYC:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(PYCACHE_PREFIX)
    return env


def describe() -> str:
    mode = (f"bytecode cached under {PYCACHE_PREFIX}" if USE_PYC else
            "bytecode as the environment has it (PYTHONDONTWRITEBYTECODE="
            f"{os.environ.get('PYTHONDONTWRITEBYTECODE', '')!r})")
    return f"python: {PYTHON}\nchildren: {mode}; cwd {child_cwd()}"


def add_common_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--runs", type=int, default=DEFAULT_RUNS,
                   help=f"measured runs per case (default {DEFAULT_RUNS}); one extra warm-up")
    p.add_argument("--no-pyc", action="store_true",
                   help="do not give children a bytecode cache (keeps PYTHONDONTWRITEBYTECODE)")
    p.add_argument("--cwd", default=None,
                   help="directory children run in (default: a fresh empty temp dir)")


def parse_args(description: str, argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=description)
    add_common_args(p)
    args = p.parse_args(argv)
    set_options(pyc=not args.no_pyc, cwd=args.cwd)
    return args


def time_once(argv: Sequence[str], env: Optional[Mapping[str, str]] = None) -> float:
    """Wall ms of one child run; raises if the child fails (exit status other than 0 or 3)."""
    t0 = time.perf_counter()
    proc = subprocess.run(list(argv), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          env=dict(env) if env is not None else bench_env(), cwd=child_cwd())
    dt = (time.perf_counter() - t0) * 1000.0
    if proc.returncode not in (0, 3):  # 3 = "nothing satisfies the request", still a result
        raise RuntimeError(f"{' '.join(argv)} exited {proc.returncode}: "
                           f"{proc.stderr.decode(errors='replace')[-500:]}")
    return dt


def alternate(cases: Mapping[str, Sequence[str]], runs: int = DEFAULT_RUNS, warmup: int = 1,
              env: Optional[Mapping[str, str]] = None) -> dict[str, list[float]]:
    """Run every case ``runs`` times, interleaved; returns case -> list of wall ms."""
    env = env if env is not None else bench_env()
    for _ in range(warmup):
        for argv in cases.values():
            time_once(argv, env)
    out: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(runs):
        for name, argv in cases.items():
            out[name].append(time_once(argv, env))
    return out


def child_value(argv: Sequence[str], env: Optional[Mapping[str, str]] = None) -> float:
    """Run a child that prints one number as its last stdout line; return that number."""
    proc = subprocess.run(list(argv), capture_output=True, text=True,
                          env=dict(env) if env is not None else bench_env(), cwd=child_cwd(),
                          check=True)
    return float(proc.stdout.strip().splitlines()[-1])


def median(xs: Sequence[float]) -> float:
    return statistics.median(xs)


@dataclass
class Row:
    case: str
    runs: int
    median_ms: Optional[float]
    min_ms: Optional[float]
    target: str
    verdict: str  # "PASS", "FAIL", "info", or a note


def row(case: str, xs: Sequence[float], target: str = "-", ok: Optional[bool] = None,
        note: str = "", second: Callable[[Sequence[float]], float] = min) -> Row:
    """A table row; ``second`` picks the second value column (min for times, max for memory)."""
    verdict = "info" if ok is None else ("PASS" if ok else "FAIL")
    if note:
        verdict = f"{verdict} ({note})"
    return Row(case, len(xs), median(xs) if xs else None, second(xs) if xs else None, target,
               verdict)


def print_table(rows: Sequence[Row], title: str = "",
                columns: tuple[str, str] = ("median ms", "min ms")) -> None:
    header = ("case", "runs", columns[0], columns[1], "target", "verdict")
    cells = [header] + [
        (r.case, str(r.runs),
         "-" if r.median_ms is None else f"{r.median_ms:.1f}",
         "-" if r.min_ms is None else f"{r.min_ms:.1f}",
         r.target, r.verdict)
        for r in rows
    ]
    widths = [max(len(c[i]) for c in cells) for i in range(len(header))]
    if title:
        print(f"\n{title}")
    for n, c in enumerate(cells):
        print("  ".join(s.ljust(w) if i in (0, 4, 5) else s.rjust(w)
                        for i, (s, w) in enumerate(zip(c, widths))).rstrip())
        if n == 0:
            print("  ".join("-" * w for w in widths))
    sys.stdout.flush()


# --- helpers shared by the benchmarks that fake hardware (bench_peers, bench_scaling) ----------

FAKE_NVML_SOURCE = REPO / "tests" / "detection" / "fake_nvml.c"

# Variables that would change what a child detects or how a peer tool decides: GPU selection,
# the dynamic loader's path (a stand-in libnvidia-ml), the stand-in's own settings, torchenv's and
# uv's overrides (TORCHENV_DRIVER_VERSION, UV_CUDA_DRIVER_VERSION, UV_TORCH_BACKEND, ...).
_HARDWARE_VARS = ("LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES",
                  "ROCR_VISIBLE_DEVICES", "HSA_OVERRIDE_GFX_VERSION", "ROCM_PATH")
_HARDWARE_PREFIXES = ("FAKE_NVML_", "TORCHENV_", "UV_")


def clean_env(**extra: str) -> dict[str, str]:
    """:func:`bench_env` without anything that selects or overrides hardware, plus ``extra``."""
    env = {k: v for k, v in bench_env().items()
           if k not in _HARDWARE_VARS and not k.startswith(_HARDWARE_PREFIXES)}
    env.update(extra)
    return env


def build_fake_nvml(out_dir: Path) -> Optional[Path]:
    """Compile the stand-in libnvidia-ml.so.1 (tests/detection/fake_nvml.c) into ``out_dir``;
    None when there is no C compiler or it fails (the caller skips its NVML cases)."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None or not FAKE_NVML_SOURCE.is_file():
        return None
    lib = out_dir / "libnvidia-ml.so.1"
    proc = subprocess.run([cc, "-shared", "-fPIC", "-O1", "-o", str(lib), str(FAKE_NVML_SOURCE)],
                          capture_output=True, text=True)
    return lib if proc.returncode == 0 else None


@dataclass
class Outcome:
    """One bounded child run: wall ms, exit status, whether it was killed at the time limit."""

    ms: float
    returncode: Optional[int]
    timed_out: bool
    stdout: str = ""
    stderr: str = ""


def run_bounded(argv: Sequence[str], env: Mapping[str, str], *, timeout: float,
                capture: bool = False) -> Outcome:
    """Run ``argv`` in a session of its own; at ``timeout`` seconds kill the whole process group
    (the tool and any nvidia-smi it is waiting on). stdout is discarded unless ``capture``."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(list(argv), stdout=subprocess.PIPE if capture else subprocess.DEVNULL,
                            stderr=subprocess.PIPE, env=dict(env), cwd=child_cwd(),
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        out, err = proc.communicate()
        timed_out = True
    ms = (time.perf_counter() - t0) * 1000.0
    return Outcome(ms, None if timed_out else proc.returncode, timed_out,
                   (out or b"").decode(errors="replace"), (err or b"").decode(errors="replace"))


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    import signal

    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()


def paired_ratio(numerator: Sequence[float], denominator: Sequence[float]) -> Optional[float]:
    """The median over rounds of numerator[i] / denominator[i] (runs taken in the same round)."""
    pairs = [a / b for a, b in zip(numerator, denominator) if b > 0]
    return statistics.median(pairs) if pairs else None


def print_grid(header: Sequence[str], rows: Sequence[Sequence[str]], title: str = "",
               left: Sequence[int] = (0,)) -> None:
    """A plain text table; columns whose index is in ``left`` are left-aligned, others right."""
    cells = [list(header)] + [list(r) for r in rows]
    widths = [max(len(c[i]) for c in cells) for i in range(len(header))]
    if title:
        print(f"\n{title}")
    for n, c in enumerate(cells):
        print("  ".join(s.ljust(w) if i in left else s.rjust(w)
                        for i, (s, w) in enumerate(zip(c, widths))).rstrip())
        if n == 0:
            print("  ".join("-" * w for w in widths))
    sys.stdout.flush()
