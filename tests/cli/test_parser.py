"""The command line's argparse parser: every command on one parser, usage errors through the one
error boundary (exit 2, with the failing command's own --help named)."""

from __future__ import annotations

import argparse
from collections.abc import Iterator

import pytest

from torchenv.cli import COMMANDS, build_parser, main, parse
from torchenv.errors import BadInput


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return {name: sub for action in actions for name, sub in action.choices.items()}


def _leaves(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
            ) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    subcommands = _subcommands(parser)
    if not subcommands:
        yield path, parser
    for name, sub in subcommands.items():
        yield from _leaves(sub, (*path, name))


def _required_words(parser: argparse.ArgumentParser) -> list[str]:
    """Values for the options and positionals a command cannot run without."""
    words: list[str] = []
    for action in parser._actions:
        if action.option_strings and action.required:
            words += [action.option_strings[-1], "1"]
        elif not action.option_strings and action.nargs is None:
            words.append("some-dir")
    return words


def test_every_command_is_declared_on_one_parser() -> None:
    """argparse refuses an option declared twice on one parser (or on one of its groups): the
    whole parser is built here, every command registered, so such a declaration fails."""
    parser = build_parser()
    assert set(_subcommands(parser)) == set(COMMANDS)
    leaves = [" ".join(path) for path, _ in _leaves(parser)]
    for command in ("detect", "resolve", "env", "install", "validate", "doctor", "matrix show",
                    "matrix check", "matrix ci", "matrix update", "matrix html",
                    "matrix coverage", "fleet slurm", "fleet k8s", "fleet report"):
        assert command in leaves


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_command_alone_is_declared_as_on_the_whole_parser(command: str) -> None:
    """Only the module of the command named on the command line is imported and registered."""
    alone = _subcommands(build_parser(only=command))[command]
    whole = _subcommands(build_parser())[command]
    assert alone.format_help() == whole.format_help()


def test_every_command_runs_something() -> None:
    for path, leaf in _leaves(build_parser()):
        args = parse(build_parser(), [*path, *_required_words(leaf)])
        assert callable(args.func), path


def test_usage_errors_are_bad_input_naming_the_commands_help() -> None:
    parser = build_parser()
    assert parse(parser, ["resolve", "--jso"]).json is True  # an abbreviation argparse takes
    with pytest.raises(BadInput, match="expected one argument") as info:
        parse(parser, ["resolve", "--gpu"])
    assert info.value.hint == "see 'torchenv resolve --help'"
    with pytest.raises(BadInput, match="invalid float value: 'soon'"):
        parse(parser, ["validate", "--timeout", "soon"])
    with pytest.raises(BadInput, match="invalid choice: 'bogus'") as info:
        parse(parser, ["bogus"])
    assert info.value.hint == "see 'torchenv --help'"


@pytest.mark.parametrize(("argv", "prog"), [
    (["resolve", "extra"], "torchenv resolve"),
    (["matrix", "show", "--bogus"], "torchenv matrix show"),
    (["fleet", "report", "dir", "--nope"], "torchenv fleet report"),
])
def test_unrecognized_arguments_are_blamed_on_the_subcommand_given(argv: list[str],
                                                                   prog: str) -> None:
    with pytest.raises(BadInput, match=f"unrecognized arguments: {argv[-1]}") as info:
        parse(build_parser(), argv)
    assert info.value.hint == f"see '{prog} --help'"


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_the_version_is_printed(flag: str, capsys: pytest.CaptureFixture[str]) -> None:
    from torchenv import __version__

    with pytest.raises(SystemExit) as info:
        main([flag])
    assert info.value.code == 0
    assert capsys.readouterr().out == f"torchenv {__version__}\n"


def test_the_help_lists_every_exit_code(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["--help"])
    assert info.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    for code in ("0 ok", "1 validation/doctor failures", "2 bad input",
                 "3 nothing satisfies the request", "4 a network source could not be reached",
                 "130/143 interrupted"):
        assert code in text, code


def test_a_network_error_exits_4_never_1() -> None:
    """1 means drift found (``matrix update --check``); an unreachable source is another thing."""
    from torchenv.errors import NetworkError

    assert NetworkError("offline").exit_code == 4


def _value_options() -> Iterator[tuple[str, list[str], str]]:
    for path, leaf in _leaves(build_parser()):
        for action in leaf._actions:
            if action.option_strings and action.nargs != 0:
                yield " ".join(path), list(path), action.option_strings[-1]


@pytest.fixture(scope="module")
def whole_parser() -> argparse.ArgumentParser:
    return build_parser()  # parsing leaves it as it was: one serves every case


@pytest.mark.parametrize(("command", "path", "option"),
                         [pytest.param(c, p, o, id=f"{c} {o}") for c, p, o in _value_options()])
def test_an_empty_value_is_refused_by_the_parser_naming_the_option(
        whole_parser: argparse.ArgumentParser, command: str, path: list[str],
        option: str) -> None:
    """``--host "$FILE"`` with the variable unset gives ``--host ''``: never "not given"."""
    parser = whole_parser
    leaf = dict(_leaves(parser))[tuple(path)]
    words = _required_words(leaf)
    if option in words:  # a required option: its own empty value replaces the placeholder
        words[words.index(option) + 1] = ""
    else:
        words += [option, ""]
    with pytest.raises(BadInput) as caught:
        parse(parser, [*path, *words])
    assert option in str(caught.value)
    assert caught.value.hint and f"torchenv {command} --help" in caught.value.hint
