"""Reports from other nodes are not trusted: a name that is not a node's never reaches a drain
command, and a log built to make the reader slow is read in time proportional to its length."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from tests.conftest import Cli

from torchenv.cli.render_fleet import drain_commands
from torchenv.errors import BadInput
from torchenv.fleet.node import bad_node_name, marker
from torchenv.fleet.reports import parse_log, read_reports

DETECT = {"platform": "linux-x86_64", "python": "3.12", "glibc": "2.35", "nvidia": None,
          "rocm": None, "xpu": None, "mps": False, "torch": None}


def test_a_planted_option_as_a_file_name_never_reaches_a_drain_command(
        tmp_path: Path, cli: Cli) -> None:
    (tmp_path / "--all.detect.json").write_text(json.dumps(DETECT))
    (tmp_path / "--selector=x.validate.json").write_text("{}")
    (tmp_path / "node-1.detect.json").write_text(json.dumps(DETECT))
    proc = cli(["fleet", "report", str(tmp_path)])
    assert proc.returncode == 1, proc.stdout + proc.stderr
    out = proc.stdout
    drain = out.split("Nodes to drain")[1]
    assert "kubectl cordon -- node-1\n" in drain and "--all" not in drain
    assert "'--all' is not a node name" in out and "'--selector=x' is not a node name" in out
    doc = json.loads(cli(["fleet", "report", str(tmp_path), "--json"]).stdout)
    assert [n["node"] for n in doc["nodes"]] == ["node-1"]
    assert [d["node"] for d in doc["drain"]] == ["node-1"]


@pytest.mark.parametrize("name", ["-x", "--all", "a b", "node-", "a..b", "x;rm", "a/b", "é",
                                  "a" * 254, ""])
def test_values_that_are_not_node_names_are_refused(name: str) -> None:
    assert bad_node_name(name) is not None
    with pytest.raises(BadInput) as caught:
        drain_commands(["node-1", name])
    assert caught.value.field == "node"


@pytest.mark.parametrize("name", ["node-1", "gpu07", "n1.cluster.example", "rack_3-n12",
                                  "ip-10-0-0-1.ec2.internal", "A" * 63])
def test_host_names_are_node_names(name: str) -> None:
    assert bad_node_name(name) is None
    assert drain_commands([name])["kubernetes"] == f"kubectl cordon -- {name}"


def test_a_log_marker_naming_no_node_is_not_read(tmp_path: Path) -> None:
    log = [marker("begin", "exit", "--all"), "0", marker("end", "exit", "--all"),
           marker("begin", "exit", "node-1"), "0", marker("end", "exit", "node-1")]
    (tmp_path / "pods.log").write_text("\n".join(log) + "\n")
    reports = read_reports(tmp_path)
    assert [n.node for n in reports.nodes] == ["node-1"]
    assert any("'--all' is not a node name" in p for p in reports.problems)


def test_the_nodes_file_holds_node_names_only(tmp_path: Path, cli: Cli) -> None:
    (tmp_path / "node-1.detect.json").write_text(json.dumps(DETECT))
    nodes = tmp_path / "nodes.txt"
    nodes.write_text("node-1\n--all\n")
    proc = cli(["fleet", "report", str(tmp_path), "--nodes-file", str(nodes)])
    assert proc.returncode == 2
    assert "line 2: '--all' is not a node name" in proc.stderr
    assert "Traceback" not in proc.stderr


def _unclosed_log(sections: int, lines_after: int) -> str:
    """``sections`` begin markers of distinct pods that never end, then many lines."""
    begins = [f"[pod/job-{i}-x/validate] " + marker("begin", "stderr", f"node-{i}")
              for i in range(sections)]
    return "\n".join([*begins, *(f"[pod/job-{i % sections}-x/validate] line {i}"
                                 for i in range(lines_after))])


def test_a_log_of_many_unclosed_sections_is_read_in_linear_time() -> None:
    """Each line is looked up by its prefix once: 20,000 open sections and 200,000 lines take
    about as long per line as 20 sections do (the old reader compared every line with every
    open section: 4e9 comparisons here)."""
    small = _unclosed_log(20, 20_000)
    big = _unclosed_log(20_000, 200_000)
    started = time.perf_counter()
    parse_log(small, origin="small.log")
    per_line_small = (time.perf_counter() - started) / 20_020
    started = time.perf_counter()
    raws = parse_log(big, origin="big.log")
    per_line_big = (time.perf_counter() - started) / 220_000
    assert len(raws) == 20_000 and all(r.partial for r in raws)
    assert sum(len((r.text or "").splitlines()) for r in raws) == 200_000
    # generous: linear reading keeps the per-line cost within a small factor; quadratic
    # reading would be about a thousand times slower per line
    assert per_line_big < 20 * per_line_small + 5e-6, (per_line_small, per_line_big)


def test_a_second_begin_with_the_same_prefix_cuts_the_first_short() -> None:
    p = "[pod/job-0-x/validate] "
    log = [p + marker("begin", "validate.json", "node-1"), p + '{"ok": tr',
           p + marker("begin", "exit", "node-1"), p + "0", p + marker("end", "exit", "node-1")]
    raws = {r.kind: r for r in parse_log("\n".join(log), origin="pod.log")}
    assert raws["validate.json"].partial and raws["validate.json"].text == '{"ok": tr'
    assert not raws["exit"].partial and raws["exit"].text == "0"


def test_control_characters_from_a_report_never_reach_the_terminal(
        tmp_path: Path, cli: Cli) -> None:
    """A GPU name, a torch version, a check's error from another node: the console's one
    output filter shows their control characters as ``?``."""
    detect = {**DETECT, "nvidia": {
        "driver_version": "550.54.15", "cuda_driver_version": "12.8", "source": "nvml",
        "gpus": [{"index": 0, "name": "H100\x1b[2J\x1b]0;owned\x07", "compute_capability": "9.0",
                  "memory_mib": 81559, "uuid": "GPU-0", "mig_mode": False}],
        "cuda_visible_devices": None, "visible": None}}
    (tmp_path / "node-1.detect.json").write_text(json.dumps(detect))
    (tmp_path / "node-1.validate.json").write_text(json.dumps({
        "ok": False, "python": "/p", "torch": "2.7\x1b[31m", "level": "quick", "checks": [
            {"name": "import_torch", "status": "fail", "error": "boom\x1b[2Jgone"}]}))
    proc = cli(["fleet", "report", str(tmp_path)])
    assert proc.returncode == 1
    assert "\x1b" not in proc.stdout and "\x07" not in proc.stdout
    assert "H100?[2J" in proc.stdout and "boom?[2Jgone" in proc.stdout
