"""``matrix show --companions`` / ``--package NAME`` and ``matrix check`` over companions.yaml."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from torchenv.cli import main
from torchenv.matrix import companions


def _json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    assert main(["matrix", *args, "--json"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    doc: dict[str, Any] = json.loads(out)
    return doc


def _cited(doc: dict[str, Any]) -> set[str]:
    ids: set[str] = set()
    for p in doc["packages"]:
        ids.update(s for g in p["gpu"] for s in g["sources"])
        ids.update(s for q in p["open_questions"] for s in q["sources"])
        ids.update(s for q in p["instead"] for s in q["sources"])
        for r in p["releases"]:
            for b in r["builds"]:
                ids.update(b["sources"])
                ids.update(s for a in b["assets"] for s in a["sources"])
    ids.update(s for f in doc["cxx11_abi"] for s in f["sources"])
    ids.update(s for t in doc["triton"] for s in t["sources"])
    return ids


def test_show_companions_json_carries_every_package_fact_and_the_sources_it_cites(
        capsys: pytest.CaptureFixture[str]) -> None:
    doc = _json(capsys, "show", "--companions")
    assert [p["name"] for p in doc["packages"]] == ["flash-attn", "xformers", "torchao",
                                                   "pyg-lib", "torch-scatter", "torch-sparse",
                                                   "vllm"]
    flash = doc["packages"][0]
    assert flash["gpu"][0]["min_compute_capability"] == "8.0"
    asset_build = flash["releases"][0]["builds"][1]
    assert asset_build["where"] == "release-asset" and asset_build["coupling"] == "minor"
    assert asset_build["torch"] == ["2.5", "2.6", "2.7", "2.8"]
    assert asset_build["arch_list"] == ["8.0", "9.0", "10.0", "12.0"]
    assert asset_build["evidence"]["arch_list"] == "confirmed"
    assert asset_build["assets"][0]["evidence"] == "unknown"
    pins = {t["torch"]: t["requirement"] for t in doc["triton"]}
    assert pins["2.8.0"] == "triton==3.4.0"
    assert doc["cxx11_abi"][0] == {
        "torch": ">=2.7", "platforms": ["linux-x86_64", "linux-aarch64"], "variants": None,
        "except_variants": [], "value": True, "evidence": "confirmed",
        "sources": ["pytorch-issue-143962", "pytorch-pr-146200", "pytorch-blog-2-6",
                    "pypi-simple-torch"],
        "note": doc["cxx11_abi"][0]["note"]}
    assert set(doc["sources"]) == _cited(doc)
    assert all(s["url"].startswith("https://") for s in doc["sources"].values())


def test_show_package_json_is_that_package_alone(capsys: pytest.CaptureFixture[str]) -> None:
    doc = _json(capsys, "show", "--package", "XFormers")
    assert [p["name"] for p in doc["packages"]] == ["xformers"]
    assert doc["cxx11_abi"] == [] and doc["triton"] == []
    assert set(doc["sources"]) == _cited(doc)
    pinned = {r["version"]: b["torch"] for r in doc["packages"][0]["releases"]
              for b in r["builds"] if b["requires_dist"]}
    assert pinned["0.0.33.post2"] == ["2.9.1"] and pinned["0.0.35"] == ">=2.10"


def test_show_package_text_is_a_table_with_the_gpu_floor(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["matrix", "show", "--package", "flash_attn"]) == 0
    out = capsys.readouterr().out
    assert "flash-attn (import flash_attn)" in out
    assert "8.0 9.0 10.0 12.0" in out and "GPU: CC >= 8.0 [confirmed]" in out
    assert "release-asset (cu12x)" in out
    assert "open: release assets for torch 2.9 and later" in out
    assert "C++11 ABI of torch's Linux builds" not in out  # with the whole data only


def test_show_companions_text_adds_the_abi_and_triton_tables(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["matrix", "show", "--companions"]) == 0
    out = capsys.readouterr().out
    assert "C++11 ABI of torch's Linux builds" in out
    assert "all but cu126" in out
    assert "triton==3.4.0" in out and "vllm (import vllm)" in out


@pytest.mark.parametrize(("args", "message"), [
    (["--package", "flash-attention"], "--package: 'flash-attention' is not a companion "
                                       "package torchenv knows"),
    (["--companions", "--torch", "2.8"], "--torch 2.8 selects torch releases"),
    (["--package", "vllm", "--release", "2.13.0"], "--release 2.13.0 selects torch releases"),
], ids=["unknown package", "with --torch", "with --release"])
def test_bad_companion_requests_exit_2(args: list[str], message: str,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["matrix", "show", *args]) == 2
    out, err = capsys.readouterr()
    assert out == "" and message in err
    if args[0] == "--package" and len(args) == 2:
        assert "one of flash-attn, xformers" in err


def test_matrix_check_validates_the_companion_data(capsys: pytest.CaptureFixture[str]) -> None:
    doc = _json(capsys, "check")
    assert doc["companions"]["packages"] == 7
    assert doc["companions"]["triton"] == 28
    assert doc["companions"]["builds"] >= 30


def test_matrix_check_fails_on_broken_companion_data(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    broken = yaml.safe_load(companions.COMPANIONS_FILE.read_text(encoding="utf-8"))
    broken["triton"][0]["torch"] = "2.99.0"
    broken["triton"][0]["wheel"] = "torch-2.99.0-cp312-cp312-linux_x86_64.whl"
    path = tmp_path / "companions.yaml"
    path.write_text(yaml.safe_dump(broken), encoding="utf-8")
    monkeypatch.setattr(companions, "COMPANIONS_FILE", path)
    assert main(["matrix", "check"]) == 2
    err = capsys.readouterr().err
    assert "matrix/data/companions.yaml: triton[0].torch: torch 2.99.0 is not in the matrix" \
        in err
