"""A node passes only when its reports prove something, and a node that did not pass keeps
its cause: the planted faults of a two-node fleet, written as the files the nodes leave."""

from __future__ import annotations

import copy
import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import Cli
from tests.fleet.fleet_nodes import gpu_checks, gpu_detect, write_node

from torchenv.fleet.reports import read_reports
from torchenv.fleet.verdict import FleetVerdict, PlannedProbe, judge

DETECT = {"platform": "linux-x86_64", "python": "3.12", "glibc": "2.35", "nvidia": None,
          "rocm": None, "xpu": None, "mps": False, "torch": None}
NODES = ["node-1", "node-2"]


def check(name: str, status: str = "pass", device: str = "cpu", **extra: Any) -> dict[str, Any]:
    return {"name": name, "status": status, "seconds": 0.1, "device": device,
            "required": True, "level": "full", **extra}


def validate_doc(*, gpus: int = 0, level: str = "full") -> dict[str, Any]:
    """A whole passing validate document of a node with ``gpus`` GPUs."""
    checks = [check("import_torch"), check("build", detail="torch 2.7.1+cu128, CUDA 12.8, "
                                                            "NCCL 2.26.2, arch sm_90"),
              *gpu_checks(gpus)]
    if level == "full":
        checks += [check(n) for n in ("gloo_allreduce", "gloo_broadcast", "gloo_allgather",
                                      "ddp_step")]
        checks += [check(n, device="cuda") for n in ("nccl_allreduce", "nccl_broadcast",
                                                     "nccl_allgather") if gpus]
    return {"ok": True, "python": "/usr/bin/python3", "torch": "2.7.1+cu128", "level": level,
            "seconds": 9.0, "checks": checks}


def detect_doc(gpus: int) -> dict[str, Any]:
    return gpu_detect(DETECT, gpus=gpus) if gpus else copy.deepcopy(DETECT)


def fleet(folder: Path, node2: dict[str, Any], *, gpus: int = 0) -> FleetVerdict:
    """node-1 healthy, node-2 with the files in ``node2`` (detect, validate, exit, stderr)."""
    write_node(folder, "node-1", detect=detect_doc(gpus), validate=validate_doc(gpus=gpus),
               exit_status=0)
    write_node(folder, "node-2", detect=node2.get("detect", detect_doc(gpus)),
               validate=node2.get("validate"), exit_status=node2.get("exit"))
    if "stderr" in node2:
        (folder / "node-2.stderr").write_text(node2["stderr"], "utf-8")
    return judge(read_reports(folder), expected_nodes=NODES)


def by_node(verdict: FleetVerdict) -> dict[str, Any]:
    return {n.node: n for n in verdict.nodes}


def test_a_healthy_pair_passes(tmp_path: Path) -> None:
    verdict = fleet(tmp_path, {"validate": validate_doc(gpus=2), "exit": 0}, gpus=2)
    assert verdict.ok, verdict.to_json()


@pytest.mark.parametrize(("validate", "missing"), [
    ({**validate_doc(), "checks": []}, "import_torch"),
    ({**validate_doc(), "checks": validate_doc(level="quick")["checks"]}, "gloo_allreduce"),
])
def test_a_report_without_the_checks_its_level_requires_fails(
        tmp_path: Path, validate: dict[str, Any], missing: str) -> None:
    verdict = fleet(tmp_path, {"validate": validate, "exit": 0})
    node = by_node(verdict)["node-2"]
    assert node.status == "fail" and not verdict.ok
    assert missing in [f.name for f in node.failed]
    assert "proves nothing" in node.failed[0].error
    assert by_node(verdict)["node-1"].ok
    assert [name for name, _ in verdict.drain] == ["node-2"]


def test_nccl_collectives_skipped_on_a_gpu_node_prove_nothing(tmp_path: Path) -> None:
    doc = validate_doc(gpus=2)
    for c in doc["checks"]:
        if c["name"].startswith("nccl_"):
            c.update(status="skip", reason="NCCL unavailable")
    node = by_node(fleet(tmp_path, {"validate": doc, "exit": 0}, gpus=2))["node-2"]
    assert node.status == "fail"
    assert {f.name for f in node.failed} == {"nccl_allreduce", "nccl_broadcast",
                                            "nccl_allgather"}


def test_an_exit_file_that_disagrees_with_the_report(tmp_path: Path) -> None:
    verdict = fleet(tmp_path, {"validate": validate_doc(), "exit": 1})
    node = by_node(verdict)["node-2"]
    assert node.status == "incomplete" and not verdict.ok
    assert any("exit file says 1" in p for p in node.problems)


def test_an_interrupted_report_is_not_a_pass(tmp_path: Path) -> None:
    doc = {**validate_doc(), "ok": False, "interrupted": True}
    node = by_node(fleet(tmp_path, {"validate": doc, "exit": 1}))["node-2"]
    assert node.status == "incomplete"
    assert any("interrupted" in p for p in node.problems)


def test_gpus_left_unvalidated_are_flagged(tmp_path: Path) -> None:
    """``--gpus-per-node 1`` on 2-GPU nodes: detect sees both, validate ran on one."""
    verdict = fleet(tmp_path, {"validate": validate_doc(gpus=1), "exit": 0}, gpus=2)
    node = by_node(verdict)["node-2"]
    assert node.status == "incomplete"
    assert any("validated 1 of its 2 GPU(s)" in p for p in node.problems)


def test_a_node_killed_by_a_signal_shows_it(tmp_path: Path) -> None:
    """Out of memory: validate is killed (exit 137) and leaves an empty report."""
    verdict = fleet(tmp_path, {"validate": "", "exit": 137,
                               "stderr": "loading...\nKilled\n"})
    node = by_node(verdict)["node-2"]
    assert node.status == "incomplete"
    assert node.cause[0] == "validate killed by signal 9, SIGKILL, out of memory or killed"
    assert "Killed" in node.cause


def test_torchenv_missing_on_a_node_names_the_cause(tmp_path: Path) -> None:
    stderr = "/usr/bin/python3: No module named torchenv\n" * 2
    verdict = fleet(tmp_path, {"detect": "", "validate": "", "exit": 1, "stderr": stderr})
    node = by_node(verdict)["node-2"]
    assert node.status == "incomplete"
    assert node.cause[-1] == "/usr/bin/python3: No module named torchenv"
    doc = verdict.to_json()
    assert doc["nodes"][1]["cause"][-1].endswith("No module named torchenv")
    assert doc["nodes"][0]["cause"] == []


def test_the_cause_is_in_the_table_the_json_and_the_junit(tmp_path: Path, cli: Cli) -> None:
    failing = validate_doc()
    failing["ok"] = False
    failing["checks"][2].update(status="fail", error="Traceback ...\nRuntimeError: Connection "
                                                     "reset by peer (gloo)")
    fleet(tmp_path, {"validate": failing, "exit": 1})
    (tmp_path / "node-3.exit").write_text("137\n")
    (tmp_path / "node-3.stderr").write_text("Killed\n")
    junit = tmp_path / "out" / "fleet.xml"
    junit.parent.mkdir()
    table = cli(["fleet", "report", str(tmp_path), "--junit", str(junit)])
    assert table.returncode == 1
    assert "RuntimeError: Connection reset by peer (gloo)" in table.stdout
    assert "killed by signal 9" in table.stdout
    doc = json.loads(cli(["fleet", "report", str(tmp_path), "--json"]).stdout)
    causes = {n["node"]: n["cause"] for n in doc["nodes"]}
    assert causes["node-2"] == ["gloo_allreduce: RuntimeError: Connection reset by peer (gloo)"]
    assert causes["node-3"][0].startswith("validate killed by signal 9")
    suites = {s.get("name"): s for s in ET.parse(junit).getroot()}
    err = suites["torchenv.fleet.node-3"].find("testcase[@name='reports']/system-err")
    assert err is not None and "signal 9" in (err.text or "")


# ----------------------------------------------------------------------------- blame probes

GLOO_ERROR = "RuntimeError: [enforce fail at gloo/transport/tcp/device.cc] no such interface"
TIMEOUT_ERROR = "RuntimeError: Timed out waiting 30000ms for recv operation to complete"


def collective_failed(doc: dict[str, Any], error: str) -> dict[str, Any]:
    """``doc`` with every gloo collective failed, as when a node breaks the fleet's group."""
    doc = copy.deepcopy(doc)
    for c in doc["checks"]:
        if c["name"] in ("gloo_allreduce", "gloo_broadcast", "gloo_allgather", "ddp_step"):
            c.update(status="fail", error=error)
    doc["ok"] = False
    return doc


def probe(folder: Path, name: str, results: dict[str, str | None]) -> None:
    """A probe folder: each member's report, its gloo_allreduce passed (None) or failed."""
    where = folder / "probes" / name
    where.mkdir(parents=True)
    for node, error in results.items():
        checks = [check("import_torch"),
                  check("gloo_allreduce", "fail" if error else "pass",
                        **({"error": error} if error else {})),
                  check("nccl_allreduce", "skip", reason="no CUDA device")]
        write_node(where, node, validate={"ok": error is None, "python": "/p", "torch": "2.7.1",
                                          "level": "full", "seconds": 1.0, "checks": checks},
                   exit_status=0 if error is None else 1)


def test_blame_names_the_node_that_fails_alone_and_keeps_its_partner_in_service(
        tmp_path: Path, cli: Cli) -> None:
    """A bad GLOO_SOCKET_IFNAME on node-2: the fleet's collectives fail on both nodes; node-2
    also fails its probe alone, node-1 passes alone and has no partner left to be cleared by."""
    write_node(tmp_path, "node-1", detect=detect_doc(0), exit_status=1,
               validate=collective_failed(validate_doc(), TIMEOUT_ERROR))
    write_node(tmp_path, "node-2", detect=detect_doc(0), exit_status=1,
               validate=collective_failed(validate_doc(), GLOO_ERROR))
    nodes = tmp_path / "nodes.txt"
    nodes.write_text("node-1\nnode-2\n")
    plan = cli(["fleet", "probes", str(tmp_path), "--nodes-file", str(nodes)])
    assert plan.returncode == 0 and plan.stdout.splitlines() == ["0+node-1 1 node-1",
                                                                 "0+node-2 1 node-2"]
    as_json = cli(["fleet", "probes", str(tmp_path), "--nodes-file", str(nodes), "--json"])
    assert as_json.returncode == 0, as_json.stderr
    assert json.loads(as_json.stdout) == {"directory": str(tmp_path), "probes": [
        {"probe": "0+node-1", "round": 0, "nodes": ["node-1"]},
        {"probe": "0+node-2", "round": 0, "nodes": ["node-2"]}]}
    probe(tmp_path, "0+node-1", {"node-1": None})
    probe(tmp_path, "0+node-2", {"node-2": GLOO_ERROR})
    again = cli(["fleet", "probes", str(tmp_path), "--nodes-file", str(nodes)])
    assert again.returncode == 0 and again.stdout == "", "one node left: no pair to probe"
    again_json = cli(["fleet", "probes", str(tmp_path), "--nodes-file", str(nodes),
                      "--json"])
    assert json.loads(again_json.stdout) == {"directory": str(tmp_path), "probes": []}
    verdict = judge(read_reports(tmp_path), expected_nodes=NODES)
    node1, node2 = by_node(verdict)["node-1"], by_node(verdict)["node-2"]
    assert node2.status == "fail" and node2.failed[0].name == "fabric"
    assert "fails the collective alone (probe 0+node-2)" in node2.failed[0].error
    assert "no such interface" in node2.failed[0].error
    assert node1.status == "suspect" and not node1.failed
    assert [name for name, _ in verdict.drain] == ["node-2"]
    assert not verdict.ok
    doc = verdict.to_json()
    assert doc["counts"]["suspect"] == 1 and doc["counts"]["fail"] == 1
    assert [(p["probe"], p["passed"]) for p in doc["probes"]] == [("0+node-1", True),
                                                                   ("0+node-2", False)]
    table = cli(["fleet", "report", str(tmp_path), "--nodes-file", str(nodes)])
    assert table.returncode == 1
    assert "suspect" in table.stdout and "kubectl cordon -- node-2\n" in table.stdout


def test_a_pair_that_passes_clears_its_nodes_and_a_reference_names_the_bad_one(
        tmp_path: Path) -> None:
    """Three nodes, node-3's link broken: alone all pass; node-1 + node-2 pass as a pair;
    node-3 then fails with node-1, a cleared reference."""
    for node in ("node-1", "node-2", "node-3"):
        write_node(tmp_path, node, detect=detect_doc(0), exit_status=1,
                   validate=collective_failed(validate_doc(), TIMEOUT_ERROR))
    expected = ["node-1", "node-2", "node-3"]
    reports = read_reports(tmp_path)
    from torchenv.fleet.verdict import next_probes

    assert [p.name for p in next_probes(reports, expected_nodes=expected)] == [
        "0+node-1", "0+node-2", "0+node-3"]
    for node in expected:
        probe(tmp_path, f"0+{node}", {node: None})
    assert next_probes(read_reports(tmp_path), expected_nodes=expected) == [
        PlannedProbe("1+node-1+node-2", 1, ("node-1", "node-2"))]
    probe(tmp_path, "1+node-1+node-2", {"node-1": None, "node-2": None})
    assert next_probes(read_reports(tmp_path), expected_nodes=expected) == [
        PlannedProbe("2+node-3+node-1", 2, ("node-3", "node-1"))]
    probe(tmp_path, "2+node-3+node-1", {"node-3": TIMEOUT_ERROR, "node-1": TIMEOUT_ERROR})
    assert next_probes(read_reports(tmp_path), expected_nodes=expected) == []
    verdict = judge(read_reports(tmp_path), expected_nodes=expected)
    status = {n.node: n.status for n in verdict.nodes}
    assert status == {"node-1": "pass", "node-2": "pass", "node-3": "fail"}
    broken = by_node(verdict)["node-3"].failed[0]
    assert "with node-1, which passed with another node" in broken.error
    assert any("probe with node-2 passed" in n for n in by_node(verdict)["node-1"].notes)
    assert [name for name, _ in verdict.drain] == ["node-3"]


def test_without_probes_a_failed_collective_keeps_every_locally_good_node_a_suspect(
        tmp_path: Path) -> None:
    for node in NODES:
        write_node(tmp_path, node, detect=detect_doc(0), exit_status=1,
                   validate=collective_failed(validate_doc(), TIMEOUT_ERROR))
    verdict = judge(read_reports(tmp_path), expected_nodes=NODES)
    assert [n.status for n in verdict.nodes] == ["suspect", "suspect"]
    assert not verdict.drain and not verdict.ok
    assert any("no probe ran" in f.message for f in verdict.findings)


def test_a_probe_cut_short_decides_nothing(tmp_path: Path) -> None:
    for node in NODES:
        write_node(tmp_path, node, detect=detect_doc(0), exit_status=1,
                   validate=collective_failed(validate_doc(), TIMEOUT_ERROR))
    probe(tmp_path, "0+node-1", {"node-1": None})
    (tmp_path / "probes" / "0+node-2").mkdir()
    (tmp_path / "probes" / "0+node-2" / "node-2.validate.json.part").write_text('{"ok"')
    verdict = judge(read_reports(tmp_path), expected_nodes=NODES)
    assert [n.status for n in verdict.nodes] == ["suspect", "suspect"]
    assert [p.passed for p in verdict.probes] == [True, None]
    assert not verdict.drain


def test_a_one_node_fleet_keeps_its_collective_failures_its_own(tmp_path: Path) -> None:
    write_node(tmp_path, "node-1", detect=detect_doc(0), exit_status=1,
               validate=collective_failed(validate_doc(), GLOO_ERROR))
    verdict = judge(read_reports(tmp_path), expected_nodes=["node-1"])
    (node,) = verdict.nodes
    assert node.status == "fail" and node.failed[0].name == "gloo_allreduce"
