"""The command line: argument parsing and the one error boundary. Logic lives in the library."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from torchenv import __version__
from torchenv.errors import TorchenvError

__all__ = ["build_parser", "entry_point", "main"]

_DESCRIPTION = """\
Pick, install and prove the right PyTorch build for a machine.

  torchenv detect            what this machine has (driver, GPUs, Python, torch)
  torchenv resolve           the right torch build here, with pip/uv/conda/pixi commands
  torchenv env --format F    write environment.yml, requirements.txt, pyproject or pixi.toml
  torchenv install           run the resolved pip or uv command
  torchenv validate          prove the installed torch works on this hardware
  torchenv doctor            diagnose a broken install and print the fix
  torchenv matrix ...        show, check, update the compatibility matrix; CI matrices

Exit codes: 0 ok, 1 validation/doctor failures, 2 bad input, 3 nothing satisfies the request.
"""


_MODULES = {
    "detect": "detect",
    "resolve": "resolve",
    "env": "resolve",
    "install": "resolve",
    "validate": "validate",
    "doctor": "doctor",
    "matrix": "matrix",
}


def build_parser(prog: str | None = None, only: str | None = None) -> argparse.ArgumentParser:
    """The full parser, or (``only``) one whose sole subcommands live in one CLI module.

    Registering a single module keeps the other commands' imports off the startup path.
    """
    import importlib

    parser = argparse.ArgumentParser(
        prog=prog or "torchenv",
        description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"torchenv {__version__}")
    # an explicit prog keeps argparse from building a HelpFormatter (and importing shutil)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", prog=parser.prog)
    sub.required = True
    names = [_MODULES[only]] if only in _MODULES else list(dict.fromkeys(_MODULES.values()))
    for name in names:
        importlib.import_module(f"torchenv.cli.{name}").register(sub)
    return parser


def main(argv: Sequence[str] | None = None, prog: str | None = None) -> int:
    """Run one command and return its exit status."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list in (["--version"], ["-V"]):  # the fast path: no parser, no imports
        print(f"torchenv {__version__}")
        return 0
    first = args_list[0] if args_list else None
    wants_help = any(a in ("-h", "--help") for a in args_list[:1])
    parser = build_parser(prog, only=None if wants_help else first)
    args = parser.parse_args(args_list)
    try:
        status: int = args.func(args)
        return status
    except TorchenvError as exc:
        _report(exc.message, exc.hint)
        return exc.exit_code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 1


def _report(message: str, hint: str | None) -> None:
    print(f"torchenv: error: {message}", file=sys.stderr)
    if hint:
        print(f"  hint: {hint}", file=sys.stderr)


def entry_point() -> None:
    sys.exit(main())
