"""Planted checks for the failure-path tests, loaded through TORCHENV_VALIDATE_EXTRA_CHECKS."""

import os
import time


def check_planted_hang(ctx):
    time.sleep(600)


def check_planted_abort(ctx):
    os.abort()


def check_planted_after(ctx):
    return f"still running on {ctx.device} after a hang and a crash"
