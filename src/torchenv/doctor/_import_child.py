"""What ``import torch`` does in the target interpreter, as its own ``python`` sees it.

Sent whole as ``python -c <this source>`` (stdlib only, no imports from torchenv, Python 3.7
syntax) and run with the user's environment and current folder, so that the current folder,
``PYTHONPATH``, the user site, ``LD_LIBRARY_PATH`` and ``LD_PRELOAD`` act on it as they act on the
user's ``python``. It reports in phases, one JSON object a line, each behind :data:`MARK`, on a
private copy of the original stdout (file descriptor 1 is pointed at stderr, so that whatever
torch or a library prints cannot corrupt the report):

* ``seen``: the interpreter, its ``sys.path``, the environment variables that steer imports and
  library loading, every distribution on the path, leftovers of interrupted installs, where
  ``torch`` would come from, and the shared libraries torch's install brings;
* ``start`` before each import and ``import`` after it (the full error text on failure), so a
  parent that had to stop a hung import knows which one hung; after torch, torchvision and
  torchaudio, the modules named as arguments (companions such as ``torch_scatter``) are
  imported the same way;
* ``libraries``: every shared library mapped into the process (``/proc/self/maps``) at the end,
  after a failed import too.

The parent (torchenv.doctor.probe) reads the lines; the meaning is decided in
torchenv.doctor.classify.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
import traceback
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any, Optional

MARK = "\x1etorchenv-doctor "
MODULES = ("torch", "torchvision", "torchaudio")
ENV_KEYS = ("PYTHONPATH", "PYTHONHOME", "PYTHONNOUSERSITE", "PYTHONSAFEPATH", "LD_LIBRARY_PATH",
            "LD_PRELOAD", "VIRTUAL_ENV", "CONDA_PREFIX", "CUDA_HOME", "CUDA_PATH")
READ_CAP = 1 << 20
DETAIL = ("torch", "torchvision", "torchaudio", "triton", "numpy")
"""Distributions whose METADATA is read whole (Requires-Dist, WHEEL tags); every other one is
named by its folder."""


OUT = 1
"""The report's file descriptor: a private copy of stdout once :func:`main` runs."""


def emit(kind: str, doc: dict[str, Any]) -> None:
    doc = dict(doc)
    doc["kind"] = kind
    data = (MARK + json.dumps(doc) + "\n").encode("utf-8")
    while data:
        data = data[os.write(OUT, data):]


def read(path: str, cap: int = READ_CAP) -> Optional[str]:
    try:
        with open(path, "rb") as fh:
            return fh.read(cap).decode("utf-8", "replace")
    except (OSError, ValueError):
        return None


def norm(name: str) -> str:
    """PEP 503, as packaging.utils.canonicalize_name (this child imports no third party;
    tests/doctor compare the two)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def headers(text: Optional[str]) -> dict[str, Any]:
    """Name, Version and every Requires-Dist of a METADATA/PKG-INFO text (headers only)."""
    found: dict[str, Any] = {"requires": []}
    for line in (text or "").splitlines():
        if not line.strip():
            break
        key, _, value = line.partition(":")
        key, value = key.strip().lower(), value.strip()
        if key in ("name", "version") and key not in found:
            found[key] = value
        elif key == "requires-dist":
            found["requires"].append(value)
    return found


def distribution(folder: str, child: str) -> dict[str, Any]:
    base = child.rsplit(".", 1)[0]
    name, _, version = base.partition("-")
    meta_dir = os.path.join(folder, child)
    dist: dict[str, Any] = {"name": norm(name), "version": version.split("-")[0] or None,
            "location": folder, "meta_dir": meta_dir}
    if dist["name"] in DETAIL or dist["version"] is None:
        meta = headers(read(os.path.join(meta_dir, "METADATA"))
                       or read(os.path.join(meta_dir, "PKG-INFO")))
        dist["version"] = meta.get("version") or dist["version"]
        dist["requires"] = meta["requires"]
        wheel = read(os.path.join(meta_dir, "WHEEL")) or ""
        dist["wheel_tags"] = [line.split(":", 1)[1].strip() for line in wheel.splitlines()
                              if line.startswith("Tag:")]
        dist["installer"] = (read(os.path.join(meta_dir, "INSTALLER")) or "").strip() or None
        dist["record"] = os.path.isfile(os.path.join(meta_dir, "RECORD"))
    return dist


def scan_path(entries: list[str]) -> tuple[list[dict[str, Any]], list[str]]:
    dists: list[dict[str, Any]] = []
    leftovers: list[str] = []
    seen: set[str] = set()
    for entry in entries:
        folder = os.path.abspath(entry or ".")
        if folder in seen:
            continue
        seen.add(folder)
        try:
            children = sorted(os.listdir(folder))
        except OSError:
            continue
        for child in children:
            if child.startswith("~"):
                leftovers.append(os.path.join(folder, child))
            elif child.endswith((".dist-info", ".egg-info")) and "-" in child:
                dists.append(distribution(folder, child))
    return dists, leftovers


def path_entry(entries: list[str], package_dir: str) -> Optional[str]:
    """The sys.path entry (as written there) a package folder was found in."""
    parent = os.path.dirname(os.path.abspath(package_dir))
    for entry in entries:
        if os.path.abspath(entry or ".") == parent:
            return entry
    return None


def libraries_in(folder: str) -> list[str]:
    try:
        return sorted(n for n in os.listdir(folder) if ".so" in n or n.endswith(".dll"))
    except OSError:
        return []


def where(name: str) -> Optional[dict[str, Any]]:
    import importlib.util

    try:
        spec = importlib.util.find_spec(name)
    except Exception as exc:  # a broken parent package, a bad entry on sys.path
        return {"error": f"{type(exc).__name__}: {exc}"}
    if spec is None:
        return None
    locations = list(spec.submodule_search_locations or [])
    folder = locations[0] if locations else None
    try:
        c_files = sorted(n for n in os.listdir(folder) if n.startswith("_C")) if folder else []
    except OSError:
        c_files = []
    return {"origin": spec.origin if spec.has_location else None, "folder": folder,
            "c_files": c_files,
            "namespace": spec.origin is None or spec.origin == "namespace",
            "path_entry": path_entry(sys.path, folder) if folder else None}


def bundled(torch_folder: Optional[str], entries: list[str]) -> dict[str, str]:
    """Shared libraries torch's install brings: torch/lib and the nvidia-* wheels' lib folders."""
    found: dict[str, str] = {}
    if torch_folder:
        lib = os.path.join(torch_folder, "lib")
        for name in libraries_in(lib):
            found.setdefault(name, os.path.join(lib, name))
    for entry in entries:
        root = os.path.join(os.path.abspath(entry or "."), "nvidia")
        try:
            parts = sorted(os.listdir(root))
        except OSError:
            continue
        for part in parts:
            lib = os.path.join(root, part, "lib")
            for name in libraries_in(lib):
                found.setdefault(name, os.path.join(lib, name))
    return found


def library_path() -> tuple[dict[str, list[str]], list[str], dict[str, str]]:
    """LD_LIBRARY_PATH's folders with their libraries, LD_PRELOAD's entries, and the real path of
    each (what /proc/self/maps names once loaded)."""
    folders: dict[str, list[str]] = {}
    real: dict[str, str] = {}
    for folder in os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep):
        if folder and folder not in folders:
            folders[folder] = libraries_in(folder)
            real[folder] = os.path.realpath(folder)
    preload = [p for p in os.environ.get("LD_PRELOAD", "").replace(":", " ").split() if p]
    for entry in preload:
        real[entry] = os.path.realpath(entry)
    return folders, preload, real


def markers() -> dict[str, str]:
    """The environment markers of PEP 508 for this interpreter."""
    import platform

    vi = sys.version_info
    return {"os_name": os.name, "sys_platform": sys.platform,
            "platform_machine": platform.machine(), "platform_system": platform.system(),
            "platform_release": platform.release(),
            "platform_python_implementation": platform.python_implementation(),
            "implementation_name": sys.implementation.name,
            "python_version": f"{vi[0]}.{vi[1]}",
            "python_full_version": platform.python_version()}


def interpreter() -> dict[str, Any]:
    import site
    import sysconfig

    vi = sys.version_info
    return {
        "executable": sys.executable, "version_info": [vi[0], vi[1], vi[2], vi[3], vi[4]],
        "implementation": sys.implementation.name,
        "cache_tag": sys.implementation.cache_tag,
        "ext_suffix": sysconfig.get_config_var("EXT_SUFFIX"),
        "gil_disabled": bool(sysconfig.get_config_var("Py_GIL_DISABLED")),
        "prefix": sys.prefix, "base_prefix": sys.base_prefix,
        "user_site": getattr(site, "USER_SITE", None),
        "user_site_enabled": bool(getattr(site, "ENABLE_USER_SITE", False)),
    }


def seen() -> dict[str, Any]:
    entries = list(sys.path)
    dists, leftovers = scan_path(entries)
    torch = where("torch")
    folders, preload, real = library_path()
    return {"interpreter": interpreter(), "markers": markers(), "cwd": os.getcwd(),
            "sys_path": entries,
            "env": {k: os.environ[k] for k in ENV_KEYS if k in os.environ},
            "distributions": dists, "leftovers": leftovers,
            "torch_spec": torch,
            "bundled_libraries": bundled(torch.get("folder") if torch else None, entries),
            "ld_library_path": folders, "ld_preload": preload, "real_paths": real}


def torch_facts(torch: Any) -> dict[str, Any]:
    facts: dict[str, Any] = {"version": str(getattr(torch, "__version__", "")) or None}
    version = getattr(torch, "version", None)
    facts["cuda"] = getattr(version, "cuda", None)
    facts["hip"] = getattr(version, "hip", None)
    c = getattr(torch, "_C", None)
    flags = getattr(c, "_cuda_getArchFlags", None)
    try:
        facts["arch_list"] = (flags() or "").split() if flags is not None else []
    except Exception as exc:  # a CUDA build that cannot answer: recorded, not fatal
        facts["arch_list_error"] = f"{type(exc).__name__}: {exc}"
    abi = getattr(c, "_GLIBCXX_USE_CXX11_ABI", None)
    facts["cxx11_abi"] = abi if isinstance(abi, bool) else None
    return facts


def import_one(name: str) -> bool:
    import importlib

    emit("start", {"module": name})
    start = time.monotonic()
    try:
        module = importlib.import_module(name)
    except BaseException as exc:  # ImportError, OSError (a library), SystemExit, ...
        emit("import", {"module": name, "ok": False, "seconds": time.monotonic() - start,
                        "error_type": type(exc).__name__, "message": str(exc),
                        "error": traceback.format_exc()})
        return False
    where_from = getattr(module, "__file__", None)
    folder = os.path.dirname(where_from) if where_from else None
    doc: dict[str, Any] = {"module": name, "ok": True, "seconds": time.monotonic() - start,
           "file": where_from, "path_entry": path_entry(sys.path, folder) if folder else None,
           "version": str(getattr(module, "__version__", "")) or None}
    if name == "torch":
        doc.update(torch_facts(module))
    emit("import", doc)
    return True


def loaded_libraries() -> list[str]:
    paths: list[str] = []
    text = read("/proc/self/maps", 64 << 20) or ""
    for line in text.splitlines():
        parts = line.split(None, 5)
        if len(parts) == 6 and parts[5].startswith("/") and ".so" in parts[5]:
            path = parts[5].strip()
            if path not in paths:
                paths.append(path)
    return paths


def main() -> int:
    global OUT
    OUT = os.dup(1)
    os.dup2(2, 1)
    report = seen()
    emit("seen", report)
    installed = {d["name"] for d in report["distributions"]}
    if import_one("torch"):
        for name in MODULES[1:]:
            if name in installed:
                import_one(name)
        for name in sys.argv[1:]:  # the companions a caller asks about, by module name
            if name not in MODULES:
                import_one(name)
    emit("libraries", {"loaded": loaded_libraries()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
