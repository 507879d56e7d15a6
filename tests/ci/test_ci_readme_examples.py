"""The README's ``matrix ci`` examples, run as printed: each fits in one GitHub Actions matrix."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest
from tests.conftest import Cli

README = Path(__file__).parents[2] / "README.md"
GITHUB_MAX_JOBS = 256


def _shell_lines(markdown: str) -> list[str]:
    """Lines of the ``sh`` code blocks, with backslash continuations joined."""
    blocks = re.findall(r"```sh\n(.*?)```", markdown, re.DOTALL)
    return [line.strip() for block in blocks for line in block.replace("\\\n", " ").splitlines()]


EXAMPLES = [line for line in _shell_lines(README.read_text(encoding="utf-8"))
            if line.startswith("torchenv matrix ci") and "--format github" in line]


def test_the_readme_has_a_github_example() -> None:
    assert EXAMPLES


@pytest.mark.parametrize("line", EXAMPLES)
def test_each_github_example_fits_in_one_matrix(line: str, cli: Cli) -> None:
    args = shlex.split(line, comments=True)[1:]
    r = cli(args)
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)["include"]
    assert 0 < len(rows) <= GITHUB_MAX_JOBS, (line, len(rows))
    assert "GitHub Actions allows at most" not in r.stderr


def _test_extra_torch() -> str:
    """The ``torch==X`` requirement of the ``test`` extra in pyproject.toml."""
    import sys

    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.9/3.10
        tomllib = pytest.importorskip("tomli")
    project = tomllib.loads((README.parent / "pyproject.toml").read_text(encoding="utf-8"))
    [torch] = [r for r in project["project"]["optional-dependencies"]["test"]
               if re.match(r"torch\b", r)]
    return str(torch)


def test_the_light_test_install_takes_the_cpu_build_of_the_pinned_torch() -> None:
    """PyPI's torch on Linux is the CUDA build: the README installs the CPU build first, and
    that build satisfies the extra's pin, so the extra adds no second torch."""
    from packaging.requirements import Requirement

    pinned = Requirement(_test_extra_torch())
    lines = _shell_lines(README.read_text(encoding="utf-8"))
    cpu_index = "https://download.pytorch.org/whl/cpu"
    first = [shlex.split(line, comments=True) for line in lines
             if line.startswith("pip install torch==") and cpu_index in line]
    assert first, "no pip line installs torch from the CPU index"
    for argv in first:
        version = argv[2].split("==", 1)[1]
        assert argv[2] == str(pinned)
        assert pinned.specifier.contains(f"{version}+cpu")  # the extra is then satisfied
        assert argv[argv.index("--index-url") + 1] == cpu_index
    uv = [line for line in lines if line.startswith("uv pip install") and ".[test" in line]
    assert uv and all("--torch-backend cpu" in line for line in uv)
    assert "brings the CPU build" not in README.read_text(encoding="utf-8")
