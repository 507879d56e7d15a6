"""Facts about the running interpreter, collected without importing torch.

This file is run two ways: imported and called in-process for the current interpreter, and, for
another interpreter, sent whole as ``python -I -c <this source>`` (stdlib only, no imports from
torchenv, Python 3.7 syntax: the oldest Python of any release in the matrix) which prints the
JSON of :func:`collect` on stdout, with :func:`inventory` under ``"inventory"`` when given
``--inventory`` (doctor asks for both in one child). It returns raw facts; parsing and
interpretation happen in torchenv.detection._python_env and torchenv.doctor.gather.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any, Optional

PACKAGES = ("torch", "torchvision", "torchaudio")
TEXT_CAP = 1 << 20
"""Bytes read of any one file: METADATA headers, INSTALLER, pyvenv.cfg, torch/version.py."""
RECORD_CAP = 32 << 20
"""Bytes read of one conda-meta record (it lists every file of the package)."""


def read_capped(path: str, cap: int = TEXT_CAP) -> Optional[str]:
    """The first ``cap`` bytes of the regular file ``path`` as text; None for anything else.

    The open does not wait (``O_NONBLOCK``: a FIFO without a writer would block it), and only
    a regular file is read: a FIFO, a device (a link to /dev/zero) or a folder gives None, like
    a file that is not there.
    """
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks, left = [], cap
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 16))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks).decode("utf-8", "replace")
    except OSError:
        return None
    finally:
        os.close(fd)


def _env_kind(prefix: str, base_prefix: str, environ: Mapping[str, str]) -> tuple[str, str]:
    """(kind, evidence) for the environment at ``prefix``."""
    parts = prefix.replace("\\", "/").split("/")
    if ".pixi" in parts:
        return "pixi", ".pixi in " + prefix
    if os.path.isdir(os.path.join(prefix, "conda-meta")):
        return "conda", os.path.join(prefix, "conda-meta")
    cfg = os.path.join(prefix, "pyvenv.cfg")
    if os.path.isfile(cfg):
        keys = [line.split("=", 1)[0].strip().lower()
                for line in (read_capped(cfg) or "").splitlines() if "=" in line]
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
        text = read_capped(os.path.join(meta_dir, fname))
        for line in (text or "").splitlines():
            if line.startswith("Version:"):
                return line.split(":", 1)[1].strip()
            if not line.strip():
                break  # end of the headers
    return None


def _installer(meta_dir: str) -> Optional[str]:
    return (read_capped(os.path.join(meta_dir, "INSTALLER")) or "").strip() or None


def _packages(names: tuple[str, ...]) -> dict[str, Optional[dict[str, Any]]]:
    """Version, location and installer of each of ``names``: the distribution Python would
    import, or None.

    Scans ``sys.path`` for ``<name>-<version>.dist-info`` (or ``.egg-info``) folders in order,
    as importlib.metadata does, without importing it (that import alone costs more than the
    rest of detection); each folder is listed once for all the names.
    """
    found: dict[str, Optional[dict[str, Any]]] = dict.fromkeys(names)
    pending = list(names)
    for entry in sys.path:
        if not pending:
            break
        folder = entry or "."
        try:
            children = os.listdir(folder)
        except OSError:
            continue
        for name in list(pending):
            info = _package_in(folder, children, name)
            if info is not None:
                found[name] = info
                pending.remove(name)
    return found


def _package_in(folder: str, children: list[str], name: str) -> Optional[dict[str, Any]]:
    """``name``'s distribution among ``children`` of ``folder`` (the first with a version)."""
    prefix = name.lower().replace("-", "_") + "-"
    for child in children:
        lower = child.lower()
        if not (lower.startswith(prefix) or lower == name + ".egg-info"):
            continue
        if not lower.endswith((".dist-info", ".egg-info")):
            continue
        meta_dir = os.path.join(folder, child)
        version = _read_version(meta_dir)
        if version is None:
            continue
        return {"version": version, "location": os.path.abspath(folder),
                "installer": _installer(meta_dir)}
    return None


def _in_cwd(path: str, cwd: Optional[str]) -> bool:
    """Whether ``path`` is the current folder (one relative to a deleted folder counts)."""
    if cwd is None:
        return not os.path.isabs(path)
    return os.path.abspath(path) == cwd


def _torch_version_py(location: Optional[str]) -> tuple[Optional[str], Optional[str]]:
    """The text of torch/version.py: from the distribution's folder, else the first on sys.path."""
    dirs = [location] if location else []
    try:
        cwd = os.getcwd()  # type: Optional[str]
    except OSError:  # the current folder was deleted: it holds no torch
        cwd = None
    dirs += [p for p in sys.path if p and p != location and not _in_cwd(p, cwd)]
    for d in dirs:
        path = os.path.join(d, "torch", "version.py")
        text = read_capped(path, 8192)
        if text is not None:
            return path, text
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
    packages = _packages(PACKAGES)
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


def inventory(environ: Optional[Mapping[str, str]] = None) -> dict[str, Any]:
    """Every torch/torchvision/torchaudio dist-info or egg-info on the path the interpreter
    searches (``-I`` leaves PYTHONPATH out, so its entries are added back), and the conda-meta
    records of ``sys.prefix`` and ``$CONDA_PREFIX``: what doctor needs to find duplicates."""
    import glob
    import json

    env = os.environ if environ is None else environ
    extra = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    dists, seen = [], set()
    for entry in list(dict.fromkeys([*extra, *sys.path])):
        if not entry or not os.path.isdir(entry):
            continue
        for meta in glob.glob(os.path.join(entry, "*.dist-info")) + glob.glob(
                os.path.join(entry, "*.egg-info")):
            real = os.path.realpath(meta)
            base = os.path.basename(meta).rsplit(".", 1)[0]
            name = base.split("-", 1)[0].replace("_", "-").lower()
            if name not in PACKAGES or real in seen:
                continue
            seen.add(real)
            version = _read_version(meta) or [*base.split("-", 1), ""][1]
            dists.append({"name": name, "version": version, "location": entry,
                          "installer": _installer(meta)})
    conda: list[dict[str, str]] = []
    prefixes: list[str] = []
    for prefix in (sys.prefix, env.get("CONDA_PREFIX")):
        if prefix and os.path.realpath(prefix) not in prefixes:
            prefixes.append(os.path.realpath(prefix))
    for prefix in prefixes:
        for path in glob.glob(os.path.join(prefix, "conda-meta", "*.json")):
            if not os.path.basename(path).startswith(("pytorch", "torch")):
                continue
            try:
                rec = json.loads(read_capped(path, RECORD_CAP) or "")
            except (ValueError, RecursionError):
                continue
            if not isinstance(rec, dict):
                continue
            conda.append({"name": rec.get("name", ""), "version": rec.get("version", ""),
                          "channel": rec.get("channel", ""), "build": rec.get("build", ""),
                          "path": path})
    return {"python": sys.executable, "dists": dists, "conda": conda}


if __name__ == "__main__":
    import json

    facts = collect()
    if "--inventory" in sys.argv[1:]:
        facts["inventory"] = inventory()
    sys.stdout.write(json.dumps(facts))
