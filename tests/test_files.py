"""Atomic writes replace regular files only, keep modes, and fail as bad input; the cache
folder follows the variables and the platform's convention."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest

from torchenv._files import check_target, user_cache_dir, write_atomic
from torchenv.errors import BadInput


def test_a_new_file_gets_the_umask_mode(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        written = write_atomic(tmp_path / "a.txt", "hello\n")
    finally:
        os.umask(old)
    assert written.read_text() == "hello\n"
    assert stat.S_IMODE(written.stat().st_mode) == 0o644
    assert [p.name for p in tmp_path.iterdir()] == ["a.txt"]


def test_an_existing_file_keeps_its_mode(tmp_path: Path) -> None:
    target = tmp_path / "b.txt"
    target.write_text("old")
    target.chmod(0o640)
    write_atomic(target, "new")
    assert target.read_text() == "new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640


def test_refuses_to_overwrite_without_force(tmp_path: Path) -> None:
    target = tmp_path / "c.txt"
    target.write_text("keep")
    with pytest.raises(BadInput, match="already exists"):
        write_atomic(target, "new", force=False)
    assert target.read_text() == "keep"


def test_a_symlink_is_followed_not_replaced(tmp_path: Path) -> None:
    real = tmp_path / "real.txt"
    real.write_text("old")
    link = tmp_path / "link.txt"
    link.symlink_to(real)
    write_atomic(link, "new")
    assert link.is_symlink()
    assert real.read_text() == "new"


def test_a_non_regular_file_is_never_replaced(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(BadInput, match="not a regular file"):
        write_atomic(fifo, "data")
    assert stat.S_ISFIFO(fifo.stat().st_mode)


def test_an_unwritable_place_is_bad_input(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="does not exist"):
        write_atomic(tmp_path / "missing" / "x.txt", "data")
    with pytest.raises(BadInput, match="cannot write"):
        write_atomic(Path("/proc/torchenv-test.txt"), "data")


def test_check_target_refuses_now_what_write_atomic_would_refuse_later(tmp_path: Path) -> None:
    """Each place write_atomic refuses, refused by check_target with the same message, and
    nothing left behind by either; a place it accepts is accepted, and stays untouched."""
    (tmp_path / "folder").mkdir()
    (tmp_path / "kept.txt").write_text("keep")
    os.mkfifo(tmp_path / "pipe")
    refused = [(tmp_path / "folder", True), (tmp_path / "missing" / "x.txt", True),
               (tmp_path / "kept.txt", False), (tmp_path / "pipe", True),
               (Path("/proc/torchenv-test.txt"), True)]
    for path, force in refused:
        with pytest.raises(BadInput) as early:
            check_target(path, force=force)
        with pytest.raises(BadInput) as late:
            write_atomic(path, "data", force=force)
        assert (early.value.message, early.value.hint) == (late.value.message, late.value.hint)
    check_target(tmp_path / "kept.txt", force=True)
    check_target(tmp_path / "new.txt", force=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["folder", "kept.txt", "pipe"]
    assert (tmp_path / "kept.txt").read_text() == "keep"


@pytest.mark.parametrize(("platform", "env", "expected"), [
    ("linux", {}, "/home/u/.cache/torchenv"),
    ("darwin", {}, "/home/u/Library/Caches/torchenv"),
    ("win32", {"LOCALAPPDATA": "/home/u/local"}, "/home/u/local/torchenv/Cache"),
    ("win32", {}, "/home/u/AppData/Local/torchenv/Cache"),
    ("darwin", {"XDG_CACHE_HOME": "/xdg"}, "/xdg/torchenv"),
    ("linux", {"XDG_CACHE_HOME": "relative"}, "/home/u/.cache/torchenv"),  # ignored: relative
    ("linux", {"XDG_CACHE_HOME": "/xdg", "TORCHENV_CACHE_DIR": "/mine"}, "/mine"),
])
def test_the_cache_folder_is_the_variables_else_the_platforms(
        platform: str, env: dict[str, str], expected: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "platform", platform)
    monkeypatch.setenv("HOME", "/home/u")
    assert user_cache_dir({"HOME": "/home/u", **env}) == expected



def test_a_file_made_after_the_check_is_still_not_replaced(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The refusal holds at the moment of writing, not only when the path was first looked at:
    another writer that creates the file meanwhile keeps it."""
    import tempfile

    target = tmp_path / "raced.txt"
    real_mkstemp = tempfile.mkstemp

    def mkstemp_then_race(*args: object, **kwargs: object) -> tuple[int, str]:
        made = real_mkstemp(*args, **kwargs)  # type: ignore[call-overload]
        target.write_text("the other writer's")
        return made  # type: ignore[no-any-return]

    monkeypatch.setattr(tempfile, "mkstemp", mkstemp_then_race)
    with pytest.raises(BadInput, match="already exists"):
        write_atomic(target, "mine", force=False)
    assert target.read_text() == "the other writer's"
    assert [p.name for p in tmp_path.iterdir()] == ["raced.txt"]


def test_without_hard_links_the_name_is_still_claimed_exclusively(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_links(src: object, dst: object) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "link", no_links)
    written = write_atomic(tmp_path / "new.txt", "data", force=False)
    assert written.read_text() == "data"
    with pytest.raises(BadInput, match="already exists"):
        write_atomic(tmp_path / "new.txt", "other", force=False)
    assert written.read_text() == "data"
    assert [p.name for p in tmp_path.iterdir()] == ["new.txt"]


def test_of_twelve_concurrent_env_writers_exactly_one_writes(tmp_path: Path) -> None:
    """Twelve ``torchenv env -o same.txt`` started together without --force: one reports that
    it wrote the file, the other eleven that it exists, and the file is one whole document."""
    import subprocess

    from hermetic import hermetic

    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCHENV_")}
    env["TORCHENV_NO_OVERLAY"] = "1"
    hermetic(env)
    argv = [sys.executable, "-m", "torchenv", "env", "--format", "requirements", "-o",
            "same.txt", "--no-gpu", "--platform", "linux-x86_64", "--python", "3.12"]
    procs = [subprocess.Popen(argv, cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(12)]
    results = [(p.wait(timeout=120), *p.communicate()) for p in procs]
    codes = sorted(code for code, _, _ in results)
    assert codes == [0] + [2] * 11, results
    assert all("already exists" in err for code, _, err in results if code == 2)
    text = (tmp_path / "same.txt").read_text()
    assert text.count("torch==") == 1
    # and the plan's constraints file beside it, written once by the writer that won
    assert sorted(p.name for p in tmp_path.iterdir()) == ["same.txt", "torch-constraints.txt"]
    assert (tmp_path / "torch-constraints.txt").read_text().count("torch==") == 1
