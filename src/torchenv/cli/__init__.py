"""The command line: argument parsing and the one error boundary. Logic lives in the library."""

from __future__ import annotations

import sys

from torchenv import __version__
from torchenv.cli._args import RAW_DESCRIPTION, Spec, fast_parse
from torchenv.errors import TorchenvError

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence
    from typing import Any, NoReturn

__all__ = ["build_parser", "entry_point", "leave", "main"]

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
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list in (["--version"], ["-V"]):  # the fast path: no parser, no imports
        print(f"torchenv {__version__}")
        return 0
    first = args_list[0] if args_list else None
    wants_help = any(a in ("-h", "--help") for a in args_list[:1])
    as_json = "--json" in args_list
    previous = _catch_sigterm()
    try:
        spec = build_spec(prog, only=None if wants_help else first)
        args = fast_parse(spec, args_list)
        if args is None:  # --help, a usage error, or a form only argparse reads
            from torchenv.cli._parser import argparse_parser, parse

            args = parse(argparse_parser(spec), args_list)
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
    """The console script and ``python -m torchenv``: run one command and leave."""
    leave(main())


def leave(status: int) -> NoReturn:
    """End the process with ``status`` once the exit handlers have run and the output is out.

    Where nothing else would run at interpreter shutdown (no thread to wait for, no profiler,
    tracer or ``sys.monitoring`` tool, no interactive prompt after the script), the process
    ends without freeing every object one by one: on a resolve that teardown costs about as
    much as the resolve itself.
    """
    if _shutdown_has_work():
        sys.exit(status)
    import atexit
    import os

    try:
        atexit._run_exitfuncs()
        for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
            try:
                if stream is not None:
                    stream.flush()
            except (OSError, ValueError):  # the reader went away, or the stream was closed
                status = status or 1
    except KeyboardInterrupt:  # Ctrl-C while the last output waits for its reader
        status = 130
    os._exit(status)


def _shutdown_has_work() -> bool:
    threading = sys.modules.get("threading")
    if threading is not None and any(
            t.is_alive() and not t.daemon and t is not threading.main_thread()
            for t in threading.enumerate()):
        return True
    if sys.flags.inspect or sys.getprofile() is not None or sys.gettrace() is not None:
        return True
    monitoring = getattr(sys, "monitoring", None)  # Python 3.12+: cProfile and coverage use it
    return monitoring is not None and any(monitoring.get_tool(i) is not None for i in range(6))
