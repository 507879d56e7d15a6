"""How ``resolve``, ``matrix ci`` and matrix loading grow with the matrix and with the host.

Usage: python bench/bench_scaling.py [--runs N] [--reps N] [--factors 1,4,16] [--gpus 1,8,64]
                                     [--profile] [--no-pyc] [--cwd DIR]

The matrix, grown synthetically: for a factor k, every release of the embedded matrix is
present k times. Copy c (1 .. k-1) of torch A.B.C is torch 0.((k-c)*1000 + A*100 + B).C, released
12*c years earlier, so the copies sort below every real release, in blocks that keep the real
order; every variant set, PTX-policy and runtime-table entry and every ROCm entry bound to
releases is copied with its releases renamed the same way. The releases and their (release,
variant) candidates grow k times; the CUDA, ROCm and GPU tables stay as they are, and the newest
release still decides every plan. Each factor gets a copy of the installed torchenv package
whose data/ holds the grown YAML with cache.json and built.json rebuilt for it (``build_cache``
and ``build_document``, as ``matrix check --write-cache`` writes them), so a child started
with that copy on PYTHONPATH loads the grown matrix exactly as torchenv loads its embedded
data. The ×1 copy goes through the same rewrite, so every factor is measured on the same
footing. TORCHENV_NO_OVERLAY=1 throughout,
except in the in-process overlay row, which names its overlay.

The host: 1, 8 or 64 GPUs reported by the stand-in libnvidia-ml.so.1 (tests/detection/fake_nvml.c,
built here with cc, through TORCHENV_NVML_LIBRARY and FAKE_NVML_GPUS): H100 (MIG mode on), A100,
L40S and RTX 3090 in turn, so several architectures are checked against every arch list. Without
a C compiler the same capabilities come from TORCHENV_GPUS and TORCHENV_DRIVER_VERSION.

End to end (one process per run, all cases alternating, one warm-up round):
  * ``python -m torchenv resolve --json`` for every factor and host (detection included)
  * ``python -m torchenv matrix ci --format json`` (every release x Python x variant x platform)
  * ``python -c "load_matrix(overlay=False)"``
In-process (one child per factor, each call timed after one warm-up call, median of --reps):
  load_embedded_documents (the verified cache), embedded_digest (its CRC over the YAML), the
  YAML parse a start pays when the cache does not match, build_matrix (validation and model),
  load_matrix, load_matrix with a one-release overlay (the newest release replaced, as
  ``matrix update`` writes one; a quarter as many calls), ``resolve(Request(), host, matrix)``
  per host (the host read back from ``detect --json`` of the stand-in), and ``matrix ci``'s
  rows plus their JSON.

Targets: ``resolve`` grows at most linearly (in-process ×k ≤ k × the ×1 time, and in the
number of GPUs); end to end, ``resolve --json`` on the ×16 matrix ≤ 2× its ×1 time (paired
ratio: the median over rounds of ×16 / ×1 within a round).
"""

from __future__ import annotations

import argparse
import copy
import json
import shutil
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _timing import (
    PYTHON,
    Outcome,
    build_fake_nvml,
    clean_env,
    describe,
    median,
    paired_ratio,
    print_grid,
    run_bounded,
    set_options,
)

E2E_TARGET = 2.0  # resolve --json, ×16 matrix / ×1
LIMIT_S = 120.0  # no single run here should come near this
# (name, compute capability, memory MiB, MIG mode) of the stand-in's GPUs, taken in turn
GPU_MODELS = (
    ("NVIDIA H100 80GB HBM3", "9.0", 81559, "1"),
    ("NVIDIA A100-SXM4-80GB", "8.0", 81920, "0"),
    ("NVIDIA L40S", "8.9", 46068, ""),
    ("NVIDIA GeForce RTX 3090", "8.6", 24576, ""),
)
DRIVER = "580.82.07"  # the stand-in's default driver (CUDA 13.0)

LOAD_SRC = "from torchenv.matrix.loader import load_matrix; load_matrix(overlay=False)"

INPROC_SRC = r"""
import json, statistics, sys, time
from pathlib import Path

import torchenv
from torchenv.ci.formats import render
from torchenv.ci.request import CiRequest
from torchenv.ci.rows import generate_rows
from torchenv.detection.profile import HostProfile
from torchenv.matrix import loader
from torchenv.matrix.validate import build_matrix
from torchenv.resolver import NoMatch, Request, resolve

reps, hosts = int(sys.argv[1]), sys.argv[2:]


def timed(fn, n=reps):
    fn()  # warm-up: lazy imports, first-call caches
    xs = []
    for _ in range(max(1, n)):
        t0 = time.perf_counter()
        fn()
        xs.append((time.perf_counter() - t0) * 1000.0)
    return statistics.median(xs)


docs, cached = loader.load_embedded_documents()
out = {"module": torchenv.__file__, "cache_hit": cached and loader.load_built() is not None}
out["load_embedded_documents"] = timed(loader.load_embedded_documents)
out["embedded_digest"] = timed(loader.embedded_digest)
out["yaml_parse"] = timed(lambda: {n: loader.read_yaml(loader.DATA_DIR / n)
                                   for n in loader.DATA_FILES}, reps // 4)
out["build_matrix"] = timed(lambda: build_matrix(docs, origin={n: n for n in docs}))
out["load_matrix"] = timed(lambda: loader.load_matrix(overlay=False))
matrix = loader.load_matrix(overlay=False)
out["releases"] = len(matrix.releases)
out["candidates"] = sum(len(r.variants) for r in matrix.releases)
request = Request()
for path in hosts:
    host = HostProfile.from_json(json.loads(Path(path).read_text()))

    def once():
        try:
            resolve(request, host, matrix)
        except NoMatch:
            pass

    out["resolve:" + Path(path).stem] = timed(once)
ci = CiRequest()
out["ci_rows"] = len(generate_rows(matrix, ci))
out["ci"] = timed(lambda: render(generate_rows(matrix, ci), "json"), reps // 2)
# last, so that nothing above runs in a heap it grew: a one-release overlay (the newest release
# with another note, as `matrix update` replaces entries), parsed and merged at every load
import copy, os, tempfile, yaml
scratch = tempfile.mkdtemp(prefix="torchenv-bench-overlay-")
overlay = os.path.join(scratch, "overlay.yaml")
newest = copy.deepcopy(docs["releases.yaml"]["releases"][0])
newest["note"] = "replaced by the benchmark's overlay"
with open(overlay, "w") as fh:
    yaml.safe_dump({"schema_version": 1, "releases": [newest]}, fh)
assert loader.load_matrix(overlay=overlay).overlay_error is None
out["overlay"] = timed(lambda: loader.load_matrix(overlay=overlay), reps // 4)
import shutil
shutil.rmtree(scratch)
print(json.dumps(out))
"""

PROFILE_SRC = r"""
import cProfile, json, pstats, sys
from pathlib import Path
from torchenv.detection.profile import HostProfile
from torchenv.matrix.loader import load_matrix
from torchenv.resolver import NoMatch, Request, resolve

host = HostProfile.from_json(json.loads(Path(sys.argv[1]).read_text()))
matrix = load_matrix(overlay=False)
request = Request()


def many(n=5):
    for _ in range(n):
        try:
            resolve(request, host, matrix)
        except NoMatch:
            pass


for title, fn in (("load_matrix(overlay=False), 5 calls",
                   lambda: [load_matrix(overlay=False) for _ in range(5)]),
                  ("resolve(), 5 calls", many)):
    prof = cProfile.Profile()
    prof.enable()
    fn()
    prof.disable()
    print(f"\n--- {title}: top functions by own time")
    pstats.Stats(prof).sort_stats("tottime").print_stats(12)
"""


# --- the grown matrix ------------------------------------------------------------------------


def _alias(version: str, copy_no: int, factor: int) -> str:
    major, minor, *rest = version.split(".")
    return ".".join(["0", str((factor - copy_no) * 1000 + int(major) * 100 + int(minor)), *rest])


def _earlier(date: str, copy_no: int) -> str:
    year, rest = date.split("-", 1)
    return f"{int(year) - 12 * copy_no:04d}-{rest}"


def scaled_documents(documents: Mapping[str, Any], factor: int) -> dict[str, Any]:
    """The embedded documents with every release present ``factor`` times (module docstring)."""
    docs: dict[str, Any] = copy.deepcopy(dict(documents))
    releases = docs["releases.yaml"]["releases"]
    grown = list(releases)
    for c in range(1, factor):
        for rel in releases:
            twin = copy.deepcopy(rel)
            twin["torch"] = _alias(rel["torch"], c, factor)
            twin["released"] = _earlier(rel["released"], c)
            grown.append(twin)
    docs["releases.yaml"]["releases"] = grown
    variants = docs["variants.yaml"]
    for key in ("variant_sets", "ptx_policy", "runtime_cc_tables"):
        entries = variants.get(key) or []
        more = list(entries)
        for c in range(1, factor):
            for entry in entries:
                twin = copy.deepcopy(entry)
                twin["releases"] = [_alias(t, c, factor) for t in entry["releases"]]
                more.append(twin)
        variants[key] = more
    rocm = docs["rocm.yaml"]["rocm_variants"]
    more = list(rocm)
    for c in range(1, factor):
        for entry in rocm:
            if "torch" in entry:  # entries without torch: are the fallback for every release
                twin = copy.deepcopy(entry)
                twin["torch"] = [_alias(t, c, factor) for t in entry["torch"]]
                more.append(twin)
    docs["rocm.yaml"]["rocm_variants"] = more
    return docs


def make_package(root: Path, factor: int, documents: Mapping[str, Any]) -> tuple[Path, int]:
    """A copy of the installed torchenv under ``root``/x<factor> whose embedded data is the
    matrix grown ``factor`` times, with its cache rebuilt; returns (PYTHONPATH entry, bytes)."""
    import yaml

    import torchenv
    from torchenv.matrix.built import build_document, fingerprint
    from torchenv.matrix.loader import (
        DATA_FILES,
        build_cache,
        build_embedded,
        load_embedded_documents,
    )

    base = root / f"x{factor}"
    package = base / "torchenv"
    shutil.copytree(Path(torchenv.__file__).parent, package,
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    data = package / "matrix" / "data"
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    grown = scaled_documents(documents, factor)
    size = 0
    for name in DATA_FILES:
        text = yaml.dump(grown[name], Dumper=dumper, sort_keys=False, allow_unicode=True,
                         width=100)
        (data / name).write_text(text, encoding="utf-8")
        size += len(text.encode())
    cache = json.dumps(build_cache(data), separators=(",", ":"), sort_keys=True) + "\n"
    (data / "cache.json").write_text(cache, encoding="utf-8")
    shipped = build_document(build_embedded(data), fingerprint(data, DATA_FILES))
    (data / "built.json").write_text(
        json.dumps(shipped, separators=(",", ":"), sort_keys=True) + "\n", encoding="utf-8")
    docs, used_cache = load_embedded_documents(data)
    if not used_cache or docs != grown:
        raise RuntimeError(f"the x{factor} copy does not load its own data through the cache")
    return base, size


# --- the host --------------------------------------------------------------------------------


def nvml_spec(count: int) -> str:
    items = []
    for i in range(count):
        name, cc, mib, mig = GPU_MODELS[i % len(GPU_MODELS)]
        items.append(f"{name}:{cc}:{mib}" + (f":{mig}" if mig else ""))
    return ";".join(items)


def host_env(count: int, lib: Optional[Path]) -> dict[str, str]:
    if lib is not None:
        return {"TORCHENV_NVML_LIBRARY": str(lib), "FAKE_NVML_GPUS": nvml_spec(count),
                "TORCHENV_NVIDIA_SMI": "off"}
    caps = ",".join(GPU_MODELS[i % len(GPU_MODELS)][1] for i in range(count))
    return {"TORCHENV_GPUS": caps, "TORCHENV_DRIVER_VERSION": DRIVER,
            "TORCHENV_NVML_LIBRARY": "off", "TORCHENV_NVIDIA_SMI": "off"}


def child_env(pythonpath: Path, **extra: str) -> dict[str, str]:
    return clean_env(PYTHONPATH=str(pythonpath), TORCHENV_NO_OVERLAY="1", **extra)


def checked(o: Outcome, what: str, ok: Sequence[int] = (0, 3)) -> Outcome:
    if o.timed_out or o.returncode not in ok:
        raise RuntimeError(f"{what}: " + ("timed out" if o.timed_out else
                                          f"exit {o.returncode}: {o.stderr[-500:]}"))
    return o


# --- measuring -------------------------------------------------------------------------------


def alternate(cases: Mapping[str, tuple[list[str], Mapping[str, str]]],
              runs: int) -> dict[str, list[float]]:
    """Round-robin over the cases (each with its own environment); one warm-up round."""
    times: dict[str, list[float]] = {name: [] for name in cases}
    for round_no in range(runs + 1):
        for name, (argv, env) in cases.items():
            o = checked(run_bounded(argv, env, timeout=LIMIT_S), name)
            if round_no:
                times[name].append(o.ms)
    return times


def fmt_ms(value: Optional[float]) -> str:
    return "-" if value is None else f"{value:.1f}"


def fmt_x(value: Optional[float]) -> str:
    return "-" if value is None else f"{value:.2f}x"


def main(argv: Optional[Sequence[str]] = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("-n", "--runs", type=int, default=10,
                   help="end-to-end rounds (default 10), plus one warm-up round")
    p.add_argument("--reps", type=int, default=10,
                   help="in-process calls per measurement (default 10; YAML parse and overlay "
                   "build: a quarter)")
    p.add_argument("--factors", default="1,4,16", help="matrix growth factors (default 1,4,16)")
    p.add_argument("--gpus", default="1,8,64", help="host sizes in GPUs (default 1,8,64; <= 64)")
    p.add_argument("--profile", action="store_true",
                   help="also cProfile load_matrix and resolve() on the largest matrix and host")
    p.add_argument("--no-pyc", action="store_true",
                   help="do not give children a bytecode cache (keeps PYTHONDONTWRITEBYTECODE)")
    p.add_argument("--cwd", default=None,
                   help="directory children run in (default: a fresh empty temp dir)")
    args = p.parse_args(argv)
    set_options(pyc=not args.no_pyc, cwd=args.cwd)
    factors = [int(f) for f in args.factors.split(",")]
    gpu_counts = [int(g) for g in args.gpus.split(",")]
    if any(g < 1 or g > 64 for g in gpu_counts) or any(f < 1 for f in factors):
        p.error("factors must be >= 1 and GPU counts 1..64 (the stand-in's limit)")
    lo, hi = factors[0], factors[-1]

    from torchenv.matrix.loader import load_embedded_documents

    documents, _ = load_embedded_documents()
    print(describe())
    with tempfile.TemporaryDirectory(prefix="torchenv-bench-scaling-") as tmp:
        root = Path(tmp)
        lib = build_fake_nvml(root)
        print("host: " + ("stand-in NVML (tests/detection/fake_nvml.c)" if lib else
                          "TORCHENV_GPUS + TORCHENV_DRIVER_VERSION (no C compiler for the "
                          "stand-in NVML)") + f", GPUs {', '.join(map(str, gpu_counts))}")
        packages: dict[int, Path] = {}
        for f in factors:
            packages[f], size = make_package(root, f, documents)
            cache = packages[f] / "torchenv" / "matrix" / "data" / "cache.json"
            print(f"matrix x{f}: YAML {size / 1024:.0f} KiB, "
                  f"cache.json {cache.stat().st_size / 1024:.0f} KiB")
        # the hosts, as detect --json reports them (read back by the in-process resolve)
        hosts: dict[int, Path] = {}
        for g in gpu_counts:
            env = child_env(packages[lo], **host_env(g, lib))
            o = checked(run_bounded([PYTHON, "-m", "torchenv", "detect", "--json"], env,
                                    timeout=LIMIT_S, capture=True), f"detect ({g} GPUs)", (0,))
            doc = json.loads(o.stdout)
            seen = len((doc.get("nvidia") or {}).get("gpus") or [])
            if seen != g:
                raise RuntimeError(f"detect saw {seen} GPUs, expected {g}: {doc.get('warnings')}")
            hosts[g] = root / f"{g}gpu.json"
            hosts[g].write_text(o.stdout)

        cases: dict[str, tuple[list[str], Mapping[str, str]]] = {}
        for f in factors:
            for g in gpu_counts:
                cases[f"resolve {g} {f}"] = ([PYTHON, "-m", "torchenv", "resolve", "--json"],
                                             child_env(packages[f], **host_env(g, lib)))
            cases[f"ci {f}"] = ([PYTHON, "-m", "torchenv", "matrix", "ci", "--format", "json"],
                                child_env(packages[f]))
            cases[f"load {f}"] = ([PYTHON, "-c", LOAD_SRC], child_env(packages[f]))
        # the copies are what the children import (PYTHONPATH comes before the install)
        for f in factors:
            o = checked(run_bounded([PYTHON, "-c", "import torchenv; print(torchenv.__file__)"],
                                    child_env(packages[f]), timeout=LIMIT_S, capture=True),
                        "import check", (0,))
            if not o.stdout.strip().startswith(str(packages[f])):
                raise RuntimeError(f"children import {o.stdout.strip()}, not the x{f} copy")
        print(f"end to end: {len(cases)} cases x {args.runs} rounds (+1 warm-up), alternating",
              flush=True)
        times = alternate(cases, args.runs)

        inproc: dict[int, dict[str, Any]] = {}
        for f in factors:
            print(f"in-process: x{f}", flush=True)
            o = checked(run_bounded([PYTHON, "-c", INPROC_SRC, str(args.reps),
                                     *map(str, hosts.values())],
                                    child_env(packages[f]), timeout=10 * LIMIT_S, capture=True),
                        f"in-process x{f}", (0,))
            inproc[f] = json.loads(o.stdout.strip().splitlines()[-1])
            if not inproc[f]["cache_hit"]:
                raise RuntimeError(f"the x{f} copy did not load through its cache.json")

        profile_text = ""
        if args.profile:
            o = checked(run_bounded([PYTHON, "-c", PROFILE_SRC, str(hosts[gpu_counts[-1]])],
                                    child_env(packages[hi]), timeout=10 * LIMIT_S,
                                    capture=True), "profile", (0,))
            profile_text = o.stdout

    ok = True
    factor_cols = [f"x{f} ms" for f in factors]
    ratio_col = f"x{hi}/x{lo}"

    # end to end
    rows = []
    for g in gpu_counts:
        series = [times[f"resolve {g} {f}"] for f in factors]
        r = paired_ratio(series[-1], series[0])
        good = r is not None and r <= E2E_TARGET
        ok &= good
        rows.append([f"resolve --json, {g} GPU" + ("s" if g > 1 else ""),
                     *(fmt_ms(median(s)) for s in series), fmt_x(r), f"<= {E2E_TARGET}x",
                     "PASS" if good else "FAIL"])
    for key, label in (("ci", "matrix ci --format json"),
                       ("load", "python -c load_matrix(overlay=False)")):
        series = [times[f"{key} {f}"] for f in factors]
        rows.append([label, *(fmt_ms(median(s)) for s in series),
                     fmt_x(paired_ratio(series[-1], series[0])), "-", "info"])
    print_grid(("end to end (one process per run)", *factor_cols, ratio_col, "target",
                "verdict"), rows, f"End to end: median ms over {args.runs} alternated rounds; "
               f"{ratio_col} paired per round", left=(0, len(factors) + 2, len(factors) + 3))

    # in-process, by matrix size
    def grow(key: str) -> list[Optional[float]]:
        return [inproc[f].get(key) for f in factors]

    rows = [["releases / (release, variant) candidates",
             *(f"{inproc[f]['releases']} / {inproc[f]['candidates']}" for f in factors),
             f"{inproc[hi]['candidates'] / inproc[lo]['candidates']:.2f}x", "-", "info"],
            ["matrix ci rows", *(str(inproc[f]["ci_rows"]) for f in factors),
             f"{inproc[hi]['ci_rows'] / inproc[lo]['ci_rows']:.2f}x", "-", "info"]]
    labels = [("load_embedded_documents (cache hit)", "load_embedded_documents"),
              ("  of which embedded_digest (CRC-32 of the YAML)", "embedded_digest"),
              ("YAML parse of the five files (cache miss)", "yaml_parse"),
              ("build_matrix (validation, inference rules and model)", "build_matrix"),
              ("load_matrix(overlay=False)", "load_matrix"),
              ("load_matrix, one-release overlay", "overlay")]
    for label, key in labels:
        v = grow(key)
        rows.append([label, *map(fmt_ms, v), fmt_x(_div(v[-1], v[0])), "-", "info"])
    for g in gpu_counts:
        v = grow(f"resolve:{g}gpu")
        r = _div(v[-1], v[0])
        good = r is not None and r <= hi / lo
        ok &= good
        rows.append([f"resolve(), {g} GPU" + ("s" if g > 1 else ""), *map(fmt_ms, v), fmt_x(r),
                     f"<= {hi / lo:g}x (linear)", "PASS" if good else "FAIL"])
    v = grow("ci")
    rows.append(["matrix ci rows + JSON", *map(fmt_ms, v), fmt_x(_div(v[-1], v[0])), "-",
                 "info"])
    print_grid(("in-process (one child per factor)", *factor_cols, ratio_col, "target",
                "verdict"), rows, f"In-process: median ms of {args.reps} calls after one "
               "warm-up call (YAML parse, overlay: a quarter as many)",
               left=(0, len(factors) + 2, len(factors) + 3))

    # by host size
    g_lo, g_hi = gpu_counts[0], gpu_counts[-1]
    rows = []
    for f in factors:
        e2e = [times[f"resolve {g} {f}"] for g in gpu_counts]
        rows.append([f"resolve --json, x{f} matrix", *(fmt_ms(median(s)) for s in e2e),
                     fmt_x(paired_ratio(e2e[-1], e2e[0])), "-", "info"])
    for f in factors:
        v = [inproc[f].get(f"resolve:{g}gpu") for g in gpu_counts]
        r = _div(v[-1], v[0])
        good = r is not None and r <= g_hi / g_lo
        ok &= good
        rows.append([f"resolve(), x{f} matrix", *map(fmt_ms, v), fmt_x(r),
                     f"<= {g_hi / g_lo:g}x (linear)", "PASS" if good else "FAIL"])
    print_grid(("by host size", *(f"{g} GPU ms" for g in gpu_counts), f"{g_hi}/{g_lo} GPU",
                "target", "verdict"), rows, "By host size (same runs as above)",
               left=(0, len(gpu_counts) + 2, len(gpu_counts) + 3))

    if profile_text:
        print(profile_text)
    return 0 if ok else 1


def _div(a: Optional[float], b: Optional[float]) -> Optional[float]:
    return a / b if a is not None and b else None


if __name__ == "__main__":
    sys.exit(main())
