"""torchenv's JSON writer gives json.dumps(indent=2)'s text exactly."""

from __future__ import annotations

import enum
import json
import math
from typing import Any

import pytest

from torchenv._json import dumps
from torchenv.matrix.model import Matrix


class _Level(enum.IntEnum):
    FULL = 2


DOCUMENTS: list[Any] = [
    None, True, False, 0, -7, 10**30, 1.5, -0.0, 1e-300, 2.5e300, math.nan, math.inf, -math.inf,
    "", "plain", "quote \" backslash \\ tab \t newline \n nul \x00 del \x7f",
    "Grüße, 日本語, emoji \U0001f600", [], {}, [[]], [{}], {"a": {}}, {"a": []},
    {"nested": {"list": [1, [2, [3, {"deep": None}]]], "tuple": (1, "two")}},
    {3: "int key", 2.5: "float key", True: "bool key", None: "none key", "s": "str key"},
    {"enum": _Level.FULL, "bools": [True, False, None]},
]


@pytest.mark.parametrize("document", DOCUMENTS, ids=range(len(DOCUMENTS)))
def test_the_text_is_json_dumps_indent_2(document: Any) -> None:
    assert dumps(document) == json.dumps(document, indent=2)


def test_a_real_resolve_document_comes_out_the_same(matrix: Matrix) -> None:
    from torchenv.detection.detect import detect
    from torchenv.installers.render import all_commands
    from torchenv.resolver.request import Request
    from torchenv.resolver.resolve import resolve

    host = detect()
    plan = resolve(Request(), host, matrix)
    document = plan.to_json(all_commands(plan, host))
    assert document["rejected"], "a document with rejected candidates exercises lists of dicts"
    assert dumps(document) == json.dumps(document, indent=2)


@pytest.mark.parametrize("bad", [{"set": {1, 2}}, [object()], {(1, 2): "tuple key"}])
def test_what_json_cannot_hold_is_a_type_error(bad: Any) -> None:
    with pytest.raises(TypeError):
        json.dumps(bad, indent=2)
    with pytest.raises(TypeError):
        dumps(bad)
