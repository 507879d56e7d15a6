"""The stack above torch: extension packages built against torch, read from ``companions.yaml``.

Each package (flash-attn, xformers, the PyG wheels, torchao, vLLM) lists its releases, and each
release its *builds*: where the files are (PyPI, the PyTorch index, a find-links page, a GitHub
release asset, or only a source distribution), which torch builds they are made for and how they
bind to torch (the *coupling*: ``exact`` release, one ``minor``, a ``floor`` for the stable ABI,
or ``none``), their Python and platform tags and, where known, their compiled targets. Beside the
packages the file holds two facts of torch's own builds: the C++11 ABI of each Linux build and
the triton release each torch wheel pins. Every fact carries an evidence class and its sources,
as in the torch matrix (docs/companions.md).

The file is not part of the start-up matrix: only the commands that need it load it
(:func:`load_companions`), so a plain ``resolve`` pays nothing for it. Validation reuses the
matrix's checks and messages (:mod:`torchenv.matrix.validate`): every error names the file, the
key path and the bad value.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from packaging.utils import canonicalize_name

from torchenv.errors import MatrixError
from torchenv.matrix.model import ArchFact, Evidence, Matrix, Source, python_sort_key
from torchenv.matrix.validate import _PY_RE, _Ctx, _evidence_class, _header, _show
from torchenv.values import (
    ArchEntry,
    ComputeCapability,
    CudaVersion,
    InvalidValue,
    Platform,
    TorchSpec,
    TorchVersion,
    VariantName,
)

if TYPE_CHECKING:
    from torchenv._files import StrPath

__all__ = [
    "ABI_BUILT",
    "BUILD_FACTS",
    "COMPANIONS_FILE",
    "COUPLINGS",
    "LOCATIONS",
    "AbiFact",
    "CompanionAsset",
    "CompanionBuild",
    "CompanionInstead",
    "CompanionPackage",
    "CompanionQuestion",
    "CompanionRelease",
    "Companions",
    "GpuRequirement",
    "TritonPin",
    "build_companions",
    "companions_to_json",
    "load_companions",
]

COMPANIONS_FILE = Path(__file__).parent / "data" / "companions.yaml"
"""The embedded companion data."""

COUPLINGS: tuple[str, ...] = ("exact", "minor", "floor", "none")
"""How a build binds to torch: one torch ``exact`` release, any patch of one ``minor``, every
torch from a ``floor`` (built against the stable ABI), or ``none`` (a source build, made against
whatever torch is installed)."""

LOCATIONS: tuple[str, ...] = ("pypi", "pytorch-index", "find-links", "release-asset", "sdist")
"""Where a build's files are. ``sdist`` is a source distribution: installing it compiles."""

BUILD_FACTS: tuple[str, ...] = ("exists", "coupling", "python", "arch_list", "abi")
"""The facts of a build that carry an evidence class each: that the files exist, the coupling
(with the torch builds it names), the Python tags, the compiled targets, the C++11 ABI."""

ABI_BUILT: tuple[str, ...] = ("true", "false", "follows-torch")
"""What a release asset's ABI flag in its name means it was built with: the C++11 ABI, the old
one, or whatever the torch it was built against used (the name then does not say)."""

_URL_FIELDS = {"release-asset": ("torch_minor", "abi_flag", "py"),
               "find-links": ("torch_minor", "variant")}
_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_-]*$")
_IMPORT_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SERIES_RE = re.compile(r"^\d+\.\d+$")
_SHA256_RE = re.compile(r"^[0-9a-f]{64}$")
_DATE_OR_UNKNOWN = re.compile(r"^(\d{4}-\d{2}-\d{2}|unknown)$")
_HTTPS_RE = re.compile(r"^https://[A-Za-z0-9.-]+/\S*$")


# --------------------------------------------------------------------------- the model


@dataclass(frozen=True)
class CompanionAsset:
    """One file of a release-asset build with its sha256, and how the digest is known."""

    file: str
    sha256: str
    evidence: str
    sources: tuple[str, ...]


@dataclass(frozen=True)
class CompanionBuild:
    """A set of files of one companion release made for some torch builds.

    ``torch`` holds what the coupling binds to: exact releases (``exact``), series ``X.Y``
    (``minor``), one specifier (``floor``), nothing (``none``). ``python`` lists Python tags, or
    ``python_min``/``python_max`` bound an abi3/none wheel's range. ``variants`` names the torch
    variants a find-links page or the PyTorch index carries it for; ``cuda_major`` the CUDA major
    a release asset needs of torch's build. ``abi_flags`` maps the ``TRUE``/``FALSE`` of an
    asset's name to what it was built with (:data:`ABI_BUILT`).
    """

    where: str
    coupling: str
    torch_exact: tuple[TorchVersion, ...] = ()
    torch_minors: tuple[str, ...] = ()
    torch_floor: TorchSpec | None = None
    requires_dist: str | None = None
    platforms: tuple[Platform, ...] = ()
    python: tuple[str, ...] = ()
    python_min: str | None = None
    python_max: str | None = None
    python_abi: str | None = None
    variants: tuple[VariantName, ...] = ()
    url: str | None = None
    cuda: CudaVersion | None = None
    cuda_major: int | None = None
    arch_list: tuple[ArchEntry, ...] | None = None
    abi_flags: Mapping[str, str] = field(default_factory=dict)
    assets: tuple[CompanionAsset, ...] = ()
    evidence: Mapping[str, str] = field(default_factory=dict)
    sources: tuple[str, ...] = ()
    note: str | None = None

    @property
    def is_source_build(self) -> bool:
        """Installing it compiles against the installed torch."""
        return self.where == "sdist"

    def torch_text(self) -> str:
        """What the coupling binds to, as a reader writes it: ``2.9.1``, ``2.5–2.8``, ``>=2.10``."""
        if self.coupling == "exact":
            return ", ".join(map(str, self.torch_exact))
        if self.coupling == "minor":
            return ", ".join(self.torch_minors)
        if self.coupling == "floor":
            return str(self.torch_floor)
        return "the installed torch (source build)"

    def binds(self, torch: TorchVersion) -> bool:
        """Whether ``torch`` (a release, no local part) is one this build is made for; a source
        build is made for any."""
        if self.coupling == "exact":
            return torch in self.torch_exact
        if self.coupling == "minor":
            return torch.series in self.torch_minors
        if self.coupling == "floor":
            return self.torch_floor is not None and self.torch_floor.contains(torch)
        return True

    def fits_python(self, tag: str) -> bool:
        """Whether a wheel of this build installs on Python ``tag`` (``3.12``, ``3.13t``). An
        abi3 wheel does not load in a free-threaded interpreter; a ``none`` wheel does."""
        if self.python:
            return tag in self.python
        if self.python_min is None:
            return True  # a source build: any Python its own metadata allows
        if tag.endswith("t") and self.python_abi == "abi3":
            return False
        key = python_sort_key(tag.removesuffix("t"))
        if key < python_sort_key(self.python_min):
            return False
        return self.python_max is None or key <= python_sort_key(self.python_max)

    def python_text(self) -> str:
        if self.python:
            return f"{self.python[0]}–{self.python[-1]}" if len(self.python) > 1 else self.python[0]
        if self.python_min is None:
            return "any"
        top = f"–{self.python_max}" if self.python_max else "+"
        return f"{self.python_min}{top} ({self.python_abi})"

    @property
    def arch_fact(self) -> ArchFact:
        """The compiled targets as the torch matrix holds a build's (one evidence class for
        SASS and PTX: the sources that state a build's targets state whether it has PTX), so
        the matrix's rule for one GPU (:func:`torchenv.matrix.inference.reach`) judges both."""
        evidence = (Evidence(self.fact_evidence("arch_list")) if self.arch_list is not None
                    else Evidence.UNKNOWN)
        return ArchFact(self.arch_list, evidence, evidence, sources=self.sources)

    def fact_evidence(self, fact: str) -> str:
        """The evidence class of one of :data:`BUILD_FACTS`; a fact the build does not state is
        unknown."""
        return self.evidence.get(fact, "unknown")


@dataclass(frozen=True)
class CompanionRelease:
    """One release of a companion package and its builds."""

    version: TorchVersion  # a PEP 440 version: ``0.0.33.post2``
    released: str  # ISO date or ``unknown``
    builds: tuple[CompanionBuild, ...]


@dataclass(frozen=True)
class GpuRequirement:
    """The oldest GPU a package's kernels run on, for some of its releases (all when
    ``versions`` is empty)."""

    min_compute_capability: ComputeCapability
    versions: tuple[TorchVersion, ...]
    evidence: str
    sources: tuple[str, ...]

    def covers(self, version: TorchVersion) -> bool:
        return not self.versions or version in self.versions


@dataclass(frozen=True)
class CompanionQuestion:
    """What the sources read so far leave open about a package, and why."""

    topic: str
    known: str
    why_open: str
    sources: tuple[str, ...]


@dataclass(frozen=True)
class CompanionInstead:
    """What runs where a package does not: when the pair judgement fails by ``rule`` (one of
    the rule ids of :data:`torchenv.resolver.companions.RULES`), ``text`` says what to use."""

    rule: str
    text: str
    sources: tuple[str, ...]


@dataclass(frozen=True)
class CompanionPackage:
    """A companion package: its import name, GPU floor and releases (newest first)."""

    name: str
    import_name: str
    summary: str
    releases: tuple[CompanionRelease, ...]
    gpu: tuple[GpuRequirement, ...] = ()
    open_questions: tuple[CompanionQuestion, ...] = ()
    instead: tuple[CompanionInstead, ...] = ()

    def release(self, version: TorchVersion) -> CompanionRelease | None:
        return next((r for r in self.releases if r.version == version), None)

    def gpu_requirement(self, version: TorchVersion) -> GpuRequirement | None:
        """The GPU floor stated for ``version``, if any source states one."""
        return next((g for g in self.gpu if g.covers(version)), None)


@dataclass(frozen=True)
class AbiFact:
    """Whether torch's Linux builds matching ``torch`` (a specifier), ``platforms`` and the
    variants (all unless ``variants`` names some; minus ``except_variants``) use the C++11 ABI;
    ``value`` is None when unknown."""

    torch: TorchSpec
    platforms: tuple[Platform, ...]
    value: bool | None
    evidence: str
    sources: tuple[str, ...]
    variants: tuple[VariantName, ...] = ()
    except_variants: tuple[VariantName, ...] = ()
    note: str | None = None

    def covers(self, torch: TorchVersion, platform: Platform, variant: VariantName) -> bool:
        if platform not in self.platforms or not self.torch.contains(torch):
            return False
        if self.variants and variant not in self.variants:
            return False
        return variant not in self.except_variants


@dataclass(frozen=True)
class TritonPin:
    """What torch's wheel metadata requires of triton (``requirement`` None: nothing), with
    the environment marker and the wheel it was read from."""

    torch: TorchVersion
    requirement: str | None
    marker: str | None
    wheel: str
    evidence: str
    sources: tuple[str, ...]


@dataclass(frozen=True)
class Companions:
    """The whole companion data, validated."""

    schema_version: int
    matrix_version: str
    sources: Mapping[str, Source]
    packages: tuple[CompanionPackage, ...]
    cxx11_abi: tuple[AbiFact, ...]
    triton: tuple[TritonPin, ...]

    def package(self, name: str) -> CompanionPackage | None:
        wanted = canonicalize_name(name)
        return next((p for p in self.packages if canonicalize_name(p.name) == wanted), None)

    def abi_fact(self, torch: TorchVersion, platform: Platform,
                 variant: VariantName) -> AbiFact | None:
        """The fact that says whether this Linux torch build uses the C++11 ABI, if any."""
        return next((f for f in self.cxx11_abi if f.covers(torch, platform, variant)), None)

    def triton_pin(self, torch: TorchVersion) -> TritonPin | None:
        return next((t for t in self.triton if t.torch == torch), None)


# --------------------------------------------------------------------------- loading


def load_companions(path: StrPath | None = None, *, matrix: Matrix | None = None) -> Companions:
    """Read and validate ``companions.yaml`` (default: the embedded one). With ``matrix``, every
    torch release, series and variant it names is checked against the matrix too, and no torch
    build may get its C++11 ABI from two entries. Raises :class:`MatrixError`."""
    from torchenv.matrix.loader import read_yaml

    file = Path(path) if path is not None else COMPANIONS_FILE
    origin = "matrix/data/companions.yaml" if path is None else str(file)
    if not file.is_file():
        raise MatrixError(f"{origin}: missing", hint="reinstall torchenv or restore the file")
    return build_companions(read_yaml(file), origin=origin, matrix=matrix)


def build_companions(doc: Any, *, origin: str = "companions.yaml",
                     matrix: Matrix | None = None) -> Companions:
    """Validate one parsed document and build :class:`Companions`."""
    ctx = _Ctx(origin)
    d, schema, version, srcs = _header(ctx, doc)
    sources: dict[str, Source] = {}
    for i, s in enumerate(srcs):
        if s.id in sources:
            raise ctx.fail(f"sources[{i}].id", f"source {s.id!r} is defined twice")
        if not _HTTPS_RE.match(s.url):
            raise ctx.fail(f"sources[{i}].url", f"{s.url!r} is not an https:// address")
        sources[s.id] = s
    known = set(d) - {"schema_version", "matrix_version", "sources", "packages", "cxx11_abi",
                      "triton"}
    if known:
        raise ctx.fail(sorted(known)[0], "is not a key of companions.yaml (schema_version, "
                       "matrix_version, sources, packages, cxx11_abi, triton)")
    packages = _packages(ctx, d.get("packages"))
    abi = _abi_facts(ctx, d.get("cxx11_abi") or [])
    triton = _triton_pins(ctx, d.get("triton") or [])
    for path, sid in ctx.cited:
        if sid not in sources:
            raise ctx.fail(path, f"source {sid!r} is not defined in the file's 'sources' list")
    _check_primary(ctx, packages, abi, triton, sources)
    result = Companions(schema_version=schema, matrix_version=version, sources=sources,
                        packages=packages, cxx11_abi=abi, triton=triton)
    if matrix is not None:
        _check_against_matrix(ctx, result, matrix)
    return result


def _keys(ctx: _Ctx, entry: Mapping[str, Any], path: str, allowed: Sequence[str]) -> None:
    unknown = sorted(set(entry) - set(allowed))
    if unknown:
        raise ctx.fail(f"{path}.{unknown[0]}", f"is not a field here ({', '.join(allowed)})")


def _evidence(ctx: _Ctx, raw: Any, path: str) -> str:
    cls = _evidence_class(ctx, raw, path)
    if cls == "inferred":
        raise ctx.fail(path, "'inferred' is set by a named rule, not written in the data "
                       "(no companion rule exists yet): write confirmed or unknown")
    return cls


def _packages(ctx: _Ctx, raw: Any) -> tuple[CompanionPackage, ...]:
    out = []
    seen: dict[str, int] = {}
    for i, entry in enumerate(ctx.seq(raw, "packages")):
        path = f"packages[{i}]"
        p = ctx.mapping(entry, path)
        _keys(ctx, p, path, ("name", "import", "summary", "gpu", "open_questions", "instead",
                             "releases"))
        name = ctx.string(p.get("name"), f"{path}.name", _NAME_RE, "a package name like "
                          "'flash-attn'")
        if canonicalize_name(name) in seen:
            raise ctx.fail(f"{path}.name", f"{name!r} is listed twice (also "
                           f"packages[{seen[canonicalize_name(name)]}])")
        seen[canonicalize_name(name)] = i
        releases = _releases(ctx, p.get("releases"), f"{path}.releases")
        out.append(CompanionPackage(
            name=name,
            import_name=ctx.string(p.get("import"), f"{path}.import", _IMPORT_RE,
                                   "a Python module name"),
            summary=ctx.string(p.get("summary"), f"{path}.summary"),
            releases=releases,
            gpu=_gpu(ctx, p.get("gpu") or [], f"{path}.gpu", releases),
            open_questions=tuple(_question(ctx, q, f"{path}.open_questions[{j}]")
                                 for j, q in enumerate(ctx.seq(p.get("open_questions") or [],
                                                               f"{path}.open_questions"))),
            instead=tuple(_instead(ctx, q, f"{path}.instead[{j}]")
                          for j, q in enumerate(ctx.seq(p.get("instead") or [],
                                                        f"{path}.instead"))),
        ))
    return tuple(out)


_INSTEAD_RULES = ("platform", "python", "torch", "variant", "abi", "gpu")


def _instead(ctx: _Ctx, raw: Any, path: str) -> CompanionInstead:
    q = ctx.mapping(raw, path)
    _keys(ctx, q, path, ("rule", "text", "sources"))
    rule = ctx.string(q.get("rule"), f"{path}.rule")
    if rule not in _INSTEAD_RULES:
        raise ctx.fail(f"{path}.rule", f"{rule!r} is not one of {', '.join(_INSTEAD_RULES)}")
    return CompanionInstead(rule, ctx.string(q.get("text"), f"{path}.text"),
                            ctx.sources(q, path))


def _question(ctx: _Ctx, raw: Any, path: str) -> CompanionQuestion:
    q = ctx.mapping(raw, path)
    _keys(ctx, q, path, ("topic", "known", "why_open", "sources"))
    return CompanionQuestion(ctx.string(q.get("topic"), f"{path}.topic"),
                             ctx.string(q.get("known"), f"{path}.known"),
                             ctx.string(q.get("why_open"), f"{path}.why_open"),
                             ctx.sources(q, path))


def _gpu(ctx: _Ctx, raw: Any, path: str,
         releases: tuple[CompanionRelease, ...]) -> tuple[GpuRequirement, ...]:
    out = []
    listed = {r.version for r in releases}
    for j, entry in enumerate(ctx.seq(raw, path)):
        p = f"{path}[{j}]"
        g = ctx.mapping(entry, p)
        _keys(ctx, g, p, ("min_compute_capability", "versions", "evidence", "sources"))
        versions = tuple(ctx.value(TorchVersion, v, f"{p}.versions[{k}]")
                         for k, v in enumerate(ctx.seq(g.get("versions") or [],
                                                       f"{p}.versions")))
        for k, v in enumerate(versions):
            if v not in listed:
                raise ctx.fail(f"{p}.versions[{k}]", f"{v} is not among the package's releases")
        cc = ctx.value(ComputeCapability, g.get("min_compute_capability"),
                       f"{p}.min_compute_capability")
        out.append(GpuRequirement(cc, versions, _evidence(ctx, g.get("evidence"),
                                                          f"{p}.evidence"), ctx.sources(g, p)))
    return tuple(out)


def _releases(ctx: _Ctx, raw: Any, path: str) -> tuple[CompanionRelease, ...]:
    out: list[CompanionRelease] = []
    for j, entry in enumerate(ctx.seq(raw, path)):
        p = f"{path}[{j}]"
        r = ctx.mapping(entry, p)
        _keys(ctx, r, p, ("version", "released", "builds"))
        version = ctx.value(TorchVersion, r.get("version"), f"{p}.version")
        if any(o.version == version for o in out):
            raise ctx.fail(f"{p}.version", f"{version} is listed twice")
        builds = tuple(_build(ctx, b, f"{p}.builds[{k}]")
                       for k, b in enumerate(ctx.seq(r.get("builds"), f"{p}.builds")))
        if not builds:
            raise ctx.fail(f"{p}.builds", "empty: a release lists at least one build")
        out.append(CompanionRelease(version, ctx.string(r.get("released"), f"{p}.released",
                                                        _DATE_OR_UNKNOWN,
                                                        "an ISO date or 'unknown'"), builds))
    return tuple(out)


_BUILD_KEYS = ("where", "coupling", "torch", "requires_dist", "platforms", "python",
               "python_min", "python_max", "python_abi", "variants", "url", "cuda", "cuda_major",
               "arch_list", "abi_flags", "assets", "evidence", "sources", "note")


def _build(ctx: _Ctx, raw: Any, path: str) -> CompanionBuild:
    b = ctx.mapping(raw, path)
    _keys(ctx, b, path, _BUILD_KEYS)
    where = ctx.string(b.get("where"), f"{path}.where")
    if where not in LOCATIONS:
        raise ctx.fail(f"{path}.where", f"{where!r} is not one of {', '.join(LOCATIONS)}")
    coupling = ctx.string(b.get("coupling"), f"{path}.coupling")
    if coupling not in COUPLINGS:
        raise ctx.fail(f"{path}.coupling", f"{coupling!r} is not one of {', '.join(COUPLINGS)}")
    if (where == "sdist") != (coupling == "none"):
        raise ctx.fail(f"{path}.coupling", "a source distribution (where: sdist) and only it "
                       f"has coupling 'none'; this build is {where} with {coupling!r}")
    fields: dict[str, Any] = {"where": where, "coupling": coupling}
    fields.update(_torch_of(ctx, b, path, coupling))
    fields["requires_dist"] = _requires_dist(ctx, b.get("requires_dist"), f"{path}.requires_dist",
                                             fields)
    fields["platforms"] = tuple(ctx.platform(p, f"{path}.platforms[{k}]")
                                for k, p in enumerate(ctx.seq(b.get("platforms") or [],
                                                              f"{path}.platforms")))
    if where != "sdist" and not fields["platforms"]:
        raise ctx.fail(f"{path}.platforms", "a binary build names its platforms")
    fields.update(_python(ctx, b, path, where))
    fields["variants"] = tuple(ctx.value(VariantName, v, f"{path}.variants[{k}]")
                               for k, v in enumerate(ctx.seq(b.get("variants") or [],
                                                             f"{path}.variants")))
    if where in ("pytorch-index", "find-links") and not fields["variants"]:
        raise ctx.fail(f"{path}.variants", f"a {where} build names the torch variants it is "
                       "for")
    fields["url"] = _url(ctx, b.get("url"), f"{path}.url", where)
    fields["cuda"] = ctx.opt_value(CudaVersion, b.get("cuda"), f"{path}.cuda")
    major = b.get("cuda_major")
    if major is not None and (isinstance(major, bool) or not isinstance(major, int)):
        raise ctx.fail(f"{path}.cuda_major", f"expected a CUDA major version, got {_show(major)}")
    fields["cuda_major"] = major
    fields["arch_list"] = ctx.arch_list(b.get("arch_list"), f"{path}.arch_list")
    fields["abi_flags"] = _abi_flags(ctx, b.get("abi_flags"), f"{path}.abi_flags", fields["url"])
    fields["sources"] = ctx.sources(b, path)
    fields["evidence"] = _build_evidence(ctx, b.get("evidence"), f"{path}.evidence", fields)
    fields["assets"] = _assets(ctx, b.get("assets") or [], f"{path}.assets", fields["url"])
    note = b.get("note")
    fields["note"] = None if note is None else ctx.string(note, f"{path}.note")
    return CompanionBuild(**fields)


def _torch_of(ctx: _Ctx, b: Mapping[str, Any], path: str, coupling: str) -> dict[str, Any]:
    """The ``torch`` field, shaped by the coupling."""
    raw = b.get("torch")
    where = f"{path}.torch"
    if coupling == "none":
        if raw is not None:
            raise ctx.fail(where, "a source build names no torch: it builds against the "
                           "installed one")
        return {}
    if coupling == "floor":
        text = ctx.string(raw, where)
        if not text.startswith(">="):
            raise ctx.fail(where, f"{text!r} is not a floor like '>=2.10'")
        try:
            return {"torch_floor": TorchSpec(text)}
        except InvalidValue as exc:
            raise ctx.fail(where, str(exc)) from None
    items = ctx.seq(raw, where)
    if not items:
        raise ctx.fail(where, f"empty: an {coupling} build names the torch it is built for")
    if coupling == "exact":
        versions = tuple(ctx.value(TorchVersion.plain, t, f"{where}[{k}]")
                         for k, t in enumerate(items))
        if len(set(versions)) != len(versions):
            raise ctx.fail(where, "lists a torch release twice")
        return {"torch_exact": versions}
    minors = tuple(ctx.string(t, f"{where}[{k}]", _SERIES_RE, "a torch series like '2.8'")
                   for k, t in enumerate(items))
    if len(set(minors)) != len(minors):
        raise ctx.fail(where, "lists a torch series twice")
    return {"torch_minors": minors}


def _requires_dist(ctx: _Ctx, raw: Any, path: str, fields: Mapping[str, Any]) -> str | None:
    """The wheel metadata's torch requirement, which must say what the coupling says."""
    if raw is None:
        return None
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.specifiers import SpecifierSet

    text = ctx.string(raw, path)
    try:
        req = Requirement(text)
    except InvalidRequirement:
        raise ctx.fail(path, f"{text!r} is not a requirement like 'torch==2.9.1'") from None
    if req.name != "torch":
        raise ctx.fail(path, f"{text!r} is not a requirement on torch")
    coupling = fields["coupling"]
    if coupling == "exact":
        pinned = {f"=={v}" for v in fields["torch_exact"]}
        if {str(s) for s in req.specifier} != pinned or len(pinned) != 1:
            raise ctx.fail(path, f"{text!r} does not pin the one release the exact coupling "
                           f"names ({', '.join(sorted(pinned))})")
    elif coupling == "floor":
        if req.specifier != SpecifierSet(str(fields["torch_floor"])):
            raise ctx.fail(path, f"{text!r} is not the floor the coupling names "
                           f"({fields['torch_floor']})")
    else:
        raise ctx.fail(path, f"a {coupling} build's metadata declares no torch requirement "
                       "(its coupling comes from where it is published)")
    return text


def _python(ctx: _Ctx, b: Mapping[str, Any], path: str, where: str) -> dict[str, Any]:
    """Either a list of tags or a range (``python_min``, optional ``python_max``) of one
    abi3 or none wheel; a source build may give neither."""
    tags = b.get("python")
    bounds = {k: b.get(k) for k in ("python_min", "python_max", "python_abi") if k in b}
    if tags is not None and bounds:
        raise ctx.fail(f"{path}.python", "give a list of Python versions or python_min/"
                       "python_max/python_abi, not both")
    if tags is not None:
        return {"python": tuple(sorted(ctx.python_list(tags, f"{path}.python"),
                                       key=python_sort_key))}
    if not bounds:
        if where != "sdist":
            raise ctx.fail(f"{path}.python", "a binary build names its Python versions")
        return {}
    lo = ctx.string(bounds.get("python_min"), f"{path}.python_min", _PY_RE,
                    "a Python version like '3.9'")
    hi = (None if bounds.get("python_max") is None else
          ctx.string(bounds["python_max"], f"{path}.python_max", _PY_RE,
                     "a Python version like '3.14'"))
    if hi is not None and python_sort_key(hi) < python_sort_key(lo):
        raise ctx.fail(f"{path}.python_max", f"{hi} is older than python_min {lo}")
    abi = ctx.string(bounds.get("python_abi"), f"{path}.python_abi")
    if abi not in ("abi3", "none"):
        raise ctx.fail(f"{path}.python_abi", f"{abi!r} is not 'abi3' or 'none'")
    return {"python_min": lo, "python_max": hi, "python_abi": abi}


def _url(ctx: _Ctx, raw: Any, path: str, where: str) -> str | None:
    """A release asset's or find-links page's address: https, with only the placeholders its
    kind fills in."""
    allowed = _URL_FIELDS.get(where)
    if allowed is None:
        if raw is not None:
            raise ctx.fail(path, f"a {where} build has no url (the installer finds its files)")
        return None
    text = ctx.string(raw, path)
    if not _HTTPS_RE.match(text):
        raise ctx.fail(path, f"{text!r} is not an https:// address")
    for name in _PLACEHOLDER.findall(text):
        if name not in allowed:
            raise ctx.fail(path, f"{{{name}}} is not a placeholder of a {where} address "
                           f"({', '.join('{' + a + '}' for a in allowed)})")
    if where == "release-asset" and "/releases/download/" not in text:
        raise ctx.fail(path, f"{text!r} is not a GitHub release asset "
                       "(…/releases/download/TAG/FILE)")
    return text


def _abi_flags(ctx: _Ctx, raw: Any, path: str, url: str | None) -> dict[str, str]:
    uses_flag = url is not None and "{abi_flag}" in url
    if raw is None:
        if uses_flag:
            raise ctx.fail(path, "the url names an {abi_flag}: say what each flag was built "
                           "with (TRUE/FALSE -> true, false or follows-torch)")
        return {}
    if not uses_flag:
        raise ctx.fail(path, "only a release asset whose url has {abi_flag} has abi_flags")
    flags = {}
    for flag, built in ctx.mapping(raw, path).items():
        if flag not in ("TRUE", "FALSE"):
            raise ctx.fail(f"{path}.{flag}", f"{flag!r} is not an ABI flag (TRUE, FALSE)")
        text = ctx.string(built, f"{path}.{flag}")
        if text not in ABI_BUILT:
            raise ctx.fail(f"{path}.{flag}", f"{text!r} is not one of {', '.join(ABI_BUILT)}")
        flags[flag] = text
    return flags


def _build_evidence(ctx: _Ctx, raw: Any, path: str,
                    fields: Mapping[str, Any]) -> dict[str, str]:
    """One class per fact the build states; ``exists`` and ``coupling`` always, the others
    exactly when the build states them."""
    given = ctx.mapping(raw, path)
    stated = {"exists": True, "coupling": True,
              "python": bool(fields.get("python") or fields.get("python_min")),
              "arch_list": fields.get("arch_list") is not None,
              "abi": bool(fields.get("abi_flags"))}
    out = {}
    for fact in given:
        if fact not in BUILD_FACTS:
            raise ctx.fail(f"{path}.{fact}", f"is not a fact of a build ({', '.join(BUILD_FACTS)})")
        if not stated[fact]:
            raise ctx.fail(f"{path}.{fact}", f"the build states no {fact}")
        out[fact] = _evidence(ctx, given[fact], f"{path}.{fact}")
    missing = [f for f in BUILD_FACTS if stated[f] and f not in out]
    if missing:
        raise ctx.fail(path, f"missing {missing[0]!r}: every fact the build states has an "
                       "evidence class")
    return out


def _assets(ctx: _Ctx, raw: Any, path: str, url: str | None) -> tuple[CompanionAsset, ...]:
    entries = ctx.seq(raw, path)
    if entries and url is None:
        raise ctx.fail(path, "only a release-asset build lists asset digests")
    pattern = _file_pattern(url) if url is not None else None
    out = []
    for k, entry in enumerate(entries):
        p = f"{path}[{k}]"
        a = ctx.mapping(entry, p)
        _keys(ctx, a, p, ("file", "sha256", "evidence", "sources"))
        file = ctx.string(a.get("file"), f"{p}.file")
        if pattern is not None and not pattern.fullmatch(file):
            raise ctx.fail(f"{p}.file", f"{file!r} is not a file the build's url names")
        out.append(CompanionAsset(
            file=file,
            sha256=ctx.string(a.get("sha256"), f"{p}.sha256", _SHA256_RE,
                              "a sha256 digest (64 lowercase hex digits)"),
            evidence=_evidence(ctx, a.get("evidence"), f"{p}.evidence"),
            sources=ctx.sources(a, p),
        ))
    return tuple(out)


def _file_pattern(url: str) -> re.Pattern[str]:
    """The file names a release-asset url stands for: its last part, each placeholder any
    run of characters without a slash."""
    name = url.rsplit("/", 1)[-1]
    parts = _PLACEHOLDER.split(name)  # text, placeholder, text, …
    return re.compile("".join(re.escape(p) if i % 2 == 0 else "[^/]+"
                              for i, p in enumerate(parts)))


def _abi_facts(ctx: _Ctx, raw: Any) -> tuple[AbiFact, ...]:
    out = []
    for i, entry in enumerate(ctx.seq(raw, "cxx11_abi")):
        path = f"cxx11_abi[{i}]"
        a = ctx.mapping(entry, path)
        _keys(ctx, a, path, ("torch", "platforms", "variants", "except_variants", "value",
                             "evidence", "sources", "note"))
        text = ctx.string(a.get("torch"), f"{path}.torch")
        try:
            spec = TorchSpec(text)
        except InvalidValue as exc:
            raise ctx.fail(f"{path}.torch", str(exc)) from None
        plats = tuple(ctx.platform(p, f"{path}.platforms[{k}]")
                      for k, p in enumerate(ctx.seq(a.get("platforms"), f"{path}.platforms")))
        for k, plat in enumerate(plats):
            if plat.system != "linux":
                raise ctx.fail(f"{path}.platforms[{k}]", f"{plat}: the C++11 ABI flag is a "
                               "property of Linux (libstdc++) builds only")
        variants, excluded = (tuple(ctx.value(VariantName, v, f"{path}.{key}[{k}]")
                                    for k, v in enumerate(ctx.seq(a.get(key) or [],
                                                                  f"{path}.{key}")))
                              for key in ("variants", "except_variants"))
        if variants and excluded:
            raise ctx.fail(f"{path}.except_variants", "give variants or except_variants, "
                           "not both")
        value = ctx.tribool(a.get("value"), f"{path}.value")
        evidence = _evidence(ctx, a.get("evidence"), f"{path}.evidence")
        if (value == "unknown") != (evidence == "unknown"):
            raise ctx.fail(f"{path}.evidence", f"'{evidence}' for value {_show(value)}: an "
                           "unknown value has evidence 'unknown', a known one does not")
        out.append(AbiFact(spec, plats, None if value == "unknown" else bool(value), evidence,
                           ctx.sources(a, path), variants, excluded,
                           None if a.get("note") is None else ctx.string(a["note"],
                                                                         f"{path}.note")))
    return tuple(out)


def _triton_pins(ctx: _Ctx, raw: Any) -> tuple[TritonPin, ...]:
    from packaging.markers import InvalidMarker, Marker
    from packaging.requirements import InvalidRequirement, Requirement

    out: list[TritonPin] = []
    for i, entry in enumerate(ctx.seq(raw, "triton")):
        path = f"triton[{i}]"
        t = ctx.mapping(entry, path)
        _keys(ctx, t, path, ("torch", "requirement", "marker", "wheel", "evidence", "sources"))
        torch = ctx.value(TorchVersion.plain, t.get("torch"), f"{path}.torch")
        if any(o.torch == torch for o in out):
            raise ctx.fail(f"{path}.torch", f"torch {torch} is listed twice")
        req = t.get("requirement")
        if req is not None:
            req = ctx.string(req, f"{path}.requirement")
            try:
                parsed = Requirement(req)
            except InvalidRequirement:
                raise ctx.fail(f"{path}.requirement", f"{req!r} is not a requirement like "
                               "'triton==3.4.0'") from None
            if parsed.name != "triton" or parsed.marker is not None:
                raise ctx.fail(f"{path}.requirement", f"{req!r}: write 'triton<specifier>' "
                               "here and its environment marker under 'marker'")
        marker = t.get("marker")
        if marker is not None:
            marker = ctx.string(marker, f"{path}.marker")
            try:
                Marker(marker)
            except InvalidMarker:
                raise ctx.fail(f"{path}.marker", f"{marker!r} is not an environment marker") \
                    from None
            if req is None:
                raise ctx.fail(f"{path}.marker", "a marker without a requirement")
        wheel = ctx.string(t.get("wheel"), f"{path}.wheel")
        if not wheel.startswith(f"torch-{torch}-") or not wheel.endswith(".whl"):
            raise ctx.fail(f"{path}.wheel", f"{wheel!r} is not a wheel of torch {torch}")
        out.append(TritonPin(torch, req, marker, wheel,
                             _evidence(ctx, t.get("evidence", "confirmed"), f"{path}.evidence"),
                             ctx.sources(t, path)))
    return tuple(out)


def _check_primary(ctx: _Ctx, packages: tuple[CompanionPackage, ...],
                   abi: tuple[AbiFact, ...], triton: tuple[TritonPin, ...],
                   sources: Mapping[str, Source]) -> None:
    """A ``confirmed`` fact cites at least one primary source, as in the torch matrix."""

    def primary(ids: tuple[str, ...]) -> bool:
        return any(sources[s].primary for s in ids)

    def fail(path: str, what: str) -> MatrixError:
        return ctx.fail(path, f"{what} is 'confirmed' but every source it cites is a copy or a "
                        "third-party report (primary: false)")

    for i, pkg in enumerate(packages):
        for j, g in enumerate(pkg.gpu):
            if g.evidence == "confirmed" and not primary(g.sources):
                raise fail(f"packages[{i}].gpu[{j}]", "the GPU floor")
        for j, rel in enumerate(pkg.releases):
            for k, b in enumerate(rel.builds):
                where = f"packages[{i}].releases[{j}].builds[{k}]"
                confirmed = [f for f, c in b.evidence.items() if c == "confirmed"]
                if confirmed and not primary(b.sources):
                    raise fail(f"{where}.evidence.{confirmed[0]}", confirmed[0])
                for m, a in enumerate(b.assets):
                    if a.evidence == "confirmed" and not primary(a.sources):
                        raise fail(f"{where}.assets[{m}]", "the digest")
    for i, f in enumerate(abi):
        if f.evidence == "confirmed" and not primary(f.sources):
            raise fail(f"cxx11_abi[{i}]", "the ABI fact")
    for i, t in enumerate(triton):
        if t.evidence == "confirmed" and not primary(t.sources):
            raise fail(f"triton[{i}]", "the pin")


def _check_against_matrix(ctx: _Ctx, data: Companions, matrix: Matrix) -> None:
    """Every torch release, series and variant named is one the matrix knows; no Linux torch
    build has its ABI from two entries."""
    releases = {r.torch for r in matrix.releases}
    series = {r.torch.series for r in matrix.releases}
    variant_names = {v.name for r in matrix.releases for v in r.variants}
    for i, pkg in enumerate(data.packages):
        for j, crel in enumerate(pkg.releases):
            for k, b in enumerate(crel.builds):
                where = f"packages[{i}].releases[{j}].builds[{k}]"
                for version in b.torch_exact:
                    if version not in releases:
                        raise ctx.fail(f"{where}.torch", f"torch {version} is not in the matrix")
                for s in b.torch_minors:
                    if s not in series:
                        raise ctx.fail(f"{where}.torch", f"torch {s} is not a series of the "
                                       "matrix")
                for v in b.variants:
                    if v.kind != "cpu" and v not in variant_names:
                        raise ctx.fail(f"{where}.variants", f"{v} is not a variant of any "
                                       "release in the matrix")
    for i, pin in enumerate(data.triton):
        if pin.torch not in releases:
            raise ctx.fail(f"triton[{i}].torch", f"torch {pin.torch} is not in the matrix")
    for rel in matrix.releases:
        for variant in rel.variants:
            for plat in variant.platforms:
                hits = [i for i, f in enumerate(data.cxx11_abi)
                        if f.covers(rel.torch, plat, variant.name)]
                if len(hits) > 1:
                    raise ctx.fail(f"cxx11_abi[{hits[1]}]", f"torch {rel.torch} {variant.name} "
                                   f"on {plat} is also covered by cxx11_abi[{hits[0]}]")


# --------------------------------------------------------------------------- JSON


def companions_to_json(data: Companions,
                       packages: Sequence[CompanionPackage] | None = None) -> dict[str, Any]:
    """The document ``matrix show --companions --json`` prints (docs/companions.md)."""
    chosen = data.packages if packages is None else tuple(packages)
    return {
        "matrix_version": data.matrix_version,
        "schema_version": data.schema_version,
        "packages": [_package_json(p) for p in chosen],
        "cxx11_abi": [{
            "torch": str(f.torch), "platforms": [str(p) for p in f.platforms],
            "variants": [str(v) for v in f.variants] or None,
            "except_variants": [str(v) for v in f.except_variants],
            "value": f.value, "evidence": f.evidence, "sources": list(f.sources),
            "note": f.note} for f in data.cxx11_abi] if packages is None else [],
        "triton": [{"torch": str(t.torch), "requirement": t.requirement, "marker": t.marker,
                    "wheel": t.wheel, "evidence": t.evidence, "sources": list(t.sources)}
                   for t in data.triton] if packages is None else [],
        "sources": {s: {"title": src.title, "url": src.url, "primary": src.primary}
                    for s, src in data.sources.items() if s in _cited(data, chosen)},
    }


def _cited(data: Companions, packages: Sequence[CompanionPackage]) -> set[str]:
    ids: set[str] = set()
    for p in packages:
        ids.update(s for g in p.gpu for s in g.sources)
        ids.update(s for q in p.open_questions for s in q.sources)
        ids.update(s for q in p.instead for s in q.sources)
        for r in p.releases:
            for b in r.builds:
                ids.update(b.sources)
                ids.update(s for a in b.assets for s in a.sources)
    if tuple(packages) == data.packages:
        ids.update(s for f in data.cxx11_abi for s in f.sources)
        ids.update(s for t in data.triton for s in t.sources)
    return ids


def _package_json(p: CompanionPackage) -> dict[str, Any]:
    return {
        "name": p.name, "import": p.import_name, "summary": p.summary,
        "gpu": [{"min_compute_capability": str(g.min_compute_capability),
                 "versions": [str(v) for v in g.versions] or None,
                 "evidence": g.evidence, "sources": list(g.sources)} for g in p.gpu],
        "releases": [{"version": str(r.version), "released": r.released,
                      "builds": [_build_json(b) for b in r.builds]} for r in p.releases],
        "open_questions": [{"topic": q.topic, "known": q.known, "why_open": q.why_open,
                            "sources": list(q.sources)} for q in p.open_questions],
        "instead": [{"rule": q.rule, "text": q.text, "sources": list(q.sources)}
                    for q in p.instead],
    }


def _build_json(b: CompanionBuild) -> dict[str, Any]:
    torch: Any
    if b.coupling == "exact":
        torch = [str(t) for t in b.torch_exact]
    elif b.coupling == "minor":
        torch = list(b.torch_minors)
    elif b.coupling == "floor":
        torch = str(b.torch_floor)
    else:
        torch = None
    return {
        "where": b.where, "coupling": b.coupling, "torch": torch,
        "requires_dist": b.requires_dist, "platforms": [str(p) for p in b.platforms],
        "python": list(b.python) or None, "python_min": b.python_min,
        "python_max": b.python_max, "python_abi": b.python_abi,
        "variants": [str(v) for v in b.variants], "url": b.url,
        "cuda": None if b.cuda is None else str(b.cuda), "cuda_major": b.cuda_major,
        "arch_list": None if b.arch_list is None else [str(a) for a in b.arch_list],
        "abi_flags": dict(b.abi_flags),
        "assets": [{"file": a.file, "sha256": a.sha256, "evidence": a.evidence,
                    "sources": list(a.sources)} for a in b.assets],
        "evidence": {f: b.fact_evidence(f) for f in BUILD_FACTS},
        "sources": list(b.sources), "note": b.note,
    }

