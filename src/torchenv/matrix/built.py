"""The shipped matrix, built: the :class:`Matrix` after validation and inference, as JSON.

Validating the five YAML files and running the inference rules gives the same matrix every time
for the same files and the same code, so the package ships the result, ``built.json``, and a
start only constructs it (:func:`from_document`): nothing is checked or inferred again. The file
is written by ``torchenv matrix check --write-cache`` (:func:`build_document`); ``matrix check``
fails while it differs from what the YAML builds, and a test proves the two equal.

It is used only when its fingerprint matches the files it was built from (:func:`fingerprint`:
name, size and CRC-32 of each YAML file and of each module that builds the matrix), so an edited
YAML file or inference rule in a working tree is never served stale: until the file is written
again, the matrix is built from the YAML. An overlay always goes through the full build.

The document follows the model, not a list of its fields: a record of
:mod:`torchenv.matrix.model` (a dataclass or a ``NamedTuple``) is written as its class name and
its fields' values in order (``{"@": "ArchFact", "f": [...]}``), a value of
:mod:`torchenv.values` as its type and text (``{"@v": "TorchVersion 2.7.1"}``), a
mapping as its pairs (``{"@m": [[key, value], ...]}``), a tuple as a list; a hashable record met
more than once (the confirmed lists an unknown one carries as its neighbours) is written once,
in ``records``, and named by its position there (``{"@r": 3}``). A field added to the model is
written and read without a change here.
"""

from __future__ import annotations

import dataclasses
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from torchenv.matrix import model
from torchenv.matrix.model import Evidence, Matrix
from torchenv.values import (
    ArchEntry,
    ComputeCapability,
    CudaVersion,
    DriverVersion,
    Platform,
    TorchVersion,
    VariantName,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from torchenv._files import StrPath

__all__ = ["BUILT_FILE", "BUILT_FORMAT", "build_document", "fingerprint", "from_document",
           "to_document"]

_MATRIX_DIR = Path(__file__).parent
BUILT_FILE = _MATRIX_DIR / "data" / "built.json"
"""The built embedded matrix (:func:`build_document`)."""
BUILT_FORMAT = 1
"""The layout of the document; a file of another layout is not used."""
_BUILDERS = ("model.py", "validate.py", "inference.py", "built.py", "loader.py")
"""The modules of this package whose code decides what the YAML builds."""


def fingerprint(data_dir: StrPath, data_files: tuple[str, ...]) -> str:
    """Name, size and CRC-32 of each YAML file in ``data_dir`` and of each module that builds
    the matrix (with ``values.py``): it changes when the data or the rules change. It detects
    edits, not tampering: the files ship beside the built one."""
    paths = [Path(data_dir) / name for name in data_files]
    paths += [_MATRIX_DIR / name for name in _BUILDERS]
    paths.append(_MATRIX_DIR.parent / "values.py")
    parts = []
    for path in paths:
        data = path.read_bytes()
        parts.append(f"{path.name}:{len(data)}:{zlib.crc32(data):08x}")
    return ";".join(parts)


def build_document(matrix: Matrix, digest: str) -> dict[str, Any]:
    """The document ``built.json`` holds: the format, the fingerprint and the matrix."""
    return {"format": BUILT_FORMAT, "fingerprint": digest, "matrix": to_document(matrix)}


# --------------------------------------------------------------------------- writing

_READERS: dict[str, Callable[[str], Any]] = {
    "TorchVersion": TorchVersion,
    "VariantName": VariantName,
    "Platform": Platform,
    "ArchEntry": ArchEntry,
    "ComputeCapability": ComputeCapability,
    "CudaVersion": CudaVersion,
    "DriverVersion": DriverVersion.floor,  # a floor may be a bare branch (580); reads versions too
    "Evidence": Evidence,
}
"""Each value type the model holds, by name, and how its text is read back."""
_VALUE_TYPES = {kind: kind.__name__ for kind in (TorchVersion, VariantName, Platform, ArchEntry,
                                                 ComputeCapability, CudaVersion, DriverVersion,
                                                 Evidence)}


def _fields(record: Any) -> list[Any]:
    if dataclasses.is_dataclass(record):
        return [getattr(record, f.name) for f in dataclasses.fields(record)]
    return list(record)  # a NamedTuple


def _is_record(value: Any) -> bool:
    kind = type(value)
    return kind.__module__ == model.__name__ and (
        dataclasses.is_dataclass(value) or hasattr(kind, "_fields"))


def to_document(matrix: Matrix) -> dict[str, Any]:
    """``matrix`` as JSON-ready data: ``{"matrix": ..., "records": [...]}``."""
    if matrix.overlay is not None:
        raise ValueError("only the embedded matrix is written: this one has an overlay")
    seen: dict[Any, int] = {}  # hashable record -> how often it occurs
    _count(matrix, seen)
    records: list[Any] = []
    index: dict[Any, int] = {}

    def write(value: Any) -> Any:
        name = _VALUE_TYPES.get(type(value))
        if name is not None:  # before plain text: an Evidence is its text, and read back as one
            return {"@v": f"{name} {value}"}
        if value is None or isinstance(value, (bool, int, float, str)):
            return value
        if _is_record(value):
            shared = _hashable(value) and seen.get(value, 0) > 1
            if shared and value in index:
                return {"@r": index[value]}
            doc = {"@": type(value).__name__, "f": [write(v) for v in _fields(value)]}
            if not shared:
                return doc
            index[value] = len(records)
            records.append(doc)
            return {"@r": index[value]}
        if isinstance(value, tuple):
            return [write(v) for v in value]
        if isinstance(value, Mapping):
            return {"@m": [[write(k), write(v)] for k, v in value.items()]}
        raise TypeError(f"built.json cannot hold a {type(value).__name__}: {value!r}")

    return {"matrix": write(matrix), "records": records}


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


def _count(value: Any, seen: dict[Any, int]) -> None:
    """How often each hashable record occurs under ``value``; a repeated one is walked once."""
    if _is_record(value):
        if _hashable(value):
            seen[value] = seen.get(value, 0) + 1
            if seen[value] > 1:
                return
        for v in _fields(value):
            _count(v, seen)
    elif isinstance(value, tuple):
        for v in value:
            _count(v, seen)
    elif isinstance(value, Mapping):
        for k, v in value.items():
            _count(k, seen)
            _count(v, seen)


# --------------------------------------------------------------------------- reading


def from_document(doc: Mapping[str, Any]) -> Matrix:
    """The :class:`Matrix` of a document of :func:`to_document`: construction only, nothing
    checked (the document is the package's own, written from a validated matrix)."""
    classes = {name: kind for name, kind in vars(model).items()
               if isinstance(kind, type) and kind.__module__ == model.__name__}
    texts: dict[str, Any] = {}  # each value read once: the same few recur thousands of times
    record_docs = doc["records"]
    records: list[Any] = [None] * len(record_docs)

    nested = (dict, list)  # what needs reading; a scalar is taken as it is, without a call

    def read(value: Any) -> Any:
        if type(value) is list:
            return tuple([read(v) if type(v) in nested else v for v in value])
        name = value.get("@")
        if name is not None:
            return classes[name](*[read(v) if type(v) in nested else v for v in value["f"]])
        text = value.get("@v")
        if text is not None:
            found = texts.get(text)
            if found is None:
                reader, _, written = text.partition(" ")
                found = texts[text] = _READERS[reader](written)
            return found
        if "@r" in value:
            i = value["@r"]
            if records[i] is None:
                records[i] = read(record_docs[i])
            return records[i]
        return {read(k) if type(k) in nested else k: read(v) if type(v) in nested else v
                for k, v in value["@m"]}

    matrix = read(doc["matrix"])
    if not isinstance(matrix, Matrix):
        raise ValueError(f"not a built matrix: {type(matrix).__name__}")
    return matrix
