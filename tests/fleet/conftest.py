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


@pytest.fixture(scope="module")
def slurm_cluster(request: pytest.FixtureRequest,
                  tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """A Slurm cluster on this machine of ``SLURM_NODES`` nodes (a constant of the test module;
    2 without one), stopped at the end of the module; skipped only when Slurm cannot be started
    here. Stopping it ends every daemon it started, by pid, then kills anything still running
    for it, an error of the module's last test: nothing may outlive the jobs."""
    root = tmp_path_factory.mktemp("slurm")
    try:
        cluster = start_cluster(root, nodes=getattr(request.module, "SLURM_NODES", 2))
    except ClusterUnavailable as exc:
        pytest.skip(f"no Slurm cluster on this machine: {exc}")
    try:
        yield cluster
    finally:
        left = cluster.stop()
    assert not left, f"processes left running for the cluster (now killed): {left}"
