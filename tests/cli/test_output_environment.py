"""The stream a command prints to is the user's, whatever it is: a console whose code page
cannot carry our text, a closed standard output, a reader that has gone away.

Every case goes through the one output layer (:mod:`torchenv.cli._output`); most are judged
in-process on a real text stream of the encoding under test, and one child per kind proves
the interpreter's own streams behave the same way.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hermetic import hermetic
from torchenv.cli import main
from torchenv.cli._output import clean

GPU_NAME = "GeForce RTX\u2122 4090 \u201cTi\u201d \u2014 \u65e5\u672c \U0001f600 caf\u00e9"

HOST = {"platform": "linux-x86_64", "python": "3.12", "glibc": "2.35", "rocm": None,
        "xpu": None, "mps": False, "torch": None,
        "nvidia": {"driver_version": "550.54.15", "cuda_driver_version": "12.4",
                   "source": "nvml", "cuda_visible_devices": None, "visible": None,
                   "gpus": [{"index": 0, "name": GPU_NAME, "compute_capability": "8.9",
                             "memory_mib": 24564, "uuid": "GPU-0", "mig_mode": False}]}}


@pytest.fixture
def host_file(tmp_path: Path) -> Path:
    path = tmp_path / "host.json"
    path.write_text(json.dumps(HOST))
    return path


@pytest.fixture(autouse=True)
def _no_overlay(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [k for k in os.environ if k.startswith("TORCHENV_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("TORCHENV_NO_OVERLAY", "1")


def _run(args: list[str], monkeypatch: pytest.MonkeyPatch, *, encoding: str = "utf-8",
         stdout_closed: bool = False) -> tuple[int, bytes, str]:
    """``main(args)`` printing to a real text stream of ``encoding`` (or with no stdout, as
    Python starts when it is closed): the status, the bytes written, and stderr."""
    out = io.BytesIO()
    err = io.StringIO()
    stream = io.TextIOWrapper(out, encoding=encoding, newline="\n")
    monkeypatch.setattr(sys, "stdout", None if stdout_closed else stream)
    monkeypatch.setattr(sys, "stderr", err)
    status = main(args)
    stream.flush()
    return status, out.getvalue(), err.getvalue()


# ------------------------------------------------------------------------- what is filtered

BIDI = ["\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067", "\u2068",
        "\u2069", "\u2028", "\u2029"]


@pytest.mark.parametrize("char", BIDI, ids=[f"U+{ord(c):04X}" for c in BIDI])
@pytest.mark.parametrize("keep_colour", [False, True], ids=["pipe", "terminal"])
def test_bidirectional_overrides_are_shown_like_control_characters(char: str,
                                                                  keep_colour: bool) -> None:
    assert clean(f"gpu{char}-07 ok", keep_colour=keep_colour) == "gpu?-07 ok"


def test_a_gpu_name_with_an_override_reaches_the_console_defused(
        host_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    host = json.loads(host_file.read_text())
    host["nvidia"]["gpus"][0]["name"] = "RTX \u202egnp.exe\u202c 4090"
    host_file.write_text(json.dumps(host))
    status, out, err = _run(["detect", "--host", str(host_file)], monkeypatch)
    assert status == 0, err
    shown = out.decode()
    assert "RTX ?gnp.exe? 4090" in shown
    assert not any(c in shown + err for c in BIDI)


# ------------------------------------------------------------------------- encodings

ENCODINGS = ["ascii", "latin-1", "cp1252", "cp437"]
COMMANDS = [["matrix", "show"], ["resolve", "--host", "HOST"], ["detect", "--host", "HOST"],
            ["resolve", "--host", "HOST", "--explain"]]


@pytest.mark.parametrize("encoding", ENCODINGS)
@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: " ".join(a[:2]).replace("--", ""))
def test_every_command_prints_to_a_console_that_cannot_carry_its_text(
        encoding: str, args: list[str], host_file: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    args = [str(host_file) if a == "HOST" else a for a in args]
    status, out, err = _run(args, monkeypatch, encoding=encoding)
    assert status == 0, err
    text = out.decode(encoding)
    assert text.strip()
    if args[0] == "detect":
        assert "GeForce RTX" in text and "4090" in text  # the name, as far as it can go


@pytest.mark.parametrize("encoding", ENCODINGS)
@pytest.mark.parametrize("command", [["detect"], ["resolve"], ["matrix", "show"]],
                         ids=lambda c: " ".join(c))
def test_json_stays_valid_json_on_any_console(encoding: str, command: list[str],
                                              host_file: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    args = [*command, "--json"] + (["--host", str(host_file)] if command[0] != "matrix" else [])
    status, out, err = _run(args, monkeypatch, encoding=encoding)
    assert status == 0, err
    doc = json.loads(out.decode(encoding))
    if command[0] == "detect":
        assert doc["nvidia"]["gpus"][0]["name"] == GPU_NAME  # escaped, not lost


def test_a_lone_surrogate_in_a_name_does_not_fail_a_utf8_console(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file name that is not UTF-8 reaches Python as a lone surrogate, which even UTF-8
    cannot encode."""
    (tmp_path / "node-1.validate.json").write_text("{")
    os.rename(tmp_path / "node-1.validate.json",
              os.fsencode(tmp_path) + b"/node-\xff.validate.json")
    status, _, err = _run(["fleet", "report", str(tmp_path)], monkeypatch)
    assert status in (1, 2), err
    assert "Traceback" not in err


def test_the_interpreters_own_ascii_stream(host_file: Path, tmp_path: Path) -> None:
    """The real thing once: ``PYTHONIOENCODING=ascii``, as a Windows console or a C locale
    gives it."""
    env = hermetic({**{k: v for k, v in os.environ.items() if not k.startswith("TORCHENV_")},
                    "TORCHENV_NO_OVERLAY": "1", "PYTHONIOENCODING": "ascii"})
    proc = subprocess.run([sys.executable, "-m", "torchenv", "resolve", "--host",
                           str(host_file), "--explain"], capture_output=True, env=env,
                          timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    assert b"Traceback" not in proc.stderr
    proc.stdout.decode("ascii")


# ------------------------------------------------------------------------- closed and gone

@pytest.mark.parametrize("args", [["resolve", "--no-gpu", "--json"], ["matrix", "show"],
                                  ["resolve", "--no-gpu"], ["matrix", "show", "--json"],
                                  ["resolve", "--driver", "x", "--json"]],
                         ids=["json", "table", "plan", "matrix-json", "error-document"])
def test_output_to_a_closed_stdout_is_a_failure_that_says_so(
        args: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    status, _, err = _run(args, monkeypatch, stdout_closed=True)
    assert status == 1
    assert "standard output is closed; the output was not delivered" in err
    assert "Traceback" not in err


def test_a_command_that_prints_nothing_there_works_with_stdout_closed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "requirements.txt"
    status, _, err = _run(["env", "--format", "requirements", "--no-gpu", "-o", str(target)],
                          monkeypatch, stdout_closed=True)
    assert status == 0, err
    assert "torch==" in target.read_text()


@pytest.mark.parametrize("args", [["resolve", "--no-gpu", "--json"], ["matrix", "show"]],
                         ids=["json", "table"])
def test_a_real_closed_stdout(args: list[str]) -> None:
    env = hermetic({**{k: v for k, v in os.environ.items() if not k.startswith("TORCHENV_")},
                    "TORCHENV_NO_OVERLAY": "1"})
    proc = subprocess.run(["sh", "-c", 'exec "$@" >&-', "sh", sys.executable, "-m",
                           "torchenv", *args], stderr=subprocess.PIPE, text=True, env=env,
                          timeout=60, check=False)
    assert proc.returncode == 1
    assert proc.stderr == ("torchenv: error: standard output is closed; the output was not "
                           "delivered\n")


def test_a_refused_write_that_code_caught_still_fails_the_command(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Code that catches OSError around a print (the refusal is one) cannot turn the lost
    output into success: the command's last flush says it again."""
    import torchenv.cli as cli

    def swallowing(args: list[str], prog: str | None) -> int:
        with contextlib.suppress(OSError):
            print("the answer")
        return 0

    monkeypatch.setattr(cli, "_run", swallowing)
    status, _, err = _run(["resolve"], monkeypatch, stdout_closed=True)
    assert status == 1
    assert "standard output is closed; the output was not delivered" in err
