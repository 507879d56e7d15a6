from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from torchenv.detection._torch_install import parse_torch_version_py, variant_from

NEW = """from typing import Optional

__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip', 'rocm', 'xpu']
__version__ = '2.13.0+cpu'
debug = False
cuda: Optional[str] = None
git_version = 'cf30153c4c131c8164ee7798e5022d810682e2cb'
hip: Optional[str] = None
rocm: Optional[str] = None
xpu: Optional[str] = None
"""
OLD = "__version__ = '2.2.2'\ndebug = False\ncuda = '12.1'\ngit_version = 'abc'\nhip = None\n"


def test_version_py_new_and_old() -> None:
    new = parse_torch_version_py(NEW)
    assert new["__version__"] == "2.13.0+cpu"
    assert new["cuda"] is None
    assert new["git_version"] == "cf30153c4c131c8164ee7798e5022d810682e2cb"
    old = parse_torch_version_py(OLD)
    assert (old["__version__"], old["cuda"], old["hip"]) == ("2.2.2", "12.1", None)


@pytest.mark.parametrize(
    ("version", "cuda", "hip", "variant"),
    [("2.7.1+cu128", "12.8", None, "cu128"), ("2.13.0+cpu", None, None, "cpu"),
     ("2.1.0+cpu.cxx11.abi", None, None, "cpu"), ("2.7.0+rocm6.3", None, "6.3.42131", "rocm6.3"),
     ("2.7.1+rocm6.2.4", None, None, "rocm6.2.4"), ("2.7.1+xpu", None, None, "xpu"),
     ("2.7.1", "12.6", None, "cu126"), ("2.5.1", None, "6.2.41133-dd7f95766", "rocm6.2"),
     ("2.7.1", None, None, "cpu"), ("2.8.0a0+gitabc", "12.9", None, "cu129")],
    ids=["cu128", "cpu", "cpu-cxx11", "rocm", "rocm-patch", "xpu", "pypi-cuda", "conda-rocm",
         "mac-or-cpu", "source-build"],
)
def test_variant(version: str, cuda: str | None, hip: str | None, variant: str) -> None:
    assert variant_from(version, cuda, hip) == variant


@given(st.integers(10, 13), st.integers(0, 9))
def test_cuda_tag_and_version_py_agree(major: int, minor: int) -> None:
    tag = f"cu{major}{minor}"
    assert variant_from(f"2.7.1+{tag}") == tag
    assert variant_from("2.7.1", cuda=f"{major}.{minor}") == tag
