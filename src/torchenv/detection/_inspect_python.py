"""Facts about the running interpreter, collected without importing torch.

This file is run two ways: imported and called in-process for the current interpreter, and, for
another interpreter, sent whole as ``python -I -c <this source>`` (stdlib only, no imports from
torchenv, Python 3.8 syntax) which prints the JSON of :func:`collect` on stdout. It returns raw
facts; parsing and interpretation happen in torchenv.detection._python_env.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Any, Optional

PACKAGES = ("torch", "torchvision", "torchaudio")


def _env_kind(prefix: str, base_prefix: str, environ: Mapping[str, str]) -> tuple[str, str]:
    """(kind, evidence) for the environment at ``prefix``."""
    parts = prefix.replace("\\", "/").split("/")
    if ".pixi" in parts:
        return "pixi", ".pixi in " + prefix
    if os.path.isdir(os.path.join(prefix, "conda-meta")):
        return "conda", os.path.join(prefix, "conda-meta")
    cfg = os.path.join(prefix, "pyvenv.cfg")
    if os.path.isfile(cfg):
        try:
            with open(cfg, encoding="utf-8", errors="replace") as f:
                keys = [line.split("=", 1)[0].strip().lower() for line in f if "=" in line]
        except OSError:
            keys = []
        if "uv" in keys:
            return "uv", cfg + " (uv key)"
        return "venv", cfg
    if prefix != base_prefix:
        return "venv", "sys.prefix != sys.base_prefix"
    conda_prefix = environ.get("CONDA_PREFIX")
    if conda_prefix and os.path.normcase(conda_prefix) == os.path.normcase(prefix):
        return "conda", "CONDA_PREFIX"
    return "system", "no venv, conda or pixi marker"


def _read_version(meta_dir: str) -> Optional[str]:
    for fname in ("METADATA", "PKG-INFO"):
        try:
            with open(os.path.join(meta_dir, fname), encoding="utf-8", errors="replace") as f:
                for line in f:
                    if line.startswith("Version:"):
                        return line.split(":", 1)[1].strip()
                    if not line.strip():
                        break  # end of the headers
        except OSError:
            continue
    return None


def _package(name: str) -> Optional[dict[str, Any]]:
    """Version, location and installer of ``name``, the distribution Python would import.

    Scans ``sys.path`` for ``<name>-<version>.dist-info`` (or ``.egg-info``) folders in order,
    as importlib.metadata does, without importing it (that import alone costs more than the
    rest of detection).
    """
    prefix = name.lower().replace("-", "_") + "-"
    for entry in sys.path:
        folder = entry or "."
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        for child in names:
            lower = child.lower()
            if not (lower.startswith(prefix) or lower == name + ".egg-info"):
                continue
            if not lower.endswith((".dist-info", ".egg-info")):
                continue
            meta_dir = os.path.join(folder, child)
            version = _read_version(meta_dir)
            if version is None:
                continue
            installer = None
            try:
                with open(os.path.join(meta_dir, "INSTALLER"), encoding="utf-8") as f:
                    installer = f.read().strip() or None
            except OSError:
                pass
            return {"version": version, "location": os.path.abspath(folder),
                    "installer": installer}
    return None


def _torch_version_py(location: Optional[str]) -> tuple[Optional[str], Optional[str]]:
    """The text of torch/version.py: from the distribution's folder, else the first on sys.path."""
    dirs = [location] if location else []
    cwd = os.getcwd()
    dirs += [p for p in sys.path if p and p != location and os.path.abspath(p) != cwd]
    for d in dirs:
        path = os.path.join(d, "torch", "version.py")
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                return path, f.read(8192)
        except OSError:
            continue
    return None, None


def collect(environ: Optional[Mapping[str, str]] = None) -> dict[str, Any]:
    env = os.environ if environ is None else environ
    if sys.prefix == sys.base_prefix:
        # -I drops the user site; the interpreter itself would search it, so search it too
        try:
            import site

            user = site.getusersitepackages()
            if isinstance(user, str) and os.path.isdir(user) and user not in sys.path:
                sys.path.append(user)
        except Exception:
            pass
    gil_disabled = False
    if sys.version_info >= (3, 13):
        import sysconfig

        gil_disabled = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))
    is_gil_enabled = getattr(sys, "_is_gil_enabled", None)
    try:
        machine = os.uname().machine
    except AttributeError:
        import platform

        machine = platform.machine()
    kind, evidence = _env_kind(sys.prefix, sys.base_prefix, env)
    packages = {name: _package(name) for name in PACKAGES}
    torch = packages.get("torch")
    vpath, vtext = _torch_version_py(torch["location"] if torch else None)
    vi = sys.version_info
    return {
        "version_info": [vi[0], vi[1], vi[2], vi[3], vi[4]],
        "implementation": sys.implementation.name,
        "executable": sys.executable,
        "prefix": sys.prefix,
        "base_prefix": sys.base_prefix,
        "gil_disabled": gil_disabled,
        "gil_enabled_now": is_gil_enabled() if is_gil_enabled is not None else None,
        "machine": machine,
        "sys_platform": sys.platform,
        "env_kind": kind,
        "env_evidence": evidence,
        "packages": packages,
        "torch_version_py_path": vpath,
        "torch_version_py": vtext,
    }


if __name__ == "__main__":
    import json

    sys.stdout.write(json.dumps(collect()))
