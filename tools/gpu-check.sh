#!/usr/bin/env bash
# One-shot GPU check of torchenv on a machine with NVIDIA GPUs: 8 minutes at most on one GPU.
#
#   tools/gpu-check.sh [OUTPUT_DIR]        (default: ./gpu-check-<host>-<date>, or $OUT if set)
#
# It never installs anything. It uses the interpreter in $PYTHON (default: python3), which
# should have a CUDA build of torch, pytest and torchenv's dependencies; torchenv runs from this
# checkout (PYTHONPATH=src) when it is not installed.
#
# Every step has its own time limit, cut to what is left of the budget, and the script goes on
# when one fails. OUTPUT_DIR/summary.json is the one summary: per step its command, limit, exit
# status (expected and got), seconds, and the JSON it printed (the validate reports); then the
# GPU tests' counts and the processes left behind. The script exits 1 when a step did not end as
# expected, when every GPU test was skipped on a host with a GPU, or when a process of the run
# outlived it.
set -u

here="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-${OUT:-$PWD/gpu-check-$(hostname)-$(date +%Y%m%d-%H%M%S)}}"
steps="$out/steps"
mkdir -p "$steps"
py="${PYTHON:-python3}"
export PYTHONPATH="$here/src${PYTHONPATH:+:$PYTHONPATH}"
export TORCHENV_CACHE_DIR="$out/cache"
# every process this script starts, and everything they start, carries this in its environment:
# whatever still carries it at the end outlived the run
token="gpu-check-$$-$(date +%s%N)"
export TORCHENV_GPU_CHECK_TOKEN="$token"

budget="${GPU_CHECK_BUDGET:-480}"   # seconds for the whole script, kill-after margins included
margin=15                           # kept back for the summary and the leftover check

# step NAME EXPECTED_RC SECONDS COMMAND...: run with a limit (cut to what is left of the
# budget); stdout, stderr, exit status and seconds land in steps/NAME.*
step() {
    local name="$1" expect="$2" limit="$3"
    shift 3
    printf '%s\n' "$expect" > "$steps/$name.expect"
    printf '%s\n' "$*" > "$steps/$name.cmd"
    local left=$((budget - SECONDS - margin - 5))
    if [ "$left" -lt 10 ]; then
        printf 'budget\n' > "$steps/$name.rc"
        printf '0\n' > "$steps/$name.seconds"
        printf '0\n' > "$steps/$name.limit"
        return 0
    fi
    [ "$limit" -gt "$left" ] && limit=$left
    printf '%s\n' "$limit" > "$steps/$name.limit"
    local began=$SECONDS
    timeout --kill-after=5 "$limit" "$@" > "$steps/$name.out" 2> "$steps/$name.err"
    printf '%s\n' "$?" > "$steps/$name.rc"
    printf '%s\n' "$((SECONDS - began))" > "$steps/$name.seconds"
    printf '%-24s rc=%-6s %4ss\n' "$name" "$(cat "$steps/$name.rc")" "$((SECONDS - began))" >&2
    return 0
}

# --- facts about the machine (any exit status is fine: they are recorded, not judged)
step nvidia-smi-q any 20 nvidia-smi -q
step nvidia-smi-topo any 10 nvidia-smi topo -m
step nvidia-smi-query any 10 nvidia-smi --query-gpu=index,name,uuid,pci.bus_id,driver_version,compute_cap,memory.total,clocks.max.sm,persistence_mode,mig.mode.current --format=csv
step driver-version any 5 cat /proc/driver/nvidia/version
step env any 5 sh -c 'env | grep -E "^(CUDA|NCCL|NVIDIA|TORCH|LD_LIBRARY_PATH|PATH|PYTHON)" | sort'
# shellcheck disable=SC2016  # the single quotes are meant: the inner sh expands \$c
step compilers any 10 sh -c 'for c in cc gcc g++ clang nvcc ninja; do printf "%s: " $c; command -v $c && $c --version 2>&1 | head -1; done'
step python-torch 0 60 "$py" -c 'import sys, torch; print(sys.version); print(torch.__version__, torch.version.cuda, torch.cuda.is_available(), torch.cuda.device_count()); print(torch.cuda.get_arch_list())'
step shm any 5 df -h /dev/shm

# --- torchenv's own view
step detect 0 30 "$py" -m torchenv detect --json
step resolve 0 30 "$py" -m torchenv resolve --json
step doctor any 60 "$py" -m torchenv doctor --json

# --- the validation suite: quick, then full (its report feeds the GPU tests below)
step validate-quick 0 120 "$py" -m torchenv validate --json --junit "$out/validate-quick.xml"
step validate-full 0 300 "$py" -m torchenv validate --level full --json --junit "$out/validate-full.xml"

# --- the test suite's GPU tests, judging the full report above rather than running it again
export TORCHENV_GPU_TEST_FULL_REPORT="$steps/validate-full.out"
step pytest-gpu 0 240 "$py" -m pytest -q -m gpu -p no:cacheprovider -rs --junitxml "$out/pytest-gpu.xml" "$here/tests/validation"
unset TORCHENV_GPU_TEST_FULL_REPORT

# --- planted faults: each must end in a clear verdict, within its limit
step fault-hung-collective 1 90 env TORCHENV_VALIDATE_EXTRA_CHECKS="$here/tests/validation/_planted_collectives.py" "$py" -m torchenv validate --level full --only planted_hang,gloo_allreduce --timeout 15 --json
step fault-nproc-above-gpus 2 20 "$py" -m torchenv validate --level full --nproc-per-node 100000 --json
printf '#!/bin/sh\nexec cat /dev/zero\n' > "$out/flooding-python" && chmod +x "$out/flooding-python"
step fault-flooding-python 2 20 "$py" -m torchenv validate --python "$out/flooding-python" --json

# --- the summary: one JSON file, and a verdict
"$py" - "$out" "$token" "$budget" "$SECONDS" <<'EOF'
import json, os, pathlib, sys, xml.etree.ElementTree as ET

out, token, budget, elapsed = pathlib.Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
steps = out / "steps"

def read(path, default=""):
    try:
        return path.read_text(errors="replace").strip()
    except OSError:
        return default

def leftovers():
    """Live processes (not zombies) carrying this run's token, other than this one."""
    needle, found = f"TORCHENV_GPU_CHECK_TOKEN={token}".encode(), []
    for entry in pathlib.Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if needle not in (entry / "environ").read_bytes().split(b"\0"):
                continue
            if "State:\tZ" in (entry / "status").read_text():
                continue
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        found.append({"pid": int(entry.name), "cmdline": cmd.strip()[:300]})
    return found

def gpu_host():
    """The Linux driver's GPU list, WSL2's GPU bridge, or a device node."""
    try:
        if os.listdir("/proc/driver/nvidia/gpus"):
            return True
    except OSError:
        pass
    wsl = os.path.exists("/dev/dxg") and os.path.exists("/usr/lib/wsl/lib/libcuda.so.1")
    return wsl or os.path.exists("/dev/nvidia0")

problems, records = [], []
for cmd in sorted(steps.glob("*.cmd"), key=lambda p: p.stat().st_mtime):
    name = cmd.stem
    rc, expect = read(steps / f"{name}.rc", "missing"), read(steps / f"{name}.expect", "any")
    ok = rc != "budget" and (expect == "any" or rc == expect)
    text = read(steps / f"{name}.out")
    try:
        printed = json.loads(text) if text[:1] in "{[" else None
    except ValueError:
        printed = None
    records.append({"name": name, "command": read(cmd), "expected_rc": expect, "rc": rc,
                    "ok": ok, "seconds": int(read(steps / f"{name}.seconds", "0") or 0),
                    "limit": int(read(steps / f"{name}.limit", "0") or 0), "json": printed,
                    "stderr_tail": read(steps / f"{name}.err")[-2000:] if not ok else None})
    if not ok:
        problems.append(f"step {name}: exit status {rc}, expected {expect}"
                        + (" (the budget was spent)" if rc == "budget" else ""))

tests = None
try:
    suites = list(ET.parse(out / "pytest-gpu.xml").getroot().iter("testsuite"))
    tests = {k: sum(int(s.get(k, 0)) for s in suites) for k in ("tests", "failures", "errors", "skipped")}
except (OSError, ET.ParseError):
    problems.append("the GPU tests wrote no JUnit report")
if tests is not None:
    ran = tests["tests"] - tests["skipped"]
    if tests["tests"] < 10:
        problems.append(f"only {tests['tests']} GPU tests were collected (at least 10 expected)")
    if gpu_host() and ran == 0:
        problems.append("every GPU test was skipped on a host with a GPU: nothing was proven")

left = leftovers()
if left:
    problems.append(f"{len(left)} process(es) of this run outlived it")
summary = {"budget_s": budget, "elapsed_s": elapsed, "gpu_host": gpu_host(), "ok": not problems,
           "problems": problems, "gpu_tests": tests, "leftover_processes": left,
           "steps": records}
(out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
for r in records:
    print(f"{r['name']:24} rc={r['rc']:<7} expected={r['expected_rc']:<4} {r['seconds']:4}s"
          f"{'' if r['ok'] else '  <-- not as expected'}")
print(f"GPU tests: {tests}")
print("OK" if not problems else "FAILED:\n  " + "\n  ".join(problems))
print(f"everything is in {out} (summary.json)")
sys.exit(0 if not problems else 1)
EOF
