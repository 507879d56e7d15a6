"""``matrix show``: the JSON document of CLI.md and a readable table."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from torchenv.errors import BadInput
from torchenv.matrix.inference import describe
from torchenv.matrix.model import ALL_PLATFORMS, ArchFact, Matrix, Release, python_sort_key
from torchenv.values import Platform, TorchSpec, optional_text

__all__ = ["matrix_to_json", "release_detail", "release_to_json", "render_table", "select"]


def select(matrix: Matrix, spec: TorchSpec | None) -> list[Release]:
    """Releases matching ``--torch SPEC`` (a bare ``2.7`` means the 2.7 series), newest first."""
    if spec is None:
        return list(matrix.releases)
    chosen = [r for r in matrix.releases if spec.contains(r.torch)]
    if not chosen:
        raise BadInput(
            f"--torch: no release in the matrix matches {spec.text!r}",
            hint="see 'torchenv matrix show' for the releases it knows",
            field="torch", value=spec.text,
        )
    return chosen


def release_to_json(r: Release, *, with_sources: bool = False) -> dict[str, Any]:
    variants = []
    for v in r.variants:
        entry: dict[str, Any] = {
            "name": str(v.name),
            "platforms": [str(p) for p in v.platforms],
            "arch_list": _texts(v.arch_list),
        }
        if v.arch_list_by_platform:
            entry["arch_list_by_platform"] = {
                str(k): _texts(a) for k, a in v.arch_list_by_platform.items()
            }
        if v.python:
            entry["python"] = {str(k): list(t) for k, t in v.python.items()}
        entry.update(cudnn=v.cudnn, nccl=v.nccl, status=v.status, index=v.index)
        if v.arch_facts:
            entry["evidence"] = {str(plat): describe(f) for plat, f in v.arch_facts.items()}
        if with_sources:
            entry["sources"] = list(v.sources)
            entry["note"] = v.note
        variants.append(entry)
    doc: dict[str, Any] = {
        "torch": str(r.torch),
        "torchvision": optional_text(r.torchvision),
        "torchaudio": optional_text(r.torchaudio),
        "released": r.released,
        "python": {str(p): list(r.python[p]) for p in ALL_PLATFORMS if p in r.python},
        "pypi_default": {str(p): str(v) for p, v in r.pypi_default.items()},
        "manylinux": {str(p): floor for p, floor in r.manylinux.items()},
        "variants": variants,
        "conda": {"pytorch_channel": r.conda.pytorch_channel, "conda_forge": r.conda.conda_forge},
    }
    if r.unconfirmed:
        doc["unconfirmed"] = list(r.unconfirmed)  # null above means "not confirmed" for these
    if with_sources:
        doc["sources"] = list(r.sources)
        doc["note"] = r.note
    return doc


def _texts(values: Sequence[object] | None) -> list[str] | None:
    return [str(v) for v in values] if values is not None else None


def matrix_to_json(
    matrix: Matrix, releases: Sequence[Release], *, with_sources: bool = False
) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "matrix_version": matrix.matrix_version,
        "schema_version": matrix.schema_version,
        "releases": [release_to_json(r, with_sources=with_sources) for r in releases],
    }
    if with_sources:
        doc["sources"] = {k: {"title": s.title, "url": s.url} for k, s in matrix.sources.items()}
    if matrix.overlay:
        doc["overlay"] = matrix.overlay
        doc["overlay_error"] = matrix.overlay_error
    return doc


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

    from torchenv.cli._common import console

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
    return f"{platform}: {arch} — {how}{srcs}"


def release_detail(matrix: Matrix, r: Release) -> None:
    from rich.markup import escape

    from torchenv.cli._common import console

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
    for v in r.variants:
        out.print(
            f"  [bold]{escape(str(v.name))}[/bold] "
            + escape(f"on {', '.join(map(str, v.platforms))}"
                     + (f"; cuDNN {v.cudnn}" if v.cudnn else "")
                     + (f"; NCCL {v.nccl}" if v.nccl else "")
                     + f"; index entry {v.index}")
        )
        for plat, fact in v.arch_facts.items():
            out.print("      " + escape(_fact_line(plat, fact)), soft_wrap=True)
        if v.note:
            out.print(f"      note: {escape(v.note)}", soft_wrap=True)
    out.print(escape(
        f"  conda: pytorch channel {r.conda.pytorch_channel}, conda-forge {r.conda.conda_forge}"
    ))
    if r.note:
        out.print(f"  note: {escape(r.note)}", soft_wrap=True)
    cited = list(r.sources)
    for v in r.variants:
        cited += [*v.sources, *(sid for f in v.arch_facts.values() for sid in f.sources)]
    for sid in dict.fromkeys(cited):
        s = matrix.sources.get(sid)
        if s:
            out.print(escape(f"  source {sid}: {s.title} <{s.url}>")
                      + ("" if s.primary else " (corroboration only, not a primary source)"),
                      soft_wrap=True)
