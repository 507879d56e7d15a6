"""The matrix built with a user overlay is kept in the user's cache folder: a later start with
the same overlay loads it instead of validating everything again, and nothing else is served."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.matrix.matrix_helpers import overlay_release

from torchenv.matrix import loader, validate
from torchenv.matrix.loader import DATA_DIR, load_matrix
from torchenv.matrix.model import Matrix

CACHE_FILE_NAME = "matrix-overlaid.pickle"


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("TORCHENV_CACHE_DIR", str(folder))
    return folder


def _write_overlay(path: Path, matrix: Matrix, torch: str = "2.99.0") -> Path:
    document = {"schema_version": 1, "releases": [overlay_release(matrix, torch)]}
    path.write_text(yaml.safe_dump(document))
    return path


def _no_build(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_args: object, **_kwargs: object) -> Matrix:
        raise AssertionError("the matrix was built again")

    monkeypatch.setattr(validate, "build_matrix", refuse)


def test_the_second_load_of_an_overlay_is_the_first_ones_matrix_without_building_it(
        tmp_path: Path, cache: Path, matrix: Matrix, monkeypatch: pytest.MonkeyPatch) -> None:
    overlay = _write_overlay(tmp_path / "overlay.yaml", matrix)
    first = load_matrix(overlay=overlay)
    assert first.overlay_error is None and first.releases[0].torch == "2.99.0"
    written = cache / CACHE_FILE_NAME
    assert stat.S_IMODE(written.stat().st_mode) == 0o600  # this user's alone
    _no_build(monkeypatch)
    second = load_matrix(overlay=overlay)
    assert second == first
    assert second.overlay == str(overlay)


def test_an_edited_overlay_is_built_again(tmp_path: Path, cache: Path, matrix: Matrix) -> None:
    overlay = _write_overlay(tmp_path / "overlay.yaml", matrix, "2.99.0")
    assert load_matrix(overlay=overlay).releases[0].torch == "2.99.0"
    _write_overlay(overlay, matrix, "2.98.0")  # same length, other content
    assert load_matrix(overlay=overlay).releases[0].torch == "2.98.0"


def test_the_same_overlay_over_edited_embedded_data_is_built_again(
        tmp_path: Path, cache: Path, matrix: Matrix) -> None:
    overlay = _write_overlay(tmp_path / "overlay.yaml", matrix)
    load_matrix(overlay=overlay)
    data = tmp_path / "data"
    shutil.copytree(DATA_DIR, data)
    releases = yaml.safe_load((data / "releases.yaml").read_text())
    releases["releases"][0]["note"] = "edited"
    (data / "releases.yaml").write_text(yaml.safe_dump(releases))
    edited = load_matrix(overlay=overlay, data_dir=data)
    assert [r.note for r in edited.releases[:2]] == [None, "edited"]  # the overlay's, then ours


@pytest.mark.parametrize("spoil", ["damaged", "other-header", "a-folder", "a-fifo"])
def test_a_cache_file_that_cannot_be_trusted_or_read_is_a_miss(
        spoil: str, tmp_path: Path, cache: Path, matrix: Matrix) -> None:
    overlay = _write_overlay(tmp_path / "overlay.yaml", matrix)
    expected = load_matrix(overlay=overlay)
    written = cache / CACHE_FILE_NAME
    if spoil == "damaged":
        raw = written.read_bytes()
        written.write_bytes(raw[: len(raw) // 2])
    elif spoil == "other-header":
        written.write_bytes(b"torchenv built matrix with overlay 0\n" + written.read_bytes())
    elif spoil == "a-folder":
        written.unlink()
        written.mkdir()
    else:  # opened without waiting for a writer that never comes
        written.unlink()
        os.mkfifo(written)
    assert load_matrix(overlay=overlay) == expected


def test_a_group_writable_cache_file_is_never_unpickled(
        tmp_path: Path, cache: Path, matrix: Matrix, monkeypatch: pytest.MonkeyPatch) -> None:
    overlay = _write_overlay(tmp_path / "overlay.yaml", matrix)
    load_matrix(overlay=overlay)
    (cache / CACHE_FILE_NAME).chmod(0o660)
    built = _counting_builds(monkeypatch)
    load_matrix(overlay=overlay)
    assert built == [1]  # built again, and the private file written anew
    assert stat.S_IMODE((cache / CACHE_FILE_NAME).stat().st_mode) == 0o600


def test_a_cache_folder_that_cannot_be_written_costs_nothing_but_speed(
        tmp_path: Path, matrix: Matrix, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("TORCHENV_CACHE_DIR", str(blocker / "cache"))
    overlay = _write_overlay(tmp_path / "overlay.yaml", matrix)
    loaded = load_matrix(overlay=overlay)
    assert loaded.overlay_error is None and loaded.releases[0].torch == "2.99.0"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file", "overlay.yaml"]


def test_a_broken_overlay_is_reported_every_time_and_never_cached(
        tmp_path: Path, cache: Path, matrix: Matrix) -> None:
    overlay = tmp_path / "overlay.yaml"
    bad = overlay_release(matrix)
    bad["released"] = "yesterday"
    overlay.write_text(yaml.safe_dump({"releases": [bad]}))
    for _ in range(2):
        loaded = load_matrix(overlay=overlay)
        assert loaded.overlay_error is not None and "yesterday" in loaded.overlay_error
    assert not (cache / CACHE_FILE_NAME).exists()


def test_the_cache_folder_is_made_for_this_user_alone(
        tmp_path: Path, cache: Path, matrix: Matrix) -> None:
    load_matrix(overlay=_write_overlay(tmp_path / "overlay.yaml", matrix))
    assert stat.S_IMODE(cache.stat().st_mode) & 0o077 == 0
    assert [p.name for p in cache.iterdir()] == [CACHE_FILE_NAME]  # no temp file left


def test_the_cache_folder_defaults_to_the_xdg_cache_home(
        tmp_path: Path, matrix: Matrix, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TORCHENV_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    load_matrix(overlay=_write_overlay(tmp_path / "overlay.yaml", matrix))
    assert os.path.isfile(tmp_path / "xdg" / "torchenv" / CACHE_FILE_NAME)


def _counting_builds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    built: list[int] = []
    real = validate.build_matrix

    def counting(*args: Any, **kwargs: Any) -> Matrix:
        built.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(validate, "build_matrix", counting)
    return built


def test_a_cache_file_of_another_owner_is_never_unpickled(
        tmp_path: Path, cache: Path, matrix: Matrix, monkeypatch: pytest.MonkeyPatch) -> None:
    overlay = _write_overlay(tmp_path / "overlay.yaml", matrix)
    load_matrix(overlay=overlay)
    built = _counting_builds(monkeypatch)
    monkeypatch.setattr(os, "geteuid", lambda: os.stat(cache).st_uid + 1)  # someone else now
    assert load_matrix(overlay=overlay).overlay_error is None
    assert built == [1]


def test_a_link_in_place_of_the_cache_file_is_never_followed(
        tmp_path: Path, cache: Path, matrix: Matrix, monkeypatch: pytest.MonkeyPatch) -> None:
    overlay = _write_overlay(tmp_path / "overlay.yaml", matrix)
    load_matrix(overlay=overlay)
    elsewhere = tmp_path / "elsewhere.pickle"
    (cache / CACHE_FILE_NAME).rename(elsewhere)  # a genuine, private file, reached by a link
    (cache / CACHE_FILE_NAME).symlink_to(elsewhere)
    built = _counting_builds(monkeypatch)
    load_matrix(overlay=overlay)
    assert built == [1]


def test_other_code_builds_the_matrix_again(
        tmp_path: Path, cache: Path, matrix: Matrix, monkeypatch: pytest.MonkeyPatch) -> None:
    overlay = _write_overlay(tmp_path / "overlay.yaml", matrix)
    load_matrix(overlay=overlay)
    built = _counting_builds(monkeypatch)
    monkeypatch.setattr(loader, "code_digest", lambda: "model.py:1:00000000")  # an edit
    load_matrix(overlay=overlay)
    load_matrix(overlay=overlay)
    assert built == [1]  # once for the new code, then from the cache again


def test_without_the_sources_to_fingerprint_the_overlay_is_built_every_time(
        tmp_path: Path, cache: Path, matrix: Matrix, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_sources() -> str:
        raise FileNotFoundError("_record.py")

    monkeypatch.setattr(loader, "code_digest", no_sources)
    overlay = _write_overlay(tmp_path / "overlay.yaml", matrix)
    for _ in range(2):
        assert load_matrix(overlay=overlay).releases[0].torch == "2.99.0"
    assert not cache.exists()


@pytest.mark.parametrize("variable", ["TORCHENV_CACHE_DIR", "XDG_CACHE_HOME"])
def test_a_relative_cache_folder_is_never_used(
        variable: str, tmp_path: Path, matrix: Matrix, monkeypatch: pytest.MonkeyPatch) -> None:
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.delenv("TORCHENV_CACHE_DIR")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv(variable, "cache")
    overlay = _write_overlay(tmp_path / "overlay.yaml", matrix)
    assert load_matrix(overlay=overlay).overlay_error is None
    assert list(work.iterdir()) == []  # nothing written where the command happens to run
    expected = tmp_path / "home" / ".cache" / "torchenv" / CACHE_FILE_NAME
    assert expected.exists() == (variable == "XDG_CACHE_HOME")  # a relative XDG value: default


def test_no_cache_folder_is_made_inside_another_users_folder(
        tmp_path: Path, matrix: Matrix, monkeypatch: pytest.MonkeyPatch) -> None:
    """As under sudo with the user's HOME: the folder made would belong to the wrong user."""
    monkeypatch.setenv("TORCHENV_CACHE_DIR", str(tmp_path / "home" / ".cache" / "torchenv"))
    (tmp_path / "home").mkdir()
    monkeypatch.setattr(os, "geteuid", lambda: os.stat(tmp_path / "home").st_uid + 1)
    overlay = _write_overlay(tmp_path / "overlay.yaml", matrix)
    assert load_matrix(overlay=overlay).overlay_error is None
    assert list((tmp_path / "home").iterdir()) == []

