"""Real per-node reports, made once: ``torchenv detect --json`` and ``torchenv validate --json
--junit`` run here (CPU torch), then edited into the nodes of a GPU fleet by ``fleet_nodes``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from tests.conftest import run_cli
from tests.fleet.slurm_cluster import Cluster, ClusterUnavailable, start_cluster


@pytest.fixture(scope="session")
def real_reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """This machine's detect document, validate document and validate JUnit text."""
    base = tmp_path_factory.mktemp("real-reports")
    detect = run_cli(["detect", "--json"])
    assert detect.returncode == 0, detect.stderr
    junit = base / "junit.xml"
    validate = run_cli(["validate", "--json", "--junit", str(junit)], timeout=300)
    assert validate.returncode == 0, validate.stderr
    return {"detect": json.loads(detect.stdout), "validate": json.loads(validate.stdout),
            "junit": junit.read_text("utf-8")}



@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """A two-node Slurm cluster on this machine (two slurmd), stopped (every daemon it started,
    by pid) at the end of the session; skipped only when Slurm cannot be started here."""
    root = tmp_path_factory.mktemp("slurm")
    try:
        cluster = start_cluster(root)
    except ClusterUnavailable as exc:
        pytest.skip(f"no Slurm cluster on this machine: {exc}")
    try:
        yield cluster
    finally:
        cluster.stop()
