"""Declared options, parsed without argparse on a plain command line.

Each command module declares its options once, in ``register(sub)``, through :class:`Spec`: an
object with argparse's declaration methods (``add_parser``, ``add_argument``,
``add_argument_group``, ``add_mutually_exclusive_group``, ``set_defaults``,
``add_subparsers``) that only records the calls. Two readers use the records:

* :func:`fast_parse` reads a plain command line straight from them: subcommand names, long and
  short options spelled out in full, ``--name=value``, ``store``/``append``/``store_true``/
  ``store_false`` with ``str``/``int``/``float`` values and choices.
* :func:`to_argparse` replays them onto argparse, whose parse, help and error messages are the
  whole truth for everything else.

:func:`fast_parse` returns None for anything it does not take — ``--help``, an unknown or
abbreviated option, a value that starts with ``-``, a value argparse would refuse, a missing
required option, two options of one exclusive group, a positional, ``--`` — and the caller then
parses with argparse. On what it takes, both give the same namespace (the tests compare them
for every option of every command). Importing and building argparse parsers costs more than
detecting the machine; most command lines never need it.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from argparse import Namespace
    from collections.abc import Sequence
    from typing import Any
else:

    class Namespace:
        """What argparse.Namespace is to the commands: the parsed values as attributes."""

        def __init__(self, **values: Any) -> None:
            self.__dict__.update(values)

        def __eq__(self, other: object) -> bool:
            if not hasattr(other, "__dict__"):
                return NotImplemented
            return vars(self) == vars(other)

        def __contains__(self, key: str) -> bool:
            return key in self.__dict__

        def __repr__(self) -> str:
            inner = ", ".join(f"{k}={v!r}" for k, v in self.__dict__.items())
            return f"Namespace({inner})"


__all__ = ["RAW_DESCRIPTION", "Namespace", "Spec", "fast_parse", "to_argparse"]

RAW_DESCRIPTION = "raw-description"
"""``formatter_class`` for a parser whose description is laid out by hand (argparse's
RawDescriptionHelpFormatter, without importing argparse to name it)."""

_SIMPLE_TYPES = (None, str, int, float)
_FAST_ACTIONS = (None, "store", "store_true", "store_false", "append")
_EXIT_ACTIONS = ("help", "version")  # they print and exit: argparse's to do


class _Items:
    """The recorded declarations of a parser or of a group, in order."""

    def __init__(self) -> None:
        self.items: list[tuple[str, Any, Any]] = []

    def add_argument(self, *flags: str, **kwargs: Any) -> None:
        self.items.append(("arg", flags, kwargs))

    def add_argument_group(self, *args: Any, **kwargs: Any) -> _Group:
        group = _Group(exclusive=False)
        self.items.append(("group", (args, kwargs), group))
        return group

    def add_mutually_exclusive_group(self, **kwargs: Any) -> _Group:
        group = _Group(exclusive=True, required=bool(kwargs.get("required", False)))
        self.items.append(("mutex", kwargs, group))
        return group


class _Group(_Items):
    def __init__(self, *, exclusive: bool, required: bool = False) -> None:
        super().__init__()
        self.exclusive = exclusive
        self.required = required


class Spec(_Items):
    """A parser's declarations: ``prog``, the ArgumentParser keywords, options, subcommands."""

    def __init__(self, prog: str, **parser_kwargs: Any) -> None:
        super().__init__()
        self.prog = prog
        self.parser_kwargs = parser_kwargs
        self.defaults: dict[str, Any] = {}
        self.subparsers: _Subparsers | None = None
        # the innermost (sub)command's defaults win, so a usage error names its own --help
        self.set_defaults(_usage_prog=prog)

    def set_defaults(self, **kwargs: Any) -> None:
        self.defaults.update(kwargs)
        self.items.append(("defaults", kwargs, None))

    def add_subparsers(self, **kwargs: Any) -> _Subparsers:
        prefix = kwargs.get("prog") or self.prog
        self.subparsers = _Subparsers(prefix, kwargs)
        return self.subparsers


class _Subparsers:
    def __init__(self, prefix: str, kwargs: dict[str, Any]) -> None:
        self.prefix = prefix
        self.kwargs = kwargs
        self.required = False
        self.parsers: dict[str, tuple[Spec, dict[str, Any]]] = {}

    def add_parser(self, name: str, **kwargs: Any) -> Spec:
        prog = kwargs.get("prog") or f"{self.prefix} {name}"
        spec = Spec(prog, **{k: v for k, v in kwargs.items() if k not in ("help", "prog")})
        self.parsers[name] = (spec, kwargs)
        return spec


# --- the fast reader ----------------------------------------------------------------------


class _Option:
    __slots__ = ("action", "choices", "default", "dest", "exits", "group", "required", "type")

    def __init__(self, flags: Sequence[str], kwargs: dict[str, Any], group: _Group | None):
        self.action = kwargs.get("action")
        self.exits = self.action in _EXIT_ACTIONS
        self.type = kwargs.get("type")
        self.choices = kwargs.get("choices")
        self.required = bool(kwargs.get("required", False))
        self.group = group if group is not None and group.exclusive else None
        dest = kwargs.get("dest")
        if dest is None:
            longs = [f for f in flags if f.startswith("--")]
            dest = (longs or list(flags))[0].lstrip("-").replace("-", "_")
        self.dest: str = dest
        if "default" in kwargs:
            self.default = kwargs["default"]
        else:
            self.default = {"store_true": False, "store_false": True}.get(self.action or "")


class _Table:
    """One parser's options by flag, or None when it declares something the reader leaves to
    argparse (a positional, an action or type it does not know, a version flag)."""

    def __init__(self, spec: Spec) -> None:
        self.by_flag: dict[str, _Option] = {}
        self.options: list[_Option] = []
        self.mutex: list[_Group] = []
        self.ok = self._collect(spec.items, None)

    def _collect(self, items: list[tuple[str, Any, Any]], group: _Group | None) -> bool:
        for kind, payload, child in items:
            if kind == "arg":
                flags, kwargs = payload, child
                if not flags or not all(f.startswith("-") for f in flags):
                    return False  # a positional
                if kwargs.get("action") not in _FAST_ACTIONS + _EXIT_ACTIONS:
                    return False
                if kwargs.get("type") not in _SIMPLE_TYPES or "nargs" in kwargs or (
                        "const" in kwargs):
                    return False
                option = _Option(flags, kwargs, group)
                self.options.append(option)
                for flag in flags:
                    self.by_flag[flag] = option
            elif kind in ("group", "mutex"):
                if kind == "mutex":
                    self.mutex.append(child)
                if not self._collect(child.items, child if kind == "mutex" else group):
                    return False
        return True


def _tables(spec: Spec) -> _Table:
    cached: _Table | None = getattr(spec, "_table", None)
    if cached is None:
        cached = _Table(spec)
        spec._table = cached  # type: ignore[attr-defined]
    return cached


def _convert(option: _Option, text: str) -> tuple[bool, Any]:
    """(accepted, value): the value as argparse would store it, or not accepted."""
    kind = option.type
    try:
        value: Any = kind(text) if kind not in (None, str) else text
    except (TypeError, ValueError):
        return False, None
    if option.choices is not None and value not in option.choices:
        return False, None
    return True, value


def fast_parse(spec: Spec, argv: Sequence[str]) -> Namespace | None:
    """The namespace argparse would give for ``argv``, or None to let argparse decide."""
    values: dict[str, Any] = {}
    if not _parse_into(spec, list(argv), values):
        return None
    return Namespace(**values)


def _parse_into(spec: Spec, tokens: list[str], values: dict[str, Any]) -> bool:
    table = _tables(spec)
    if not table.ok:
        return False
    # argparse's order: each dest's first option default, then set_defaults over them; a
    # subcommand's values replace its parent's
    level: dict[str, Any] = {}
    for option in table.options:
        if not option.exits:
            level.setdefault(option.dest, option.default)
    level.update(spec.defaults)
    values.update(level)
    seen: set[int] = set()
    given: dict[str, _Option] = {}
    i = 0
    while i < len(tokens):
        token = tokens[i]
        i += 1
        if not token.startswith("-") or token == "-":
            sub = spec.subparsers
            if sub is None or token not in sub.parsers:
                return False
            if not _finish(table, seen, given, values):
                return False
            dest = sub.kwargs.get("dest")
            if dest:
                values[dest] = token
            return _parse_into(sub.parsers[token][0], tokens[i:], values)
        if token == "--":
            return False
        name, eq, inline = token.partition("=") if token.startswith("--") else (token, "", "")
        found = table.by_flag.get(name)
        if found is None or found.exits:
            return False  # --help, an abbreviation, a typo, combined short flags: argparse
        option = found
        if option.action in ("store_true", "store_false"):
            if eq:
                return False
            values[option.dest] = option.action == "store_true"
        else:
            if eq:
                text = inline
            else:
                if i >= len(tokens) or tokens[i].startswith("-"):
                    return False
                text = tokens[i]
                i += 1
            accepted, value = _convert(option, text)
            if not accepted:
                return False
            if option.action == "append":
                current = values.get(option.dest)
                values[option.dest] = [*(current or ()), value]
            else:
                values[option.dest] = value
        seen.add(id(option))
        given[option.dest] = option
    if spec.subparsers is not None and spec.subparsers.required:
        return False  # no subcommand given: argparse says which are known
    return _finish(table, seen, given, values)


def _finish(table: _Table, seen: set[int], given: dict[str, _Option],
            values: dict[str, Any]) -> bool:
    """Required options present, no exclusive group used twice, string defaults converted."""
    for option in table.options:
        if id(option) in seen or option.exits or option.dest in given:
            continue
        if option.required:
            return False
        default = values.get(option.dest)  # argparse converts a default given as text
        if isinstance(default, str) and option.type not in (None, str):
            accepted, value = _convert(option, default)
            if not accepted:
                return False
            values[option.dest] = value
    for group in table.mutex:
        used = [o for o in table.options if o.group is group and id(o) in seen]
        if len(used) > 1 or (group.required and not used):
            return False
    return True


# --- argparse, from the same records -------------------------------------------------------


def to_argparse(spec: Spec, parser_class: type[argparse.ArgumentParser],
                raw_formatter: type[argparse.HelpFormatter]) -> argparse.ArgumentParser:
    """An argparse parser (of ``parser_class``) with every recorded declaration replayed;
    ``raw_formatter`` stands for :data:`RAW_DESCRIPTION`."""
    kwargs = dict(spec.parser_kwargs)
    if kwargs.get("formatter_class") == RAW_DESCRIPTION:
        kwargs["formatter_class"] = raw_formatter
    parser = parser_class(prog=spec.prog, **kwargs)
    _replay(parser, spec, raw_formatter)
    return parser


def _replay(target: Any, source: _Items, raw_formatter: Any) -> None:
    for kind, payload, child in source.items:
        if kind == "arg":
            target.add_argument(*payload, **child)
        elif kind == "group":
            args, kwargs = payload
            _replay(target.add_argument_group(*args, **kwargs), child, raw_formatter)
        elif kind == "mutex":
            _replay(target.add_mutually_exclusive_group(**payload), child, raw_formatter)
        elif kind == "defaults":
            target.set_defaults(**payload)
    if isinstance(source, Spec) and source.subparsers is not None:
        sub = source.subparsers
        action = target.add_subparsers(**sub.kwargs)
        action.required = sub.required
        for name, (child_spec, kwargs) in sub.parsers.items():
            options = dict(kwargs)
            if options.get("formatter_class") == RAW_DESCRIPTION:
                options["formatter_class"] = raw_formatter
            _replay(action.add_parser(name, **options), child_spec, raw_formatter)
