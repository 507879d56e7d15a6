"""``torchenv matrix update``: refresh the user overlay from the live PyTorch index."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from torchenv.cli._common import emit_json
from torchenv.errors import BadInput

if TYPE_CHECKING:
    import argparse

    from torchenv.cli._common import Subcommands
    from torchenv.values import TorchVersion

__all__ = ["register", "run"]


def register(msub: Subcommands) -> None:
    p = msub.add_parser(
        "update",
        help="read the live PyTorch index and PyPI and update the overlay",
        description="Read download.pytorch.org/whl/{torch,torchvision,torchaudio}/ and PyPI's "
        "JSON API, compare with the matrix, and write what it lacks to the user overlay "
        "(validated first, written atomically): new releases, variants and platforms, and "
        "changed Python tags of the releases it has. The companion data is compared too "
        "(PyPI, the PyG find-links pages, GitHub release assets) and its drift reported, "
        "never written. With --check only report: exit 1 when there is any difference. "
        "Exit 4 when a source cannot be read.",
    )
    p.add_argument("--check", action="store_true",
                   help="print the differences and exit 1 if there are any; write nothing")
    p.add_argument("--output", metavar="FILE",
                   help="overlay file to write (default: the user overlay, see "
                   "TORCHENV_MATRIX_OVERLAY)")
    p.add_argument("--force", action="store_true",
                   help="replace the --output file even when it is not a matrix overlay")
    p.add_argument("--index-base", metavar="URL",
                   help="PyTorch wheel index root (default https://download.pytorch.org/whl; "
                   "env TORCHENV_INDEX_BASE)")
    p.add_argument("--pypi-base", metavar="URL",
                   help="PyPI root for the JSON API (default https://pypi.org; env "
                   "TORCHENV_PYPI_BASE)")
    p.add_argument("--companions", action="store_true",
                   help="also compare companions.yaml (flash-attn, xformers, PyG, torchao, vLLM) "
                   "with PyPI, the PyTorch index, the PyG find-links pages and GitHub release "
                   "assets; its drift is reported, never written")
    p.add_argument("--pyg-base", metavar="URL",
                   help="folder of the PyG find-links pages (default "
                   "https://data.pyg.org/whl)")
    p.add_argument("--github-api-base", metavar="URL",
                   help="GitHub REST API root for release assets (default "
                   "https://api.github.com)")
    p.add_argument("--since", metavar="VERSION",
                   help="ignore torch releases older than this, e.g. 2.5 (default: the oldest "
                   "in the matrix)")
    p.add_argument("--allow-http", action="store_true",
                   help="allow plain-HTTP mirrors (otherwise only HTTPS and 127.0.0.1)")
    p.add_argument("--timeout", metavar="S",
                   help="read timeout per request in seconds, 0 < S <= 600 (default 30; env "
                   "TORCHENV_HTTP_TIMEOUT)")
    p.add_argument("--quiet", action="store_true",
                   help="no progress: neither the bar on a terminal nor the lines elsewhere")
    p.add_argument("--json", action="store_true",
                   help="print one JSON document on stdout (progress and logs go to stderr)")
    p.set_defaults(func=run)


def _check_output(output: Path) -> None:
    """A place the overlay cannot be written is said before the minutes of fetching; a folder
    missing is made when the overlay is written."""
    from torchenv._files import check_target

    if output.parent.is_dir():
        check_target(output)
        return
    existing = next(p for p in output.parents if p.exists())
    if not existing.is_dir():
        raise BadInput(f"{existing} is not a directory, so {output} cannot be made",
                       hint="give a path in a folder")


def run(args: argparse.Namespace) -> int:
    from torchenv.matrix.index import DEFAULT_INDEX_BASE
    from torchenv.matrix.live.companions import DEFAULT_GITHUB_API, DEFAULT_PYG_BASE
    from torchenv.matrix.live.http import FetchPolicy, parse_timeout
    from torchenv.matrix.live.update import DEFAULT_PYPI_BASE, UpdateOptions, run_update

    since = _since(args.since)
    if args.output:
        _check_output(Path(args.output))
    policy = FetchPolicy.from_env(os.environ, allow_http=args.allow_http)
    if args.timeout is not None:
        policy = policy.with_timeout(parse_timeout(args.timeout, "--timeout"))
    options = UpdateOptions(
        index_base=_given(args, "index_base") or DEFAULT_INDEX_BASE,
        pypi_base=_given(args, "pypi_base") or DEFAULT_PYPI_BASE,
        output=Path(args.output) if args.output else None,
        check=args.check,
        force=args.force,
        since=since,
        policy=policy,
        companions=args.companions,
        pyg_base=_given(args, "pyg_base") or DEFAULT_PYG_BASE,
        github_api_base=_given(args, "github_api_base") or DEFAULT_GITHUB_API,
    )
    from torchenv.cli._progress import step_progress

    with step_progress("matrix update", quiet=args.quiet) as progress:
        result = run_update(options, progress=progress)

    for warning in result.warnings:
        print(f"torchenv: warning: {warning}", file=sys.stderr)
    if args.json:
        emit_json(result.to_json())
    else:
        lines = result.lines()
        if not lines:
            print("the matrix is current: the live index and PyPI show no release, variant, "
                  "platform or Python tag it lacks"
                  + (", and the companions' sources agree with companions.yaml"
                     if args.companions else ""))
        else:
            print(f"the live sources differ from the matrix in {len(lines)} place(s):")
            for line in lines:
                print(f"  {line}")
        if result.written:
            print(f"wrote {result.overlay_path}")
    if args.check and not result.up_to_date:
        return 1
    return 0


def _given(args: argparse.Namespace, field: str) -> str | None:
    """The flag of ``field``, else its ``TORCHENV_*`` variable (empty or blank counts as unset);
    which one gave it is recorded, for an error to name it."""
    from torchenv.cli._fields import FIELDS, given

    flag = getattr(args, field)
    if flag:
        given(args, field, "flag")
        return str(flag)
    variable = FIELDS[field].variable
    value = os.environ.get(variable, "").strip() if variable else ""
    if value:
        given(args, field, "variable")
    return value or None


def _since(raw: str | None) -> TorchVersion | None:
    """``--since`` as a version; :class:`BadInput` naming the value when it is not one."""
    from torchenv.values import InvalidValue, TorchVersion

    if raw is None:
        return None
    try:
        return TorchVersion(raw)
    except InvalidValue:
        raise BadInput(f"--since: {raw!r} is not a torch version; e.g. --since 2.5 or "
                       "--since 2.5.1") from None
