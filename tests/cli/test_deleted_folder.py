"""A shell can stay in a folder that was deleted under it. Commands that do not need the current
folder work there; those given a path relative to it say that the folder is gone."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from torchenv._files import absolute_path, current_folder
from torchenv.cli import main
from torchenv.errors import BadInput


@pytest.fixture
def gone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The current folder, deleted."""
    for name in [k for k in os.environ if k.startswith("TORCHENV_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("TORCHENV_NO_OVERLAY", "1")
    folder = tmp_path / "gone"
    folder.mkdir()
    monkeypatch.chdir(folder)
    folder.rmdir()
    return folder


def test_the_current_folder_is_none_once_deleted(gone: Path) -> None:
    assert current_folder() is None
    assert absolute_path("/abs/x") == "/abs/x"
    with pytest.raises(BadInput, match=r"--host: h\.json is relative to the current folder, "
                                       "which no longer exists"):
        absolute_path("h.json", what="--host")


@pytest.mark.parametrize("args", [["resolve", "--no-gpu"], ["resolve", "--no-gpu", "--json"],
                                  ["matrix", "show"], ["detect", "--json"],
                                  ["install", "--dry-run", "--no-gpu"]],
                         ids=lambda a: " ".join(a))
def test_commands_that_do_not_need_it_work(gone: Path, args: list[str],
                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert main(args) == 0, capsys.readouterr().err
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    if "--json" in args:
        json.loads(captured.out)


def test_an_absolute_output_path_is_written(gone: Path, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "requirements.txt"
    assert main(["env", "--format", "requirements", "--no-gpu", "-o", str(target)]) == 0, \
        capsys.readouterr().err
    assert "torch==" in target.read_text()


@pytest.mark.parametrize("args", [
    ["env", "--format", "requirements", "--no-gpu", "-o", "requirements.txt"],
    ["resolve", "--host", "host.json"],
    ["fleet", "report", "."],
    ["validate", "--python", "./venv/bin/python"],
], ids=["env-output", "host-file", "fleet-folder", "validate-python"])
def test_a_path_relative_to_it_is_bad_input_that_says_why(
        gone: Path, args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "is relative to the current folder, which no longer exists" in err, err
    assert "cd to a folder that exists, or give an absolute path" in err


@pytest.mark.parametrize("args", [["doctor"], ["doctor", "--python", "./venv/bin/python"]],
                         ids=["doctor", "doctor-python"])
def test_doctor_says_the_folder_is_gone(gone: Path, args: list[str],
                                        capsys: pytest.CaptureFixture[str]) -> None:
    """A Python started in a deleted folder cannot import torch: doctor says why, instead of
    diagnosing the install."""
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "the current folder no longer exists" in err and "cd to a folder that exists" in err
