"""Load the matrix: embedded YAML (through a verified JSON cache), plus the user overlay.

The embedded data is five YAML files. Parsing YAML costs more than the rest of a ``resolve``,
so the package ships ``cache.json``: the parsed documents with a fingerprint of the YAML bytes
(size and CRC-32 per file). The cache is used only when that fingerprint matches the YAML on
disk, otherwise the YAML is parsed. Either way the documents pass the same validation before the
model is built.
"""

from __future__ import annotations

import json
import os
import sys
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from torchenv.errors import MatrixError
from torchenv.matrix.model import Matrix
from torchenv.matrix.validate import build_matrix

__all__ = [
    "DATA_DIR",
    "DATA_FILES",
    "build_cache",
    "default_overlay_path",
    "embedded_digest",
    "load_embedded_documents",
    "load_matrix",
    "merge_overlay",
    "read_yaml",
]

DATA_DIR = Path(__file__).parent / "data"
DATA_FILES = ("releases.yaml", "variants.yaml", "cuda.yaml", "rocm.yaml", "gpus.yaml")
CACHE_FILE = DATA_DIR / "cache.json"

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


def read_yaml(path: Path, text: str | bytes | None = None) -> Any:
    """Parse one YAML document with PyYAML's C loader when present; errors name the file."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        raw = path.read_bytes() if text is None else text
        return yaml.load(raw, Loader=loader)
    except OSError as exc:
        raise MatrixError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    except yaml.YAMLError as exc:
        raise MatrixError(
            f"{path}: not valid YAML: {exc}".replace("\n", " "),
            hint="fix the file or remove it",
        ) from exc


def _yaml_bytes(data_dir: Path) -> dict[str, bytes]:
    return {name: (data_dir / name).read_bytes() for name in DATA_FILES}


def embedded_digest(data_dir: Path = DATA_DIR) -> str:
    """A fingerprint of the embedded YAML files: name, size and CRC-32 of each.

    It detects edits, not tampering (the files ship in the same package as the cache), and zlib
    is far cheaper to import than hashlib's OpenSSL binding.
    """
    parts = []
    for name, data in _yaml_bytes(data_dir).items():
        parts.append(f"{name}:{len(data)}:{zlib.crc32(data):08x}")
    return ";".join(parts)


def build_cache(data_dir: Path = DATA_DIR) -> dict[str, Any]:
    """The cache document for the YAML in ``data_dir`` (``matrix check --write-cache``)."""
    docs = {name: read_yaml(data_dir / name) for name in DATA_FILES}
    return {"digest": embedded_digest(data_dir), "documents": docs}


def load_embedded_documents(data_dir: Path = DATA_DIR) -> tuple[dict[str, Any], bool]:
    """The parsed embedded documents and whether the verified cache supplied them."""
    digest = embedded_digest(data_dir)
    cache_path = data_dir / "cache.json"
    try:
        cache = json.loads(cache_path.read_bytes())
        if isinstance(cache, dict) and cache.get("digest") == digest:
            docs = cache["documents"]
            if isinstance(docs, dict) and set(docs) == set(DATA_FILES):
                return docs, True
    except (OSError, ValueError, KeyError):
        pass
    return {name: read_yaml(data_dir / name) for name in DATA_FILES}, False


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
    overlay: Path | bool | None = True,
    data_dir: Path = DATA_DIR,
) -> Matrix:
    """The embedded matrix, merged with the user overlay.

    ``overlay=True`` uses :func:`default_overlay_path` when that file exists, a Path uses that file,
    ``False``/``None`` ignores overlays. A broken overlay is recorded in ``Matrix.overlay_error``
    and ignored; a broken embedded matrix raises :class:`MatrixError`.
    """
    documents, _ = load_embedded_documents(data_dir)
    overlay_path: Path | None
    if overlay is True:
        if os.environ.get("TORCHENV_NO_OVERLAY"):
            overlay_path = None
        else:
            candidate = default_overlay_path()
            overlay_path = candidate if candidate.is_file() else None
    elif isinstance(overlay, Path):
        overlay_path = overlay
    else:
        overlay_path = None

    if overlay_path is not None:
        try:
            overlay_doc = read_yaml(overlay_path)
            if not isinstance(overlay_doc, dict):
                raise MatrixError(f"{overlay_path}: expected a mapping at the top level")
            merged = merge_overlay(documents, overlay_doc)
            matrix = build_matrix(merged, origin=_origins(data_dir))
        except MatrixError as exc:
            base = build_matrix(documents, origin=_origins(data_dir))
            return _with(base, overlay=str(overlay_path), overlay_error=exc.message)
        return _with(matrix, overlay=str(overlay_path), overlay_error=None)
    return build_matrix(documents, origin=_origins(data_dir))


def _origins(data_dir: Path) -> dict[str, str]:
    try:
        rel = data_dir.relative_to(Path(__file__).parent.parent)
        prefix = str(rel).replace(os.sep, "/")
    except ValueError:
        prefix = str(data_dir)
    return {name: f"{prefix}/{name}" for name in DATA_FILES}


def _with(matrix: Matrix, *, overlay: str, overlay_error: str | None) -> Matrix:
    from torchenv._record import replace

    return replace(matrix, overlay=overlay, overlay_error=overlay_error)
