"""Imports run only downward: the layers of docs/architecture.md, checked on the source.

Every ``import torchenv.X`` / ``from torchenv.X import …`` in a module (at top level, inside a
function or under ``TYPE_CHECKING``) names a layer; a module may import its own package and the
layers below its own, never a layer at its own height or above it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import torchenv

PACKAGE = Path(torchenv.__file__).parent

# docs/architecture.md, from the ground up; packages on one floor may not import each other
FLOORS: tuple[tuple[str, ...], ...] = (
    ("errors",),
    ("values", "_files", "_subprocess"),
    ("matrix",),
    ("detection",),
    ("resolver",),
    ("installers", "validation"),
    ("doctor", "ci", "fleet", "explorer"),
    ("cli",),
    ("__main__",),
)
FLOOR = {name: height for height, names in enumerate(FLOORS) for name in names}


def _layer(module: str) -> str:
    """``torchenv.resolver.rank`` → ``resolver``; ``torchenv`` itself → ``""``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imported(path: Path, module: str) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.startswith("torchenv")]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against this module's package
                base = module.split(".")
                if path.name != "__init__.py":
                    base = base[:-1]
                base = base[: len(base) - node.level + 1]
                name = ".".join([*base, node.module] if node.module else base)
            else:
                name = node.module or ""
            if name.startswith("torchenv"):
                found.append((node.lineno, name))
    return found


SOURCES = sorted(PACKAGE.rglob("*.py"))


def test_every_top_level_name_has_a_floor() -> None:
    names = {p.stem if p.is_file() else p.name
             for p in PACKAGE.iterdir() if p.suffix == ".py" or (p / "__init__.py").exists()}
    names.discard("__init__")
    assert names <= set(FLOOR), (
        f"place these in FLOORS and docs/architecture.md: {names - set(FLOOR)}")


def upward_imports(path: Path, module: str) -> list[str]:
    """The imports of ``path`` (the source of ``module``) that reach its own floor or above."""
    own = _layer(module)
    wrong = []
    for line, name in _imported(path, module):
        target = _layer(name)
        if target in ("", own):
            continue
        if own == "" or FLOOR.get(target, len(FLOORS)) >= FLOOR.get(own, -1):
            wrong.append(f"line {line}: {name} (floor {FLOOR.get(target, '?')}) from "
                         f"{module} (floor {FLOOR.get(own, '?')})")
    return wrong


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_run_only_downward(path: Path) -> None:
    wrong = upward_imports(path, _module_name(path))
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize(("source", "module", "upward"), [
    ("from torchenv.resolver import resolve\n", "torchenv.matrix.loader", True),
    ("import torchenv.cli._common\n", "torchenv.detection.render", True),
    ("from torchenv.ci import rows\n", "torchenv.fleet.render", True),  # same floor
    ("from . import model\n", "torchenv.matrix.loader", False),
    ("from ..values import ComputeCapability\n", "torchenv.matrix.loader", False),
    ("from ..detection import profile\n", "torchenv.matrix.loader", True),
    ("from torchenv.matrix.model import Matrix\n", "torchenv.resolver.rank", False),
])
def test_the_checker_sees_upward_imports(tmp_path: Path, source: str, module: str,
                                          upward: bool) -> None:
    path = tmp_path / "planted.py"
    path.write_text(source, encoding="utf-8")
    assert bool(upward_imports(path, module)) is upward
