"""``torchenv doctor``: diagnose an existing environment and print the fixes."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from torchenv.cli._common import add_json_flag, add_target_flags
from torchenv.errors import BadInput

if TYPE_CHECKING:
    import argparse

    from torchenv.cli._common import Subcommands
    from torchenv.doctor.target import Target

__all__ = ["register", "run"]


def register(sub: Subcommands) -> None:
    p = sub.add_parser("doctor", help="diagnose a broken install and print the fix",
                       description="Diagnose the torch install of an interpreter (the active "
                                   "environment's python by default): import torch in a "
                                   "bounded child that sees what that python sees, and name "
                                   "each cause with its evidence and fix. Exit 1 when an "
                                   "error-level finding exists.")
    # --python (from the target flags) names the interpreter to diagnose: a path, a name on
    # PATH, or a version X.Y looked up as pythonX.Y
    add_target_flags(p, host_only=True)
    p.add_argument("--import-timeout", metavar="S", type=float, default=None,
                   help="seconds the child may take to import torch, torchvision and "
                        "torchaudio (default 60)")
    add_json_flag(p)
    p.set_defaults(func=run)


def _given_interpreter(args: argparse.Namespace) -> str | None:
    """``--python``, else TORCHENV_PYTHON, as an interpreter: a version ``3.12`` means
    ``python3.12`` on PATH. Consumed here: doctor's target Python is the interpreter's own."""
    import re

    flag = getattr(args, "target_python", None)
    value = flag or os.environ.get("TORCHENV_PYTHON", "").strip() or None
    args.target_python = None
    if value and re.fullmatch(r"\d+\.\d+t?", value):
        return f"python{value}"
    return value


def run(args: argparse.Namespace) -> int:
    from torchenv.cli._common import host_from_args, load_matrix_reported
    from torchenv.doctor import diagnose, summarize
    from torchenv.doctor.gather import gather
    from torchenv.doctor.probe import IMPORT_LIMIT, probe_import
    from torchenv.doctor.target import target_interpreter

    limit = args.import_timeout if args.import_timeout is not None else IMPORT_LIMIT
    if not 0 < limit <= 3600:
        raise BadInput(f"--import-timeout: must be above 0 and at most 3600 seconds, not "
                       f"{limit:g}", hint="e.g. --import-timeout 120")
    from torchenv._files import current_folder

    if current_folder() is None:  # what python sees here is a folder that is gone
        raise BadInput("the current folder no longer exists (it was deleted or moved after the "
                       "shell entered it); a Python started here cannot import torch (loading "
                       "its libraries fails there), so doctor would diagnose the folder, not "
                       "the install",
                       hint="cd to a folder that exists and run doctor again")
    env = dict(os.environ)
    target = target_interpreter(_given_interpreter(args), env)
    python = target.python
    installs, facts = gather(python, env)  # one child answers for doctor and for detection
    env_without = {k: v for k, v in env.items() if k != "TORCHENV_PYTHON"}
    matrix = load_matrix_reported()
    host = host_from_args(args, python_executable=python, matrix=matrix, python_facts=facts,
                          environ=env_without)
    seen = probe_import(python, env, cwd=os.getcwd(), limit=limit,
                        also=_companion_modules())
    findings = diagnose(host, env, matrix, installs, seen=seen)
    errors = summarize(findings)["error"]
    if args.json:
        from torchenv.cli._common import emit_json

        emit_json({"ok": errors == 0, "python": installs.python or python,
                   "interpreter": target.to_json(),
                   "torch": host.torch.version if host.torch else
                   next((d.version for d in installs.dists("torch")), None),
                   "findings": [f.to_json() for f in findings],
                   "seen": seen.to_json(),
                   "host_warnings": list(host.warnings)})
    else:
        _print(findings, target, host.warnings)
    return 1 if errors else 0


def _companion_modules() -> list[str]:
    """The module names of the companion packages (flash-attn, xformers, the PyG wheels, ...),
    for the child to import after torch: one built for another torch fails there and the
    classifier names it; one that is not installed is not found, which is no finding."""
    from torchenv.matrix.companions import load_companions

    return [p.import_name for p in load_companions().packages]


_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}


def _print(findings: list[Any], target: Target, host_warnings: tuple[str, ...]) -> None:
    """Every line soft-wrapped: titles and explanations name paths and fixes are commands, and
    a line break inside either would make it wrong when copied."""
    from rich.markup import escape

    from torchenv.cli._common import console

    out = console()

    def line(text: str) -> None:
        out.print(text, soft_wrap=True)

    line(f"Diagnosing {escape(target.python)} ({escape(target.source)})")
    for w in host_warnings:
        line(f"[yellow]detection could not read everything:[/] {escape(w)}")
    if not findings:
        line(f"[green]No problems found[/] in {escape(target.python)}.")
        return
    for f in findings:
        line(f"[{_STYLE[f.severity]}]{f.severity}[/]: [bold]{escape(f.title)}[/]")
        line(f"  {escape(f.explanation)}")
        if f.fix:
            line(f"  fix: [bold]{escape(f.fix)}[/]")
    counts = {s: sum(1 for f in findings if f.severity == s) for s in _STYLE}
    line(", ".join(f"{n} {s}{'s' if n != 1 else ''}" for s, n in counts.items() if n))
