"""The rendered sbatch script on a real Slurm cluster: two slurmd on this machine, CPU torch.

``sbatch --wait`` runs it; srun starts one task per node, which runs the real ``torchenv
detect`` and ``torchenv validate`` (the full level's gloo collectives meet across both nodes,
four ranks, through torchrun's c10d rendezvous on the first node's address), then the batch
step runs the blame probes when a collective failed, and merges the verdict.

Each fault of the fleet table is planted on node-2 only, through the interpreter the nodes run
(a wrapper that changes what node-2 does), and the verdict is asserted per node: which node
fails, which stays in service, what cause the table shows.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import run_cli
from tests.fleet.slurm_cluster import Cluster

from hermetic import hermetic

pytestmark = pytest.mark.slow

NODE_1, NODE_2 = "node-1", "node-2"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def on_node_2(tmp: Path, fault: str, *, everywhere: str = "") -> Path:
    """An interpreter wrapper that runs ``fault`` (shell lines) on node-2 only and
    ``everywhere`` on every node, then Python."""
    wrapper = tmp / "faulty" / "python"
    wrapper.parent.mkdir(exist_ok=True)
    wrapper.write_text(f'#!/bin/bash\n{everywhere}\n'
                       f'if [ "${{SLURMD_NODENAME:-}}" = {NODE_2} ]; then\n'
                       f'{fault}\nfi\nexec "{sys.executable}" "$@"\n')
    wrapper.chmod(0o755)
    return wrapper


# The full level's checks that its verdict requires, and only those: the collectives across
# the nodes (and the probes) are what these tests are about; the whole full level runs once,
# in the first test (it takes minutes on two nodes of one small machine).
REQUIRED_ONLY = ('case " $* " in *" validate "*) set -- "$@" --only '
                 'import_torch,build,gloo_allreduce,gloo_broadcast,gloo_allgather,ddp_step;; '
                 'esac')


# validate (not detect, not fleet report) never ends on node-2
HANG = 'case " $* " in *" validate "*) exec sleep 3600;; esac'


def render(cluster: Cluster, tmp: Path, *flags: str, nodes: int = 2, out: Path | None = None,
           python: str = sys.executable) -> tuple[Path, Path]:
    out = out or tmp / "reports"
    out.mkdir(exist_ok=True)
    script = tmp / "validate.sbatch"
    rendered = run_cli(["fleet", "slurm", "--nodes", str(nodes), "--gpus-per-node", "0",
                        "--output-dir", str(out), "--python", python,
                        "--partition", cluster.partition, "--rdzv-port", str(free_port()),
                        "-o", str(script), "--force", *flags])
    assert rendered.returncode == 0, rendered.stderr
    return script, out


def job_env(cluster: Cluster, env: dict[str, str] | None = None) -> dict[str, str]:
    return {**hermetic({**cluster.env, "TORCHENV_NO_OVERLAY": "1"}), **(env or {})}


def submit(cluster: Cluster, tmp: Path, *flags: str, nodes: int = 2,
           env: dict[str, str] | None = None, out: Path | None = None,
           python: str = sys.executable, time_limit: str = "15"
           ) -> tuple[subprocess.CompletedProcess[str], Path]:
    """Render the script with ``flags``, run it with ``sbatch --wait``; the job's report folder."""
    script, out = render(cluster, tmp, "--time", time_limit, *flags, nodes=nodes, out=out,
                         python=python)
    proc = subprocess.run(["sbatch", "--wait", "--parsable", str(script)], capture_output=True,
                          text=True, env=job_env(cluster, env), cwd=tmp, timeout=900,
                          check=False)
    job_id = proc.stdout.split()[0].split(";")[0] if proc.stdout.split() else "?"
    return proc, out / job_id


def job_output(folder: Path) -> str:
    return "".join(p.read_text("utf-8", "replace")
                   for p in folder.parent.glob(f"slurm-{folder.name}.out"))


def report(folder: Path) -> tuple[int, dict[str, Any]]:
    proc = run_cli(["fleet", "report", str(folder), "--nodes-file",
                    str(folder / "expected-nodes.txt"), "--json"])
    return proc.returncode, json.loads(proc.stdout)


def nodes_of(verdict: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {n["node"]: n for n in verdict["nodes"]}


def test_two_nodes_pass_the_full_validation_through_sbatch(slurm_cluster: Cluster,
                                                           tmp_path: Path) -> None:
    proc, folder = submit(slurm_cluster, tmp_path)
    log = job_output(folder)
    assert proc.returncode == 0, f"{proc.stderr}\n{log}\n{slurm_cluster.logs()}"
    assert (folder / "expected-nodes.txt").read_text().split() == [NODE_1, NODE_2]
    for node in (NODE_1, NODE_2):
        for kind in ("detect.json", "validate.json", "junit.xml", "exit", "stderr"):
            assert (folder / f"{node}.{kind}").is_file(), (node, kind)
    assert "OK: 2 of 2 nodes passed" in log and "blame probes" not in log
    status, verdict = report(folder)
    assert status == 0 and verdict["ok"] is True and verdict["probes"] == []
    for node in nodes_of(verdict).values():
        assert node["status"] == "pass" and node["level"] == "full" and node["gpus"] == 0
    checks = {c["name"]: c for c in json.loads(
        (folder / f"{NODE_2}.validate.json").read_text())["checks"]}
    # the collectives ran across both nodes, through the rendezvous on node-1's address
    assert checks["gloo_allreduce"]["status"] == "pass", checks["gloo_allreduce"]
    assert checks["ddp_step"]["status"] == "pass", checks["ddp_step"]


def test_a_bad_gloo_interface_on_node_2_fails_node_2_only(slurm_cluster: Cluster,
                                                          tmp_path: Path) -> None:
    """The fleet's collectives fail on both nodes; the probes find node-2 failing even alone,
    node-1 passing alone with no partner left: node-2 is drained, node-1 stays a suspect."""
    python = on_node_2(tmp_path, "export GLOO_SOCKET_IFNAME=bad0", everywhere=REQUIRED_ONLY)
    proc, folder = submit(slurm_cluster, tmp_path, "--timeout", "30", "--probe-timeout", "30",
                          python=str(python))
    log = job_output(folder)
    assert proc.returncode == 1, f"{proc.stderr}\n{log}"
    status, verdict = report(folder)
    nodes = nodes_of(verdict)
    assert status == 1
    assert nodes[NODE_2]["status"] == "fail", nodes[NODE_2]
    assert [f["name"] for f in nodes[NODE_2]["failed_checks"]] == ["fabric"]
    assert "Unable to find address for: bad0" in nodes[NODE_2]["failed_checks"][0]["error"]
    assert nodes[NODE_1]["status"] == "suspect", nodes[NODE_1]
    assert not nodes[NODE_1]["failed_checks"] and nodes[NODE_1]["collective_failures"]
    assert [d["node"] for d in verdict["drain"]] == [NODE_2]
    assert {p["probe"]: p["passed"] for p in verdict["probes"]} == {
        f"0+{NODE_1}": True, f"0+{NODE_2}": False}
    assert "blame probes, round 0" in log and f"kubectl cordon -- {NODE_2}\n" in log
    # each probe ran as one task on its one node (srun takes the allocation's count otherwise)
    assert "can't honor" not in log
    for node in (NODE_1, NODE_2):
        assert sorted(p.name for p in (folder / "probes" / f"0+{node}").iterdir()) == [
            f"{node}.exit", f"{node}.stderr", f"{node}.validate.json"]


def test_node_2_hanging_at_the_full_level_is_named_and_node_1_stays(slurm_cluster: Cluster,
                                                                    tmp_path: Path) -> None:
    """node-2's validate never ends: node-1's collectives time out waiting for it, the time
    reserve stops the job and prints the verdict: node-2 cut short, node-1 passed locally."""
    python = on_node_2(tmp_path, HANG, everywhere=REQUIRED_ONLY)
    proc, folder = submit(slurm_cluster, tmp_path, "--timeout", "20", "--merge-time", "60",
                          python=str(python), time_limit="4")
    log = job_output(folder)
    assert proc.returncode == 1, f"{proc.stderr}\n{log}"
    assert "time-limit: stopping the node tasks" in log and "FAILED" in log
    status, verdict = report(folder)
    nodes = nodes_of(verdict)
    assert status == 1
    assert verdict["job_end"] == "time-limit"
    assert nodes[NODE_2]["status"] == "incomplete"
    assert any("cut short" in p for p in nodes[NODE_2]["problems"])
    assert nodes[NODE_1]["status"] == "suspect" and not nodes[NODE_1]["failed_checks"]
    assert [d["node"] for d in verdict["drain"]] == [NODE_2]


def test_node_2_hanging_at_the_quick_level_still_gets_a_verdict(slurm_cluster: Cluster,
                                                                tmp_path: Path) -> None:
    python = on_node_2(tmp_path, HANG)
    proc, folder = submit(slurm_cluster, tmp_path, "--level", "quick", "--merge-time", "60",
                          python=str(python), time_limit="2")
    log = job_output(folder)
    assert proc.returncode == 1, f"{proc.stderr}\n{log}"
    assert "torchenv fleet report" in log and "FAILED" in log, log
    status, verdict = report(folder)
    nodes = nodes_of(verdict)
    assert status == 1
    assert verdict["job_end"] == "time-limit"
    assert nodes[NODE_1]["status"] == "pass"
    assert nodes[NODE_2]["status"] == "incomplete"
    assert [d["node"] for d in verdict["drain"]] == [NODE_2]


def test_a_job_cancelled_mid_run_blames_no_node(slurm_cluster: Cluster, tmp_path: Path) -> None:
    python = on_node_2(tmp_path, HANG)
    script, out = render(slurm_cluster, tmp_path, "--level", "quick", "--time", "15",
                         python=str(python))
    env = job_env(slurm_cluster)
    sub = subprocess.run(["sbatch", "--parsable", str(script)], capture_output=True, text=True,
                         env=env, cwd=tmp_path, timeout=60, check=False)
    assert sub.returncode == 0, sub.stderr
    job = sub.stdout.split()[0].split(";")[0]
    folder = out / job
    deadline = time.monotonic() + 300
    while not (folder / f"{NODE_1}.exit").exists() and time.monotonic() < deadline:
        time.sleep(1)
    assert (folder / f"{NODE_1}.exit").exists(), slurm_cluster.logs()
    slurm_cluster.run("scancel", job, env=env)
    while slurm_cluster.run("squeue", "-h", "-j", job, env=env).stdout.strip():
        assert time.monotonic() < deadline, "the cancelled job did not end"
        time.sleep(1)
    log = job_output(folder)
    assert "cancelled: stopping the node tasks" in log and "torchenv fleet report" in log, log
    status, verdict = report(folder)
    assert status == 1 and verdict["job_end"] == "cancelled" and verdict["drain"] == []
    assert nodes_of(verdict)[NODE_1]["status"] == "pass"
    assert "the job was cancelled" in log and "Nodes to drain" not in log


def test_node_2_killed_by_signal_9_shows_the_signal(slurm_cluster: Cluster,
                                                    tmp_path: Path) -> None:
    """As the out-of-memory killer does: validate on node-2 gets SIGKILL."""
    # killed once validate has started a child (its checks run), however fast the machine
    python = on_node_2(tmp_path, 'case " $* " in *" validate "*) ( until pgrep -P $$ '
                                 '>/dev/null; do sleep 0.2; done; sleep 1; kill -9 $$ ) & ;; '
                                 'esac')
    proc, folder = submit(slurm_cluster, tmp_path, "--level", "quick", python=str(python))
    log = job_output(folder)
    assert proc.returncode == 1, f"{proc.stderr}\n{log}"
    assert (folder / f"{NODE_2}.exit").read_text().strip() == "137"
    status, verdict = report(folder)
    nodes = nodes_of(verdict)
    assert status == 1
    assert nodes[NODE_1]["status"] == "pass"
    assert nodes[NODE_2]["status"] == "incomplete"
    assert nodes[NODE_2]["cause"][0] == ("validate killed by signal 9, SIGKILL, out of memory "
                                         "or killed")
    assert "killed by signal 9" in log


def test_torchenv_missing_on_node_2_names_the_cause_in_the_table(slurm_cluster: Cluster,
                                                                 tmp_path: Path) -> None:
    python = on_node_2(tmp_path, 'exec env -u PYTHONPATH /usr/bin/python3 -I "$@"')
    proc, folder = submit(slurm_cluster, tmp_path, "--level", "quick", python=str(python))
    log = job_output(folder)
    assert proc.returncode == 1, f"{proc.stderr}\n{log}"
    status, verdict = report(folder)
    nodes = nodes_of(verdict)
    assert status == 1
    assert nodes[NODE_1]["status"] == "pass"
    assert nodes[NODE_2]["status"] == "incomplete"
    assert nodes[NODE_2]["cause"][-1].endswith("No module named torchenv")
    assert "No module named torchenv" in log.split("torchenv fleet report", 1)[1]


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
    proc, folder = submit(slurm_cluster, tmp_path, "--level", "quick", nodes=1, out=out,
                          python=str(wrapper),
                          env={"TORCHENV_VALIDATE_EXTRA_CHECKS": str(planted)})
    log = job_output(folder)
    assert proc.returncode == 1, f"{proc.stderr}\n{log}"
    (node,) = (folder / "expected-nodes.txt").read_text().split()
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
