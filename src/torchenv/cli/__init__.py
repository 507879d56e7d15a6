"""The command line: argument parsing and the one error boundary. Logic lives in the library."""

from __future__ import annotations

import argparse
import importlib
import json
import os
import signal
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from torchenv import __version__
from torchenv.errors import BadInput, TorchenvError

__all__ = ["COMMANDS", "MAX_ARGUMENTS", "Parser", "build_parser", "entry_point", "main", "parse"]

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

Exit codes: 0 ok, 1 validation/doctor failures (or drift, for matrix update --check), 2 bad
input, 3 nothing satisfies the request, 4 a network source could not be reached, 130/143
interrupted.
"""

MAX_ARGUMENTS = 4096
"""The most words of one command line: far more than any real one (a flag per GPU of a node),
and few enough that parsing them stays quick."""

COMMANDS = {
    "detect": "detect",
    "resolve": "resolve",
    "env": "resolve",
    "install": "resolve",
    "validate": "validate",
    "doctor": "doctor",
    "matrix": "matrix",
    "fleet": "fleet",
}
"""Each command and the module of :mod:`torchenv.cli` that registers it."""


def _given_value(text: str) -> str:
    """An option's text value as given, refused when empty: ``--host "$FILE"`` with the
    variable unset must not quietly mean "this machine"."""
    if not text.strip():
        raise argparse.ArgumentTypeError(
            f"{text!r} is {'blank' if text else 'empty'}: give a value, or leave the option out")
    return text


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors go through the one error boundary (exit 2), and
    whose options and arguments without a type of their own refuse an empty value."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.register("type", None, _given_value)  # the type of those declared without one
        # the innermost (sub)command's defaults win, so a usage error names its own --help
        self.set_defaults(_usage_prog=self.prog)

    def add_subparsers(self, **kwargs: Any) -> Any:
        action = super().add_subparsers(**kwargs)
        action.type = str  # the words after a command are for the command's own parser to judge
        return action

    def error(self, message: str) -> NoReturn:
        raise BadInput(message, hint=f"see '{self.prog} --help'")


def build_parser(prog: str | None = None, only: str | None = None) -> Parser:
    """The parser of every command; with ``only``, the first word of a command line, the parser
    of what that line needs (commands are imported on demand: see :func:`_modules`)."""
    parser = Parser(prog=prog or "torchenv", description=_DESCRIPTION,
                    formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-V", "--version", action="version", version=f"torchenv {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in _modules(only):
        importlib.import_module(f"torchenv.cli.{name}").register(sub)
    return parser


def _modules(first: str | None) -> list[str]:
    """The CLI modules a command line starting with ``first`` needs: the named command's; none
    for the version; every one otherwise (--help and a usage error list the commands)."""
    if first in ("-V", "--version"):
        return []
    if first is not None and first in COMMANDS:
        return [COMMANDS[first]]
    return list(dict.fromkeys(COMMANDS.values()))


def parse(parser: argparse.ArgumentParser, args: Sequence[str]) -> argparse.Namespace:
    """``parse_args``, with unrecognized arguments blamed on the subcommand that was given."""
    namespace, extras = parser.parse_known_args(list(args))
    if extras:
        prog = getattr(namespace, "_usage_prog", parser.prog)
        raise BadInput(f"unrecognized arguments: {' '.join(extras)}",
                       hint=f"see '{prog} --help'")
    return namespace


def main(argv: Sequence[str] | None = None, prog: str | None = None) -> int:
    """Run one command and return its exit status."""
    from torchenv.cli._output import OutputNotDelivered, cleaned_output

    args = list(sys.argv[1:] if argv is None else argv)
    previous = _catch_sigterm()
    try:
        with cleaned_output():
            status = _run(args, prog)
            sys.stdout.flush()  # a reader that went away shows here, not at interpreter exit
        return status
    except (OutputNotDelivered, BrokenPipeError) as exc:
        return _not_delivered(exc.why if isinstance(exc, OutputNotDelivered)
                              else "the reader of standard output has gone")
    except (KeyboardInterrupt, _Terminated) as exc:
        from torchenv._subprocess import reap_children

        reap_children()  # whatever is still running ends with the command
        signum = exc.signum if isinstance(exc, _Terminated) else signal.SIGINT
        print("torchenv: interrupted" + (" (SIGTERM)" if signum == signal.SIGTERM else ""),
              file=sys.stderr)
        return 128 + signum
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _not_delivered(why: str) -> int:
    """Standard output is closed or its reader went away (``torchenv ... | head``): say so on
    stderr and fail. What is still buffered goes to devnull, so that the interpreter's flush at
    exit does not fail on it once more."""
    import contextlib

    if sys.stderr is not None:
        with contextlib.suppress(OSError, ValueError):
            print(f"torchenv: error: {why}; the output was not delivered", file=sys.stderr)
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    return 1


def _run(args: list[str], prog: str | None) -> int:
    """The command's status; a library error becomes its message, hint and exit code.

    The message names the flag, variable or ``[tool.torchenv]`` key that gave the value it is
    about (:mod:`torchenv.cli._fields`).
    """
    namespace = None
    try:
        if len(args) > MAX_ARGUMENTS:  # argparse's time grows with the square of their number
            raise BadInput(f"{len(args):,} arguments; torchenv reads at most "
                           f"{MAX_ARGUMENTS:,} on one command line",
                           hint="give many GPUs with TORCHENV_GPUS or a --host file, each "
                           "kind of GPU once")
        namespace = parse(build_parser(prog, only=args[0] if args else None), args)
        status: int = namespace.func(namespace)
        return status
    except TorchenvError as exc:
        from torchenv.cli import _fields
        from torchenv.cli._output import clip_long_words

        recorded = _fields.sources(namespace)
        hint = _fields.hint(exc)
        print(f"torchenv: error: {clip_long_words(_fields.message(exc, recorded))}",
              file=sys.stderr)
        if hint:
            print(f"  hint: {clip_long_words(hint)}", file=sys.stderr)
        if "--json" in args:  # with --json, a failure is still one JSON document on stdout
            doc = _fields.error_document(exc, recorded)
            sys.stdout.write(json.dumps(doc, indent=2) + "\n")
        return exc.exit_code


class _Terminated(BaseException):
    """SIGTERM, raised in the main thread so that every cleanup on the way out runs."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _on_sigterm(signum: int, frame: object) -> None:
    raise _Terminated(signum)


def _catch_sigterm() -> Any:
    """Install the SIGTERM handler; the one it replaces, or None where none can be set (only
    the main thread may set one)."""
    try:
        return signal.signal(signal.SIGTERM, _on_sigterm)
    except ValueError:
        return None


def entry_point() -> None:
    """The console script and ``python -m torchenv``."""
    sys.exit(main())
