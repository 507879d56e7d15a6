"""The fleet verdict: build facts, skew and its majority, missing nodes, the drain list."""

from __future__ import annotations

from typing import Optional

import pytest

from torchenv.fleet.reports import NodeReports, ReportSet
from torchenv.fleet.verdict import (
    NONE,
    BuildFacts,
    NodeSummary,
    find_skew,
    judge,
    parse_build_detail,
)


@pytest.mark.parametrize(("detail", "facts"), [
    ("torch 2.7.1+cu128, CUDA 12.8, cuDNN 90701, NCCL 2.26.2, arch sm_75 sm_80 sm_90 sm_120",
     BuildFacts(torch="2.7.1+cu128", cuda="12.8", cudnn="90701", nccl="2.26.2",
                arch_list=("sm_75", "sm_80", "sm_90", "sm_120"))),
    ("torch 2.13.0+cpu, CPU-only build", BuildFacts(torch="2.13.0+cpu", cpu_only=True)),
    ("torch 2.7.1+rocm6.3, ROCm 6.3.42131-fa1d09cbd",
     BuildFacts(torch="2.7.1+rocm6.3", rocm="6.3.42131-fa1d09cbd")),
    ("torch 2.4.0+cu121, CUDA 12.1, no cuDNN, no NCCL, arch sm_50 sm_90",
     BuildFacts(torch="2.4.0+cu121", cuda="12.1", cudnn=NONE, nccl=NONE,
                arch_list=("sm_50", "sm_90"))),
], ids=["cuda", "cpu", "rocm", "windows-like"])
def test_the_build_checks_detail(detail: str, facts: BuildFacts) -> None:
    assert parse_build_detail(detail) == facts


def node(name: str, status: str = "pass", *, driver: Optional[str] = "550.54.15",
         nccl: Optional[str] = "2.26.2", gpus: Optional[int] = 8) -> NodeSummary:
    return NodeSummary(node=name, status=status, driver=driver, nccl=nccl,  # type: ignore[arg-type]
                       gpu_count=gpus, gpu_models=("NVIDIA H100",) * bool(gpus)
                       if gpus is not None else None)


def test_skew_names_a_strict_majority_and_its_outliers() -> None:
    nodes = [node("a"), node("b"), node("c", driver="535.104.05")]
    skew = find_skew(nodes, "driver")
    assert skew is not None and skew.majority == "550.54.15" and skew.outliers == ("c",)
    assert skew.values == (("550.54.15", ("a", "b")), ("535.104.05", ("c",)))


def test_without_a_majority_no_node_is_singled_out() -> None:
    skew = find_skew([node("a"), node("b", driver="535.104.05")], "driver")
    assert skew is not None and skew.majority is None and skew.outliers == ()


def test_unknown_facts_take_no_part_but_absent_ones_do() -> None:
    assert find_skew([node("a"), node("b", driver=None)], "driver") is None
    skew = find_skew([node("a"), node("b"), node("c", driver=NONE, gpus=0)], "gpu_count")
    assert skew is not None and skew.outliers == ("c",)
    assert find_skew([node("a"), node("b", nccl=NONE)], "nccl") is not None


def reports(*names: str, problems: tuple[str, ...] = ()) -> ReportSet:
    return ReportSet(directory="d", nodes=tuple(NodeReports(node=n, problems=problems)
                                                for n in names))


def test_expected_names_make_silent_nodes_missing() -> None:
    verdict = judge(reports("a", problems=("wrote no validate report",)),
                    expected_nodes=["a", "b", "b"])
    by_name = {n.node: n for n in verdict.nodes}
    assert by_name["a"].status == "incomplete" and by_name["b"].status == "missing"
    assert verdict.expected == 2 and not verdict.ok
    assert dict(verdict.drain) == {"a": ("wrote no validate report",),
                                   "b": ("wrote no report",)}


def test_nodes_outside_the_expected_list_are_a_warning() -> None:
    verdict = judge(reports("a", "z", problems=("x",)), expected_nodes=["a"])
    assert [f.message for f in verdict.findings] == [
        "reports from nodes not in the expected list: z"]
    assert verdict.findings[0].severity == "warning"


def test_an_expected_count_can_only_count() -> None:
    short = judge(reports("a", problems=("x",)), expected_count=3)
    assert short.findings[0].severity == "error"
    assert "2 of 3 expected nodes wrote no report" in short.findings[0].message
    assert judge(reports("a", "b", problems=("x",)),
                 expected_count=1).findings[0].severity == "warning"
