"""Validate parsed matrix documents and build the frozen model.

Every error names the file and the key path, e.g.
``matrix/data/variants.yaml: variant_sets[3].variants[2].arch_list[4]: '8.6x' is not a compute
capability``. Cross-checks run after the per-entry checks: every variant set and ROCm entry
points at an existing release, no duplicates, release dates sorted with versions, known variant
names, well-formed arch strings, every cited source defined.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Callable, Protocol, TypeVar

from torchenv.errors import MatrixError
from torchenv.matrix.inference import (
    PtxPolicy,
    RuntimeTable,
    apply_inference,
    infer_companions,
    infer_index_entries,
)
from torchenv.matrix.model import (
    COMPANIONS,
    EVIDENCE_CLASSES,
    PLATFORMS,
    AmdGpu,
    ArchFact,
    CompanionStatement,
    CompatFloor,
    CondaAvailability,
    Evidence,
    IndexRow,
    Matrix,
    NvidiaGpu,
    OpenQuestion,
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
    InvalidValue,
    Platform,
    TorchVersion,
    VariantName,
)

__all__ = ["SCHEMA_VERSION", "build_matrix"]

SCHEMA_VERSION = 1


class _Matcher(Protocol):
    def match(self, text: str) -> object: ...


_PY_RE = re.compile(r"^3\.\d{1,2}t?$")
_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_GFX_RE = re.compile(r"^gfx[0-9a-f]{3,4}$")
_PCI_ID_RE = re.compile(r"^[0-9a-f]{4}$")
_SOURCE_ID_RE = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
_GLIBC_RE = re.compile(r"^2\.\d+$")
_SOURCE_URL_RE = re.compile(
    r"^https?://[A-Za-z0-9](?:[A-Za-z0-9.-]{0,252})(?::[0-9]{1,5})?"
    r"(?:[/?#][A-Za-z0-9._~:/?#\[\]@!$&'()*+,;=%-]*)?\Z")
"""A source's link, as the explorer page and the console show it: ``https:`` or ``http:``
with a host name, and only the characters a URL may hold unescaped; ``javascript:``, ``data:``,
a space or a quote never reach a page as a link."""

T = TypeVar("T")
V = TypeVar("V")


class _Ctx:
    """Tracks the file and key path so every message can say where the bad value is."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.cited: list[tuple[str, str]] = []
        # the values read so far, by constructor and text: the data repeats the same arch
        # entries, versions and names many times, and each is parsed once
        self.parsed: dict[tuple[Callable[[str], Any], str], Any] = {}

    def fail(self, path: str, message: str) -> MatrixError:
        where = f"{self.file}: {path}: " if path else f"{self.file}: "
        return MatrixError(where + message, hint="fix the matrix data (torchenv matrix check)")

    def mapping(self, value: Any, path: str) -> Mapping[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(path, f"expected a mapping, got {_show(value)}")
        return value

    def seq(self, value: Any, path: str) -> list[Any]:
        if not isinstance(value, list):
            raise self.fail(path, f"expected a list, got {_show(value)}")
        return value

    def string(
        self, value: Any, path: str, pattern: _Matcher | None = None, what: str = "a string"
    ) -> str:
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise self.fail(path, f"expected {what}, got {_show(value)}")
        text = str(value)
        if pattern is not None and not pattern.match(text):
            raise self.fail(path, f"{text!r} is not {what}")
        return text

    def opt_string(
        self, value: Any, path: str, pattern: _Matcher | None = None, what: str = "a string"
    ) -> str | None:
        if value is None or value == "unknown":
            return None
        return self.string(value, path, pattern, what)

    def value(self, parse: Callable[[str], V], raw: Any, path: str) -> V:
        """``raw`` read by ``parse`` (a constructor of :mod:`torchenv.values`), written as the
        data writes it: the value's own spelling (``8.6``, not ``sm_86``)."""
        text = self.string(raw, path)
        key = (parse, text)
        if key in self.parsed:
            parsed: V = self.parsed[key]
            return parsed
        try:
            parsed = parse(text)
        except InvalidValue as exc:
            raise self.fail(path, str(exc)) from None
        if str(parsed) != text:
            raise self.fail(path, f"{text!r} is written {str(parsed)!r} in the matrix data")
        self.parsed[key] = parsed
        return parsed

    def opt_value(self, parse: Callable[[str], V], raw: Any, path: str) -> V | None:
        if raw is None or raw == "unknown":
            return None
        return self.value(parse, raw, path)

    def platform(self, raw: Any, path: str) -> Platform:
        """One of :data:`PLATFORMS`, by its own name (the data uses no other spelling)."""
        if not isinstance(raw, str) or raw not in PLATFORMS:
            raise self.fail(path, f"unknown platform {raw!r}; expected one of "
                            + ", ".join(PLATFORMS))
        return self.value(Platform, raw, path)

    def number(self, value: Any, path: str) -> float | None:
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.fail(path, f"expected a number or null, got {_show(value)}")
        return float(value)

    def tribool(self, value: Any, path: str) -> Any:
        if value in (True, False, "unknown"):
            return value
        raise self.fail(path, f"expected true, false or 'unknown', got {_show(value)}")

    def sources(self, entry: Mapping[str, Any], path: str) -> tuple[str, ...]:
        raw = entry.get("sources")
        if raw is None:
            raise self.fail(path, "missing 'sources': every fact must name its source")
        ids = tuple(
            self.string(s, f"{path}.sources[{i}]")
            for i, s in enumerate(self.seq(raw, f"{path}.sources"))
        )
        if not ids:
            raise self.fail(f"{path}.sources", "empty: every fact must name its source")
        for i, sid in enumerate(ids):
            self.cited.append((f"{path}.sources[{i}]", sid))
        return ids

    def platform_map(self, value: Any, path: str,
                     item: Callable[[Any, str], T]) -> dict[Platform, T]:
        result: dict[Platform, T] = {}
        if value is None:
            return result
        for plat, v in self.mapping(value, path).items():
            result[self.platform(plat, f"{path}.{plat}")] = item(v, f"{path}.{plat}")
        return result

    def python_list(self, value: Any, path: str) -> tuple[str, ...]:
        tags = tuple(
            self.string(v, f"{path}[{i}]", _PY_RE, "a Python version like '3.12' or '3.13t'")
            for i, v in enumerate(self.seq(value, path))
        )
        if len(set(tags)) != len(tags):
            raise self.fail(path, "lists a Python version twice")
        return tags

    def arch_list(self, value: Any, path: str) -> tuple[ArchEntry, ...] | None:
        if value is None or value == "unknown":
            return None
        out = tuple(self.value(ArchEntry, a, f"{path}[{i}]")
                    for i, a in enumerate(self.seq(value, path)))
        if len(set(out)) != len(out):
            raise self.fail(path, "lists an architecture twice")
        return out


def _show(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, (dict, list)):
        return type(value).__name__
    return repr(value)


def _header(ctx: _Ctx, doc: Any) -> tuple[Mapping[str, Any], int, str, list[Source]]:
    d = ctx.mapping(doc, "")
    schema = d.get("schema_version")
    if schema != SCHEMA_VERSION:
        raise ctx.fail(
            "schema_version",
            f"is {_show(schema)}; this torchenv reads schema_version {SCHEMA_VERSION}",
        )
    version = ctx.string(d.get("matrix_version"), "matrix_version", _DATE_RE, "an ISO date")
    srcs = []
    for i, s in enumerate(ctx.seq(d.get("sources") or [], "sources")):
        p = f"sources[{i}]"
        s = ctx.mapping(s, p)
        srcs.append(
            Source(
                id=ctx.string(s.get("id"), f"{p}.id", _SOURCE_ID_RE, "a source id ([a-z0-9-])"),
                title=ctx.string(s.get("title"), f"{p}.title"),
                url=ctx.string(s.get("url"), f"{p}.url", _SOURCE_URL_RE,
                               "an https:// or http:// URL"),
                primary=bool(s.get("primary", True)),
            )
        )
    return d, schema, version, srcs


def _variant(ctx: _Ctx, raw: Any, path: str) -> Variant:
    v = ctx.mapping(raw, path)
    name = ctx.value(VariantName, v.get("name"), f"{path}.name")
    kind = name.kind
    plats = tuple(ctx.platform(p, f"{path}.platforms[{i}]")
                  for i, p in enumerate(ctx.seq(v.get("platforms"), f"{path}.platforms")))
    arch = ctx.arch_list(v.get("arch_list"), f"{path}.arch_list")
    by_plat = ctx.platform_map(
        v.get("arch_list_by_platform"), f"{path}.arch_list_by_platform", ctx.arch_list
    )
    if kind != "cuda" and (arch or by_plat):
        raise ctx.fail(f"{path}.arch_list", f"only CUDA variants carry an arch list ({name})")
    index = _index_evidence(ctx, v, path)
    sources = ctx.sources(v, path)
    facts: dict[Platform, ArchFact] = {}
    if kind == "cuda":
        explicit = ctx.platform_map(
            v.get("arch_evidence"), f"{path}.arch_evidence", lambda x, p: ctx.mapping(x, p)
        )
        for plat in plats:
            lst = by_plat.get(plat, arch)
            facts[plat] = _arch_fact(ctx, lst, explicit.get(plat), sources,
                                     f"{path}.arch_evidence.{plat}")
    return Variant(
        name=name,
        platforms=plats,
        arch_list=arch,
        arch_list_by_platform=by_plat,
        python=ctx.platform_map(v.get("python"), f"{path}.python", ctx.python_list),
        cudnn=ctx.opt_string(v.get("cudnn"), f"{path}.cudnn"),
        nccl=ctx.opt_string(v.get("nccl"), f"{path}.nccl"),
        index=index,
        sources=sources,
        note=v.get("note"),
        arch_facts=facts,
        same_as=_same_as(ctx, v.get("same_as"), f"{path}.same_as"),
    )


def _same_as(ctx: _Ctx, raw: Any, path: str) -> SameAs | None:
    """``same_as: {torch: "2.5.1", sources: [...], note: ...}`` (checked against the releases
    in :func:`_check_same_as`)."""
    if raw is None:
        return None
    entry = ctx.mapping(raw, path)
    unknown = set(entry) - {"torch", "sources", "note"}
    if unknown:
        raise ctx.fail(f"{path}.{sorted(unknown)[0]}", "is not a field of same_as "
                       "(torch, sources, note)")
    return SameAs(ctx.value(TorchVersion, entry.get("torch"), f"{path}.torch"),
                  ctx.sources(entry, path), entry.get("note"))


def _check_same_as(ctx: _Ctx, releases: list[Release]) -> None:
    """A ``same_as`` names an older release that has the same variant."""
    by_torch = {r.torch: r for r in releases}
    for rel in releases:
        for v in rel.variants:
            if v.same_as is None:
                continue
            where = f"torch {rel.torch} {v.name}.same_as"
            other = by_torch.get(v.same_as.torch)
            if other is None or not other.torch < rel.torch:
                raise ctx.fail(where, f"torch {v.same_as.torch} is not an older release in the "
                               "matrix")
            if other.variant(v.name) is None:
                raise ctx.fail(where, f"torch {v.same_as.torch} has no {v.name} build")


def _evidence_class(ctx: _Ctx, value: Any, path: str) -> Evidence:
    text = ctx.string(value, path)
    if text not in EVIDENCE_CLASSES:
        raise ctx.fail(path, f"{text!r} is not one of {', '.join(EVIDENCE_CLASSES)}")
    return Evidence(text)


def _index_evidence(ctx: _Ctx, v: Mapping[str, Any], path: str) -> Evidence:
    """``index:`` (an evidence class); the older ``status: verified|unverified`` still reads."""
    if "index" in v:
        return _evidence_class(ctx, v["index"], f"{path}.index")
    status = ctx.string(v.get("status", "verified"), f"{path}.status")
    if status not in ("verified", "unverified"):
        raise ctx.fail(f"{path}.status", f"{status!r} is not 'verified' or 'unverified'")
    return Evidence.CONFIRMED if status == "verified" else Evidence.UNKNOWN


def _arch_fact(
    ctx: _Ctx,
    arch: tuple[ArchEntry, ...] | None,
    explicit: Mapping[str, Any] | None,
    variant_sources: tuple[str, ...],
    path: str,
) -> ArchFact:
    """One platform's arch list with its evidence.

    A list written in the data is confirmed, SASS and PTX, by the variant's sources unless
    ``arch_evidence`` says otherwise; an ``unknown`` list is unknown until an inference rule
    (run after loading) says more.
    """
    if explicit is None:
        cls = Evidence.CONFIRMED if arch is not None else Evidence.UNKNOWN
        return ArchFact(arch, cls, cls, sources=variant_sources if arch is not None else ())
    sass = _evidence_class(ctx, explicit.get("sass", "confirmed"), f"{path}.sass")
    ptx = _evidence_class(ctx, explicit.get("ptx", sass), f"{path}.ptx")
    if arch is None and (sass is not Evidence.UNKNOWN or ptx is not Evidence.UNKNOWN):
        raise ctx.fail(path, "an unknown arch list cannot have confirmed or inferred evidence")
    if Evidence.INFERRED in (sass, ptx):
        raise ctx.fail(path, "'inferred' is set by the inference rules, not written in the data")
    srcs = ctx.sources(explicit, path) if "sources" in explicit else variant_sources
    partial = _partial_list(ctx, explicit.get("partial"), f"{path}.partial")
    if partial is not None and arch is not None:
        raise ctx.fail(f"{path}.partial", "only an unknown arch list can have a partial one "
                       "(a known list says everything it would)")
    return ArchFact(arch, sass, ptx, sources=srcs, note=explicit.get("note"), partial=partial)


def _partial_list(ctx: _Ctx, raw: Any, path: str) -> PartialList | None:
    """``partial: {oldest: "7.0", includes: ["7.0"], sources: [...], note: ...}``: what a source
    says of a list it does not give whole."""
    if raw is None:
        return None
    entry = ctx.mapping(raw, path)
    unknown = set(entry) - {"oldest", "includes", "sources", "note"}
    if unknown:
        raise ctx.fail(f"{path}.{sorted(unknown)[0]}", "is not a field of a partial list "
                       "(oldest, includes, sources, note)")
    oldest = (ctx.value(ArchEntry, entry["oldest"], f"{path}.oldest")
              if entry.get("oldest") is not None else None)
    if oldest is not None and (oldest.ptx or oldest.suffix):
        raise ctx.fail(f"{path}.oldest", f"{oldest} is a target with a suffix: write the "
                       "capability alone, e.g. '7.0'")
    includes = ctx.arch_list(entry.get("includes") or [], f"{path}.includes") or ()
    if oldest is None and not includes:
        raise ctx.fail(path, "says nothing: give 'oldest', 'includes' or both")
    if oldest is not None and any((e.major, e.minor) < (oldest.major, oldest.minor)
                                  for e in includes):
        raise ctx.fail(f"{path}.includes", f"names a target older than 'oldest' ({oldest})")
    return PartialList(oldest, includes, ctx.sources(entry, path), entry.get("note"))


def _runtime_tables(ctx: _Ctx, doc: Mapping[str, Any],
                    by_torch: Mapping[str, Any]) -> list[RuntimeTable]:
    tables = []
    for i, raw in enumerate(ctx.seq(doc.get("runtime_cc_tables") or [], "runtime_cc_tables")):
        path = f"runtime_cc_tables[{i}]"
        entry = ctx.mapping(raw, path)
        rels = _release_list(ctx, entry.get("releases"), f"{path}.releases", by_torch)
        rows: dict[CudaVersion, dict[Platform, tuple[ArchEntry, ...]]] = {}
        for cuda, per_plat in ctx.mapping(entry.get("cuda"), f"{path}.cuda").items():
            version = ctx.value(CudaVersion, cuda, f"{path}.cuda")
            lists = ctx.platform_map(per_plat, f"{path}.cuda.{cuda}", ctx.arch_list)
            rows[version] = {k: v for k, v in lists.items() if v is not None}
        tables.append(RuntimeTable(releases=rels, rows=rows, synced=bool(entry.get("synced")),
                                   sources=ctx.sources(entry, path), note=entry.get("note")))
    return tables


def _check_primary_sources(
    ctx: _Ctx, releases: list[Release], sources: Mapping[str, Source]
) -> None:
    """A ``confirmed`` fact must cite at least one primary source (not only copies or reports)."""

    def primary(ids: tuple[str, ...]) -> bool:
        return any(sources[s].primary for s in ids if s in sources)

    seen: set[int] = set()
    for rel in releases:
        for v in rel.variants:
            if id(v) in seen:
                continue
            seen.add(id(v))
            if v.index is Evidence.CONFIRMED and v.sources and not primary(v.sources):
                raise ctx.fail(
                    f"torch {rel.torch} {v.name}",
                    "index entry is 'confirmed' but every source it cites is a copy or a "
                    "third-party report (primary: false)",
                )
            for plat, fact in v.arch_facts.items():
                confirmed = Evidence.CONFIRMED in (fact.sass, fact.ptx)
                if confirmed and not primary(fact.sources):
                    raise ctx.fail(
                        f"torch {rel.torch} {v.name} {plat}",
                        "arch list is 'confirmed' without a primary source (only copies or "
                        "third-party reports are cited)",
                    )
                if v.same_as is not None and not primary(v.same_as.sources):
                    raise ctx.fail(
                        f"torch {rel.torch} {v.name} same_as",
                        "cites no primary source (only copies or third-party reports)",
                    )
                if fact.partial is not None and not primary(fact.partial.sources):
                    raise ctx.fail(
                        f"torch {rel.torch} {v.name} {plat}",
                        "partial arch list without a primary source (only copies or "
                        "third-party reports are cited)",
                    )


def _floor_common(ctx: _Ctx, entry: Mapping[str, Any], path: str) -> dict[str, Any]:
    """The driver versions, sources and note that toolkit and compatibility floors share."""
    return {
        "linux": ctx.opt_value(DriverVersion.floor, entry.get("linux"), f"{path}.linux"),
        "windows": ctx.opt_value(DriverVersion.floor, entry.get("windows"), f"{path}.windows"),
        "sources": ctx.sources(entry, path),
        "note": entry.get("note"),
    }


def _gpu_common(ctx: _Ctx, g: Mapping[str, Any], path: str) -> dict[str, Any]:
    """The catalog fields NVIDIA and AMD entries share."""
    return {
        "name": ctx.string(g.get("name"), f"{path}.name"),
        "architecture": ctx.string(g.get("architecture"), f"{path}.architecture"),
        "aliases": tuple(str(a) for a in ctx.seq(g.get("aliases") or [], f"{path}.aliases")),
        "fp16_tflops": ctx.number(g.get("fp16_tflops"), f"{path}.fp16_tflops"),
        "bf16_tflops": ctx.number(g.get("bf16_tflops"), f"{path}.bf16_tflops"),
        "memory_bandwidth_gbs": ctx.number(
            g.get("memory_bandwidth_gbs"), f"{path}.memory_bandwidth_gbs"
        ),
        "sources": ctx.sources(g, path),
        "note": g.get("note"),
    }


def build_matrix(documents: Mapping[str, Any], *, origin: Mapping[str, str]) -> Matrix:
    """Validate the five documents and build the :class:`Matrix`; raises :class:`MatrixError`."""
    ctxs = {name: _Ctx(origin.get(name, name)) for name in documents}
    for required in ("releases.yaml", "variants.yaml", "cuda.yaml", "rocm.yaml", "gpus.yaml"):
        if required not in documents:
            raise MatrixError(f"{origin.get(required, required)}: missing")
    sources, matrix_version = _all_sources(ctxs, documents)

    ctx = ctxs["releases.yaml"]
    parsed = _parse_releases(ctx, ctx.mapping(documents["releases.yaml"], ""))
    _check_release_order(ctx, parsed)
    by_torch = {str(p["torch"]): p for p in parsed}

    vctx = ctxs["variants.yaml"]
    vdoc = vctx.mapping(documents["variants.yaml"], "")
    _add_variant_sets(vctx, vdoc, by_torch)
    policies = _ptx_policies(vctx, vdoc, by_torch)
    releases = _releases(ctx, parsed)

    cctx = ctxs["cuda.yaml"]
    cdoc = cctx.mapping(documents["cuda.yaml"], "")
    toolkit = _toolkit_floors(cctx, cdoc)
    compat = _compat_floors(cctx, cdoc)
    rctx = ctxs["rocm.yaml"]
    rocm = _rocm_targets(rctx, rctx.mapping(documents["rocm.yaml"], ""), by_torch)
    gctx = ctxs["gpus.yaml"]
    nvidia, amd = _gpus(gctx, gctx.mapping(documents["gpus.yaml"], ""))

    tables = _runtime_tables(vctx, vdoc, by_torch)
    rows = _index_rows(vctx, vdoc, by_torch)
    questions = _open_questions(vctx, vdoc, by_torch)
    statements = _companion_statements(ctx, ctx.mapping(documents["releases.yaml"], ""))
    for c in ctxs.values():
        for path, sid in c.cited:
            if sid not in sources:
                raise c.fail(path, f"source {sid!r} is not defined in any file's 'sources' list")
    _check_primary_sources(vctx, releases, sources)
    _check_same_as(vctx, releases)
    _check_cited_primary(vctx, "index_rows", [r.sources for r in rows], sources)
    _check_cited_primary(ctx, "companion_statements", [s.sources for s in statements], sources)
    inferred = apply_inference(releases, policies, tables)
    inferred = infer_companions(infer_index_entries(inferred, rows), statements)
    return Matrix(
        schema_version=SCHEMA_VERSION,
        matrix_version=matrix_version,
        sources=sources,
        releases=inferred,
        companion_statements=tuple(statements),
        index_rows=tuple(rows),
        open_questions=tuple(questions),
        toolkit_floors=tuple(toolkit),
        compat_floors=tuple(compat),
        rocm_variants=tuple(rocm),
        nvidia_gpus=tuple(nvidia),
        amd_gpus=tuple(amd),
    )


def _all_sources(ctxs: Mapping[str, _Ctx],
                 documents: Mapping[str, Any]) -> tuple[dict[str, Source], str]:
    """The sources every file defines (one id, one definition) and the newest matrix_version."""
    sources: dict[str, Source] = {}
    versions = set()
    for name, doc in documents.items():
        ctx = ctxs[name]
        _, _, version, srcs = _header(ctx, doc)
        versions.add(version)
        for i, s in enumerate(srcs):
            if s.id in sources and sources[s.id] != s:
                raise ctx.fail(f"sources[{i}].id", f"source {s.id!r} is defined twice differently")
            sources[s.id] = s
    return sources, max(versions)


# releases.yaml


def _parse_releases(ctx: _Ctx, rdoc: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The fields of every release, as keyword arguments of :class:`Release` (``variants`` empty
    until the variant sets are added)."""
    parsed: list[dict[str, Any]] = []
    seen: dict[TorchVersion, int] = {}
    for i, raw in enumerate(ctx.seq(rdoc.get("releases"), "releases")):
        path = f"releases[{i}]"
        r = ctx.mapping(raw, path)
        torch = ctx.value(TorchVersion.plain, r.get("torch"), f"{path}.torch")
        if torch in seen:
            raise ctx.fail(
                f"{path}.torch", f"{torch} is listed twice (also releases[{seen[torch]}])"
            )
        seen[torch] = i
        parsed.append(_release_fields(ctx, r, path, torch))
    return parsed


def _release_fields(ctx: _Ctx, r: Mapping[str, Any], path: str,
                    torch: TorchVersion) -> dict[str, Any]:
    conda = ctx.mapping(r.get("conda") or {}, f"{path}.conda")
    return dict(  # noqa: C408 - keyword form mirrors the Release fields
        torch=torch,
        released=ctx.string(r.get("released"), f"{path}.released", _DATE_RE, "an ISO date"),
        torchvision=ctx.opt_value(TorchVersion.plain, r.get("torchvision"),
                                  f"{path}.torchvision"),
        torchaudio=ctx.opt_value(TorchVersion.plain, r.get("torchaudio"), f"{path}.torchaudio"),
        python=ctx.platform_map(r.get("python"), f"{path}.python", ctx.python_list),
        manylinux=ctx.platform_map(
            r.get("manylinux"),
            f"{path}.manylinux",
            lambda x, p: ctx.string(x, p, _GLIBC_RE, "a glibc version like '2.28'"),
        ),
        pypi_default=ctx.platform_map(r.get("pypi_default"), f"{path}.pypi_default",
                                      lambda x, p: ctx.value(VariantName, x, p)),
        conda=CondaAvailability(
            pytorch_channel=ctx.tribool(
                conda.get("pytorch_channel", "unknown"), f"{path}.conda.pytorch_channel"
            ),
            conda_forge=ctx.tribool(
                conda.get("conda_forge", "unknown"), f"{path}.conda.conda_forge"
            ),
        ),
        sources=ctx.sources(r, path),
        note=r.get("note"),
        unconfirmed=tuple(k for k in ("torchvision", "torchaudio") if r.get(k) == "unknown"),
        variants=[],
    )


def _check_release_order(ctx: _Ctx, parsed: list[dict[str, Any]]) -> None:
    """Newest first; within a minor, later patches carry later dates; each minor's first
    release comes after the previous minor's first release (old-minor patches may ship later)."""
    for i in range(1, len(parsed)):
        a, b = parsed[i - 1], parsed[i]
        if a["torch"] <= b["torch"]:
            raise ctx.fail(
                f"releases[{i}].torch",
                f"{b['torch']} comes after {a['torch']}: releases must be listed newest first",
            )
        same_minor = a["torch"].series == b["torch"].series
        if same_minor and a["released"] < b["released"]:
            raise ctx.fail(
                f"releases[{i}].released",
                f"{b['torch']} released {b['released']}, "
                f"after the later patch {a['torch']} ({a['released']})",
            )
    firsts: dict[tuple[int, ...], str] = {}
    for p in parsed:
        key = p["torch"].release[:2]
        firsts[key] = min(firsts.get(key, p["released"]), p["released"])
    ordered = sorted(firsts.items())
    for (older, d_old), (newer, d_new) in zip(ordered, ordered[1:]):
        if d_new < d_old:
            idx = next(
                i
                for i, p in enumerate(parsed)
                if p["torch"].release[:2] == newer and p["released"] == d_new
            )
            raise ctx.fail(
                f"releases[{idx}].released",
                f"{parsed[idx]['torch']} released "
                f"{d_new}, before the older minor {'.'.join(map(str, older))} "
                f"({d_old})",
            )


def _releases(ctx: _Ctx, parsed: list[dict[str, Any]]) -> list[Release]:
    """The releases, each with its variants; a PyPI default must be one of them."""
    releases = []
    for i, p in enumerate(parsed):
        rel = Release(**{**p, "variants": tuple(p["variants"])})
        for plat, vname in rel.pypi_default.items():
            if vname.kind != "cpu" and rel.variant(vname) is None and rel.variants:
                raise ctx.fail(
                    f"releases[{i}].pypi_default.{plat}",
                    f"{vname} is not among the variants of torch {rel.torch}",
                )
        releases.append(rel)
    return releases


# variants.yaml


def _release_list(ctx: _Ctx, value: Any, path: str,
                  by_torch: Mapping[str, Any]) -> tuple[TorchVersion, ...]:
    """A list of torch versions, each one in releases.yaml as it is written there."""
    versions = []
    for j, t in enumerate(ctx.seq(value, path)):
        text = ctx.string(t, f"{path}[{j}]")
        if text not in by_torch:
            raise ctx.fail(f"{path}[{j}]", f"torch {text} is not in releases.yaml")
        versions.append(by_torch[text]["torch"])
    return tuple(versions)


def _add_variant_sets(vctx: _Ctx, vdoc: Mapping[str, Any],
                      by_torch: Mapping[str, dict[str, Any]]) -> None:
    """Add each variant set's variants to the ``variants`` of the releases it names."""
    for i, raw in enumerate(vctx.seq(vdoc.get("variant_sets"), "variant_sets")):
        path = f"variant_sets[{i}]"
        vs = vctx.mapping(raw, path)
        rel_list = [
            vctx.string(t, f"{path}.releases[{j}]")
            for j, t in enumerate(vctx.seq(vs.get("releases"), f"{path}.releases"))
        ]
        variants = [
            _variant(vctx, v, f"{path}.variants[{j}]")
            for j, v in enumerate(vctx.seq(vs.get("variants"), f"{path}.variants"))
        ]
        names = [v.name for v in variants]
        if len(set(names)) != len(names):
            raise vctx.fail(f"{path}.variants", "lists a variant twice")
        for j, t in enumerate(rel_list):
            if t not in by_torch:
                raise vctx.fail(f"{path}.releases[{j}]", f"torch {t} is not in releases.yaml")
            target = by_torch[t]["variants"]
            for v in variants:
                if any(existing.name == v.name for existing in target):
                    raise vctx.fail(
                        f"{path}.releases[{j}]",
                        f"torch {t} gets variant {v.name} from two variant sets",
                    )
                target.append(v)


def _ptx_policies(vctx: _Ctx, vdoc: Mapping[str, Any],
                  by_torch: Mapping[str, Any]) -> list[PtxPolicy]:
    policies = []
    for i, raw in enumerate(vctx.seq(vdoc.get("ptx_policy") or [], "ptx_policy")):
        path = f"ptx_policy[{i}]"
        entry = vctx.mapping(raw, path)
        rels = _release_list(vctx, entry.get("releases"), f"{path}.releases", by_torch)
        plats = tuple(vctx.platform(plat, f"{path}.platforms[{j}]")
                      for j, plat in enumerate(vctx.seq(entry.get("platforms"),
                                                        f"{path}.platforms")))
        policies.append(PtxPolicy(
            releases=rels,
            cuda=tuple(vctx.value(CudaVersion, c, f"{path}.cuda[{j}]")
                       for j, c in enumerate(vctx.seq(entry.get("cuda"), f"{path}.cuda"))),
            platforms=plats,
            sources=vctx.sources(entry, path),
            note=entry.get("note"),
        ))
    return policies


def _index_rows(vctx: _Ctx, vdoc: Mapping[str, Any],
                by_torch: Mapping[str, Any]) -> list[IndexRow]:
    """``index_rows``: the builds the maintainers' row for some releases names."""
    rows = []
    for i, raw in enumerate(vctx.seq(vdoc.get("index_rows") or [], "index_rows")):
        path = f"index_rows[{i}]"
        entry = vctx.mapping(raw, path)
        rows.append(IndexRow(
            releases=_release_list(vctx, entry.get("releases"), f"{path}.releases", by_torch),
            variants=tuple(vctx.value(VariantName, n, f"{path}.variants[{j}]")
                           for j, n in enumerate(vctx.seq(entry.get("variants"),
                                                          f"{path}.variants"))),
            platforms=tuple(vctx.platform(p, f"{path}.platforms[{j}]")
                            for j, p in enumerate(vctx.seq(entry.get("platforms"),
                                                           f"{path}.platforms"))),
            sources=vctx.sources(entry, path),
            note=entry.get("note"),
        ))
    return rows


def _open_questions(vctx: _Ctx, vdoc: Mapping[str, Any],
                    by_torch: Mapping[str, Any]) -> list[OpenQuestion]:
    """``open_questions``: what the sources read so far leave open, and why."""
    out = []
    for i, raw in enumerate(vctx.seq(vdoc.get("open_questions") or [], "open_questions")):
        path = f"open_questions[{i}]"
        entry = vctx.mapping(raw, path)
        out.append(OpenQuestion(
            topic=vctx.string(entry.get("topic"), f"{path}.topic"),
            releases=_release_list(vctx, entry.get("releases"), f"{path}.releases", by_torch),
            known=vctx.string(entry.get("known"), f"{path}.known"),
            why_open=vctx.string(entry.get("why_open"), f"{path}.why_open"),
            sources=vctx.sources(entry, path),
        ))
    return out


def _check_cited_primary(ctx: _Ctx, key: str, cited: list[tuple[str, ...]],
                         sources: Mapping[str, Source]) -> None:
    """Each entry of ``key`` cites at least one primary source: it is a premise of a rule."""
    for i, ids in enumerate(cited):
        if not any(sources[s].primary for s in ids if s in sources):
            raise ctx.fail(f"{key}[{i}].sources", "cites no primary source (only copies or "
                           "third-party reports)")


# releases.yaml: companion statements


def _companion_statements(ctx: _Ctx, rdoc: Mapping[str, Any]) -> list[CompanionStatement]:
    """``companion_statements``: a maintainer's "compatible with PyTorch X and later", quoted."""
    out = []
    for i, raw in enumerate(ctx.seq(rdoc.get("companion_statements") or [],
                                    "companion_statements")):
        path = f"companion_statements[{i}]"
        entry = ctx.mapping(raw, path)
        package = ctx.string(entry.get("package"), f"{path}.package")
        if package not in COMPANIONS:
            raise ctx.fail(f"{path}.package", f"{package!r} is not one of {', '.join(COMPANIONS)}")
        statement = ctx.string(entry.get("statement"), f"{path}.statement")
        if not statement.strip():
            raise ctx.fail(f"{path}.statement", "empty: quote the maintainers' statement")
        out.append(CompanionStatement(
            package=package,
            version=ctx.value(TorchVersion.plain, entry.get("version"), f"{path}.version"),
            torch=ctx.value(TorchVersion.plain, entry.get("torch"), f"{path}.torch"),
            released=ctx.string(entry.get("released"), f"{path}.released", _DATE_RE,
                                "an ISO date"),
            statement=statement,
            sources=ctx.sources(entry, path),
            note=entry.get("note"),
        ))
    return out


# cuda.yaml


def _toolkit_floors(cctx: _Ctx, cdoc: Mapping[str, Any]) -> list[ToolkitFloor]:
    toolkit = []
    seen_cuda = set()
    for i, raw in enumerate(cctx.seq(cdoc.get("toolkit_floors"), "toolkit_floors")):
        path = f"toolkit_floors[{i}]"
        entry = cctx.mapping(raw, path)
        cuda = cctx.value(CudaVersion, entry.get("cuda"), f"{path}.cuda")
        if cuda in seen_cuda:
            raise cctx.fail(f"{path}.cuda", f"CUDA {cuda} is listed twice")
        seen_cuda.add(cuda)
        toolkit.append(
            ToolkitFloor(
                cuda=cuda,
                **_floor_common(cctx, entry, path),
                oldest_arch=cctx.opt_value(ComputeCapability, entry.get("oldest_arch"),
                                           f"{path}.oldest_arch"),
                newest_arch=cctx.opt_value(ComputeCapability, entry.get("newest_arch"),
                                           f"{path}.newest_arch"),
            )
        )
    return toolkit


def _compat_floors(cctx: _Ctx, cdoc: Mapping[str, Any]) -> list[CompatFloor]:
    compat = []
    for i, raw in enumerate(cctx.seq(cdoc.get("compat_floors"), "compat_floors")):
        path = f"compat_floors[{i}]"
        entry = cctx.mapping(raw, path)
        major = entry.get("major")
        if not isinstance(major, int) or isinstance(major, bool):
            raise cctx.fail(f"{path}.major", f"expected a CUDA major version, got {_show(major)}")
        compat.append(CompatFloor(major=major, **_floor_common(cctx, entry, path)))
    return compat


# rocm.yaml


def _rocm_targets(rctx: _Ctx, rocm_doc: Mapping[str, Any],
                  by_torch: Mapping[str, Any]) -> list[RocmTargets]:
    rocm = []
    for i, raw in enumerate(rctx.seq(rocm_doc.get("rocm_variants"), "rocm_variants")):
        path = f"rocm_variants[{i}]"
        r = rctx.mapping(raw, path)
        name = rctx.value(VariantName, r.get("name"), f"{path}.name")
        if name.kind != "rocm":
            raise rctx.fail(f"{path}.name", f"{str(name)!r} is not a ROCm variant name")
        gfx, may_have = (tuple(
            rctx.string(g, f"{path}.{key}[{j}]", _GFX_RE, "a gfx target like 'gfx90a'")
            for j, g in enumerate(rctx.seq(r.get(key, default), f"{path}.{key}")))
            for key, default in (("gfx", None), ("may_have", [])))
        if set(gfx) & set(may_have):
            raise rctx.fail(f"{path}.may_have", "names a target that gfx lists as there")
        torch_list = _release_list(rctx, r.get("torch") or [], f"{path}.torch", by_torch)
        observed = _release_list(rctx, r.get("observed_on") or [], f"{path}.observed_on",
                                 by_torch)
        if torch_list and not set(observed) <= set(torch_list):
            raise rctx.fail(f"{path}.observed_on", "names a release the entry is not for")
        rocm.append(RocmTargets(
            name=name, gfx=gfx, torch=torch_list, sources=rctx.sources(r, path),
            note=r.get("note"),
            evidence=_evidence_class(rctx, r.get("evidence"), f"{path}.evidence"),
            observed_on=observed, may_have=may_have))
    return rocm


# gpus.yaml


def _gpus(gctx: _Ctx, gdoc: Mapping[str, Any]) -> tuple[list[NvidiaGpu], list[AmdGpu]]:
    """The GPU catalog; a name may appear once across both vendors."""
    nvidia = []
    for i, raw in enumerate(gctx.seq(gdoc.get("nvidia") or [], "nvidia")):
        path = f"nvidia[{i}]"
        g = gctx.mapping(raw, path)
        cc = gctx.value(ComputeCapability, g.get("compute_capability"),
                        f"{path}.compute_capability")
        pci_ids = tuple(
            gctx.string(x, f"{path}.pci_ids[{j}]", _PCI_ID_RE, "a PCI device id like '1b80'")
            for j, x in enumerate(gctx.seq(g.get("pci_ids") or [], f"{path}.pci_ids"))
        )
        nvidia.append(NvidiaGpu(
            compute_capability=cc,
            pci_ids=pci_ids,
            segment=gctx.string(g.get("segment", "unknown"), f"{path}.segment"),
            **_gpu_common(gctx, g, path),
        ))
    amd = []
    for i, raw in enumerate(gctx.seq(gdoc.get("amd") or [], "amd")):
        path = f"amd[{i}]"
        g = gctx.mapping(raw, path)
        amd.append(AmdGpu(
            gfx=gctx.string(g.get("gfx"), f"{path}.gfx", _GFX_RE, "a gfx target"),
            **_gpu_common(gctx, g, path),
        ))
    from collections import Counter

    seen = Counter([g.name.lower() for g in nvidia] + [g.name.lower() for g in amd])
    dupes = {n for n, times in seen.items() if times > 1}
    if dupes:
        raise gctx.fail("", f"GPU listed twice: {sorted(dupes)[0]!r}")
    return nvidia, amd
