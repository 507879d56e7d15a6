"""Planted checks (TORCHENV_VALIDATE_EXTRA_CHECKS): one floods the probe's private protocol
stream with a line that never ends; the one after it must still run, in a fresh child."""

from __future__ import annotations

import fcntl
import os
from typing import Any


def _protocol_fd() -> int:
    """The probe's private duplicate of its original stdout: the only pipe it writes to."""
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        try:
            writable = fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_WRONLY
            is_pipe = os.readlink(f"/proc/self/fd/{fd}").startswith("pipe:")
        except OSError:
            continue
        if writable and is_pipe:
            return fd
    raise RuntimeError("no protocol pipe found")


def check_planted_flood(ctx: Any) -> str:
    fd = _protocol_fd()
    chunk = b"x" * (1 << 16)
    for _ in range(64):  # 4 MiB without a newline; the reader stops after 1 MiB
        os.write(fd, chunk)
    return "wrote 4 MiB"


def check_planted_after(ctx: Any) -> str:
    return "ran after the flood"
