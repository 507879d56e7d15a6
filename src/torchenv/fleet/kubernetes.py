"""A Kubernetes Indexed Job that detects and validates ``nodes`` nodes, one pod on each.

Two objects:

- a headless Service (``clusterIP: None``) named like the Job. The Job's pods set
  ``subdomain`` to it, so pod 0 is reachable as ``NAME-0.NAME`` (an Indexed Job names each pod's
  host ``NAME-INDEX``): torchrun's c10d rendezvous for the multi-node collectives runs there.
  ``publishNotReadyAddresses`` lets the name resolve before any pod is ready.
- the Job: ``completionMode: Indexed`` with as many completions as pods, all running at once; a
  required pod anti-affinity on ``kubernetes.io/hostname`` puts every pod on a different node;
  ``nvidia.com/gpu`` requested and limited per pod (none for CPU nodes, whose collectives use
  gloo); ``/dev/shm`` from memory (NCCL and the DataLoader need more than a container's 64 MiB);
  ``backoffLimitPerIndex: 0`` so a failed node is not retried and does not stop the others
  (Kubernetes 1.29 or newer); ``activeDeadlineSeconds`` (default an hour) so that a hung pod
  cannot hold its node for ever; CPU and memory requests, so that the scheduler places the
  pods where validate has room (the memory limit equals the request: a node that runs out of
  it is killed, exit 137, which the verdict shows, rather than starving its neighbours).

Optional, for clusters that have them:

- gang scheduling, so that no pod holds a node while waiting for the others to fit: a Kueue
  queue (``kueue.x-k8s.io/queue-name`` label on the Job; Kueue admits the whole Job at once), or
  the scheduler-plugins coscheduling plugin (a ``PodGroup`` with ``minMember`` = the node
  count, the ``scheduling.x-k8s.io/pod-group`` label on the pods and that scheduler's name);
- an RDMA/InfiniBand device resource (e.g. ``rdma/ib`` from an RDMA device plugin) requested
  and limited one per pod, with ``IPC_LOCK`` for NCCL to pin its buffers, so that NCCL's
  collectives run over the fabric the training jobs will use.

Each pod runs :func:`torchenv.fleet.node.node_script` with its node name from the downward API
(``spec.nodeName``), prints every report to its log between marker lines, copies them to
``/reports/<Job uid>/`` on the claim when there is one (``pvc``: ``FLEET_REPORTS`` names the
folder), and exits with validate's status.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from torchenv import __version__
from torchenv.fleet.node import REPORT_KINDS, NodeRun, marker, node_script

__all__ = ["DEFAULT_DEADLINE", "REPORTS_MOUNT", "KubernetesJob", "render_manifests",
           "render_yaml"]

REPORTS_MOUNT = "/reports"
_GPU = "nvidia.com/gpu"
DEFAULT_DEADLINE = 3600
"""Seconds the Job may run before Kubernetes stops every pod of it (activeDeadlineSeconds)."""
KUEUE_LABEL = "kueue.x-k8s.io/queue-name"
POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
POD_GROUP_API = "scheduling.x-k8s.io/v1alpha1"


@dataclass(frozen=True)
class KubernetesJob:
    """``nodes`` pods of ``image`` (which has torchenv and the torch to validate), one per node,
    each with ``gpus_per_node`` GPUs; ``pvc`` names a ReadWriteMany claim for the reports."""

    nodes: int
    image: str
    gpus_per_node: int = 0
    name: str = "torchenv-validate"
    namespace: Optional[str] = None
    pvc: Optional[str] = None
    run: NodeRun = field(default_factory=NodeRun)
    deadline_seconds: Optional[int] = DEFAULT_DEADLINE
    node_selector: tuple[tuple[str, str], ...] = ()
    cpu_request: str = "4"
    memory_request: str = "16Gi"
    kueue_queue: Optional[str] = None
    """The Kueue LocalQueue to submit to (gang admission by Kueue)."""
    coscheduling: Optional[str] = None
    """The scheduler name of the scheduler-plugins coscheduling plugin: render a PodGroup."""
    rdma_resource: Optional[str] = None
    """An extended resource for RDMA/InfiniBand (e.g. ``rdma/ib``), one per pod."""

    @property
    def rdzv_endpoint(self) -> str:
        """Pod 0 through the headless Service, resolved by the pods' DNS search path."""
        return f"{self.name}-0.{self.name}:{self.run.rdzv_port}"

    def to_json(self) -> dict[str, Any]:
        return {"nodes": self.nodes, "gpus_per_node": self.gpus_per_node, "image": self.image,
                "name": self.name, "namespace": self.namespace, "pvc": self.pvc,
                "level": self.run.level, "python": self.run.python,
                "timeout": self.run.timeout, "rdzv_port": self.run.rdzv_port,
                "rdzv_endpoint": self.rdzv_endpoint, "deadline_seconds": self.deadline_seconds,
                "node_selector": dict(self.node_selector), "cpu_request": self.cpu_request,
                "memory_request": self.memory_request, "kueue_queue": self.kueue_queue,
                "coscheduling": self.coscheduling, "rdma_resource": self.rdma_resource}


def pod_script(job: KubernetesJob) -> str:
    """What each pod runs (bash): the node lines, then every report into the log."""
    sections = "\n".join(
        f'[ -f "$report.{kind}" ] && section {kind} "$report.{kind}"' for kind in REPORT_KINDS)
    begin = marker("begin", "$1", "$FLEET_NODE")
    end = marker("end", "$1", "$FLEET_NODE")
    return f"""\
set -uo pipefail
FLEET_REPORT_DIR="$(mktemp -d)"
FLEET_NODE_RANK="$JOB_COMPLETION_INDEX"
{node_script(job.run)}
# KIND FILE: the report between marker lines, for 'torchenv fleet report' to find in saved logs
section() {{
  echo "{begin}"
  cat "$2"
  echo
  echo "{end}"
}}
{sections}
if [ -n "${{FLEET_REPORTS:-}}" ]; then
  # the claim's folder: one subfolder per run of the Job; a copy is renamed once complete
  dest="$FLEET_REPORTS/$FLEET_JOB_UID"
  mkdir -p "$dest"
  for kind in {" ".join(REPORT_KINDS)}; do
    if [ -f "$report.$kind" ]; then
      cp "$report.$kind" "$dest/$FLEET_NODE.$kind.part" &&
        mv -f "$dest/$FLEET_NODE.$kind.part" "$dest/$FLEET_NODE.$kind"
    fi
  done
fi
exit "$status"
"""


def render_manifests(job: KubernetesJob) -> list[dict[str, Any]]:
    """The Service and the Job, as Kubernetes objects (plain dicts, in apply order)."""
    labels = {"app.kubernetes.io/name": "torchenv-fleet",
              "app.kubernetes.io/instance": job.name}
    meta: dict[str, Any] = {"name": job.name, "labels": dict(labels)}
    if job.namespace:
        meta["namespace"] = job.namespace
    service = {
        "apiVersion": "v1", "kind": "Service", "metadata": meta,
        "spec": {"clusterIP": "None", "selector": dict(labels),
                 "publishNotReadyAddresses": True,
                 "ports": [{"name": "rendezvous", "port": job.run.rdzv_port,
                            "targetPort": job.run.rdzv_port, "protocol": "TCP"}]},
    }
    env: list[dict[str, Any]] = [
        {"name": name, "value": value} for name, value in job.run.settings().items()]
    env += [
        {"name": "FLEET_NNODES", "value": str(job.nodes)},
        {"name": "FLEET_RDZV_ENDPOINT", "value": job.rdzv_endpoint},
        {"name": "FLEET_NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
        {"name": "FLEET_JOB_UID", "valueFrom": {"fieldRef": {
            "fieldPath": "metadata.labels['batch.kubernetes.io/controller-uid']"}}},
    ]
    mounts: list[dict[str, Any]] = [{"name": "dshm", "mountPath": "/dev/shm"}]
    volumes: list[dict[str, Any]] = [{"name": "dshm", "emptyDir": {"medium": "Memory"}}]
    if job.pvc:
        env.append({"name": "FLEET_REPORTS", "value": REPORTS_MOUNT})
        mounts.append({"name": "reports", "mountPath": REPORTS_MOUNT})
        volumes.append({"name": "reports", "persistentVolumeClaim": {"claimName": job.pvc}})
    container: dict[str, Any] = {
        "name": "validate", "image": job.image, "command": ["bash", "-c", pod_script(job)],
        "env": env, "ports": [{"name": "rendezvous", "containerPort": job.run.rdzv_port}],
        "volumeMounts": mounts,
    }
    requests = {"cpu": job.cpu_request, "memory": job.memory_request}
    limits = {"memory": job.memory_request}
    for resource, count in ((_GPU, job.gpus_per_node), (job.rdma_resource, 1)):
        if resource and count:
            requests[resource] = limits[resource] = str(count)
    container["resources"] = {"requests": requests, "limits": limits}
    if job.rdma_resource:
        # NCCL pins its buffers for RDMA: the memory lock limit must allow it
        container["securityContext"] = {"capabilities": {"add": ["IPC_LOCK"]}}
    pod_labels = dict(labels)
    if job.coscheduling:
        pod_labels[POD_GROUP_LABEL] = job.name
    pod_spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "subdomain": job.name,
        "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": dict(labels)},
             "topologyKey": "kubernetes.io/hostname"}]}},
        "containers": [container],
        "volumes": volumes,
    }
    if job.coscheduling:
        pod_spec["schedulerName"] = job.coscheduling
    if job.node_selector:
        pod_spec["nodeSelector"] = dict(job.node_selector)
    if job.gpus_per_node:
        # GPU node pools are commonly tainted so that only pods asking for GPUs land there
        pod_spec["tolerations"] = [{"key": _GPU, "operator": "Exists", "effect": "NoSchedule"}]
    job_spec: dict[str, Any] = {
        "completionMode": "Indexed", "completions": job.nodes, "parallelism": job.nodes,
        "backoffLimitPerIndex": 0,
        "template": {"metadata": {"labels": pod_labels}, "spec": pod_spec},
    }
    if job.deadline_seconds:
        job_spec["activeDeadlineSeconds"] = job.deadline_seconds
    job_meta = {**meta, "labels": dict(labels)}
    if job.kueue_queue:
        job_meta["labels"][KUEUE_LABEL] = job.kueue_queue
    manifests = [service, {"apiVersion": "batch/v1", "kind": "Job", "metadata": job_meta,
                           "spec": job_spec}]
    if job.coscheduling:
        # every pod or none: the coscheduling plugin holds them until minMember can run
        group_meta = {**meta, "labels": dict(labels)}
        manifests.insert(1, {"apiVersion": POD_GROUP_API, "kind": "PodGroup",
                             "metadata": group_meta,
                             "spec": {"minMember": job.nodes,
                                      "scheduleTimeoutSeconds": 600}})
    return manifests


def render_yaml(job: KubernetesJob) -> str:
    """The manifests as one commented YAML stream for ``kubectl apply -f``."""
    import yaml

    class _Dumper(yaml.SafeDumper):
        pass

    def text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
        # the pod script as a literal block, readable as the shell it is
        style = "|" if "\n" in value else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)

    _Dumper.add_representer(str, text)
    ns = f" -n {job.namespace}" if job.namespace else ""
    where = (f"the pod logs and the claim {job.pvc} (<Job uid>/NODE.*)" if job.pvc
             else "the pod logs")
    header = f"""\
# Validate {job.nodes} Kubernetes node(s) with torchenv: one pod per node, then merge the verdicts.
# Rendered by torchenv {__version__}: {job.gpus_per_node} GPU(s) per pod, level {job.run.level}.
#
#   kubectl apply -f THIS_FILE
#   until kubectl{ns} get job/{job.name} \\
#       -o jsonpath='{{.status.conditions[?(@.status=="True")].type}}' \\
#       | grep -qE 'Complete|Failed'; do sleep 30; done
#   mkdir -p reports
#   for pod in $(kubectl{ns} get pods -l batch.kubernetes.io/job-name={job.name} -o name); do
#     kubectl{ns} logs "$pod" > "reports/${{pod#pod/}}.log"; done
#   torchenv fleet report reports --expect-nodes {job.nodes}
#   kubectl{ns} delete -f THIS_FILE
#
# Reports go to {where}; in the logs they sit between
# '==== torchenv fleet: begin/end KIND node=NODE ====' lines.
"""
    if job.kueue_queue:
        header += (f"# Gang admission: Kueue admits the Job to LocalQueue {job.kueue_queue} "
                   "only when every pod fits.\n")
    if job.coscheduling:
        header += ("# Gang scheduling: the PodGroup needs the scheduler-plugins CRDs and the "
                   f"scheduler {job.coscheduling} with its coscheduling plugin.\n")
    docs = [yaml.dump(m, Dumper=_Dumper, sort_keys=False, width=100)
            for m in render_manifests(job)]
    return header + "---\n" + "---\n".join(docs)
