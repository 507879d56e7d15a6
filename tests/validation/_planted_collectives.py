"""A planted hung collective, loaded by the collective worker through
TORCHENV_VALIDATE_EXTRA_CHECKS: rank 1 escapes like a stray worker (its own session, SIGTERM
ignored, no parent-death signal) and never joins; rank 0 waits in all_reduce."""

import ctypes
import os
import signal
import time


def collective_planted_hang(ctx):
    if ctx["rank"] == 1:
        try:
            ctypes.CDLL(None).prctl(1, 0)  # PR_SET_PDEATHSIG off: only the run token finds it
            os.setsid()
        except OSError:
            pass
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        time.sleep(600)
    t = ctx["torch"].ones(4)
    ctx["dist"].all_reduce(t)
    return "all_reduce returned"
