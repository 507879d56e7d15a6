"""A planted late crash, loaded by the collective worker through TORCHENV_VALIDATE_EXTRA_CHECKS:
after the gloo and DDP checks passed, rank 1 dies of a native abort (no Python exception) while
rank 0 waits for it in all_reduce."""

import os


def collective_planted_crash(ctx):
    if ctx["rank"] == 1:
        os.abort()
    t = ctx["torch"].ones(4)
    ctx["dist"].all_reduce(t)
    return "all_reduce returned"
