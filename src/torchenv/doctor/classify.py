"""Name the cause of what ``import torch`` did: a pure function of what the child saw.

``classify(seen)`` turns a :class:`~torchenv.doctor.seen.Seen` (the import's outcome and error
text, the path, the distributions, the libraries, the RECORD problems) into findings, each with
its code, severity, the evidence it rests on and a fix. doctor and validate's ``import_torch``
failure both answer with it. Every code is listed in docs/doctor.md with the error text it
explains.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any, NamedTuple, Optional

from packaging.utils import canonicalize_name

from torchenv.doctor.findings import Finding, Severity
from torchenv.doctor.seen import ImportOutcome, Seen, SeenDistribution, entry_folder
from torchenv.installers.commands import Shell, chain_commands, quote_command
from torchenv.matrix.index import index_url_for, pin
from torchenv.values import InvalidValue, VariantName

__all__ = ["CudaLibrary", "classify", "cuda_libraries", "cuda_library", "explains_import"]

_DATA = os.path.join(os.path.dirname(__file__), "cuda_libraries.json")

UNDEFINED = re.compile(r"(?P<file>/[^\s:]+): undefined symbol: (?P<symbol>[^\s,]+)")
VERSION_NOT_FOUND = re.compile(r"version `(?P<version>[^']+)' not found \(required by "
                               r"(?P<file>[^)]+)\)")
CANNOT_OPEN = re.compile(r"(?P<library>lib[^\s:/]+?\.so[.\d]*): cannot open shared object file")
TORCH_SYMBOL = re.compile(r"^_ZN[KVR]*(?:3c10|2at|5torch)")
"""A mangled name in namespace c10, at or torch: a symbol of torch's C++ API."""
CXX11 = ("B5cxx11", "__cxx11")
"""How the new C++11 std::string/std::list ABI shows in a mangled name."""
NUMPY_1_TEXT = "compiled using NumPy 1.x cannot be run in"


class CudaLibrary(NamedTuple):
    """A CUDA library torch loads (``libcudnn``) and the nvidia-* wheel folder that brings it."""

    library: str
    folder: Optional[str]

    def distribution_matches(self, name: str) -> bool:
        """Whether distribution ``name`` (normalised) is the wheel of this library's folder:
        ``nvidia-cudnn-cu12`` for folder ``cudnn``."""
        if self.folder is None:
            return False
        stem = "nvidia-" + self.folder.replace("_", "-")
        return re.fullmatch(re.escape(stem) + r"(-cu\d+)?", name) is not None


@lru_cache(maxsize=1)
def cuda_libraries() -> tuple[CudaLibrary, ...]:
    with open(_DATA, encoding="utf-8") as fh:
        doc = json.load(fh)
    return tuple(CudaLibrary(str(e["library"]), e.get("folder")) for e in doc["libraries"])


def cuda_library(filename: str) -> Optional[CudaLibrary]:
    """The CUDA library a file name is (``libcudnn_ops.so.9`` → libcudnn), by the longest
    name it starts with; None for any other library."""
    stem = os.path.basename(filename).split(".so", 1)[0]
    best = None
    for lib in cuda_libraries():
        if stem.startswith(lib.library) and (best is None or len(lib.library) > len(best.library)):
            best = lib
    return best


def _first_line(outcome: ImportOutcome) -> str:
    text = (outcome.message or outcome.error or "").strip()
    line = text.splitlines()[0] if text else "the import failed"
    return f"{outcome.error_type}: {line}" if outcome.error_type else line


def _within(path: str, folder: Optional[str]) -> bool:
    if not folder:
        return False
    folder = os.path.normpath(folder)
    path = os.path.normpath(path)
    return path == folder or path.startswith(folder + os.sep)


def _pip(seen: Seen, *args: str, shell: Shell = "posix") -> str:
    return quote_command([seen.executable or seen.python, "-m", "pip", *args], shell)


def _reinstall(seen: Seen, dist: Optional[SeenDistribution], name: str = "torch",
               deps: bool = False) -> str:
    """Reinstall this very build: ``torch==2.13.0+cpu`` from the index of its local tag when
    that tag is a variant PyTorch publishes an index for; a build whose tag names no such index
    (an NGC ``+e000cf0ad9.nv24.10``, a source build's ``+git…``) is pinned without an index,
    so pip asks the index it is configured with, never one made up from the tag (see
    :func:`_foreign_build`)."""
    version = dist.version if dist is not None else None
    if not version:
        return _pip(seen, "install", "--force-reinstall", name)
    public, _, local = version.partition("+")
    variant = _variant_of(local)
    index = ["--index-url", index_url_for(str(variant))] if variant is not None else []
    return _pip(seen, "install", "--force-reinstall", *([] if deps else ["--no-deps"]),
                pin(name, public, local or None), *index)


def _variant_of(local: str) -> Optional[VariantName]:
    """The variant a local version tag names (``cu128``), or None for any other tag."""
    try:
        return VariantName(local) if local else None
    except InvalidValue:
        return None


def _foreign_build(dist: Optional[SeenDistribution]) -> str:
    """A sentence for a fix that reinstalls a build whose local tag names no PyTorch wheel
    index: the build came from elsewhere, and only its source has it; empty otherwise."""
    version = dist.version if dist is not None else None
    local = (version or "").partition("+")[2]
    if dist is None or not local or _variant_of(local) is not None:
        return ""
    return (f" {dist.name} {version} was not installed from a PyTorch wheel index (its local "
            f"tag '{local}' names none): it came from elsewhere, such as a vendor's container "
            "or a source build, so reinstall it from the index or image it came from.")


def _torch_dist(seen: Seen) -> Optional[SeenDistribution]:
    """The torch distribution that imports: the one whose folder the import used, else the
    first on the path."""
    dists = seen.dists("torch")
    for d in dists:
        if seen.torch_folder and _within(seen.torch_folder, os.path.join(d.location, "torch")):
            return d
    return dists[0] if dists else None


def _version_tuple(text: Optional[str]) -> tuple[int, ...]:
    nums = re.match(r"(\d+)(?:\.(\d+))?", text or "")
    return tuple(int(n) for n in nums.groups() if n is not None) if nums else ()


def classify(seen: Seen, *, paired: Optional[Mapping[str, str]] = None,
             shell: Shell = "posix") -> list[Finding]:
    """Every cause the child's report shows, errors first. ``paired`` maps torchvision and
    torchaudio to the requirement paired with the installed torch (for fixes)."""
    findings: list[Finding] = []
    findings += _ended(seen)
    findings += _shadowed(seen)
    findings += _wrong_python(seen, shell)
    findings += _library_path(seen, shell)
    findings += _undefined_symbols(seen, paired or {}, shell)
    findings += _missing_libraries(seen, shell)
    findings += _records(seen, shell)
    findings += _leftovers(seen, shell)
    findings += _requirements(seen, shell)
    findings += _duplicates(seen, shell)
    findings += _numpy(seen, shell)
    # torch not there at all is the metadata's finding (torch-missing), not an import cause
    failed = [o for o in seen.imports if not o.ok and not _absent(seen, o)]
    if failed and not any(explains_import(f) for f in findings):
        o = failed[0]
        failed_dist = seen.dists(o.module)[0] if seen.dists(o.module) else None
        findings.append(Finding(
            "error", "import-failed", f"import {o.module} fails: {_first_line(o)}",
            "None of the known causes matched; the full error is in the evidence."
            + _foreign_build(failed_dist),
            _reinstall(seen, failed_dist, o.module, deps=True),
            evidence={"module": o.module, "error": o.error}))
    order = {"error": 0, "warning": 1, "info": 2}
    return sorted(findings, key=lambda f: order[f.severity])


def _absent(seen: Seen, outcome: ImportOutcome) -> bool:
    """Whether an import failed only because nothing of that name is on the path."""
    return (outcome.error_type == "ModuleNotFoundError"
            and outcome.message == f"No module named '{outcome.module}'"
            and not seen.dists(outcome.module)
            and (outcome.module != "torch" or seen.torch_folder is None))


IMPORT_CAUSES = frozenset({
    "import-timeout", "import-crashed", "torch-shadowed", "torch-wrong-python",
    "library-path-breaks-torch", "undefined-symbol-in-torch", "extension-built-for-other-torch",
    "extension-cxx11-abi", "extension-undefined-symbol", "missing-shared-library",
    "files-missing", "files-changed", "requirement-missing", "requirement-version",
    "numpy2-torch-built-for-numpy1", "import-failed"})
"""The codes that explain a failed import (validate shows the first of them)."""


def explains_import(finding: Finding) -> bool:
    return finding.severity == "error" and finding.code in IMPORT_CAUSES


def _ended(seen: Seen) -> list[Finding]:
    if seen.timed_out:
        module = seen.hung_in or "torch"
        return [Finding(
            "error", "import-timeout",
            f"import {module} did not finish within {seen.limit:g} s",
            f"The import was stopped at the limit (with every process it started). "
            f"{module} was being imported from {seen.torch_folder or 'an unknown folder'}; a "
            "file of it that waits forever (a lock, a network mount, a debugger hook) stops "
            "every program that imports it. 'python -X importtime -c \"import torch\"' shows "
            "the last module reached.",
            None, evidence={"module": module, "limit_seconds": seen.limit,
                            "torch_folder": seen.torch_folder})]
    if seen.ended is not None:
        return [Finding(
            "error", "import-crashed", f"importing torch ended the interpreter: {seen.ended}",
            "The interpreter died while importing (a crash in a library torch loads, or an "
            "exit called by a file it imported); what it printed is in the evidence.",
            None, evidence={"ended": seen.ended, "stderr": seen.stderr[-2000:]})]
    return []


def _installed_folders(seen: Seen) -> list[str]:
    return [os.path.join(d.location, "torch") for d in seen.dists("torch")]


def _entry_fix(seen: Seen, entry: Optional[str], folder: str, shell: Shell) -> Optional[str]:
    """A command that takes ``entry`` off the path: leave the current folder, or drop it from
    PYTHONPATH."""
    where = entry_folder(entry, seen.cwd)
    if entry == "" or (where is not None and seen.cwd and where == seen.cwd):
        return quote_command(["cd", os.path.dirname(seen.cwd or "/") or "/"], shell) + (
            f"  # or rename {folder}: python puts the current folder first on sys.path")
    parts = [p for p in seen.env.get("PYTHONPATH", "").split(os.pathsep) if p]
    if where is not None and any(entry_folder(p, seen.cwd) == where for p in parts):
        rest = [p for p in parts if entry_folder(p, seen.cwd) != where]
        if not rest:
            return "unset PYTHONPATH" if shell == "posix" else "Remove-Item Env:PYTHONPATH"
        return quote_command(["export", "PYTHONPATH=" + os.pathsep.join(rest)], shell)
    return None


def _shadowed(seen: Seen) -> list[Finding]:
    folder = seen.torch_folder
    if folder is None:
        return []
    installed = _installed_folders(seen)
    if any(_within(folder, f) for f in installed):
        return []
    outcome = seen.outcome("torch")
    failed = outcome is not None and not outcome.ok
    source_tree = not any(n.startswith("_C.") and (".so" in n or n.endswith(".pyd"))
                          for n in seen.torch_c_files)
    what = "a PyTorch source tree (no compiled torch._C)" if source_tree else "another torch"
    fix = _entry_fix(seen, seen.torch_path_entry, folder, "posix")
    if installed:
        shadows = f"; the installed torch in {installed[0]} is never reached"
    else:
        shadows = "; no torch distribution is installed on the path"
    entry = seen.torch_path_entry
    named = "the current folder" if entry == "" else (entry or "an entry of sys.path")
    return [Finding(
        "error" if failed or not installed else "warning", "torch-shadowed",
        f"'import torch' loads {folder}, {what}",
        f"{folder} comes from {named} on sys.path, before site-packages{shadows}."
        + (f" This is why: {_first_line(outcome)}." if failed and outcome else ""),
        fix, evidence={"torch_folder": folder, "path_entry": entry,
                       "installed": installed, "source_tree": source_tree,
                       "error": outcome.error if failed and outcome else None})]


def _wrong_python(seen: Seen, shell: Shell) -> list[Finding]:
    outcome = seen.outcome("torch")
    if outcome is None or outcome.ok or not seen.ext_suffix:
        return []
    compiled = [n for n in seen.torch_c_files if n.startswith("_C.") and n != "_C.pyi"]
    if not compiled or f"_C{seen.ext_suffix}" in compiled:
        return []
    dist = _torch_dist(seen)
    tags = dist.wheel_tags if dist else ()
    return [Finding(
        "error", "torch-wrong-python",
        f"torch in {seen.torch_folder} was built for another Python",
        f"Its extension is {', '.join(compiled)}, but this interpreter "
        f"({'.'.join(map(str, seen.version_info))}, {seen.python_tag}) loads only "
        f"_C{seen.ext_suffix}" + (f"; the wheel's tags are {', '.join(tags)}" if tags else "")
        + f". This is why: {_first_line(outcome)}." + _foreign_build(dist),
        _reinstall(seen, dist, deps=True),
        evidence={"compiled": compiled, "ext_suffix": seen.ext_suffix,
                  "python_tag": seen.python_tag, "wheel_tags": list(tags),
                  "error": outcome.error})]


class _Override(NamedTuple):
    """A library on LD_PRELOAD or in an LD_LIBRARY_PATH folder that torch's install brings too
    (or a CUDA library torch loads)."""

    path: str
    variable: str
    loaded: bool
    owner: str
    """The folder (LD_LIBRARY_PATH) or entry (LD_PRELOAD) the fix removes."""


def _overrides(seen: Seen) -> list[_Override]:
    loaded = set(seen.loaded_libraries)
    loaded_dirs = {os.path.dirname(p) for p in loaded}
    bundled = seen.bundled_libraries
    found = []
    for entry in seen.ld_preload:
        name = os.path.basename(entry)
        if name in bundled or cuda_library(name) is not None:
            real = seen.real_paths.get(entry, entry)
            found.append(_Override(entry, "LD_PRELOAD", real in loaded or entry in loaded,
                                   entry))
    for folder, names in seen.ld_library_path.items():
        real = seen.real_paths.get(folder, folder)
        for name in names:
            if name in bundled or cuda_library(name) is not None:
                is_loaded = (folder in loaded_dirs or real in loaded_dirs) and any(
                    os.path.basename(p).split(".so")[0] == name.split(".so")[0]
                    for p in loaded if os.path.dirname(p) in (folder, real))
                found.append(_Override(os.path.join(folder, name), "LD_LIBRARY_PATH",
                                       is_loaded, folder))
    return found


def _env_fix(seen: Seen, overrides: Sequence[_Override], shell: Shell) -> str:
    """The commands that take the overriding folders and entries out of the environment."""
    steps = []
    for variable, sep in (("LD_LIBRARY_PATH", os.pathsep), ("LD_PRELOAD", None)):
        drop = {o.owner for o in overrides if o.variable == variable}
        if not drop:
            continue
        raw = seen.env.get(variable, "")
        parts = [p for p in (raw.split(sep) if sep else raw.replace(":", " ").split()) if p]
        rest = [p for p in parts if p not in drop]
        if rest:
            steps.append(["export", f"{variable}=" + (sep or " ").join(rest)])
        else:
            steps.append(["unset", variable])
    return "; ".join(quote_command(s, shell) for s in steps)


def _undefined_in(outcome: ImportOutcome) -> Optional[tuple[str, str]]:
    """(file, symbol or version) an import failed on, from its error text."""
    text = outcome.error or outcome.message or ""
    m = UNDEFINED.search(text)
    if m:
        return m.group("file"), m.group("symbol")
    v = VERSION_NOT_FOUND.search(text)
    if v:
        return v.group("file").strip(), f"version {v.group('version')}"
    return None


def _torch_owned(seen: Seen, path: str) -> bool:
    """Whether a file belongs to torch's own install (torch/ or its nvidia-* libraries)."""
    if _within(path, seen.torch_folder):
        return True
    return os.path.basename(path) in seen.bundled_libraries and any(
        _within(path, os.path.dirname(p)) for p in seen.bundled_libraries.values())


def _library_path(seen: Seen, shell: Shell) -> list[Finding]:
    overrides = _overrides(seen)
    if not overrides:
        return []
    torch = seen.outcome("torch")
    failed_in_torch = None
    if torch is not None and not torch.ok:
        hit = _undefined_in(torch)
        if hit is not None and _torch_owned(seen, hit[0]):
            failed_in_torch = hit
    names = sorted({o.path for o in overrides})
    evidence: dict[str, Any] = {"libraries": names,
                                "loaded": sorted(o.path for o in overrides if o.loaded),
                                "LD_LIBRARY_PATH": seen.env.get("LD_LIBRARY_PATH"),
                                "LD_PRELOAD": seen.env.get("LD_PRELOAD")}
    variables = " and ".join(sorted({o.variable for o in overrides}))
    if failed_in_torch is not None and torch is not None:
        file, symbol = failed_in_torch
        evidence.update(file=file, symbol=symbol, error=torch.error)
        return [Finding(
            "error", "library-path-breaks-torch",
            f"{variables} puts {', '.join(names)} in place of the libraries torch brings",
            f"{file} needs {symbol}, which the library found through {variables} lacks: "
            f"{_first_line(torch)}. torch's install carries its own copy; the environment "
            "variable makes the loader take the other one first.",
            _env_fix(seen, overrides, shell), evidence=evidence)]
    loaded = [o for o in overrides if o.loaded]
    if loaded:
        return [Finding(
            "warning", "library-path-overrides-torch",
            f"torch runs with {', '.join(sorted(o.path for o in loaded))} from {variables}",
            "These replace the copies torch's install brings (a different build of the same "
            "library); mismatches show up later as 'undefined symbol' errors, wrong results or "
            "crashes in that library.",
            _env_fix(seen, loaded, shell), evidence=evidence)]
    cuda = [o for o in overrides if cuda_library(o.path) is not None]
    if not cuda:
        return []
    return [Finding(
        "info", "ld-library-path-cuda",
        f"{variables} lists CUDA libraries torch did not load: "
        + ", ".join(sorted(o.path for o in cuda)),
        "This torch did not load them now; a CUDA build of torch (or a library loaded later) "
        "may take them instead of the copies its wheels bring.",
        _env_fix(seen, cuda, shell), evidence=evidence)]


def _owner(seen: Seen, path: str) -> Optional[SeenDistribution]:
    """The distribution a file belongs to, by the top folder it sits in on the path."""
    for d in seen.distributions:
        if _within(path, d.location):
            top = os.path.relpath(path, d.location).split(os.sep, 1)[0]
            match = seen.dists(top)
            if match:
                return match[0]
    return None


def _undefined_symbols(seen: Seen, paired: Mapping[str, str], shell: Shell) -> list[Finding]:
    out = []
    torch = seen.outcome("torch")
    installed = _torch_dist(seen)
    torch_version = (torch.version if torch is not None and torch.ok else None) or (
        installed.version if installed is not None else None)
    overrides = _overrides(seen)
    for outcome in seen.imports:
        if outcome.ok:
            continue
        hit = _undefined_in(outcome)
        if hit is None:
            continue
        file, symbol = hit
        evidence: dict[str, Any] = {"module": outcome.module, "file": file, "symbol": symbol,
                                    "error": outcome.error}
        if _torch_owned(seen, file):
            if overrides and outcome.module == "torch":
                continue  # library-path-breaks-torch names the cause
            out.append(Finding(
                "error", "undefined-symbol-in-torch",
                f"torch's own {os.path.basename(file)} lacks {symbol}",
                f"{_first_line(outcome)}. The libraries of one torch install disagree: files of "
                "two builds mixed by an interrupted or forced upgrade, or an nvidia-* library "
                "of another version than torch requires." + _foreign_build(_torch_dist(seen)),
                _reinstall(seen, _torch_dist(seen), deps=True), evidence=evidence))
            continue
        owner = _owner(seen, file)
        owner_name = owner.name if owner else os.path.basename(file)
        evidence.update(distribution=owner.name if owner else None,
                        distribution_version=owner.version if owner else None,
                        torch=torch_version)
        rebuild = _pip(seen, "install", "--force-reinstall", "--no-deps",
                       "--no-build-isolation", "--no-binary", owner_name, owner_name, shell=shell)
        fix = (_pip(seen, "install", "--force-reinstall", "--no-deps", paired[owner_name],
                    shell=shell) if owner_name in paired else rebuild)
        if any(marker in symbol for marker in CXX11):
            abi = torch.cxx11_abi if torch is not None else None
            evidence["torch_cxx11_abi"] = abi
            out.append(Finding(
                "error", "extension-cxx11-abi",
                f"{file} was built with the other C++ string ABI than torch",
                f"It needs {symbol} (a std::__cxx11 name), which torch "
                + (f"(built with _GLIBCXX_USE_CXX11_ABI={int(abi)}) " if abi is not None else "")
                + "does not export: the extension was compiled with a different "
                "_GLIBCXX_USE_CXX11_ABI. Rebuild it against the installed torch.",
                fix, evidence=evidence))
        elif TORCH_SYMBOL.match(symbol):
            out.append(Finding(
                "error", "extension-built-for-other-torch",
                f"{file} was built for another torch than {torch_version or 'the installed one'}",
                f"It needs {symbol} from torch's C++ API (c10/at/torch), which this torch does "
                f"not export; {owner_name} must be the build made for torch "
                f"{torch_version or '(installed)'}.", fix, evidence=evidence))
        else:
            out.append(Finding(
                "error", "extension-undefined-symbol",
                f"{file} needs {symbol}, which nothing loaded provides",
                f"{_first_line(outcome)}.", fix, evidence=evidence))
    return out


def _requirement_of(seen: Seen, lib: Any) -> Optional[tuple[str, str]]:
    """(requirement text without marker, distribution name) of torch's Requires-Dist that brings
    ``lib``; None when torch does not require it here."""
    for req in _applicable_requirements(seen):
        name = canonicalize_name(req.name)
        if lib.distribution_matches(name):
            return f"{req.name}{req.specifier}", name
    return None


def _applicable_requirements(seen: Seen) -> list[Any]:
    """The Requires-Dist of the torch that imports whose marker holds for the child's
    interpreter. A marker that cannot be judged (a comparison packaging does not define, such
    as ``os_name ~= "posix"``, or a variable the environment lacks) leaves its requirement out:
    doctor never asks for a package on a guess."""
    from packaging.markers import InvalidMarker, UndefinedComparison, UndefinedEnvironmentName
    from packaging.requirements import InvalidRequirement, Requirement

    dist = _torch_dist(seen)
    if dist is None:
        return []
    out = []
    environment = {**seen.markers, "extra": ""}
    for text in dist.requires:
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue
        if req.marker is not None and seen.markers:
            try:
                if not req.marker.evaluate(environment):
                    continue
            except (InvalidMarker, UndefinedComparison, UndefinedEnvironmentName):
                continue
        out.append(req)
    return out


def _missing_libraries(seen: Seen, shell: Shell) -> list[Finding]:
    out = []
    for outcome in seen.imports:
        if outcome.ok:
            continue
        m = CANNOT_OPEN.search(outcome.error or outcome.message or "")
        if m is None:
            continue
        name = m.group("library")
        lib = cuda_library(name)
        evidence: dict[str, Any] = {"module": outcome.module, "library": name,
                                    "error": outcome.error}
        stem = name.split(".so", 1)[0]
        elsewhere = sorted(os.path.join(folder, n) for folder, names in
                           seen.ld_library_path.items() for n in names
                           if n.split(".so", 1)[0] == stem)
        if elsewhere:
            evidence["on_ld_library_path"] = elsewhere
        req = _requirement_of(seen, lib) if lib is not None else None
        if req is not None:
            requirement, dist_name = req
            installed = seen.dists(dist_name)
            evidence.update(requirement=requirement,
                            installed=installed[0].version if installed else None)
            state = (f"{dist_name} is not installed" if not installed else
                     f"{dist_name} {installed[0].version} is installed")
            out.append(Finding(
                "error", "missing-shared-library",
                f"{name} cannot be loaded: torch requires {requirement}, and {state}",
                f"{_first_line(outcome)}. torch's wheel does not carry {name}; it comes from "
                f"{dist_name}, which torch's Requires-Dist pins."
                + (f" The loader also found {', '.join(elsewhere)} on LD_LIBRARY_PATH, which "
                   "is not the version torch was built with." if elsewhere else ""),
                _pip(seen, "install", "--force-reinstall", "--no-deps", requirement,
                     shell=shell), evidence=evidence))
            continue
        if lib is not None and lib.library == "libcuda" and _wsl(seen):
            wsl = WSL_DRIVER_FOLDER
            evidence["wsl_driver_folder"] = wsl
            rest = seen.env.get("LD_LIBRARY_PATH", "")
            out.append(Finding(
                "error", "missing-shared-library",
                f"{name} cannot be loaded: on WSL the driver's libcuda is in {wsl}",
                f"{_first_line(outcome)}. libcuda comes with the NVIDIA driver, never with a "
                f"wheel; under WSL the Windows driver provides it in {wsl}, which the loader "
                "must be able to find (ldconfig or LD_LIBRARY_PATH).",
                quote_command(["export", "LD_LIBRARY_PATH=" + os.pathsep.join(
                    p for p in (wsl, *rest.split(os.pathsep)) if p)], shell),
                evidence=evidence))
            continue
        out.append(Finding(
            "error", "missing-shared-library",
            f"{name} cannot be loaded by import {outcome.module}",
            f"{_first_line(outcome)}. "
            + ("It is a CUDA library this torch does not pull in as a wheel: the CUDA "
               "toolkit or driver that provides it must be on the loader's path."
               if lib is not None else
               "No library of that name is on the loader's path.")
            + (f" LD_LIBRARY_PATH holds {', '.join(elsewhere)}, another version."
               if elsewhere else ""),
            None, evidence=evidence))
    return out


WSL_DRIVER_FOLDER = "/usr/lib/wsl/lib"
"""Where WSL 2 mounts the Windows NVIDIA driver's Linux libraries (libcuda.so.1, libnvidia-ml);
https://docs.nvidia.com/cuda/wsl-user-guide/index.html ("the CUDA driver installed on Windows
host will be stubbed inside the WSL 2 as libcuda.so")."""


def _wsl(seen: Seen) -> bool:
    """Whether the child ran under WSL: its kernel release names Microsoft."""
    return "microsoft" in seen.markers.get("platform_release", "").lower()


def _records(seen: Seen, shell: Shell) -> list[Finding]:
    out = []
    torch = seen.outcome("torch")
    failed = torch is not None and not torch.ok
    for problem in seen.records:
        dist = next((d for d in seen.dists(problem.distribution)
                     if d.location == problem.location), None)
        fix = _reinstall(seen, dist, problem.distribution)
        label = f"{problem.distribution} {problem.version or ''}".strip()
        if problem.missing:
            out.append(Finding(
                "error", "files-missing",
                f"{len(problem.missing)} file(s) of {label} listed in its RECORD are missing",
                f"In {problem.location}: {', '.join(problem.missing[:5])}"
                + (f" and {len(problem.missing) - 5} more" if len(problem.missing) > 5 else "")
                + ". An interrupted install or a cleanup removed them." + _foreign_build(dist),
                fix, evidence=problem.to_json()))
        if problem.changed:
            out.append(Finding(
                "error" if failed else "warning", "files-changed",
                f"{len(problem.changed)} file(s) of {label} differ from its RECORD",
                f"In {problem.location}: {', '.join(problem.changed[:5])}"
                + (f" and {len(problem.changed) - 5} more" if len(problem.changed) > 5 else "")
                + ". Another install wrote over them, or they were edited."
                + _foreign_build(dist),
                fix, evidence=problem.to_json()))
    return out


def _leftovers(seen: Seen, shell: Shell) -> list[Finding]:
    if not seen.leftovers:
        return []
    return [Finding(
        "warning", "interrupted-install-leftover",
        "folders of an interrupted install are on the path: "
        + ", ".join(os.path.basename(p) for p in seen.leftovers),
        "pip renames a package folder to '~' + its name while replacing it; these were left "
        "when an upgrade stopped halfway. They are never imported, but their presence means "
        "the package beside them may be incomplete (see files-missing).",
        quote_command(["rm", "-rf", *seen.leftovers], shell),
        evidence={"folders": list(seen.leftovers)})]


def _beside(seen: Seen, name: str, torch_dist: Optional[SeenDistribution]
            ) -> Optional[SeenDistribution]:
    """The copy of distribution ``name`` the imported torch loads: the one installed beside it
    (torch's libraries find the nvidia-* folders relative to its own site folder), else the
    first on the path; None when it is not installed."""
    installed = seen.dists(name)
    for d in installed:
        if torch_dist is not None and d.location == torch_dist.location:
            return d
    return installed[0] if installed else None


def _requirements(seen: Seen, shell: Shell) -> list[Finding]:
    out = []
    missing, wrong = [], []
    torch_dist = _torch_dist(seen)
    for req in _applicable_requirements(seen):
        name = canonicalize_name(req.name)
        if not (name.startswith("nvidia-") or name == "triton"):
            continue
        copy = _beside(seen, name, torch_dist)
        text = f"{req.name}{req.specifier}"
        if copy is None:
            missing.append(text)
        elif copy.version and not req.specifier.contains(copy.version, prereleases=True):
            wrong.append((text, copy))
    label = f"torch {torch_dist.version}" if torch_dist else "torch"
    # torch imports: a gap is a risk for later (a kernel that loads the library), not the cause
    # of a failure; an import that failed or never reported keeps it an error
    outcome = seen.outcome("torch")
    severity: Severity = "warning" if outcome is not None and outcome.ok else "error"
    if missing:
        out.append(Finding(
            severity, "requirement-missing",
            f"{label} requires {', '.join(missing)}, not installed",
            "torch loads these CUDA libraries from the nvidia-* wheels its metadata pins; "
            "without them 'import torch' fails with 'cannot open shared object file' or "
            "falls back to whatever the system has.",
            _pip(seen, "install", *missing, shell=shell),
            evidence={"missing": missing}))
    if wrong:
        out.append(Finding(
            severity, "requirement-version",
            f"{label} requires " + ", ".join(
                f"{t} but {d.name} {d.version} is installed" for t, d in wrong),
            "A later install replaced the version torch was built with; symbols that build "
            "needs may be missing ('undefined symbol') or behave differently.",
            _pip(seen, "install", *(t for t, _ in wrong), shell=shell),
            evidence={"wanted": [t for t, _ in wrong],
                      "installed": [f"{d.name}=={d.version} in {d.location}"
                                    for _, d in wrong]}))
    majors = sorted({d.name for d in seen.distributions
                     if re.fullmatch(r"nvidia-nccl-cu\d+", d.name)})
    if len(majors) > 1:
        required = {canonicalize_name(r.name) for r in _applicable_requirements(seen)}
        extra = [m for m in majors if m not in required] or majors[:-1]
        out.append(Finding(
            "warning", "nccl-two-cuda-majors",
            f"NCCL for two CUDA majors is installed: {', '.join(majors)}",
            "Both install nvidia/nccl/lib/libnccl.so.2 into one folder; whichever was "
            "installed last wins, and it may not be the one torch was built with.",
            chain_commands([[seen.executable or seen.python, "-m", "pip", "uninstall", "-y",
                             *extra], [seen.executable or seen.python, "-m", "pip", "install",
                                       "--force-reinstall", "--no-deps",
                                       *(t for t in _texts_for(seen, majors))]], shell),
            evidence={"installed": majors}))
    return out


def _texts_for(seen: Seen, names: Sequence[str]) -> list[str]:
    return [f"{r.name}{r.specifier}" for r in _applicable_requirements(seen)
            if canonicalize_name(r.name) in names] or [names[-1]]


def _duplicates(seen: Seen, shell: Shell) -> list[Finding]:
    out = []
    for name in ("torch", "torchvision", "torchaudio"):
        dists = seen.dists(name)
        places = list(dict.fromkeys(d.location for d in dists))
        if len(places) < 2:
            continue
        outcome = seen.outcome(name)
        entry = entry_folder(outcome.path_entry, seen.cwd) if outcome and outcome.ok else None
        if name == "torch" and entry is None and seen.torch_folder:
            entry = os.path.dirname(seen.torch_folder)
        imports = next((d for d in dists if d.location == entry), dists[0])
        others = [d for d in dists if d.location != imports.location]
        user = seen.user_site
        in_user = user is not None and imports.location == user
        user_copy = next((d for d in dists if user is not None and d.location == user), None)
        if user_copy is not None:
            fix = ("export PYTHONNOUSERSITE=1  # python then leaves the user site out of "
                   f"sys.path; remove {user_copy.meta_dir} and its {name}/ to make it permanent")
        else:
            fix = (quote_command([seen.executable or seen.python, "-m", "pip", "uninstall", "-y",
                                  name], shell)
                   + f"  # removes {imports.location}'s; then reinstall the one you want")
        out.append(Finding(
            "error", f"multiple-{name}",
            f"two installs of {name}: {imports.version} in {imports.location} imports",
            f"{imports.version} in {imports.location}"
            + (" (the user site, searched before site-packages)" if in_user else "")
            + " shadows " + "; ".join(f"{d.version} in {d.location}" for d in others) + ".",
            fix, evidence={"imports": imports.to_json(),
                           "shadowed": [d.to_json() for d in others]}))
    return out


def _numpy(seen: Seen, shell: Shell) -> list[Finding]:
    torch = _torch_dist(seen)
    numpy = seen.dists("numpy")
    if torch is None or not numpy:
        return []
    if _version_tuple(numpy[0].version)[:1] < (2,) or _version_tuple(torch.version) >= (2, 3):
        return []
    said = next((line.strip() for line in seen.stderr.splitlines() if NUMPY_1_TEXT in line), None)
    return [Finding(
        "error", "numpy2-torch-built-for-numpy1",
        f"NumPy {numpy[0].version} is installed beside torch {torch.version}, built for NumPy 1",
        "torch releases up to 2.2 were compiled against NumPy 1.x; with NumPy 2 'import torch' "
        "prints 'A module that was compiled using NumPy 1.x cannot be run in NumPy 2' and "
        "tensor/array conversion fails.",
        _pip(seen, "install", "numpy<2", shell=shell),
        evidence={"numpy": numpy[0].version, "torch": torch.version, "printed": said})]
