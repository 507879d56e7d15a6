"""argparse, for what the fast reader of :mod:`torchenv.cli._args` leaves to it: help, usage
errors and every less plain command line. Imported only then."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any, NoReturn

from torchenv.cli._args import Spec, to_argparse
from torchenv.errors import BadInput

__all__ = ["Parser", "argparse_parser", "parse"]


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


class Parser(argparse.ArgumentParser):
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


def argparse_parser(spec: Spec) -> argparse.ArgumentParser:
    """The argparse parser for ``spec``'s declarations."""
    return to_argparse(spec, Parser, _RawFormatter)


def parse(parser: argparse.ArgumentParser, args: Sequence[str]) -> argparse.Namespace:
    """``parse_args``, with unrecognized arguments blamed on the subcommand that was given."""
    namespace, extras = parser.parse_known_args(list(args))
    if extras:
        prog = getattr(namespace, "_usage_prog", parser.prog)
        raise BadInput(f"unrecognized arguments: {' '.join(extras)}",
                       hint=f"see '{prog} --help'")
    return namespace
