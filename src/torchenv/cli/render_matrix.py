"""``matrix show`` for people: the releases as a table, and every fact of one release."""

from __future__ import annotations

from collections.abc import Sequence

from torchenv.cli._common import console
from torchenv.errors import BadInput
from torchenv.matrix.model import (
    ALL_PLATFORMS,
    COMPANIONS,
    ArchFact,
    Matrix,
    Release,
    python_sort_key,
)
from torchenv.values import Platform, TorchSpec

__all__ = ["companion_line", "release_detail", "render_table", "select"]


def select(matrix: Matrix, spec: TorchSpec | None) -> list[Release]:
    """Releases matching ``--torch SPEC`` (a bare ``2.7`` means the 2.7 series), newest first."""
    if spec is None:
        return list(matrix.releases)
    chosen = [r for r in matrix.releases if spec.contains(r.torch)]
    if not chosen:
        raise BadInput(
            f"no release in the matrix matches {spec.text!r}",
            hint="see 'torchenv matrix show' for the releases it knows",
            field="torch", value=spec.text,
        )
    return chosen


def _py_range(tags: Sequence[str]) -> str:
    plain = [t for t in tags if not t.endswith("t")]
    free = [t for t in tags if t.endswith("t")]
    if not plain:
        return ", ".join(free) or "–"
    plain.sort(key=python_sort_key)
    text = plain[0] if len(plain) == 1 else f"{plain[0]}–{plain[-1]}"
    return text + (f" +{','.join(free)}" if free else "")


def render_table(matrix: Matrix, releases: Sequence[Release]) -> None:
    """The releases as a table on stdout. A cell wraps between words, never inside one: when
    the terminal is narrower than the longest words need, the table runs past its edge."""
    from rich.cells import cell_len
    from rich.markup import escape
    from rich.table import Table


    headers = ("torch", "released", "vision", "audio", "Python (linux-x86_64)", "PyPI (Linux)",
               "variants", "conda")
    rows = []
    linux, arm64 = Platform("linux-x86_64"), Platform("linux-aarch64")
    for r in releases:
        pypi = str(r.pypi_default.get(linux, "–"))
        arm = r.pypi_default.get(arm64)
        if arm and arm.kind != "cpu":
            pypi += f" (arm {arm})"
        variants = " ".join(f"{v.name}{'?' if v.status != 'verified' else ''}"
                            for v in r.variants)
        conda = []
        if r.conda.pytorch_channel is True:
            conda.append("pytorch")
        if r.conda.conda_forge is True:
            conda.append("conda-forge")
        rows.append((
            str(r.torch),
            r.released,
            str(r.torchvision or ("?" if "torchvision" in r.unconfirmed else "–")),
            str(r.torchaudio or ("?" if "torchaudio" in r.unconfirmed else "–")),
            _py_range(r.python.get(linux, ())),
            pypi,
            variants,
            ", ".join(conda) or "–",
        ))
    table = Table(
        title=f"torchenv matrix {escape(matrix.matrix_version)}", header_style="bold",
        show_lines=False,
    )
    for i, header in enumerate(headers):
        # rich's last resort on a narrow terminal folds words (`rocm6.2` / `.4`); a column is
        # never narrower than its longest word
        longest = max(cell_len(word) for text in (header, *(row[i] for row in rows))
                      for word in (text.split() or [""]))
        table.add_column(header, min_width=longest)
    for row in rows:
        table.add_row(*(escape(cell) for cell in row))  # data (the overlay too), never markup
    out = console()
    out.print(table, crop=False)
    out.print(
        "? = not confirmed (variant arch list or pairing). "
        "'torchenv matrix show --release X' shows every fact of a release with its sources.",
        soft_wrap=True,  # it names a command
    )


def _fact_line(platform: Platform, fact: ArchFact) -> str:
    """``linux-x86_64: 7.5, …, 12.0 — SASS confirmed, PTX confirmed (sources: a, b)``."""
    arch = ", ".join(map(str, fact.arch_list)) if fact.arch_list is not None else "unknown"
    how = f"SASS {fact.sass}, PTX {fact.ptx}"
    if fact.rule:
        how += f" by rule {fact.rule}"
    srcs = f" (sources: {', '.join(fact.sources)})" if fact.sources else ""
    line = f"{platform}: {arch} — {how}{srcs}"
    part = fact.partial
    if part is not None:
        said = [f"nothing below {part.oldest}"] if part.oldest is not None else []
        if part.includes:
            said.append("has " + ", ".join(map(str, part.includes)))
        line += f"; known in part: {', '.join(said)} (sources: {', '.join(part.sources)})"
    return line


_PAIRING_WORDS = {"confirmed": "confirmed", "inferred": "by statement", "unknown": "unknown",
                  "none": "none pairs"}


def companion_line(package: str, r: Release) -> str:
    """How the ``package`` release paired with ``r`` is known: ``torchaudio 2.11.1: by
    statement (rule companion-by-statement): "…"`` (confirmed / by statement / unknown)."""
    p = r.pairing(package)
    line = f"{package} {p.version or '–'}: {_PAIRING_WORDS.get(p.evidence, p.evidence)}"
    if p.rule:
        line += f" (rule {p.rule})"
    if p.statement:
        line += f': "{p.statement}"'
    if p.evidence == "inferred" and p.sources:
        line += f" (sources: {', '.join(p.sources)})"
    return line


def release_detail(matrix: Matrix, r: Release) -> None:
    from rich.markup import escape


    out = console()
    out.print(
        f"[bold]torch {escape(str(r.torch))}[/bold]  "
        + escape(f"released {r.released}  torchvision {r.torchvision or '–'}  torchaudio "
                 f"{r.torchaudio or '–'}")
    )
    for plat in ALL_PLATFORMS:
        if plat in r.python:
            out.print(escape(
                f"  {plat!s:<14} Python {', '.join(r.python[plat])}"
                + (f"  PyPI build {r.pypi_default[plat]}" if plat in r.pypi_default else "")
                + (f"  glibc ≥ {r.manylinux[plat]}" if plat in r.manylinux else "")
            ))
    for package in COMPANIONS:
        out.print("  " + escape(companion_line(package, r)), soft_wrap=True)
    for v in r.variants:
        out.print(
            f"  [bold]{escape(str(v.name))}[/bold] "
            + escape(f"on {', '.join(map(str, v.platforms))}"
                     + (f"; cuDNN {v.cudnn}" if v.cudnn else "")
                     + (f"; NCCL {v.nccl}" if v.nccl else "")
                     + f"; index entry {v.index}"
                     + (f" (rule {v.index_rule})" if v.index_rule else ""))
        )
        for plat, fact in v.arch_facts.items():
            out.print("      " + escape(_fact_line(plat, fact)), soft_wrap=True)
        if v.note:
            out.print(f"      note: {escape(v.note)}", soft_wrap=True)
    out.print(escape(f"  conda: pytorch channel {_has(r.conda.pytorch_channel)}, "
                     f"conda-forge {_has(r.conda.conda_forge)}"))
    if r.note:
        out.print(f"  note: {escape(r.note)}", soft_wrap=True)
    cited = [*r.sources, *(s for pkg in COMPANIONS for s in r.pairing(pkg).sources)]
    for v in r.variants:
        cited += [*v.sources, *(sid for f in v.arch_facts.values() for sid in f.sources)]
    for sid in dict.fromkeys(cited):
        s = matrix.sources.get(sid)
        if s:
            out.print(escape(f"  source {sid}: {s.title} <{s.url}>")
                      + ("" if s.primary else " (corroboration only, not a primary source)"),
                      soft_wrap=True)


def _has(answer: object) -> str:
    """Whether a conda channel has the release, in words (the data says True, False or
    unknown)."""
    if answer is True:
        return "has it"
    return "does not have it" if answer is False else "not known"
