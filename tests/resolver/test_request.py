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


@pytest.mark.parametrize(("variant", "built"), [
    ("cu126", "a CUDA 12.6 build"), ("cpu", "the CPU build"), ("rocm6.3", "a ROCm build"),
    ("xpu", "the XPU build")])
def test_a_cuda_version_that_contradicts_the_variant_is_bad_input(variant: str,
                                                                  built: str) -> None:
    """A contradiction in the request is refused before anything is resolved (exit 2), not
    reported as nothing fitting (exit 3)."""
    with pytest.raises(BadInput) as info:
        Request.from_text(variant=variant, cuda="12.8")
    assert f"12.8 contradicts the variant {variant} ({built})" in str(info.value)
    assert info.value.hint and info.value.field == "cuda"


def test_a_cuda_version_that_agrees_with_the_variant_is_taken() -> None:
    request = Request.from_text(variant="cu128", cuda="12.8")
    assert str(request.variant) == "cu128" and str(request.cuda) == "12.8"
