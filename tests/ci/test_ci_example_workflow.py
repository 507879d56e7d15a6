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
