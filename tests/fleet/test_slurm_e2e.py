"""The rendered sbatch script on a real Slurm cluster (one node, this machine, CPU torch).

``sbatch --wait`` runs it; srun starts the node's task, which runs the real ``torchenv detect``
and ``torchenv validate`` (the full level's gloo collectives meet through torchrun's c10d
rendezvous on the first allocated host), then the batch step merges the verdict. A second job
plants a failing check: the job fails, and the node's reports are still all there.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import run_cli
from tests.fleet.slurm_cluster import Cluster

from hermetic import hermetic

pytestmark = pytest.mark.slow

HERE = Path(__file__).resolve().parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def submit(cluster: Cluster, tmp: Path, *flags: str, env: dict[str, str] | None = None,
           out: Path | None = None, python: str = sys.executable
           ) -> tuple[subprocess.CompletedProcess[str], Path]:
    """Render the script with ``flags``, run it with ``sbatch --wait``; the job's report folder."""
    out = out or tmp / "reports"
    out.mkdir(exist_ok=True)
    script = tmp / "validate.sbatch"
    rendered = run_cli(["fleet", "slurm", "--nodes", "1", "--gpus-per-node", "0",
                        "--output-dir", str(out), "--python", python,
                        "--partition", cluster.partition, "--time", "15",
                        "--rdzv-port", str(free_port()), "-o", str(script), *flags])
    assert rendered.returncode == 0, rendered.stderr
    job_env = dict(hermetic({**cluster.env, "TORCHENV_NO_OVERLAY": "1"}))
    job_env.update(env or {})
    proc = subprocess.run(["sbatch", "--wait", "--parsable", str(script)], capture_output=True,
                          text=True, env=job_env, cwd=tmp, timeout=600, check=False)
    job_id = proc.stdout.split()[0].split(";")[0] if proc.stdout.split() else "?"
    return proc, out / job_id


def job_output(folder: Path) -> str:
    return "".join(p.read_text("utf-8", "replace")
                   for p in folder.parent.glob(f"slurm-{folder.name}.out"))


def report(folder: Path) -> tuple[int, dict[str, Any]]:
    proc = run_cli(["fleet", "report", str(folder), "--nodes-file",
                    str(folder / "expected-nodes.txt"), "--json"])
    return proc.returncode, json.loads(proc.stdout)


def test_full_validation_of_every_node_through_sbatch(slurm_cluster: Cluster,
                                                      tmp_path: Path) -> None:
    proc, folder = submit(slurm_cluster, tmp_path)
    log = job_output(folder)
    assert proc.returncode == 0, f"{proc.stderr}\n{log}\n{slurm_cluster.logs()}"
    node = slurm_cluster.node
    assert sorted(p.name for p in folder.iterdir()) == sorted([
        "expected-nodes.txt", "fleet-junit.xml", f"{node}.detect.json", f"{node}.exit",
        f"{node}.junit.xml", f"{node}.stderr", f"{node}.validate.json"])
    assert (folder / "expected-nodes.txt").read_text().split() == [node]
    assert "OK: 1 of 1 nodes passed" in log
    status, verdict = report(folder)
    assert status == 0 and verdict["ok"] is True
    (summary,) = verdict["nodes"]
    assert summary["node"] == node and summary["status"] == "pass"
    assert summary["level"] == "full" and summary["nccl"] == "none" and summary["gpus"] == 0
    checks = {c["name"]: c for c in json.loads(
        (folder / f"{node}.validate.json").read_text())["checks"]}
    # the collectives ran through the rendezvous on the first allocated host
    assert checks["gloo_allreduce"]["status"] == "pass", checks["gloo_allreduce"]
    assert checks["ddp_step"]["status"] == "pass", checks["ddp_step"]


def test_a_failing_node_still_writes_its_reports_and_fails_the_job(slurm_cluster: Cluster,
                                                                   tmp_path: Path) -> None:
    planted = tmp_path / "planted.py"
    planted.write_text("def check_planted_failure(ctx):\n"
                       "    raise RuntimeError('this node fails on purpose')\n")
    # a folder and an interpreter path that only survive sbatch, srun and bash when quoted
    out = tmp_path / "it's a \"fleet\" $(touch pwned) %j dir"
    wrapper = tmp_path / "my env" / "python"
    wrapper.parent.mkdir()
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    wrapper.chmod(0o755)
    proc, folder = submit(slurm_cluster, tmp_path, "--level", "quick", out=out,
                          python=str(wrapper),
                          env={"TORCHENV_VALIDATE_EXTRA_CHECKS": str(planted)})
    log = job_output(folder)
    assert proc.returncode == 1, f"{proc.stderr}\n{log}"
    node = slurm_cluster.node
    assert (folder / f"{node}.exit").read_text().strip() == "1"
    assert (folder / f"{node}.detect.json").is_file()
    assert "FAILED" in log and "planted_failure" in log
    status, verdict = report(folder)
    assert status == 1
    (summary,) = verdict["nodes"]
    assert summary["status"] == "fail"
    assert [f["name"] for f in summary["failed_checks"]] == ["planted_failure"]
    assert verdict["drain"] == [{"node": node, "reasons": ["failed planted_failure"]}]
    junit = ET.parse(folder / "fleet-junit.xml").getroot()
    assert junit.get("failures") == "1"
    assert not list(tmp_path.glob("pwned"))
