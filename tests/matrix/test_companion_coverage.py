"""The companion section of docs/data-coverage.md counts what companions.yaml knows."""

from __future__ import annotations

from torchenv.matrix.companion_coverage import companion_coverage, companion_coverage_markdown
from torchenv.matrix.companions import load_companions
from torchenv.matrix.model import Matrix


def test_every_build_fact_and_every_linux_torch_build_is_counted_once(matrix: Matrix) -> None:
    data = load_companions(matrix=matrix)
    report = companion_coverage(data, matrix)
    xformers = next(p for p in report["packages"] if p["name"] == "xformers")
    assert xformers["builds"] == 14
    # the Windows wheels' pins are open until their metadata is read
    assert xformers["facts"]["coupling"] == {"confirmed": 7, "inferred": 0, "unknown": 7}
    assert xformers["facts"]["arch_list"] == {"confirmed": 0, "inferred": 0, "unknown": 0}
    builds = sum(len(r.builds) for p in data.packages for r in p.releases)
    assert sum(p["builds"] for p in report["packages"]) == builds
    linux = sum(1 for r in matrix.releases for v in r.variants for plat in v.platforms
                if plat.system == "linux")
    assert sum(report["torch"]["cxx11_abi"].values()) == linux
    assert report["torch"]["triton_pins"] == len(data.triton)
    assert "torch 2.15.0: triton pin (its wheel metadata not read)" in report["open"]
    assert "xformers 0.0.35 pypi win-amd64: coupling" in report["open"]
    assert "flash-attn: release assets for torch 2.9 and later" in report["open"]
    assert any(item.startswith("torch 2.5.1: C++11 ABI of ") for item in report["open"])


def test_the_markdown_section_says_what_the_report_says(matrix: Matrix) -> None:
    report = companion_coverage(load_companions(matrix=matrix), matrix)
    text = companion_coverage_markdown(report)
    assert "| xformers | 7 | 14 | 14 / 0 / 0 | 7 / 0 / 7 | 14 / 0 / 0 | – | – | – |" in text
    assert (f"triton pins read for {report['torch']['triton_pins']} of "
            f"{report['torch']['releases']} releases") in text
    assert f"### Companions: still open ({len(report['open'])})" in text
