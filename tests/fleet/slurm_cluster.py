"""A real Slurm cluster on this machine: munged, slurmctld and a slurmd per node, under a temp dir.

The nodes (``node-1``, ``node-2``, ...) are several ``slurmd -N NAME`` daemons on this one host,
each with its own port, spool and log, all at address 127.0.0.1: separate nodes to Slurm, srun
and the fleet script, which reaches the rendezvous through the first node's ``NodeAddr``.
Everything the daemons keep (key, sockets, state, spool, logs, pid files) lives under the folder
given to :func:`start_cluster`, the ports are free ones picked now, and :meth:`Cluster.stop`
ends exactly the daemons it started, by the pids they wrote, then whatever still runs for the
cluster (a job's task that escaped its step, a ``slurmstepd`` left without its slurmd), and
names it. Clients find the cluster through ``SLURM_CONF`` in :attr:`Cluster.env`.

Needs root (``SlurmUser=root``) and the Debian packages ``slurmctld slurmd slurm-client munge``;
:class:`ClusterUnavailable` says which is missing, or which daemon did not come up and why.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Cluster", "ClusterUnavailable", "NodeHardware", "parse_slurmd_c", "start_cluster"]

PACKAGES = "slurmctld slurmd slurm-client munge"
_PROGRAMS = ("munged", "slurmctld", "slurmd", "sbatch", "sinfo", "scontrol", "squeue", "scancel")


class ClusterUnavailable(RuntimeError):
    """Raised when this machine cannot run the cluster; the message says why (a skip reason)."""


@dataclass(frozen=True)
class NodeHardware:
    """What ``slurmd -C`` found: the node line slurm.conf must agree with."""

    name: str
    cpus: int
    sockets: int
    cores_per_socket: int
    threads_per_core: int
    real_memory_mb: int


def parse_slurmd_c(output: str) -> NodeHardware:
    """Read ``slurmd -C``, whose first line is e.g. (one line)::

        NodeName=vm CPUs=2 Boards=1 SocketsPerBoard=1 CoresPerSocket=2 ThreadsPerCore=1
        RealMemory=24105
    """
    fields = dict(re.findall(r"(\w+)=(\S+)", output.split("\nUpTime", 1)[0]))
    try:
        return NodeHardware(
            name=fields["NodeName"], cpus=int(fields["CPUs"]),
            sockets=int(fields.get("SocketsPerBoard", 1)) * int(fields.get("Boards", 1)),
            cores_per_socket=int(fields["CoresPerSocket"]),
            threads_per_core=int(fields["ThreadsPerCore"]),
            real_memory_mb=int(fields["RealMemory"]))
    except (KeyError, ValueError) as exc:
        raise ClusterUnavailable(f"'slurmd -C' printed no node line: {output[:200]!r}") from exc


@dataclass
class Cluster:
    root: Path
    conf: Path
    nodes: list[str]
    partition: str
    env: dict[str, str]
    pid_files: list[Path] = field(default_factory=list)

    @property
    def node(self) -> str:
        """The first node (where a one-node job runs unless told otherwise)."""
        return self.nodes[0]

    def run(self, *argv: str, timeout: float = 30, env: Mapping[str, str] | None = None
            ) -> subprocess.CompletedProcess[str]:
        """A Slurm client command against this cluster."""
        return subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout,
                              env={**self.env, **(env or {})}, check=False)

    def logs(self, lines: int = 15) -> str:
        """The last lines of every daemon log, for a failure message."""
        out = []
        for log in sorted(self.root.glob("log/*.log")):
            text = log.read_text("utf-8", "replace").splitlines()[-lines:]
            out.append(f"--- {log.name}\n" + "\n".join(text))
        return "\n".join(out)

    def processes(self) -> dict[int, str]:
        """Every process still running for this cluster, pid → command line: those working in
        :attr:`root` (its daemons, a ``slurmstepd``) and those whose ``SLURM_CONF`` names
        :attr:`conf` (a job's tasks, a client)."""
        found = {}
        conf = f"SLURM_CONF={self.conf}".encode()
        for proc in Path("/proc").iterdir():
            if not proc.name.isdigit() or int(proc.name) == os.getpid():
                continue
            with contextlib.suppress(OSError, IndexError):  # gone meanwhile
                if (proc / "stat").read_text().rsplit(") ", 1)[1].startswith("Z"):
                    continue
                cwd = Path(os.readlink(proc / "cwd"))
                if cwd == self.root or self.root in cwd.parents \
                        or conf in (proc / "environ").read_bytes().split(b"\0"):
                    command = (proc / "cmdline").read_bytes().replace(b"\0", b" ")
                    found[int(proc.name)] = command.decode("utf-8", "replace").strip()
        return found

    def stop(self) -> dict[int, str]:
        """Cancel this cluster's jobs, end its daemons (slurmd, slurmctld, munged), then kill
        what still runs for it (:meth:`processes`); returns those, which nothing should have
        left."""
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            jobs = self.run("squeue", "-h", "-o", "%i", timeout=10).stdout.split()
            if jobs:
                self.run("scancel", *jobs, timeout=10)
                # KillWait (30 s) passes between the tasks' SIGTERM and their SIGKILL
                _wait(lambda: not self.run("squeue", "-h", "-o", "%i", timeout=10).stdout.strip(),
                      45)
        _end(self.pid_files)
        _wait(lambda: not self.processes(), 5)
        left = self.processes()
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        return left


def start_cluster(root: Path, nodes: int = 2) -> Cluster:
    """Configure and start a cluster of ``nodes`` nodes under ``root``; raises
    :class:`ClusterUnavailable`."""
    missing = [p for p in _PROGRAMS if shutil.which(p) is None]
    if missing:
        raise ClusterUnavailable(f"{', '.join(missing)} not installed "
                                 f"(apt-get install -y {PACKAGES})")
    if os.geteuid() != 0:
        raise ClusterUnavailable("the test cluster runs its daemons as root (SlurmUser=root)")
    probe = subprocess.run(["slurmd", "-C"], capture_output=True, text=True, timeout=30,
                           check=False)
    hardware = parse_slurmd_c(probe.stdout)
    for sub in ("munge", "state", "spool", "log"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    # munged insists on a private key folder and a socket folder everyone can enter
    (root / "munge").chmod(0o700)
    sockets = root / "munge-socket"
    sockets.mkdir(mode=0o755, exist_ok=True)
    sockets.chmod(0o755)
    key = root / "munge" / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o600)
    munge_socket = sockets / "munge.socket"
    names = [f"node-{i}" for i in range(1, nodes + 1)]
    cluster = Cluster(root=root, conf=root / "slurm.conf", nodes=names, partition="fleet",
                      env={k: v for k, v in os.environ.items() if not k.startswith("SLURM_")})
    cluster.env["SLURM_CONF"] = str(cluster.conf)
    try:
        munged_pid = root / "munge" / "munged.pid"
        cluster.pid_files.append(munged_pid)
        _start(["munged", "--force", f"--key-file={key}", f"--socket={munge_socket}",
                f"--pid-file={munged_pid}", f"--log-file={root / 'log' / 'munged.log'}",
                f"--seed-file={root / 'munge' / 'munged.seed'}"], "munged")
        if not _wait(munge_socket.exists, 10):
            raise ClusterUnavailable("munged did not create its socket")
        ctld_port, *slurmd_ports = _free_ports(1 + nodes)
        for name in names:
            (root / "spool" / name).mkdir(exist_ok=True)
        cluster.conf.write_text(_slurm_conf(root, hardware, munge_socket, ctld_port,
                                            dict(zip(names, slurmd_ports)), cluster.partition),
                                "utf-8")
        cluster.pid_files.append(root / "slurmctld.pid")
        _start(["slurmctld", "-f", str(cluster.conf)], "slurmctld", cluster.env)
        for name in names:
            cluster.pid_files.append(root / f"slurmd-{name}.pid")
            _start(["slurmd", "-f", str(cluster.conf), "-N", name], f"slurmd {name}",
                   cluster.env)

        def idle() -> bool:
            out = cluster.run("sinfo", "-h", "-N", "-o", "%N %T", timeout=10).stdout.split()
            return out == [word for name in names for word in (name, "idle")]

        if not _wait(idle, 60):
            raise ClusterUnavailable(f"nodes {', '.join(names)} did not become idle within "
                                     "60 s:\n" + cluster.logs())
    except BaseException:
        cluster.stop()
        raise
    return cluster


def _slurm_conf(root: Path, hw: NodeHardware, munge_socket: Path, ctld_port: int,
                slurmd_ports: dict[str, int], partition: str) -> str:
    node_lines = "\n".join(
        f"NodeName={name} NodeHostname={hw.name} NodeAddr=127.0.0.1 Port={port} "
        f"CPUs={hw.cpus} Sockets={hw.sockets} CoresPerSocket={hw.cores_per_socket} "
        f"ThreadsPerCore={hw.threads_per_core} RealMemory={hw.real_memory_mb} State=UNKNOWN"
        for name, port in slurmd_ports.items())
    return f"""\
# A test cluster of {len(slurmd_ports)} node(s), each a slurmd on this host: every path under
# {root}, its own ports, no cgroups, no accounting. MinJobAge=0 keeps every finished
# job's record, and makes 'sbatch --wait' poll every 2 s (it backs off to 32 s otherwise).
ClusterName=torchenvtest
SlurmctldHost={hw.name}(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={munge_socket}
SlurmctldPort={ctld_port}
StateSaveLocation={root / "state"}
SlurmdSpoolDir={root / "spool" / "%n"}
SlurmctldPidFile={root / "slurmctld.pid"}
SlurmdPidFile={root / "slurmd-%n.pid"}
SlurmctldLogFile={root / "log" / "slurmctld.log"}
SlurmdLogFile={root / "log" / "slurmd-%n.log"}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
MpiDefault=none
ReturnToService=2
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MinJobAge=0
{node_lines}
PartitionName={partition} Nodes={",".join(slurmd_ports)} Default=YES MaxTime=INFINITE State=UP
"""


def _start(argv: list[str], name: str, env: Mapping[str, str] | None = None) -> None:
    """Run a daemon that forks into the background and writes its pid file."""
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=30, env=env, check=False)
    if proc.returncode != 0:
        raise ClusterUnavailable(f"{name} did not start (exit {proc.returncode}): "
                                 f"{(proc.stderr or proc.stdout).strip()[-500:]}")


def _free_ports(count: int) -> list[int]:
    sockets = []
    try:
        for _ in range(count):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def _wait(ready: Callable[[], bool], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if ready():
            return True
        time.sleep(0.25)
    return False


def _end(pid_files: list[Path]) -> None:
    """SIGTERM the daemons named in ``pid_files``, all at once; SIGKILL those left after 10 s."""
    pids = []
    for pid_file in pid_files:
        with contextlib.suppress(OSError, ValueError):
            pids.append(int(pid_file.read_text().strip()))
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    if not _wait(lambda: not any(_alive(pid) for pid in pids), 10):
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        _wait(lambda: not any(_alive(pid) for pid in pids), 5)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a daemon of ours that already exited but is not yet reaped is a zombie: count it as gone
    with contextlib.suppress(OSError):
        if Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1].startswith("Z"):
            return False
    return True
