"""The one table from the library's fields to flags, variables and pyproject keys."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from torchenv.cli import build_parser
from torchenv.cli._fields import FIELDS, Source, fix_text, given, message, sources, spell
from torchenv.errors import BadInput
from torchenv.resolver.plan import Change, Fix

README = (Path(__file__).parents[2] / "README.md").read_text(encoding="utf-8")


def _options(parser: argparse.ArgumentParser) -> set[str]:
    found = {s for a in parser._actions for s in a.option_strings}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found |= _options(sub)
    return found


def test_every_flag_and_variable_of_the_table_exists() -> None:
    options = _options(build_parser())
    for name, field in FIELDS.items():
        assert field.flag in options, name
        if field.variable:
            assert field.variable in README, name


@pytest.mark.parametrize(("change", "words"), [
    ({"variant": "cpu"}, ["--variant", "cpu"]),
    ({"driver": "VERSION", "gpus": ("6.1", "9.0")},
     ["--driver", "VERSION", "--gpu", "6.1", "--gpu", "9.0"]),
    ({"explain": None, "no_gpu": None}, ["--explain", "--no-gpu"]),
])
def test_a_change_is_written_as_the_flags_that_make_it(change: Change,
                                                     words: list[str]) -> None:
    assert spell(change) == words


def test_a_fix_is_its_text_with_the_changes_as_flags() -> None:
    fix = Fix(("pass it: ", {"gpus": ("CC",)}, " (e.g. ", {"gpus": ("8.6",)}, ")"))
    assert fix_text(fix) == "pass it: --gpu CC (e.g. --gpu 8.6)"
    quoted = Fix(("constrain it: ", {"torch": "<=2.7"}))
    assert fix_text(quoted) == "constrain it: --torch '<=2.7'"  # pasted into a shell
    assert fix.plain is None
    assert Fix(("upgrade the driver",)).plain == "upgrade the driver"


@pytest.mark.parametrize(("source", "text", "expected"), [
    (None, "'bogus' is not a variant", "--variant: 'bogus' is not a variant"),
    ("pyproject", "'bogus' is not a variant",
     "pyproject.toml [tool.torchenv] variant: 'bogus' is not a variant"),
    ("flag", "'bogus' is not a variant", "--variant: 'bogus' is not a variant"),
], ids=["no-source", "pyproject", "flag"])
def test_the_message_names_where_the_value_came_from(source: Source | None, text: str,
                                                     expected: str) -> None:
    args = argparse.Namespace()
    if source is not None:
        given(args, "variant", source)
    exc = BadInput(text, field="variant", value="bogus")
    assert message(exc, sources(args)) == expected


def test_a_variable_is_named_where_it_gave_the_value() -> None:
    args = argparse.Namespace()
    given(args, "gpus", "variable")
    exc = BadInput("'x' is not a compute capability", field="gpus", value="x")
    assert message(exc, sources(args)) == "TORCHENV_GPUS: 'x' is not a compute capability"


def test_the_library_names_fields_never_flags() -> None:
    """What the library raises about a value names no flag: the command line adds the one the
    user wrote (a flag, a variable, a [tool.torchenv] key)."""
    from torchenv.detection.overrides import Overrides
    from torchenv.resolver.request import Request

    for call in (lambda: Overrides.from_sources(gpus=["8.x"]),
                 lambda: Overrides.from_sources(driver="5x0"),
                 lambda: Overrides.from_sources(platform="linux-sparc"),
                 lambda: Overrides.from_sources(python="2.7"),
                 lambda: Request.from_text(variant="bogus"),
                 lambda: Request.from_text(torch="~~2"),
                 lambda: Request.from_text(cuda="12")):
        with pytest.raises(BadInput) as info:
            call()
        assert info.value.field in FIELDS
        assert not any(info.value.message.startswith(name)
                       for field in FIELDS.values() for name in field.names()), info.value.message


def test_an_error_about_no_field_is_left_as_it_is() -> None:
    assert message(BadInput("no terminal to ask"), {}) == "no terminal to ask"
