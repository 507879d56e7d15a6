"""Reading node reports: files, pod logs with markers, and every way a report can be broken."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from torchenv.fleet.node import marker
from torchenv.fleet.reports import (
    RawReport,
    UnreadableReport,
    node_reports,
    parse_exit,
    parse_junit,
    parse_log,
    parse_validate,
    read_reports,
)

VALIDATE = {"ok": True, "python": "/usr/bin/python3", "torch": "2.7.1+cu128", "level": "full",
            "seconds": 3.0, "checks": [
                {"name": "build", "status": "pass", "seconds": 0.1, "device": "cpu",
                 "required": True, "detail": "torch 2.7.1+cu128, CUDA 12.8, NCCL 2.26.2"},
                {"name": "perf", "status": "fail", "device": "cuda:0", "required": False,
                 "error": "12 TFLOP/s"}]}
DETECT = {"platform": "linux-x86_64", "python": "3.12", "glibc": "2.35", "nvidia": None,
          "rocm": None, "xpu": None, "mps": False, "torch": None}


def section(kind: str, node: str, body: str, prefix: str = "") -> list[str]:
    return [prefix + marker("begin", kind, node),
            *(prefix + line for line in body.splitlines()), prefix,
            prefix + marker("end", kind, node)]


def test_sections_are_read_back_from_a_log_with_other_output_around_them() -> None:
    log = "\n".join(["torchenv: warning: something", *section("validate.json", "n1",
                     json.dumps(VALIDATE, indent=2)), "trailing noise"])
    (raw,) = parse_log(log, origin="pod.log")
    assert raw.node == "n1" and raw.kind == "validate.json" and not raw.partial
    assert raw.origin == "pod.log:2"
    assert json.loads(raw.text or "") == VALIDATE


def test_prefixed_and_interleaved_logs_of_several_pods() -> None:
    """``kubectl logs -l ... --prefix`` puts ``[pod/NAME/CONTAINER] `` before each line."""
    a = section("exit", "node-a", "0", prefix="[pod/job-0-x/validate] ")
    b = section("exit", "node-b", "1", prefix="[pod/job-1-y/validate] ")
    interleaved = [line for pair in zip(a, b) for line in pair]
    raws = sorted(parse_log("\n".join(interleaved), origin="all.log"), key=lambda r: r.node)
    assert [(r.node, (r.text or "").strip()) for r in raws] == [("node-a", "0"),
                                                                 ("node-b", "1")]


def test_a_section_without_its_end_marker_is_partial() -> None:
    lines = section("validate.json", "n1", '{"ok": tr')[:-2]
    (raw,) = parse_log("\n".join(lines), origin="pod.log")
    assert raw.partial
    reports = node_reports("n1", [raw])
    assert reports.validate is None
    assert any("cut short" in p for p in reports.problems)


def test_the_validate_document_is_read_into_a_report() -> None:
    report = parse_validate(json.dumps(VALIDATE))
    assert report.torch == "2.7.1+cu128" and report.level == "full"
    assert [c.name for c in report.checks] == ["build", "perf"]
    assert report.ok, "an optional check's failure leaves the report ok"


@pytest.mark.parametrize(("text", "words"), [
    ("", "empty"),
    ("   \n", "empty"),
    ('{"ok": true, "checks": [', "not JSON"),
    ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ("[1, 2]", "a JSON list, not a validate report"),
    (json.dumps(DETECT), "a detect report, not a validate report"),
    ('{"foo": 1}', "a JSON object of another kind, not a validate report"),
    ('{"error": "--timeout: must be above 0", "hint": null, "exit_code": 2}',
     "validate stopped with exit 2: --timeout: must be above 0"),
    ('{"ok": true, "checks": [{"name": "x", "status": "maybe"}]}',
     "check #1 is not a check result"),
    ('{"ok": true, "checks": ["build"]}', "check #1 is not a check result"),
], ids=["empty", "blank", "truncated", "deep", "list", "detect", "other", "error-doc",
        "bad-status", "not-an-object"])
def test_what_is_not_a_validate_report_says_what_it_is(text: str, words: str) -> None:
    with pytest.raises(UnreadableReport, match=words.replace("(", r"\(")):
        parse_validate(text)


def test_junit_reports_are_read_like_the_json_document(tmp_path: Path) -> None:
    from torchenv.validation.report import write_junit

    write_junit(parse_validate(json.dumps(VALIDATE)), tmp_path / "r.xml")
    report = parse_junit((tmp_path / "r.xml").read_text())
    assert report.torch == "2.7.1+cu128" and report.level == "full"
    by_name = {c.name: c for c in report.checks}
    assert by_name["build"].detail == "torch 2.7.1+cu128, CUDA 12.8, NCCL 2.26.2"
    assert by_name["perf"].status == "fail" and not by_name["perf"].required
    assert report.ok


@pytest.mark.parametrize(("text", "words"), [
    ("<testsuites", "not XML"),
    ('<!DOCTYPE x [<!ENTITY a "b">]><testsuites/>', "DOCTYPE"),
    ('<testsuites><testsuite name="pytest"/></testsuites>', "not a torchenv validate JUnit"),
    ('<testsuite name="torchenv.validate.quick"/>', "without test cases"),
], ids=["truncated", "entities", "other-suite", "no-cases"])
def test_what_is_not_a_validate_junit_report(text: str, words: str) -> None:
    with pytest.raises(UnreadableReport, match=words):
        parse_junit(text)


def test_exit_status() -> None:
    assert parse_exit("1\n") == 1
    with pytest.raises(UnreadableReport, match="not an exit status"):
        parse_exit("killed")


def raw(kind: str, text: str, node: str = "n1", **kw: Any) -> RawReport:
    return RawReport(node=node, kind=kind, origin=f"{node}.{kind}", text=text, **kw)


def test_junit_stands_in_for_a_validate_document_that_is_missing(tmp_path: Path) -> None:
    from torchenv.validation.report import write_junit

    write_junit(parse_validate(json.dumps(VALIDATE)), tmp_path / "r.xml")
    junit = (tmp_path / "r.xml").read_text()
    alone = node_reports("n1", [raw("junit.xml", junit), raw("detect.json", json.dumps(DETECT))])
    assert alone.validate is not None and alone.validate_origin == "n1.junit.xml"
    assert alone.problems == ()
    # a broken document is still a problem, though the JUnit file gives the verdict
    broken = node_reports("n1", [raw("junit.xml", junit), raw("validate.json", "{")])
    assert broken.validate is not None and broken.validate_origin == "n1.junit.xml"
    assert any("n1.validate.json: not JSON" in p for p in broken.problems)


def test_missing_reports_problem_versus_note() -> None:
    detect_only = node_reports("n1", [raw("detect.json", json.dumps(DETECT)),
                                      raw("exit", "2")])
    assert detect_only.problems == ("wrote no validate report (validate exited 2)",)
    validate_only = node_reports("n1", [raw("validate.json", json.dumps(VALIDATE))])
    assert validate_only.problems == ()
    assert validate_only.notes == ("no detect report: its driver and GPUs are unknown",)


def test_two_different_reports_of_one_kind_for_one_node_are_a_problem() -> None:
    other = dict(VALIDATE, torch="2.6.0+cu126")
    reports = node_reports("n1", [raw("validate.json", json.dumps(VALIDATE)),
                                  RawReport(node="n1", kind="validate.json", origin="b.log:3",
                                            text=json.dumps(other))])
    assert any("a second, different validate.json report" in p for p in reports.problems)
    assert reports.validate is not None and reports.validate.torch == "2.7.1+cu128"
    # the same report found twice (the pod's log and the claim) is one report
    same = node_reports("n1", [raw("validate.json", json.dumps(VALIDATE)),
                               RawReport(node="n1", kind="validate.json", origin="b.log:3",
                                         text=json.dumps(VALIDATE) + "\n")])
    assert same.problems == ()


def test_the_folder_reader(tmp_path: Path) -> None:
    (tmp_path / "n1.validate.json").write_text(json.dumps(VALIDATE))
    (tmp_path / "n1.detect.json.part").write_text('{"platf')
    (tmp_path / "n2.validate.json").write_bytes(b"\xff\xfe{}")
    (tmp_path / "n3.validate.json.part").write_text('{"ok":')
    (tmp_path / "pods.log").write_text("\n".join(section("exit", "n4", "0")))
    (tmp_path / "expected-nodes.txt").write_text("n1\n")
    (tmp_path / "fleet-junit.xml").write_text("<testsuites/>")
    (tmp_path / "subdir").mkdir()
    found = read_reports(tmp_path)
    by_node = {n.node: n for n in found.nodes}
    assert sorted(by_node) == ["n1", "n2", "n3", "n4"]
    assert by_node["n1"].validate is not None
    assert any("detect.json report was cut short" in p for p in by_node["n1"].problems)
    assert by_node["n2"].problems[0] == "n2.validate.json: not UTF-8 text (byte 0)"
    assert any("validate.json report was cut short" in p for p in by_node["n3"].problems)
    assert by_node["n4"].exit_status == 0
    assert found.ignored == ("expected-nodes.txt", "fleet-junit.xml")
