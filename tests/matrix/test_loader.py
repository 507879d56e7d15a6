"""The embedded matrix loads, its cache is current, and broken data is reported precisely."""

from __future__ import annotations

import copy
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.matrix.matrix_helpers import overlay_release

from torchenv.errors import MatrixError
from torchenv.matrix.loader import (
    CACHE_FILE,
    DATA_DIR,
    build_cache,
    load_embedded_documents,
    load_matrix,
    merge_overlay,
)
from torchenv.matrix.model import Matrix
from torchenv.matrix.validate import build_matrix
from torchenv.values import Platform, TorchVersion, VariantName

ORIGIN = {
    n: f"matrix/data/{n}"
    for n in ("releases.yaml", "variants.yaml", "cuda.yaml", "rocm.yaml", "gpus.yaml")
}


@pytest.fixture(scope="module")
def documents() -> dict[str, Any]:
    docs, _ = load_embedded_documents()
    return docs


def test_cache_matches_the_yaml() -> None:
    shipped = json.loads(CACHE_FILE.read_text())
    assert shipped == build_cache(), "run 'torchenv matrix check --write-cache'"
    _, used_cache = load_embedded_documents()
    assert used_cache


def test_the_matrix_is_the_one_the_yaml_builds(documents: dict[str, Any]) -> None:
    assert load_matrix(overlay=False) == build_matrix(documents, origin=ORIGIN)


def test_the_data_folder_ships_only_data() -> None:
    assert sorted(f.suffix for f in DATA_DIR.iterdir()) == [".json"] * 2 + [".yaml"] * 6


def _copy_data(tmp_path: Path) -> Path:
    shutil.copytree(DATA_DIR, tmp_path / "data")
    return tmp_path / "data"


def test_a_stale_cache_is_ignored(tmp_path: Path) -> None:
    data = _copy_data(tmp_path)
    releases = yaml.safe_load((data / "releases.yaml").read_text())
    releases["releases"][0]["note"] = "edited"
    (data / "releases.yaml").write_text(yaml.safe_dump(releases))
    _, used_cache = load_embedded_documents(data)
    assert not used_cache
    assert load_matrix(overlay=False, data_dir=data).releases[0].note == "edited"


@pytest.mark.parametrize("spoil", ["missing", "not-json", "not-a-mapping", "no-documents"])
def test_a_cache_that_cannot_be_used_is_a_miss_not_an_error(spoil: str, tmp_path: Path,
                                                            matrix: Matrix) -> None:
    data = _copy_data(tmp_path)
    cache = data / CACHE_FILE.name
    if spoil == "missing":
        cache.unlink()
    elif spoil == "not-json":
        cache.write_bytes(cache.read_bytes()[:1000])
    elif spoil == "not-a-mapping":
        cache.write_text("[]")
    else:
        cache.write_text(json.dumps({"digest": json.loads(cache.read_text())["digest"]}))
    assert load_embedded_documents(data)[1] is False
    assert load_matrix(overlay=False, data_dir=data).releases == matrix.releases


def test_every_patch_release_from_2_0_to_2_15_is_present(matrix: Matrix) -> None:
    versions = {str(r.torch) for r in matrix.releases}
    expected = {
        "2.0.0",
        "2.0.1",
        "2.1.0",
        "2.1.1",
        "2.1.2",
        "2.2.0",
        "2.2.1",
        "2.2.2",
        "2.3.0",
        "2.3.1",
        "2.4.0",
        "2.4.1",
        "2.5.0",
        "2.5.1",
        "2.6.0",
        "2.7.0",
        "2.7.1",
        "2.8.0",
        "2.9.0",
        "2.9.1",
        "2.10.0",
        "2.11.0",
        "2.12.0",
        "2.12.1",
        "2.13.0",
        "2.14.0",
        "2.14.1",
        "2.15.0",
    }
    assert expected <= versions


def test_releases_are_newest_first(matrix: Matrix) -> None:
    keys = [r.torch for r in matrix.releases]
    assert keys == sorted(keys, reverse=True)


def test_every_cited_source_is_defined(matrix: Matrix) -> None:
    for r in matrix.releases:
        for sid in r.sources + tuple(s for v in r.variants for s in v.sources):
            assert sid in matrix.sources, (r.torch, sid)


def _expect_error(docs: dict[str, Any], message: str) -> None:
    with pytest.raises(MatrixError) as info:
        build_matrix(docs, origin=ORIGIN)
    assert message in info.value.message, info.value.message


def test_a_bad_arch_string_names_file_and_key_path(documents: dict[str, Any]) -> None:
    docs = copy.deepcopy(documents)
    sets = docs["variants.yaml"]["variant_sets"]
    i, j = next(
        (i, j)
        for i, s in enumerate(sets)
        for j, v in enumerate(s["variants"])
        if isinstance(v.get("arch_list"), list)
    )
    sets[i]["variants"][j]["arch_list"][0] = "8.6x"
    _expect_error(
        docs,
        f"matrix/data/variants.yaml: variant_sets[{i}].variants[{j}]"
        f".arch_list[0]: '8.6x' is not a compute capability",
    )


@pytest.mark.parametrize(("file", "edit", "message"), [
    ("gpus.yaml", lambda d: d["nvidia"][0].update(compute_capability="sm_86"),
     "nvidia[0].compute_capability: 'sm_86' is written '8.6' in the matrix data"),
    ("cuda.yaml", lambda d: d["toolkit_floors"][0].update(cuda="11.00"),
     "toolkit_floors[0].cuda: '11.00' is written '11.0' in the matrix data"),
], ids=["capability", "cuda"])
def test_a_fact_is_written_as_its_value_spells_it(documents: dict[str, Any], file: str,
                                                  edit: Any, message: str) -> None:
    docs = copy.deepcopy(documents)
    edit(docs[file])
    _expect_error(docs, message)


def test_a_variant_set_pointing_at_a_missing_release_is_rejected(documents: dict[str, Any]) -> None:
    docs = copy.deepcopy(documents)
    docs["variants.yaml"]["variant_sets"][0]["releases"].append("9.9.9")
    _expect_error(docs, "torch 9.9.9 is not in releases.yaml")


def test_duplicate_releases_are_rejected(documents: dict[str, Any]) -> None:
    docs = copy.deepcopy(documents)
    rel = docs["releases.yaml"]["releases"]
    rel.insert(1, copy.deepcopy(rel[0]))
    _expect_error(docs, "releases[1].torch")


def test_unsorted_patch_dates_are_rejected(documents: dict[str, Any]) -> None:
    docs = copy.deepcopy(documents)
    rel = docs["releases.yaml"]["releases"]
    i = next(i for i, r in enumerate(rel) if r["torch"] == "2.7.0")
    rel[i]["released"] = "2030-01-01"
    _expect_error(docs, f"releases[{i}].released")


def test_unknown_variant_names_are_rejected(documents: dict[str, Any]) -> None:
    docs = copy.deepcopy(documents)
    docs["variants.yaml"]["variant_sets"][0]["variants"][0]["name"] = "cuda12"
    _expect_error(docs, "'cuda12' is not a variant name")


def test_an_undefined_source_is_rejected(documents: dict[str, Any]) -> None:
    docs = copy.deepcopy(documents)
    docs["releases.yaml"]["releases"][0]["sources"] = ["no-such-source"]
    _expect_error(docs, "source 'no-such-source' is not defined")


def test_a_fact_without_sources_is_rejected(documents: dict[str, Any]) -> None:
    docs = copy.deepcopy(documents)
    del docs["gpus.yaml"]["nvidia"][0]["sources"]
    _expect_error(docs, "matrix/data/gpus.yaml: nvidia[0]: missing 'sources'")


def test_wrong_schema_version_is_rejected(documents: dict[str, Any]) -> None:
    docs = copy.deepcopy(documents)
    docs["cuda.yaml"]["schema_version"] = 2
    _expect_error(docs, "matrix/data/cuda.yaml: schema_version: is 2")


def test_an_overlay_adds_releases(tmp_path: Path, matrix: Matrix) -> None:
    overlay = tmp_path / "overlay.yaml"
    overlay.write_text(
        yaml.safe_dump({"schema_version": 1, "releases": [overlay_release(matrix)]})
    )
    merged = load_matrix(overlay=overlay)
    assert merged.overlay_error is None
    assert str(merged.releases[0].torch) == "2.99.0"
    assert len(merged.releases) == len(matrix.releases) + 1


def _write_overlay(path: Path, matrix: Matrix, torch: str = "2.99.0") -> Path:
    path.write_text(yaml.safe_dump({"schema_version": 1,
                                    "releases": [overlay_release(matrix, torch)]}))
    return path


def test_an_edited_overlay_is_read_again(tmp_path: Path, matrix: Matrix) -> None:
    overlay = _write_overlay(tmp_path / "overlay.yaml", matrix, "2.99.0")
    assert str(load_matrix(overlay=overlay).releases[0].torch) == "2.99.0"
    _write_overlay(overlay, matrix, "2.98.0")  # same length, other content
    assert str(load_matrix(overlay=overlay).releases[0].torch) == "2.98.0"


def test_an_overlay_is_merged_with_the_embedded_data_it_is_loaded_with(
        tmp_path: Path, matrix: Matrix) -> None:
    overlay = _write_overlay(tmp_path / "overlay.yaml", matrix)
    data = _copy_data(tmp_path)
    releases = yaml.safe_load((data / "releases.yaml").read_text())
    releases["releases"][0]["note"] = "edited"
    (data / "releases.yaml").write_text(yaml.safe_dump(releases))
    edited = load_matrix(overlay=overlay, data_dir=data)
    assert [r.note for r in edited.releases[:2]] == [None, "edited"]  # the overlay's, then ours
    assert edited.overlay == str(overlay) and edited.overlay_error is None


def test_an_overlay_replaces_a_release_by_version(documents: dict[str, Any]) -> None:
    replacement = copy.deepcopy(documents["releases.yaml"]["releases"][3])
    replacement["note"] = "replaced"
    merged = merge_overlay(documents, {"releases": [replacement]})
    notes = [
        r.get("note")
        for r in merged["releases.yaml"]["releases"]
        if r["torch"] == replacement["torch"]
    ]
    assert notes == ["replaced"]


def test_a_broken_overlay_is_reported_and_ignored(tmp_path: Path, matrix: Matrix) -> None:
    overlay = tmp_path / "overlay.yaml"
    bad = overlay_release(matrix)
    bad["released"] = "yesterday"
    overlay.write_text(yaml.safe_dump({"releases": [bad]}))
    for _ in range(2):  # every time it is loaded
        loaded = load_matrix(overlay=overlay)
        assert (
            loaded.overlay_error is not None
            and "'yesterday' is not an ISO date" in loaded.overlay_error
        )
        assert [r.torch for r in loaded.releases] == [r.torch for r in matrix.releases]


def test_an_overlay_that_is_not_yaml_is_ignored(tmp_path: Path, matrix: Matrix) -> None:
    overlay = tmp_path / "overlay.yaml"
    overlay.write_text("releases: [unclosed\n")
    loaded = load_matrix(overlay=overlay)
    assert loaded.overlay_error is not None and "not valid YAML" in loaded.overlay_error
    assert len(loaded.releases) == len(matrix.releases)


def _variant_entry(docs: dict[str, Any], torch: str, name: str) -> dict[str, Any]:
    for s in docs["variants.yaml"]["variant_sets"]:
        if torch in s["releases"]:
            for v in s["variants"]:
                if v["name"] == name:
                    return v  # type: ignore[no-any-return]
    raise AssertionError(f"{torch} {name} not in the data")


def test_a_written_list_is_confirmed_by_the_variants_sources(matrix: Matrix) -> None:
    rel = matrix.release(TorchVersion("2.13.0"))
    assert rel is not None and rel.variant(VariantName("cu126")) is not None
    fact = rel.variant(VariantName("cu126")).arch_fact(Platform("linux-x86_64"))  # type: ignore[union-attr]
    assert (fact.sass, fact.ptx, fact.rule) == ("confirmed", "confirmed", None)
    assert "pytorch-build-env-setup-v2-13-0" in fact.sources
    # arch_evidence gives the Windows list its own sources (the RELEASE.md table)
    windows = rel.variant(VariantName("cu126")).arch_fact(Platform("win-amd64"))  # type: ignore[union-attr]
    assert (windows.sass, windows.ptx) == ("confirmed", "confirmed")
    assert "pytorch-pr-187075" in windows.sources
    assert "pytorch-build-env-setup-v2-13-0" not in windows.sources
    unknown = matrix.release(TorchVersion("2.8.0")).variant(VariantName("cu129")).arch_fact(  # type: ignore[union-attr]
        Platform("win-amd64"))
    assert (unknown.arch_list, unknown.sass, unknown.ptx) == (None, "unknown", "unknown")


def test_arch_evidence_can_confirm_sass_and_leave_ptx_unknown(documents: dict[str, Any]) -> None:
    docs = copy.deepcopy(documents)
    v = _variant_entry(docs, "2.13.0", "cu130")
    v["arch_evidence"] = {"linux-x86_64": {"sass": "confirmed", "ptx": "unknown"}}
    rel = build_matrix(docs, origin=ORIGIN).release(TorchVersion("2.13.0"))
    assert rel is not None
    fact = rel.variant(VariantName("cu130")).arch_fact(Platform("linux-x86_64"))  # type: ignore[union-attr]
    # the release policy of 2.13.0 then settles the PTX entry by rule
    assert (fact.sass, fact.ptx, fact.rule) == ("confirmed", "inferred", "release-ptx-policy")


def test_inferred_cannot_be_written_in_the_data(documents: dict[str, Any]) -> None:
    docs = copy.deepcopy(documents)
    v = _variant_entry(docs, "2.13.0", "cu130")
    v["arch_evidence"] = {"linux-x86_64": {"sass": "inferred"}}
    _expect_error(docs, "'inferred' is set by the inference rules, not written in the data")


def test_a_confirmed_list_needs_a_primary_source(documents: dict[str, Any]) -> None:
    docs = copy.deepcopy(documents)
    v = _variant_entry(docs, "2.13.0", "cu130")
    v["sources"] = ["pytorch-release-md"]  # a stored copy of documentation: primary: false
    _expect_error(docs, "index entry is 'confirmed' but every source it cites is a copy")
    v["index"] = "unknown"
    _expect_error(docs, "arch list is 'confirmed' without a primary source")


def test_a_partial_list_reads_with_its_own_sources(matrix: Matrix) -> None:
    """2.8.0 cu129: no list, but the release's maintainers say Volta is in it and nothing older
    than Volta is."""
    v = matrix.release(TorchVersion("2.8.0")).variant(VariantName("cu129"))  # type: ignore[union-attr]
    assert v is not None
    linux = v.arch_fact(Platform("linux-x86_64"))
    assert (linux.arch_list, linux.sass, linux.known) == (None, "unknown", False)
    assert linux.partial is not None
    assert str(linux.partial.oldest) == "7.0"
    assert [str(e) for e in linux.partial.includes] == ["7.0"]
    assert "pytorch-issue-160269" in linux.partial.sources
    aarch64 = v.arch_fact(Platform("linux-aarch64")).partial
    assert aarch64 is not None and aarch64.includes == () and str(aarch64.oldest) == "7.0"
    assert linux.to_json()["partial"]["oldest"] == "7.0"


def _partial(docs: dict[str, Any], partial: dict[str, Any], arch: Any = "unknown") -> None:
    v = _variant_entry(docs, "2.8.0", "cu129")
    v["arch_list"] = arch
    v["arch_evidence"] = {"linux-x86_64": {"sass": "unknown" if arch == "unknown" else "confirmed",
                                           "ptx": "unknown" if arch == "unknown" else "confirmed",
                                           "partial": partial}}


@pytest.mark.parametrize(("partial", "arch", "message"), [
    ({"oldest": "7.0"}, "unknown", "missing 'sources'"),
    ({"sources": ["pytorch-issue-160269"]}, "unknown", "says nothing: give 'oldest', 'includes'"),
    ({"oldest": "7.5", "includes": ["7.0"], "sources": ["pytorch-issue-160269"]}, "unknown",
     "names a target older than 'oldest' (7.5)"),
    ({"oldest": "sm_70", "sources": ["pytorch-issue-160269"]}, "unknown", "sm_70"),
    ({"newest": "7.0", "sources": ["pytorch-issue-160269"]}, "unknown",
     "is not a field of a partial list"),
    ({"oldest": "7.0", "sources": ["pytorch-release-md"]}, "unknown",
     "partial arch list without a primary source"),
    ({"oldest": "7.0", "sources": ["pytorch-issue-160269"]}, ["7.0", "8.0"],
     "only an unknown arch list can have a partial one"),
])
def test_a_bad_partial_list_is_named(documents: dict[str, Any], partial: dict[str, Any],
                                     arch: Any, message: str) -> None:
    docs = copy.deepcopy(documents)
    _partial(docs, partial, arch)
    _expect_error(docs, message)


@pytest.mark.parametrize(("same_as", "message"), [
    ({"torch": "2.5.1"}, "missing 'sources'"),
    ({"torch": "2.7.1", "sources": ["pytorch-issue-147383"]}, "is not an older release"),
    ({"torch": "1.99.0", "sources": ["pytorch-issue-147383"]}, "is not an older release"),
    ({"torch": "2.0.0", "sources": ["pytorch-issue-147383"]}, "has no cu118 build"),
    ({"torch": "2.5.1", "sources": ["pytorch-release-md"]},
     "same_as: cites no primary source"),
    ({"torch": "2.5.1", "sources": ["pytorch-issue-147383"], "list": ["3.7"]},
     "is not a field of same_as"),
])
def test_a_bad_same_as_is_named(documents: dict[str, Any], same_as: dict[str, Any],
                                message: str) -> None:
    docs = copy.deepcopy(documents)
    _variant_entry(docs, "2.6.0", "cu118")["same_as"] = same_as
    if same_as.get("torch") == "2.0.0":  # a release with CUDA builds, none of them 11.8
        _variant_entry(docs, "2.6.0", "cu118")["same_as"]["torch"] = _no_cu118(docs)
    _expect_error(docs, message)


def _no_cu118(docs: dict[str, Any]) -> str:
    for s in docs["variants.yaml"]["variant_sets"]:
        if not any(v["name"] == "cu118" for v in s["variants"]):
            for torch in s["releases"]:
                if TorchVersion(torch) < TorchVersion("2.6.0"):
                    return str(torch)
    raise AssertionError("every release before 2.6 has cu118")


@pytest.mark.parametrize(("partial", "kept"), [
    ({"oldest": "7.0"}, False),  # the rule's 5.0-9.0 has 5.0 and 6.0 below it
    ({"includes": ["8.9"]}, False),  # not in 5.0-9.0
    ({"oldest": "5.0", "includes": ["6.0"]}, True),
])
def test_a_rule_never_gives_a_list_that_contradicts_the_partial_one(
        documents: dict[str, Any], partial: dict[str, Any], kept: bool) -> None:
    """2.8.0 cu126 on Linux takes 5.0-9.0 from its neighbours (adjacent-releases-agree) unless
    what a source says of it disagrees; either way what the source says stays with it."""
    docs = copy.deepcopy(documents)
    _variant_entry(docs, "2.8.0", "cu126")["arch_evidence"] = {"linux-x86_64": {
        "sass": "unknown", "ptx": "unknown",
        "partial": {**partial, "sources": ["pytorch-issue-160269"]}}}
    rel = build_matrix(docs, origin=ORIGIN).release(TorchVersion("2.8.0"))
    assert rel is not None
    fact = rel.variant(VariantName("cu126")).arch_fact(Platform("linux-x86_64"))  # type: ignore[union-attr]
    assert fact.partial is not None and fact.partial.sources == ("pytorch-issue-160269",)
    assert fact.known is kept, fact
    if kept:
        assert fact.rule is not None and "adjacent-releases-agree" in fact.rule


def test_the_older_status_field_still_reads_as_index_evidence(documents: dict[str, Any]) -> None:
    docs = copy.deepcopy(documents)
    # cu129 of 2.13.0: no index rule reaches it (no row names it, and it is a versioned build)
    v = _variant_entry(docs, "2.13.0", "cu129")
    del v["index"]
    v["status"] = "unverified"
    rel = build_matrix(docs, origin=ORIGIN).release(TorchVersion("2.13.0"))
    assert rel is not None and rel.variant(VariantName("cu129")).index == "unknown"  # type: ignore[union-attr]


def test_the_coverage_report_in_docs_is_current(matrix: Matrix) -> None:
    from torchenv.cli.matrix import COVERAGE_COMMAND, coverage_report
    from torchenv.matrix.coverage import coverage, coverage_markdown

    _, text = coverage_report(COVERAGE_COMMAND)
    assert text.startswith(coverage_markdown(coverage(matrix), generated_by=COVERAGE_COMMAND))
    committed = Path(__file__).parents[2] / "docs" / "data-coverage.md"
    assert committed.read_text(encoding="utf-8") == text, f"run '{COVERAGE_COMMAND}'"


def test_coverage_counts_every_fact_once(matrix: Matrix) -> None:
    from torchenv.matrix.coverage import coverage

    report = coverage(matrix)
    facts = sum(len(v.arch_facts) for r in matrix.releases for v in r.variants)
    assert sum(report["totals"]["sass"].values()) == facts
    assert report["totals"]["sass"]["inferred"] >= 5
    assert report["totals"]["ptx"]["inferred"] >= 10
    assert "2.8.0 cu129 linux-x86_64: arch list" in report["open"]
    assert "2.9.0 cu130 linux-x86_64: PTX entry" in report["open"]


def test_an_overlay_merge_keeps_the_order_of_last_mention() -> None:
    documents = {"gpus.yaml": {"nvidia": [{"name": "A", "v": 1}, {"name": "B", "v": 1},
                                          {"name": "C", "v": 1}]}}
    overlay = {"nvidia": [{"name": "B", "v": 2}, {"name": "D", "v": 2}, {"name": "B", "v": 3}]}
    merged = merge_overlay(documents, overlay)["gpus.yaml"]["nvidia"]
    assert merged == [{"name": "A", "v": 1}, {"name": "C", "v": 1}, {"name": "D", "v": 2},
                      {"name": "B", "v": 3}]
    assert documents["gpus.yaml"]["nvidia"][1] == {"name": "B", "v": 1}  # input untouched


def test_an_overlay_merge_looks_each_entry_up_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """20,000 overlay entries against 20,000 embedded ones: each entry's identity is taken
    once (a merge comparing every pair took minutes)."""
    import torchenv.matrix.loader as loader

    calls = 0
    identity = loader._identity

    def counted(entry: Any, id_fields: tuple[str, ...]) -> tuple[Any, ...]:
        nonlocal calls
        calls += 1
        return identity(entry, id_fields)

    monkeypatch.setattr(loader, "_identity", counted)
    documents = {"gpus.yaml": {"nvidia": [{"name": f"gpu {i}"} for i in range(20_000)]}}
    overlay = {"nvidia": [{"name": f"gpu {i}", "new": True} for i in range(10_000, 30_000)]}
    merged = merge_overlay(documents, overlay)["gpus.yaml"]["nvidia"]
    assert len(merged) == 30_000 and merged[-1] == {"name": "gpu 29999", "new": True}
    assert calls == 40_000


def _rocm_entry(docs: dict[str, Any], name: str, torch: str | None = None) -> dict[str, Any]:
    entry: dict[str, Any] = next(
        e for e in docs["rocm.yaml"]["rocm_variants"]
        if e["name"] == name and (torch in e.get("torch", []) if torch else "torch" not in e))
    return entry


@pytest.mark.parametrize(("change", "words"), [
    ({"evidence": None}, "evidence: expected a string, got null"),
    ({"evidence": "likely"}, "'likely' is not one of confirmed, inferred, unknown"),
    ({"observed_on": ["2.5.1"]}, "names a release the entry is not for"),
    ({"may_have": ["gfx90a"]}, "names a target that gfx lists as there"),
], ids=["evidence-missing", "evidence-bad", "observed-elsewhere", "may-have-listed"])
def test_a_rocm_list_says_how_it_is_known_and_consistently(
        documents: dict[str, Any], change: dict[str, Any], words: str) -> None:
    docs = copy.deepcopy(documents)
    entry = _rocm_entry(docs, "rocm6.3")
    entry["torch"] = ["2.7.1"]
    for key, value in change.items():
        if value is None:
            entry.pop(key, None)
        else:
            entry[key] = value
    with pytest.raises(MatrixError, match=re.escape(words)):
        build_matrix(docs, origin=ORIGIN)


def test_a_rocm_list_is_confirmed_for_the_releases_whose_wheel_was_seen(
        matrix: Matrix) -> None:
    targets = matrix.rocm_targets(VariantName("rocm6.3"), TorchVersion("2.7.1"))
    assert targets is not None
    assert targets.evidence_for(TorchVersion("2.7.1")) == "confirmed"
    assert targets.evidence_for(TorchVersion("2.8.0")) == "inferred"


@pytest.mark.parametrize(("change", "words"), [
    ({"package": "torchtext"}, "companion_statements[0].package: 'torchtext' is not one of "
                               "torchvision, torchaudio"),
    ({"statement": "  "}, "companion_statements[0].statement: empty: quote the maintainers'"),
    ({"torch": "2.11+"}, "companion_statements[0].torch"),
    ({"released": "March 2026"}, "companion_statements[0].released"),
    ({"sources": ["pytorch-release-md"]}, "companion_statements[0].sources: cites no primary "
                                          "source"),
], ids=["package", "statement", "torch", "released", "copy-only"])
def test_a_companion_statement_names_a_companion_quotes_its_words_and_a_primary_source(
        documents: dict[str, Any], change: dict[str, Any], words: str) -> None:
    docs = copy.deepcopy(documents)
    docs["releases.yaml"]["companion_statements"][0].update(change)
    with pytest.raises(MatrixError, match=re.escape(words)):
        build_matrix(docs, origin=ORIGIN)


def test_an_index_row_names_releases_of_the_matrix_and_a_primary_source(
        documents: dict[str, Any]) -> None:
    docs = copy.deepcopy(documents)
    docs["variants.yaml"]["index_rows"][0]["releases"] = ["1.12.0"]
    with pytest.raises(MatrixError, match=re.escape("torch 1.12.0 is not in releases.yaml")):
        build_matrix(docs, origin=ORIGIN)
    docs = copy.deepcopy(documents)
    docs["variants.yaml"]["index_rows"][0]["sources"] = ["pytorch-release-md"]
    with pytest.raises(MatrixError, match=re.escape("index_rows[0].sources: cites no primary")):
        build_matrix(docs, origin=ORIGIN)


def test_a_statement_pairs_only_what_the_data_does_not_confirm(
        documents: dict[str, Any]) -> None:
    docs = copy.deepcopy(documents)
    docs["releases.yaml"]["companion_statements"] = []
    bare = build_matrix(docs, origin=ORIGIN).release(TorchVersion("2.13.0"))
    assert bare is not None and bare.torchaudio is None
    assert bare.pairing("torchaudio").evidence == "none"
    full = build_matrix(documents, origin=ORIGIN)
    rel = full.release(TorchVersion("2.13.0"))
    assert rel is not None and str(rel.torchaudio) == "2.11.0"
    # the newest stated torchaudio out by a release's own date: 2.11.1 came out with 2.15.0
    newest = full.release(TorchVersion("2.15.0"))
    assert newest is not None and str(newest.torchaudio) == "2.11.1"
    # torch 2.11.0's own pairing (2.11.0) is confirmed and kept, though 2.11.1 is newer
    kept = full.release(TorchVersion("2.11.0"))
    assert kept is not None and str(kept.torchaudio) == "2.11.0"
    assert kept.pairing("torchaudio").evidence == "confirmed"


def test_the_coverage_report_lists_the_open_questions_and_no_inferred_entry_as_open(
        matrix: Matrix) -> None:
    from torchenv.matrix.coverage import coverage, coverage_markdown

    report = coverage(matrix)
    assert "2.15.0 cu134: index entry unknown" in report["open"]
    assert not any("cpu: index entry" in item for item in report["open"])  # inferred by rule
    text = coverage_markdown(report)
    assert f"## Open questions ({len(matrix.open_questions)})" in text
    assert "### A Windows cu129 build of 2.9.0" in text
    assert len(matrix.open_questions) >= 5
