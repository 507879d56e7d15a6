"""From live facts to matrix entries: the index snapshot, the diff, and the overlay document.

Pure functions over parsed pages; nothing here touches the network or the disk.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Optional

from packaging.markers import InvalidMarker
from packaging.requirements import InvalidRequirement, Requirement

from torchenv.matrix.live.wheels import WheelFile, safe_parse_wheel
from torchenv.matrix.model import PLATFORMS, Matrix, parse_version_tuple, variant_kind

__all__ = [
    "INDEX_SOURCE_ID",
    "PYPI_SOURCE_ID",
    "Diff",
    "IndexSnapshot",
    "PypiRelease",
    "build_overlay",
    "diff_matrix",
    "pairing_candidates",
    "pinned_torch",
    "pypi_release",
    "snapshot_from_filenames",
]

INDEX_SOURCE_ID = "torchenv-live-index"
PYPI_SOURCE_ID = "torchenv-live-pypi"

# environments for evaluating Requires-Dist markers per platform
_MARKER_ENVS: Mapping[str, dict[str, str]] = {
    "linux-x86_64": {"platform_system": "Linux", "platform_machine": "x86_64",
                     "sys_platform": "linux"},
    "linux-aarch64": {"platform_system": "Linux", "platform_machine": "aarch64",
                      "sys_platform": "linux"},
    "win-amd64": {"platform_system": "Windows", "platform_machine": "AMD64",
                  "sys_platform": "win32"},
    "macos-arm64": {"platform_system": "Darwin", "platform_machine": "arm64",
                    "sys_platform": "darwin"},
    "macos-x86_64": {"platform_system": "Darwin", "platform_machine": "x86_64",
                     "sys_platform": "darwin"},
}


def _vkey(text: str) -> tuple[int, ...]:
    try:
        return parse_version_tuple(text)
    except ValueError:
        return (0,)


def python_sort_key(tag: str) -> tuple[int, int, int]:
    major, minor = tag.rstrip("t").split(".")
    return (int(major), int(minor), 1 if tag.endswith("t") else 0)


def _tags(values: Iterable[str]) -> list[str]:
    return sorted(set(values), key=python_sort_key)


@dataclass
class IndexSnapshot:
    """What a project's page on the wheel index offers.

    ``builds[version][variant][platform]`` is the set of Python tags; unlabelled wheels (macOS,
    copies of the PyPI build) are kept apart in ``unlabelled``; ``skipped`` counts file names
    that were not wheels of a supported platform or had a local label torchenv does not know.
    """

    project: str
    builds: dict[str, dict[str, dict[str, set[str]]]] = field(default_factory=dict)
    unlabelled: dict[str, dict[str, set[str]]] = field(default_factory=dict)
    unknown_variants: dict[str, set[str]] = field(default_factory=dict)
    invalid: list[str] = field(default_factory=list)
    files: int = 0

    @property
    def versions(self) -> set[str]:
        return set(self.builds) | set(self.unlabelled)


def snapshot_from_filenames(project: str, filenames: Iterable[str]) -> IndexSnapshot:
    """Group final-release wheels of ``project`` by version, variant, platform."""
    snap = IndexSnapshot(project=project)
    wanted = project.lower()
    for filename in filenames:
        snap.files += 1
        facts = safe_parse_wheel(filename)
        if facts is None:
            snap.invalid.append(filename)
            continue
        for wheel in facts:
            if wheel.project != wanted or not wheel.final:
                continue
            _add(snap, wheel)
    return snap


def _add(snap: IndexSnapshot, wheel: WheelFile) -> None:
    if wheel.variant is None:
        snap.unlabelled.setdefault(wheel.version, {}).setdefault(wheel.platform, set()).add(
            wheel.python)
        return
    if variant_kind(wheel.variant) is None:  # e.g. cpu.cxx11.abi
        snap.unknown_variants.setdefault(wheel.variant, set()).add(wheel.version)
        return
    (snap.builds.setdefault(wheel.version, {}).setdefault(wheel.variant, {})
     .setdefault(wheel.platform, set()).add(wheel.python))


@dataclass(frozen=True)
class PypiRelease:
    """The facts ``/pypi/torch/<version>/json`` gives about one release."""

    version: str
    released: str
    requires_python: Optional[str]
    python: Mapping[str, tuple[str, ...]]
    manylinux: Mapping[str, str]
    pypi_default: Mapping[str, str]


def _cuda_variant(requirements: Sequence[str], platform: str) -> str:
    """The CUDA build the PyPI wheel pulls on ``platform`` (via nvidia-cuda-runtime pins)."""
    env = _MARKER_ENVS[platform]
    for text in requirements:
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue
        if not req.name.lower().startswith("nvidia-cuda-runtime"):
            continue
        try:
            if req.marker is not None and not req.marker.evaluate({**env, "extra": ""}):
                continue
        except InvalidMarker:
            continue
        for spec in req.specifier:
            parts = spec.version.split(".")
            if spec.operator in ("==", "===", "~=", ">=") and len(parts) >= 2 \
                    and parts[0].isdigit() and parts[1].isdigit():
                return f"cu{parts[0]}{parts[1]}"
    return "cpu"


def pypi_release(url: str, doc: Any) -> PypiRelease:
    """Parse a PyPI per-version JSON document; raises ``ValueError`` naming what is missing."""
    if not isinstance(doc, dict) or not isinstance(doc.get("info"), dict):
        raise ValueError("no 'info' object")
    info = doc["info"]
    version = info.get("version")
    if not isinstance(version, str):
        raise ValueError("info.version missing")
    urls = doc.get("urls")
    if not isinstance(urls, list):
        raise ValueError("no 'urls' list")
    python: dict[str, set[str]] = {}
    floors: dict[str, str] = {}
    dates: list[str] = []
    for i, entry in enumerate(urls):
        if not isinstance(entry, dict) or not isinstance(entry.get("filename"), str):
            raise ValueError(f"urls[{i}] has no filename")
        uploaded = entry.get("upload_time_iso_8601") or entry.get("upload_time")
        if isinstance(uploaded, str) and len(uploaded) >= 10:
            dates.append(uploaded[:10])
        for wheel in safe_parse_wheel(entry["filename"]) or ():
            python.setdefault(wheel.platform, set()).add(wheel.python)
            if wheel.manylinux is not None:
                prev = floors.get(wheel.platform)
                if prev is None or _vkey(wheel.manylinux) < _vkey(prev):
                    floors[wheel.platform] = wheel.manylinux
    if not dates:
        raise ValueError("no upload dates in 'urls'")
    requires = [r for r in info.get("requires_dist") or [] if isinstance(r, str)]
    defaults = {plat: (_cuda_variant(requires, plat) if plat.startswith("linux") else "cpu")
                for plat in PLATFORMS if plat in python}
    rp = info.get("requires_python")
    return PypiRelease(
        version=version,
        released=min(dates),
        requires_python=rp if isinstance(rp, str) and rp else None,
        python={p: tuple(_tags(t)) for p, t in sorted(python.items(),
                                                        key=lambda kv: PLATFORMS.index(kv[0]))},
        manylinux=floors,
        pypi_default=defaults,
    )


def pinned_torch(doc: Any) -> str | None:
    """The ``torch==X`` pin in a torchvision/torchaudio PyPI JSON document, if any."""
    if not isinstance(doc, dict) or not isinstance(doc.get("info"), dict):
        return None
    for text in doc["info"].get("requires_dist") or []:
        try:
            req = Requirement(str(text))
        except InvalidRequirement:
            continue
        if req.name.lower() != "torch" or (req.marker is not None and "extra" in str(req.marker)):
            continue
        for spec in req.specifier:
            if spec.operator in ("==", "==="):
                return spec.version
    return None


def pairing_candidates(torch: str, project: str, versions: Iterable[str]) -> list[str]:
    """Versions of torchvision/torchaudio that may pair with ``torch``, newest first.

    torchvision 0.(M+15) goes with torch 2.M (0.14 with 1.13); torchaudio shares torch's
    major.minor. The PyPI pin of each candidate decides.
    """
    major, minor = _vkey(torch)[:2]
    if project == "torchvision":
        want = (0, minor + 15) if major == 2 else (0, minor + 1) if major == 1 else None
    else:
        want = (major, minor)
    if want is None:
        return []
    found = [v for v in versions if _vkey(v)[:2] == want]
    return sorted(found, key=_vkey, reverse=True)


@dataclass
class Diff:
    """What the live index has that the matrix lacks."""

    new_releases: list[str] = field(default_factory=list)
    # (torch, variant) -> platforms, for variants the matrix does not list for that release
    new_variants: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    # (torch, variant) -> platforms missing from a variant the matrix already lists
    new_platforms: dict[tuple[str, str], list[str]] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return not (self.new_releases or self.new_variants or self.new_platforms)

    def to_json(self) -> dict[str, Any]:
        return {
            "new_releases": list(self.new_releases),
            "new_variants": [{"torch": t, "variant": v, "platforms": p}
                             for (t, v), p in self.new_variants.items()],
            "new_platforms": [{"torch": t, "variant": v, "platforms": p}
                              for (t, v), p in self.new_platforms.items()],
        }

    def lines(self) -> list[str]:
        out = [f"+ release {t}" for t in self.new_releases]
        out += [f"+ variant {v} for torch {t} ({', '.join(p)})"
                for (t, v), p in self.new_variants.items()]
        out += [f"+ platforms {', '.join(p)} for torch {t} {v}"
                for (t, v), p in self.new_platforms.items()]
        return out


def _platform_order(platforms: Iterable[str]) -> list[str]:
    return sorted(set(platforms), key=lambda p: PLATFORMS.index(p) if p in PLATFORMS else 99)


def diff_matrix(matrix: Matrix, torch: IndexSnapshot, *, since: str | None = None) -> Diff:
    """Releases and variants on the index the matrix lacks, for torch >= ``since``
    (default: the oldest release in the matrix; older history is out of scope)."""
    diff = Diff()
    floor = _vkey(since) if since else min((r.key for r in matrix.releases), default=(0,))
    known = {r.torch: r for r in matrix.releases}
    for version in sorted(torch.versions, key=_vkey, reverse=True):
        if _vkey(version) < floor:
            continue
        release = known.get(version)
        if release is None:
            diff.new_releases.append(version)
            continue
        for name, platforms in sorted(torch.builds.get(version, {}).items()):
            variant = release.variant(name)
            if variant is None:
                diff.new_variants[(version, name)] = _platform_order(platforms)
                continue
            extra = set(platforms) - set(variant.platforms)
            if extra:
                diff.new_platforms[(version, name)] = _platform_order(extra)
    return diff


# ---------------------------------------------------------------------------------------------
# the overlay document


def _new_variant(name: str, platforms: Mapping[str, set[str]], release_python: Mapping[str, Any],
                 date: str) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": name, "platforms": _platform_order(platforms)}
    python = {p: _tags(tags) for p, tags in platforms.items()
              if list(release_python.get(p) or ()) != _tags(tags)}
    if python:
        entry["python"] = {p: python[p] for p in _platform_order(python)}
    note = f"found on the live wheel index by torchenv matrix update on {date}"
    if variant_kind(name) == "cuda":
        entry.update(arch_list="unknown", cudnn=None, nccl=None, status="unverified")
        note += "; the arch list cannot be known from file names"
    elif variant_kind(name) == "rocm":
        note += "; its gfx targets are not in rocm.yaml until someone adds them"
    entry["sources"] = [INDEX_SOURCE_ID]
    entry["note"] = note
    return entry


def _sets_of(documents: Mapping[str, Any]) -> dict[tuple[str, ...], list[dict[str, Any]]]:
    sets: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for vs in documents["variants.yaml"].get("variant_sets") or []:
        key = tuple(str(t) for t in vs.get("releases") or [])
        sets[key] = [copy.deepcopy(v) for v in vs.get("variants") or []]
    return sets


def build_overlay(
    *,
    documents: Mapping[str, Any],
    previous: Mapping[str, Any] | None,
    diff: Diff,
    torch: IndexSnapshot,
    pypi: Mapping[str, PypiRelease],
    pairs: Mapping[str, tuple[Optional[str], Optional[str]]],
    sources: Sequence[Mapping[str, str]],
    date: str,
    generated_by: str,
) -> dict[str, Any]:
    """The overlay: ``previous`` with entries for ``diff`` added or replacing same-key ones.

    ``documents`` are the embedded documents merged with ``previous``; releases missing from
    ``pypi`` (not on PyPI yet) are left out. Variants added to a release covered by a shared
    variant set split that set: the untouched variants stay shared, the changed ones move to a
    set of their own per release, so no release gets a variant twice.
    """
    release_docs = {str(r.get("torch")): r for r in
                    documents["releases.yaml"].get("releases") or []}
    sets = _sets_of(documents)
    changed: set[tuple[str, ...]] = set()
    new_releases: list[dict[str, Any]] = []

    for version in diff.new_releases:
        facts = pypi.get(version)
        if facts is None:
            continue
        vision, audio = pairs.get(version, (None, None))
        entry: dict[str, Any] = {
            "torch": version,
            "released": facts.released,
            "torchvision": vision,
            "torchaudio": audio,
            "python": {p: list(t) for p, t in facts.python.items()},
            "manylinux": dict(facts.manylinux),
            "pypi_default": dict(facts.pypi_default),
            "conda": {"pytorch_channel": False if _vkey(version) > (2, 5) else "unknown",
                      "conda_forge": "unknown"},
            "sources": [PYPI_SOURCE_ID, INDEX_SOURCE_ID],
            "note": f"added by {generated_by} on {date} from the live index and PyPI"
            + (f"; Requires-Python {facts.requires_python}" if facts.requires_python else ""),
        }
        new_releases.append(entry)
        variants = [_new_variant(name, plats, entry["python"], date)
                    for name, plats in sorted(torch.builds.get(version, {}).items())]
        if variants:
            sets[(version,)] = variants
            changed.add((version,))

    touched: dict[str, dict[str, dict[str, Any]]] = {}  # torch -> variant name -> new entry
    for (version, name), plats in diff.new_variants.items():
        rel_python = release_docs.get(version, {}).get("python") or {}
        builds = {p: torch.builds[version][name][p] for p in plats}
        touched.setdefault(version, {})[name] = _new_variant(name, builds, rel_python, date)
    for (version, name), plats in diff.new_platforms.items():
        for key, variants in sets.items():
            if version not in key:
                continue
            for v in variants:
                if v.get("name") == name:
                    updated = copy.deepcopy(v)
                    updated["platforms"] = _platform_order([*v.get("platforms", []), *plats])
                    note = str(updated.get("note") or "")
                    updated["note"] = (note + " " if note else "") + (
                        f"Platforms {', '.join(plats)} found on the live index on {date}.")
                    if INDEX_SOURCE_ID not in updated.get("sources", []):
                        updated["sources"] = [*updated.get("sources", []), INDEX_SOURCE_ID]
                    touched.setdefault(version, {})[name] = updated

    for version, variants_by_name in touched.items():
        for key in [k for k in sets if version in k]:
            kept = [v for v in sets[key] if v.get("name") not in variants_by_name]
            if len(kept) == len(sets[key]):
                continue
            moved = [v for v in sets[key] if v.get("name") in variants_by_name]
            sets[key] = kept
            changed.add(key)
            for other in key:  # siblings keep the moved variants unchanged, in their own set
                if other != version:
                    sets.setdefault((other,), []).extend(copy.deepcopy(moved))
                    changed.add((other,))
        own = sets.setdefault((version,), [])
        own[:] = [v for v in own if v.get("name") not in variants_by_name]
        own.extend(variants_by_name[n] for n in sorted(variants_by_name))
        changed.add((version,))

    overlay: dict[str, Any] = {
        "schema_version": 1,
        "matrix_version": date,
        "generated_by": generated_by,
    }
    prev = dict(previous or {})
    overlay["sources"] = _upsert(prev.get("sources"), list(sources), ("id",))
    overlay["releases"] = sorted(_upsert(prev.get("releases"), new_releases, ("torch",)),
                                 key=lambda r: _vkey(str(r.get("torch"))), reverse=True)
    set_entries = [{"releases": list(key), "variants": sets[key]}
                   for key in sorted(changed, key=lambda k: [_vkey(t) for t in k])]
    overlay["variant_sets"] = _upsert(prev.get("variant_sets"), set_entries, ("releases",))
    for top, value in prev.items():
        if top not in overlay:
            overlay[top] = value
    return overlay


def _upsert(existing: Any, new: Sequence[Mapping[str, Any]], id_fields: tuple[str, ...]
            ) -> list[Any]:
    def ident(entry: Mapping[str, Any]) -> tuple[Any, ...]:
        return tuple(tuple(v) if isinstance(v, list) else v
                     for v in (entry.get(f) for f in id_fields))

    out = [e for e in (existing or []) if isinstance(e, dict)]
    for entry in new:
        out = [e for e in out if ident(e) != ident(entry)]
        out.append(dict(entry))
    return out

