"""Load the matrix: embedded YAML (through verified caches), plus the user overlay.

The embedded data is five YAML files. Parsing YAML costs more than the rest of a ``resolve``,
and validating the documents and applying the inference rules costs nearly as much again, so
the package ships two caches, both written by ``torchenv matrix check --write-cache``:

* ``cache.json``: the parsed documents with a fingerprint of the YAML bytes (size and CRC-32 per
  file), used only when that fingerprint matches the YAML on disk, otherwise the YAML is parsed.
  Either way the documents pass the same validation before the model is built.
* ``matrix.pickle``: the built model itself (validated, inference applied), headed by the same
  YAML fingerprint and a fingerprint of the code that builds the model (:func:`code_digest`).
  It is used only when both match, so an edit to the data or to the rules is never served from
  a stale cache; otherwise, or when it cannot be read, the matrix is built as above. Loading it
  costs a small fraction of building it.
"""

from __future__ import annotations

import os
import sys
import zlib
from collections.abc import Mapping

from torchenv._files import path_str
from torchenv.errors import BadInput, MatrixError
from torchenv.matrix.model import Matrix

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

    from torchenv._files import StrPath

__all__ = [
    "DATA_DIR",
    "DATA_FILES",
    "MAX_YAML_DEPTH",
    "MAX_YAML_NODES",
    "build_built_cache",
    "build_cache",
    "code_digest",
    "default_overlay_path",
    "embedded_digest",
    "load_built_matrix",
    "load_embedded_documents",
    "load_matrix",
    "merge_overlay",
    "overlay_disabled",
    "read_yaml",
]

_MODULE_DIR = os.path.dirname(path_str(__file__))
_PACKAGE_DIR = path_str(os.path.dirname(_MODULE_DIR))
_DATA_DIR = path_str(_MODULE_DIR, "data")
DATA_FILES = ("releases.yaml", "variants.yaml", "cuda.yaml", "rocm.yaml", "gpus.yaml")
_CACHE_NAME = "cache.json"
_BUILT_NAME = "matrix.pickle"
# the pathlib.Path constants, made on first use (:func:`__getattr__`): loading the matrix needs
# only the str paths above, and importing pathlib would cost every start
_PATH_CONSTANTS = {"DATA_DIR": (), "CACHE_FILE": (_CACHE_NAME,), "BUILT_FILE": (_BUILT_NAME,)}
DATA_DIR: Path
CACHE_FILE: Path
BUILT_FILE: Path


def __getattr__(name: str) -> Path:
    """``DATA_DIR`` (the embedded data), ``CACHE_FILE`` and ``BUILT_FILE`` (its caches), as
    :class:`pathlib.Path`, each made once."""
    if name not in _PATH_CONSTANTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from pathlib import Path

    value = globals()[name] = Path(_DATA_DIR, *_PATH_CONSTANTS[name])
    return value


_BUILT_MAGIC = b"torchenv built matrix 1\n"
# the modules whose code decides what build_matrix makes of the documents (paths relative to
# the package); the built cache is refused when any of them differs from what built it
_BUILD_CODE = ("_record.py", "errors.py", "matrix/model.py", "matrix/validate.py",
               "matrix/inference.py", "matrix/loader.py")

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
    from pathlib import Path

    return Path(_default_overlay())


def _default_overlay() -> str:
    """:func:`default_overlay_path` as a str, written as pathlib writes it."""
    explicit = os.environ.get("TORCHENV_MATRIX_OVERLAY")
    if explicit:
        return path_str(explicit)
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA", path_str(_home(), "AppData", "Local"))
    elif sys.platform == "darwin":
        base = path_str(_home(), "Library", "Application Support")
    else:
        base = os.environ.get("XDG_DATA_HOME") or path_str(_home(), ".local", "share")
    return path_str(base, "torchenv", "matrix-overlay.yaml")


def _home() -> str:
    """The user's home directory, or RuntimeError as from :meth:`pathlib.Path.home`."""
    home = os.path.expanduser("~")
    if home[:1] == "~":
        raise RuntimeError("Could not determine home directory.")
    return home


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
    except BadInput as exc:
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


def _data_dir(data_dir: StrPath | None) -> str:
    """``data_dir`` as a str, written as pathlib writes it; None is the embedded data."""
    return _DATA_DIR if data_dir is None else path_str(data_dir)


def _read_bytes(path: str) -> bytes:
    with open(path, "rb") as fh:
        return fh.read()


def _yaml_bytes(data_dir: str) -> dict[str, bytes]:
    return {name: _read_bytes(os.path.join(data_dir, name)) for name in DATA_FILES}


def embedded_digest(data_dir: StrPath | None = None) -> str:
    """A fingerprint of the embedded YAML files: name, size and CRC-32 of each.

    It detects edits, not tampering (the files ship in the same package as the cache), and zlib
    is far cheaper to import than hashlib's OpenSSL binding.
    """
    parts = []
    for name, data in _yaml_bytes(_data_dir(data_dir)).items():
        parts.append(f"{name}:{len(data)}:{zlib.crc32(data):08x}")
    return ";".join(parts)


def code_digest() -> str:
    """A fingerprint of the code that builds the model: name, size and CRC-32 of each module."""
    parts = []
    for rel in _BUILD_CODE:
        data = _read_bytes(os.path.join(_PACKAGE_DIR, rel))
        parts.append(f"{rel}:{len(data)}:{zlib.crc32(data):08x}")
    return ";".join(parts)


def _built_header(digest: str, code: str) -> bytes:
    return _BUILT_MAGIC + digest.encode() + b"\n" + code.encode() + b"\n"


def build_built_cache(data_dir: StrPath | None = None) -> tuple[bytes, Matrix]:
    """The ``matrix.pickle`` bytes for the YAML in ``data_dir`` (default: the embedded data) and
    the matrix they hold."""
    import pickle

    from torchenv.matrix.validate import build_matrix

    data_dir = _data_dir(data_dir)
    documents = {name: read_yaml(os.path.join(data_dir, name)) for name in DATA_FILES}
    matrix = build_matrix(documents, origin=_origins(data_dir))
    header = _built_header(embedded_digest(data_dir), code_digest())
    return header + pickle.dumps(_share_equal(matrix, {}), protocol=4), matrix


def _share_equal(value: Any, seen: dict[Any, Any]) -> Any:
    """``value`` with every equal string, tuple and record replaced by one shared instance, so
    the pickle stores each once (a third smaller, loaded in half the time). Records are frozen,
    so sharing them changes nothing a reader can see."""
    if isinstance(value, dict):
        return {_share_equal(k, seen): _share_equal(v, seen) for k, v in value.items()}
    if isinstance(value, tuple):
        value = tuple(_share_equal(item, seen) for item in value)
    elif hasattr(value, "__record_fields__"):
        fields = value.__dict__  # rebuilt in place: the records are fresh from build_matrix
        for name in fields:
            fields[name] = _share_equal(fields[name], seen)
    elif not isinstance(value, (str, frozenset)):
        return value
    try:
        return seen.setdefault((type(value), value), value)
    except TypeError:  # holds a mapping: not hashable, kept as it is
        return value


def load_built_matrix(data_dir: StrPath | None = None, *,
                      digest: str | None = None) -> Matrix | None:
    """The built matrix from ``matrix.pickle`` when its fingerprints match the YAML in
    ``data_dir`` (default: the embedded data; ``digest``: :func:`embedded_digest`, when the caller
    has it) and this code; None when they do not, or when the file is missing or cannot be
    read."""
    data_dir = _data_dir(data_dir)
    try:
        raw = _read_bytes(os.path.join(data_dir, _BUILT_NAME))
        header = _built_header(embedded_digest(data_dir) if digest is None else digest,
                               code_digest())
    except OSError:
        return None
    return _unpickle_matrix(raw, header)


def _unpickle_matrix(raw: bytes, header: bytes) -> Matrix | None:
    """The Matrix pickled after ``header`` in ``raw``; None when ``raw`` does not start with
    that header or does not hold a Matrix (a damaged cache is a miss: the matrix is built)."""
    if not raw.startswith(header):
        return None
    try:
        from _pickle import loads  # the C unpickler; pickle.py costs far more to import
    except ImportError:  # pragma: no cover - interpreters without the C accelerator
        from pickle import loads
    try:
        matrix = loads(memoryview(raw)[len(header):])
    except Exception:
        return None
    return matrix if isinstance(matrix, Matrix) else None


def build_cache(data_dir: StrPath | None = None) -> dict[str, Any]:
    """The cache document for the YAML in ``data_dir`` (default: the embedded data), as
    ``matrix check --write-cache`` writes it."""
    data_dir = _data_dir(data_dir)
    docs = {name: read_yaml(os.path.join(data_dir, name)) for name in DATA_FILES}
    return {"digest": embedded_digest(data_dir), "documents": docs}


def load_embedded_documents(
    data_dir: StrPath | None = None, *, digest: str | None = None
) -> tuple[dict[str, Any], bool]:
    """The parsed embedded documents (default: of the embedded data) and whether the verified
    cache supplied them (``digest``: :func:`embedded_digest` of ``data_dir``, when the caller
    has it)."""
    data_dir = _data_dir(data_dir)
    if digest is None:
        digest = embedded_digest(data_dir)
    try:
        import json  # cache.json is read only when matrix.pickle is not current

        cache = json.loads(_read_bytes(os.path.join(data_dir, _CACHE_NAME)))
        if isinstance(cache, dict) and cache.get("digest") == digest:
            docs = cache["documents"]
            if isinstance(docs, dict) and set(docs) == set(DATA_FILES):
                return docs, True
    except (OSError, ValueError, KeyError):
        pass
    return {name: read_yaml(os.path.join(data_dir, name)) for name in DATA_FILES}, False


def merge_overlay(documents: Mapping[str, Any], overlay: Mapping[str, Any]) -> dict[str, Any]:
    """Documents with the overlay's entries added or replacing those with the same key."""
    merged: dict[str, Any] = {name: dict(doc) for name, doc in documents.items()}
    for key, value in overlay.items():
        if key in ("schema_version", "matrix_version", "note", "generated_by"):
            continue
        if key not in _OVERLAY_KEYS:
            raise MatrixError(f"overlay: unknown top-level key {key!r}")
        file, id_fields = _OVERLAY_KEYS[key]
        if not isinstance(value, list):
            raise MatrixError(f"overlay: {key}: expected a list, got {type(value).__name__}")
        existing = list(merged[file].get(key) or [])
        for entry in value:
            if not isinstance(entry, dict):
                raise MatrixError(f"overlay: {key}: every entry must be a mapping")
            ident = tuple(_freeze(entry.get(f)) for f in id_fields)
            existing = [e for e in existing if tuple(_freeze(e.get(f)) for f in id_fields) != ident]
            existing.append(entry)
        merged[file][key] = existing
    if "releases" in overlay:
        merged["releases.yaml"]["releases"] = sorted(
            merged["releases.yaml"]["releases"],
            key=lambda r: _version_key(str(r.get("torch", "0"))),
            reverse=True,
        )
    return merged


def _version_key(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(p) for p in text.split("."))
    except ValueError:
        return (0,)


def _freeze(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    return value


def load_matrix(
    *,
    overlay: StrPath | bool | None = True,
    data_dir: StrPath | None = None,
) -> Matrix:
    """The embedded matrix (``data_dir``: the YAML of another one), merged with the user overlay.

    ``overlay=True`` uses :func:`default_overlay_path` when that file exists, a path uses that file,
    ``False``/``None`` ignores overlays. A broken overlay is recorded in ``Matrix.overlay_error``
    and ignored; a broken embedded matrix raises :class:`MatrixError`.
    """
    data_dir = _data_dir(data_dir)
    overlay_path: str | None
    if overlay is True:
        if overlay_disabled(os.environ):
            overlay_path = None
        else:
            # whatever is there is read (a directory or a device is reported, not skipped)
            candidate = _default_overlay()
            overlay_path = candidate if os.path.lexists(candidate) else None
    elif isinstance(overlay, (str, os.PathLike)):
        overlay_path = path_str(overlay)
    else:
        overlay_path = None

    if overlay_path is None:
        return _embedded_matrix(data_dir)
    from torchenv._files import read_bytes_capped

    try:
        raw = read_bytes_capped(overlay_path)
    except BadInput as exc:  # unreadable, a folder, too large: reported, the embedded data used
        return _with(_embedded_matrix(data_dir), overlay=overlay_path, overlay_error=exc.message)
    digest = embedded_digest(data_dir)
    header = _overlaid_header(digest, raw)
    cached = _load_overlaid(header) if header is not None else None
    if cached is not None:
        return _with(cached, overlay=overlay_path, overlay_error=None)
    from torchenv.matrix.validate import build_matrix

    documents, _ = load_embedded_documents(data_dir, digest=digest)
    try:
        overlay_doc = read_yaml(overlay_path, text=raw)
        if not isinstance(overlay_doc, dict):
            raise MatrixError(f"{overlay_path}: expected a mapping at the top level")
        merged = merge_overlay(documents, overlay_doc)
        matrix = build_matrix(merged, origin=_origins(data_dir))
    except MatrixError as exc:
        base = _embedded_matrix(data_dir, documents)
        return _with(base, overlay=overlay_path, overlay_error=exc.message)
    if header is not None:
        _store_overlaid(header, matrix)
    return _with(matrix, overlay=overlay_path, overlay_error=None)


# The embedded data merged with an overlay, as built, in the user's cache folder: one file, for
# the last overlay built, headed by what it was built from (the embedded YAML's fingerprint, the
# code's, the overlay's size and CRC-32). With it a start with the overlay of `matrix update`
# costs what a start without one does, instead of the YAML parse and the whole validation.
_OVERLAID_MAGIC = b"torchenv built matrix with overlay 1\n"
_OVERLAID_NAME = "matrix-overlaid.pickle"


def _overlaid_header(digest: str, overlay: bytes) -> bytes | None:
    """What heads the cache of the matrix built from the embedded data (``digest``) and
    ``overlay``; None when the code's fingerprint cannot be taken (no sources installed)."""
    try:
        code = code_digest()
    except OSError:
        return None
    return (_OVERLAID_MAGIC + f"{digest}\n{code}\n"
            f"overlay:{len(overlay)}:{zlib.crc32(overlay):08x}\n".encode())


def _overlaid_path() -> str:
    from torchenv._files import user_cache_dir

    return os.path.join(user_cache_dir(), _OVERLAID_NAME)


def _load_overlaid(header: bytes) -> Matrix | None:
    from torchenv._files import read_private

    raw = read_private(_overlaid_path())
    return _unpickle_matrix(raw, header) if raw is not None else None


def _store_overlaid(header: bytes, matrix: Matrix) -> None:
    import pickle

    from torchenv._files import write_private

    write_private(_overlaid_path(), header + pickle.dumps(_share_equal(matrix, {}), protocol=4))


def _embedded_matrix(data_dir: str, documents: dict[str, Any] | None = None) -> Matrix:
    """The embedded matrix alone: from the built cache when it is current, else built."""
    digest = embedded_digest(data_dir)
    built = load_built_matrix(data_dir, digest=digest)
    if built is not None:
        return built
    from torchenv.matrix.validate import build_matrix

    if documents is None:
        documents, _ = load_embedded_documents(data_dir, digest=digest)
    return build_matrix(documents, origin=_origins(data_dir))


def _origins(data_dir: str) -> dict[str, str]:
    """Where each file's entries come from: its path relative to the package
    (``matrix/data/releases.yaml``), or in ``data_dir`` as given when that is elsewhere."""
    package, here = os.path.normcase(_PACKAGE_DIR), os.path.normcase(data_dir)
    head = package if package.endswith(os.sep) else package + os.sep
    if here == package:
        prefix = "."
    elif here.startswith(head):
        prefix = data_dir[len(head):].replace(os.sep, "/")
    else:
        prefix = data_dir
    return {name: f"{prefix}/{name}" for name in DATA_FILES}


def _with(matrix: Matrix, *, overlay: str, overlay_error: str | None) -> Matrix:
    from torchenv._record import replace

    return replace(matrix, overlay=overlay, overlay_error=overlay_error)
