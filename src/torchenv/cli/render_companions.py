"""``matrix show --companions`` and ``--package NAME`` for people: the builds of each companion
package as a table, then (for the whole data) the C++11 ABI of torch's Linux builds and the
triton pins."""

from __future__ import annotations

from collections.abc import Sequence

from torchenv.cli._common import console
from torchenv.errors import BadInput
from torchenv.matrix.companions import CompanionBuild, CompanionPackage, Companions

__all__ = ["render_companions", "select_packages"]


def select_packages(data: Companions, name: str | None) -> list[CompanionPackage]:
    """Every package, or the one ``--package NAME`` names (``flash_attn`` finds flash-attn)."""
    if name is None:
        return list(data.packages)
    pkg = data.package(name)
    if pkg is None:
        raise BadInput(f"--package: {name!r} is not a companion package torchenv knows",
                       hint="one of " + ", ".join(p.name for p in data.packages),
                       field="package", value=name)
    return [pkg]


def _where(b: CompanionBuild) -> str:
    if b.variants:
        return f"{b.where} ({' '.join(map(str, b.variants))})"
    if b.cuda_major is not None:
        return f"{b.where} (cu{b.cuda_major}x)"
    return b.where


def _arch(b: CompanionBuild) -> str:
    if b.arch_list is None:
        return "?"
    return " ".join(map(str, b.arch_list))


def _evidence(b: CompanionBuild) -> str:
    """The classes of the facts the build states, weakest named: ``confirmed`` or, e.g.,
    ``coupling unknown``."""
    weak = [f"{fact} {cls}" for fact, cls in b.evidence.items() if cls != "confirmed"]
    return ", ".join(weak) or "confirmed"


def render_companions(data: Companions, packages: Sequence[CompanionPackage]) -> None:
    """The packages' builds on stdout; with every package, the ABI and triton tables too."""
    from rich.markup import escape
    from rich.table import Table

    out = console()
    for pkg in packages:
        floor = ", ".join(
            f"CC >= {g.min_compute_capability}"
            + (f" ({', '.join(map(str, g.versions))})" if g.versions else "")
            + f" [{g.evidence}]" for g in pkg.gpu) or "not stated"
        table = Table(title=f"{escape(pkg.name)} (import {escape(pkg.import_name)})",
                      caption=escape(f"{pkg.summary}. GPU: {floor}."), header_style="bold")
        for header in ("version", "where", "coupling", "torch", "platforms", "Python", "arch",
                       "evidence"):
            table.add_column(header)
        for r in pkg.releases:
            for b in r.builds:
                table.add_row(*(escape(cell) for cell in (
                    str(r.version), _where(b), b.coupling, b.torch_text(),
                    " ".join(map(str, b.platforms)) or "any", b.python_text(), _arch(b),
                    _evidence(b))))
        out.print(table, crop=False)
        for q in pkg.open_questions:
            out.print(escape(f"open: {q.topic}: {q.why_open}"), soft_wrap=True)
    if tuple(packages) != data.packages:
        return
    abi = Table(title="C++11 ABI of torch's Linux builds", header_style="bold")
    for header in ("torch", "platforms", "variants", "C++11 ABI", "evidence"):
        abi.add_column(header)
    for f in data.cxx11_abi:
        variants = (" ".join(map(str, f.variants)) if f.variants else
                    "all but " + " ".join(map(str, f.except_variants)) if f.except_variants
                    else "all")
        value = "unknown" if f.value is None else "yes" if f.value else "no"
        abi.add_row(*(escape(c) for c in (str(f.torch), " ".join(map(str, f.platforms)),
                                          variants, value, f.evidence)))
    out.print(abi, crop=False)
    triton = Table(title="triton as torch's wheels require it", header_style="bold")
    for header in ("torch", "requires", "when"):
        triton.add_column(header)
    for t in data.triton:
        triton.add_row(*(escape(c) for c in (str(t.torch), t.requirement or "nothing",
                                             t.marker or "–")))
    out.print(triton, crop=False)
    out.print(f"companion data {data.matrix_version}; 'torchenv matrix show --companions "
              "--json' adds every source.", soft_wrap=True)
