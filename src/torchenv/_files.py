"""Atomic file writes: a temp file in the same directory, then ``os.replace``.

Only regular files are replaced. A symlink is followed, so the file it names is updated and the
link stays; anything else at the path (a device such as ``/dev/null``, a FIFO, a directory) is
refused rather than swapped for a regular file, which is what a bare rename would do.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path

from torchenv.errors import BadInput

__all__ = ["write_atomic"]


def _new_file_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def write_atomic(path: Path | str, data: str | bytes, *, force: bool = True) -> Path:
    """Write ``data`` to ``path`` whole or not at all; returns the file actually written.

    ``force=False`` refuses to replace an existing file. Every failure is a :class:`BadInput`
    naming the path, and leaves neither a temp file nor a half-written target behind.
    """
    target = Path(path)
    if target.is_symlink():
        target = Path(os.path.realpath(target))
    try:
        st = target.stat()
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise BadInput(f"{path}: cannot write there: {exc.strerror or exc}") from exc
    if st is not None:
        if stat.S_ISDIR(st.st_mode):
            raise BadInput(f"{path} is a directory", hint="give a file name")
        if not stat.S_ISREG(st.st_mode):
            raise BadInput(f"{path} is not a regular file; torchenv writes files atomically "
                           "and will not replace it", hint="give the path of a file")
        if not force:
            raise BadInput(f"{path} already exists", hint="pass --force to overwrite it")
    parent = target.parent if str(target.parent) else Path(".")
    if not parent.is_dir():
        raise BadInput(f"{parent} does not exist", hint="create the directory first")
    mode = stat.S_IMODE(st.st_mode) if st is not None else _new_file_mode()
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=parent)
    except OSError as exc:
        raise BadInput(f"{path}: cannot write in {parent}: {exc.strerror or exc}",
                       hint="choose a writable directory") from exc
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data.encode("utf-8") if isinstance(data, str) else data)
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise BadInput(f"{path}: cannot write: {exc.strerror or exc}") from exc
        raise
    return target
