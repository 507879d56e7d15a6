"""The GitHub Actions example: one job makes the matrix, the next fans out over it."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

EXAMPLE = Path(__file__).parents[2] / "examples" / "github-actions-torch-matrix.yml"


def _load() -> dict[str, Any]:
    doc = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    assert isinstance(doc, dict)
    return doc


def test_generator_job_exports_the_matrix() -> None:
    jobs = _load()["jobs"]
    gen = jobs["matrix"]
    step = next(s for s in gen["steps"] if s.get("id") == "generate")
    assert "torchenv matrix ci --format github" in step["run"]
    assert '>> "$GITHUB_OUTPUT"' in step["run"]
    assert gen["outputs"]["matrix"] == "${{ steps.generate.outputs.matrix }}"


def test_test_job_fans_out_with_fromjson() -> None:
    jobs = _load()["jobs"]
    test = jobs["test"]
    assert test["needs"] == "matrix"
    wired = test["strategy"]["matrix"]
    m = re.fullmatch(r"\$\{\{ fromJSON\(needs\.(\w+)\.outputs\.(\w+)\) \}\}", wired)
    assert m is not None
    assert m.group(1) == test["needs"]
    assert m.group(2) in jobs[m.group(1)]["outputs"]
    assert test["runs-on"] == "${{ matrix.os }}"
    runs = " ".join(s.get("run", "") for s in test["steps"])
    assert "torchenv install --yes" in runs
    assert "torchenv validate" in runs
    for key in ("torch", "variant", "python"):
        assert f"matrix.{key}" in runs or f"matrix.{key}" in str(test["steps"])


def _install_commands(doc: dict[str, Any]) -> list[list[str]]:
    """Every ``pip install ...`` of every step, as arguments (variables not expanded)."""
    import shlex

    found = []
    for job in doc["jobs"].values():
        for step in job["steps"]:
            for line in step.get("run", "").splitlines():
                if line.strip().startswith("pip install"):
                    found.append(shlex.split(line, comments=True)[2:])
    return found


def test_torchenv_is_installed_from_its_repository_until_it_is_on_pypi() -> None:
    doc = _load()
    spec = doc["env"]["INSTALL_TORCHENV"]
    assert spec.startswith("git+https://github.com/"), spec
    installs = _install_commands(doc)
    assert ["$INSTALL_TORCHENV"] in installs
    # no step asks PyPI for a package called torchenv
    assert not [args for args in installs if any(a.split("==")[0] == "torchenv" for a in args)]


def test_every_runner_reads_the_steps_as_bash() -> None:
    """``$INSTALL_TORCHENV`` is bash syntax; Windows runners default to PowerShell."""
    doc = _load()
    assert doc["defaults"]["run"]["shell"] == "bash"
    for job in doc["jobs"].values():
        for step in job["steps"]:
            assert step.get("shell", "bash") == "bash"


def test_the_generated_matrix_fits_github_and_feeds_the_test_job() -> None:
    """Run the generator step's own command: at most 256 jobs, each with the keys job 2 uses."""
    import json
    import shlex

    from tests.conftest import run_cli

    step = next(s for s in _load()["jobs"]["matrix"]["steps"] if s.get("id") == "generate")
    inner = re.search(r"\$\((torchenv matrix ci .*?)\)\"", step["run"].replace("\\\n", " "),
                      re.DOTALL)
    assert inner is not None, step["run"]
    args = shlex.split(inner.group(1))[1:]
    r = run_cli(args)
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)["include"]
    assert 0 < len(rows) <= 256
    for row in rows:
        assert {"name", "os", "torch", "variant", "python"} <= set(row)
