"""``torchenv matrix html``: the command that writes the page."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from tests.conftest import Cli, run_cli

from torchenv.cli.matrix_html import NEWEST, _specifiers
from torchenv.errors import BadInput
from torchenv.explorer.page import MAX_PAGE_BYTES
from torchenv.matrix.model import Matrix


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory
            ) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """One real run, shared by the tests of what it writes and of the capped ``--jobs``: every
    class of machine is answered (tens of seconds), so it runs once."""
    out = tmp_path_factory.mktemp("html") / "explorer.html"
    result = run_cli(["matrix", "html", "-o", str(out), "--specifiers", "none", "--jobs", "4000",
                      "--json"], timeout=300)
    return out, result


@pytest.mark.slow
def test_writes_one_page_and_says_what_it_wrote(
        matrix: Matrix, written: tuple[Path, subprocess.CompletedProcess[str]], cli: Cli) -> None:
    out, result = written
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    html = out.read_text(encoding="utf-8")
    assert summary["written"] == str(out)
    assert summary["bytes"] == len(html.encode("utf-8")) <= MAX_PAGE_BYTES
    assert summary["matrix_version"] == matrix.matrix_version
    assert summary["specifiers"] == []
    assert html.startswith("<!DOCTYPE html>") and html.rstrip().endswith("</html>")
    progress = result.stderr.splitlines()  # no terminal: a line per step of the workers
    assert any(line.startswith("torchenv matrix html: answering every class of machine with ")
               for line in progress), result.stderr
    assert any(re.fullmatch(r"torchenv matrix html: decisions for every class of machine "
                            r"(\d+)/\1 \(\d+\.\d s\)", line) for line in progress), result.stderr

    again = cli(["matrix", "html", "-o", str(out), "--specifiers", "none"])
    assert again.returncode == 2
    assert "already exists" in again.stderr and "--force" in again.stderr


@pytest.mark.parametrize(("args", "message"), [
    (["--specifiers", "9.9"], "no torch 9.9 release"),
    (["--specifiers", "2.x"], "is not a torch series"),
    (["--jobs", "0"], "--jobs"),
    (["--jobs", "1" + "0" * 30], "is not a whole number"),
])
def test_bad_values_are_named(tmp_path: Path, args: list[str], message: str, cli: Cli) -> None:
    result = cli(["matrix", "html", "-o", str(tmp_path / "x.html"), *args])
    assert result.returncode == 2
    assert message in result.stderr
    assert not (tmp_path / "x.html").exists()


@pytest.mark.parametrize(("where", "force", "message", "hint"), [
    ("folder", False, "{out} is a directory", "give a file name"),
    ("folder", True, "{out} is a directory", "give a file name"),
    ("missing/x.html", False, "{tmp}/missing does not exist", "create the directory first"),
    ("missing/x.html", True, "{tmp}/missing does not exist", "create the directory first"),
], ids=["folder", "folder-force", "missing-folder", "missing-folder-force"])
def test_a_place_the_page_cannot_go_is_refused_before_any_answer(
        tmp_path: Path, where: str, force: bool, message: str, hint: str, cli: Cli) -> None:
    """Answering every class of machine takes tens of seconds: the place to write is checked
    first, as write_atomic checks it at the end (a folder is never 'pass --force')."""
    (tmp_path / "folder").mkdir()
    out = tmp_path / where
    result = cli(["matrix", "html", "-o", str(out), "--specifiers", "none", "--json",
                  *(["--force"] if force else [])])
    assert result.returncode == 2, result.stderr
    doc = json.loads(result.stdout)
    assert doc["error"] == message.format(out=out, tmp=tmp_path), doc
    assert doc["hint"] == hint
    assert "answering" not in result.stderr  # no worker started
    assert sorted(p.name for p in tmp_path.iterdir()) == ["folder"]
    assert list((tmp_path / "folder").iterdir()) == []


def test_json_needs_a_file(tmp_path: Path, cli: Cli) -> None:
    result = cli(["matrix", "html", "-o", "-", "--json"])
    assert result.returncode == 2 and "--json needs -o FILE" in result.stderr


def test_the_default_series_are_the_newest(matrix: Matrix) -> None:
    releases = sorted(matrix.releases, key=lambda r: r.torch)  # oldest first
    known = list(dict.fromkeys(r.torch.series for r in releases))
    chosen = _specifiers(None, known)
    assert chosen is not None and len(chosen) == min(NEWEST, len(known))
    newest = known[-NEWEST:]
    assert sorted(chosen) == sorted(newest)
    assert _specifiers("all", known) is None
    assert _specifiers("none", known) == []
    with pytest.raises(BadInput):
        _specifiers("2.7,x", known)


@pytest.mark.slow
def test_more_jobs_than_cpus_are_capped(
        written: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    _, result = written
    assert result.returncode == 0, result.stderr
    cpus = os.cpu_count() or 1
    assert f"--jobs 4000 is more than the {cpus} CPU(s) here; using {cpus}" in result.stderr
    assert f"with {cpus} worker process(es)" in result.stderr
