"""Running the real CLI in a child under limits, and what every run must satisfy."""

from __future__ import annotations

import contextlib
import json
import os
import resource
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from hermetic import EMPTY_ROOT, hermetic

__all__ = ["ADDRESS_SPACE", "assert_clean_exit", "json_documents", "run_limited",
           "session_processes"]

ADDRESS_SPACE = 2 * 1024**3
"""The address space a CLI child may map: far above what any command needs, far below what an
alias bomb or an unbounded read would take."""


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def session_processes(session: int) -> list[int]:
    """The processes still alive in ``session`` (read from /proc), zombies left out."""
    alive = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # gone while being read
        if fields[0] != "Z" and int(fields[3]) == session:
            alive.append(int(stat.parent.name))
    return alive


def run_limited(
    args: Sequence[str],
    env: Mapping[str, str] | None = None,
    *,
    cwd: str | Path | None = None,
    timeout: float = 30,
    stdin: Any = subprocess.DEVNULL,
    leftovers: list[int] | None = None,
) -> subprocess.CompletedProcess[str]:
    """``python -m torchenv ARGS`` in a child with at most :data:`ADDRESS_SPACE` of memory.

    No TORCHENV_* leaks in from the environment running the tests; the overlay is the one the
    test names (``TORCHENV_MATRIX_OVERLAY``), else none, and never the user's own. The child
    leads a session of its own: any process of that session still alive when it has exited is
    killed and, when ``leftovers`` is given, its pid added there.
    """
    child_env = {k: v for k, v in os.environ.items() if not k.startswith("TORCHENV_")}
    child_env["TORCHENV_MATRIX_OVERLAY"] = str(EMPTY_ROOT / "no-overlay.yaml")
    child_env.update(env or {})
    hermetic(child_env)
    argv = [sys.executable, "-m", "torchenv", *args]
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          errors="replace", env=child_env, cwd=cwd, stdin=stdin,
                          preexec_fn=_limit_memory, start_new_session=True) as child:
        try:
            out, err = child.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
            child.communicate()
            raise
        finally:
            left = session_processes(child.pid)
            for pid in left:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            if leftovers is not None:
                leftovers.extend(left)
    return subprocess.CompletedProcess(argv, child.returncode, out, err)


def json_documents(text: str) -> list[Any]:
    """Every JSON document in ``text``, in order; raises ValueError for anything else there."""
    decoder = json.JSONDecoder()
    docs, pos = [], 0
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos == len(text):
            return docs
        doc, pos = decoder.raw_decode(text, pos)
        docs.append(doc)


def assert_clean_exit(r: subprocess.CompletedProcess[str], *, as_json: bool) -> None:
    """The contract every run keeps, whatever its input: an exit code CLI.md defines, no
    traceback, a bad input explained on one ``torchenv: error:`` line, and with ``--json``
    exactly one JSON document on stdout."""
    assert "Traceback" not in r.stderr, r.stderr[-3000:]
    assert r.returncode in (0, 1, 2, 3), (r.returncode, r.stderr[-3000:])
    if r.returncode == 2:
        assert "torchenv: error:" in r.stderr, r.stderr[-3000:]
    if as_json:
        docs = json_documents(r.stdout)
        assert len(docs) == 1, r.stdout[:2000]
        if r.returncode == 2 and isinstance(docs[0], dict) and "error" in docs[0]:
            assert docs[0]["exit_code"] == 2
