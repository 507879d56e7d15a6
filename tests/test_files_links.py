"""Where torchenv writes an output: never through a link that could send it somewhere else,
and a file name as long as the file system allows is not refused because of the temporary
name the atomic write uses."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from torchenv._files import check_target, write_atomic
from torchenv.cli import main
from torchenv.errors import BadInput

LONG = "e" * 251 + ".yml"  # 255 characters: the longest name most file systems hold


@pytest.mark.parametrize("force", [True, False], ids=["force", "new"])
def test_a_dangling_link_is_never_written_through(tmp_path: Path, force: bool) -> None:
    elsewhere = tmp_path / "elsewhere" / "planted.sh"
    elsewhere.parent.mkdir()
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "environment.yml").symlink_to(elsewhere)
    for write in (lambda p: write_atomic(p, "data", force=force),
                  lambda p: check_target(p, force=force)):
        with pytest.raises(BadInput, match=r"is a symbolic link to .*planted\.sh, which does "
                                           "not exist; torchenv does not create a file"):
            write(shared / "environment.yml")
    assert not elsewhere.exists()
    assert sorted(os.listdir(shared)) == ["environment.yml"]  # no temporary file left


def test_env_output_through_a_dangling_link_is_bad_input(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TORCHENV_NO_OVERLAY", "1")
    target = tmp_path / "bashrc"
    (tmp_path / "requirements.txt").symlink_to(target)
    status = main(["env", "--format", "requirements", "--no-gpu",
                   "-o", str(tmp_path / "requirements.txt")])
    assert status == 2
    assert "symbolic link" in capsys.readouterr().err
    assert not target.exists()


@pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0,
                    reason="giving a link to another user needs root")
@pytest.mark.parametrize("owned", ["link", "file"])
def test_a_link_or_file_of_another_user_is_not_written_through(tmp_path: Path,
                                                               owned: str) -> None:
    real = tmp_path / "real.txt"
    real.write_text("theirs")
    link = tmp_path / "link.txt"
    link.symlink_to(real)
    os.lchown(link if owned == "link" else real, 4242, -1)
    with pytest.raises(BadInput, match="another user"):
        write_atomic(link, "mine")
    assert real.read_text() == "theirs"


def test_the_users_own_link_to_the_users_own_file_is_followed(tmp_path: Path) -> None:
    real = tmp_path / "dotfiles" / "environment.yml"
    real.parent.mkdir()
    real.write_text("old")
    link = tmp_path / "environment.yml"
    link.symlink_to(real)
    assert write_atomic(link, "new") == real
    assert link.is_symlink() and real.read_text() == "new"


@pytest.mark.parametrize("force", [True, False], ids=["force", "new"])
def test_a_name_as_long_as_the_file_system_allows_is_written(tmp_path: Path,
                                                             force: bool) -> None:
    target = tmp_path / LONG
    check_target(target, force=force)
    write_atomic(target, "data", force=force)
    assert target.read_text() == "data"
    assert os.listdir(tmp_path) == [LONG]


def test_a_name_longer_than_that_is_still_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="cannot write"):
        write_atomic(tmp_path / ("e" * 256), "data")
