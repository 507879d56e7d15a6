"""The inference rules, one by one, and what they derive from the embedded data."""

from __future__ import annotations

import pytest

from torchenv.matrix.inference import (
    RULES,
    PtxPolicy,
    RuntimeTable,
    infer_from_adjacent_releases,
    infer_from_runtime_table,
    infer_ptx_from_policy,
    infer_same_as,
    toolkit_excludes,
)
from torchenv.matrix.model import ArchFact, Matrix, SameAs, ToolkitFloor
from torchenv.values import (
    ArchEntry,
    ComputeCapability,
    CudaVersion,
    Platform,
    TorchVersion,
    VariantName,
)

LINUX = Platform("linux-x86_64")


def arch(*entries: str) -> tuple[ArchEntry, ...]:
    return tuple(map(ArchEntry, entries))


LIST = arch("7.5", "8.0", "8.6", "9.0", "10.0", "12.0")
WITH_PTX = (*LIST[:-1], ArchEntry("12.0+PTX"))
CONFIRMED = ArchFact(LIST, "confirmed", "confirmed", sources=("a",))
CONFIRMED_B = ArchFact(LIST, "confirmed", "confirmed", sources=("b",))


def test_adjacent_releases_that_agree_give_the_list_with_both_sources() -> None:
    got = infer_from_adjacent_releases(CONFIRMED, CONFIRMED_B)
    assert got == ArchFact(LIST, "inferred", "inferred", "adjacent-releases-agree", ("a", "b"))


@pytest.mark.parametrize(("older", "newer"), [
    (CONFIRMED, None),
    (None, CONFIRMED),
    (CONFIRMED, ArchFact(LIST[1:], "confirmed", "confirmed", sources=("b",))),
    (CONFIRMED, ArchFact(LIST, "inferred", "inferred", "adjacent-releases-agree", ("b",))),
    (CONFIRMED, ArchFact(None, "unknown", "unknown")),
], ids=["no-newer", "no-older", "lists-differ", "newer-only-inferred", "newer-unknown"])
def test_adjacent_releases_rule_needs_two_confirmed_equal_neighbours(
        older: ArchFact | None, newer: ArchFact | None) -> None:
    assert infer_from_adjacent_releases(older, newer) is None


def test_adjacent_releases_judge_ptx_apart() -> None:
    with_ptx = ArchFact(WITH_PTX, "confirmed", "confirmed", sources=("b",))
    got = infer_from_adjacent_releases(CONFIRMED, with_ptx)
    assert got is not None
    assert (got.arch_list, got.sass, got.ptx) == (LIST, "inferred", "unknown")


def test_runtime_table_applies_to_synced_linux_rows_only() -> None:
    cu130, cu132 = CudaVersion("13.0"), CudaVersion("13.2")
    table = RuntimeTable((TorchVersion("2.14.0"),), {cu130: {LINUX: LIST}}, True, ("t",))
    got = infer_from_runtime_table(cu130, LINUX, table)
    assert got == ArchFact(LIST, "inferred", "unknown", "runtime-table-in-sync", ("t",))
    assert infer_from_runtime_table(cu130, Platform("win-amd64"), table) is None
    assert infer_from_runtime_table(cu132, LINUX, table) is None
    unsynced = RuntimeTable((TorchVersion("2.12.0"),), {cu130: {LINUX: LIST}}, False, ("t",))
    assert infer_from_runtime_table(cu130, LINUX, unsynced) is None


def test_ptx_policy_strips_ptx_from_a_list_whose_ptx_is_unknown() -> None:
    policy = PtxPolicy((TorchVersion("2.12.0"),), (CudaVersion("13.0"),), (LINUX,), ("p",))
    fact = ArchFact(WITH_PTX, "confirmed", "unknown", sources=("s",))
    got = infer_ptx_from_policy(fact, policy)
    assert (got.arch_list, got.sass, got.ptx, got.rule) == (
        LIST, "confirmed", "inferred", "release-ptx-policy")
    assert got.sources == ("s", "p")
    # a confirmed PTX entry and an unknown SASS list are left alone
    assert infer_ptx_from_policy(CONFIRMED, policy) is CONFIRMED
    unknown = ArchFact(None, "unknown", "unknown")
    assert infer_ptx_from_policy(unknown, policy) is unknown


def _floor(cuda: str, newest: str, oldest: str) -> ToolkitFloor:
    return ToolkitFloor(CudaVersion(cuda), None, None, newest_arch=ComputeCapability(newest),
                        oldest_arch=ComputeCapability(oldest))


@pytest.mark.parametrize(("cc", "cuda", "floor", "words"), [
    ("12.0", "12.6", _floor("12.6", "9.0", "5.0"),
     "is newer than anything CUDA 12.6 compiles for (newest sm_90)"),
    ("3.7", "13.0", _floor("13.0", "12.1", "7.5"),
     "is older than anything CUDA 13.0 compiles for (oldest sm_75)"),
    ("8.6", "12.6", _floor("12.6", "9.0", "5.0"), None),
    ("12.0", "12.6", None, None),
    # the newest target's SASS runs a later minor of its major: sm_120 on a 12.1 GPU (GB10),
    # sm_86 on an 8.9 one
    ("12.1", "12.8", _floor("12.8", "12.0", "5.0"), None),
    ("8.9", "11.7", _floor("11.7", "8.6", "3.5"), None),
    ("7.0", "13.0", _floor("13.0", "12.1", "7.5"),
     "is older than anything CUDA 13.0 compiles for (oldest sm_75)"),
])
def test_toolkit_bounds(cc: str, cuda: str, floor: ToolkitFloor | None,
                        words: str | None) -> None:
    assert toolkit_excludes(ComputeCapability(cc), CudaVersion(cuda), floor) == words


def _fact(matrix: Matrix, torch: str, variant: str, platform: str) -> ArchFact:
    rel = matrix.release(TorchVersion(torch))
    assert rel is not None
    v = rel.variant(VariantName(variant))
    assert v is not None
    return v.arch_fact(Platform(platform))


@pytest.mark.parametrize(("torch", "variant", "platform", "classes", "rule", "arch"), [
    # 2.7.1 (wheel) and 2.9 (RELEASE.md table, SASS only) confirm the same SASS list; the
    # nearest lists with a confirmed PTX entry, 2.7.1 and 2.11.0 (wheels), both have none
    ("2.8.0", "cu126", "linux-x86_64", ("inferred", "inferred"),
     "adjacent-releases-agree + unchanged-between-releases",
     ("5.0", "6.0", "7.0", "7.5", "8.0", "8.6", "9.0")),
    # 2.9 (release-branch script) and 2.11.0 (RELEASE.md aarch64 table for 2.11) confirm
    # 8.0;9.0 on aarch64
    ("2.10.0", "cu126", "linux-aarch64", ("inferred", "inferred"),
     "adjacent-releases-agree", ("8.0", "9.0")),
    ("2.15.0", "cu130", "linux-aarch64", ("inferred", "inferred"),
     "runtime-table-in-sync + release-ptx-policy", ("8.0", "9.0", "10.0", "11.0", "12.0")),
    ("2.15.0", "cu134", "linux-x86_64", ("inferred", "inferred"),
     "runtime-table-in-sync + release-ptx-policy", LIST),
    # SASS from the RELEASE.md table for 2.14; the table's PTX is the build configuration
    ("2.14.1", "cu126", "linux-aarch64", ("confirmed", "inferred"), "release-ptx-policy",
     ("8.0", "9.0")),
], ids=lambda v: str(v))
def test_what_the_rules_derive_from_the_embedded_data(
        matrix: Matrix, torch: str, variant: str, platform: str, classes: tuple[str, str],
        rule: str, arch: tuple[str, ...]) -> None:
    fact = _fact(matrix, torch, variant, platform)
    assert fact.arch_list is not None
    assert (fact.sass, fact.ptx, fact.rule, tuple(map(str, fact.arch_list))) == (
        *classes, rule, tuple(map(str, arch)))


def test_the_runtime_table_agrees_with_every_confirmed_list_it_covers(matrix: Matrix) -> None:
    """The premise of rule runtime-table-in-sync, checked wherever a confirmed list exists."""
    from torchenv.matrix.loader import load_embedded_documents

    docs, _ = load_embedded_documents()
    compared = 0
    for table in docs["variants.yaml"]["runtime_cc_tables"]:
        for torch in table["releases"]:
            for cuda, rows in table["cuda"].items():
                rel = matrix.release(TorchVersion(torch))
                assert rel is not None
                v = rel.variant(VariantName.of_cuda(CudaVersion(cuda)))
                if v is None:
                    continue
                for plat, row in rows.items():
                    fact = v.arch_fact(Platform(plat))
                    if fact.sass == "confirmed":
                        assert fact.arch_list is not None
                        assert [str(a.without_ptx()) for a in fact.arch_list] == row, \
                            (torch, cuda, plat)
                        compared += 1
    assert compared >= 8


def test_every_inferred_fact_names_a_rule_and_every_confirmed_one_a_primary_source(
        matrix: Matrix) -> None:
    inferred = 0
    for rel in matrix.releases:
        for v in rel.variants:
            for fact in v.arch_facts.values():
                if "inferred" in (fact.sass, fact.ptx):
                    assert fact.rule and all(r in RULES for r in fact.rule.split(" + "))
                    inferred += 1
                if "confirmed" in (fact.sass, fact.ptx):
                    assert any(matrix.sources[s].primary for s in fact.sources)
    assert inferred >= 10


def test_a_build_its_release_manager_calls_unchanged_takes_the_earlier_list(
        matrix: Matrix) -> None:
    """2.6 and 2.7 left the CUDA 11.8 build as 2.5 had it (#138609, #147383): their unknown
    lists take 2.5.1's on both platforms, through 2.6 for 2.7, with every source on the way."""
    for platform in ("linux-x86_64", "win-amd64"):
        base = _fact(matrix, "2.5.1", "cu118", platform)
        assert base.sass == "confirmed"
        for torch, cited in (("2.6.0", "pytorch-issue-138609"),
                             ("2.7.1", "pytorch-issue-147383")):
            fact = _fact(matrix, torch, "cu118", platform)
            assert (fact.arch_list, fact.sass, fact.ptx, fact.rule) == (
                base.arch_list, "inferred", "inferred", "unchanged-by-statement")
            assert cited in fact.sources and set(base.sources) <= set(fact.sources)
    assert "pytorch-issue-138609" in _fact(matrix, "2.7.1", "cu118", "linux-x86_64").sources


def test_a_statement_gives_nothing_where_the_earlier_list_is_unknown() -> None:
    statement = SameAs(TorchVersion("2.5.1"), ("s",))
    assert infer_same_as(ArchFact(None, "unknown", "unknown"), statement) is None
    known = ArchFact(arch("7.0", "8.0+PTX"), "confirmed", "unknown", sources=("w",))
    got = infer_same_as(known, statement)
    assert got is not None and (got.arch_list, got.sass, got.ptx, got.sources) == (
        arch("7.0", "8.0+PTX"), "inferred", "unknown", ("s", "w"))
