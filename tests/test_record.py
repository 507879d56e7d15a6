"""``@record`` behaves like ``@dataclass(frozen=True)`` for what torchenv uses."""

from __future__ import annotations

import pytest

from torchenv._record import FrozenInstanceError, field, record, record_fields, replace


@record
class Point:
    x: int
    y: int = 0
    tags: dict[str, str] = field(default_factory=dict)


@record
class Checked:
    value: int

    def __post_init__(self) -> None:
        if self.value < 0:
            raise ValueError("negative")


def test_fields_positional_keyword_and_defaults() -> None:
    assert record_fields(Point) == ("x", "y", "tags")
    p = Point(1, y=2)
    assert (p.x, p.y, p.tags) == (1, 2, {})


def test_default_factory_gives_each_instance_its_own_value() -> None:
    a, b = Point(1), Point(2)
    a.tags["k"] = "v"
    assert b.tags == {}


def test_records_are_frozen() -> None:
    p = Point(1)
    with pytest.raises(FrozenInstanceError):
        p.x = 3  # type: ignore[misc]
    with pytest.raises(FrozenInstanceError):
        del p.y  # type: ignore[misc]


def test_equality_hash_and_repr() -> None:
    assert Point(1, 2) == Point(1, 2) != Point(1, 3)
    assert hash(Checked(1)) == hash(Checked(1))
    assert repr(Point(1, 2)) == "Point(x=1, y=2, tags={})"
    assert Point(1) != Checked(1)


def test_replace_copies_with_changes() -> None:
    p = Point(1, 2)
    q = replace(p, y=5)
    assert (q.x, q.y, p.y) == (1, 5, 2)
    with pytest.raises(TypeError, match="no field 'z'"):
        replace(p, z=1)


def test_post_init_runs_and_bad_calls_raise() -> None:
    with pytest.raises(ValueError, match="negative"):
        Checked(-1)
    with pytest.raises(TypeError, match="missing required argument 'x'"):
        Point()  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unexpected keyword argument 'z'"):
        Point(1, z=2)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="multiple values"):
        Point(1, x=2)  # type: ignore[misc]
