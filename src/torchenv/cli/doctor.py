"""``torchenv doctor``: diagnose an existing environment and print the fixes."""

from __future__ import annotations

import os
import shutil
import sys
from typing import TYPE_CHECKING, Any

from torchenv.cli._common import add_json_flag
from torchenv.errors import BadInput

if TYPE_CHECKING:
    import argparse

    from torchenv.cli._common import Subcommands

__all__ = ["register", "run"]


def register(sub: Subcommands) -> None:
    p = sub.add_parser("doctor", help="diagnose a broken install and print the fix",
                       description="Diagnose the torch install of an interpreter; exit 1 when "
                                   "an error-level finding exists.")
    p.add_argument("--python", dest="python", metavar="PATH", default=None,
                   help="the interpreter to inspect (default: this one)")
    add_json_flag(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from torchenv.cli._common import load_matrix_reported
    from torchenv.detection.detect import detect
    from torchenv.doctor import diagnose, summarize
    from torchenv.doctor.gather import gather

    python = args.python or sys.executable
    if os.sep in python:
        from torchenv._files import absolute_path

        python = absolute_path(python, what="--python")
    elif shutil.which(python):
        python = shutil.which(python) or python
    if not os.path.exists(python):
        raise BadInput(f"--python: {python} does not exist",
                       hint="pass the path of a Python interpreter")
    env = dict(os.environ)
    installs, facts = gather(python, env)  # one child answers for doctor and for detection
    host = detect(None, python=python, python_facts=facts)
    findings = diagnose(host, env, load_matrix_reported(), installs)
    errors = summarize(findings)["error"]
    if args.json:
        from torchenv.cli._common import emit_json

        emit_json({"ok": errors == 0, "python": installs.python or python,
                   "torch": host.torch.version if host.torch else
                   next((d.version for d in installs.dists("torch")), None),
                   "findings": [f.to_json() for f in findings],
                   "host_warnings": list(host.warnings)})
    else:
        _print(findings, installs.python or python, host.warnings)
    return 1 if errors else 0


_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}


def _print(findings: list[Any], python: str, host_warnings: tuple[str, ...]) -> None:
    """Every line soft-wrapped: titles and explanations name paths and fixes are commands, and
    a line break inside either would make it wrong when copied."""
    from rich.markup import escape

    from torchenv.cli._common import console

    out = console()

    def line(text: str) -> None:
        out.print(text, soft_wrap=True)

    for w in host_warnings:
        line(f"[yellow]detection could not read everything:[/] {escape(w)}")
    if not findings:
        line(f"[green]No problems found[/] in {escape(python)}.")
        return
    for f in findings:
        line(f"[{_STYLE[f.severity]}]{f.severity}[/]: [bold]{escape(f.title)}[/]")
        line(f"  {escape(f.explanation)}")
        if f.fix:
            line(f"  fix: [bold]{escape(f.fix)}[/]")
    counts = {s: sum(1 for f in findings if f.severity == s) for s in _STYLE}
    line(", ".join(f"{n} {s}{'s' if n != 1 else ''}" for s, n in counts.items() if n))
