"""Reading user files with a size cap, and atomic writes (a temp file, then ``os.replace``).

Every file a user names (a host profile, a matrix overlay, ``pyproject.toml``) is read through
:func:`read_bytes_capped`, so ``/dev/zero`` or a multi-gigabyte file is refused after reading
one byte past the cap instead of filling memory.

Only regular files are replaced. A symlink of the user's own to an existing file of theirs is
followed, so the file it names is updated and the link stays; any other link is refused: one
that names no file (a dangling link in a shared folder would make torchenv create a file
wherever it points), and one that another user owns or that points at another user's file.
Anything else at the path (a device such as ``/dev/null``, a FIFO, a directory) is refused
rather than swapped for a regular file, which is what a bare rename would do.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
from typing import TYPE_CHECKING

from torchenv.errors import BadInput

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path
    from typing import TypeAlias

    StrPath: TypeAlias = "str | os.PathLike[str]"

__all__ = ["MAX_READ_BYTES", "PIPE_WAIT_SECONDS", "absolute_path", "check_target",
           "current_folder", "read_bytes_capped",
           "read_text_capped", "user_cache_dir", "write_atomic"]

MAX_READ_BYTES = 8 * 1024 * 1024
"""The most torchenv reads of a file a user names; the largest real overlay is far below it."""


PIPE_WAIT_SECONDS = 30.0
"""How long a pipe or device named as a file may stay silent before it is refused."""


def read_bytes_capped(path: StrPath, *, limit: int = MAX_READ_BYTES,
                      what: str | None = None, wait: float = PIPE_WAIT_SECONDS,
                      regular_only: bool = False, last: bool = False) -> bytes:
    """The bytes of ``path``, at most ``limit`` of them, without ever blocking for good.

    This is the one reader of files a user names (a host profile, an overlay,
    ``pyproject.toml``, a node list, a fleet report). Raises :class:`BadInput` naming the file
    (prefixed with ``what``, e.g. ``--host``) when it cannot be read, is a directory, or holds
    more than ``limit`` bytes. A file that never ends (``/dev/zero``) costs one read of
    ``limit + 1`` bytes. A FIFO is opened without waiting for a writer: with none it reads as
    empty; a pipe with a writer (``--host <(ssh node torchenv detect --json)``) is read as
    its data comes, and one that stays silent for ``wait`` seconds is refused.

    ``regular_only`` is for files others wrote into a folder torchenv reads (a fleet's
    reports): ``path`` must be a regular file with one name, opened without following a
    symbolic link, so that a link (soft or hard) planted there never makes torchenv read, and
    show, a file from elsewhere. ``last`` reads the last ``limit`` bytes of a regular file
    instead of refusing a longer one (where a log's cause is).
    """
    label = f"{what}: {path}" if what else str(path)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    if regular_only:
        flags |= getattr(os, "O_NOFOLLOW", 0)
        _refuse_link(path, label)
    try:
        fd = os.open(path, flags)
    except IsADirectoryError as exc:
        raise BadInput(f"{label} is a directory", hint="give the path of a file") from exc
    except OSError as exc:
        if regular_only and os.path.islink(path):  # ELOOP: the link came after the check
            raise BadInput(f"{label}: a symbolic link; not followed") from exc
        absolute_path(path, what=what)  # relative to a deleted folder: say that
        raise BadInput(f"{label}: cannot read: {exc.strerror or exc}") from exc
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):  # Windows opens a directory without an error
            raise BadInput(f"{label} is a directory", hint="give the path of a file")
        if regular_only:
            _refuse_irregular(st, label)
        if last and stat.S_ISREG(st.st_mode):
            os.lseek(fd, max(0, st.st_size - limit), os.SEEK_SET)
            return _read_up_to(fd, limit, wait, label)
        data = _read_up_to(fd, limit + 1, wait, label)
    except OSError as exc:
        raise BadInput(f"{label}: cannot read: {exc.strerror or exc}") from exc
    finally:
        os.close(fd)
    if len(data) > limit:
        raise BadInput(f"{label} is larger than {_size(limit)}; torchenv does not read it",
                       hint="give the path of the file torchenv wrote or expects")
    return data


def _refuse_link(path: StrPath, label: str) -> None:
    """A symbolic link is refused before it is opened (where ``O_NOFOLLOW`` is missing, this
    check is all there is)."""
    try:
        st = os.lstat(path)
    except OSError:
        return  # the open that follows says why
    if stat.S_ISLNK(st.st_mode):
        raise BadInput(f"{label}: a symbolic link; not followed")


def _refuse_irregular(st: os.stat_result, label: str) -> None:
    """What was opened is a regular file with no other name (a hard link to a file elsewhere
    would show that file's content as if a node had written it)."""
    if not stat.S_ISREG(st.st_mode):
        raise BadInput(f"{label}: not a regular file; not read")
    if st.st_nlink > 1:
        raise BadInput(f"{label}: {st.st_nlink} hard links (a file written here has one); "
                       "not read")


def _read_up_to(fd: int, most: int, wait: float, label: str) -> bytes:
    """Up to ``most`` bytes of ``fd`` (opened non-blocking where the platform can), until its
    end; a wait for data longer than ``wait`` seconds is :class:`BadInput`."""
    import time

    chunks: list[bytes] = []
    got = 0
    deadline = time.monotonic() + wait
    while got < most:
        try:
            chunk = os.read(fd, min(most - got, 1 << 20))
        except BlockingIOError:
            _wait_readable(fd, deadline, wait, label)
            continue
        if not chunk:
            break
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def _wait_readable(fd: int, deadline: float, wait: float, label: str) -> None:
    import select
    import time

    left = deadline - time.monotonic()
    if left <= 0 or not select.select([fd], [], [], left)[0]:
        raise BadInput(f"{label} gave no data for {wait:g} s; torchenv does not "
                       "wait longer", hint="give the path of a file, or a pipe that is written")


def read_text_capped(path: StrPath, *, limit: int = MAX_READ_BYTES,
                     what: str | None = None) -> str:
    """:func:`read_bytes_capped` decoded as UTF-8; text that is not UTF-8 is :class:`BadInput`."""
    data = read_bytes_capped(path, limit=limit, what=what)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        label = f"{what}: {path}" if what else str(path)
        raise BadInput(f"{label} is not UTF-8 text (byte {exc.start})",
                       hint="give the path of a text file") from exc


def current_folder() -> str | None:
    """The current folder, or None when it no longer exists (deleted under the shell) or
    cannot be reached: a command that only looks there for an optional file goes on without."""
    try:
        return os.getcwd()
    except OSError:
        return None


def absolute_path(path: StrPath, *, what: str | None = None) -> str:
    """``path`` made absolute; :class:`BadInput` naming it (after ``what``) when it is relative
    to a current folder that no longer exists."""
    text = os.fspath(path)
    if not os.path.isabs(text) and current_folder() is None:
        label = f"{what}: {text}" if what else text
        raise BadInput(f"{label} is relative to the current folder, which no longer exists "
                       "(it was deleted or moved after the shell entered it)",
                       hint="cd to a folder that exists, or give an absolute path")
    return os.path.abspath(text)


def _size(n: int) -> str:
    return f"{n // (1024 * 1024)} MiB" if n >= 1024 * 1024 else f"{n} bytes"


def _new_file_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def check_target(path: StrPath, *, force: bool = True) -> None:
    """Raise now the :class:`BadInput` that :func:`write_atomic` would raise at the end, for a
    command that works a long while before it writes: ``path`` is a directory or not a regular
    file, exists while ``force`` is False, or its folder is missing or cannot be written in (a
    temporary file is made there and removed: the file system's own answer, which a permission
    check such as ``os.access`` can get wrong)."""
    target, _, parent = _target(path, force)
    fd, tmp = _temp_file(target, parent, path)
    os.close(fd)
    os.unlink(tmp)


_TEMP_NAME_KEEP = 64
"""Characters of the target's name kept in its temporary file's name."""


def _temp_file(target: Path, parent: Path, path: StrPath) -> tuple[int, str]:
    try:
        import tempfile  # only writers need it (it imports shutil and random)

        # the name is shortened: a target whose name is as long as the file system allows
        # must not be refused because of the temporary name's additions
        return tempfile.mkstemp(prefix=f".{target.name[:_TEMP_NAME_KEEP]}.", suffix=".tmp",
                                dir=parent)
    except OSError as exc:
        raise BadInput(f"{path}: cannot write in {parent}: {exc.strerror or exc}",
                       hint="choose a writable directory") from exc


def _target(path: StrPath, force: bool) -> tuple[Path, os.stat_result | None, Path]:
    """The file to write (a symlink followed), what is there now, and its folder; BadInput for
    a path that :func:`write_atomic` may not write."""
    from pathlib import Path  # only writers need it; reading commands start without pathlib

    absolute_path(path)  # a relative path in a folder that was deleted is refused by name
    target = Path(path)
    try:
        is_link = stat.S_ISLNK(os.lstat(target).st_mode)
    except FileNotFoundError:
        is_link = False
    except OSError as exc:  # a name too long, a path through a file
        raise BadInput(f"{path}: cannot write there: {exc.strerror or exc}") from exc
    if is_link:
        target = _followed(target, path)
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
    return target, st, parent


def _followed(link: Path, path: StrPath) -> Path:
    """The file the symbolic link ``link`` names, when torchenv may write it: an existing
    regular file, the link and the file both the user's own. BadInput otherwise."""
    from pathlib import Path

    hint = "remove the link, or give the path of the file itself"
    real = Path(os.path.realpath(link))
    try:
        st = os.stat(real)
    except OSError as exc:
        why = "does not exist" if isinstance(exc, FileNotFoundError) else "cannot be reached"
        raise BadInput(f"{path} is a symbolic link to {real}, which {why}; torchenv does not "
                       "create a file through a link", hint=hint) from exc
    uid = os.getuid() if hasattr(os, "getuid") else None
    owners = {os.lstat(link).st_uid, st.st_uid}
    if uid is not None and owners != {uid}:
        raise BadInput(f"{path} is a symbolic link that another user owns or that names "
                       "another user's file; torchenv does not write through it", hint=hint)
    return real


def write_atomic(path: StrPath, data: str | bytes, *, force: bool = True) -> Path:
    """Write ``data`` to ``path`` whole or not at all; returns the file actually written.

    ``force=False`` refuses to replace an existing file. Every failure is a :class:`BadInput`
    naming the path, and leaves neither a temp file nor a half-written target behind.
    """
    if isinstance(data, str):
        try:
            data = data.encode("utf-8")
        except UnicodeEncodeError as exc:  # a lone surrogate: a name that was not UTF-8
            raise BadInput(f"{path}: what would be written holds a character that is not "
                           f"Unicode text (at {exc.start}), from a name or value that is not "
                           "UTF-8; nothing was written",
                           hint="give names and values as UTF-8 text") from exc
    target, st, parent = _target(path, force)
    mode = stat.S_IMODE(st.st_mode) if st is not None else _new_file_mode()
    fd, tmp = _temp_file(target, parent, path)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, mode)
        if force:
            os.replace(tmp, target)
        else:
            _link_new(tmp, target, path)
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise BadInput(f"{path}: cannot write: {exc.strerror or exc}") from exc
        raise
    return target


def _link_new(tmp: str, target: Path, path: StrPath) -> None:
    """Give the written ``tmp`` the name ``target`` only if no file has it: a hard link fails
    when the name exists, so of several writers racing for one new file exactly one wins (a
    check before a rename would let each of them replace the others)."""
    try:
        try:
            os.link(tmp, target)
        except FileExistsError:
            raise
        except OSError:  # a file system without hard links: claim the name, then fill it
            os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
            os.replace(tmp, target)
            return
    except FileExistsError:
        raise BadInput(f"{path} already exists", hint="pass --force to overwrite it") from None
    os.unlink(tmp)


def user_cache_dir(environ: Mapping[str, str] | None = None) -> str:
    """torchenv's cache folder: ``TORCHENV_CACHE_DIR``, else ``$XDG_CACHE_HOME/torchenv`` (an
    absolute one: a relative value is ignored, as the XDG specification says), else the
    platform's: ``~/Library/Caches/torchenv`` on macOS, ``%LOCALAPPDATA%\\torchenv\\Cache`` on
    Windows, ``~/.cache/torchenv`` elsewhere. Relative only when ``TORCHENV_CACHE_DIR`` is, or
    when there is no home folder to start from."""
    env = os.environ if environ is None else environ
    if env.get("TORCHENV_CACHE_DIR"):
        return env["TORCHENV_CACHE_DIR"]
    base = env.get("XDG_CACHE_HOME", "")
    if os.path.isabs(base):
        return os.path.join(base, "torchenv")
    home = os.path.expanduser("~")
    if sys.platform == "darwin":
        return os.path.join(home, "Library", "Caches", "torchenv")
    if sys.platform == "win32":
        local = env.get("LOCALAPPDATA") or os.path.join(home, "AppData", "Local")
        return os.path.join(local, "torchenv", "Cache")
    return os.path.join(home, ".cache", "torchenv")
