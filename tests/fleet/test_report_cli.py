"""``torchenv fleet report`` over a fleet with planted faults, built from real reports.

The per-node reports are this machine's own ``detect --json`` and ``validate --json --junit``
(CPU torch), edited into the nodes of a GPU fleet: three good nodes, a failed check, a node on
another driver, corrupt JSON, an empty file, a report of another shape, a node that wrote only
its detect report, one that wrote only JUnit, and an expected node that wrote nothing.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import Cli, run_cli
from tests.fleet.fleet_nodes import (
    DRIVER,
    TORCH,
    failed,
    gpu_detect,
    gpu_junit,
    gpu_validate,
    write_node,
)
from tests.validation.helpers import check_junit_schema

pytestmark = pytest.mark.slow  # the real reports come from a validation run

OLD_DRIVER = "535.104.05"
EXPECTED = [f"gpu-{i:02d}" for i in range(1, 12)]


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory, real_reports: dict[str, Any]) -> Path:
    folder = tmp_path_factory.mktemp("fleet")
    detect = gpu_detect(real_reports["detect"])
    validate = gpu_validate(real_reports["validate"])
    junit = gpu_junit(real_reports["junit"], real_reports["validate"])
    for node in ("gpu-01", "gpu-02", "gpu-03"):
        write_node(folder, node, detect=detect, validate=validate, junit=junit, exit_status=0)
    write_node(folder, "gpu-04", detect=detect, exit_status=1, validate=failed(
        validate, "matmul", "CUDA error: an illegal memory access was encountered"))
    write_node(folder, "gpu-05", detect=gpu_detect(real_reports["detect"], driver=OLD_DRIVER),
               validate=validate, exit_status=0)
    write_node(folder, "gpu-06", detect=detect, validate=json.dumps(validate)[:200])
    write_node(folder, "gpu-07", detect=detect)
    # gpu-08 wrote nothing at all
    write_node(folder, "gpu-09", detect=detect, validate="")
    write_node(folder, "gpu-10", detect=detect, validate=detect)
    write_node(folder, "gpu-11", detect=detect, junit=junit)
    (folder / "nodes.txt").write_text("# the allocation\n" + "\n".join(EXPECTED) + "\n")
    (folder / "notes.txt").write_text("not a report")
    return folder


@pytest.fixture(scope="module")
def verdict(fleet: Path) -> dict[str, Any]:
    proc = run_cli(["fleet", "report", str(fleet), "--nodes-file", str(fleet / "nodes.txt"),
                    "--json"])
    assert proc.returncode == 1, proc.stderr
    doc: dict[str, Any] = json.loads(proc.stdout)
    return doc


def nodes(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {n["node"]: n for n in doc["nodes"]}


def test_every_node_gets_its_verdict(verdict: dict[str, Any]) -> None:
    status = {name: n["status"] for name, n in nodes(verdict).items()}
    assert status == {
        "gpu-01": "pass", "gpu-02": "pass", "gpu-03": "pass", "gpu-04": "fail",
        "gpu-05": "pass", "gpu-06": "incomplete", "gpu-07": "incomplete",
        "gpu-08": "missing", "gpu-09": "incomplete", "gpu-10": "incomplete",
        "gpu-11": "pass"}
    assert verdict["ok"] is False
    assert verdict["counts"] == {"nodes": 11, "pass": 5, "fail": 1, "incomplete": 4,
                                 "missing": 1, "suspect": 0}
    assert verdict["expected_nodes"] == 11


def test_facts_come_from_detect_and_from_validates_build_check(verdict: dict[str, Any]
                                                               ) -> None:
    good = nodes(verdict)["gpu-01"]
    assert good["gpus"] == 8 and good["gpu_models"] == ["NVIDIA H100 80GB HBM3"]
    assert good["driver"] == DRIVER and good["torch"] == TORCH
    assert good["cuda"] == "12.8" and good["nccl"] == "2.27.3"
    assert good["arch_list"][-1] == "compute_120"
    assert good["validate_report"] == "gpu-01.validate.json"
    junit_only = nodes(verdict)["gpu-11"]
    assert junit_only["validate_report"] == "gpu-11.junit.xml"
    assert junit_only["nccl"] == "2.27.3" and junit_only["torch"] == TORCH


def test_a_failed_check_is_named_with_its_error(verdict: dict[str, Any]) -> None:
    node = nodes(verdict)["gpu-04"]
    assert [f["name"] for f in node["failed_checks"]] == ["matmul"]
    assert "illegal memory access" in node["failed_checks"][0]["error"]
    assert node["exit_status"] == 1


@pytest.mark.parametrize(("node", "words"), [
    ("gpu-06", "gpu-06.validate.json: not JSON"),
    ("gpu-07", "wrote no validate report"),
    ("gpu-08", "wrote no report"),
    ("gpu-09", "gpu-09.validate.json: empty"),
    ("gpu-10", "gpu-10.validate.json: a detect report, not a validate report"),
], ids=["corrupt-json", "detect-only", "silent", "empty-file", "other-shape"])
def test_bad_and_missing_reports_are_findings(verdict: dict[str, Any], node: str,
                                              words: str) -> None:
    problems = nodes(verdict)[node]["problems"]
    assert any(words in p for p in problems), problems


def test_driver_skew_names_the_outlier(verdict: dict[str, Any]) -> None:
    assert [s["kind"] for s in verdict["skew"]] == ["driver"]
    skew = verdict["skew"][0]
    assert skew["majority"] == DRIVER and skew["outliers"] == ["gpu-05"]
    assert {v["value"]: v["nodes"] for v in skew["values"]}[OLD_DRIVER] == ["gpu-05"]
    assert nodes(verdict)["gpu-05"]["skew"] == ["driver"]


def test_nodes_to_drain(verdict: dict[str, Any]) -> None:
    drain = {d["node"]: " ".join(d["reasons"]) for d in verdict["drain"]}
    assert sorted(drain) == ["gpu-04", "gpu-05", "gpu-06", "gpu-07", "gpu-08", "gpu-09",
                             "gpu-10"]
    assert "matmul" in drain["gpu-04"]
    assert f"{OLD_DRIVER} differs from the fleet's {DRIVER}" in drain["gpu-05"]
    assert verdict["ignored_files"] == ["nodes.txt", "notes.txt"]


def test_the_console_table(fleet: Path, cli: Cli) -> None:
    proc = cli(["fleet", "report", str(fleet), "--nodes-file", str(fleet / "nodes.txt")],
               env={"COLUMNS": "220"})
    assert proc.returncode == 1
    out = proc.stdout
    for text in ("gpu-01", "8× NVIDIA H100 80GB HBM3", DRIVER, TORCH, "FAIL", "no report",
                 "incomplete", "matmul: CUDA error", "skew NVIDIA driver",
                 "Nodes to drain", "scontrol update NodeName=gpu-04,gpu-05",
                 "kubectl cordon -- gpu-04", "FAILED"):
        assert text in out, text


def test_one_junit_file_for_the_whole_fleet(fleet: Path, tmp_path: Path, cli: Cli) -> None:
    target = tmp_path / "fleet.xml"
    proc = cli(["fleet", "report", str(fleet), "--nodes-file", str(fleet / "nodes.txt"),
                "--junit", str(target)])
    assert proc.returncode == 1, proc.stderr
    root = ET.parse(target).getroot()
    check_junit_schema(root)
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    assert set(suites) == {"torchenv.fleet", *(f"torchenv.fleet.{n}" for n in EXPECTED)}
    fleet_cases = {c.get("name"): c for c in suites["torchenv.fleet"].findall("testcase")}
    assert fleet_cases["driver"].find("failure") is not None
    assert fleet_cases["torch"].find("failure") is None
    failing = {c.get("name") for c in suites["torchenv.fleet.gpu-04"].findall("testcase")
               if c.find("failure") is not None}
    assert failing == {"matmul"}
    assert suites["torchenv.fleet.gpu-08"].find("testcase/failure").get("message") == \
        "wrote no report"
    classnames = {c.get("classname") for c in suites["torchenv.fleet.gpu-01"].iter("testcase")}
    assert "torchenv.fleet.gpu-01.cpu" in classnames


def test_only_good_nodes_pass(fleet: Path, tmp_path: Path, cli: Cli) -> None:
    for path in fleet.glob("gpu-0[123].*"):
        (tmp_path / path.name).write_bytes(path.read_bytes())
    proc = cli(["fleet", "report", str(tmp_path), "--expect-nodes", "3"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "OK: 3 of 3 nodes passed, no skew" in proc.stdout
    proc = cli(["fleet", "report", str(tmp_path), "--expect-nodes", "4", "--json"])
    assert proc.returncode == 1
    doc = json.loads(proc.stdout)
    assert doc["findings"][0]["severity"] == "error"
    assert "1 of 4 expected nodes wrote no report" in doc["findings"][0]["message"]


def test_allowed_skew_is_reported_without_failing(fleet: Path, tmp_path: Path, cli: Cli) -> None:
    for path in [*fleet.glob("gpu-0[12].*"), *fleet.glob("gpu-05.*")]:
        (tmp_path / path.name).write_bytes(path.read_bytes())
    assert cli(["fleet", "report", str(tmp_path)]).returncode == 1
    proc = cli(["fleet", "report", str(tmp_path), "--allow-skew", "driver", "--json"])
    assert proc.returncode == 0, proc.stdout
    doc = json.loads(proc.stdout)
    assert doc["skew"][0]["allowed"] is True and doc["drain"] == []


def test_a_folder_without_reports_is_bad_input(tmp_path: Path, cli: Cli) -> None:
    job = tmp_path / "1234"
    job.mkdir()
    (job / "n1.validate.json").write_text("{}")
    proc = cli(["fleet", "report", str(tmp_path)])
    assert proc.returncode == 2
    assert "holds no node reports" in proc.stderr and str(job) in proc.stderr
    proc = cli(["fleet", "report", str(tmp_path / "nope")])
    assert proc.returncode == 2 and "cannot list it" in proc.stderr
