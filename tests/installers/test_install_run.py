"""``torchenv install`` for real: pip and uv install the stand-in wheels of the local index into
throwaway environments, and what the user sees while that happens.

The installer's output must reach the terminal while it runs (a real torch download takes
minutes), the plan's warnings must come before the question, the argument list that runs is the
one shown, and every wait has a limit that is checked before anything starts.
"""

from __future__ import annotations

import json
import os
import pty
import shlex
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import pytest
from index_server import TORCH, LocalIndex
from installer_helpers import PY, clean_env, torchenv

pytestmark = pytest.mark.slow

VENV_BIN = Path(sys.executable).parent
UV = VENV_BIN / "uv"
#: this machine, CPU build, from the local index (install refuses another machine's target)
CPU = ["--torch", f"=={TORCH}", "--no-gpu", "--variant", "cpu", "--python", PY,
       "--platform", "linux-x86_64"]
#: directories without uv, for PATH
NO_UV_PATH = "/usr/bin:/bin"


def _require_linux_x86_64() -> None:
    import platform

    if sys.platform != "linux" or platform.machine() != "x86_64":  # pragma: no cover
        pytest.skip("the install targets name linux-x86_64, which must be this machine")


@pytest.fixture
def pip_venv(tmp_path: Path) -> Path:
    """A fresh venv with pip (ensurepip, offline) and nothing else: its python."""
    _require_linux_x86_64()
    venv = tmp_path / "pip-venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120,
                   env=clean_env())
    return venv / "bin" / "python"


@pytest.fixture
def uv_venv(tmp_path: Path) -> Path:
    """A fresh venv made by uv (no pip in it): its python."""
    _require_linux_x86_64()
    if not UV.exists():  # pragma: no cover - uv is in the test extra
        pytest.skip("uv is not installed next to this interpreter")
    venv = tmp_path / "uv-venv"
    subprocess.run([str(UV), "venv", str(venv), "--python", sys.executable, "--no-config",
                    "--no-cache", "--quiet"], check=True, timeout=120, env=clean_env())
    return venv / "bin" / "python"


def _installed_torch(python: Path) -> str:
    proc = subprocess.run([str(python), "-c", "import torch; print(torch.__version__)"],
                          capture_output=True, text=True, timeout=60, check=False)
    return proc.stdout.strip() if proc.returncode == 0 else ""


class _Collector:
    """Reads a pipe in a thread so a test can look at what has arrived so far."""

    def __init__(self, stream: IO[str]) -> None:
        self._parts: list[str] = []
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, args=(stream,), daemon=True)
        self._thread.start()

    def _run(self, stream: IO[str]) -> None:
        for line in stream:
            with self._lock:
                self._parts.append(line)

    @property
    def text(self) -> str:
        with self._lock:
            return "".join(self._parts)

    def wait_for(self, needle: str, seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if needle in self.text:
                return True
            time.sleep(0.05)
        return needle in self.text

    def finish(self) -> str:
        self._thread.join(timeout=30)
        return self.text


@pytest.fixture
def popen_torchenv(cli_cwd: Path) -> Iterator[list[subprocess.Popen[str]]]:
    """Started ``torchenv`` children, killed at the end of the test if still running."""
    started: list[subprocess.Popen[str]] = []
    yield started
    for proc in started:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


def _start(args: list[str], cwd: Path, started: list[subprocess.Popen[str]],
           env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-m", "torchenv", *args], cwd=cwd,
                            env=env or clean_env(), stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    started.append(proc)
    return proc


# --------------------------------------------------------------------------- live output


def test_install_shows_the_installers_output_while_it_runs(
    local_index: LocalIndex, pip_venv: Path, cli_cwd: Path,
    popen_torchenv: list[subprocess.Popen[str]],
) -> None:
    """While the wheel download is held, pip's own lines are already on the terminal."""
    with local_index.hold_downloads() as hold:
        proc = _start(["install", "--yes", *CPU, "--index-base", local_index.base,
                       "--python-exe", str(pip_venv)], cli_cwd, popen_torchenv)
        assert proc.stdout is not None and proc.stderr is not None
        out, err = _Collector(proc.stdout), _Collector(proc.stderr)
        assert hold.waiting.wait(90), (out.text, err.text)  # pip asked for the torch wheel
        # ...and what pip printed before asking is already shown, while it still waits
        assert out.wait_for(f"torch=={TORCH}+cpu", 30), (out.text, err.text)
        assert proc.poll() is None
        assert "Successfully installed" not in out.text
    assert proc.wait(timeout=180) == 0, err.finish()
    stdout, stderr = out.finish(), err.finish()
    assert "Successfully installed" in stdout  # pip's stdout goes to stdout
    assert stderr.index("$ ") < stderr.index("installed; prove it works")
    assert _installed_torch(pip_venv) == f"{TORCH}+cpu"


def test_install_json_streams_to_stderr_and_keeps_stdout_one_document(
    local_index: LocalIndex, uv_venv: Path, cli_cwd: Path
) -> None:
    proc = torchenv("install", "--yes", "--json", "--installer", "uv", *CPU,
                    "--index-base", local_index.base, "--python-exe", str(uv_venv), cwd=cli_cwd)
    doc = json.loads(proc.stdout)  # the whole of stdout: one document
    assert doc["ran"] is True and doc["returncode"] == 0 and doc["timed_out"] is False
    # the argument list that ran is the one shown, and no string was split to get it
    assert shlex.split(doc["command"]) == doc["argv"]
    assert doc["argv"][1:5] == ["pip", "install", "--python", str(uv_venv)]
    # uv's report went to stderr as it ran, and its end is kept in the document
    assert f"torch=={TORCH}+cpu" in proc.stderr
    assert f"torch=={TORCH}+cpu" in doc["output_tail"]
    assert len(doc["output_tail"]) <= 4000
    assert _installed_torch(uv_venv) == f"{TORCH}+cpu"
    # the plan's constraints file is kept in the environment, for PIP_CONSTRAINT/UV_CONSTRAINT
    kept = uv_venv.parent.parent / "torch-constraints.txt"
    assert doc["constraints_written"] == str(kept)
    assert f"torch=={TORCH}+cpu" in kept.read_text().splitlines()
    assert doc["plan"]["constraints"]["text"] == kept.read_text()


def test_installer_failure_reports_the_last_output(
    local_index: LocalIndex, uv_venv: Path, cli_cwd: Path
) -> None:
    """A mirror without the planned torchaudio: uv fails, the error names why."""
    proc = torchenv("install", "--yes", "--json", "--installer", "uv", "--torch", f"=={TORCH}",
                    "--driver", "570.86.15", "--gpu", "8.6", "--variant", "cu128", "--python",
                    PY, "--platform", "linux-x86_64", "--index-base", local_index.broken_base,
                    "--python-exe", str(uv_venv), cwd=cli_cwd, check=1)
    doc = json.loads(proc.stdout)
    assert doc["ran"] is True and doc["returncode"] not in (0, None)
    assert "torchaudio" in doc["output_tail"]
    assert "torchenv: error: " in proc.stderr and "torchaudio" in proc.stderr
    assert _installed_torch(uv_venv) == ""


def test_pip_into_a_venv_without_pip_says_what_to_do(uv_venv: Path, cli_cwd: Path) -> None:
    proc = torchenv("install", "--yes", *CPU, "--python-exe", str(uv_venv), cwd=cli_cwd,
                    check=1)
    assert "No module named pip" in proc.stderr
    assert "--installer uv" in proc.stderr.split("hint:", 1)[1]


# --------------------------------------------------------------------------- before the question


def test_plan_warnings_come_before_the_question(cli_cwd: Path) -> None:
    """A plan with a warning, asked on a terminal: the warning is read before the answer."""
    primary, secondary = pty.openpty()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "torchenv", "install", "--torch", f"=={TORCH}", "--no-gpu",
             "--variant", "cu128", "--python", PY, "--platform", "linux-x86_64"],
            cwd=cli_cwd, env=clean_env(), stdin=secondary, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True)
        os.write(primary, b"n\n")
        stdout, stderr = proc.communicate(timeout=120)
        assert stdout == ""  # without --json nothing of the question goes to stdout
    finally:
        os.close(primary)
        os.close(secondary)
    assert proc.returncode == 1, stderr
    assert "nothing installed" in stderr
    warning = stderr.find("warning: no NVIDIA GPU found: cu128 was asked for explicitly")
    assert 0 <= warning < stderr.index("Run it? [y/N]"), stderr


# --------------------------------------------------------------------------- bounded waits


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "-1", "0", "86401", "1e999", "soon"])
def test_a_bad_timeout_is_refused_before_anything_starts(value: str, cli_cwd: Path,
                                                         tmp_path: Path) -> None:
    """Exit 2 naming the value, and not even the target interpreter was started."""
    started = tmp_path / "started"
    fake = tmp_path / "python"
    fake.write_text(f"#!/bin/sh\ntouch {shlex.quote(str(started))}\n"
                    f"exec {shlex.quote(sys.executable)} \"$@\"\n")
    fake.chmod(0o755)
    proc = torchenv("install", "--yes", f"--timeout={value}", *CPU, "--python-exe", str(fake),
                    cwd=cli_cwd, check=2)
    assert "torchenv: error: --timeout" in proc.stderr
    assert repr(value) in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not started.exists()


def _processes_mentioning(text: str) -> list[str]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if text in cmdline:
                found.append(cmdline)
    return found


def test_a_stuck_download_is_stopped_at_the_timeout(
    local_index: LocalIndex, pip_venv: Path, cli_cwd: Path
) -> None:
    with local_index.hold_downloads():
        start = time.monotonic()
        proc = torchenv("install", "--yes", "--timeout", "4", *CPU, "--index-base",
                        local_index.base, "--python-exe", str(pip_venv), cwd=cli_cwd, check=1)
        took = time.monotonic() - start
    assert took < 45, took
    assert "did not finish within" in proc.stderr
    assert "--timeout" in proc.stderr.split("did not finish within", 1)[1]  # what to do next
    assert not _processes_mentioning(str(pip_venv))  # pip was ended with the command
    assert _installed_torch(pip_venv) == ""


# --------------------------------------------------------------------------- finding uv


def test_the_installer_flag_offers_exactly_the_installers_there_are() -> None:
    from torchenv.cli import build_parser
    from torchenv.installers.render import INSTALLERS

    parser = build_parser(only="install")
    sub = next(a for a in parser._actions if a.dest == "command")
    install = sub.choices["install"]
    [flag] = [a for a in install._actions if a.dest == "installer"]
    assert tuple(flag.choices) == INSTALLERS


def test_uv_next_to_this_interpreter_is_used_when_not_on_path(
    local_index: LocalIndex, uv_venv: Path, cli_cwd: Path
) -> None:
    """`/venv/bin/torchenv install --installer uv` without activating the venv."""
    proc = torchenv("install", "--yes", "--json", "--installer", "uv", *CPU, "--index-base",
                    local_index.base, "--python-exe", str(uv_venv), cwd=cli_cwd,
                    env=clean_env(PATH=NO_UV_PATH))
    doc = json.loads(proc.stdout)
    assert doc["argv"][0] == str(UV)
    assert doc["returncode"] == 0
    assert _installed_torch(uv_venv) == f"{TORCH}+cpu"


@pytest.fixture
def python_without_uv(tmp_path: Path) -> Path:
    """An interpreter that can run torchenv but has no uv next to it."""
    import sysconfig

    venv = tmp_path / "no-uv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   timeout=120)
    site = next((venv / "lib").glob("python*/site-packages"))
    ours = sysconfig.get_path("purelib")
    (site / "torchenv-tests.pth").write_text(f"import site; site.addsitedir({ours!r})\n")
    assert not (venv / "bin" / "uv").exists()
    return venv / "bin" / "python"


def test_uv_missing_everywhere_is_bad_input_that_says_how_to_get_it(
    python_without_uv: Path, cli_cwd: Path
) -> None:
    """A real run without uv is refused; a dry run shows the command with plain ``uv``
    (tests/cli/test_everyday_outputs.py) because it runs nothing."""
    proc = subprocess.run(
        [str(python_without_uv), "-m", "torchenv", "install", "--installer", "uv", "--yes", *CPU,
         "--python-exe", str(python_without_uv)],
        cwd=cli_cwd, env=clean_env(PATH=NO_UV_PATH), capture_output=True, text=True,
        timeout=120, check=False)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "torchenv: error: --installer uv: uv is not on PATH" in proc.stderr
    assert "pip install uv" in proc.stderr and "docs.astral.sh/uv" in proc.stderr
    assert proc.stdout == ""
