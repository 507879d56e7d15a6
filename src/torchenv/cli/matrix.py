"""``torchenv matrix show | check | ci | update``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from torchenv.cli._common import add_json_flag, emit_json
from torchenv.errors import BadInput

if TYPE_CHECKING:
    import argparse

    from torchenv.cli._common import Subcommands

__all__ = ["register"]


def register(sub: Subcommands) -> None:
    p = sub.add_parser(
        "matrix",
        help="show, check or update the compatibility matrix; generate CI matrices",
        description="The versioned matrix of torch releases, variants, Python versions, "
        "architectures and driver floors that every decision is made from.",
    )
    msub = p.add_subparsers(dest="matrix_command", metavar="ACTION", required=True)

    show = msub.add_parser("show", help="list releases (one row per torch patch release)")
    show.add_argument("--torch", metavar="SPEC", help="only releases matching this specifier")
    show.add_argument(
        "--release", metavar="VERSION", help="every fact of one release, with its sources"
    )
    show.add_argument("--companions", action="store_true",
                      help="the extensions built against torch (flash-attn, xformers, PyG, "
                      "torchao, vLLM), the C++11 ABI of torch's builds and its triton pins")
    show.add_argument("--package", metavar="NAME",
                      help="one companion package's builds (implies --companions)")
    add_json_flag(show)
    show.set_defaults(func=run_show)

    check = msub.add_parser("check", help="validate the matrix data and its cross-checks")
    check.add_argument(
        "--overlay", metavar="FILE", help="check this overlay merged with the embedded matrix"
    )
    check.add_argument(
        "--write-cache",
        action="store_true",
        help="rebuild the built matrix (built.json) and the parsed YAML (cache.json) from the "
        "YAML (maintainers)",
    )
    check.add_argument(
        "--git",
        metavar="OWNER/NAME=PATH",
        action="append",
        default=[],
        help="a local clone of a cited repository: every source citing a commit of it on a "
        "release branch is checked with git (repeatable; e.g. pytorch/test-infra=../test-infra)",
    )
    add_json_flag(check)
    check.set_defaults(func=run_check)

    cov = msub.add_parser(
        "coverage",
        help="count facts per evidence class (confirmed / inferred / unknown)",
        description="How much of the matrix is confirmed, inferred by a named rule, or unknown, "
        "per release and platform; -o writes the Markdown report (docs/data-coverage.md).",
    )
    cov.add_argument("-o", "--output", metavar="FILE", help="write the Markdown report here")
    cov.add_argument("--force", action="store_true", help="replace an existing file")
    add_json_flag(cov)
    cov.set_defaults(func=run_coverage)

    from torchenv.cli import matrix_ci, matrix_html, matrix_update

    matrix_ci.register(msub)
    matrix_update.register(msub)
    matrix_html.register_html(msub)


def run_show(args: argparse.Namespace) -> int:
    from torchenv.cli._common import load_matrix_reported
    from torchenv.cli.render_matrix import release_detail, render_table, select
    from torchenv.matrix.document import matrix_to_json
    from torchenv.resolver.request import read_torch_spec
    from torchenv.values import InvalidValue, TorchVersion

    if args.companions or args.package:
        return _show_companions(args)
    matrix = load_matrix_reported()
    releases = select(matrix, read_torch_spec(args.torch) if args.torch else None)
    if args.release:
        if args.torch:
            raise BadInput(f"--release {args.release} shows one release and --torch "
                           f"{args.torch} selects the table's rows", hint="give one of them")
        try:
            version = TorchVersion.plain(args.release)
        except InvalidValue:
            version = None
        series = [str(r.torch) for r in matrix.releases if version is not None
                  and len(version.release) < 3 and r.torch.release[:2] == version.release[:2]]
        if series:  # "2.7" is read as the 2.7 series by --torch: never as 2.7.0 here
            raise BadInput(f"--release: {args.release} names a series of releases, not one",
                           hint=f"give one of {', '.join(sorted(series))}, or --torch "
                           f"{args.release} for the series")
        rel = matrix.release(version) if version is not None else None
        if rel is None:
            raise BadInput(
                f"--release: torch {args.release} is not in the matrix",
                hint="see 'torchenv matrix show' for the releases it knows",
            )
        if args.json:
            emit_json(matrix_to_json(matrix, [rel], with_sources=True))
        else:
            release_detail(matrix, rel)
        return 0
    if args.json:
        emit_json(matrix_to_json(matrix, releases))
        return 0
    render_table(matrix, releases)
    return 0


def _show_companions(args: argparse.Namespace) -> int:
    """``matrix show --companions`` / ``--package NAME``: read apart from the matrix."""
    from torchenv.cli.render_companions import render_companions, select_packages
    from torchenv.matrix.companions import companions_to_json, load_companions

    if args.torch or args.release:
        given = f"--torch {args.torch}" if args.torch else f"--release {args.release}"
        raise BadInput(f"{given} selects torch releases and --companions shows the companion "
                       "data", hint="give one of them")
    data = load_companions()
    packages = select_packages(data, args.package)
    if args.json:
        emit_json(companions_to_json(data, None if args.package is None else packages))
    else:
        render_companions(data, packages)
    return 0


def run_check(args: argparse.Namespace) -> int:
    import json
    import os
    import sys
    from pathlib import Path

    from torchenv.matrix.built import BUILT_FILE, build_document, fingerprint
    from torchenv.matrix.loader import (
        CACHE_FILE,
        DATA_DIR,
        DATA_FILES,
        build_cache,
        build_embedded,
        load_built,
        load_embedded_documents,
        load_matrix,
    )

    built = build_embedded()  # every validation and inference rule; MatrixError is exit 2
    if args.write_cache:
        from torchenv._files import write_atomic

        for path, doc in ((CACHE_FILE, build_cache()),
                          (BUILT_FILE, build_document(built, fingerprint(DATA_DIR, DATA_FILES)))):
            write_atomic(path, json.dumps(doc, separators=(",", ":"), sort_keys=True) + "\n")
    _, cached = load_embedded_documents()
    shipped_current = load_built() == built
    overlay: Path | bool = Path(args.overlay) if args.overlay else False
    if args.overlay and not os.path.lexists(args.overlay):
        raise BadInput(f"--overlay: {args.overlay} does not exist")
    matrix = load_matrix(overlay=overlay) if args.overlay else built
    from torchenv.matrix.companions import load_companions

    companions = load_companions(matrix=built)  # checked against the embedded matrix; exit 2
    stack = {
        "matrix_version": companions.matrix_version,
        "packages": len(companions.packages),
        "builds": sum(len(r.builds) for p in companions.packages for r in p.releases),
        "cxx11_abi": len(companions.cxx11_abi),
        "triton": len(companions.triton),
    }
    problems = []
    if matrix.overlay_error:  # a failure of the check; the other commands only ignore it
        problems.append(f"overlay not usable (every other command ignores it): "
                        f"{matrix.overlay_error}")
    stale = [name for name, current in (("built.json", shipped_current), ("cache.json", cached))
             if not current]
    if stale:
        problems.append(
            f"{' and '.join(stale)} {'do' if len(stale) > 1 else 'does'} not match what the "
            "YAML and the inference rules build (run 'torchenv matrix check --write-cache'); "
            "every start builds the matrix from the YAML until then")
    unverified = [
        f"{r.torch} {v.name}" for r in matrix.releases for v in r.variants if v.status != "verified"
    ]
    provenance = None
    if args.git:
        from torchenv.matrix.provenance import check_commits

        provenance = check_commits(list(matrix.sources.values()), _git_clones(args.git))
    failed = bool(matrix.overlay_error) or bool(stale) \
        or bool(provenance and provenance.problems)
    summary = {
        "ok": not failed,
        "matrix_version": matrix.matrix_version,
        "releases": len(matrix.releases),
        "variants": sum(len(r.variants) for r in matrix.releases),
        "unverified_variants": unverified,
        "cache_current": cached,
        "built_current": shipped_current,
        "problems": problems,
        "companions": stack,
    }
    if provenance is not None:
        summary["commits"] = {"problems": list(provenance.problems),
                              "checked": list(provenance.checked),
                              "unchecked": list(provenance.unchecked)}
    if args.json:
        emit_json(summary)
    else:
        print(
            f"matrix {matrix.matrix_version}: {summary['releases']} releases, "
            f"{summary['variants']} release variants, all checks passed"
            if summary["ok"]
            else "matrix check failed" + (": the overlay is not usable" if matrix.overlay_error
                                          else ": the shipped matrix is stale" if stale
                                          else "")
        )
        print(f"companions {stack['matrix_version']}: {stack['packages']} packages, "
              f"{stack['builds']} builds, {stack['cxx11_abi']} C++11 ABI facts, "
              f"{stack['triton']} triton pins, all checks passed")
        if unverified:
            print(
                f"{len(unverified)} release variants are unverified (existence or arch list): "
                + ", ".join(unverified[:8])
                + (" …" if len(unverified) > 8 else "")
            )
        for p in problems:
            print(f"error: {p}", file=sys.stderr)
        if provenance is not None:
            print(f"cited commits: {len(provenance.checked)} on their branch, "
                  f"{len(provenance.problems)} not, {len(provenance.unchecked)} not checkable here")
            for p in provenance.problems:
                print(f"error: {p}", file=sys.stderr)
    return 0 if summary["ok"] else 2


def _git_clones(values: list[str]) -> dict[str, Path]:
    from pathlib import Path

    clones = {}
    for value in values:
        repo, sep, path = value.partition("=")
        if not sep or repo.count("/") != 1 or not path:
            raise BadInput(f"--git: {value!r} is not OWNER/NAME=PATH",
                           hint="e.g. --git pytorch/test-infra=../test-infra")
        if not Path(path).exists():
            raise BadInput(f"--git: {path} does not exist (for {repo})")
        clones[repo] = Path(path)
    return clones


COVERAGE_COMMAND = "torchenv matrix coverage -o docs/data-coverage.md --force"


def coverage_report(generated_by: str | None = None) -> tuple[dict[str, Any], str]:
    """The coverage report of the embedded data (no overlay) and its Markdown: the matrix's
    counts, then the companion data's section. ``generated_by`` names the command in the file's
    header."""
    from torchenv.matrix.companion_coverage import (
        companion_coverage,
        companion_coverage_markdown,
    )
    from torchenv.matrix.companions import load_companions
    from torchenv.matrix.coverage import coverage, coverage_markdown
    from torchenv.matrix.loader import load_matrix

    matrix = load_matrix(overlay=False)
    report = coverage(matrix)
    report["companions"] = companion_coverage(load_companions(matrix=matrix), matrix)
    text = (coverage_markdown(report, generated_by=generated_by) + "\n"
            + companion_coverage_markdown(report["companions"]))
    return report, text


def run_coverage(args: argparse.Namespace) -> int:
    from pathlib import Path

    if args.output:
        from torchenv._files import write_atomic

        report, text = coverage_report(COVERAGE_COMMAND)  # the file's header names it
        write_atomic(Path(args.output), text, force=args.force)
    else:
        report, text = coverage_report()
    if args.json:
        emit_json(report)
    elif not args.output:
        print(text, end="")
    return 0
