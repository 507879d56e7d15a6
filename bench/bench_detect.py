"""How long ``torchenv detect --json`` takes, against the cost of starting Python at all.

Runs, alternately so that machine noise hits every case alike:

* ``baseline``   ``python -c "import packaging.version, yaml"``
* ``no driver``  ``python -m torchenv detect --json`` with no NVIDIA library reachable
* ``nvml 8 GPU`` the same with a stand-in libnvidia-ml.so.1 (tests/detection/fake_nvml.c, built
  here with ``cc``) reporting eight A100s through the real nvidia-ml-py

Targets (issue 3): no driver ≤ 0.25 s median, 8 GPUs ≤ 0.3 s median.

    python bench/bench_detect.py [-n RUNS]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FAKE_NVML = ROOT / "tests" / "detection" / "fake_nvml.c"
EIGHT_A100 = ";".join(["NVIDIA A100-SXM4-80GB:8.0:81920:0"] * 8)


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES") and not k.startswith("FAKE_")}
    env.update(extra)
    return env


def build_nvml(out: Path) -> Path | None:
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        return None
    subprocess.run([cc, "-shared", "-fPIC", "-O1", "-o", str(out / "libnvidia-ml.so.1"),
                    str(FAKE_NVML)], check=True)
    return out


def once(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--runs", type=int, default=30)
    args = parser.parse_args()
    py = sys.executable
    detect = [py, "-m", "torchenv", "detect", "--json"]
    with tempfile.TemporaryDirectory() as tmp:
        lib = build_nvml(Path(tmp))
        cases: dict[str, tuple[list[str], dict[str, str]]] = {
            "baseline (import packaging, yaml)": ([py, "-c", "import packaging.version, yaml"],
                                                  clean_env()),
            "detect --json, no driver": (detect, clean_env()),
        }
        if lib is not None:
            cases["detect --json, NVML 8 GPUs"] = (
                detect, clean_env(LD_LIBRARY_PATH=str(lib), FAKE_NVML_GPUS=EIGHT_A100))
        times: dict[str, list[float]] = {name: [] for name in cases}
        for argv, env in cases.values():  # warm the file cache
            once(argv, env)
        for _ in range(args.runs):
            for name, (argv, env) in cases.items():
                times[name].append(once(argv, env))
    width = max(len(n) for n in times)
    print(f"{'case':<{width}}  {'median s':>9}  {'min s':>7}  runs")
    for name, values in times.items():
        print(f"{name:<{width}}  {statistics.median(values):>9.3f}  {min(values):>7.3f}  "
              f"{len(values)}")
    if lib is None:
        print("(no C compiler: the NVML case was skipped)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
