"""A planted sticky CUDA error: the check after it must run in a fresh child."""

import os


def check_planted_poison(ctx):
    with open(os.environ["PLANTED_PID_DIR"] + "/poisoned", "w") as f:
        f.write(str(os.getpid()))
    raise RuntimeError("CUDA error: an illegal memory access was encountered")


def check_planted_next(ctx):
    with open(os.environ["PLANTED_PID_DIR"] + "/next", "w") as f:
        f.write(str(os.getpid()))
    return "ran"
