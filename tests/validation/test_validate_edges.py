"""``validate`` at its edges, before any torch child runs: what is not a usable Python is refused
as bad input, an interpreter that floods its output is stopped at the cap, an interrupt
during detection still gives the ``--json`` document, and an ``--only`` check that could not
run without torch says so.
Real CLI processes, real floods, real signals; nothing here imports torch."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from tests.validation.helpers import MARK, check_contract, marked

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="reads /proc/PID/environ")


def _env(tmp_path: Path, mark: str, **extra: str) -> dict[str, str]:
    from hermetic import hermetic

    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCHENV_")}
    env.update({MARK: mark, "TORCHENV_NO_OVERLAY": "1", "TORCHENV_NVIDIA_SMI": "off",
                "TORCHENV_CACHE_DIR": str(tmp_path / "cache")})
    env.update(extra)
    hermetic(env)
    return env


def _script(tmp_path: Path, name: str, body: str) -> Path:
    path = tmp_path / name
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return path


def _interpreter(tmp_path: Path, body: str) -> Path:
    """A stand-in interpreter that answers torchenv's inspection (``python -I -c ...``) as
    this Python does and runs ``body`` as the validation child (``python -u _probe.py``)."""
    return _script(tmp_path, "python",
                   f'if [ "$1" = "-I" ]; then exec {sys.executable} "$@"; fi\n{body}')


OLD_PYTHONS = sorted(str(p) for pattern in ("2.*", "3.[0-6].*")
                     for p in Path.home().glob(f".pyenv/versions/{pattern}/bin/python"))
"""Interpreters too old for torchenv's inspection, where pyenv has them."""


@pytest.mark.parametrize("make", [
    lambda tmp: Path("/bin/false"),
    lambda tmp: Path("/bin/sh"),
    lambda tmp: _script(tmp, "python", "echo 'Python 3.12.0'"),
    lambda tmp: _script(tmp, "python", "echo '{\"version_info\": [3, 12]}'"),
    lambda tmp: tmp,
    lambda tmp: tmp / "missing" / "python",
    *[lambda tmp, old=old: Path(old) for old in OLD_PYTHONS],
], ids=["false", "sh", "prints-text", "prints-other-json", "a-folder", "missing",
        *[Path(old).parent.parent.name for old in OLD_PYTHONS]])
def test_what_is_not_a_usable_python_is_refused_before_the_validation_child(
        tmp_path: Path, make: Any) -> None:
    python = make(tmp_path)
    mark = uuid.uuid4().hex
    proc = subprocess.run([sys.executable, "-m", "torchenv", "validate", "--python", str(python),
                           "--json"], capture_output=True, text=True, timeout=60,
                          env=_env(tmp_path, mark), check=False)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    assert "validation child" not in proc.stderr  # refused before it started
    doc = json.loads(proc.stdout)
    assert doc["exit_code"] == 2 and set(doc) == {"error", "hint", "exit_code"}, doc
    assert doc["error"].startswith((f"--python: interpreter {python} ",
                                    f"--python: cannot inspect the interpreter {python}: ")), doc
    assert "python" in doc["hint"].lower() and "torchenv install" not in doc["hint"], doc


@pytest.mark.parametrize(("body", "says"), [
    ("exec cat /dev/zero", "a line longer than 1 MiB"),
    ("exec yes", "KiB that is not the validation protocol"),
    ("echo '{\"event\": \"note\"}'\nexec yes '{}'", "KiB that is not the validation protocol"),
], ids=["dev-zero", "yes", "json-objects"])
def test_an_interpreter_that_floods_is_stopped_at_the_cap(tmp_path: Path, body: str,
                                                          says: str) -> None:
    mark = uuid.uuid4().hex
    python = _interpreter(tmp_path, body)
    began = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "torchenv", "validate", "--python", str(python),
                           "--json"], capture_output=True, text=True, timeout=60,
                          env=_env(tmp_path, mark), check=False)
    took = time.monotonic() - began
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["exit_code"] == 2
    assert doc["error"].startswith(f"--python: {python} wrote ") and says in doc["error"], doc
    assert "stopped" in doc["error"]
    # the command as a whole (start-up, detection, the flood) in seconds, not the 120 s of
    # the probe's hello timeout
    assert took < 15, took
    assert marked(mark) == [], "the flooding interpreter is still running"


def _json_after_signal(tmp_path: Path, signum: int, where: str
                       ) -> tuple[int, str, str, str, str]:
    """``validate --json`` with an nvidia-smi (``where="detection"``) or an interpreter
    (``"inspection"``) that hangs, signalled once the command reaches it; (exit status, stdout,
    stderr, mark, the interpreter validated)."""
    mark = uuid.uuid4().hex
    started = tmp_path / "started"
    hang = _script(tmp_path, "nvidia-smi" if where == "detection" else "python",
                   f"touch {started}\nexec sleep 600")
    env = _env(tmp_path, mark, TORCHENV_NVIDIA_SMI=str(hang), TORCHENV_PROBE_TIMEOUT="5")
    python = sys.executable if where == "detection" else str(hang)
    proc = subprocess.Popen([sys.executable, "-m", "torchenv", "validate", "--json",
                             *(["--python", python] if where == "inspection" else [])],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        end = time.monotonic() + 60
        while not started.exists():
            assert proc.poll() is None and time.monotonic() < end, f"{hang} never ran"
            time.sleep(0.05)
        os.kill(proc.pid, signum)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return proc.returncode, out, err, mark, python


@pytest.mark.parametrize("where", ["detection", "inspection"])
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_an_interrupt_before_any_check_still_prints_the_json_report(
        tmp_path: Path, signum: int, where: str) -> None:
    code, out, err, mark, python = _json_after_signal(tmp_path, signum, where)
    assert code == 128 + signum, err
    assert "interrupted" in err and "Traceback" not in err
    doc = json.loads(out)
    check_contract(doc)
    assert doc["interrupted"] is True and doc["ok"] is False
    assert doc["checks"] == [] and doc["torch"] is None
    assert doc["python"] == python or os.path.samefile(doc["python"], python)
    deadline = time.monotonic() + 10
    while marked(mark) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert marked(mark) == [], f"the hung {where} outlived the command"


def test_json_nested_past_the_stack_is_other_output_not_a_hang(tmp_path: Path) -> None:
    """One line of objects nested 40,000 deep (under the line cap) makes ``json.loads`` raise
    RecursionError; the reader takes it for other output, sees the interpreter end, and the run
    ends with one clear failure instead of waiting out the probe's 120 s."""
    mark = uuid.uuid4().hex
    deep = tmp_path / "deep.json"
    deep.write_text('{"a":' * 40_000 + "1" + "}" * 40_000 + "\n")
    python = _interpreter(tmp_path, f"cat {deep}")
    began = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "torchenv", "validate", "--python", str(python),
                           "--json"], capture_output=True, text=True, timeout=60,
                          env=_env(tmp_path, mark), check=False)
    assert time.monotonic() - began < 15
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    doc = json.loads(proc.stdout)
    check_contract(doc)
    [only] = doc["checks"]
    assert only["name"] == "import_torch" and only["status"] == "fail", only
    assert "exited with status 0 while importing torch" in only["error"], only


def test_an_only_check_that_torch_was_needed_for_says_so(tmp_path: Path) -> None:
    """This Python without its site-packages is a real interpreter without torch: a named
    check of the level did not run because of that, and says so; a name that is no check of
    the level (a typo, a full-level check at quick) stays 'no check of this name'."""
    mark = uuid.uuid4().hex
    python = _script(tmp_path, "python", f'exec {sys.executable} -S "$@"')
    proc = subprocess.run([sys.executable, "-m", "torchenv", "validate", "--python", str(python),
                           "--json", "--only", "matmul,amp[cuda:1],no_such_check,torch_compile"],
                          capture_output=True, text=True, timeout=60, env=_env(tmp_path, mark),
                          check=False)
    assert proc.returncode == 1, proc.stderr
    doc = json.loads(proc.stdout)
    check_contract(doc)
    checks = {c["name"]: c for c in doc["checks"]}
    assert checks["import_torch"]["error"] == "torch is not installed in this interpreter"
    for name in ("matmul", "amp[cuda:1]"):
        assert checks[name]["status"] == "skip", checks[name]
        assert checks[name]["reason"] == "not run: torch could not be imported (see import_torch)"
    for name in ("no_such_check", "torch_compile"):
        assert checks[name]["status"] == "skip", checks[name]
        assert checks[name]["reason"].startswith("no check of this name ran here (level quick)")
    assert set(checks) == {"import_torch", "matmul", "amp[cuda:1]", "no_such_check",
                           "torch_compile"}


@pytest.mark.parametrize("value", ["0", "-1", "nan", "1e9"])
def test_a_timeout_out_of_range_is_named_with_what_to_give(tmp_path: Path, value: str) -> None:
    proc = subprocess.run([sys.executable, "-m", "torchenv", "validate", "--timeout", value,
                           "--json"], capture_output=True, text=True, timeout=60,
                          env=_env(tmp_path, uuid.uuid4().hex), check=False)
    assert proc.returncode == 2, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["error"].startswith("--timeout: must be a number of seconds above 0 and at most "
                                   "86400, not "), doc
    assert doc["hint"] == "e.g. --timeout 300, or leave it out: each check then has its own budget"
