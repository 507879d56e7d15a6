"""The command line: argument parsing and the one error boundary. Logic lives in the library."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from torchenv import __version__
from torchenv.errors import BadInput, TorchenvError

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
  torchenv fleet ...         validate every node of a Slurm or Kubernetes cluster, merge verdicts

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
    "fleet": "fleet",
}


def _terminal_width() -> int:
    import os

    try:
        columns = int(os.environ.get("COLUMNS", "0")) or os.get_terminal_size(2).columns
    except (ValueError, OSError):
        columns = 80
    return max(columns - 2, 40)


class _Formatter(argparse.HelpFormatter):
    # argparse measures the terminal through shutil, whose import costs more than the rest of
    # the parser setup; os answers the same question
    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: int | None = None) -> None:
        super().__init__(prog, indent_increment, max_help_position,
                         width if width is not None else _terminal_width())


class _RawFormatter(argparse.RawDescriptionHelpFormatter, _Formatter):
    pass


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors go through the one error boundary (exit 2)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        given = kwargs.get("formatter_class", argparse.HelpFormatter)
        kwargs["formatter_class"] = (_RawFormatter
                                     if issubclass(given, argparse.RawDescriptionHelpFormatter)
                                     else _Formatter)
        super().__init__(*args, **kwargs)
        # the innermost (sub)command's defaults win, so a usage error names its own --help
        self.set_defaults(_usage_prog=self.prog)

    def error(self, message: str) -> NoReturn:
        raise BadInput(message, hint=f"see '{self.prog} --help'")


def _parse(parser: argparse.ArgumentParser, args: list[str]) -> argparse.Namespace:
    """``parse_args``, with unrecognized arguments blamed on the subcommand that was given."""
    namespace, extras = parser.parse_known_args(args)
    if extras:
        prog = getattr(namespace, "_usage_prog", parser.prog)
        raise BadInput(f"unrecognized arguments: {' '.join(extras)}",
                       hint=f"see '{prog} --help'")
    return namespace


def build_parser(prog: str | None = None, only: str | None = None) -> argparse.ArgumentParser:
    """The full parser, or (``only``) one whose sole subcommands live in one CLI module.

    Registering a single module keeps the other commands' imports off the startup path.
    """
    import importlib

    parser = _Parser(
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
    as_json = "--json" in args_list
    previous = _catch_sigterm()
    try:
        parser = build_parser(prog, only=None if wants_help else first)
        args = _parse(parser, args_list)
        status: int = args.func(args)
        return status
    except TorchenvError as exc:
        _report(exc.message, exc.hint)
        if as_json:
            _report_json(exc)
        return exc.exit_code
    except (KeyboardInterrupt, _Terminated) as exc:
        from torchenv._subprocess import reap_children

        reap_children()  # whatever is still running ends with the command
        signum = exc.signum if isinstance(exc, _Terminated) else 2
        print("torchenv: interrupted" + (" (SIGTERM)" if signum == 15 else ""), file=sys.stderr)
        return 128 + signum
    except BrokenPipeError:
        return 1
    finally:
        _restore_sigterm(previous)


class _Terminated(BaseException):
    """SIGTERM, raised in the main thread so that every cleanup on the way out runs."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _on_sigterm(signum: int, frame: object) -> None:
    raise _Terminated(signum)


def _catch_sigterm() -> object:
    # _signal, not signal: the latter builds an enum of every signal (about 1 ms per start);
    # outside the main thread setting a handler raises ValueError and nothing is caught
    import importlib

    signals: Any = importlib.import_module("_signal")
    try:
        return signals.signal(signals.SIGTERM, _on_sigterm)
    except (ValueError, OSError):
        return None


def _restore_sigterm(previous: object) -> None:
    import importlib

    if previous is None:
        return
    signals: Any = importlib.import_module("_signal")
    try:
        signals.signal(signals.SIGTERM, previous)
    except (ValueError, OSError, TypeError):
        return


def _report(message: str, hint: str | None) -> None:
    print(f"torchenv: error: {message}", file=sys.stderr)
    if hint:
        print(f"  hint: {hint}", file=sys.stderr)


def _report_json(exc: TorchenvError) -> None:
    """With --json, a failure is still one JSON document on stdout."""
    import json

    to_json = getattr(exc, "to_json", None)  # an unsatisfiable request carries its evidence
    doc: dict[str, object] = dict(to_json()) if callable(to_json) else {}
    doc.update(error=exc.message, hint=exc.hint, exit_code=exc.exit_code)
    sys.stdout.write(json.dumps(doc, indent=2) + "\n")


def entry_point() -> None:
    sys.exit(main())
