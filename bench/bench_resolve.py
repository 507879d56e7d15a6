"""Resolve benchmarks: ``resolve --json`` end to end and where its time goes, a full in-process
sweep, peak RSS.

Usage: python bench/bench_resolve.py [--runs N] [--sweep-runs N] [--rss-runs N]
                                     [--no-pyc] [--cwd DIR]

Targets
  * ``python -m torchenv resolve --json`` and ``torchenv resolve --json`` (detection included):
    median wall <= 2.5x the median of ``python -c "import packaging.version, yaml"`` (the
    budget; the goal is 2x, shown beside it), measured alternately in the same run.
  * every platform x every Python version the matrix knows x 6 hardware profiles, resolved
    in-process (Overrides.from_sources + apply_overrides + resolve; NoMatch counts as a result):
    <= 1 s per sweep. The matrix is loaded once, outside the timed sweep (reported separately).
  * (information) where the time goes, each line adding to the one before: the interpreter;
    importing every module ``resolve --json`` loads from outside torchenv (found by running it);
    then torchenv's own modules too, doing nothing (with what re-creating its dataclasses costs,
    in-process); then the whole command (the difference is the work: matrix, detection,
    decision, JSON).
  * peak RSS of ``torchenv resolve --json``: <= 60 MB (ru_maxrss of the child, read in a fresh
    wrapper process via resource.getrusage(RUSAGE_CHILDREN); /usr/bin/time -v as a cross-check).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from torchenv.matrix.model import Matrix

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _timing import (
    PYTHON,
    TORCHENV,
    add_common_args,
    alternate,
    bench_env,
    child_cwd,
    describe,
    median,
    print_table,
    row,
    set_options,
)

RATIO_BUDGET = 2.5
"""The start-up budget: a run fails above this many times the baseline."""
RATIO_GOAL = 2.0
"""The goal within the budget, reported beside it."""
SWEEP_TARGET_MS = 1000.0
RSS_TARGET_MB = 60.0
BASELINE_SRC = "import packaging.version, yaml"

# name -> Overrides.from_sources keyword arguments describing the accelerator
HARDWARE: dict[str, dict[str, object]] = {
    "cpu-only": {"no_gpu": True},
    "nvidia-pascal-old-driver": {"driver": "470.82.01", "gpus": ["6.1"]},
    "nvidia-ampere": {"driver": "535.54.03", "gpus": ["8.6"]},
    "nvidia-hopper": {"driver": "550.54.15", "gpus": ["9.0"]},
    "nvidia-blackwell": {"driver": "580.65.06", "gpus": ["12.0"]},
    "amd-rdna3": {"rocm_archs": ["gfx1100"]},
}

RSS_WRAPPER = """\
import resource, subprocess, sys
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""


def _py_key(v: str) -> tuple[int, int, bool]:
    major, minor = v.rstrip("t").split(".")
    return int(major), int(minor), v.endswith("t")


def sweep_cases(matrix: Matrix) -> tuple[list[str], list[str], list[str]]:
    from torchenv.matrix.model import PLATFORMS

    pythons: set[str] = set()
    for rel in matrix.releases:
        for tags in rel.python.values():
            pythons.update(tags)
        for var in rel.variants:
            for tags in var.python.values():
                pythons.update(tags)
    return list(PLATFORMS), sorted(pythons, key=_py_key), list(HARDWARE)


def run_sweep(matrix: Matrix, platforms: list[str], pythons: list[str], profiles: list[str]
              ) -> tuple[float, dict[str, int], dict[str, str]]:
    """One full sweep; returns (wall ms, counts by outcome, first error text per kind)."""
    from torchenv.detection.detect import apply_overrides
    from torchenv.detection.overrides import Overrides
    from torchenv.detection.profile import HostProfile, PythonInfo
    from torchenv.resolver import NoMatch, Request, resolve
    from torchenv.values import Platform

    base = HostProfile(platform=Platform("linux-x86_64"), python=PythonInfo(version="3.11"),
                       os="linux", machine="x86_64", glibc="2.35")
    request = Request()
    counts = {"plan": 0, "nomatch": 0, "error": 0}
    errors: dict[str, str] = {}
    t0 = time.perf_counter()
    for plat in platforms:
        glibc = "2.35" if plat.startswith("linux") else None
        for py in pythons:
            for hw in profiles:
                try:
                    ov = Overrides.from_sources(platform=plat, python=py, glibc=glibc,
                                                **HARDWARE[hw])  # type: ignore[arg-type]
                    host = apply_overrides(base, ov)
                    resolve(request, host, matrix)
                    counts["plan"] += 1
                except NoMatch:
                    counts["nomatch"] += 1
                except Exception as exc:
                    counts["error"] += 1
                    errors.setdefault(type(exc).__name__, f"{plat}/{py}/{hw}: {exc}")
    return (time.perf_counter() - t0) * 1000.0, counts, errors


def bench_sweep(sweep_runs: int) -> list:  # type: ignore[type-arg]
    t0 = time.perf_counter()
    from torchenv.matrix.loader import load_built, load_matrix

    matrix = load_matrix(overlay=False)
    load_ms = (time.perf_counter() - t0) * 1000.0
    used_built = load_built() is not None
    platforms, pythons, profiles = sweep_cases(matrix)
    n = len(platforms) * len(pythons) * len(profiles)
    print(f"sweep: {len(platforms)} platforms x {len(pythons)} Pythons ({', '.join(pythons)}) x "
          f"{len(profiles)} hardware profiles = {n} resolves; matrix {matrix.matrix_version}, "
          f"{len(matrix.releases)} releases, built.json used: {used_built}, "
          f"import+load_matrix {load_ms:.1f} ms (not in the sweep time)")

    first_ms, counts, errors = run_sweep(matrix, platforms, pythons, profiles)
    times = [first_ms] + [run_sweep(matrix, platforms, pythons, profiles)[0]
                          for _ in range(max(sweep_runs - 1, 0))]
    print(f"outcomes per sweep: {counts['plan']} plans, {counts['nomatch']} NoMatch, "
          f"{counts['error']} other errors")
    for kind, text in errors.items():
        print(f"  first {kind}: {text}")
    per = median(times) / n * 1000.0
    ok = max(times) <= SWEEP_TARGET_MS and counts["error"] == 0
    note = f"{per:.0f} us/resolve" + (f", {counts['error']} errors" if counts["error"] else "")
    return [
        row(f"in-process sweep ({n} resolves), first (cold) run", [first_ms],
            f"<= {SWEEP_TARGET_MS:.0f} ms", first_ms <= SWEEP_TARGET_MS and not counts["error"]),
        row(f"in-process sweep ({n} resolves), all runs", times,
            f"<= {SWEEP_TARGET_MS:.0f} ms", ok, note),
    ]


def rss_kb(argv: list[str]) -> int:
    out = subprocess.run([PYTHON, "-c", RSS_WRAPPER, *argv], capture_output=True, text=True,
                         env=bench_env(), cwd=child_cwd(), check=True).stdout
    return int(out.strip().splitlines()[-1])


def time_v_kb(argv: list[str]) -> int | None:
    tool = "/usr/bin/time"
    if not os.path.exists(tool):
        return None
    proc = subprocess.run([tool, "-v", *argv], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True, env=bench_env(), cwd=child_cwd())
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr)
    return int(m.group(1)) if m else None


def bench_rss(rss_runs: int) -> list:  # type: ignore[type-arg]
    cases = {
        "peak RSS: python -c pass": [PYTHON, "-c", "pass"],
        "peak RSS: baseline import packaging.version, yaml": [PYTHON, "-c", BASELINE_SRC],
        "peak RSS: torchenv resolve --json": [TORCHENV, "resolve", "--json"],
        "peak RSS: python -m torchenv resolve --json": [PYTHON, "-m", "torchenv", "resolve",
                                                        "--json"],
    }
    rows = []
    for name, argv in cases.items():
        rss_kb(argv)  # warm-up: fills the bytecode cache
        mb = [rss_kb(argv) / 1024.0 for _ in range(rss_runs)]
        tv = time_v_kb(argv)
        note = f"/usr/bin/time -v: {tv / 1024.0:.1f} MB" if tv is not None else ""
        if "resolve" in name:
            rows.append(row(name, mb, f"<= {RSS_TARGET_MB:.0f} MB", max(mb) <= RSS_TARGET_MB,
                            note, second=max))
        else:
            rows.append(row(name, mb, note=note, second=max))
    return rows


# Run in a child: the modules ``resolve --json`` loads (top-level names outside torchenv, full
# names inside), and the cost of creating its dataclasses again with the same fields and options.
MODULES_PROBE = """\
import sys
before = set(sys.modules)
import io
from torchenv.cli import main
stdout, sys.stdout = sys.stdout, io.StringIO()
main(["resolve", "--json"])
sys.stdout = stdout
loaded = sorted(set(sys.modules) - before)
import dataclasses, json, time
own = [m for m in loaded if m.split(".")[0] == "torchenv"]
others = sorted({m.split(".")[0] for m in loaded if m.split(".")[0] != "torchenv"
                 and not m.startswith("_")})
classes = [c for m in own for c in vars(sys.modules[m]).values()
           if isinstance(c, type) and dataclasses.is_dataclass(c) and c.__module__ == m]
t0 = time.perf_counter()
for c in classes:
    p = c.__dataclass_params__
    dataclasses.make_dataclass(c.__name__, [(f.name, f.type, f) for f in dataclasses.fields(c)],
                               frozen=p.frozen, order=p.order, eq=p.eq)
ms = (time.perf_counter() - t0) * 1000.0
print(json.dumps({"own": own, "others": others, "dataclasses": len(classes), "ms": ms}))
"""


def bench_parts(runs: int) -> list:  # type: ignore[type-arg]
    """Where ``resolve --json``'s time goes: the interpreter, the modules it loads from outside
    torchenv, torchenv's own modules (of which re-creating its dataclasses), and the work."""
    import json

    found = json.loads(subprocess.run([PYTHON, "-c", MODULES_PROBE], capture_output=True,
                                      text=True, env=bench_env(), cwd=child_cwd(),
                                      check=True).stdout.splitlines()[-1])
    others = ", ".join(found["others"])
    cases = {
        "python -c pass": [PYTHON, "-c", "pass"],
        "baseline: import packaging.version, yaml": [PYTHON, "-c", BASELINE_SRC],
        "import what resolve loads from outside torchenv": [PYTHON, "-c", f"import {others}"],
        "... and torchenv's modules (no work)": [
            PYTHON, "-c", f"import {others}, {', '.join(found['own'])}"],
        "python -m torchenv resolve --json": [PYTHON, "-m", "torchenv", "resolve", "--json"],
    }
    t = alternate(cases, runs=runs)
    m = {name: median(xs) for name, xs in t.items()}
    stdlib = m["import what resolve loads from outside torchenv"]
    own = m["... and torchenv's modules (no work)"]
    full = m["python -m torchenv resolve --json"]
    print(f"\nloaded from outside torchenv ({len(found['others'])}): {others}")
    print(f"torchenv modules loaded: {len(found['own'])}; dataclasses among them: "
          f"{found['dataclasses']}")
    return [
        row("python -c pass", t["python -c pass"], note="the interpreter"),
        row("baseline: import packaging.version, yaml",
            t["baseline: import packaging.version, yaml"], note="1.0x"),
        row("import what resolve loads from outside torchenv",
            t["import what resolve loads from outside torchenv"],
            note=f"+{stdlib - m['python -c pass']:.0f} ms over the interpreter; "
                 f"{stdlib / m['baseline: import packaging.version, yaml']:.2f}x baseline"),
        row("... and torchenv's modules (no work)", t["... and torchenv's modules (no work)"],
            note=f"+{own - stdlib:.0f} ms; re-creating its {found['dataclasses']} dataclasses "
                 f"in-process: {found['ms']:.0f} ms"),
        row("python -m torchenv resolve --json", t["python -m torchenv resolve --json"],
            note=f"+{full - own:.0f} ms of work (matrix, detection, decision, JSON); "
                 f"{full / stdlib:.2f}x the modules from outside torchenv"),
    ]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_common_args(p)
    p.add_argument("--sweep-runs", type=int, default=5, help="in-process sweeps (default 5)")
    p.add_argument("--rss-runs", type=int, default=5, help="peak-RSS runs per case (default 5)")
    args = p.parse_args()
    set_options(pyc=not args.no_pyc, cwd=args.cwd)

    print(f"{describe()}\nruns per end-to-end case: {args.runs} (+1 warm-up), alternating")
    cases = {
        "baseline: import packaging.version, yaml": [PYTHON, "-c", BASELINE_SRC],
        "python -m torchenv resolve --json": [PYTHON, "-m", "torchenv", "resolve", "--json"],
        "torchenv resolve --json": [TORCHENV, "resolve", "--json"],
    }
    t = alternate(cases, runs=args.runs)
    base = median(t["baseline: import packaging.version, yaml"])
    e2e = [row("baseline: import packaging.version, yaml",
               t["baseline: import packaging.version, yaml"], note="1.0x")]
    for name in ("python -m torchenv resolve --json", "torchenv resolve --json"):
        r = median(t[name]) / base
        goal = "goal met" if r <= RATIO_GOAL else "goal not met"
        e2e.append(row(name, t[name], f"<= {RATIO_BUDGET}x baseline", r <= RATIO_BUDGET,
                       f"{r:.2f}x; {goal}: <= {RATIO_GOAL}x"))
    print_table(e2e, "resolve --json end to end (detection included)")

    print_table(bench_parts(args.runs), "where resolve --json's time goes (medians; "
                "each line adds to the one before)")

    sweep = bench_sweep(args.sweep_runs)
    print_table(sweep, "in-process sweep")

    rss = bench_rss(args.rss_runs)
    print_table(rss, "peak RSS (ru_maxrss of the child, fresh wrapper per run)",
                columns=("median MB", "max MB"))

    if shutil.which("nvidia-smi") is None:
        print("\nnote: no nvidia-smi on PATH; detection ran its no-GPU path")
    failed = any("FAIL" in r.verdict for r in e2e + sweep + rss)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
