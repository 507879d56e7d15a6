"""Control characters from data never reach the terminal: one filter on everything printed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.conftest import Cli
from tests.detection.detection_helpers import fake_smi

from torchenv.cli._output import clean

HOSTILE = "NVIDIA \x1b]0;owned\x07GeForce \x1b[2J\x9bRTX\x08 4090\x7f"


@pytest.mark.parametrize(("text", "keep_colour", "expected"), [
    ("plain text\twith tab\n", False, "plain text\twith tab\n"),
    ("title \x1b]0;x\x07 end", False, "title ?]0;x? end"),
    ("\x1b[1mbold\x1b[0m", False, "?[1mbold?[0m"),
    ("\x1b[1mbold\x1b[0m", True, "\x1b[1mbold\x1b[0m"),
    ("clear \x1b[2J screen", True, "clear ?[2J screen"),
    ("C1 \x9b and DEL \x7f and CR \r", True, "C1 ? and DEL ? and CR ?"),
], ids=["tab-newline-kept", "osc-title", "colour-off-terminal", "colour-on-terminal",
        "clear-screen-on-terminal", "c1-del-cr"])
def test_clean(text: str, keep_colour: bool, expected: str) -> None:
    assert clean(text, keep_colour=keep_colour) == expected


def test_a_gpu_name_with_escape_sequences_prints_none(tmp_path: Path, cli: Cli) -> None:
    """nvidia-smi (here a stand-in printing a hostile name) is data from outside."""
    query = f"0, {HOSTILE}, 8.9, 24564, GPU-00000000-0000-0000-0000-000000000000, 550.54.15\n"
    smi = fake_smi(tmp_path / "bin", query=query)
    proc = cli(["detect"], env={"TORCHENV_NVIDIA_SMI": str(smi)})
    assert proc.returncode == 0, proc.stderr
    shown = proc.stdout + proc.stderr
    assert not any(ch in shown for ch in "\x1b\x07\x9b\x7f\x08"), repr(shown)
    assert "GeForce ?[2J?RTX" in shown  # the name is shown, its sequences defused


def test_json_documents_escape_them_instead(tmp_path: Path, cli: Cli) -> None:
    query = f"0, {HOSTILE}, 8.9, 24564, GPU-00000000-0000-0000-0000-000000000000, 550.54.15\n"
    smi = fake_smi(tmp_path / "bin", query=query)
    proc = cli(["detect", "--json"], env={"TORCHENV_NVIDIA_SMI": str(smi)})
    assert proc.returncode == 0, proc.stderr
    assert "\x1b" not in proc.stdout
    assert json.loads(proc.stdout)["nvidia"]["gpus"][0]["name"] == HOSTILE.strip()


def test_a_file_name_with_escape_sequences_prints_none(tmp_path: Path, cli: Cli) -> None:
    proc = cli(["resolve", "--host", str(tmp_path / "node\x1b]0;owned\x07.json")])
    assert proc.returncode == 2
    assert "\x1b" not in proc.stderr and "\x07" not in proc.stderr
    assert "node?]0;owned?.json" in proc.stderr


SECRET_BASE = "https://alice:s3cret@mirror.example/whl"


@pytest.mark.parametrize(("text", "redacted", "stripped"), [
    ("https://alice:s3cret@mirror.example/whl/cpu", "https://alice:****@mirror.example/whl/cpu",
     "https://mirror.example/whl/cpu"),
    ("--index-url https://tok3n@h/x --extra https://h/y",
     "--index-url https://****@h/x --extra https://h/y", "--index-url https://h/x --extra https://h/y"),
    ("https://h/whl/cu128", "https://h/whl/cu128", "https://h/whl/cu128"),
], ids=["user-password", "token-as-user", "no-credentials"])
def test_credentials_are_redacted_when_shown_and_left_out_of_files(
        text: str, redacted: str, stripped: str) -> None:
    from torchenv.matrix.index import redact_credentials, strip_credentials

    assert redact_credentials(text) == redacted
    assert strip_credentials(text) == (stripped, stripped != text)


@pytest.mark.parametrize("extra", [[], ["--json"], ["--explain"]], ids=["text", "json", "explain"])
def test_resolve_never_prints_an_index_password(extra: list[str], cli: Cli) -> None:
    proc = cli(["resolve", "--no-gpu", "--variant", "cpu", "--index-base", SECRET_BASE,
                *extra])
    assert proc.returncode == 0, proc.stderr
    assert "s3cret" not in proc.stdout + proc.stderr
    assert "alice:****@mirror.example" in proc.stdout


def test_an_env_file_holds_no_index_credentials_and_says_so(tmp_path: Path, cli: Cli) -> None:
    proc = cli(["env", "--format", "requirements", "-o", "req.txt", "--no-gpu", "--variant",
                "cpu", "--index-base", SECRET_BASE], cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    written = (tmp_path / "req.txt").read_text()
    assert "s3cret" not in written and "alice" not in written
    assert "--index-url https://mirror.example/whl/cpu" in written
    assert "leaves out the index URL's user name and password" in proc.stderr
