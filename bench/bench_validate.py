"""Benchmark ``torchenv validate``: quick vs ``import torch``, full level, CLI peak RSS.

Usage: ``python bench/bench_validate.py [--runs N] [--python PATH] [--no-full]``. Prints a table
of medians. Targets (issue 5): quick ≤ 2× ``python -c "import torch"`` (measured alternately),
full ≤ 90 s (warm C++ extension cache), CLI-process peak RSS ≤ 80 MB (the parent only).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

# Runs the CLI in-process and reports its own peak RSS (ru_maxrss of RUSAGE_SELF: the
# validation children are not counted).
_RSS_WRAPPER = (
    "import resource, sys\n"
    "from torchenv.cli import main\n"
    "rc = main(sys.argv[1:])\n"
    "sys.stderr.write('RSS_KB=%d\\n' % resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n"
    "sys.exit(rc)\n"
)


def _timed(argv: list[str]) -> tuple[float, str]:
    start = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"{' '.join(argv)} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    return seconds, proc.stderr


def _rss_mb(stderr: str) -> float:
    for line in stderr.splitlines():
        if line.startswith("RSS_KB="):
            return int(line.split("=", 1)[1]) / 1024
    return float("nan")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--python", default=sys.executable,
                        help="interpreter to validate (default: this one)")
    parser.add_argument("--no-full", action="store_true", help="skip the full-level runs")
    args = parser.parse_args()

    cli = [sys.executable, "-c", _RSS_WRAPPER, "validate", "--json", "--python", args.python]
    baseline = [args.python, "-c", "import torch"]
    _timed(baseline)  # warm the page cache for both
    quick, imports, rss = [], [], []
    for _ in range(args.runs):  # alternate, so drift hits both alike
        seconds, err = _timed(cli)
        quick.append(seconds)
        rss.append(_rss_mb(err))
        imports.append(_timed(baseline)[0])
    rows = []
    q, i = statistics.median(quick), statistics.median(imports)
    rows.append(("validate (quick)", f"{q:.2f} s", f"{q / i:.2f}× import torch", "≤ 2×",
                 "ok" if q <= 2 * i else "MISS"))
    rows.append(('python -c "import torch"', f"{i:.2f} s", "", "", ""))
    if not args.no_full:
        _timed([*cli, "--level", "full"])  # warms the C++ extension build cache
        full = [_timed([*cli, "--level", "full"]) for _ in range(max(1, args.runs // 2))]
        f = statistics.median(s for s, _ in full)
        rss += [_rss_mb(err) for _, err in full]
        rows.append(("validate --level full", f"{f:.1f} s", "warm extension cache", "≤ 90 s",
                     "ok" if f <= 90 else "MISS"))
    peak = max(rss)
    rows.append(("CLI peak RSS (parent)", f"{peak:.0f} MB", "max over runs", "≤ 80 MB",
                 "ok" if peak <= 80 else "MISS"))
    widths = [max(len(r[c]) for r in [("measure", "median", "note", "target", ""), *rows])
              for c in range(5)]
    for row in [("measure", "median", "note", "target", ""), *rows]:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
    print(f"({args.runs} alternating runs; python {args.python})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
