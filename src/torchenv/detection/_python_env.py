"""The interpreter being inspected and the torch installed in it.

The current interpreter is read in-process; another one (``--python-exe PATH``) through ONE child
process running ``_inspect_python.py`` with ``python -I -c``. Neither imports torch.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from torchenv.detection._torch_install import parse_torch_version_py, variant_from
from torchenv.detection.profile import PythonInfo, TorchInfo
from torchenv.errors import BadInput

if TYPE_CHECKING:
    from typing import Any, Optional

__all__ = ["inspect_current", "inspect_interpreter", "python_info_from", "torch_info_from"]

_SCRIPT = os.path.join(os.path.dirname(__file__), "_inspect_python.py")


def inspect_current(environ: Optional[Mapping[str, str]] = None) -> dict[str, Any]:
    """The raw facts of this process's interpreter."""
    from torchenv.detection import _inspect_python

    facts: dict[str, Any] = _inspect_python.collect(environ)
    return facts


def inspect_interpreter(executable: str, *, timeout: float = 20.0,
                        environ: Optional[Mapping[str, str]] = None,
                        inventory: bool = False) -> dict[str, Any]:
    """The raw facts of ``executable``, from one ``python -I -c`` child; BadInput if it fails.

    ``inventory`` adds doctor's list of torch distributions and conda records (key
    ``"inventory"``) from the same child."""
    from torchenv._subprocess import run_process

    path = executable
    if not os.path.exists(path):
        raise BadInput(f"interpreter {executable} does not exist",
                       hint="give the path of a python executable, e.g. .venv/bin/python")
    if os.path.isdir(path) or not os.access(path, os.X_OK):
        raise BadInput(f"interpreter {executable} is not an executable file",
                       hint="give the path of a python executable, e.g. .venv/bin/python")
    with open(_SCRIPT, encoding="utf-8") as fh:
        source = fh.read()
    # the file just checked, by its absolute path: a bare name ("python", or "./python" once
    # normalised) would otherwise be looked up on PATH and may be another interpreter
    argv = [os.path.abspath(path), "-I", "-c", source] + (["--inventory"] if inventory else [])
    res = run_process(argv, timeout=timeout,
                      env=dict(environ) if environ is not None else None)
    if not res.ok:
        raise BadInput(f"cannot inspect the interpreter {executable}: {res.describe_failure()}",
                       hint="torchenv needs a Python 3.8 or newer interpreter it can run")
    try:
        import json  # another interpreter's report only

        facts = json.loads(res.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError) as exc:
        raise BadInput(f"interpreter {executable} printed {res.stdout[:200]!r}, not the "
                       "expected JSON", hint="is it a Python interpreter?") from exc
    if not isinstance(facts, dict) or "version_info" not in facts:
        raise BadInput(f"interpreter {executable} did not report its version")
    return facts


def python_info_from(facts: Mapping[str, Any]) -> PythonInfo:
    vi = facts["version_info"]
    free = bool(facts.get("gil_disabled"))
    level = {"alpha": "a", "beta": "b", "candidate": "rc"}.get(str(vi[3]), "")
    full = f"{vi[0]}.{vi[1]}.{vi[2]}" + (f"{level}{vi[4]}" if level else "")
    return PythonInfo(
        version=f"{vi[0]}.{vi[1]}" + ("t" if free else ""),
        implementation=str(facts.get("implementation", "cpython")),
        free_threaded=free,
        executable=facts.get("executable"),
        full_version=full,
        env_kind=str(facts.get("env_kind", "unknown")),
    )


def torch_info_from(facts: Mapping[str, Any]) -> Optional[TorchInfo]:
    """TorchInfo from the raw facts; None when torch is not installed there."""
    packages = facts.get("packages") or {}
    dist = packages.get("torch")
    vtext = facts.get("torch_version_py")
    vpy = parse_torch_version_py(vtext) if isinstance(vtext, str) else {}
    version = (dist or {}).get("version") or vpy.get("__version__")
    if not version:
        return None
    location = (dist or {}).get("location")
    vpath = facts.get("torch_version_py_path")
    if location:
        location = os.path.join(location, "torch")
    elif isinstance(vpath, str):
        location = os.path.dirname(vpath)
    cuda = vpy.get("cuda")
    hip = vpy.get("hip")
    return TorchInfo(
        version=str(version),
        variant=variant_from(str(version), cuda, hip, vpy.get("xpu")),
        cuda_version=cuda,
        location=location,
        torchvision=(packages.get("torchvision") or {}).get("version"),
        torchaudio=(packages.get("torchaudio") or {}).get("version"),
        installer=(dist or {}).get("installer"),
        hip_version=hip,
        git_version=vpy.get("git_version"),
    )
