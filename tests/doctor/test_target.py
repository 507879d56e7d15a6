"""Which interpreter doctor diagnoses: the active environment's, not torchenv's own."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from torchenv.doctor.target import target_interpreter
from torchenv.errors import BadInput


def interpreter(prefix: Path, name: str = "python") -> Path:
    path = prefix / "bin" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


@pytest.fixture
def places(tmp_path: Path) -> dict[str, Path]:
    return {"venv": interpreter(tmp_path / "venv"), "conda": interpreter(tmp_path / "conda"),
            "path": interpreter(tmp_path / "usr", "python3")}


@pytest.mark.parametrize(("env_keys", "expected", "source"), [
    (("VIRTUAL_ENV", "CONDA_PREFIX", "PATH"), "venv", "$VIRTUAL_ENV"),
    (("CONDA_PREFIX", "PATH"), "conda", "$CONDA_PREFIX"),
    (("PATH",), "path", "'python3' on PATH"),
], ids=["venv-first", "conda-next", "path-last"])
def test_the_active_environment_comes_first(places: dict[str, Path], env_keys: tuple[str, ...],
                                            expected: str, source: str) -> None:
    values = {"VIRTUAL_ENV": str(places["venv"].parent.parent),
              "CONDA_PREFIX": str(places["conda"].parent.parent),
              "PATH": str(places["path"].parent)}
    target = target_interpreter(None, {k: values[k] for k in env_keys}, windows=False)
    assert target == (str(places[expected]), source)


def test_an_environment_without_an_interpreter_is_passed_over(places: dict[str, Path],
                                                              tmp_path: Path) -> None:
    env = {"VIRTUAL_ENV": str(tmp_path / "gone"), "PATH": str(places["path"].parent)}
    assert target_interpreter(None, env, windows=False).python == str(places["path"])


def test_torchenvs_own_interpreter_is_the_last_answer() -> None:
    target = target_interpreter(None, {"PATH": os.devnull}, windows=False, fallback="/own/python")
    assert target == ("/own/python", "torchenv's own interpreter")


def test_the_given_interpreter_wins_and_a_missing_one_is_bad_input(places: dict[str, Path]
                                                                   ) -> None:
    env = {"VIRTUAL_ENV": str(places["venv"].parent.parent)}
    assert target_interpreter(str(places["conda"]), env) == (str(places["conda"]), "--python")
    with pytest.raises(BadInput, match="/nope/python does not exist"):
        target_interpreter("/nope/python", env)
