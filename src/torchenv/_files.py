"""Atomic file writes: a temp file in the same directory, then ``os.replace``."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from torchenv.errors import BadInput

__all__ = ["write_atomic"]


def write_atomic(path: Path, text: str, *, force: bool = False) -> None:
    """Write ``text`` to ``path`` whole or not at all; refuse to replace a file unless ``force``."""
    if path.exists() and not force:
        raise BadInput(f"{path} already exists", hint="pass --force to overwrite it")
    if path.is_dir():
        raise BadInput(f"{path} is a directory", hint="give a file name")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise BadInput(f"{parent} does not exist", hint="create the directory first")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
