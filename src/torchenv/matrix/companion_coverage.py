"""How much of the companion data is known: its facts per evidence class, and what is open.

``torchenv matrix coverage`` adds this section to docs/data-coverage.md (and the key
``companions`` to its JSON). Every number is counted from the loaded data, against the torch
releases of the matrix: a torch release whose triton pin was not read, or a Linux torch build
whose C++11 ABI no source states, is listed as open.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from torchenv.matrix.companions import BUILD_FACTS, Companions
from torchenv.matrix.model import EVIDENCE_CLASSES, Matrix

__all__ = ["companion_coverage", "companion_coverage_markdown"]


def companion_coverage(data: Companions, matrix: Matrix) -> dict[str, Any]:
    """Per package: releases, builds, and each build fact's evidence classes; for torch: which
    releases have their triton pin and which Linux builds their C++11 ABI; and the open list."""
    packages = []
    open_items: list[str] = []
    for pkg in data.packages:
        counts: Counter[tuple[str, str]] = Counter()
        builds = 0
        for crel in pkg.releases:
            for b in crel.builds:
                builds += 1
                for name in BUILD_FACTS:
                    if name in b.evidence:
                        counts[name, b.evidence[name]] += 1
                        if b.evidence[name] == "unknown":
                            open_items.append(f"{pkg.name} {crel.version} {b.where} "
                                              f"{' '.join(map(str, b.platforms))}: {name}")
        packages.append({
            "name": pkg.name,
            "releases": len(pkg.releases),
            "builds": builds,
            "facts": {f: {c: counts[f, c] for c in EVIDENCE_CLASSES} for f in BUILD_FACTS},
            "gpu_floor": [g.evidence for g in pkg.gpu],
        })
        open_items += [f"{pkg.name}: {q.topic}" for q in pkg.open_questions]
    abi: Counter[str] = Counter()
    no_triton = []
    for rel in matrix.releases:
        if data.triton_pin(rel.torch) is None:
            no_triton.append(str(rel.torch))
        unknown_abi = []
        for v in rel.variants:
            for plat in v.platforms:
                if plat.system != "linux":
                    continue
                fact = data.abi_fact(rel.torch, plat, v.name)
                cls = "unknown" if fact is None else fact.evidence
                abi[cls] += 1
                if cls == "unknown":
                    unknown_abi.append(f"{v.name} {plat}")
        if unknown_abi:
            open_items.append(f"torch {rel.torch}: C++11 ABI of {len(unknown_abi)} Linux "
                              f"build(s) ({', '.join(unknown_abi[:3])}"
                              f"{' …' if len(unknown_abi) > 3 else ''})")
    open_items += [f"torch {t}: triton pin (its wheel metadata not read)" for t in no_triton]
    return {
        "matrix_version": data.matrix_version,
        "packages": packages,
        "torch": {
            "releases": len(matrix.releases),
            "triton_pins": len(matrix.releases) - len(no_triton),
            "cxx11_abi": {c: abi[c] for c in EVIDENCE_CLASSES},
        },
        "open": open_items,
    }


def _cell(counts: dict[str, int]) -> str:
    if not any(counts.values()):
        return "–"
    return " / ".join(str(counts[c]) for c in EVIDENCE_CLASSES)


def companion_coverage_markdown(report: dict[str, Any]) -> str:
    """The section of docs/data-coverage.md; every number comes from ``report``."""
    torch = report["torch"]
    lines = [
        f"## Companions (companions.yaml, {report['matrix_version']})",
        "",
        "Builds of the packages compiled against torch (docs/companions.md), each fact counted",
        "as confirmed / inferred / unknown; – where no build states it.",
        "",
        "| package | releases | builds | " + " | ".join(BUILD_FACTS) + " | GPU floor |",
        "|---|---|---|" + "---|" * len(BUILD_FACTS) + "---|",
    ]
    for p in report["packages"]:
        cells = " | ".join(_cell(p["facts"][f]) for f in BUILD_FACTS)
        floor = ", ".join(p["gpu_floor"]) or "–"
        lines.append(f"| {p['name']} | {p['releases']} | {p['builds']} | {cells} | {floor} |")
    lines += [
        "",
        f"Of torch itself: triton pins read for {torch['triton_pins']} of {torch['releases']} "
        f"releases; the C++11 ABI of the Linux builds: {_cell(torch['cxx11_abi'])}.",
    ]
    open_items: Sequence[str] = report["open"]
    lines += ["", f"### Companions: still open ({len(open_items)})", ""]
    lines += [f"- {item}" for item in open_items]
    return "\n".join(lines) + "\n"
