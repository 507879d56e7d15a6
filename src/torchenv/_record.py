"""Frozen records for the types on the startup path (matrix model, host profile, plan).

``@record`` gives a class what ``@dataclass(frozen=True)`` would: an ``__init__`` taking the
annotated fields in order (defaults and ``field(default_factory=...)`` included), immutability,
``__eq__``, ``__hash__`` and ``__repr__``. It builds them from shared functions instead of
compiling new code for every class, and it does not import :mod:`dataclasses` (which pulls in
:mod:`inspect` and :mod:`ast`): on Python 3.11 that saves about 20 ms of every ``torchenv``
start, more than a whole resolve costs. Type checkers see a dataclass (PEP 681).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar

    from typing_extensions import dataclass_transform

    T = TypeVar("T")
else:

    def dataclass_transform(**_kwargs: object) -> object:
        return lambda f: f


__all__ = ["FrozenInstanceError", "field", "record", "record_fields", "replace"]

_MISSING = object()


class FrozenInstanceError(AttributeError):
    """Raised on an attempt to change a field of a record."""


class _Field:
    __slots__ = ("default", "default_factory")

    def __init__(self, default: Any, default_factory: Any) -> None:
        self.default = default
        self.default_factory = default_factory


def field(*, default: Any = _MISSING, default_factory: Callable[[], Any] | None = None) -> Any:
    """A field default; ``default_factory`` is called for every new instance."""
    return _Field(default, default_factory)


def record_fields(cls_or_obj: Any) -> tuple[str, ...]:
    """The field names of a record class or instance, in declaration order."""
    names: tuple[str, ...] = cls_or_obj.__record_fields__
    return names


def _init(self: Any, *args: Any, **kwargs: Any) -> None:
    # the hot path of every resolve (thousands of records on a large matrix): plain dict
    # operations on the instance's __dict__ and C-level set checks; the per-field loops run
    # only to fill defaults or to name what is wrong
    names = self.__record_fields__
    if len(args) > len(names):
        raise TypeError(f"{type(self).__name__}() takes {len(names)} positional arguments "
                        f"but {len(args)} were given")
    values = self.__dict__
    values.update(zip(names, args))
    if kwargs:
        if not self.__record_names__.issuperset(kwargs):
            unknown = next(k for k in kwargs if k not in self.__record_names__)
            raise TypeError(f"{type(self).__name__}() got an unexpected keyword argument "
                            f"{unknown!r}")
        given = len(values)
        values.update(kwargs)
        if len(values) != given + len(kwargs):
            twice = next(k for k in kwargs if k in names[:len(args)])
            raise TypeError(f"{type(self).__name__}() got multiple values for argument "
                            f"{twice!r}")
    if len(values) < len(names):
        for name in names:
            if name in values:
                continue
            default = self.__record_defaults__.get(name, _MISSING)
            if default is _MISSING:
                raise TypeError(f"{type(self).__name__}() missing required argument {name!r}")
            if isinstance(default, _Field):
                if default.default_factory is not None:
                    default = default.default_factory()
                elif default.default is not _MISSING:
                    default = default.default
                else:
                    raise TypeError(f"{type(self).__name__}() missing required argument "
                                    f"{name!r}")
            values[name] = default
    post = type(self).__record_post__  # through the class: the plain function
    if post is not None:
        post(self)


def _values(self: Any) -> tuple[Any, ...]:
    return tuple(getattr(self, n) for n in self.__record_fields__)


def _eq(self: Any, other: Any) -> Any:
    if other.__class__ is not self.__class__:
        return NotImplemented
    return _values(self) == _values(other)


def _hash(self: Any) -> int:
    return hash((self.__class__.__name__, *_values(self)))


def _repr(self: Any) -> str:
    inner = ", ".join(f"{n}={getattr(self, n)!r}" for n in self.__record_fields__)
    return f"{self.__class__.__qualname__}({inner})"


def _setattr(self: Any, name: str, value: Any) -> None:
    raise FrozenInstanceError(f"cannot assign to field {name!r}")


def _delattr(self: Any, name: str) -> None:
    raise FrozenInstanceError(f"cannot delete field {name!r}")


@dataclass_transform(frozen_default=True, field_specifiers=(field,))
def record(cls: type[T]) -> type[T]:
    """Make ``cls`` a frozen record of its annotated fields (see the module docstring)."""
    names: list[str] = []
    defaults: dict[str, Any] = {}
    for klass in reversed(cls.__mro__[:-1]):
        for name in getattr(klass, "__record_fields__", ()):
            if name not in names:
                names.append(name)
        defaults.update(getattr(klass, "__record_defaults__", {}))
    own = cls.__dict__.get("__annotations__")  # noqa: RUF063 - no inspect import on this path
    if own is None and "__annotate__" in cls.__dict__:  # Python 3.14: evaluated on access
        own = cls.__annotations__
    for name, annotation in (own or {}).items():
        if isinstance(annotation, str) and annotation.startswith("ClassVar"):
            continue
        if name not in names:
            names.append(name)
        if name in cls.__dict__:
            defaults[name] = cls.__dict__[name]
            if isinstance(defaults[name], _Field):
                delattr(cls, name)
    seen_default = False
    for name in names:
        if name in defaults:
            seen_default = True
        elif seen_default:
            raise TypeError(f"{cls.__name__}: field {name!r} without a default follows one "
                            "with a default")
    setattr(cls, "__record_fields__", tuple(names))  # noqa: B010 - dunder set on the class
    setattr(cls, "__record_names__", frozenset(names))  # noqa: B010
    setattr(cls, "__record_post__", getattr(cls, "__post_init__", None))  # noqa: B010
    setattr(cls, "__record_defaults__", defaults)  # noqa: B010
    setattr(cls, "__init__", _init)  # noqa: B010
    setattr(cls, "__eq__", _eq)  # noqa: B010
    setattr(cls, "__hash__", _hash)  # noqa: B010
    setattr(cls, "__repr__", _repr)  # noqa: B010
    setattr(cls, "__setattr__", _setattr)  # noqa: B010
    setattr(cls, "__delattr__", _delattr)  # noqa: B010
    return cls


def replace(obj: T, **changes: Any) -> T:
    """A copy of the record ``obj`` with ``changes`` applied (like ``dataclasses.replace``)."""
    names = record_fields(obj)
    for key in changes:
        if key not in names:
            raise TypeError(f"{type(obj).__name__} has no field {key!r}")
    values = {n: changes[n] if n in changes else getattr(obj, n) for n in names}
    return type(obj)(**values)
