"""``torchenv matrix ci``: CI matrices for GitHub Actions, GitLab and plain JSON."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, cast

from torchenv.errors import BadInput, Unsatisfiable

if TYPE_CHECKING:
    import argparse

    from torchenv.cli._common import Subcommands

__all__ = ["register", "run"]

_FORMATS = ("github", "gitlab", "json")
_STRATEGIES = ("all", "latest-patch", "edges")


def register(msub: Subcommands) -> None:
    p = msub.add_parser(
        "ci",
        help="generate a CI test matrix (GitHub, GitLab, JSON)",
        description="Every (torch, variant, platform, Python) combination the matrix says has a "
        "wheel, filtered, as a GitHub Actions strategy.matrix, a GitLab parallel:matrix or JSON. "
        "Rows are sorted: newest torch first, then platform, variant, Python.",
    )
    p.add_argument("--torch", metavar="SPEC", help="torch releases, e.g. '>=2.5' or '==2.7.*'")
    p.add_argument("--python", metavar="SPEC|LIST",
                   help="a specifier ('>=3.10') or a list ('3.11,3.12,3.13t'); free-threaded "
                   "builds only when listed or with --free-threaded")
    p.add_argument("--free-threaded", action="store_true",
                   help="include free-threaded Pythons (3.13t, ...) alongside the others")
    p.add_argument("--variants", metavar="LIST", help="variants, e.g. cpu,cu126,rocm6.3")
    p.add_argument("--accelerators", metavar="LIST", help="families: cpu,cuda,rocm,xpu")
    p.add_argument("--platforms", "--os", dest="platforms", metavar="LIST", action="append",
                   help="platforms or runner labels: linux-x86_64, linux-aarch64, win-amd64, "
                   "macos-arm64, macos-x86_64, ubuntu-latest, windows-latest, macos-latest, "
                   "linux, windows, macos (repeatable)")
    p.add_argument("--runner", metavar="PLATFORM=LABEL", action="append",
                   help="runner label for a platform, e.g. linux-x86_64=gpu-runner (repeatable)")
    p.add_argument("--strategy", choices=_STRATEGIES, default="all",
                   help="all rows; latest-patch: newest patch of each minor; edges: oldest and "
                   "newest torch per Python and platform")
    p.add_argument("--max-rows", metavar="N", type=int,
                   help="at most N rows, evenly spread over the sorted list (deterministic)")
    p.add_argument("--format", choices=_FORMATS, default=None,
                   help="github (default): {\"include\": [...]}; gitlab: parallel:matrix YAML; "
                   "json: a list")
    p.add_argument("--pretty", action="store_true", help="indent the github JSON")
    p.add_argument("--index-base", metavar="URL", help="PyTorch wheel index mirror for commands")
    p.add_argument("-o", "--output", metavar="FILE",
                   help="write to FILE instead of stdout ('-' is stdout)")
    p.add_argument("--force", action="store_true", help="overwrite an existing FILE")
    p.add_argument("--json", action="store_true",
                   help="same as --format json; with -o FILE, stdout gets one JSON document "
                        "saying what was written")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from torchenv.ci.formats import GITHUB_MAX_JOBS, GITLAB_MAX_JOBS, Format, render
    from torchenv.ci.request import (
        CiRequest,
        Strategy,
        parse_accelerators,
        parse_platforms,
        parse_python_filter,
        parse_runners,
        parse_torch_spec,
        parse_variants,
    )
    from torchenv.ci.rows import generate_rows
    from torchenv.cli._common import (
        index_base,
        index_base_warning,
        known_variants,
        load_matrix_reported,
    )

    fmt = args.format or "github"
    if args.json:
        if args.format not in (None, "json"):
            raise BadInput(f"--json conflicts with --format {args.format}",
                           hint="--json means --format json")
        fmt = "json"
    if args.max_rows is not None and args.max_rows < 1:
        raise BadInput(f"--max-rows: {args.max_rows} is not a positive number")
    request = CiRequest(
        torch=parse_torch_spec(args.torch),
        python=parse_python_filter(args.python, free_threaded=args.free_threaded),
        variants=parse_variants(args.variants),
        accelerators=parse_accelerators(args.accelerators),
        platforms=parse_platforms(args.platforms),
        runners=parse_runners(args.runner),
        strategy=cast(Strategy, args.strategy),
        max_rows=args.max_rows,
        index_base=index_base(args),
    )
    warning = index_base_warning(request.index_base)
    if warning:
        print(f"torchenv: warning: {warning}", file=sys.stderr)
    matrix = load_matrix_reported()
    if request.variants:
        known = known_variants(matrix)
        unknown = sorted(str(v) for v in request.variants if v not in known)
        if unknown:
            raise BadInput(f"--variants: no release in the matrix has {unknown[0]!r}",
                           hint="known variants: " + ", ".join(map(str, known)))
    rows = generate_rows(matrix, request)
    if not rows:
        raise Unsatisfiable("no (torch, variant, platform, Python) combination in the matrix "
                            "matches these filters",
                            hint="loosen --torch/--python/--variants/--platforms; "
                            "'torchenv matrix show' lists what exists")
    limits = {"gitlab": ("GitLab", GITLAB_MAX_JOBS, "one parallel:matrix"),
              "github": ("GitHub Actions", GITHUB_MAX_JOBS, "one matrix")}
    if fmt in limits and len(rows) > limits[fmt][1]:
        name, limit, what = limits[fmt]
        print(f"torchenv: warning: {len(rows)} rows; {name} allows at most {limit} "
              f"jobs in {what} (use --max-rows or --strategy)", file=sys.stderr)
    text = render(rows, cast(Format, fmt), pretty=args.pretty)
    if args.output and args.output != "-":  # `-o -` is stdout, as without -o
        _write(Path(args.output), text, force=args.force)
        if args.json:  # the rows are in the file; stdout says what was written, as env -o does
            from torchenv.cli._common import emit_json

            emit_json({"written": args.output, "format": fmt, "rows": len(rows)})
        else:
            print(f"wrote {len(rows)} rows to {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
        sys.stdout.flush()
    return 0


def _write(path: Path, text: str, *, force: bool) -> None:
    from torchenv._files import write_atomic

    write_atomic(path, text, force=force)  # an existing file needs --force
