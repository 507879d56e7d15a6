"""``torchenv fleet k8s``: the Service and the Indexed Job, validated against the Kubernetes
1.30 schema with kubernetes-validate, and the pod's script run here as a stand-in pod."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.conftest import Cli

from hermetic import hermetic
from torchenv.fleet.kubernetes import KubernetesJob, pod_script, render_manifests, render_yaml
from torchenv.fleet.node import NodeRun

KUBERNETES = "1.30.0"
"""The schema the manifests must satisfy (backoffLimitPerIndex needs 1.29 or newer)."""

JOBS = {
    "gpu": KubernetesJob(nodes=4, gpus_per_node=8, image="registry.example/torch:2.7"),
    "cpu": KubernetesJob(nodes=2, gpus_per_node=0, image="python:3.12"),
    "everything": KubernetesJob(
        nodes=16, gpus_per_node=4, image="registry.example/torch@sha256:" + "a" * 64,
        name="h100-check", namespace="ml-infra", pvc="fleet-reports",
        run=NodeRun(python="/opt/venv/bin/python", level="quick", timeout=120,
                    rdzv_port=29444),
        deadline_seconds=7200, node_selector=(("nvidia.com/gpu.product", "H100"),),
        cpu_request="500m", memory_request="64Gi", kueue_queue="gpu-team",
        rdma_resource="rdma/ib"),
    "coscheduled": KubernetesJob(nodes=8, gpus_per_node=8, image="img",
                                 coscheduling="scheduler-plugins-scheduler"),
}


@pytest.mark.parametrize("job", JOBS.values(), ids=JOBS.keys())
def test_the_manifests_satisfy_the_kubernetes_schema(job: KubernetesJob) -> None:
    docs = list(yaml.safe_load_all(render_yaml(job)))
    assert docs == render_manifests(job)
    assert [d["kind"] for d in docs if d["kind"] != "PodGroup"] == ["Service", "Job"]
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    for doc in docs:
        if doc["kind"] == "PodGroup":  # a custom resource: no schema in Kubernetes itself
            continue
        # strict: an unknown or misspelt field is an error too
        kubernetes_validate.validate(doc, KUBERNETES, strict=True)


def test_the_schema_check_catches_a_broken_manifest() -> None:
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    job = render_manifests(JOBS["gpu"])[1]
    job["spec"]["template"]["spec"]["antiAffinity"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(job, KUBERNETES, strict=True)


def pod(job: KubernetesJob) -> dict[str, Any]:
    spec: dict[str, Any] = render_manifests(job)[1]["spec"]["template"]["spec"]
    return spec


def test_an_indexed_job_with_one_pod_per_node() -> None:
    job = JOBS["gpu"]
    service, batch = render_manifests(job)
    spec = batch["spec"]
    assert spec["completionMode"] == "Indexed"
    assert spec["completions"] == spec["parallelism"] == 4
    assert spec["backoffLimitPerIndex"] == 0  # a failed node neither retries nor stops others
    labels = spec["template"]["metadata"]["labels"]
    (term,) = pod(job)["affinity"]["podAntiAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"]
    assert term["topologyKey"] == "kubernetes.io/hostname"
    assert term["labelSelector"]["matchLabels"].items() <= labels.items()
    # the headless Service finds the pods, and pod 0 hosts the rendezvous under it
    assert service["spec"]["clusterIP"] == "None"
    assert service["spec"]["selector"].items() <= labels.items()
    assert service["spec"]["publishNotReadyAddresses"] is True
    assert pod(job)["subdomain"] == service["metadata"]["name"] == batch["metadata"]["name"]
    env = {e["name"]: e for e in pod(job)["containers"][0]["env"]}
    assert env["FLEET_RDZV_ENDPOINT"]["value"] == "torchenv-validate-0.torchenv-validate:29500"
    assert env["FLEET_NNODES"]["value"] == "4"
    assert env["FLEET_NODE"]["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"


def test_gpus_are_requested_and_limited_and_cpu_pods_ask_for_none() -> None:
    (gpu,) = pod(JOBS["gpu"])["containers"]
    assert gpu["resources"] == {"requests": {"nvidia.com/gpu": "8", "cpu": "4", "memory": "16Gi"},
                                "limits": {"nvidia.com/gpu": "8", "memory": "16Gi"}}
    assert pod(JOBS["gpu"])["tolerations"][0]["key"] == "nvidia.com/gpu"
    (cpu,) = pod(JOBS["cpu"])["containers"]
    assert cpu["resources"] == {"requests": {"cpu": "4", "memory": "16Gi"},
                                "limits": {"memory": "16Gi"}}
    assert "tolerations" not in pod(JOBS["cpu"]) and "securityContext" not in cpu
    mounts = {m["mountPath"] for m in cpu["volumeMounts"]}
    assert "/dev/shm" in mounts


def test_namespace_volume_selector_and_deadline() -> None:
    job = JOBS["everything"]
    service, batch = render_manifests(job)
    assert service["metadata"]["namespace"] == batch["metadata"]["namespace"] == "ml-infra"
    spec = pod(job)
    assert {"name": "reports", "persistentVolumeClaim": {"claimName": "fleet-reports"}} \
        in spec["volumes"]
    env = {e["name"]: e.get("value") for e in spec["containers"][0]["env"]}
    assert env["FLEET_REPORTS"] == "/reports" and env["FLEET_PYTHON"] == "/opt/venv/bin/python"
    assert env["FLEET_LEVEL"] == "quick" and env["FLEET_TIMEOUT"] == "120"
    assert env["FLEET_RDZV_ENDPOINT"] == "h100-check-0.h100-check:29444"
    assert spec["nodeSelector"] == {"nvidia.com/gpu.product": "H100"}
    assert batch["spec"]["activeDeadlineSeconds"] == 7200


def test_a_deadline_cpu_and_memory_by_default() -> None:
    batch = render_manifests(JOBS["gpu"])[1]
    assert batch["spec"]["activeDeadlineSeconds"] == 3600  # a hung pod cannot hold its node
    (container,) = pod(JOBS["gpu"])["containers"]
    assert container["resources"]["requests"]["cpu"] == "4"


def test_rdma_for_nccl_and_gang_admission_by_kueue() -> None:
    job = JOBS["everything"]
    batch = render_manifests(job)[1]
    (container,) = pod(job)["containers"]
    assert container["resources"]["requests"] == {"cpu": "500m", "memory": "64Gi",
                                                  "nvidia.com/gpu": "4", "rdma/ib": "1"}
    assert container["resources"]["limits"] == {"memory": "64Gi", "nvidia.com/gpu": "4",
                                                "rdma/ib": "1"}
    assert container["securityContext"] == {"capabilities": {"add": ["IPC_LOCK"]}}
    # Kueue reads the queue from the Job's own labels, and admits the whole Job at once
    assert batch["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "gpu-team"
    assert "kueue.x-k8s.io/queue-name" not in batch["spec"]["template"]["metadata"]["labels"]
    assert "schedulerName" not in pod(job)


def test_gang_scheduling_by_the_coscheduling_plugin() -> None:
    job = JOBS["coscheduled"]
    service, group, batch = render_manifests(job)
    assert group == {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
                     "metadata": {"name": "torchenv-validate", "labels": service["metadata"][
                         "labels"]},
                     "spec": {"minMember": 8, "scheduleTimeoutSeconds": 600}}
    template = batch["spec"]["template"]
    assert template["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] == "torchenv-validate"
    assert template["spec"]["schedulerName"] == "scheduler-plugins-scheduler"
    # the anti-affinity still selects the pods by the labels they all share
    (term,) = template["spec"]["affinity"]["podAntiAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"]
    assert term["labelSelector"]["matchLabels"].items() <= template["metadata"]["labels"].items()


def test_the_pod_script_is_a_readable_block_in_the_yaml() -> None:
    text = render_yaml(JOBS["gpu"])
    assert text.startswith("# Validate 4 Kubernetes node(s) with torchenv")
    assert "        - |\n          set -uo pipefail\n" in text
    assert "torchenv fleet report reports --expect-nodes 4" in text


@pytest.mark.parametrize("job", JOBS.values(), ids=JOBS.keys())
def test_the_pod_script_is_valid_bash_and_clean_for_shellcheck(job: KubernetesJob,
                                                               tmp_path: Path) -> None:
    path = tmp_path / "pod.sh"
    path.write_text("#!/bin/bash\n" + pod_script(job))
    syntax = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True,
                            check=False)
    assert syntax.returncode == 0, syntax.stderr
    if shutil.which("shellcheck") is None:
        pytest.skip("shellcheck is not installed (apt-get install shellcheck)")
    lint = subprocess.run(["shellcheck", str(path)], capture_output=True, text=True,
                          check=False)
    assert lint.returncode == 0, lint.stdout


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.mark.slow
@pytest.mark.parametrize("planted", [False, True], ids=["passing", "planted-failure"])
def test_the_pod_script_run_here_leaves_reports_in_its_log_and_on_the_claim(
        tmp_path: Path, planted: bool, cli: Cli) -> None:
    """A stand-in pod: bash runs the container's command with the environment Kubernetes
    would give it; its stdout is the pod log that ``fleet report`` reads back. A node whose
    validation fails still leaves every report, and the pod fails with validate's status."""
    job = KubernetesJob(nodes=1, image="unused", pvc="claim",
                        run=NodeRun(python=sys.executable, level="quick",
                                    rdzv_port=free_port()))
    (container,) = pod(job)["containers"]
    claim = tmp_path / "claim"
    claim.mkdir()
    env = dict(hermetic({k: v for k, v in os.environ.items()
                         if not k.startswith("TORCHENV_")}))
    env.update({e["name"]: e["value"] for e in container["env"] if "value" in e})
    env.update(FLEET_NODE="node-a", FLEET_JOB_UID="1f2e3d", JOB_COMPLETION_INDEX="0",
               FLEET_RDZV_ENDPOINT=f"localhost:{job.run.rdzv_port}",
               FLEET_REPORTS=str(claim), TORCHENV_NO_OVERLAY="1")
    if planted:
        check = tmp_path / "planted.py"
        check.write_text("def check_planted_failure(ctx):\n    raise RuntimeError('broken')\n")
        env["TORCHENV_VALIDATE_EXTRA_CHECKS"] = str(check)
    assert container["command"][:2] == ["bash", "-c"]
    assert container["command"][2] == pod_script(job)
    proc = subprocess.run(container["command"], capture_output=True, text=True, env=env,
                          timeout=300, check=False)
    assert proc.returncode == (1 if planted else 0), proc.stderr
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "torchenv-validate-0-abcde.log").write_text(proc.stdout)
    for folder in (logs, claim / "1f2e3d"):
        report = cli(["fleet", "report", str(folder), "--expect-nodes", "1", "--json"])
        assert report.returncode == proc.returncode, report.stdout + report.stderr
        (node,) = json.loads(report.stdout)["nodes"]
        assert node["node"] == "node-a" and node["exit_status"] == proc.returncode
        assert node["status"] == ("fail" if planted else "pass")
        assert [f["name"] for f in node["failed_checks"]] == (["planted_failure"] if planted
                                                               else [])
    assert sorted(p.name for p in (claim / "1f2e3d").iterdir()) == [
        "node-a.detect.json", "node-a.exit", "node-a.junit.xml", "node-a.stderr",
            "node-a.validate.json"]


@pytest.mark.parametrize(("flags", "words"), [
    (["--name", "Fleet_Check"], "--name: 'Fleet_Check' is not a usable Job name"),
    (["--name", "9lives"], "is not a usable Job name"),
    (["--namespace", "ML"], "--namespace: 'ML' is not a namespace name"),
    (["--pvc", "my claim"], "--pvc: 'my claim' is not a PersistentVolumeClaim name"),
    (["--image", "a b"], "--image: 'a b' contains a blank"),
    (["--node-selector", "gpu"], "--node-selector: 'gpu' is not KEY=VALUE"),
    (["--nodes", "0"], "--nodes: must be between 1"),
    (["--deadline", "0"], "--deadline: must be between 1"),
    (["--cpu", "four"], "--cpu: 'four' is not a Kubernetes quantity"),
    (["--memory", "0Gi"], "--memory: '0Gi' is not a Kubernetes quantity above 0"),
    (["--memory=-1Gi"], "--memory: '-1Gi' is not a Kubernetes quantity"),
    (["--kueue-queue", "Team A"], "--kueue-queue: 'Team A' is not a Kubernetes object name"),
    (["--coscheduling=-x"], "--coscheduling: '-x' is not a Kubernetes object name"),
    (["--rdma-resource", "ib"], "--rdma-resource: 'ib' is not an extended resource name"),
], ids=["name", "name-digit", "namespace", "pvc", "image", "selector", "nodes", "deadline",
        "cpu", "memory-zero", "memory-negative", "kueue", "coscheduling", "rdma"])
def test_bad_values_are_refused(flags: list[str], words: str, cli: Cli) -> None:
    args = ["fleet", "k8s"]
    for key, value in {"--nodes": "2", "--gpus-per-node": "8", "--image": "img"}.items():
        if key not in flags:
            args += [key, value]
    proc = cli([*args, *flags])
    assert proc.returncode == 2, proc.stderr
    assert words in proc.stderr


def test_json_and_file_output(tmp_path: Path, cli: Cli) -> None:
    target = tmp_path / "fleet.yaml"
    proc = cli(["fleet", "k8s", "--nodes", "3", "--gpus-per-node", "8", "--image", "img",
                "-o", str(target), "--json"])
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["scheduler"] == "kubernetes" and doc["written"] == str(target)
    assert doc["yaml"] == target.read_text()
    assert [m["kind"] for m in doc["manifests"]] == ["Service", "Job"]
    assert doc["parameters"]["rdzv_endpoint"] == "torchenv-validate-0.torchenv-validate:29500"
    again = cli(["fleet", "k8s", "--nodes", "3", "--gpus-per-node", "8", "--image", "img",
                 "-o", str(target)])
    assert again.returncode == 2 and "--force" in again.stderr
