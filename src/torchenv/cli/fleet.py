"""``torchenv fleet slurm | k8s | report``: validate every node of a cluster, merge the verdicts.

torchenv renders what the scheduler runs and reads what the nodes wrote; it launches nothing.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from torchenv.cli._common import add_json_flag, emit_json
from torchenv.errors import BadInput

if TYPE_CHECKING:
    import argparse

    from torchenv.cli._common import Subcommands
    from torchenv.fleet.node import NodeRun

__all__ = ["register"]

_MAX_TIMEOUT = 86400.0


def register(sub: Subcommands) -> None:
    from torchenv.fleet.verdict import SKEW_KINDS

    p = sub.add_parser(
        "fleet", help="validate every node of a Slurm or Kubernetes cluster; merge the verdicts",
        description="Render what a scheduler runs on every node (torchenv detect and validate, "
                    "multi-node collectives through torchrun's rendezvous), then merge the "
                    "per-node reports into one verdict. torchenv launches nothing itself.")
    fsub = p.add_subparsers(dest="fleet_command", metavar="ACTION", required=True)

    slurm = fsub.add_parser(
        "slurm", help="an sbatch script that validates every node of an allocation",
        description="Render an sbatch script: srun runs 'torchenv detect --json' and "
                    "'torchenv validate --json --junit' on every node, each writing its reports "
                    "into OUTPUT_DIR/<job id>/ named by its node name; the job then prints the "
                    "fleet verdict and exits 1 when any node failed. Submit with "
                    "'sbatch --wait FILE'.")
    slurm.add_argument("--nodes", type=int, required=True, metavar="N", help="nodes to validate")
    _add_gpus(slurm)
    slurm.add_argument("--output-dir", required=True, metavar="DIR",
                       help="a folder every node can write (shared file system); the reports "
                            "go to DIR/<job id>/")
    slurm.add_argument("--partition", metavar="P", help="the Slurm partition")
    slurm.add_argument("--time", metavar="T",
                       help="the job's time limit (Slurm format: MM, HH:MM:SS, D-HH:MM, ...)")
    slurm.add_argument("--sbatch-arg", action="append", default=[], metavar="ARG",
                       help="one more sbatch option, written as an #SBATCH line; repeatable "
                            "(write --sbatch-arg=--account=abc)")
    slurm.add_argument("--job-name", default="torchenv-validate", metavar="NAME")
    slurm.add_argument("--merge-time", type=int, default=120, metavar="S",
                       help="seconds kept before the time limit to stop the nodes and print "
                            "the verdict (default: 120); --time must be at least this plus "
                            "2 minutes (Slurm may signal a minute early, and the nodes need "
                            "one at least)")
    slurm.add_argument("--probe-timeout", type=int, default=60, metavar="S",
                       help="seconds each check of a blame probe may take, when a multi-node "
                            "collective failed (default: 60; a round of probes takes at most "
                            "S + 120 s, and there are at most 4 rounds)")
    slurm.add_argument("--no-exclusive", dest="exclusive", action="store_false",
                       help="share the nodes (by default the job takes whole nodes, so that "
                            "the performance probe and the health checks see only themselves)")
    _add_node_run(slurm)
    _add_output(slurm, "script")
    slurm.set_defaults(func=run_slurm)

    k8s = fsub.add_parser(
        "k8s", help="a Kubernetes Indexed Job that validates one pod per node",
        description="Render a headless Service and an Indexed Job (one pod per node, pod "
                    "anti-affinity, nvidia.com/gpu requests): each pod runs 'torchenv detect' "
                    "and 'torchenv validate' and prints its reports to its log between marker "
                    "lines (and to a volume with --pvc). Needs Kubernetes 1.29 or newer.")
    k8s.add_argument("--nodes", type=int, required=True, metavar="N", help="nodes to validate")
    _add_gpus(k8s)
    k8s.add_argument("--image", required=True, metavar="IMAGE",
                     help="a container image with bash, torchenv and the torch to validate")
    k8s.add_argument("--namespace", metavar="NS", help="the namespace (default: kubectl's)")
    k8s.add_argument("--name", default="torchenv-validate", metavar="NAME",
                     help="the Job's and the Service's name")
    k8s.add_argument("--pvc", metavar="NAME",
                     help="also write the reports to this PersistentVolumeClaim (ReadWriteMany),"
                          " under <Job uid>/")
    k8s.add_argument("--node-selector", action="append", default=[], metavar="KEY=VALUE",
                     help="only nodes with this label; repeatable")
    k8s.add_argument("--deadline", type=int, default=3600, metavar="S",
                     help="the Job's activeDeadlineSeconds: every pod is stopped after S "
                          "seconds (default 3600)")
    k8s.add_argument("--cpu", default="4", metavar="Q",
                     help="CPU request per pod, a Kubernetes quantity (default 4)")
    k8s.add_argument("--memory", default="16Gi", metavar="Q",
                     help="memory request and limit per pod (default 16Gi)")
    k8s.add_argument("--kueue-queue", metavar="NAME",
                     help="gang admission by Kueue: the LocalQueue to submit the Job to")
    k8s.add_argument("--coscheduling", metavar="SCHEDULER",
                     help="gang scheduling by the scheduler-plugins coscheduling plugin: a "
                          "PodGroup with every pod, and this scheduler's name on the pods")
    k8s.add_argument("--rdma-resource", metavar="NAME",
                     help="an RDMA/InfiniBand device resource for NCCL, one per pod "
                          "(e.g. rdma/ib, as the cluster's RDMA device plugin names it)")
    _add_node_run(k8s)
    _add_output(k8s, "manifests")
    k8s.set_defaults(func=run_k8s)

    report = fsub.add_parser(
        "report", help="merge per-node reports into one fleet verdict",
        description="Read the reports the nodes wrote to DIR (NODE.detect.json, "
                    "NODE.validate.json, NODE.junit.xml, NODE.exit, or saved pod logs *.log) "
                    "and print one verdict: a table of the nodes, the skew across them "
                    "(drivers, torch builds, NCCL, GPU models and counts, arch lists) and the "
                    "nodes to drain. Missing or unreadable reports are findings. Exit 1 when "
                    "any node failed, is missing, or the fleet is skewed.")
    report.add_argument("directory", metavar="DIR", help="the folder of per-node reports")
    expect = report.add_mutually_exclusive_group()
    expect.add_argument("--expect-nodes", type=int, metavar="N",
                        help="how many nodes should have reported")
    expect.add_argument("--nodes-file", metavar="FILE",
                        help="the names of the nodes that should have reported, one per line "
                             "(the Slurm script writes expected-nodes.txt)")
    report.add_argument("--allow-skew", action="append", default=[], metavar="KIND",
                        choices=SKEW_KINDS,
                        help="report this skew without failing: " + ", ".join(SKEW_KINDS)
                             + "; repeatable")
    report.add_argument("--junit", metavar="FILE", help="also write the verdict as JUnit XML")
    add_json_flag(report)
    report.set_defaults(func=run_report)

    probes = fsub.add_parser(
        "probes", help="the next round of blame probes (run by the sbatch script)",
        description="When a multi-node collective failed, name the next round of probes that "
                    "attribute it: among the nodes that passed their local checks, each alone "
                    "first, then in pairs (see docs/fleet.md). One line per probe: FOLDER "
                    "NODE_COUNT NODELIST, where FOLDER goes under DIR/probes/; nothing when "
                    "there is nothing (more) to probe. The sbatch script runs each line as a "
                    "step and asks again until nothing is left.")
    probes.add_argument("directory", metavar="DIR", help="the folder of per-node reports")
    pexpect = probes.add_mutually_exclusive_group()
    pexpect.add_argument("--expect-nodes", type=int, metavar="N",
                         help="how many nodes should have reported")
    pexpect.add_argument("--nodes-file", metavar="FILE",
                         help="the names of the nodes that should have reported")
    add_json_flag(probes)
    probes.set_defaults(func=run_probes)


def _add_gpus(p: argparse.ArgumentParser) -> None:
    p.add_argument("--gpus-per-node", type=int, required=True, metavar="G",
                   help="GPUs on each node; 0 for CPU nodes (their collectives use gloo)")


def _add_node_run(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("what runs on every node")
    g.add_argument("--level", choices=("quick", "full"), default="full",
                   help="the validation level (default: full, which runs the collectives)")
    g.add_argument("--python", metavar="PATH", default="python3",
                   help="the interpreter on the nodes, with torchenv and the torch to validate "
                        "(default: python3)")
    g.add_argument("--timeout", type=float, metavar="S",
                   help="seconds each check may take (validate --timeout)")
    g.add_argument("--rdzv-port", type=int, default=29500, metavar="PORT",
                   help="the TCP port of torchrun's rendezvous on the first node (default 29500)")


def _add_output(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument("-o", "--output", metavar="FILE",
                   help=f"write the {what} to FILE (atomically; '-' is stdout, the default)")
    p.add_argument("--force", action="store_true", help="overwrite an existing FILE")
    add_json_flag(p)


# ----------------------------------------------------------------------------- checks of values

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_PARTITION = re.compile(r"^[A-Za-z0-9_.-]+(,[A-Za-z0-9_.-]+)*$")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL_KEY = re.compile(r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*"
                        r"[A-Za-z0-9])?$")
_LABEL_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$")
_QUANTITY = re.compile(r"^[0-9]{1,9}(\.[0-9]{1,6})?(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$")
_RESOURCE = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?/[A-Za-z0-9]([-A-Za-z0-9_.]*"
                       r"[A-Za-z0-9])?$")


def _text(flag: str, value: str, what: str) -> str:
    """A value that ends up in a script or manifest: printable, on one line, not empty."""
    if not value.strip():
        raise BadInput(f"{flag}: empty", hint=f"give {what}")
    if _CONTROL.search(value):
        raise BadInput(f"{flag}: {value!r} contains a line break or control character",
                       hint=f"give {what} on one line")
    return value


def _count(flag: str, value: int, low: int, high: int) -> int:
    if not low <= value <= high:
        raise BadInput(f"{flag}: must be between {low} and {high}, not {value}")
    return value


def _check_time(text: str, merge: int) -> None:
    """A Slurm time limit that leaves the nodes time before the merge signal can come."""
    from torchenv.fleet.slurm import (
        EARLY_SIGNAL,
        MIN_NODE_SECONDS,
        node_seconds,
        time_limit_seconds,
    )

    try:
        limit = time_limit_seconds(text)
    except ValueError:
        raise BadInput(f"--time: {text!r} is not a Slurm time limit",
                       hint="use minutes, HH:MM:SS or D-HH:MM:SS, e.g. --time 00:30:00") from None
    if limit is None or node_seconds(limit, merge) >= MIN_NODE_SECONDS:
        return
    least = merge + EARLY_SIGNAL + MIN_NODE_SECONDS
    most = limit - EARLY_SIGNAL - MIN_NODE_SECONDS
    raise BadInput(
        f"--time {text} ({limit} s) with --merge-time {merge}: the signal that stops the nodes "
        f"for the verdict comes {merge} s before the limit, and Slurm may send it up to "
        f"{EARLY_SIGNAL} s earlier, which leaves the nodes {max(node_seconds(limit, merge), 0)} s"
        f" to validate, less than the {MIN_NODE_SECONDS} s they need at least",
        hint=f"give a --time of at least {least} s (--time {_clock(least)}) that covers the "
             "validation too (see docs/fleet.md)"
             + (f", or a --merge-time of at most {most}" if most >= 10 else ""))


def _clock(seconds: int) -> str:
    """Seconds as Slurm's HH:MM:SS, rounded up to a whole minute (Slurm counts in minutes)."""
    minutes = -(-seconds // 60)
    return f"{minutes // 60:02d}:{minutes % 60:02d}:00"


def _node_run(args: argparse.Namespace) -> NodeRun:
    from torchenv.fleet.node import NodeRun

    if args.timeout is not None and not 0 < args.timeout <= _MAX_TIMEOUT:
        from torchenv.cli.validate import TIMEOUT_HINT

        raise BadInput(f"--timeout: must be a number of seconds above 0 and at most "
                       f"{_MAX_TIMEOUT:g}, not {args.timeout:g}", hint=TIMEOUT_HINT)
    return NodeRun(python=_text("--python", args.python, "the path of the interpreter on the "
                                                         "nodes"),
                   level=args.level, timeout=args.timeout,
                   rdzv_port=_count("--rdzv-port", args.rdzv_port, 1, 65535))


def _emit(args: argparse.Namespace, text: str, document: dict[str, Any], what: str) -> int:
    """Write ``text`` to ``-o FILE`` (or stdout); with --json print ``document`` instead."""
    written: Optional[str] = None
    if args.output and args.output != "-":
        from torchenv._files import write_atomic

        write_atomic(Path(args.output), text, force=args.force)  # BadInput (exit 2) on failure
        written = args.output
    if args.json:
        emit_json({**document, "written": written})
    elif written:
        print(f"wrote {written} ({what})", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


# ----------------------------------------------------------------------------- the commands

def run_slurm(args: argparse.Namespace) -> int:
    from torchenv.fleet.slurm import SlurmJob, render_sbatch

    for arg in args.sbatch_arg:
        if not _text("--sbatch-arg", arg, "one sbatch option").startswith("-"):
            raise BadInput(f"--sbatch-arg: {arg!r} is not an sbatch option",
                           hint="write it as --sbatch-arg=--account=abc")
    merge = _count("--merge-time", args.merge_time, 10, 3600)
    if args.time is not None:
        _check_time(args.time, merge)
    if args.partition is not None and not _PARTITION.match(args.partition):
        raise BadInput(f"--partition: {args.partition!r} is not a partition name",
                       hint="letters, digits, '_', '.', '-'; several separated by commas")
    job = SlurmJob(
        nodes=_count("--nodes", args.nodes, 1, 100000),
        gpus_per_node=_count("--gpus-per-node", args.gpus_per_node, 0, 1024),
        output_dir=_text("--output-dir", args.output_dir, "a folder every node can write"),
        partition=args.partition, time=args.time, sbatch_args=tuple(args.sbatch_arg),
        run=_node_run(args),
        job_name=_text("--job-name", args.job_name, "a job name"), exclusive=args.exclusive,
        merge_seconds=merge,
        probe_timeout=_count("--probe-timeout", args.probe_timeout, 5, 3600))
    text = render_sbatch(job)
    submit = f"sbatch --wait {args.output}" if args.output and args.output != "-" else None
    return _emit(args, text, {"scheduler": "slurm", "script": text,
                              "parameters": job.to_json(), "submit": submit}, "sbatch script")


def run_k8s(args: argparse.Namespace) -> int:
    from torchenv.fleet.kubernetes import KubernetesJob, render_manifests, render_yaml

    # an Indexed Job's pods are named NAME-INDEX-XXXXX, and the Service name (the pods'
    # subdomain) must start with a letter
    if not (_DNS_LABEL.match(args.name) and args.name[0].isalpha() and len(args.name) <= 47):
        raise BadInput(f"--name: {args.name!r} is not a usable Job name",
                       hint="lower-case letters, digits and '-', starting with a letter, "
                            "at most 47 characters")
    if args.namespace is not None and not (_DNS_LABEL.match(args.namespace)
                                           and len(args.namespace) <= 63):
        raise BadInput(f"--namespace: {args.namespace!r} is not a namespace name",
                       hint="lower-case letters, digits and '-', at most 63 characters")
    if args.pvc is not None and not (_DNS_SUBDOMAIN.match(args.pvc) and len(args.pvc) <= 253):
        raise BadInput(f"--pvc: {args.pvc!r} is not a PersistentVolumeClaim name",
                       hint="lower-case letters, digits, '-' and '.'")
    image = _text("--image", args.image, "a container image reference")
    if any(ch.isspace() for ch in image):
        raise BadInput(f"--image: {image!r} contains a blank",
                       hint="give an image reference such as registry.example/torch:2.7")
    selector = []
    for item in args.node_selector:
        key, sep, value = item.partition("=")
        if not sep or not _LABEL_KEY.match(key) or not _LABEL_VALUE.match(value):
            raise BadInput(f"--node-selector: {item!r} is not KEY=VALUE of a node label",
                           hint="e.g. --node-selector nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3")
        selector.append((key, value))
    _count("--deadline", args.deadline, 1, 365 * 86400)
    for flag, value in (("--cpu", args.cpu), ("--memory", args.memory)):
        if not _QUANTITY.match(value) or float(re.sub(r"[A-Za-z]+$", "", value)) <= 0:
            raise BadInput(f"{flag}: {value!r} is not a Kubernetes quantity above 0",
                           hint="e.g. --cpu 4, --cpu 500m, --memory 16Gi",
                           field=flag.lstrip("-"), value=value)
    for flag, value in (("--kueue-queue", args.kueue_queue),
                        ("--coscheduling", args.coscheduling)):
        if value is not None and not (_DNS_SUBDOMAIN.match(value) and len(value) <= 63):
            raise BadInput(f"{flag}: {value!r} is not a Kubernetes object name",
                           hint="lower-case letters, digits, '-' and '.', at most 63 characters",
                           field=flag.lstrip("-"), value=value)
    if args.rdma_resource is not None and not (_RESOURCE.match(args.rdma_resource)
                                               and len(args.rdma_resource) <= 253):
        raise BadInput(f"--rdma-resource: {args.rdma_resource!r} is not an extended resource "
                       "name", hint="DOMAIN/NAME as the RDMA device plugin advertises it, "
                                    "e.g. rdma/ib or rdma/hca_shared_devices_a",
                       field="rdma_resource", value=args.rdma_resource)
    job = KubernetesJob(
        nodes=_count("--nodes", args.nodes, 1, 100000),
        gpus_per_node=_count("--gpus-per-node", args.gpus_per_node, 0, 1024),
        image=image, name=args.name, namespace=args.namespace, pvc=args.pvc,
        run=_node_run(args), deadline_seconds=args.deadline, node_selector=tuple(selector),
        cpu_request=args.cpu, memory_request=args.memory, kueue_queue=args.kueue_queue,
        coscheduling=args.coscheduling, rdma_resource=args.rdma_resource)
    text = render_yaml(job)
    return _emit(args, text, {"scheduler": "kubernetes", "yaml": text,
                              "manifests": render_manifests(job),
                              "parameters": job.to_json()}, "Kubernetes manifests")


def run_report(args: argparse.Namespace) -> int:
    from torchenv.fleet.reports import read_reports
    from torchenv.fleet.verdict import judge

    expected_nodes = _read_nodes_file(args.nodes_file) if args.nodes_file else None
    if args.expect_nodes is not None:
        _count("--expect-nodes", args.expect_nodes, 1, 100000)
    reports = read_reports(args.directory)
    if not reports.nodes and expected_nodes is None and args.expect_nodes is None:
        raise BadInput(f"{args.directory} holds no node reports", hint=_where_reports_are(
            Path(args.directory)))
    verdict = judge(reports, expected_nodes=expected_nodes, expected_count=args.expect_nodes,
                    allow_skew=args.allow_skew)
    if args.junit:
        from torchenv.fleet.junit import write_fleet_junit

        write_fleet_junit(verdict, args.junit)  # BadInput (exit 2) when it cannot be written
    if args.json:
        emit_json(verdict.to_json())
    else:
        from torchenv.cli.render_fleet import render_verdict

        render_verdict(verdict)
    return 0 if verdict.ok else 1


def run_probes(args: argparse.Namespace) -> int:
    from torchenv.fleet.reports import read_reports
    from torchenv.fleet.verdict import next_probes

    expected_nodes = _read_nodes_file(args.nodes_file) if args.nodes_file else None
    if args.expect_nodes is not None:
        _count("--expect-nodes", args.expect_nodes, 1, 100000)
    plan = next_probes(read_reports(args.directory), expected_nodes=expected_nodes,
                       expected_count=args.expect_nodes)
    if args.json:
        emit_json({"directory": args.directory, "probes": [p.to_json() for p in plan]})
        return 0
    for probe in plan:
        print(f"{probe.name} {len(probe.nodes)} {','.join(probe.nodes)}")
    return 0


def _read_nodes_file(path: str) -> list[str]:
    """Node names, one per line; blank lines and ``#`` comments are skipped."""
    from torchenv._files import read_text_capped
    from torchenv.fleet.node import bad_node_name

    names = []
    for number, line in enumerate(read_text_capped(path, what="--nodes-file").splitlines(), 1):
        name = line.split("#", 1)[0].strip()
        if not name:
            continue
        if any(ch.isspace() for ch in name) or _CONTROL.search(name):
            raise BadInput(f"--nodes-file: {path} line {number}: {name!r} is not one node name",
                           hint="one node name per line", field="nodes_file", value=name)
        why = bad_node_name(name)
        if why is not None:
            raise BadInput(f"--nodes-file: {path} line {number}: {why}",
                           hint="one host name per line, as the scheduler names the node",
                           field="nodes_file", value=name)
        names.append(name)
    if not names:
        raise BadInput(f"--nodes-file: {path} names no node", hint="one node name per line")
    return names


def _where_reports_are(folder: Path) -> str:
    """A hint for a folder without reports: the subfolders that have some (a Slurm job's)."""
    from torchenv.fleet.reports import has_reports

    try:
        subfolders = sorted(p for p in folder.iterdir() if p.is_dir() and has_reports(p))
    except OSError:
        subfolders = []
    if subfolders:
        shown = ", ".join(str(p) for p in subfolders[-3:])
        return f"the Slurm script writes into OUTPUT_DIR/<job id>/: give one of {shown}"
    return ("give the folder the nodes wrote NODE.validate.json (and NODE.detect.json) to, "
            "or the folder of saved pod logs (*.log)")
