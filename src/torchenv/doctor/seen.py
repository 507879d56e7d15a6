"""What the bounded child ``import torch`` saw, as values: the interpreter and its path, the
distributions on that path, the libraries, each import's outcome, and how the child ended.

:func:`seen_from_report` reads the child's lines (see ``_import_child.py``); nothing here runs
anything.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Optional

from packaging.utils import canonicalize_name

__all__ = ["MARK", "ImportOutcome", "RecordProblem", "Seen", "SeenDistribution",
           "seen_from_report"]

MARK = "\x1etorchenv-doctor "
"""The prefix of every report line of the child (``_import_child.MARK``)."""


class SeenDistribution(NamedTuple):
    """A ``*.dist-info``/``*.egg-info`` folder on the child's ``sys.path``. ``requires`` and
    ``wheel_tags`` are read for the torch family, triton and numpy only."""

    name: str
    version: Optional[str]
    location: str
    meta_dir: str
    requires: tuple[str, ...] = ()
    wheel_tags: tuple[str, ...] = ()
    installer: Optional[str] = None
    has_record: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "version": self.version, "location": self.location,
                "meta_dir": self.meta_dir, "requires": list(self.requires),
                "wheel_tags": list(self.wheel_tags), "installer": self.installer}


class ImportOutcome(NamedTuple):
    """One ``import NAME`` in the child: what it gave, or the full error text."""

    module: str
    ok: bool
    seconds: float = 0.0
    error: Optional[str] = None
    error_type: Optional[str] = None
    message: Optional[str] = None
    file: Optional[str] = None
    path_entry: Optional[str] = None
    version: Optional[str] = None
    cuda: Optional[str] = None
    hip: Optional[str] = None
    arch_list: tuple[str, ...] = ()
    cxx11_abi: Optional[bool] = None

    def to_json(self) -> dict[str, Any]:
        doc = self._asdict()
        doc["arch_list"] = list(self.arch_list)
        return doc


class RecordProblem(NamedTuple):
    """Files a distribution's ``RECORD`` lists that are missing or differ from it."""

    distribution: str
    version: Optional[str]
    location: str
    missing: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"distribution": self.distribution, "version": self.version,
                "location": self.location, "missing": list(self.missing),
                "changed": list(self.changed)}


@dataclass(frozen=True)
class Seen:
    """Everything the child reported, and how it ended.

    ``hung_in`` names the module whose import was still running when the limit ran out;
    ``ended`` describes a child that died before reporting everything (a signal, an exit).
    ``records`` is filled by the parent, which checks the RECORD files of what the child found.
    """

    python: str
    executable: Optional[str] = None
    version_info: tuple[int, int, int] = (0, 0, 0)
    ext_suffix: Optional[str] = None
    cache_tag: Optional[str] = None
    gil_disabled: bool = False
    prefix: Optional[str] = None
    base_prefix: Optional[str] = None
    user_site: Optional[str] = None
    user_site_enabled: bool = False
    cwd: Optional[str] = None
    sys_path: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    distributions: tuple[SeenDistribution, ...] = ()
    leftovers: tuple[str, ...] = ()
    torch_folder: Optional[str] = None
    torch_path_entry: Optional[str] = None
    torch_namespace: bool = False
    torch_c_files: tuple[str, ...] = ()
    markers: Mapping[str, str] = field(default_factory=dict)
    real_paths: Mapping[str, str] = field(default_factory=dict)
    bundled_libraries: Mapping[str, str] = field(default_factory=dict)
    ld_library_path: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    ld_preload: tuple[str, ...] = ()
    imports: tuple[ImportOutcome, ...] = ()
    loaded_libraries: tuple[str, ...] = ()
    limit: float = 0.0
    timed_out: bool = False
    hung_in: Optional[str] = None
    ended: Optional[str] = None
    stderr: str = ""
    records: tuple[RecordProblem, ...] = ()

    @property
    def python_tag(self) -> str:
        """``cp311``, ``cp313t``: the tag wheels for this interpreter carry."""
        major, minor = self.version_info[:2]
        return f"cp{major}{minor}" + ("t" if self.gil_disabled else "")

    def dists(self, name: str) -> tuple[SeenDistribution, ...]:
        """Every distribution of ``name`` on the path, in ``sys.path`` order."""
        wanted = canonicalize_name(name)
        return tuple(d for d in self.distributions if d.name == wanted)

    def outcome(self, module: str) -> Optional[ImportOutcome]:
        return next((o for o in self.imports if o.module == module), None)

    def to_json(self) -> dict[str, Any]:
        return {
            "python": self.python, "executable": self.executable,
            "python_version": ".".join(map(str, self.version_info)),
            "python_tag": self.python_tag, "ext_suffix": self.ext_suffix,
            "cwd": self.cwd, "sys_path": list(self.sys_path), "env": dict(self.env),
            "user_site": self.user_site, "user_site_enabled": self.user_site_enabled,
            "torch_folder": self.torch_folder, "torch_path_entry": self.torch_path_entry,
            "torch_c_files": list(self.torch_c_files),
            "imports": [o.to_json() for o in self.imports],
            "loaded_libraries": list(self.loaded_libraries),
            "ld_library_path": {k: list(v) for k, v in self.ld_library_path.items()},
            "ld_preload": list(self.ld_preload),
            "distributions": [d.to_json() for d in self.distributions
                              if d.requires or d.wheel_tags or d.name.startswith("nvidia-")],
            "leftovers": list(self.leftovers), "records": [r.to_json() for r in self.records],
            "limit_seconds": self.limit, "timed_out": self.timed_out, "hung_in": self.hung_in,
            "ended": self.ended,
        }


def report_lines(stdout: str) -> list[dict[str, Any]]:
    """The child's report objects, in order; anything else on stdout is ignored, and a line
    cut short (the child stopped while writing it) ends the report."""
    docs = []
    for line in stdout.split("\n"):
        at = line.find(MARK)
        if at < 0:
            continue
        try:
            doc = json.loads(line[at + len(MARK):])
        except ValueError:
            break
        if isinstance(doc, dict):
            docs.append(doc)
    return docs


def _text(value: object) -> Optional[str]:
    return value if isinstance(value, str) else None


def _texts(value: object) -> tuple[str, ...]:
    return tuple(v for v in value if isinstance(v, str)) if isinstance(value, list) else ()


def _distribution(doc: Mapping[str, Any]) -> SeenDistribution:
    return SeenDistribution(
        name=canonicalize_name(str(doc["name"])), version=_text(doc.get("version")),
        location=str(doc["location"]), meta_dir=str(doc.get("meta_dir") or ""),
        requires=_texts(doc.get("requires")), wheel_tags=_texts(doc.get("wheel_tags")),
        installer=_text(doc.get("installer")), has_record=bool(doc.get("record")))


def _outcome(doc: Mapping[str, Any]) -> ImportOutcome:
    abi = doc.get("cxx11_abi")
    return ImportOutcome(
        module=str(doc["module"]), ok=bool(doc.get("ok")),
        seconds=float(doc.get("seconds") or 0.0), error=_text(doc.get("error")),
        error_type=_text(doc.get("error_type")), message=_text(doc.get("message")),
        file=_text(doc.get("file")), path_entry=_text(doc.get("path_entry")),
        version=_text(doc.get("version")), cuda=_text(doc.get("cuda")),
        hip=_text(doc.get("hip")), arch_list=_texts(doc.get("arch_list")),
        cxx11_abi=abi if isinstance(abi, bool) else None)


def seen_from_report(python: str, stdout: str, *, limit: float, timed_out: bool,
                     ended: Optional[str], stderr: str = "") -> Seen:
    """The :class:`Seen` of a child's output. Raises ValueError (or KeyError/TypeError) when a
    report line is not of the shape the child writes."""
    docs = report_lines(stdout)
    seen = next((d for d in docs if d.get("kind") == "seen"), None)
    imports = tuple(_outcome(d) for d in docs if d.get("kind") == "import")
    started = [str(d.get("module")) for d in docs if d.get("kind") == "start"]
    done = {o.module for o in imports}
    unfinished = next((m for m in started if m not in done), None)
    libraries = next((d for d in docs if d.get("kind") == "libraries"), None)
    finished = libraries is not None
    fields: dict[str, Any] = {}
    if seen is not None:
        interp = seen["interpreter"]
        vi = interp.get("version_info") or [0, 0, 0]
        spec = seen.get("torch_spec") if isinstance(seen.get("torch_spec"), dict) else None
        fields = {
            "executable": _text(interp.get("executable")),
            "version_info": (int(vi[0]), int(vi[1]), int(vi[2])),
            "ext_suffix": _text(interp.get("ext_suffix")),
            "cache_tag": _text(interp.get("cache_tag")),
            "gil_disabled": bool(interp.get("gil_disabled")),
            "prefix": _text(interp.get("prefix")),
            "base_prefix": _text(interp.get("base_prefix")),
            "user_site": _text(interp.get("user_site")),
            "user_site_enabled": bool(interp.get("user_site_enabled")),
            "cwd": _text(seen.get("cwd")), "sys_path": _texts(seen.get("sys_path")),
            "env": {str(k): str(v) for k, v in (seen.get("env") or {}).items()},
            "distributions": tuple(_distribution(d) for d in seen.get("distributions") or ()),
            "leftovers": _texts(seen.get("leftovers")),
            "torch_folder": _text(spec.get("folder")) if spec else None,
            "torch_path_entry": _text(spec.get("path_entry")) if spec else None,
            "torch_namespace": bool(spec.get("namespace")) if spec else False,
            "torch_c_files": _texts(spec.get("c_files")) if spec else (),
            "markers": {str(k): str(v) for k, v in (seen.get("markers") or {}).items()},
            "real_paths": {str(k): str(v) for k, v in (seen.get("real_paths") or {}).items()},
            "bundled_libraries": {str(k): str(v) for k, v in
                                  (seen.get("bundled_libraries") or {}).items()},
            "ld_library_path": {str(k): _texts(v) for k, v in
                                (seen.get("ld_library_path") or {}).items()},
            "ld_preload": _texts(seen.get("ld_preload")),
        }
    if not finished and ended is None and not timed_out:
        ended = "the child ended before it reported every import"
    return Seen(python=python, imports=imports,
                loaded_libraries=_texts(libraries.get("loaded")) if libraries else (),
                limit=limit, timed_out=timed_out,
                hung_in=unfinished if timed_out else None,
                ended=None if finished else ended, stderr=stderr[-4000:], **fields)


def entry_folder(entry: Optional[str], cwd: Optional[str]) -> Optional[str]:
    """The folder a ``sys.path`` entry names (``''`` is the current folder)."""
    if entry is None:
        return None
    return os.path.abspath(os.path.join(cwd or "", entry)) if entry else (cwd or None)
