"""Cited commits against the branch their source claims, with real git on a real repository."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from tests.conftest import Cli

from torchenv.matrix.model import Source
from torchenv.matrix.provenance import check_commits, claims

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def _git(repo: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com",
           "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(repo)}
    out = subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                         text=True, env=env, timeout=30)
    return out.stdout.strip()


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """main -> release/2.2 (one commit of its own) and release/2.5 (two later commits)."""
    path = tmp_path_factory.mktemp("test-infra")
    _git(path, "init", "-q", "-b", "main")
    heads = {}
    (path / "m.py").write_text("v = 1\n")
    _git(path, "add", "m.py")
    _git(path, "commit", "-q", "-m", "base")
    _git(path, "branch", "release/2.2")
    _git(path, "checkout", "-q", "release/2.2")
    (path / "m.py").write_text("v = 2.2\n")
    _git(path, "commit", "-q", "-am", "release 2.2")
    heads["2.2"] = _git(path, "rev-parse", "HEAD")
    _git(path, "checkout", "-q", "main")
    (path / "m.py").write_text("v = 2.5\n")
    _git(path, "commit", "-q", "-am", "towards 2.5")
    _git(path, "branch", "release/2.5")
    heads["2.5"] = _git(path, "rev-parse", "release/2.5")
    return path, heads


def _source(sid: str, branch: str, sha: str) -> Source:
    return Source(sid, f"pytorch/test-infra {branch}: generate_binary_build_matrix.py",
                  f"https://github.com/pytorch/test-infra/blob/{sha}/tools/x.py")


def test_a_commit_on_its_branch_passes_and_a_planted_wrong_one_fails(
        repo: tuple[Path, dict[str, str]]) -> None:
    path, heads = repo
    sources = [
        _source("right", "release/2.2", heads["2.2"]),
        _source("planted", "release/2.2", heads["2.5"]),  # the head of a later branch
        _source("absent", "release/2.2", "0" * 40),
        _source("no-branch", "release/2.9", heads["2.2"]),
        Source("other-repo", "pytorch/builder release/2.2: x",
               "https://github.com/pytorch/builder/blob/abcdef0/x"),
    ]
    report = check_commits(sources, {"pytorch/test-infra": path})
    assert report.checked == (f"right: {heads['2.2'][:12]} is on release/2.2",)
    assert report.problems == (
        f"source planted: commit {heads['2.5'][:12]} is not on release/2.2 of "
        "pytorch/test-infra, the branch its title names",
        f"source absent: commit {'0' * 40} is not in pytorch/test-infra ({path})",
    )
    assert report.unchecked == (
        f"no-branch: pytorch/test-infra has no branch release/2.9 in {path}",
        "other-repo: no clone of pytorch/builder given",
    )


def test_only_sources_naming_a_commit_and_a_release_branch_make_claims() -> None:
    found = claims([
        Source("a", "x release/2.7: y", "https://github.com/o/r/tree/89df92f1/windows"),
        Source("b", "x main: y", "https://github.com/o/r/blob/89df92f1/y"),
        Source("c", "x release/2.7: y", "https://pypi.org/project/torch/"),
    ])
    assert [(c.source, c.repo, c.sha, c.branch) for c in found] == [
        ("a", "o/r", "89df92f1", "release/2.7")]


def test_the_cli_names_a_malformed_git_argument(cli: Cli) -> None:
    r = cli(["matrix", "check", "--git", "pytorch-test-infra"])
    assert r.returncode == 2 and "'pytorch-test-infra' is not OWNER/NAME=PATH" in r.stderr


def test_the_cli_checks_the_embedded_sources_against_a_clone(
        repo: tuple[Path, dict[str, str]], cli: Cli) -> None:
    path, _ = repo
    r = cli(["matrix", "check", "--json", "--git", f"pytorch/test-infra={path}"])
    # this small clone has none of the cited commits: every one is named, and the check fails
    assert r.returncode == 2
    import json

    doc = json.loads(r.stdout)
    assert not doc["ok"]
    assert any(p.startswith("source test-infra-matrix-2-2: commit 594c42b7e054")
               for p in doc["commits"]["problems"])
