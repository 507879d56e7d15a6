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


def _module_name(path: Path, package: Path = PACKAGE) -> str:
    rel = path.relative_to(package.parent).with_suffix("")
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


# import circles left to break: doctor.findings imports classify inside diagnose(), and
# classify takes its Finding type from findings
KNOWN_CIRCLES = {frozenset({"torchenv.doctor.classify", "torchenv.doctor.findings"})}


def import_circles(sources: list[Path], package: Path = PACKAGE) -> list[list[str]]:
    """The groups of modules that import each other, directly or through others (imports of
    a package's ``__init__`` left out: ``from torchenv.matrix import model`` names a module)."""
    modules = {_module_name(p, package): p for p in sources}
    packages = {m for m, p in modules.items() if p.name == "__init__.py"}
    graph = {m: {n for _, n in _imported(p, m) if n in modules and n not in packages and n != m}
             for m, p in modules.items() if m not in packages}
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        order[v] = low[v] = len(order)
        stack.append(v)
        for w in graph[v]:
            if w not in order:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], order[w])
        if low[v] == order[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                circles.append(sorted(group))

    for v in graph:
        if v not in order:
            visit(v)
    return circles


def test_no_modules_import_each_other() -> None:
    circles = [c for c in import_circles(SOURCES) if frozenset(c) not in KNOWN_CIRCLES]
    assert not circles, circles


def test_the_checker_sees_an_import_circle(tmp_path: Path) -> None:
    package = tmp_path / "torchenv" / "validation"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "runner.py").write_text("from torchenv.validation.collectives import run\n",
                                       encoding="utf-8")
    (package / "collectives.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
        "    from torchenv.validation.runner import ValidationOptions\n", encoding="utf-8")
    root = tmp_path / "torchenv"
    found = import_circles(sorted(root.rglob("*.py")), root)
    assert found == [["torchenv.validation.collectives", "torchenv.validation.runner"]]
