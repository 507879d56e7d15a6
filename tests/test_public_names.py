"""Every name a module lists in ``__all__`` exists: ``from torchenv.x import *`` never fails."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

import torchenv

PACKAGE = Path(torchenv.__file__).parent
MODULES = sorted(
    ".".join(("torchenv", *p.relative_to(PACKAGE).with_suffix("").parts)).removesuffix(
        ".__init__")
    for p in PACKAGE.rglob("*.py")
    if p.name != "__main__.py"  # running it is the command line itself
)


@pytest.mark.parametrize("name", MODULES)
def test_every_name_in_all_exists(name: str) -> None:
    module = importlib.import_module(name)
    missing = [n for n in getattr(module, "__all__", ()) if not hasattr(module, n)]
    assert not missing, f"{name}.__all__ names what it does not define: {missing}"


def test_modules_are_found() -> None:
    assert {"torchenv", "torchenv.cli", "torchenv.resolver.plan"} <= set(MODULES)
