"""The fast reader of command lines gives argparse's namespace, or leaves the line to argparse."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from torchenv.cli import build_spec
from torchenv.cli._args import Spec, fast_parse
from torchenv.cli._parser import argparse_parser, parse
from torchenv.errors import BadInput

SPEC = build_spec()


def _commands(spec: Spec, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Spec]]:
    if spec.subparsers is None:
        yield path, spec
        return
    for name, (child, _) in spec.subparsers.parsers.items():
        yield from _commands(child, (*path, name))


Declared = tuple[tuple[str, ...], dict[str, Any], int]


def _declared(items: list[tuple[str, Any, Any]], group: int = 0) -> Iterator[Declared]:
    """(flags, keywords, exclusive group number or 0) of every declared argument."""
    for kind, payload, child in items:
        if kind == "arg":
            yield payload, child, group
        elif kind in ("group", "mutex"):
            yield from _declared(child.items, id(child) if kind == "mutex" else group)


def _sample(kwargs: dict[str, Any]) -> str:
    if kwargs.get("choices"):
        return str(list(kwargs["choices"])[-1])
    return {int: "7", float: "2.5"}.get(kwargs.get("type"), "some-value")  # type: ignore[arg-type]


def _positional(flags: tuple[str, ...]) -> bool:
    return not flags[0].startswith("-")


def _command_lines() -> Iterator[tuple[str, list[str]]]:
    """For every command: each option alone, in both spellings, then all of them at once."""
    for path, spec in _commands(SPEC):
        declared = list(_declared(spec.items))
        if any(_positional(flags) for flags, _, _ in declared):
            continue  # a positional: argparse's to read (checked below)
        required = [(flags, _sample(kwargs)) for flags, kwargs, _ in declared
                    if kwargs.get("required")]
        yield " ".join(path) + " (defaults)", [*path, *(w for f, v in required for w in (f[-1], v))]
        everything: list[str] = [*path]
        used_groups: set[int] = set()
        for flags, kwargs, group in declared:
            if kwargs.get("action") in ("help", "version"):
                continue
            flag = next(f for f in flags if f.startswith("--"))
            rest = [w for f, v in required if f != flags for w in (f[-1], v)]
            if kwargs.get("action") in ("store_true", "store_false"):
                yield f"{' '.join(path)} {flag}", [*path, *rest, flag]
                words = [flag]
            else:
                value = _sample(kwargs)
                for short in (f for f in flags if not f.startswith("--")):
                    yield f"{' '.join(path)} {short}", [*path, *rest, short, value]
                yield f"{' '.join(path)} {flag} V", [*path, *rest, flag, value]
                yield f"{' '.join(path)} {flag}=V", [*path, *rest, f"{flag}={value}"]
                words = [f"{flag}={value}"]
                if kwargs.get("action") == "append":
                    words += [flag, value]  # given twice: both kept
            if kwargs.get("required") or (group and group in used_groups):
                continue
            used_groups.add(group)
            everything += words
        everything += [w for f, v in required for w in (f[-1], v)]
        yield f"{' '.join(path)} (everything)", everything


CASES = list(_command_lines())


@pytest.mark.parametrize("argv", [argv for _, argv in CASES], ids=[name for name, _ in CASES])
def test_the_fast_reader_gives_argparses_namespace(argv: list[str]) -> None:
    fast = fast_parse(SPEC, argv)
    assert fast is not None, f"{argv} was left to argparse"
    assert vars(fast) == vars(parse(argparse_parser(SPEC), argv))


def test_every_plain_command_is_read_fast() -> None:
    covered = {name.split(" (")[0].split(" -")[0] for name, _ in CASES}
    for command in ("detect", "resolve", "env", "install", "validate", "doctor", "matrix show",
                    "matrix ci"):
        assert command in covered


@pytest.mark.parametrize("argv", [
    ["resolve", "--help"],
    ["resolve", "-h"],
    ["--version", "resolve"],
    ["resolve", "--jso"],                 # an abbreviation argparse accepts
    ["resolve", "--json=yes"],            # a value for a flag
    ["resolve", "--gpu"],                 # no value
    ["resolve", "--driver", "--json"],    # an option where the value should be
    ["resolve", "--driver", "-5"],        # a value that starts with a dash
    ["resolve", "--", "x"],
    ["resolve", "extra"],                 # a positional resolve does not take
    ["validate", "--timeout", "soon"],    # not a number
    ["validate", "--level", "everything"],  # not a choice
    ["env"],                              # --format is required
    ["bogus"],
    [],
])
def test_anything_else_is_left_to_argparse(argv: list[str]) -> None:
    assert fast_parse(SPEC, argv) is None


def test_what_is_left_to_argparse_is_parsed_or_refused_by_it() -> None:
    parser = argparse_parser(SPEC)
    assert parse(parser, ["resolve", "--jso"]).json is True
    with pytest.raises(BadInput, match="expected one argument"):
        parse(parser, ["resolve", "--gpu"])
    with pytest.raises(BadInput, match="invalid float value: 'soon'"):
        parse(parser, ["validate", "--timeout", "soon"])
    with pytest.raises(BadInput, match="unrecognized arguments: extra") as info:
        parse(parser, ["resolve", "extra"])
    assert info.value.hint == "see 'torchenv resolve --help'"


def test_commands_with_positionals_are_read_by_argparse() -> None:
    positional = [path for path, spec in _commands(SPEC)
                  if any(_positional(flags) for flags, _, _ in _declared(spec.items))]
    assert positional, "no command takes a positional: this test checks nothing"
    for path in positional:
        assert fast_parse(SPEC, list(path)) is None


def test_a_subcommand_usage_error_names_its_own_help() -> None:
    fast = fast_parse(SPEC, ["matrix", "show", "--json"])
    assert fast is not None and fast._usage_prog == "torchenv matrix show"
