"""A report folder is written by many nodes, often on shared storage: ``fleet report`` opens
nothing outside it, and never shows what a file it could not use holds, only its name and why.

Each case is judged through every output the verdict reaches: the table (with its drain list),
``--json`` and the JUnit file CI publishes.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from torchenv.cli import main
from torchenv.fleet import reports
from torchenv.fleet.reports import read_reports

SECRET = "ghp_s3cretTokenThatMustNeverBeShown"

DETECT = {"platform": "linux-x86_64", "python": "3.12", "glibc": "2.35", "nvidia": None,
          "rocm": None, "xpu": None, "mps": False, "torch": None}
PASSING = {"ok": True, "python": "/usr/bin/python3", "torch": "2.7.1+cpu", "level": "quick",
           "checks": [{"name": "import_torch", "status": "pass", "seconds": 0.1}]}


def _every_output(folder: Path, capsys: pytest.CaptureFixture[str],
                  tmp_path: Path) -> tuple[int, str]:
    """The table, the JSON document and the JUnit file of ``fleet report FOLDER``, as one text."""
    junit = tmp_path / "verdict.xml"
    status = main(["fleet", "report", str(folder), "--junit", str(junit)])
    table = capsys.readouterr()
    main(["fleet", "report", str(folder), "--json"])
    doc = capsys.readouterr()
    json.loads(doc.out)
    return status, "\n".join([table.out, table.err, doc.out, doc.err, junit.read_text()])


def _good_node(folder: Path, node: str = "node-1") -> None:
    (folder / f"{node}.detect.json").write_text(json.dumps(DETECT))
    (folder / f"{node}.validate.json").write_text(json.dumps(PASSING))
    (folder / f"{node}.exit").write_text("0\n")


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    """A file outside the report folder that a node must not get shown."""
    path = tmp_path / "outside" / "token"
    path.parent.mkdir()
    path.write_text(SECRET + "\n")
    return path


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    path = tmp_path / "reports"
    path.mkdir()
    _good_node(path, "node-0")
    return path


@pytest.mark.parametrize("name", ["node-1.exit", "node-1.validate.json", "node-1.detect.json",
                                  "node-1.junit.xml", "node-1.stderr", "pods.log", "job-end"])
def test_a_symbolic_link_is_never_followed(folder: Path, secret: Path, tmp_path: Path,
                                           name: str,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    if name != "node-1.exit":
        (folder / "node-1.exit").write_text("0\n")
    (folder / name).symlink_to(secret)
    status, shown = _every_output(folder, capsys, tmp_path)
    assert SECRET not in shown
    assert status == 1
    assert f"{name}: a symbolic link; not followed" in shown


def test_a_linked_report_is_a_finding_about_its_node(folder: Path, secret: Path) -> None:
    (folder / "node-1.validate.json").symlink_to(secret)
    node = {n.node: n for n in read_reports(folder).nodes}["node-1"]
    assert node.validate is None
    assert "node-1.validate.json: a symbolic link; not followed" in node.problems


def test_a_link_to_a_real_report_elsewhere_is_not_taken_either(folder: Path,
                                                               tmp_path: Path) -> None:
    """Even a well-formed report is not read through a link: the folder is what the nodes
    wrote, and a link may point anywhere later."""
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text(json.dumps(PASSING))
    (folder / "node-1.validate.json").symlink_to(elsewhere)
    node = {n.node: n for n in read_reports(folder).nodes}["node-1"]
    assert node.validate is None and node.problems


def test_a_hard_link_to_a_file_elsewhere_is_not_read(folder: Path, secret: Path) -> None:
    os.link(secret, folder / "node-1.exit")
    node = {n.node: n for n in read_reports(folder).nodes}["node-1"]
    assert node.exit_status is None
    assert any("node-1.exit: 2 hard links" in p for p in node.problems), node.problems


def test_a_fifo_is_a_finding_and_no_wait(folder: Path) -> None:
    os.mkfifo(folder / "node-1.validate.json")
    node = {n.node: n for n in read_reports(folder).nodes}["node-1"]
    assert "node-1.validate.json: not a regular file; not read" in node.problems


def test_a_linked_probe_folder_is_not_followed(folder: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside-probe"
    outside.mkdir()
    _good_node(outside, "node-1")
    (outside / "node-1.exit").write_text(SECRET)
    (folder / "probes").mkdir()
    (folder / "probes" / "1+node-1").symlink_to(outside)
    found = read_reports(folder)
    assert found.probes == ()
    assert "probes/1+node-1: a symbolic link; not followed" in found.problems


def test_a_linked_probes_folder_is_not_followed(folder: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside-probes"
    (outside / "1+node-1").mkdir(parents=True)
    _good_node(outside / "1+node-1", "node-1")
    (folder / "probes").symlink_to(outside)
    found = read_reports(folder)
    assert found.probes == ()
    assert any(p.startswith("probes: not a folder") for p in found.problems)


def test_probe_folders_are_read_one_level_deep(folder: Path) -> None:
    probe = folder / "probes" / "1+node-1"
    probe.mkdir(parents=True)
    _good_node(probe, "node-1")
    (probe / "probes" / "not-a-probe").mkdir(parents=True)  # a problem, were it read
    found = read_reports(folder)
    assert [p.name for p in found.probes] == ["1+node-1"]
    assert not any("not-a-probe" in p for p in found.problems), found.problems


def test_a_folder_with_too_many_entries_is_read_up_to_the_bound(
        folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reports, "MAX_ENTRIES", 4)
    for i in range(1, 4):
        _good_node(folder, f"node-{i}")
    found = read_reports(folder)
    assert sum(len(n.origins) for n in found.nodes) == 4
    assert any("more than 4 entries" in p for p in found.problems)


@pytest.mark.parametrize(("name", "content"), [
    ("node-1.exit", SECRET),
    ("job-end", SECRET),
    ("node-1.detect.json", json.dumps({**DETECT, "platform": SECRET})),
    ("node-1.detect.json", json.dumps({**DETECT, "glibc": [SECRET]})),
    ("node-1.detect.json", json.dumps({**DETECT, "nvidia": {"driver_version": SECRET}})),
    ("node-1.validate.json", "{" + SECRET),
    ("node-1.junit.xml", f"<testsuite name='{SECRET}'>"),
    ("node-1.junit.xml", f"<{SECRET}"),
], ids=["exit", "job-end", "detect-platform", "detect-glibc", "detect-driver",
        "validate-not-json", "junit-other-suite", "junit-not-xml"])
def test_a_file_that_is_not_its_report_is_named_never_quoted(
        folder: Path, tmp_path: Path, name: str, content: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    _good_node(folder, "node-1")
    if name.endswith(".junit.xml"):  # read only where there is no validate.json
        (folder / "node-1.validate.json").unlink()
    (folder / name).write_text(content)
    status, shown = _every_output(folder, capsys, tmp_path)
    assert status == 1
    assert name in shown
    assert "s3cret" not in shown


def test_a_folder_past_its_byte_budget_is_read_up_to_it(
        folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each file has its cap; the folder has one in all, past which a file is a finding."""
    monkeypatch.setattr(reports, "MAX_FOLDER_BYTES", 1)
    _good_node(folder, "node-1")
    found = {n.node: n for n in read_reports(folder).nodes}
    assert found["node-0"].detect is not None  # the first file read passes the budget
    assert any("passed 1 bytes in all" in p for p in found["node-1"].problems), found
