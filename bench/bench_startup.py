"""Startup benchmarks: loading the embedded matrix, ``torchenv --version``, ``matrix show --json``.

Usage: python bench/bench_startup.py [--runs N] [--no-pyc] [--cwd DIR]

Targets
  * ``torchenv --version`` and ``torchenv matrix show --json``: median wall <= 2x the median of
    ``python -c "import packaging.version, yaml"``, all measured alternately in one run (the
    start-up budget: a command costs at most twice importing its own dependencies).
  * load_matrix(overlay=False) in a fresh process minus a bare ``python -c pass`` (paired per
    round), and timed in-process by a child: reported, no target of their own (they are part of
    every command the ratio rows measure).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _timing import (
    PYTHON,
    TORCHENV,
    alternate,
    bench_env,
    child_value,
    describe,
    median,
    parse_args,
    print_table,
    row,
)

RATIO_TARGET = 2.0

LOAD_SRC = "from torchenv.matrix.loader import load_matrix; load_matrix(overlay=False)"
BASELINE_SRC = "import packaging.version, yaml"

# In-process: the whole thing (import + call), and the call alone (imports done first).
INPROC_TOTAL_SRC = """\
import time
t0 = time.perf_counter()
from torchenv.matrix.loader import load_matrix
load_matrix(overlay=False)
print((time.perf_counter() - t0) * 1000)
"""
INPROC_CALL_SRC = """\
import time
from torchenv.matrix.loader import load_matrix
t0 = time.perf_counter()
load_matrix(overlay=False)
print((time.perf_counter() - t0) * 1000)
"""
CACHE_SRC = """\
from torchenv.matrix.loader import load_built
print(int(load_built() is not None))
"""


def main() -> int:
    args = parse_args(__doc__.splitlines()[0])
    runs = args.runs
    env = bench_env()

    used_cache = bool(child_value([PYTHON, "-c", CACHE_SRC], env))
    print(f"{describe()}\nruns per case: {runs} (+1 warm-up), alternating\n"
          f"embedded matrix served built from verified built.json: {used_cache}")

    cases = {
        "python -c pass": [PYTHON, "-c", "pass"],
        "python -c load_matrix(overlay=False)": [PYTHON, "-c", LOAD_SRC],
        "baseline: import packaging.version, yaml": [PYTHON, "-c", BASELINE_SRC],
        "torchenv --version": [TORCHENV, "--version"],
        "python -m torchenv --version": [PYTHON, "-m", "torchenv", "--version"],
        "torchenv matrix show --json": [TORCHENV, "matrix", "show", "--json"],
    }
    t = alternate(cases, runs=runs, env=env)

    bare = t["python -c pass"]
    load = t["python -c load_matrix(overlay=False)"]
    diffs = [a - b for a, b in zip(load, bare)]
    base = median(t["baseline: import packaging.version, yaml"])

    inproc_total = [child_value([PYTHON, "-c", INPROC_TOTAL_SRC], env) for _ in range(runs)]
    inproc_call = [child_value([PYTHON, "-c", INPROC_CALL_SRC], env) for _ in range(runs)]

    def ratio_row(name: str):  # type: ignore[no-untyped-def]
        r = median(t[name]) / base
        return row(name, t[name], f"<= {RATIO_TARGET}x baseline", r <= RATIO_TARGET,
                   f"{r:.2f}x")

    rows = [
        row("python -c pass", bare),
        row("python -c load_matrix(overlay=False)", load),
        row("load_matrix fresh process - bare python (paired)", diffs),
        row("load_matrix in-process: import + call", inproc_total),
        row("load_matrix in-process: call only", inproc_call),
        row("baseline: import packaging.version, yaml", t[
            "baseline: import packaging.version, yaml"], note="1.0x"),
        ratio_row("torchenv --version"),
        ratio_row("python -m torchenv --version"),
        ratio_row("torchenv matrix show --json"),
    ]
    print_table(rows, "startup")
    return 0 if all("FAIL" not in r.verdict for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
