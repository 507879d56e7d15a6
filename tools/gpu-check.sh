#!/usr/bin/env bash
# One-shot GPU check of torchenv on a machine with NVIDIA GPUs (8 minutes at most).
#
#   tools/gpu-check.sh [OUTPUT_DIR]        (default: ./gpu-check-<host>-<date>, or $OUT if set)
#
# It never installs anything. It uses the interpreter in $PYTHON (default: python3), which
# should have a CUDA build of torch; torchenv runs from this checkout (PYTHONPATH=src) when it is
# not installed. Every step has its own time limit and the script goes on when one fails; each
# step's output and exit status land in OUTPUT_DIR, and SUMMARY.txt lists them.
set -u

here="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-${OUT:-$PWD/gpu-check-$(hostname)-$(date +%Y%m%d-%H%M%S)}}"
mkdir -p "$out"
py="${PYTHON:-python3}"
export PYTHONPATH="$here/src${PYTHONPATH:+:$PYTHONPATH}"
export TORCHENV_CACHE_DIR="$out/cache"
summary="$out/SUMMARY.txt"
: > "$summary"

budget="${GPU_CHECK_BUDGET:-470}"   # seconds for the whole script (kill-after margins included)

# step NAME SECONDS COMMAND...: run with a limit (cut to what is left of the budget),
# stdout/stderr to NAME.out/NAME.err
step() {
    local name="$1" limit="$2"
    shift 2
    local left=$((budget - SECONDS - 10))
    if [ "$left" -lt 15 ]; then
        printf '%-28s skipped: the %ss budget is spent\n' "$name" "$budget" >> "$summary"
        return 0
    fi
    [ "$limit" -gt "$left" ] && limit=$left
    local began=$SECONDS
    timeout --kill-after=10 "$limit" "$@" > "$out/$name.out" 2> "$out/$name.err"
    local rc=$?
    printf '%-28s rc=%-4s %4ss  %s\n' "$name" "$rc" "$((SECONDS - began))" "$*" >> "$summary"
    return 0
}

# --- facts about the machine
step nvidia-smi-q 30 nvidia-smi -q
step nvidia-smi-topo 30 nvidia-smi topo -m
step nvidia-smi-query 30 nvidia-smi --query-gpu=index,name,uuid,pci.bus_id,driver_version,compute_cap,memory.total,clocks.max.sm,persistence_mode,mig.mode.current --format=csv
step driver-version 10 cat /proc/driver/nvidia/version
step env 10 sh -c 'env | grep -E "^(CUDA|NCCL|NVIDIA|TORCH|LD_LIBRARY_PATH|PATH|PYTHON)" | sort'
step compilers 20 sh -c 'for c in cc gcc g++ clang nvcc ninja; do printf "%s: " $c; command -v $c && $c --version 2>&1 | head -1; done'
step python-torch 120 "$py" -c 'import sys, torch; print(sys.version); print(torch.__version__, torch.version.cuda, torch.cuda.is_available(), torch.cuda.device_count()); print(torch.cuda.get_arch_list())'
step shm 10 df -h /dev/shm

# --- torchenv's own view
step detect 60 "$py" -m torchenv detect --json
step resolve 60 "$py" -m torchenv resolve --json
step doctor 120 "$py" -m torchenv doctor --json

# --- the validation suite, quick and full
step validate-quick 300 "$py" -m torchenv validate --json --junit "$out/validate-quick.xml"
step validate-full 600 "$py" -m torchenv validate --level full --json --junit "$out/validate-full.xml"

# --- planted faults: each must end in a clear verdict, within its limit
step fault-tf32-override 300 env TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1 "$py" -m torchenv validate --json
step fault-no-visible-gpu 300 env CUDA_VISIBLE_DEVICES= "$py" -m torchenv validate --json
step fault-hung-collective 300 env TORCHENV_VALIDATE_EXTRA_CHECKS="$here/tests/validation/_planted_collectives.py" "$py" -m torchenv validate --level full --timeout 20 --json
step fault-nproc-above-gpus 60 "$py" -m torchenv validate --level full --nproc-per-node 64

# --- the test suite's GPU tests
step pytest-gpu 600 "$py" -m pytest -q -m gpu -p no:cacheprovider "$here/tests"

# leftovers of the hung-collective run would carry this checkout's planted file in their env
pgrep -af _planted_collectives > "$out/leftover-processes.txt" 2>&1
cat "$summary"
echo "everything is in $out"
