"""The one table from the library's fields to the words a user typed, and what uses it.

The library speaks of fields: an error is about ``field="variant"`` and ``value="bogus"``, a fix
changes ``{"variant": "cpu"}``. Here each field gets the flag, the ``TORCHENV_*`` variable and
the ``[tool.torchenv]`` key that can give it. A command records which of them gave each value
(:func:`given`), so the error boundary names the one the user wrote (:func:`message`), and a
fix is written as the flags that would apply it (:func:`spell`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Literal, NamedTuple, Optional

if TYPE_CHECKING:
    import argparse

    from torchenv.errors import TorchenvError
    from torchenv.resolver.plan import Change, Fix

__all__ = [
    "FIELDS",
    "Field",
    "Source",
    "error_document",
    "fix_text",
    "given",
    "hint",
    "message",
    "origin",
    "sources",
    "spell",
]

Source = Literal["flag", "variable", "pyproject", "alias"]


class Field(NamedTuple):
    """How a user can give one field: a flag, perhaps a variable, perhaps a pyproject key."""

    flag: str
    variable: Optional[str] = None
    pyproject: Optional[str] = None  # the key in [tool.torchenv]
    alias: Optional[str] = None  # the flag of the commands that give it by another name

    def name(self, source: Source) -> str:
        """The words naming ``source`` (the flag when the field has no such source)."""
        if source == "variable" and self.variable:
            return self.variable
        if source == "pyproject" and self.pyproject:
            return f"pyproject.toml [tool.torchenv] {self.pyproject}"
        if source == "alias" and self.alias:
            return self.alias
        return self.flag

    def names(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(self.name(s)
                                   for s in ("flag", "variable", "pyproject", "alias")))


FIELDS: dict[str, Field] = {
    # the request
    "torch": Field("--torch", pyproject="torch"),
    "variant": Field("--variant", pyproject="variant"),
    "cuda": Field("--cuda"),
    "with": Field("--with", pyproject="with"),
    "allow_build": Field("--allow-build"),
    "index_base": Field("--index-base", "TORCHENV_INDEX_BASE"),
    "pypi_base": Field("--pypi-base", "TORCHENV_PYPI_BASE"),  # matrix update
    "pyg_base": Field("--pyg-base"),  # matrix update
    "github_api_base": Field("--github-api-base"),  # matrix update
    # the host (overrides of what detection finds)
    "python": Field("--python", "TORCHENV_PYTHON", "python"),
    # an interpreter to inspect: --python PATH, or --python-exe where that names it
    "interpreter": Field("--python", "TORCHENV_PYTHON", alias="--python-exe"),
    "platform": Field("--platform", "TORCHENV_PLATFORM"),
    "driver": Field("--driver", "TORCHENV_DRIVER_VERSION"),
    "gpus": Field("--gpu", "TORCHENV_GPUS"),
    "rocm_archs": Field("--rocm-arch"),
    "glibc": Field("--glibc"),
    "no_gpu": Field("--no-gpu"),
    "host": Field("--host"),
    "no_torchvision": Field("--no-torchvision"),
    "no_torchaudio": Field("--no-torchaudio"),
    # what a command shows
    "explain": Field("--explain"),
    "format": Field("--format"),
    "output": Field("-o"),
}
"""Every field the library names, in its own terms, with the words the command line uses."""


def given(args: argparse.Namespace, field: str, source: Source) -> None:
    """Record that ``source`` gave the value of ``field`` for the command ``args`` runs."""
    vars(args).setdefault("_sources", {})[field] = source


def sources(args: argparse.Namespace | None) -> Mapping[str, Source]:
    """What :func:`given` recorded for ``args`` (nothing for a command line that did not parse)."""
    recorded: Mapping[str, Source] = getattr(args, "_sources", {})
    return recorded


def origin(field: str, recorded: Mapping[str, Source]) -> str:
    """The words naming where ``field``'s value came from: its flag unless recorded otherwise."""
    return FIELDS[field].name(recorded.get(field, "flag"))


def message(exc: TorchenvError, recorded: Mapping[str, Source]) -> str:
    """``exc.message`` led by where the value it is about came from: the library names the
    field (``field="variant"``), and this names the flag, variable or ``[tool.torchenv]`` key
    that gave it. An error without a field (the command line's own) stays as it is."""
    if exc.field not in FIELDS:
        return exc.message
    return f"{origin(exc.field, recorded)}: {exc.message}"


def spell(change: Change) -> list[str]:
    """A change of the request as the flags that make it: ``{"variant": "cpu"}`` →
    ``["--variant", "cpu"]``; a field without a value is its flag alone, one with several
    values its flag before each."""
    words: list[str] = []
    for field, value in change.items():
        flag = FIELDS[field].flag
        if value is None:
            words.append(flag)
        elif isinstance(value, str):
            words += [flag, value]
        else:
            words += [word for item in value for word in (flag, item)]
    return words


def fix_text(fix: Fix) -> str:
    """A fix as the command line says it, its changes written as flags."""
    return fix.text(spell)


def hint(exc: TorchenvError) -> str | None:
    """What to do next: the error's hint, or for an unsatisfiable request its nearest fix."""
    from torchenv.resolver.plan import NoMatch

    if isinstance(exc, NoMatch):
        return fix_text(exc.fixes[0]) if exc.fixes else None
    return exc.hint


def error_document(exc: TorchenvError, recorded: Mapping[str, Source]) -> dict[str, object]:
    """The one JSON document of a failed ``--json`` command: an unsatisfiable request's
    evidence, then the error, the hint and the exit code."""
    from torchenv.resolver.plan import NoMatch

    doc: dict[str, object] = dict(exc.to_json(spell)) if isinstance(exc, NoMatch) else {}
    from torchenv.cli._output import clip_long_words

    shown = hint(exc)
    doc.update(error=clip_long_words(message(exc, recorded)),
               hint=None if shown is None else clip_long_words(shown), exit_code=exc.exit_code)
    return doc
