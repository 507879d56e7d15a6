"""Check that a source's cited commit is on the branch its title claims, against a local clone.

A source like ``pytorch/test-infra release/2.2: …`` with the URL
``https://github.com/pytorch/test-infra/blob/<sha>/…`` claims that ``<sha>`` is on
``release/2.2``. Citing the head of another branch is an easy mistake that no reader notices;
``torchenv matrix check --git pytorch/test-infra=PATH`` asks git itself. Nothing here uses the
network: the caller names the clones.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from torchenv.matrix.model import Source

__all__ = ["CommitClaim", "ProvenanceReport", "check_commits", "claims"]

_GITHUB_COMMIT = re.compile(
    r"^https://github\.com/(?P<repo>[\w.-]+/[\w.-]+)/(?:blob|tree|commit)/(?P<sha>[0-9a-f]{7,40})"
    r"(?:[/#?]|$)")
_BRANCH = re.compile(r"\b(?P<branch>release/\d+\.\d+)\b")


@dataclass(frozen=True)
class CommitClaim:
    source: str
    repo: str
    sha: str
    branch: str


@dataclass(frozen=True)
class ProvenanceReport:
    problems: tuple[str, ...]
    checked: tuple[str, ...]
    unchecked: tuple[str, ...]  # claims whose repository was not given or commit not in the clone


def claims(sources: Sequence[Source]) -> list[CommitClaim]:
    """Every source whose URL names a GitHub commit and whose title names a release branch."""
    out = []
    for s in sources:
        url = _GITHUB_COMMIT.match(s.url)
        branch = _BRANCH.search(s.title)
        if url and branch:
            out.append(CommitClaim(s.id, url.group("repo"), url.group("sha"),
                                   branch.group("branch")))
    return out


Git = Callable[[Path, Sequence[str]], "tuple[int, str]"]


def _git(repo: Path, args: Sequence[str]) -> tuple[int, str]:
    from torchenv._subprocess import run_process

    res = run_process(["git", "-C", str(repo), *args], timeout=30)
    if res.returncode is None:  # timed out, or git could not start
        return 127, res.describe_failure()
    return res.returncode, res.stdout.strip()


def _branch_ref(repo: Path, branch: str, git: Git) -> str | None:
    for ref in (f"refs/heads/{branch}", f"refs/remotes/origin/{branch}",
                f"refs/heads/orig/{branch}"):
        code, _ = git(repo, ["rev-parse", "--verify", "--quiet", ref])
        if code == 0:
            return ref
    return None


def check_commits(sources: Sequence[Source], repos: Mapping[str, Path],
                  git: Git = _git) -> ProvenanceReport:
    """Each claim against the clone of its repository in ``repos`` (``owner/name`` -> path)."""
    problems: list[str] = []
    checked: list[str] = []
    unchecked: list[str] = []
    for c in claims(sources):
        repo = repos.get(c.repo)
        if repo is None:
            unchecked.append(f"{c.source}: no clone of {c.repo} given")
            continue
        code, full = git(repo, ["rev-parse", "--verify", "--quiet", f"{c.sha}^{{commit}}"])
        if code != 0:
            problems.append(f"source {c.source}: commit {c.sha} is not in {c.repo} ({repo})")
            continue
        ref = _branch_ref(repo, c.branch, git)
        if ref is None:
            unchecked.append(f"{c.source}: {c.repo} has no branch {c.branch} in {repo}")
            continue
        code, _ = git(repo, ["merge-base", "--is-ancestor", full, ref])
        if code == 0:
            checked.append(f"{c.source}: {c.sha[:12]} is on {c.branch}")
        elif code == 1:
            problems.append(f"source {c.source}: commit {c.sha[:12]} is not on {c.branch} of "
                            f"{c.repo}, the branch its title names")
        else:
            problems.append(f"source {c.source}: git could not compare {c.sha[:12]} with "
                            f"{c.branch} (exit {code})")
    return ProvenanceReport(tuple(problems), tuple(checked), tuple(unchecked))
