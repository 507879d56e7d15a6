"""The command line: argument parsing and the one error boundary. Logic lives in the library."""

from __future__ import annotations

import os
import signal
import sys

from torchenv import __version__
from torchenv.cli._args import RAW_DESCRIPTION, Spec, fast_parse
from torchenv.errors import TorchenvError

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence
    from typing import Any

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


def build_spec(prog: str | None = None, only: str | None = None) -> Spec:
    """The declared options of every command, or (``only``) of the commands of one CLI module.

    Registering a single module keeps the other commands' imports off the startup path.
    """
    import importlib

    spec = Spec(prog or "torchenv", description=_DESCRIPTION, formatter_class=RAW_DESCRIPTION)
    spec.add_argument("--version", action="version", version=f"torchenv {__version__}")
    # an explicit prog keeps argparse from building a HelpFormatter (and importing shutil)
    sub = spec.add_subparsers(dest="command", metavar="COMMAND", prog=spec.prog)
    sub.required = True
    names = [_MODULES[only]] if only in _MODULES else list(dict.fromkeys(_MODULES.values()))
    for name in names:
        importlib.import_module(f"torchenv.cli.{name}").register(sub)
    return spec


def build_parser(prog: str | None = None, only: str | None = None) -> argparse.ArgumentParser:
    """The argparse parser of :func:`build_spec`: what parses, explains (--help) and refuses
    every command line the fast reader leaves to it."""
    from torchenv.cli._parser import argparse_parser

    return argparse_parser(build_spec(prog, only))


def main(argv: Sequence[str] | None = None, prog: str | None = None) -> int:
    """Run one command and return its exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args in (["--version"], ["-V"]):  # the fast path: no parser, no imports
        print(f"torchenv {__version__}")
        return 0
    previous = _catch_sigterm()
    try:
        status = _run(args, prog)
        if sys.stdout is not None:
            sys.stdout.flush()  # a reader that went away shows here, not at interpreter exit
        return status
    except (KeyboardInterrupt, _Terminated) as exc:
        from torchenv._subprocess import reap_children

        reap_children()  # whatever is still running ends with the command
        signum = exc.signum if isinstance(exc, _Terminated) else signal.SIGINT
        print("torchenv: interrupted" + (" (SIGTERM)" if signum == signal.SIGTERM else ""),
              file=sys.stderr)
        return 128 + signum
    except BrokenPipeError:
        # stdout's reader went away (`torchenv ... | head`): what is still buffered goes to
        # devnull, so that the interpreter's flush at exit does not fail on it once more
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _run(args: list[str], prog: str | None) -> int:
    """The command's status; a library error becomes its message, hint and exit code."""
    first = args[0] if args else None
    wants_help = any(a in ("-h", "--help") for a in args[:1])
    try:
        spec = build_spec(prog, only=None if wants_help else first)
        namespace = fast_parse(spec, args)
        if namespace is None:  # --help, a usage error, or a form only argparse reads
            from torchenv.cli._parser import argparse_parser, parse

            namespace = parse(argparse_parser(spec), args)
        status: int = namespace.func(namespace)
        return status
    except TorchenvError as exc:
        _report(exc.message, exc.hint)
        if "--json" in args:
            _report_json(exc)
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
    """The console script and ``python -m torchenv``."""
    sys.exit(main())
