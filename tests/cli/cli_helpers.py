"""Running the real CLI in a child under limits, and what every run must satisfy."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from hermetic import EMPTY_ROOT, hermetic

__all__ = ["ADDRESS_SPACE", "assert_clean_exit", "json_documents", "run_limited"]

ADDRESS_SPACE = 2 * 1024**3
"""The address space a CLI child may map: far above what any command needs, far below what an
alias bomb or an unbounded read would take."""


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def run_limited(
    args: Sequence[str],
    env: Mapping[str, str] | None = None,
    *,
    cwd: str | Path | None = None,
    timeout: float = 30,
    stdin: Any = subprocess.DEVNULL,
) -> subprocess.CompletedProcess[str]:
    """``python -m torchenv ARGS`` in a child with at most :data:`ADDRESS_SPACE` of memory.

    No TORCHENV_* leaks in from the environment running the tests; the overlay is the one the
    test names (``TORCHENV_MATRIX_OVERLAY``), else none, and never the user's own.
    """
    child_env = {k: v for k, v in os.environ.items() if not k.startswith("TORCHENV_")}
    child_env["TORCHENV_MATRIX_OVERLAY"] = str(EMPTY_ROOT / "no-overlay.yaml")
    child_env.update(env or {})
    hermetic(child_env)
    return subprocess.run(
        [sys.executable, "-m", "torchenv", *args],
        capture_output=True,
        text=True,
        errors="replace",
        env=child_env,
        cwd=cwd,
        timeout=timeout,
        stdin=stdin,
        preexec_fn=_limit_memory,
        check=False,
    )


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
