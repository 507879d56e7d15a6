"""The rendered sbatch script on a real Slurm cluster: several slurmd on this machine, CPU torch.

``sbatch --wait`` runs it; srun starts one task per node, which runs the real ``torchenv
detect`` and ``torchenv validate`` (the full level's gloo collectives meet across both nodes,
four ranks, through torchrun's c10d rendezvous on the first node's address), then the batch
step runs the blame probes when a collective failed, and merges the verdict.

Each test asserts on a job of its own, on two nodes of its own (one for the single-node job),
named in the script with ``--sbatch-arg=--nodelist=...``. The jobs of every selected test are
submitted together when the first one starts, so that they run at once: most of them spend
their time waiting (on a hanging node, a collective's timeout, a time limit) while the full
level compiles. Each fault of the fleet table is planted on the job's second node only,
through the interpreter the nodes run (a wrapper that changes what that node does), and the
verdict is asserted per node: which node fails, which stays in service, what cause the table
shows.
"""

from __future__ import annotations

import json
import random
import socket
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest
from tests.conftest import run_cli
from tests.fleet.slurm_cluster import Cluster

from hermetic import hermetic

pytestmark = pytest.mark.slow

F = TypeVar("F", bound=Callable[..., Any])


def rdzv_ports(count: int, span: int = 3) -> list[int]:
    """``count`` rendezvous ports, each free with the ``span - 1`` after it (the blame probes
    of a two-node job use the next two), no two ranges overlapping. They lie below the
    kernel's ephemeral range, so that no port the kernel hands out meanwhile (a connection's
    own end, a torchrun worker's) can be one of them."""
    ephemeral = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
    below = range(10000, int(ephemeral[0]) - span, span)
    ports: list[int] = []
    for port in random.sample(below, min(200, len(below))):
        if len(ports) == count:
            break
        try:
            for offset in range(span):
                with socket.socket() as s:
                    s.bind(("127.0.0.1", port + offset))
        except OSError:
            continue
        ports.append(port)
    assert len(ports) == count, f"no {count} free port ranges below {ephemeral[0]}"
    return ports


# The full level's checks that its verdict requires, and only those: the collectives across
# the nodes (and the probes) are what these tests are about; the whole full level runs once,
# in the first test (it takes minutes on two nodes of one small machine). A blame probe's
# validate keeps its own --only.
REQUIRED_ONLY = ('case " $* " in *" --only "*) ;; *" validate "*) set -- "$@" --only '
                 'import_torch,build,gloo_allreduce,gloo_broadcast,gloo_allgather,ddp_step;; '
                 'esac')


# validate (not detect, not fleet report) never ends on the faulty node
HANG = 'case " $* " in *" validate "*) exec sleep 3600;; esac'


def job_env(cluster: Cluster, env: dict[str, str] | None = None) -> dict[str, str]:
    return {**hermetic({**cluster.env, "TORCHENV_NO_OVERLAY": "1"}), **(env or {})}


@dataclass
class Job:
    """A submitted job: ``sbatch --wait`` still running for it, its nodes, its report folder."""

    id: str
    nodes: tuple[str, ...]
    folder: Path
    tmp: Path
    cluster: Cluster
    sbatch: subprocess.Popen[str]

    def finish(self, timeout: float = 900) -> subprocess.CompletedProcess[str]:
        """Wait for ``sbatch --wait``: its exit status is the job's."""
        stdout, stderr = self.sbatch.communicate(timeout=timeout)
        return subprocess.CompletedProcess(self.sbatch.args, self.sbatch.returncode, stdout,
                                           stderr)

    def log(self) -> str:
        return "".join(p.read_text("utf-8", "replace")
                       for p in self.folder.parent.glob(f"slurm-{self.id}.out"))


@dataclass
class Setup:
    """Where a test's job goes: its folder, its nodes (the first hosts the rendezvous, a fault
    is planted on the last) and its rendezvous port."""

    cluster: Cluster
    tmp: Path
    nodes: tuple[str, ...]
    rdzv_port: int

    @property
    def faulty(self) -> str:
        return self.nodes[-1]

    def on_faulty_node(self, fault: str, *, everywhere: str = "") -> Path:
        """An interpreter wrapper that runs ``fault`` (shell lines) on :attr:`faulty` only
        and ``everywhere`` on every node, then Python."""
        wrapper = self.tmp / "faulty" / "python"
        wrapper.parent.mkdir(exist_ok=True)
        wrapper.write_text(f'#!/bin/bash\n{everywhere}\n'
                           f'if [ "${{SLURMD_NODENAME:-}}" = {self.faulty} ]; then\n'
                           f'{fault}\nfi\nexec "{sys.executable}" "$@"\n')
        wrapper.chmod(0o755)
        return wrapper

    def submit(self, *flags: str, out: Path | None = None, python: str = sys.executable,
               env: dict[str, str] | None = None, time_limit: str = "15") -> Job:
        """Render the script with ``flags`` for this job's nodes and start ``sbatch --wait``
        on it; returns once Slurm has the job."""
        out = out or self.tmp / "reports"
        out.mkdir(exist_ok=True)
        script = self.tmp / "validate.sbatch"
        rendered = run_cli(["fleet", "slurm", "--nodes", str(len(self.nodes)),
                            "--gpus-per-node", "0", "--output-dir", str(out),
                            "--python", python, "--partition", self.cluster.partition,
                            f"--sbatch-arg=--nodelist={','.join(self.nodes)}",
                            "--rdzv-port", str(self.rdzv_port), "--time", time_limit,
                            "-o", str(script), "--force", *flags])
        assert rendered.returncode == 0, rendered.stderr
        sbatch = subprocess.Popen(["sbatch", "--wait", "--parsable", str(script)],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  env=job_env(self.cluster, env), cwd=self.tmp)
        assert sbatch.stdout is not None
        # --parsable prints the job id as soon as Slurm has the job, then waits for its end
        first = sbatch.stdout.readline()
        if not first.strip():
            sbatch.wait(60)
            pytest.fail(f"sbatch did not submit: {sbatch.stderr and sbatch.stderr.read()}")
        job_id = first.split(";")[0].strip()
        return Job(job_id, self.nodes, out / job_id, self.tmp, self.cluster, sbatch)


@dataclass(frozen=True)
class Plan:
    nodes: int
    submit: Callable[[Setup], Job]


PLANS: dict[str, Plan] = {}
"""The job each test asserts on, by the test's name."""


def job_of(submit: Callable[[Setup], Job], nodes: int = 2) -> Callable[[F], F]:
    """Give the decorated test the job that ``submit`` starts (on ``nodes`` nodes of its
    own), as its ``job`` fixture."""
    def register(test: F) -> F:
        PLANS[test.__name__] = Plan(nodes, submit)
        return test
    return register


@pytest.fixture(scope="module")
def jobs(request: pytest.FixtureRequest, slurm_cluster: Cluster,
         tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Job]]:
    """The jobs of every selected test of this module, submitted at once; at the end, every
    ``sbatch --wait`` has returned (the cluster's teardown cancels what still runs)."""
    names = [item.originalname for item in request.session.items
             if isinstance(item, pytest.Function) and item.module is request.module
             and item.originalname in PLANS]
    free = list(slurm_cluster.nodes)
    ports = iter(rdzv_ports(len(names)))
    submitted: dict[str, Job] = {}
    try:
        for name in names:
            plan = PLANS[name]
            assert len(free) >= plan.nodes, f"SLURM_NODES is too small for {name}"
            nodes, free = tuple(free[:plan.nodes]), free[plan.nodes:]
            setup = Setup(slurm_cluster, tmp_path_factory.mktemp(name[5:]), nodes,
                          next(ports))
            submitted[name] = plan.submit(setup)
        yield submitted
    finally:
        for job in submitted.values():
            if job.sbatch.poll() is None:
                slurm_cluster.run("scancel", job.id)
                try:
                    job.sbatch.communicate(timeout=60)
                except subprocess.TimeoutExpired:
                    job.sbatch.kill()
                    job.sbatch.communicate()


@pytest.fixture
def job(request: pytest.FixtureRequest, jobs: dict[str, Job]) -> Job:
    return jobs[request.node.originalname]


def report(folder: Path) -> tuple[int, dict[str, Any]]:
    proc = run_cli(["fleet", "report", str(folder), "--nodes-file",
                    str(folder / "expected-nodes.txt"), "--json"])
    return proc.returncode, json.loads(proc.stdout)


def nodes_of(verdict: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {n["node"]: n for n in verdict["nodes"]}


@job_of(lambda s: s.submit())
def test_two_nodes_pass_the_full_validation_through_sbatch(job: Job) -> None:
    proc = job.finish()
    log = job.log()
    assert proc.returncode == 0, f"{proc.stderr}\n{log}\n{job.cluster.logs()}"
    assert (job.folder / "expected-nodes.txt").read_text().split() == list(job.nodes)
    for node in job.nodes:
        for kind in ("detect.json", "validate.json", "junit.xml", "exit", "stderr"):
            assert (job.folder / f"{node}.{kind}").is_file(), (node, kind)
    assert "OK: 2 of 2 nodes passed" in log and "blame probes" not in log
    status, verdict = report(job.folder)
    assert status == 0 and verdict["ok"] is True and verdict["probes"] == []
    for summary in nodes_of(verdict).values():
        assert summary["status"] == "pass" and summary["level"] == "full"
        assert summary["gpus"] == 0
    checks = {c["name"]: c for c in json.loads(
        (job.folder / f"{job.nodes[1]}.validate.json").read_text())["checks"]}
    # the collectives ran across both nodes, through the rendezvous on the first one's address
    assert checks["gloo_allreduce"]["status"] == "pass", checks["gloo_allreduce"]
    assert checks["ddp_step"]["status"] == "pass", checks["ddp_step"]


def bad_gloo_interface(s: Setup) -> Job:
    python = s.on_faulty_node("export GLOO_SOCKET_IFNAME=bad0", everywhere=REQUIRED_ONLY)
    # a probe that passes is done as soon as it can be, the failing one once its ranks start:
    # the probes' timeout is only room for the first node's probe to start its ranks while
    # the other jobs' nodes import torch
    return s.submit("--timeout", "30", "--probe-timeout", "60", python=str(python))


@job_of(bad_gloo_interface)
def test_a_bad_gloo_interface_on_the_second_node_fails_that_node_only(job: Job) -> None:
    """The fleet's collectives fail on both nodes; the probes find the second node failing
    even alone, the first passing alone with no partner left: the second is drained, the
    first stays a suspect."""
    first, second = job.nodes
    proc = job.finish()
    log = job.log()
    assert proc.returncode == 1, f"{proc.stderr}\n{log}"
    status, verdict = report(job.folder)
    nodes = nodes_of(verdict)
    assert status == 1
    assert nodes[second]["status"] == "fail", nodes[second]
    assert [f["name"] for f in nodes[second]["failed_checks"]] == ["fabric"]
    assert "Unable to find address for: bad0" in nodes[second]["failed_checks"][0]["error"]
    assert nodes[first]["status"] == "suspect", nodes[first]
    assert not nodes[first]["failed_checks"] and nodes[first]["collective_failures"]
    assert [d["node"] for d in verdict["drain"]] == [second]
    assert {p["probe"]: p["passed"] for p in verdict["probes"]} == {
        f"0+{first}": True, f"0+{second}": False}
    assert "blame probes, round 0" in log and f"kubectl cordon -- {second}\n" in log
    # each probe ran as one task on its one node (srun takes the allocation's count otherwise)
    assert "can't honor" not in log
    for node in (first, second):
        assert sorted(p.name for p in (job.folder / "probes" / f"0+{node}").iterdir()) == [
            f"{node}.exit", f"{node}.stderr", f"{node}.validate.json"]


# The time reserve's USR1 comes 30 to 60 s before the 3-minute limit here (slurmctld looks
# every 30 s, and sends it when the next look would be late), so 2 minutes into the job at the
# earliest: the first node has long finished its part by then, even with every other job of
# this module importing torch at the same time.


def full_level_hang(s: Setup) -> Job:
    # the first node's collectives give up 25 s after they start (--timeout 10 and its slack)
    python = s.on_faulty_node(HANG, everywhere=REQUIRED_ONLY)
    return s.submit("--timeout", "10", "--merge-time", "30", python=str(python), time_limit="3")


@job_of(full_level_hang)
def test_the_second_node_hanging_at_the_full_level_is_named_and_the_first_stays(
        job: Job) -> None:
    """The second node's validate never ends: the first node's collectives time out waiting
    for it, the time reserve stops the job and prints the verdict: the second node cut short,
    the first passed locally."""
    first, second = job.nodes
    proc = job.finish()
    log = job.log()
    assert proc.returncode == 1, f"{proc.stderr}\n{log}"
    assert "time-limit: stopping the node tasks" in log and "FAILED" in log
    status, verdict = report(job.folder)
    nodes = nodes_of(verdict)
    assert status == 1
    assert verdict["job_end"] == "time-limit"
    assert nodes[second]["status"] == "incomplete"
    assert any("cut short" in p for p in nodes[second]["problems"])
    assert nodes[first]["status"] == "suspect" and not nodes[first]["failed_checks"]
    assert [d["node"] for d in verdict["drain"]] == [second]


def quick_level_hang(s: Setup) -> Job:
    python = s.on_faulty_node(HANG)
    return s.submit("--level", "quick", "--merge-time", "30", python=str(python),
                    time_limit="3")


@job_of(quick_level_hang)
def test_the_second_node_hanging_at_the_quick_level_still_gets_a_verdict(job: Job) -> None:
    first, second = job.nodes
    proc = job.finish()
    log = job.log()
    assert proc.returncode == 1, f"{proc.stderr}\n{log}"
    assert "torchenv fleet report" in log and "FAILED" in log, log
    status, verdict = report(job.folder)
    nodes = nodes_of(verdict)
    assert status == 1
    assert verdict["job_end"] == "time-limit"
    assert nodes[first]["status"] == "pass"
    assert nodes[second]["status"] == "incomplete"
    assert [d["node"] for d in verdict["drain"]] == [second]


@job_of(lambda s: s.submit("--level", "quick", python=str(s.on_faulty_node(HANG))))
def test_a_job_cancelled_mid_run_blames_no_node(job: Job) -> None:
    first = job.nodes[0]
    deadline = time.monotonic() + 300
    while not (job.folder / f"{first}.exit").exists() and time.monotonic() < deadline:
        time.sleep(1)
    assert (job.folder / f"{first}.exit").exists(), job.cluster.logs()
    assert job.sbatch.poll() is None, "the job ended before it was cancelled"
    job.cluster.run("scancel", job.id)
    # sbatch --wait returns as soon as the job is cancelled, while its batch step still stops
    # the nodes and prints the verdict: the job is over once it has left the queue
    while job.cluster.run("squeue", "-h", "-j", job.id).stdout.strip():
        assert time.monotonic() < deadline, "the cancelled job did not end"
        time.sleep(1)
    job.finish(timeout=60)
    log = job.log()
    assert "cancelled: stopping the node tasks" in log and "torchenv fleet report" in log, log
    status, verdict = report(job.folder)
    assert status == 1 and verdict["job_end"] == "cancelled" and verdict["drain"] == []
    assert nodes_of(verdict)[first]["status"] == "pass"
    assert "the job was cancelled" in log and "Nodes to drain" not in log


def killed_by_signal_9(s: Setup) -> Job:
    # killed once validate has started a child (its checks run), however fast the machine
    python = s.on_faulty_node('case " $* " in *" validate "*) ( until pgrep -P $$ '
                              '>/dev/null; do sleep 0.2; done; sleep 1; kill -9 $$ ) & ;; '
                              'esac')
    return s.submit("--level", "quick", python=str(python))


@job_of(killed_by_signal_9)
def test_the_second_node_killed_by_signal_9_shows_the_signal(job: Job) -> None:
    """As the out-of-memory killer does: validate on the second node gets SIGKILL."""
    first, second = job.nodes
    proc = job.finish()
    log = job.log()
    assert proc.returncode == 1, f"{proc.stderr}\n{log}"
    assert (job.folder / f"{second}.exit").read_text().strip() == "137"
    status, verdict = report(job.folder)
    nodes = nodes_of(verdict)
    assert status == 1
    assert nodes[first]["status"] == "pass"
    assert nodes[second]["status"] == "incomplete"
    assert nodes[second]["cause"][0] == ("validate killed by signal 9, SIGKILL, out of memory "
                                         "or killed")
    assert "killed by signal 9" in log


@job_of(lambda s: s.submit("--level", "quick", python=str(s.on_faulty_node(
    'exec env -u PYTHONPATH /usr/bin/python3 -I "$@"'))))
def test_torchenv_missing_on_the_second_node_names_the_cause_in_the_table(job: Job) -> None:
    first, second = job.nodes
    proc = job.finish()
    log = job.log()
    assert proc.returncode == 1, f"{proc.stderr}\n{log}"
    status, verdict = report(job.folder)
    nodes = nodes_of(verdict)
    assert status == 1
    assert nodes[first]["status"] == "pass"
    assert nodes[second]["status"] == "incomplete"
    assert nodes[second]["cause"][-1].endswith("No module named torchenv")
    assert "No module named torchenv" in log.split("torchenv fleet report", 1)[1]


def planted_failure(s: Setup) -> Job:
    planted = s.tmp / "planted.py"
    planted.write_text("def check_planted_failure(ctx):\n"
                       "    raise RuntimeError('this node fails on purpose')\n")
    # a folder and an interpreter path that only survive sbatch, srun and bash when quoted
    out = s.tmp / "it's a \"fleet\" $(touch pwned) %j dir"
    wrapper = s.tmp / "my env" / "python"
    wrapper.parent.mkdir()
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    wrapper.chmod(0o755)
    return s.submit("--level", "quick", out=out, python=str(wrapper),
                    env={"TORCHENV_VALIDATE_EXTRA_CHECKS": str(planted)})


@job_of(planted_failure, nodes=1)
def test_a_failing_node_still_writes_its_reports_and_fails_the_job(job: Job) -> None:
    proc = job.finish()
    log = job.log()
    assert proc.returncode == 1, f"{proc.stderr}\n{log}"
    (node,) = (job.folder / "expected-nodes.txt").read_text().split()
    assert (node,) == job.nodes
    assert (job.folder / f"{node}.exit").read_text().strip() == "1"
    assert (job.folder / f"{node}.detect.json").is_file()
    assert "FAILED" in log and "planted_failure" in log
    status, verdict = report(job.folder)
    assert status == 1
    (summary,) = verdict["nodes"]
    assert summary["status"] == "fail"
    assert [f["name"] for f in summary["failed_checks"]] == ["planted_failure"]
    assert verdict["drain"] == [{"node": node, "reasons": ["failed planted_failure"]}]
    junit = ET.parse(job.folder / "fleet-junit.xml").getroot()
    assert junit.get("failures") == "1"
    assert not list(job.tmp.glob("pwned"))


SLURM_NODES = sum(plan.nodes for plan in PLANS.values())
"""Every job on nodes of its own (read by the ``slurm_cluster`` fixture)."""
