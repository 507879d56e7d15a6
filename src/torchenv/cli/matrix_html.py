"""``torchenv matrix html``: write the explorer, one self-contained HTML page."""

from __future__ import annotations

import os
import re
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from torchenv.cli._common import add_json_flag, emit_json
from torchenv.cli._numbers import count
from torchenv.errors import BadInput

if TYPE_CHECKING:
    import argparse

    from torchenv.cli._common import Subcommands

__all__ = ["register_html", "run_html"]

_MINOR_RE = re.compile(r"[0-9]+\.[0-9]+")
NEWEST = 3
"""Series answered by default: the newest ones, which most pins name; ``--specifiers all`` adds
the others at about twice the generation time."""


def register_html(msub: Subcommands) -> None:
    """Add ``html`` to the subcommands of ``matrix``."""
    p = msub.add_parser(
        "html",
        help="write the explorer: one HTML page that answers 'torchenv resolve' for any machine",
        description="Write one self-contained HTML file (no network, works from file://): pick "
        "a platform, Python, GPU, driver and torch series and see the decision 'torchenv "
        "resolve' makes, the verdict on every build, and the matrix itself. Every answer is "
        "computed here by the resolver, once per class of machine, and looked up by the page.",
    )
    p.add_argument("-o", "--output", required=True, metavar="FILE",
                   help="the HTML file to write ('-' is stdout)")
    p.add_argument("--force", action="store_true", help="overwrite an existing FILE")
    p.add_argument("--specifiers", metavar="LIST", default=None,
                   help="the torch series the page answers '--torch ==X.Y.*' for: minors such "
                   f"as 2.7,2.8, all, or none (default: the {NEWEST} newest; each series adds "
                   "to the time it takes)")
    p.add_argument("--jobs", metavar="N", type=count(1, 4096),
                   help="worker processes (default: one per CPU; more than the CPUs are "
                   "capped at their number)")
    add_json_flag(p)
    p.set_defaults(func=run_html)


def _specifiers(text: str | None, known: list[str]) -> list[str] | None:
    """None for every minor, else the listed ones (by default the :data:`NEWEST` newest of
    ``known``, oldest first); raises BadInput naming an unknown minor."""
    if text is None:
        return known[-NEWEST:]
    value = text.strip().lower()
    if value == "all":
        return None
    if value == "none":
        return []
    minors = [part.strip() for part in value.split(",") if part.strip()]
    for minor in minors:
        if not _MINOR_RE.fullmatch(minor):
            raise BadInput(f"--specifiers: {minor!r} is not a torch series",
                           hint="give all, none, or minors such as 2.7,2.8")
        if minor not in known:
            raise BadInput(f"--specifiers: no torch {minor} release is in the matrix",
                           hint="known: " + ", ".join(known))
    return minors


def run_html(args: argparse.Namespace) -> int:
    from torchenv.cli._common import load_matrix_reported
    from torchenv.cli._fields import spell
    from torchenv.explorer.page import render_page
    from torchenv.explorer.tables import build_tables

    cpus = os.cpu_count() or 1
    if args.jobs is not None and args.jobs > cpus:
        print(f"torchenv: note: --jobs {args.jobs} is more than the {cpus} CPU(s) here; "
              f"using {cpus}", file=sys.stderr)
        args.jobs = cpus
    if args.output == "-" and args.json:
        raise BadInput("--json needs -o FILE: with '-o -' stdout carries the page")
    if args.output != "-":  # refused now, not after the minutes of answering
        from torchenv._files import check_target

        check_target(args.output, force=args.force)
    matrix = load_matrix_reported()
    # the series of the releases (listed newest first), oldest first
    series = list(dict.fromkeys(r.torch.series for r in reversed(matrix.releases)))
    specifiers = _specifiers(args.specifiers, series)
    from torchenv.cli._progress import Steps, step_progress

    started = time.perf_counter()
    with step_progress("matrix html", throttle=1.0) as progress:
        if isinstance(progress, Steps):
            workers = args.jobs or os.cpu_count() or 1
            progress.line(f"answering every class of machine with {workers} worker "
                          "process(es)", timed=False)
        tables = build_tables(matrix, spell=spell, specifiers=specifiers, workers=args.jobs,
                              progress=progress)
    try:
        html = render_page(matrix, tables)
    except ValueError as exc:  # over the size limit
        raise BadInput(str(exc), hint="pass --specifiers with fewer series") from exc
    seconds = round(time.perf_counter() - started, 2)
    size = len(html.encode("utf-8"))
    summary = {"written": args.output, "bytes": size, "seconds": seconds,
               "matrix_version": matrix.matrix_version, "specifiers": tables.specifiers,
               "answers": len(tables.plans)}
    if args.output == "-":
        sys.stdout.write(html)
        return 0
    from torchenv._files import write_atomic

    write_atomic(Path(args.output), html, force=args.force)
    if args.json:
        emit_json(summary)
    else:
        print(f"wrote {args.output} ({size / 1024:.0f} KiB, matrix {matrix.matrix_version}, "
              f"{len(tables.plans)} distinct answers) in {seconds:.1f} s", file=sys.stderr)
    return 0
