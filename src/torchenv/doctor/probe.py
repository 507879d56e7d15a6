"""The edge of doctor that runs ``import torch``: one bounded child of the target interpreter,
with the user's environment and current folder, through the subprocess funnel; and the check of
the ``RECORD`` files of what it found."""

from __future__ import annotations

import base64
import csv
import hashlib
import os
import stat
from collections.abc import Mapping, Sequence
from typing import Optional

from torchenv.doctor.seen import RecordProblem, Seen, SeenDistribution, seen_from_report

__all__ = ["HASH_CAP", "IMPORT_LIMIT", "check_record", "check_records", "probe_import"]

IMPORT_LIMIT = 60.0
"""Seconds the child may take to import torch, torchvision and torchaudio (a cold start of a
CUDA build from a network file system takes tens of seconds)."""

HASH_CAP = 4 << 20
"""Files up to this size are hashed against RECORD; larger ones (the shared libraries, hundreds
of MiB) are compared by size only, which an interrupted or mixed install changes too."""

CHECKED = ("torch", "torchvision", "torchaudio")
"""The distributions whose RECORD is checked."""

_SCRIPT = os.path.join(os.path.dirname(__file__), "_import_child.py")


def probe_import(python: str, env: Mapping[str, str], *, cwd: Optional[str] = None,
                 limit: float = IMPORT_LIMIT, check_files: bool = True,
                 also: Sequence[str] = ()) -> Seen:
    """What ``python -c 'import torch'`` does when the user runs it from ``cwd`` with ``env``:
    the child's report, ended at ``limit`` seconds (its process group killed), with the RECORD
    problems of the torch family when ``check_files``. ``also`` names more modules (companions
    such as ``torch_scatter``) the child imports after torch, each reported like torch's."""
    from torchenv._subprocess import run_process

    with open(_SCRIPT, encoding="utf-8") as fh:
        source = fh.read()
    res = run_process([python, "-c", source, *also], timeout=limit, env=dict(env), cwd=cwd)
    ended = None
    if res.error:
        ended = res.error
    elif not res.timed_out and not res.ok:
        ended = res.describe_failure()
    seen = seen_from_report(python, res.stdout, limit=limit, timed_out=res.timed_out,
                            ended=ended, stderr=res.stderr)
    if not check_files:
        return seen
    from dataclasses import replace

    return replace(seen, records=check_records(seen.distributions))


def check_records(dists: Sequence[SeenDistribution]) -> tuple[RecordProblem, ...]:
    """The RECORD problems of every torch, torchvision and torchaudio on the path."""
    found = []
    for dist in dists:
        if dist.name in CHECKED and dist.has_record:
            problem = check_record(dist)
            if problem is not None:
                found.append(problem)
    return tuple(found)


def check_record(dist: SeenDistribution) -> Optional[RecordProblem]:
    """Files ``dist``'s RECORD lists that are missing, of another size, or (up to
    :data:`HASH_CAP`) of another hash; None when all agree or there is no RECORD to read.

    Only regular files are read: an entry that is a device (``/dev/zero``), a FIFO or a folder
    is not what the wheel wrote and counts as changed without being opened, and an entry
    outside the distribution's folder (an absolute path, or ``../../../bin/torchrun``) is
    compared by size only, never read."""
    path = os.path.join(dist.meta_dir, "RECORD")
    try:
        with open(path, encoding="utf-8", newline="") as fh:
            rows = list(csv.reader(fh))
    except (OSError, UnicodeDecodeError, csv.Error):
        return None
    location = os.path.normpath(dist.location)
    missing, changed = [], []
    for row in rows:
        if len(row) < 3 or not row[1]:
            continue  # RECORD itself, .pyc files: listed without a hash
        name, digest, size = row[0], row[1], row[2]
        full = os.path.normpath(os.path.join(location, name))
        try:
            info = os.stat(full)
        except (OSError, ValueError):  # ValueError: a NUL byte in the entry
            missing.append(name)
            continue
        inside = full.startswith(location + os.sep)
        if (not stat.S_ISREG(info.st_mode)
                or (size.isdigit() and int(size) != info.st_size)
                or (inside and info.st_size <= HASH_CAP and not _hash_matches(full, digest))):
            changed.append(name)
    if not missing and not changed:
        return None
    return RecordProblem(dist.name, dist.version, dist.location, tuple(missing), tuple(changed))


_OPEN_FLAGS = (os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
               | getattr(os, "O_CLOEXEC", 0))
"""Read-only, and never waiting in open(): a FIFO swapped in after the stat opens at once and
is then refused as not a regular file."""


def _hash_matches(path: str, digest: str) -> bool:
    """Whether the regular file ``path`` has ``digest`` (``sha256=…``), reading at most
    :data:`HASH_CAP` + 1 bytes (a file that grew past the cap does not match)."""
    algorithm, _, expected = digest.partition("=")
    if algorithm not in hashlib.algorithms_guaranteed:
        return True  # a hash we cannot compute says nothing
    hasher = hashlib.new(algorithm)
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError:
        return False
    with os.fdopen(fd, "rb", buffering=0) as fh:
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return False
            left = HASH_CAP + 1
            while left > 0:
                chunk = fh.read(min(1 << 20, left))
                if not chunk:
                    break
                hasher.update(chunk)
                left -= len(chunk)
        except OSError:
            return False
    return (left > 0
            and base64.urlsafe_b64encode(hasher.digest()).rstrip(b"=").decode() == expected)
