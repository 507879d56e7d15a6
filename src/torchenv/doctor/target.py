"""Which interpreter doctor diagnoses: the one the user's ``python`` runs.

torchenv itself is often installed apart (pipx, ``uv tool``), so its own interpreter is the last
answer, not the first. In order:

1. the interpreter given (``--python PATH`` or a name looked up on ``PATH``);
2. ``$VIRTUAL_ENV/bin/python`` (``Scripts\\python.exe`` on Windows): an activated venv;
3. ``$CONDA_PREFIX/bin/python`` (``python.exe`` on Windows): an activated conda environment;
4. ``python`` (then ``python3``) on ``PATH``;
5. the interpreter running torchenv.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping
from typing import NamedTuple, Optional

from torchenv.errors import BadInput

__all__ = ["Target", "target_interpreter"]


class Target(NamedTuple):
    """The interpreter to diagnose and the words saying where it came from."""

    python: str
    source: str

    def to_json(self) -> dict[str, str]:
        return {"path": self.python, "source": self.source}


def _in_prefix(prefix: str, windows: bool) -> list[str]:
    if windows:
        return [os.path.join(prefix, "Scripts", "python.exe"), os.path.join(prefix, "python.exe")]
    return [os.path.join(prefix, "bin", "python"), os.path.join(prefix, "bin", "python3")]


def target_interpreter(given: Optional[str], env: Mapping[str, str], *,
                       windows: bool = os.name == "nt",
                       fallback: str = sys.executable) -> Target:
    """The interpreter doctor diagnoses; BadInput naming ``given`` when it is not there."""
    if given:
        if os.sep in given or "/" in given:
            from torchenv._files import absolute_path

            path = absolute_path(given, what="--python")  # refused by name in a deleted folder
        else:
            path = shutil.which(given, path=env.get("PATH")) or given
        if not os.path.exists(path):
            raise BadInput(f"{given} does not exist",
                           hint="pass the path of a Python interpreter, e.g. .venv/bin/python",
                           field="python", value=given)
        return Target(path, "--python")
    for variable in ("VIRTUAL_ENV", "CONDA_PREFIX"):
        prefix = env.get(variable, "").strip()
        if not prefix:
            continue
        for candidate in _in_prefix(prefix, windows):
            if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
                return Target(candidate, f"${variable}")
    for name in ("python", "python3"):
        found = shutil.which(name, path=env.get("PATH"))
        if found:
            return Target(os.path.abspath(found), f"'{name}' on PATH")
    return Target(fallback, "torchenv's own interpreter")
