"""`torchenv matrix ci` over the real embedded matrix: exact outputs, parsed back, counted.

Regenerate the golden files after a deliberate change with ``TORCHENV_REGEN_GOLDEN=1`` and review
the diff against ``src/torchenv/matrix/data/*.yaml`` before committing.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from torchenv.cli import main
from torchenv.matrix.loader import DATA_DIR

GOLDEN = Path(__file__).parent / "golden"
REGEN = os.environ.get("TORCHENV_REGEN_GOLDEN") == "1"

CASES: dict[str, list[str]] = {
    "github_torch27_py312_cpu.json": [
        "--torch", "==2.7.*", "--python", "3.12", "--variants", "cpu", "--format", "github",
        "--pretty"],
    "gitlab_cuda_linux_latest_patch.yaml": [
        "--torch", ">=2.6", "--python", "3.12", "--accelerators", "cuda", "--platforms",
        "linux-x86_64", "--strategy", "latest-patch", "--format", "gitlab"],
    "json_edges_cpu.json": [
        "--python", "3.10,3.13t", "--variants", "cpu", "--os", "ubuntu-latest,macos",
        "--strategy", "edges", "--format", "json"],
    "github_max_rows_runner.json": [
        "--torch", ">=2.0", "--max-rows", "10", "--runner", "linux-x86_64=gpu-box",
        "--format", "github"],
    "json_free_threaded_cpu_xpu.json": [
        "--torch", ">=2.12", "--python", ">=3.13", "--free-threaded", "--variants", "cpu,xpu",
        "--platforms", "linux-x86_64,win-amd64", "--json"],
}


@pytest.fixture(autouse=True)
def _no_overlay(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TORCHENV_NO_OVERLAY", "1")
    monkeypatch.delenv("TORCHENV_INDEX_BASE", raising=False)


def _run(capsys: pytest.CaptureFixture[str], args: list[str]) -> str:
    code = main(["matrix", "ci", *args])
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


@pytest.mark.parametrize("name", sorted(CASES), ids=sorted(CASES))
def test_golden(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    out = _run(capsys, CASES[name])
    path = GOLDEN / name
    if REGEN:
        path.write_text(out, encoding="utf-8")
    assert out == path.read_text(encoding="utf-8")
    again = _run(capsys, CASES[name])
    assert again == out  # stable between runs


def _rows(name: str) -> list[dict[str, Any]]:
    text = (GOLDEN / name).read_text(encoding="utf-8")
    if name.endswith(".yaml"):
        doc = yaml.safe_load(text)
        return list(doc[".torchenv-matrix"]["parallel"]["matrix"])
    doc = json.loads(text)
    return list(doc["include"] if isinstance(doc, dict) else doc)


def test_golden_files_parse_back() -> None:
    for name in CASES:
        rows = _rows(name)
        assert rows, name
        if name.endswith(".yaml"):
            assert all(isinstance(v, str) for r in rows for v in r.values())
            assert {r["VARIANT"][:2] for r in rows} == {"cu"}
            assert {r["PLATFORM"] for r in rows} == {"linux-x86_64"}
        else:
            keys = {"torch", "torchvision", "torchaudio", "python", "variant", "os", "platform",
                    "install", "index_url", "name"}
            assert all(set(r) == keys for r in rows)
            assert all(r["install"].startswith(f"pip install torch=={r['torch']}") for r in rows)


def test_golden_github_pretty_content() -> None:
    rows = _rows("github_torch27_py312_cpu.json")
    assert {r["torch"] for r in rows} == {"2.7.0", "2.7.1"}
    mac = [r for r in rows if r["platform"] == "macos-arm64"]
    assert mac
    assert all(r["index_url"] is None and r["os"] == "macos-latest" for r in mac)
    linux = [r for r in rows if r["platform"] == "linux-x86_64"]
    assert all(r["install"].endswith("--index-url https://download.pytorch.org/whl/cpu")
               for r in linux)


def test_golden_runner_override_and_limit() -> None:
    rows = _rows("github_max_rows_runner.json")
    assert len(rows) == 10
    assert all(r["os"] == "gpu-box" for r in rows if r["platform"] == "linux-x86_64")


def test_golden_free_threaded_only_when_asked() -> None:
    rows = _rows("json_free_threaded_cpu_xpu.json")
    assert any(r["python"].endswith("t") for r in rows)
    edges = _rows("json_edges_cpu.json")
    assert {r["python"] for r in edges} <= {"3.10", "3.13t"}
    # edges: per (python, platform) only the oldest and newest torch remain
    by_key: dict[tuple[str, str], set[str]] = {}
    for r in edges:
        by_key.setdefault((r["python"], r["platform"]), set()).add(r["torch"])
    assert all(len(v) <= 2 for v in by_key.values())


# --- counts computed independently from the raw YAML ------------------------------------------


def _raw_rows(torch_min: tuple[int, ...], free_threaded: bool) -> set[tuple[str, str, str, str]]:
    releases = yaml.safe_load((DATA_DIR / "releases.yaml").read_text())["releases"]
    sets = yaml.safe_load((DATA_DIR / "variants.yaml").read_text())["variant_sets"]
    out: set[tuple[str, str, str, str]] = set()
    for rel in releases:
        version = rel["torch"]
        if tuple(int(p) for p in version.split(".")) < torch_min:
            continue
        variants = [v for s in sets if version in s["releases"] for v in s["variants"]]
        py = rel.get("python") or {}
        for v in variants:
            for plat in v["platforms"]:
                tags = (v.get("python") or {}).get(plat, py.get(plat, []))
                out.update((version, v["name"], plat, t) for t in tags)
        for plat, default in (rel.get("pypi_default") or {}).items():
            if not any(v["name"] == default and plat in v["platforms"] for v in variants):
                out.update((version, default, plat, t) for t in py.get(plat, []))
    return {r for r in out if free_threaded or not r[3].endswith("t")}


@pytest.mark.parametrize(("spec", "floor"), [(">=2.5", (2, 5)), (">=1.0", (1, 0))],
                         ids=["recent", "all"])
def test_row_count_matches_yaml(spec: str, floor: tuple[int, ...],
                                capsys: pytest.CaptureFixture[str]) -> None:
    for ft in (False, True):
        args = ["--torch", spec, "--json"] + (["--free-threaded"] if ft else [])
        rows = json.loads(_run(capsys, args))
        got = {(r["torch"], r["variant"], r["platform"], r["python"]) for r in rows}
        assert len(got) == len(rows)
        assert got == _raw_rows(floor, ft)


@pytest.mark.parametrize(("args", "code"), [
    (["--torch", ">=>2"], 2), (["--python", "3.x"], 2), (["--variants", "cuda12"], 2),
    (["--platforms", "solaris"], 2), (["--runner", "linux=foo"], 2), (["--max-rows", "0"], 2),
    (["--json", "--format", "gitlab"], 2), (["--torch", "==0.1"], 3),
], ids=["torch-spec", "python", "variant", "platform", "runner", "max-rows", "json-conflict",
        "nothing-matches"])
def test_bad_input_exit_codes(args: list[str], code: int,
                              capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["matrix", "ci", *args]) == code
    out, err = capsys.readouterr()
    assert "error:" in err
    if "--json" in args:  # a failure under --json is still one JSON document
        assert json.loads(out)["exit_code"] == code
    else:
        assert out == ""
