"""A request's own checks: what the library refuses, whoever builds the request."""

from __future__ import annotations

import pytest

from torchenv.errors import BadInput
from torchenv.resolver.request import Request


@pytest.mark.parametrize("bad", ["javascript:alert(1)",
                                 "https://mirror.example/whl\n--extra-index-url x",
                                 " https://mirror.example/whl"])
def test_the_library_checks_an_index_base_as_the_cli_does(bad: str) -> None:
    """One rule for index bases: Request refuses what ``--index-base`` refuses, naming the field
    (the command line names the flag or variable that gave it)."""
    with pytest.raises(BadInput) as info:
        Request(index_base=bad)
    assert (info.value.field, info.value.value) == ("index_base", bad)


def test_a_space_inside_a_mirror_path_is_allowed() -> None:
    assert Request(index_base="https://mirror.example/my whl").index_base
