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

__all__ = ["inspect_current", "inspect_interpreter", "python_info_from", "shape_problem",
           "torch_info_from"]

_SCRIPT = os.path.join(os.path.dirname(__file__), "_inspect_python.py")


def inspect_current(environ: Optional[Mapping[str, str]] = None) -> dict[str, Any]:
    """The raw facts of this process's interpreter."""
    from torchenv.detection import _inspect_python

    facts: dict[str, Any] = _inspect_python.collect(environ)
    return facts


def inspect_interpreter(executable: str, *, timeout: float = 5.0,
                        environ: Optional[Mapping[str, str]] = None,
                        inventory: bool = False) -> dict[str, Any]:
    """The raw facts of ``executable``, from one ``python -I -c`` child (through the subprocess
    funnel: a timeout, an output cap, its process group killed); BadInput naming it if it does
    not answer within ``timeout`` seconds, fails, or prints anything but facts of the expected
    shape (:func:`shape_problem`).

    ``inventory`` adds doctor's list of torch distributions and conda records (key
    ``"inventory"``) from the same child."""
    from torchenv._subprocess import run_process

    path = executable
    if not os.path.exists(path):
        raise BadInput(f"interpreter {executable} does not exist",
                       hint="give the path of a python executable, e.g. .venv/bin/python",
                       field="interpreter", value=executable)
    if os.path.isdir(path) or not os.access(path, os.X_OK):
        raise BadInput(f"interpreter {executable} is not an executable file",
                       hint="give the path of a python executable, e.g. .venv/bin/python",
                       field="interpreter", value=executable)
    with open(_SCRIPT, encoding="utf-8") as fh:
        source = fh.read()
    # the file just checked, by its absolute path: a bare name ("python", or "./python" once
    # normalised) would otherwise be looked up on PATH and may be another interpreter
    argv = [os.path.abspath(path), "-I", "-c", source] + (["--inventory"] if inventory else [])
    res = run_process(argv, timeout=timeout,
                      env=dict(environ) if environ is not None else None)
    hint = "give the path of a Python 3.7 or newer interpreter, e.g. .venv/bin/python"
    if res.timed_out:
        raise BadInput(f"interpreter {executable} did not answer within {timeout:g} s",
                       hint=hint, field="interpreter", value=executable)
    if not res.ok:
        raise BadInput(f"cannot inspect the interpreter {executable}: {res.describe_failure()}",
                       hint=hint, field="interpreter", value=executable)
    try:
        import json  # another interpreter's report only

        facts = json.loads(res.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError, RecursionError) as exc:
        raise BadInput(f"interpreter {executable} printed {res.stdout[:200]!r}, not the "
                       "expected JSON", hint="is it a Python interpreter?", field="interpreter",
                       value=executable) from exc
    problem = shape_problem(facts)
    if problem is not None:
        raise BadInput(f"interpreter {executable} printed facts of the wrong shape: {problem}",
                       hint="is it a Python interpreter?", field="interpreter", value=executable)
    checked: dict[str, Any] = facts
    return checked


_TEXT_KEYS = ("implementation", "executable", "prefix", "base_prefix", "machine",
              "sys_platform", "env_kind", "env_evidence", "torch_version_py_path",
              "torch_version_py")
_FLAG_KEYS = ("gil_disabled", "gil_enabled_now")
_PACKAGE_KEYS = ("version", "location", "installer")


def _number(value: object) -> bool:
    return type(value) is int and 0 <= value < 10_000  # a bool is no number


def shape_problem(facts: object) -> Optional[str]:
    """What is wrong with ``facts`` as another interpreter's report (the shape
    ``_inspect_python.collect`` gives), or None when nothing is: every value is of its type, so
    that reading it can raise nothing but the BadInput the caller makes of this."""
    if not isinstance(facts, dict):
        return f"a JSON {type(facts).__name__}, not an object"
    vi = facts.get("version_info")
    if not (isinstance(vi, list) and len(vi) == 5 and all(_number(v) for v in vi[:3])
            and isinstance(vi[3], str) and _number(vi[4])):
        return f"version_info {str(vi)[:60]!r} is not [major, minor, micro, level, serial]"
    for key in _TEXT_KEYS:
        if not isinstance(facts.get(key), (str, type(None))):
            return f"{key} is not text"
    for key in _FLAG_KEYS:
        if not isinstance(facts.get(key), (bool, type(None))):
            return f"{key} is not true, false or null"
    packages = facts.get("packages")
    if packages is None:
        return None
    if not isinstance(packages, dict):
        return "packages is not an object"
    for name, dist in packages.items():
        if dist is None:
            continue
        if not isinstance(dist, dict) or not all(
                isinstance(dist.get(k), (str, type(None))) for k in _PACKAGE_KEYS):
            return f"packages.{str(name)[:40]} is not an object of text values"
    return None


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
