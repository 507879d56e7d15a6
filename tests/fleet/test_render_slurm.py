"""``torchenv fleet slurm``: the sbatch script's directives, quoting, and how it is written."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tests.conftest import Cli

from torchenv.fleet.node import NodeRun
from torchenv.fleet.slurm import SlurmJob, render_sbatch, time_limit_seconds

HOSTILE = "/shared/it's a \"fleet\" $(touch pwned) `id` %j dir"


def directives(script: str) -> list[str]:
    return [line[len("#SBATCH "):] for line in script.splitlines()
            if line.startswith("#SBATCH ")]


def test_directives_for_a_gpu_allocation() -> None:
    script = render_sbatch(SlurmJob(nodes=4, gpus_per_node=8, output_dir="/shared/fleet",
                                    partition="gpu", time="00:30:00",
                                    sbatch_args=("--account=ml", "--qos=high")))
    assert script.startswith("#!/bin/bash\n")
    assert directives(script) == [
        "--job-name=torchenv-validate", "--nodes=4", "--ntasks-per-node=1",
        "--gpus-per-node=8", "--exclusive", "--partition=gpu", "--time=00:30:00",
        "--signal=B:USR1@120", "--output=/shared/fleet/slurm-%j.out", "--account=ml",
        "--qos=high"]
    body = script.split("set -euo pipefail", 1)
    assert len(body) == 2 and "#SBATCH" not in body[1], "every directive precedes the commands"


def test_cpu_nodes_request_no_gpus_and_the_level_is_full_by_default() -> None:
    script = render_sbatch(SlurmJob(nodes=2, gpus_per_node=0, output_dir="/o"))
    assert not any(d.startswith("--gpus") for d in directives(script))
    assert "FLEET_LEVEL=full" in script and "CPU nodes, gloo" in script
    assert '--timeout "$FLEET_TIMEOUT"' not in script  # the checks keep their own budgets
    timed = render_sbatch(SlurmJob(nodes=2, output_dir="/o",
                                   run=NodeRun(level="quick", timeout=90)))
    assert "FLEET_LEVEL=quick" in timed and "FLEET_TIMEOUT=90" in timed
    assert '--timeout "$FLEET_TIMEOUT"' in timed


def test_every_node_runs_detect_and_validate_with_the_rendezvous_on_the_first_host() -> None:
    script = render_sbatch(SlurmJob(nodes=2, output_dir="/o", run=NodeRun(rdzv_port=29600)))
    assert 'scontrol show hostnames "$SLURM_JOB_NODELIST" > "$FLEET_REPORT_DIR/expected-nodes' \
        in script
    # the first host's NodeAddr (slurm.conf's address, which need not be its name)
    assert 'RDZV_HOST="$(node_addr "$(head -n 1 "$FLEET_REPORT_DIR/expected-nodes.txt")")"' \
        in script
    assert "scontrol -o show node" in script
    assert "RDZV_PORT=29600" in script
    assert '-m torchenv detect --json > "$report.detect.json.part"' in script
    for flag in ('--nnodes "$FLEET_NNODES"', '--node-rank "$FLEET_NODE_RANK"',
                 '--rdzv-endpoint "$FLEET_RDZV_ENDPOINT"', '--junit "$report.junit.xml"'):
        assert flag in script
    assert 'FLEET_NODE_RANK="$SLURM_NODEID"' in script
    assert "srun --nodes=\"$SLURM_JOB_NUM_NODES\" --ntasks-per-node=1 --whole" in script
    # a failing node's task exits 0 and the verdict decides the job's status at the end
    assert "--kill-on-bad-exit=0" in script
    assert script.rstrip().endswith('exit "$verdict"')


def test_values_are_shell_quoted() -> None:
    script = render_sbatch(SlurmJob(nodes=1, output_dir=HOSTILE,
                                    run=NodeRun(python="/opt/my env/bin/python")))
    assert "FLEET_PYTHON='/opt/my env/bin/python'" in script
    assert "OUTPUT_DIR='/shared/it'\"'\"'s a \"fleet\" $(touch pwned) `id` %j dir'" in script
    # sbatch expands %j in --output: the folder's own % is doubled
    assert ("--output=/shared/it'\"'\"'s a \"fleet\" $(touch pwned) `id` %%j dir/slurm-%j.out"
            in script)


@pytest.mark.parametrize("job", [
    SlurmJob(nodes=1, output_dir="/o"),
    SlurmJob(nodes=64, gpus_per_node=8, output_dir=HOSTILE, partition="a,b", time="1-00:00",
             sbatch_args=("--comment=it's mine",), run=NodeRun(python="/p q/python",
                                                               timeout=30.5)),
], ids=["plain", "hostile"])
def test_the_script_is_valid_bash_and_clean_for_shellcheck(job: SlurmJob, tmp_path: Path
                                                           ) -> None:
    path = tmp_path / "job.sbatch"
    path.write_text(render_sbatch(job))
    syntax = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True,
                            check=False)
    assert syntax.returncode == 0, syntax.stderr
    if shutil.which("shellcheck") is None:
        pytest.skip("shellcheck is not installed (apt-get install shellcheck)")
    # SC2089/SC2090/SC2016 say that quotes and $ inside a quoted value stay literal: the
    # hostile values are meant to
    lint = subprocess.run(["shellcheck", "--shell=bash", "--exclude=SC2089,SC2090,SC2016",
                           str(path)], capture_output=True, text=True, check=False)
    assert lint.returncode == 0, lint.stdout


def test_hostile_values_reach_the_nodes_unchanged(tmp_path: Path) -> None:
    """The script's first half, run by bash with a stand-in scontrol: every value survives."""
    output_dir = tmp_path / "it's a \"fleet\" $(touch pwned) `touch pwned2` %j dir"
    python = "/opt/it's my env/bin/python"
    script = render_sbatch(SlurmJob(nodes=1, output_dir=str(output_dir),
                                    sbatch_args=("--comment=$(touch pwned3)",),
                                    run=NodeRun(python=python)))
    head = script.split("# What every node runs.", 1)[0]
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "scontrol").write_text("#!/bin/sh\necho node-a\necho node-b\n")
    (bin_dir / "scontrol").chmod(0o755)
    probe = head + 'printf "%s\\n" "$FLEET_PYTHON" "$FLEET_REPORT_DIR" "$FLEET_RDZV_ENDPOINT"\n'
    proc = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, cwd=tmp_path,
                          env={"PATH": f"{bin_dir}:/usr/bin:/bin", "SLURM_JOB_ID": "42",
                               "SLURM_JOB_NODELIST": "node-[a-b]"}, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [python, f"{output_dir}/42", "node-a:29500"]
    assert (output_dir / "42" / "expected-nodes.txt").read_text() == "node-a\nnode-b\n"
    assert not list(tmp_path.glob("pwned*"))


def test_written_atomically_and_never_over_a_file_without_force(tmp_path: Path, cli: Cli) -> None:
    target = tmp_path / "job.sbatch"
    flags = ["fleet", "slurm", "--nodes", "2", "--gpus-per-node", "4", "--output-dir", "/o"]
    first = cli([*flags, "-o", str(target)])
    assert first.returncode == 0, first.stderr
    assert first.stdout == "" and "wrote" in first.stderr
    assert target.read_text().startswith("#!/bin/bash")
    target.write_text("keep me")
    again = cli([*flags, "-o", str(target)])
    assert again.returncode == 2 and "already exists" in again.stderr
    assert target.read_text() == "keep me"
    forced = cli([*flags, "-o", str(target), "--force"])
    assert forced.returncode == 0 and "--gpus-per-node=4" in target.read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["job.sbatch"]  # no temp file left
    stdout = cli([*flags, "-o", "-"])
    assert stdout.returncode == 0 and stdout.stdout == target.read_text()


def test_json_has_the_script_and_its_parameters(tmp_path: Path, cli: Cli) -> None:
    proc = cli(["fleet", "slurm", "--nodes", "2", "--gpus-per-node", "8",
                "--output-dir", "/o", "--sbatch-arg=--account=ml", "--level", "quick",
                "--json"])
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["scheduler"] == "slurm" and doc["written"] is None
    assert doc["script"].startswith("#!/bin/bash")
    assert doc["parameters"] == {
        "nodes": 2, "gpus_per_node": 8, "partition": None, "time": None, "output_dir": "/o",
        "sbatch_args": ["--account=ml"], "job_name": "torchenv-validate", "exclusive": True,
        "merge_seconds": 120, "probe_timeout": 60, "probe_rounds": 4, "probe_limit": 180,
        "level": "quick", "python": "python3", "timeout": None, "rdzv_port": 29500}
    target = tmp_path / "job.sbatch"
    written = json.loads(cli(["fleet", "slurm", "--nodes", "1", "--gpus-per-node", "0",
                              "--output-dir", "/o", "-o", str(target), "--json"]).stdout)
    assert written["written"] == str(target) and written["submit"] == f"sbatch --wait {target}"


@pytest.mark.parametrize(("flags", "words"), [
    (["--nodes", "0"], "--nodes: must be between 1"),
    (["--gpus-per-node", "-1"], "--gpus-per-node: must be between 0"),
    (["--time", "1 hour"], "--time: '1 hour' is not a Slurm time limit"),
    (["--partition", "gpu; rm -rf /"], "is not a partition name"),
    (["--sbatch-arg", "account=ml"], "is not an sbatch option"),
    (["--output-dir", "/a\nb"], "line break"),
    (["--timeout", "0"], "--timeout: must be a number of seconds above 0"),
    (["--rdzv-port", "70000"], "--rdzv-port: must be between 1 and 65535"),
], ids=["nodes", "gpus", "time", "partition", "sbatch-arg", "newline", "timeout", "port"])
def test_bad_values_are_refused(flags: list[str], words: str, cli: Cli) -> None:
    base = {"--nodes": "2", "--gpus-per-node": "8", "--output-dir": "/o"}
    args = ["fleet", "slurm"]
    for key, value in base.items():
        if key not in flags:
            args += [key, value]
    proc = cli([*args, *flags])
    assert proc.returncode == 2, proc.stderr
    assert words in proc.stderr


@pytest.mark.parametrize(("text", "seconds"), [
    ("45", 2700), ("2:30", 150), ("01:02:03", 3723), ("1-0", 86400), ("1-2:03", 93780),
    ("1-02:03:04", 93784), ("0", None), ("UNLIMITED", None), ("INFINITE", None),
], ids=["MM", "MM:SS", "HH:MM:SS", "D-HH", "D-HH:MM", "D-HH:MM:SS", "zero", "unlimited",
        "infinite"])
def test_a_time_limit_in_each_of_sbatchs_formats(text: str, seconds: int | None) -> None:
    assert time_limit_seconds(text) == seconds


@pytest.mark.parametrize("text", ["1 hour", "1:2:3:4", "1-", "-1", "1:123", "unlimited", ""])
def test_what_is_no_time_limit_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="is not a Slurm time limit"):
        time_limit_seconds(text)


@pytest.mark.parametrize(("time", "merge", "least"), [
    ("1", "120", "240 s (--time 00:04:00)"),
    ("00:05:00", "3600", "3720 s (--time 01:02:00)"),
    ("3", None, "240 s (--time 00:04:00)"),
    ("2:59", "60", "180 s (--time 00:03:00)"),
], ids=["1-minute", "merge-above-time", "3-minutes-default-merge", "one-second-short"])
def test_a_time_that_leaves_the_nodes_no_minute_before_the_merge_signal_is_refused(
        time: str, merge: str | None, least: str, cli: Cli) -> None:
    """The signal may come a minute before the --merge-time asked for; the nodes need at
    least a minute before it, or the job stops them before they validate anything."""
    proc = cli(["fleet", "slurm", "--nodes", "2", "--gpus-per-node", "8", "--output-dir",
                "/o", "--time", time, *(["--merge-time", merge] if merge else []), "--json"])
    assert proc.returncode == 2, proc.stdout
    doc = json.loads(proc.stdout)
    assert doc["error"].startswith(f"--time {time} (")
    assert f"--merge-time {merge or 120}:" in doc["error"]
    assert "less than the 60 s they need at least" in doc["error"]
    assert doc["hint"].startswith(f"give a --time of at least {least}"), doc


@pytest.mark.parametrize(("time", "merge"), [
    ("4", None), ("3", "30"), ("00:03:00", "60"), ("UNLIMITED", "3600"), ("0", "3600"),
], ids=["4-minutes", "3-minutes-merge-30", "hms-exact", "unlimited", "zero"])
def test_a_time_that_leaves_the_nodes_a_minute_is_rendered(
        time: str, merge: str | None, cli: Cli) -> None:
    proc = cli(["fleet", "slurm", "--nodes", "2", "--gpus-per-node", "8", "--output-dir",
                "/o", "--time", time, *(["--merge-time", merge] if merge else [])])
    assert proc.returncode == 0, proc.stderr
    assert f"--time={time}" in directives(proc.stdout)
    assert f"--signal=B:USR1@{merge or 120}" in directives(proc.stdout)


@pytest.mark.parametrize("args", [
    ["fleet", "slurm", "--nodes", "2", "--gpus-per-node", "8", "--output-dir", "/o"],
    ["fleet", "k8s", "--nodes", "2", "--gpus-per-node", "8", "--image", "img"],
], ids=["slurm", "k8s"])
def test_a_check_timeout_out_of_range_says_what_to_give(args: list[str], cli: Cli) -> None:
    proc = cli([*args, "--timeout", "0", "--json"])
    assert proc.returncode == 2, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["error"] == ("--timeout: must be a number of seconds above 0 and at most 86400, "
                            "not 0")
    assert doc["hint"] == "e.g. --timeout 300, or leave it out: each check then has its own budget"


@pytest.mark.parametrize("args", [
    ["fleet", "slurm", "--nodes", "2", "--gpus-per-node", "8", "--output-dir", "/o"],
    ["fleet", "k8s", "--nodes", "2", "--gpus-per-node", "8", "--image", "img"],
], ids=["slurm", "k8s"])
def test_rendering_never_imports_torch_or_the_validation_runner(args: list[str]) -> None:
    script = ("import contextlib, io, sys\n"
              "from torchenv.cli import main\n"
              "with contextlib.redirect_stdout(io.StringIO()):\n"
              "    assert main(sys.argv[1:]) == 0\n"
              "print(sorted(m for m in sys.modules if m == 'torch'\n"
              "             or m.startswith('torchenv.validation')))\n")
    proc = subprocess.run([sys.executable, "-c", script, *args], capture_output=True,
                          text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def _stopped_job(tmp_path: Path, signal_name: str) -> tuple[subprocess.CompletedProcess[str],
                                                             Path]:
    """The whole script run by bash with a stand-in scontrol and an srun whose node-b hangs:
    node-a's reports are there, then the batch shell gets ``signal_name``."""
    import os
    import signal
    import time

    from tests.fleet.fleet_nodes import write_node
    from tests.fleet.test_proof import detect_doc, validate_doc

    script = render_sbatch(SlurmJob(nodes=2, output_dir=str(tmp_path / "out"),
                                    run=NodeRun(python=sys.executable, level="quick")))
    folder = tmp_path / "out" / "42"
    folder.mkdir(parents=True)
    write_node(folder, "node-a", detect=detect_doc(0), validate=validate_doc(level="quick"),
               exit_status=0)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "scontrol").write_text("#!/bin/sh\necho node-a\necho node-b\n")
    started = tmp_path / "srun-started"
    (bin_dir / "srun").write_text(f"#!/bin/sh\ntouch '{started}'\nexec sleep 60\n")
    for tool in ("scontrol", "srun"):
        (bin_dir / tool).chmod(0o755)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "SLURM_JOB_ID": "42",
           "SLURM_JOB_NODELIST": "node-[a-b]", "SLURM_JOB_NUM_NODES": "2",
           "PYTHONPATH": os.pathsep.join(sys.path), "NO_COLOR": "1", "COLUMNS": "200"}
    with subprocess.Popen(["bash", "-c", script], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path) as proc:
        deadline = time.monotonic() + 30
        while not started.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert started.exists(), "srun was started"
        proc.send_signal(getattr(signal, signal_name))
        out, err = proc.communicate(timeout=120)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err), folder


def test_near_the_time_limit_the_script_still_prints_the_verdict(tmp_path: Path) -> None:
    """Slurm's USR1 (``--signal=B:USR1@S``): the hung node is named, the other one passed."""
    proc, folder = _stopped_job(tmp_path, "SIGUSR1")
    assert proc.returncode == 1, proc.stderr
    assert (folder / "job-end").read_text() == "time-limit\n"
    assert "reached its time limit" in proc.stdout
    assert "node-b: wrote no report" in proc.stdout, proc.stdout
    assert "node-a │ ok" in proc.stdout
    assert (folder / "fleet-junit.xml").is_file()


def test_a_cancelled_job_blames_no_node(tmp_path: Path, cli: Cli) -> None:
    proc, folder = _stopped_job(tmp_path, "SIGTERM")
    assert proc.returncode == 1, proc.stderr
    assert (folder / "job-end").read_text() == "cancelled\n"
    assert "was cancelled" in proc.stdout and "Nodes to drain" not in proc.stdout
    doc = json.loads(cli(["fleet", "report", str(folder), "--json",
                          "--nodes-file", str(folder / "expected-nodes.txt")]).stdout)
    assert doc["job_end"] == "cancelled" and doc["drain"] == [] and not doc["ok"]


def test_the_blame_probes_run_after_the_nodes_each_round_bounded() -> None:
    script = render_sbatch(SlurmJob(nodes=4, output_dir="/o", probe_timeout=45))
    body = script.split("srun_pid=$!", 1)[1]
    probes, verdict = body.split("# The fleet verdict", 1)
    assert '-m torchenv fleet probes "$FLEET_REPORT_DIR"' in probes
    assert '[ "$probe_round" -lt 4 ]' in probes  # alone, then at most three rounds of pairs
    # each probe: one step with its own task count on its nodes, bounded in time
    assert "timeout --kill-after=10 165" in probes
    assert 'srun --nodes="$count" --ntasks="$count" --nodelist="$nodelist"' in probes
    assert 'while [ -z "$job_end" ]' in probes  # the time reserve or scancel stops them
    assert "FLEET_PROBE_TIMEOUT=45" in script
    assert 'FLEET_NODE_RANK="$SLURM_PROCID"' in script.split("PROBE_SCRIPT", 1)[1]
    assert "--only gloo_allreduce,nccl_allreduce" in script
    assert "fleet report" in verdict
