"""Load the matrix: the embedded data, plus the user overlay.

The embedded data is five YAML files, validated and completed by the inference rules
(:func:`torchenv.matrix.validate.build_matrix`). That gives the same matrix at every start, so
the package ships it built (``built.json``, :mod:`torchenv.matrix.built`), and a start without
an overlay only constructs it. Both it and ``cache.json`` (the parsed YAML documents, which an
overlay is merged with: parsing YAML costs more than the rest of a start) are written by
``torchenv matrix check --write-cache``, with a fingerprint of what they were made from; each is
used only when its fingerprint matches the files on disk, so an edited file is never served
stale: until they are written again, the matrix is built from the YAML.

A user overlay is parsed and merged with the embedded documents, and the result goes through the
whole validation and inference at every start; a broken one is reported in
``Matrix.overlay_error`` and ignored.
"""

from __future__ import annotations

import json
import os
import sys
import zlib
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from torchenv.errors import BadInput, MatrixError
from torchenv.matrix.model import Matrix

if TYPE_CHECKING:
    from torchenv._files import StrPath

__all__ = [
    "CACHE_FILE",
    "DATA_DIR",
    "DATA_FILES",
    "MAX_YAML_DEPTH",
    "MAX_YAML_NODES",
    "build_cache",
    "build_embedded",
    "default_overlay_path",
    "embedded_digest",
    "is_overlay_document",
    "load_built",
    "load_embedded_documents",
    "load_matrix",
    "merge_overlay",
    "overlay_disabled",
    "read_yaml",
]

_PACKAGE_DIR = Path(__file__).parent.parent
DATA_DIR = _PACKAGE_DIR / "matrix" / "data"
"""The embedded data: the YAML files and their cache."""
DATA_FILES = ("releases.yaml", "variants.yaml", "cuda.yaml", "rocm.yaml", "gpus.yaml")
CACHE_FILE = DATA_DIR / "cache.json"
"""The parsed embedded YAML with its fingerprint (:func:`build_cache`)."""

# overlay list key -> (the embedded file it extends, the fields that identify an entry)
_OVERLAY_KEYS = {
    "releases": ("releases.yaml", ("torch",)),
    "variant_sets": ("variants.yaml", ("releases",)),
    "toolkit_floors": ("cuda.yaml", ("cuda",)),
    "compat_floors": ("cuda.yaml", ("major",)),
    "rocm_variants": ("rocm.yaml", ("name", "torch")),
    "nvidia": ("gpus.yaml", ("name",)),
    "amd": ("gpus.yaml", ("name",)),
    "sources": ("releases.yaml", ("id",)),
}


def default_overlay_path() -> Path:
    """Where ``matrix update`` writes the overlay: ``TORCHENV_MATRIX_OVERLAY`` or the data dir."""
    explicit = os.environ.get("TORCHENV_MATRIX_OVERLAY")
    if explicit:
        return Path(explicit)
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA", Path.home() / "AppData" / "Local"))
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Application Support"
    else:
        base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return base / "torchenv" / "matrix-overlay.yaml"


_YES = frozenset({"1", "true", "yes", "on"})
_NO = frozenset({"", "0", "false", "no", "off"})


def overlay_disabled(environ: Mapping[str, str]) -> bool:
    """``TORCHENV_NO_OVERLAY``: 1/true/yes/on ignore the user overlay; unset, empty or
    0/false/no/off keep it; any other value raises :class:`BadInput` naming it."""
    raw = environ.get("TORCHENV_NO_OVERLAY", "")
    value = raw.strip().lower()
    if value in _YES:
        return True
    if value in _NO:
        return False
    raise BadInput(f"TORCHENV_NO_OVERLAY: {raw!r} is neither yes nor no",
                   hint="set it to 1 to ignore the user overlay, or unset it")


# Bounds on a YAML document, checked on its parse events before anything is built: an overlay
# is a user's file, and aliases let a few lines stand for billions of nodes (or for a node that
# contains itself), which every later walk over the data would expand.
MAX_YAML_NODES = 500_000
"""The most nodes a YAML document may stand for with every alias expanded."""
MAX_YAML_DEPTH = 64
"""The deepest a YAML document may nest; the matrix nests fewer than ten levels."""


def read_yaml(path: StrPath, text: str | bytes | None = None) -> Any:
    """Parse one YAML document with PyYAML's C loader when present; errors name the file.

    The file is read through :func:`torchenv._files.read_bytes_capped`, and a document that
    nests deeper than :data:`MAX_YAML_DEPTH`, stands for more than :data:`MAX_YAML_NODES` nodes
    once its aliases are expanded, or holds an alias inside the node it names, is refused
    before it is built. Every failure is a :class:`MatrixError`.
    """
    import yaml

    from torchenv._files import read_bytes_capped

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        raw = read_bytes_capped(path) if text is None else text
        _check_yaml_bounds(raw, path, loader)
        return yaml.load(raw, Loader=loader)
    except MatrixError:
        raise
    except BadInput as exc:  # from reading the file
        raise MatrixError(exc.message, hint=exc.hint) from exc
    except yaml.YAMLError as exc:
        raise MatrixError(
            f"{path}: not valid YAML: {exc}".replace("\n", " "),
            hint="fix the file or remove it",
        ) from exc


def _check_yaml_bounds(raw: str | bytes, path: StrPath, loader: Any) -> None:
    """Walk the parse events of ``raw`` (a flat stream, so deep nesting costs no recursion) and
    raise :class:`MatrixError` when the document breaks a bound of :func:`read_yaml`."""
    import yaml

    hint = "fix the file or remove it"
    expanded = 0  # nodes so far, each alias counted as the whole node it names
    sizes: dict[str, int] = {}  # anchor -> expanded size of its finished node
    open_nodes: list[tuple[str | None, int]] = []  # (anchor, expanded count at its start)
    for event in yaml.parse(raw, Loader=loader):
        line = event.start_mark.line + 1 if event.start_mark is not None else "?"
        if isinstance(event, yaml.AliasEvent):
            name = event.anchor
            if any(anchor == name for anchor, _ in open_nodes):
                raise MatrixError(f"{path}: line {line}: the alias *{name} "
                                  "is inside the node it names (a self-referencing alias)",
                                  hint=hint)
            # an undefined alias is the loader's error to report
            expanded += sizes.get(name or "", 1)
        elif isinstance(event, yaml.ScalarEvent):
            expanded += 1
            if event.anchor is not None:
                sizes[event.anchor] = 1
        elif isinstance(event, yaml.CollectionStartEvent):
            open_nodes.append((event.anchor, expanded))
            expanded += 1
            if len(open_nodes) > MAX_YAML_DEPTH:
                raise MatrixError(f"{path}: line {line}: nested more than "
                                  f"{MAX_YAML_DEPTH} levels deep", hint=hint)
        elif isinstance(event, yaml.CollectionEndEvent):
            anchor, start = open_nodes.pop()
            if anchor is not None:
                sizes[anchor] = expanded - start
        if expanded > MAX_YAML_NODES:
            raise MatrixError(f"{path}: stands for more than {MAX_YAML_NODES:,} YAML nodes once "
                              "its aliases are expanded; refusing to build it", hint=hint)


def embedded_digest(data_dir: StrPath | None = None) -> str:
    """A fingerprint of the embedded YAML files (default: of the embedded data): name, size and
    CRC-32 of each. It detects edits, not tampering: the files ship beside the cache."""
    folder = Path(data_dir) if data_dir is not None else DATA_DIR
    parts = []
    for name in DATA_FILES:
        data = (folder / name).read_bytes()
        parts.append(f"{name}:{len(data)}:{zlib.crc32(data):08x}")
    return ";".join(parts)


def _parse_yaml_files(folder: Path) -> dict[str, Any]:
    return {name: read_yaml(folder / name) for name in DATA_FILES}


def build_cache(data_dir: StrPath | None = None) -> dict[str, Any]:
    """The cache document for the YAML in ``data_dir`` (default: the embedded data), as
    ``matrix check --write-cache`` writes it to :data:`CACHE_FILE`."""
    folder = Path(data_dir) if data_dir is not None else DATA_DIR
    return {"digest": embedded_digest(folder), "documents": _parse_yaml_files(folder)}


def load_embedded_documents(data_dir: StrPath | None = None) -> tuple[dict[str, Any], bool]:
    """The parsed embedded documents (default: of the embedded data) and whether its
    ``cache.json`` supplied them: it does when its fingerprint matches the YAML, else the YAML
    is parsed."""
    folder = Path(data_dir) if data_dir is not None else DATA_DIR
    digest = embedded_digest(folder)
    try:
        cache = json.loads((folder / CACHE_FILE.name).read_bytes())
    except (OSError, ValueError):  # missing or not JSON: the YAML is parsed
        cache = None
    if isinstance(cache, dict) and cache.get("digest") == digest:
        documents = cache.get("documents")
        if isinstance(documents, dict) and set(documents) == set(DATA_FILES):
            return documents, True
    return _parse_yaml_files(folder), False


_OVERLAY_META_KEYS = ("schema_version", "matrix_version", "note", "generated_by")


def is_overlay_document(doc: object) -> bool:
    """Whether ``doc`` (a parsed YAML document) has the shape of an overlay: a mapping of
    overlay keys only. Its entries may still be wrong; this tells an overlay from another file."""
    return isinstance(doc, dict) and all(k in _OVERLAY_KEYS or k in _OVERLAY_META_KEYS
                                         for k in doc)


def merge_overlay(documents: Mapping[str, Any], overlay: Mapping[str, Any]) -> dict[str, Any]:
    """Documents with the overlay's entries added or replacing those with the same key."""
    merged: dict[str, Any] = {name: dict(doc) for name, doc in documents.items()}
    for key, value in overlay.items():
        if key in _OVERLAY_META_KEYS:
            continue
        if key not in _OVERLAY_KEYS:
            raise MatrixError(f"overlay: unknown top-level key {key!r}")
        file, id_fields = _OVERLAY_KEYS[key]
        if not isinstance(value, list):
            raise MatrixError(f"overlay: {key}: expected a list, got {type(value).__name__}")
        added: dict[Any, dict[str, Any]] = {}  # by identity, in the order of last mention
        for entry in value:
            if not isinstance(entry, dict):
                raise MatrixError(f"overlay: {key}: every entry must be a mapping")
            ident = _identity(entry, id_fields)
            added.pop(ident, None)
            added[ident] = entry
        kept = [e for e in merged[file].get(key) or [] if _identity(e, id_fields) not in added]
        merged[file][key] = kept + list(added.values())
    if "releases" in overlay:
        merged["releases.yaml"]["releases"] = sorted(
            merged["releases.yaml"]["releases"],
            key=lambda r: _version_key(str(r.get("torch", "0"))),
            reverse=True,
        )
    return merged


def _version_key(text: str) -> tuple[int, ...]:
    """The order of a release entry not yet validated: by its version, last when it has none."""
    from torchenv.values import InvalidValue, TorchVersion

    try:
        return TorchVersion.plain(text).release
    except InvalidValue:
        return (0,)


def _identity(entry: Any, id_fields: tuple[str, ...]) -> tuple[Any, ...]:
    """The fields that name an entry, hashable, so a merge looks entries up instead of
    comparing every pair (an overlay of 20,000 entries merges in linear time)."""
    get = entry.get if isinstance(entry, dict) else (lambda _field: None)
    return tuple(_freeze(get(f)) for f in id_fields)


def _freeze(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    if isinstance(value, dict):
        return tuple((_freeze(k), _freeze(v)) for k, v in value.items())
    return value


def load_built(data_dir: StrPath | None = None) -> Matrix | None:
    """The built matrix shipped in ``data_dir`` (default: the embedded data), constructed as it
    was written; None when there is none or its fingerprint does not match the files on disk
    (then :func:`build_embedded` builds it from the YAML)."""
    from torchenv.matrix.built import BUILT_FILE, BUILT_FORMAT, fingerprint, from_document

    folder = Path(data_dir) if data_dir is not None else DATA_DIR
    try:
        doc = json.loads((folder / BUILT_FILE.name).read_bytes())
    except (OSError, ValueError):  # missing or not JSON: built from the YAML
        return None
    if not isinstance(doc, dict) or doc.get("format") != BUILT_FORMAT:
        return None
    try:
        current = fingerprint(folder, DATA_FILES)
    except OSError:  # a file it was made from is not there (sources stripped): build
        return None
    return from_document(doc["matrix"]) if doc.get("fingerprint") == current else None


def build_embedded(data_dir: StrPath | None = None) -> Matrix:
    """The embedded matrix (``data_dir``: another one) built from its YAML: every validation
    and every inference rule, as ``matrix check`` runs them; raises :class:`MatrixError`."""
    from torchenv.matrix.validate import build_matrix

    folder = Path(data_dir) if data_dir is not None else DATA_DIR
    documents, _ = load_embedded_documents(folder)
    return build_matrix(documents, origin=_origins(folder))


def load_matrix(
    *,
    overlay: StrPath | bool | None = True,
    data_dir: StrPath | None = None,
) -> Matrix:
    """The embedded matrix (``data_dir``: the YAML of another one), merged with the user overlay.

    ``overlay=True`` uses :func:`default_overlay_path` when that file exists, a path uses that file,
    ``False``/``None`` ignores overlays. Without an overlay the shipped built matrix is used when
    it is current (:func:`load_built`). A broken overlay is recorded in ``Matrix.overlay_error``
    and ignored; a broken embedded matrix raises :class:`MatrixError`.
    """
    overlay_path = _overlay_path(overlay)
    if overlay_path is None:
        return load_built(data_dir) or build_embedded(data_dir)
    from torchenv.matrix.validate import build_matrix

    folder = Path(data_dir) if data_dir is not None else DATA_DIR
    documents, _ = load_embedded_documents(folder)
    origin = _origins(folder)
    try:
        overlay_doc = read_yaml(overlay_path)
        if not isinstance(overlay_doc, dict):
            raise MatrixError(f"{overlay_path}: expected a mapping at the top level")
        # an error in a merged file names the overlay too: its entries are in there
        merged_origin = {name: f"{path} with the overlay {overlay_path}"
                         for name, path in origin.items()}
        matrix = build_matrix(merge_overlay(documents, overlay_doc), origin=merged_origin)
    except MatrixError as exc:  # unreadable, too large, not YAML, invalid: the embedded data used
        matrix = load_built(folder) or build_matrix(documents, origin=origin)
        return replace(matrix, overlay=str(overlay_path), overlay_error=exc.message)
    return replace(matrix, overlay=str(overlay_path))


def _overlay_path(overlay: StrPath | bool | None) -> Path | None:
    """The overlay file :func:`load_matrix` reads for its ``overlay`` argument, if any."""
    if overlay is True:
        if overlay_disabled(os.environ):
            return None
        # whatever is there is read (a directory or a device is reported, not skipped)
        candidate = default_overlay_path()
        return candidate if os.path.lexists(candidate) else None
    if isinstance(overlay, (str, os.PathLike)):
        return Path(overlay)
    return None


def _origins(data_dir: Path) -> dict[str, str]:
    """Where each file's entries come from: its path relative to the package
    (``matrix/data/releases.yaml``), or in ``data_dir`` as given when that is elsewhere."""
    try:
        prefix = data_dir.relative_to(_PACKAGE_DIR).as_posix()
    except ValueError:
        prefix = str(data_dir)
    return {name: f"{prefix}/{name}" for name in DATA_FILES}
