"""An ``sbatch`` script that detects and validates every node of an allocation.

The batch step lists the allocated hosts, then ``srun`` starts one task per node with the whole
node (``--whole``); each task runs :func:`torchenv.fleet.node.node_script` and writes its reports
into ``OUTPUT_DIR/<job id>/``, named by the Slurm node name. The collectives of the full level
meet through torchrun's c10d rendezvous on the first allocated host. A task always exits 0 once
its reports are written, so one failing node stops neither the others nor their reports; the
batch step then runs ``torchenv fleet report`` over the folder, whose exit status (1 when any
node failed or wrote nothing) becomes the job's, which ``sbatch --wait`` returns.

The merge always runs: Slurm signals the batch shell (``--signal=B:USR1@MERGE_SECONDS``) that
long before the time limit, and ``scancel`` sends it SIGTERM; either way the shell stops the node
tasks, writes ``job-end`` (``time-limit`` or ``cancelled``) into the report folder, and prints the
verdict, in which a cancelled job blames no node.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from typing import Any, Optional

from torchenv import __version__
from torchenv.fleet.blame import MAX_ROUNDS
from torchenv.fleet.node import JOB_END_FILE, PROBES_DIR, NodeRun, node_script, probe_script

__all__ = ["EARLY_SIGNAL", "MIN_NODE_SECONDS", "PROBE_SLACK", "SlurmJob", "node_seconds",
           "render_sbatch", "time_limit_seconds"]

PROBE_SLACK = 120
"""Seconds a probe step gets beyond its check timeout: starting the step, importing torch,
starting the ranks (validate bounds the collective itself by the timeout plus at most 30 s)."""
EARLY_SIGNAL = 60
"""Seconds by which Slurm may send ``--signal`` early (sbatch(1): "due to the resolution of
event handling by Slurm, the signal may be sent up to 60 seconds earlier than specified")."""
MIN_NODE_SECONDS = 60
"""The least time the nodes must have before the merge signal can come: starting the
interpreter and importing torch take part of it already."""

_TIME_LIMIT = re.compile(r"(?:(?P<days>\d+)-(?P<dh>\d+)(?::(?P<dm>\d{1,2})(?::(?P<ds>\d{1,2}))?)?"
                         r"|(?P<a>\d+)(?::(?P<b>\d{1,2})(?::(?P<c>\d{1,2}))?)?)", re.ASCII)


def time_limit_seconds(text: str) -> Optional[int]:
    """A Slurm time limit in seconds, in sbatch's formats: ``MM``, ``MM:SS``, ``HH:MM:SS``,
    ``D-HH``, ``D-HH:MM``, ``D-HH:MM:SS``; None for no limit (``UNLIMITED``, ``INFINITE``, or
    0). Raises ValueError for anything else."""
    if text in ("UNLIMITED", "INFINITE"):
        return None
    m = _TIME_LIMIT.fullmatch(text)
    if m is None:
        raise ValueError(f"{text!r} is not a Slurm time limit")
    if m["days"] is not None:
        seconds = (int(m["days"]) * 86400 + int(m["dh"]) * 3600 + int(m["dm"] or 0) * 60
                   + int(m["ds"] or 0))
    elif m["c"] is not None:  # HH:MM:SS
        seconds = int(m["a"]) * 3600 + int(m["b"]) * 60 + int(m["c"])
    else:  # MM or MM:SS
        seconds = int(m["a"]) * 60 + int(m["b"] or 0)
    return seconds or None


def node_seconds(time_limit: int, merge_seconds: int) -> int:
    """The time the nodes are sure to have before the merge signal (it may come
    :data:`EARLY_SIGNAL` seconds before the ``merge_seconds`` it is asked for)."""
    return time_limit - merge_seconds - EARLY_SIGNAL


@dataclass(frozen=True)
class SlurmJob:
    """An allocation of ``nodes`` nodes with ``gpus_per_node`` GPUs each (0: CPU nodes, whose
    collectives use gloo) and where its reports go. ``output_dir`` must be a folder every node
    can write (a shared file system). ``sbatch_args`` are extra ``sbatch`` options, each one
    argument (``--account=abc``), written as ``#SBATCH`` lines after torchenv's own."""

    nodes: int
    output_dir: str
    gpus_per_node: int = 0
    partition: Optional[str] = None
    time: Optional[str] = None
    sbatch_args: tuple[str, ...] = ()
    run: NodeRun = field(default_factory=NodeRun)
    job_name: str = "torchenv-validate"
    exclusive: bool = True
    merge_seconds: int = 120
    """Time reserved before the time limit for stopping the nodes and printing the verdict."""
    probe_timeout: int = 60
    """Seconds each check of a blame probe may take; a probe step gets this plus
    :data:`PROBE_SLACK` in all."""

    @property
    def probe_limit(self) -> int:
        """Seconds one round of blame probes may take in all (its steps run at once)."""
        return self.probe_timeout + PROBE_SLACK

    def to_json(self) -> dict[str, Any]:
        return {"nodes": self.nodes, "gpus_per_node": self.gpus_per_node,
                "partition": self.partition, "time": self.time,
                "output_dir": self.output_dir, "sbatch_args": list(self.sbatch_args),
                "job_name": self.job_name, "exclusive": self.exclusive,
                "merge_seconds": self.merge_seconds, "probe_timeout": self.probe_timeout,
                "probe_rounds": 1 + MAX_ROUNDS, "probe_limit": self.probe_limit,
                "level": self.run.level, "python": self.run.python,
                "timeout": self.run.timeout, "rdzv_port": self.run.rdzv_port}


def render_sbatch(job: SlurmJob) -> str:
    """The batch script for ``job``: every value shell-quoted, ready for ``sbatch --wait``."""
    q = shlex.quote
    directives = [f"--job-name={job.job_name}", f"--nodes={job.nodes}", "--ntasks-per-node=1"]
    if job.gpus_per_node:
        directives.append(f"--gpus-per-node={job.gpus_per_node}")
    if job.exclusive:
        directives.append("--exclusive")
    if job.partition:
        directives.append(f"--partition={job.partition}")
    if job.time:
        directives.append(f"--time={job.time}")
    # USR1 to the batch shell (B:) this long before the time limit: time left for the verdict
    directives.append(f"--signal=B:USR1@{job.merge_seconds}")
    # sbatch expands %j in --output; a literal % in the folder is written %%
    directives.append(f"--output={job.output_dir.replace('%', '%%')}/slurm-%j.out")
    sbatch_lines = "\n".join(f"#SBATCH {q(d)}" for d in (*directives, *job.sbatch_args))
    devices = (f"{job.gpus_per_node} GPU(s) per node, NCCL and gloo" if job.gpus_per_node
               else "CPU nodes, gloo")
    settings = "\n".join(f"{name}={q(value)}" for name, value in job.run.settings().items())
    node_lines = node_script(job.run)
    probe_lines = probe_script(job.run)
    return f"""\
#!/bin/bash
# Validate every node of a Slurm allocation with torchenv, then merge the verdicts.
#
#   sbatch --wait THIS_FILE     exits 0 only when every node passed and none is missing
#
# Each node writes NODE.detect.json, NODE.validate.json, NODE.junit.xml and NODE.exit into
# OUTPUT_DIR/<job id>/ (NODE is its Slurm node name); the job's output ends with the fleet
# table and leaves fleet-junit.xml beside them. Read them again at any time with
#   torchenv fleet report OUTPUT_DIR/<job id>
#
# Rendered by torchenv {__version__}: {job.nodes} node(s), {devices}, level {job.run.level}.
{sbatch_lines}

set -euo pipefail

# The interpreter on the nodes (with torchenv and the torch to validate), the level, the folder.
{settings}
OUTPUT_DIR={q(job.output_dir)}
RDZV_PORT={job.run.rdzv_port}

FLEET_REPORT_DIR="$OUTPUT_DIR/$SLURM_JOB_ID"
mkdir -p "$FLEET_REPORT_DIR"

# The allocated hosts, one per line: the nodes the verdict expects to hear from. The first
# one hosts torchrun's c10d rendezvous for the multi-node collectives (read from the file rather
# than through a pipe into head, which could fail the script with SIGPIPE under pipefail).
scontrol show hostnames "$SLURM_JOB_NODELIST" > "$FLEET_REPORT_DIR/expected-nodes.txt"
# A node's address: its NodeAddr in slurm.conf (which need not be its name), else its name.
node_addr() {{
  local addr
  addr="$(scontrol -o show node "$1" 2>/dev/null | sed -n 's/.* NodeAddr=//p' \\
      | cut -d ' ' -f 1)" || true
  echo "${{addr:-$1}}"
}}
RDZV_HOST="$(node_addr "$(head -n 1 "$FLEET_REPORT_DIR/expected-nodes.txt")")"
FLEET_RDZV_ENDPOINT="$RDZV_HOST:$RDZV_PORT"
FLEET_PROBE_TIMEOUT={job.probe_timeout}
export {" ".join(job.run.settings())} FLEET_REPORT_DIR FLEET_RDZV_ENDPOINT FLEET_PROBE_TIMEOUT

# What every node runs. No `set -e` there: a failed validation still writes its reports, and
# the task exits 0 so that srun lets the other nodes finish.
read -r -d '' NODE_SCRIPT <<'NODE' || true
set -uo pipefail
FLEET_NODE="${{SLURMD_NODENAME:-$(hostname -s)}}"
FLEET_NNODES="$SLURM_JOB_NUM_NODES"
FLEET_NODE_RANK="$SLURM_NODEID"
{node_lines}exit 0
NODE

# What a node runs in a blame probe (below): the collective alone or with one other node.
read -r -d '' PROBE_SCRIPT <<'PROBE' || true
set -uo pipefail
FLEET_NODE="${{SLURMD_NODENAME:-$(hostname -s)}}"
FLEET_NODE_RANK="$SLURM_PROCID"
{probe_lines}exit 0
PROBE

# Always a verdict: near the time limit Slurm sends USR1 (--signal above), scancel sends TERM.
# Either one stops the node tasks, says why in job-end, and goes on to the verdict; srun runs
# in the background because bash runs a trap only between commands, and `wait` is one.
job_end=""
srun_pid=""
probe_pids=()
# shellcheck disable=SC2317  # run by the traps below, which shellcheck does not follow
stop_nodes() {{
  job_end="$1"
  echo "$job_end" > "$FLEET_REPORT_DIR/{JOB_END_FILE}"
  echo "torchenv fleet: $job_end: stopping the node tasks for the verdict" >&2
  # (the +: an empty array under set -u, which bash before 4.4 calls unbound)
  kill -TERM "$srun_pid" ${{probe_pids[@]+"${{probe_pids[@]}}"}} 2>/dev/null || true
}}
trap 'stop_nodes time-limit' USR1
trap 'stop_nodes cancelled' TERM INT

# One task per node with the whole node (every CPU and GPU of the allocation there). srun
# fails only when a node could not run its task at all; that node then has no reports, which
# the verdict below names, so the script goes on to it.
srun --nodes="$SLURM_JOB_NUM_NODES" --ntasks-per-node=1 --whole --kill-on-bad-exit=0 \\
    --label bash -c "$NODE_SCRIPT" &
srun_pid=$!
srun_status=0
wait "$srun_pid" || srun_status=$?
if [ -n "$job_end" ]; then
  # the trap ran: srun passes the TERM to the tasks and ends within Slurm's KillWait
  trap - USR1 TERM INT
  wait "$srun_pid" 2>/dev/null || true
elif [ "$srun_status" -ne 0 ]; then
  echo "torchenv fleet: srun exited $srun_status (a node could not run its task)" >&2
fi

# Blame: when a multi-node collective failed, 'fleet probes' names the next round of probes
# among the nodes that passed their local checks (alone first, then in pairs; at most
# {1 + MAX_ROUNDS} rounds), one line each: FOLDER NODE_COUNT NODELIST. A round's probes run at
# once, each a step of its own bounded by {job.probe_limit} s (with its task count: srun would
# otherwise take the allocation's); the verdict reads their reports.
probe_round=0
while [ -z "$job_end" ] && [ "$probe_round" -lt {1 + MAX_ROUNDS} ]; do
  plan="$("$FLEET_PYTHON" -m torchenv fleet probes "$FLEET_REPORT_DIR" \\
      --nodes-file "$FLEET_REPORT_DIR/expected-nodes.txt")" || break
  [ -n "$plan" ] || break
  echo "torchenv fleet: blame probes, round $probe_round: ${{plan//$'\\n'/; }}" >&2
  probe_pids=()
  port="$RDZV_PORT"
  while read -r probe count nodelist; do
    port=$((port + 1))
    endpoint=""
    if [ "$count" -gt 1 ]; then
      endpoint="$(node_addr "${{nodelist%%,*}}"):$port"
    fi
    mkdir -p "$FLEET_REPORT_DIR/{PROBES_DIR}/$probe"
    FLEET_PROBE_DIR="$FLEET_REPORT_DIR/{PROBES_DIR}/$probe" FLEET_PROBE_NNODES="$count" \\
    FLEET_PROBE_ENDPOINT="$endpoint" timeout --kill-after=10 {job.probe_limit} \\
        srun --nodes="$count" --ntasks="$count" --nodelist="$nodelist" --whole \\
        --kill-on-bad-exit=0 --label bash -c "$PROBE_SCRIPT" &
    probe_pids+=("$!")
  done <<< "$plan"
  wait "${{probe_pids[@]}}" || true
  probe_round=$((probe_round + 1))
done
if [ -n "$job_end" ] && [ "${{#probe_pids[@]}}" -gt 0 ]; then
  trap - USR1 TERM INT
  wait "${{probe_pids[@]}}" 2>/dev/null || true
fi

# The fleet verdict: the table in this job's output, one JUnit file for CI, and the job's exit
# status: 1 when any node failed, wrote nothing, or differs from the others.
verdict=0
"$FLEET_PYTHON" -m torchenv fleet report "$FLEET_REPORT_DIR" \\
    --nodes-file "$FLEET_REPORT_DIR/expected-nodes.txt" \\
    --junit "$FLEET_REPORT_DIR/fleet-junit.xml" || verdict=$?
exit "$verdict"
"""
