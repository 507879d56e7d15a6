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

Every value is written as its text (``str()``) and read back by its own constructor; each
:class:`ArchFact` is written once, in the ``facts`` table, and named by its position there
(the neighbours an unknown list carries repeat the confirmed lists of its family).
"""

from __future__ import annotations

import zlib
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from torchenv.matrix.model import (
    AmdGpu,
    ArchFact,
    CompatFloor,
    CondaAvailability,
    Matrix,
    Neighbours,
    NvidiaGpu,
    PartialList,
    Release,
    RocmTargets,
    SameAs,
    Source,
    ToolkitFloor,
    Variant,
)
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
    from collections.abc import Callable, Mapping
    from typing import TypeVar

    from torchenv._files import StrPath

    V = TypeVar("V")

__all__ = ["BUILT_FILE", "BUILT_FORMAT", "build_document", "fingerprint", "from_document",
           "to_document"]

_MATRIX_DIR = Path(__file__).parent
BUILT_FILE = _MATRIX_DIR / "data" / "built.json"
"""The built embedded matrix (:func:`build_document`)."""
BUILT_FORMAT = 1
"""The layout of the document; a file of another layout is not used."""
_BUILDERS = ("model.py", "validate.py", "inference.py", "built.py")
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


def _texts(values: Any) -> list[str] | None:
    return None if values is None else [str(v) for v in values]


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def to_document(matrix: Matrix) -> dict[str, Any]:
    """``matrix`` as JSON-ready data (the embedded one: no overlay)."""
    facts: list[dict[str, Any]] = []
    index: dict[ArchFact, int] = {}

    def fact(f: ArchFact) -> int:
        if f not in index:
            doc = {
                "arch_list": _texts(f.arch_list), "sass": f.sass, "ptx": f.ptx, "rule": f.rule,
                "sources": list(f.sources), "note": f.note,
                "neighbours": None if f.neighbours is None else {
                    "older": [[str(t), fact(o)] for t, o in f.neighbours.older],
                    "newer": [[str(t), fact(n)] for t, n in f.neighbours.newer],
                    "linux": None if f.neighbours.linux is None else fact(f.neighbours.linux),
                },
                "partial": None if f.partial is None else {
                    "oldest": _text(f.partial.oldest), "includes": _texts(f.partial.includes),
                    "sources": list(f.partial.sources), "note": f.partial.note,
                },
            }
            index[f] = len(facts)
            facts.append(doc)
        return index[f]

    def variant(v: Variant) -> dict[str, Any]:
        return {
            "name": str(v.name), "platforms": _texts(v.platforms),
            "arch_list": _texts(v.arch_list),
            "arch_list_by_platform": {str(p): _texts(a)
                                      for p, a in v.arch_list_by_platform.items()},
            "python": {str(p): list(tags) for p, tags in v.python.items()},
            "cudnn": v.cudnn, "nccl": v.nccl, "index": v.index, "sources": list(v.sources),
            "note": v.note, "arch_facts": {str(p): fact(f) for p, f in v.arch_facts.items()},
            "same_as": None if v.same_as is None else {
                "torch": str(v.same_as.torch), "sources": list(v.same_as.sources),
                "note": v.same_as.note},
        }

    releases = [{
        "torch": str(r.torch), "released": r.released, "torchvision": _text(r.torchvision),
        "torchaudio": _text(r.torchaudio),
        "python": {str(p): list(tags) for p, tags in r.python.items()},
        "manylinux": {str(p): glibc for p, glibc in r.manylinux.items()},
        "pypi_default": {str(p): str(n) for p, n in r.pypi_default.items()},
        "variants": [variant(v) for v in r.variants],
        "conda": [r.conda.pytorch_channel, r.conda.conda_forge],
        "sources": list(r.sources), "note": r.note, "unconfirmed": list(r.unconfirmed),
    } for r in matrix.releases]
    return {
        "schema_version": matrix.schema_version,
        "matrix_version": matrix.matrix_version,
        "sources": [[s.id, s.title, s.url, s.primary] for s in matrix.sources.values()],
        "releases": releases,
        "facts": facts,
        "toolkit_floors": [{
            "cuda": str(f.cuda), "linux": _text(f.linux), "windows": _text(f.windows),
            "sources": list(f.sources), "note": f.note, "newest_arch": _text(f.newest_arch),
            "oldest_arch": _text(f.oldest_arch)} for f in matrix.toolkit_floors],
        "compat_floors": [{
            "major": f.major, "linux": _text(f.linux), "windows": _text(f.windows),
            "sources": list(f.sources), "note": f.note} for f in matrix.compat_floors],
        "rocm_variants": [{
            "name": str(t.name), "gfx": list(t.gfx), "torch": _texts(t.torch),
            "sources": list(t.sources), "note": t.note, "evidence": t.evidence,
            "observed_on": _texts(t.observed_on), "may_have": list(t.may_have)}
            for t in matrix.rocm_variants],
        "nvidia_gpus": [{
            "name": g.name, "compute_capability": str(g.compute_capability),
            "architecture": g.architecture, "segment": g.segment, "aliases": list(g.aliases),
            "fp16_tflops": g.fp16_tflops, "bf16_tflops": g.bf16_tflops,
            "memory_bandwidth_gbs": g.memory_bandwidth_gbs, "sources": list(g.sources),
            "note": g.note, "pci_ids": list(g.pci_ids)} for g in matrix.nvidia_gpus],
        "amd_gpus": [{
            "name": g.name, "gfx": g.gfx, "architecture": g.architecture,
            "aliases": list(g.aliases), "fp16_tflops": g.fp16_tflops,
            "bf16_tflops": g.bf16_tflops, "memory_bandwidth_gbs": g.memory_bandwidth_gbs,
            "sources": list(g.sources), "note": g.note} for g in matrix.amd_gpus],
    }


# --------------------------------------------------------------------------- reading


class _Values:
    """Each text read once: the document repeats the same versions and targets many times."""

    def __init__(self) -> None:
        self._seen: dict[tuple[Callable[[str], Any], str], Any] = {}

    def one(self, kind: Callable[[str], V], text: str) -> V:
        key = (kind, text)
        if key not in self._seen:
            self._seen[key] = kind(text)
        return cast("V", self._seen[key])

    def opt(self, kind: Callable[[str], V], text: str | None) -> V | None:
        return None if text is None else self.one(kind, text)

    def many(self, kind: Callable[[str], V], texts: list[str]) -> tuple[V, ...]:
        return tuple(self.one(kind, t) for t in texts)

    def opt_many(self, kind: Callable[[str], V], texts: list[str] | None
                 ) -> tuple[V, ...] | None:
        return None if texts is None else self.many(kind, texts)

    def by_platform(self, doc: Mapping[str, Any], read: Callable[[Any], V]
                    ) -> dict[Platform, V]:
        return {Platform(p): read(value) for p, value in doc.items()}


def from_document(doc: Mapping[str, Any]) -> Matrix:
    """The :class:`Matrix` of a document of :func:`to_document`: construction only, nothing
    checked (the document is the package's own, written from a validated matrix)."""
    val = _Values()
    fact_docs = doc["facts"]
    facts: list[ArchFact | None] = [None] * len(fact_docs)

    def fact(i: int) -> ArchFact:
        built = facts[i]
        if built is None:
            f = fact_docs[i]
            around = f["neighbours"]
            partial = f["partial"]
            built = facts[i] = ArchFact(
                val.opt_many(ArchEntry, f["arch_list"]), f["sass"], f["ptx"], f["rule"],
                tuple(f["sources"]), f["note"],
                None if around is None else Neighbours(
                    tuple((val.one(TorchVersion, t), fact(o)) for t, o in around["older"]),
                    tuple((val.one(TorchVersion, t), fact(n)) for t, n in around["newer"]),
                    None if around["linux"] is None else fact(around["linux"])),
                None if partial is None else PartialList(
                    val.opt(ArchEntry, partial["oldest"]),
                    val.many(ArchEntry, partial["includes"]), tuple(partial["sources"]),
                    partial["note"]))
        return built

    def variant(v: Mapping[str, Any]) -> Variant:
        same = v["same_as"]
        return Variant(
            name=val.one(VariantName, v["name"]),
            platforms=val.many(Platform, v["platforms"]),
            arch_list=val.opt_many(ArchEntry, v["arch_list"]),
            arch_list_by_platform=val.by_platform(
                v["arch_list_by_platform"], lambda a: val.opt_many(ArchEntry, a)),
            python=val.by_platform(v["python"], tuple),
            cudnn=v["cudnn"], nccl=v["nccl"], index=v["index"], sources=tuple(v["sources"]),
            note=v["note"], arch_facts=val.by_platform(v["arch_facts"], fact),
            same_as=None if same is None else SameAs(
                val.one(TorchVersion, same["torch"]), tuple(same["sources"]), same["note"]))

    releases = tuple(Release(
        torch=val.one(TorchVersion, r["torch"]), released=r["released"],
        torchvision=val.opt(TorchVersion, r["torchvision"]),
        torchaudio=val.opt(TorchVersion, r["torchaudio"]),
        python=val.by_platform(r["python"], tuple),
        manylinux=val.by_platform(r["manylinux"], str),
        pypi_default=val.by_platform(r["pypi_default"], lambda n: val.one(VariantName, n)),
        variants=tuple(variant(v) for v in r["variants"]),
        conda=CondaAvailability(*r["conda"]), sources=tuple(r["sources"]), note=r["note"],
        unconfirmed=tuple(r["unconfirmed"])) for r in doc["releases"])
    return Matrix(
        schema_version=doc["schema_version"],
        matrix_version=doc["matrix_version"],
        sources={s[0]: Source(*s) for s in doc["sources"]},
        releases=releases,
        toolkit_floors=tuple(ToolkitFloor(
            val.one(CudaVersion, f["cuda"]), val.opt(DriverVersion.floor, f["linux"]),
            val.opt(DriverVersion.floor, f["windows"]), tuple(f["sources"]), f["note"],
            val.opt(ComputeCapability, f["newest_arch"]),
            val.opt(ComputeCapability, f["oldest_arch"])) for f in doc["toolkit_floors"]),
        compat_floors=tuple(CompatFloor(
            f["major"], val.opt(DriverVersion.floor, f["linux"]),
            val.opt(DriverVersion.floor, f["windows"]),
            tuple(f["sources"]), f["note"]) for f in doc["compat_floors"]),
        rocm_variants=tuple(RocmTargets(
            val.one(VariantName, t["name"]), tuple(t["gfx"]), val.many(TorchVersion, t["torch"]),
            tuple(t["sources"]), t["note"], t["evidence"],
            val.many(TorchVersion, t["observed_on"]), tuple(t["may_have"]))
            for t in doc["rocm_variants"]),
        nvidia_gpus=tuple(NvidiaGpu(
            g["name"], val.one(ComputeCapability, g["compute_capability"]), g["architecture"],
            g["segment"], tuple(g["aliases"]), g["fp16_tflops"], g["bf16_tflops"],
            g["memory_bandwidth_gbs"], tuple(g["sources"]), g["note"], tuple(g["pci_ids"]))
            for g in doc["nvidia_gpus"]),
        amd_gpus=tuple(AmdGpu(
            g["name"], g["gfx"], g["architecture"], tuple(g["aliases"]), g["fp16_tflops"],
            g["bf16_tflops"], g["memory_bandwidth_gbs"], tuple(g["sources"]), g["note"])
            for g in doc["amd_gpus"]),
    )
