"""From live facts to matrix entries: the index snapshot, the diff, and the overlay document.

Pure functions over parsed pages; nothing here touches the network or the disk. The PyPI facts
of a release come from :mod:`torchenv.matrix.live.pypi`, the derivation ``tools/derive_pypi.py``
uses for the embedded ``releases.yaml``.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional

from torchenv.matrix.live.pypi import ReleaseFacts, release_entry
from torchenv.matrix.live.wheels import WheelFile, safe_parse_wheel
from torchenv.matrix.model import PLATFORMS, Matrix, Release, python_sort_key
from torchenv.values import InvalidValue, Platform, TorchVersion, VariantName

if TYPE_CHECKING:
    from torchenv.values import VariantKind

__all__ = [
    "INDEX_SOURCE_ID",
    "PYPI_SOURCE_ID",
    "Diff",
    "IndexSnapshot",
    "LiveSources",
    "PythonChange",
    "build_overlay",
    "diff_matrix",
    "snapshot_from_filenames",
]

INDEX_SOURCE_ID = "torchenv-live-index"
PYPI_SOURCE_ID = "torchenv-live-pypi"


# The index's file names and the overlay document are text; these read a version or a variant
# name of theirs, and order what does not read last.


def _vkey(text: str) -> tuple[int, ...]:
    try:
        return TorchVersion(text).release
    except InvalidValue:
        return (0,)


def _kind(name: str) -> VariantKind | None:
    try:
        return VariantName(name).kind
    except InvalidValue:
        return None


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
    if _kind(wheel.variant) is None:  # e.g. cpu.cxx11.abi
        snap.unknown_variants.setdefault(wheel.variant, set()).add(wheel.version)
        return
    (snap.builds.setdefault(wheel.version, {}).setdefault(wheel.variant, {})
     .setdefault(wheel.platform, set()).add(wheel.python))


@dataclass(frozen=True)
class PythonChange:
    """A release's Python tags on one platform differ between the matrix and the live source.

    ``source`` is ``"pypi"`` (the release's own wheels on PyPI; ``variant`` is None) or
    ``"index"`` (the wheels of ``variant`` on the wheel index).
    """

    torch: str
    platform: str
    source: str
    matrix: tuple[str, ...]
    live: tuple[str, ...]
    variant: Optional[str] = None

    @property
    def added(self) -> list[str]:
        return _tags(set(self.live) - set(self.matrix))

    @property
    def removed(self) -> list[str]:
        return _tags(set(self.matrix) - set(self.live))

    def to_json(self) -> dict[str, Any]:
        return {"torch": self.torch, "variant": self.variant, "platform": self.platform,
                "source": self.source, "added": self.added, "removed": self.removed,
                "python": list(self.live)}

    def line(self) -> str:
        build = f"torch {self.torch}" + (f" {self.variant}" if self.variant else "")
        where = "on PyPI" if self.source == "pypi" else "on the index"
        change = " ".join([*(f"+{t}" for t in self.added), *(f"-{t}" for t in self.removed)])
        return f"~ python {change} for {build} {self.platform} ({where})"


@dataclass
class Diff:
    """Where the live index and PyPI differ from the matrix."""

    new_releases: list[str] = field(default_factory=list)
    # (torch, variant) -> platforms, for variants the matrix does not list for that release
    new_variants: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    # (torch, variant) -> platforms missing from a variant the matrix already lists
    new_platforms: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    # Python tags of releases and variants the matrix has, added or gone
    python_changes: list[PythonChange] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.new_releases or self.new_variants or self.new_platforms
                    or self.python_changes)

    def to_json(self) -> dict[str, Any]:
        return {
            "new_releases": list(self.new_releases),
            "new_variants": [{"torch": t, "variant": v, "platforms": p}
                             for (t, v), p in self.new_variants.items()],
            "new_platforms": [{"torch": t, "variant": v, "platforms": p}
                              for (t, v), p in self.new_platforms.items()],
            "python_changes": [c.to_json() for c in self.python_changes],
        }

    def lines(self) -> list[str]:
        out = [f"+ release {t}" for t in self.new_releases]
        out += [f"+ variant {v} for torch {t} ({', '.join(p)})"
                for (t, v), p in self.new_variants.items()]
        out += [f"+ platforms {', '.join(p)} for torch {t} {v}"
                for (t, v), p in self.new_platforms.items()]
        out += [c.line() for c in self.python_changes]
        return out


def _platform_order(platforms: Iterable[str]) -> list[str]:
    return sorted(set(platforms), key=lambda p: PLATFORMS.index(p) if p in PLATFORMS else 99)


def diff_matrix(matrix: Matrix, torch: IndexSnapshot, *,
                pypi_python: Mapping[str, Mapping[str, Sequence[str]]] | None = None,
                since: TorchVersion | None = None) -> Diff:
    """What the live sources have that the matrix lacks, for torch >= ``since`` (default: the
    oldest release in the matrix; older history is out of scope).

    ``pypi_python`` maps a release to its Python tags per platform on PyPI
    (:func:`torchenv.matrix.live.pypi.python_by_platform`); releases it does not list are not
    compared with PyPI.
    """
    diff = Diff()
    floor = since or min((r.torch for r in matrix.releases), default=TorchVersion("0"))
    known = {str(r.torch): r for r in matrix.releases}
    # the index's versions, read from wheel names (so PEP 440 all), newest first
    versions = sorted(((TorchVersion(v), v) for v in torch.versions), key=lambda p: p[0],
                      reverse=True)
    for value, version in versions:
        if value < floor:
            continue
        release = known.get(version)
        if release is None:
            diff.new_releases.append(version)
            continue
        for name, platforms in sorted(torch.builds.get(version, {}).items()):
            variant = release.variant(VariantName(name))  # the snapshot keeps known names only
            if variant is None:
                diff.new_variants[(version, name)] = _platform_order(platforms)
                continue
            on = {str(p) for p in variant.platforms}
            extra = set(platforms) - on
            if extra:
                diff.new_platforms[(version, name)] = _platform_order(extra)
            for plat in _platform_order(set(platforms) & on):
                _compare(diff, release, plat, "index",
                         release.python_tags(Platform(plat), variant), platforms[plat],
                         variant=name)
    for release in matrix.releases:
        live = (pypi_python or {}).get(str(release.torch))
        if live is None or release.torch < floor:
            continue
        python = {str(p): tags for p, tags in release.python.items()}
        for plat in _platform_order([*python, *live]):
            _compare(diff, release, plat, "pypi", python.get(plat, ()), live.get(plat, ()))
    diff.python_changes.sort(key=lambda c: (
        [-n for n in _vkey(c.torch)], c.source != "pypi", c.variant or "",
        PLATFORMS.index(c.platform) if c.platform in PLATFORMS else 99))
    return diff


def _compare(diff: Diff, release: Release, platform: str, source: str, matrix: Sequence[str],
             live: Iterable[str], variant: str | None = None) -> None:
    now = tuple(_tags(live))
    if tuple(_tags(matrix)) != now:
        diff.python_changes.append(PythonChange(
            torch=str(release.torch), platform=platform, source=source, matrix=tuple(matrix),
            live=now, variant=variant))


# ---------------------------------------------------------------------------------------------
# the overlay document


@dataclass(frozen=True)
class LiveSources:
    """Where the live facts came from: the index and PyPI roots read, whether each is the
    publisher's own (a mirror is a copy: it corroborates, it cannot confirm), and when."""

    index_base: str
    pypi_base: str
    index_primary: bool
    pypi_primary: bool
    date: str
    generated_by: str

    def documents(self) -> list[dict[str, Any]]:
        """The overlay's ``sources`` entries."""
        return [
            {"id": INDEX_SOURCE_ID, "title": f"PyTorch wheel index read by {self.generated_by} "
             f"on {self.date}", "url": f"{self.index_base}/torch/",
             "primary": self.index_primary},
            {"id": PYPI_SOURCE_ID, "title": f"PyPI JSON API read by {self.generated_by} on "
             f"{self.date}", "url": f"{self.pypi_base}/pypi/torch/json",
             "primary": self.pypi_primary},
        ]


def _new_variant(name: str, platforms: Mapping[str, set[str]], release_python: Mapping[str, Any],
                 live: LiveSources) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": name, "platforms": _platform_order(platforms)}
    python = {p: _tags(tags) for p, tags in platforms.items()
              if list(release_python.get(p) or ()) != _tags(tags)}
    if python:
        entry["python"] = {p: python[p] for p in _platform_order(python)}
    note = [f"Found on the wheel index {live.index_base} by {live.generated_by} on {live.date}."]
    if not live.index_primary:
        note.append(_MIRROR_NOTE.format(base=live.index_base))
    if _kind(name) == "cuda":
        entry.update(arch_list="unknown", cudnn=None, nccl=None)
        note.append(_ARCH_NOTE)
    elif _kind(name) == "rocm":
        note.append("Its gfx targets are not in rocm.yaml; until they are, no AMD GPU is "
                    "matched to it.")
    entry["index"] = "confirmed" if live.index_primary else "unknown"
    entry["sources"] = [INDEX_SOURCE_ID]
    entry["note"] = " ".join(note)
    return entry


_ARCH_NOTE = ("Arch list unknown: only the index's file names were read, and a wheel's name does "
              "not carry the GPU targets it was compiled for (torch.cuda.get_arch_list() in "
              "that build, or the arch flags compiled into its libtorch, would show them).")
_MIRROR_NOTE = ("Index entry unknown: {base} is a mirror, not download.pytorch.org, so it "
                "corroborates the build but cannot confirm it.")


def _sets_of(documents: Mapping[str, Any]) -> dict[tuple[str, ...], list[dict[str, Any]]]:
    sets: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for vs in documents["variants.yaml"].get("variant_sets") or []:
        key = tuple(str(t) for t in vs.get("releases") or [])
        sets[key] = [copy.deepcopy(v) for v in vs.get("variants") or []]
    return sets


def _append_note(entry: dict[str, Any], sentence: str, source: str) -> None:
    note = str(entry.get("note") or "")
    entry["note"] = f"{note} {sentence}" if note else sentence
    if source not in (entry.get("sources") or []):
        entry["sources"] = [*(entry.get("sources") or []), source]


def build_overlay(
    *,
    documents: Mapping[str, Any],
    previous: Mapping[str, Any] | None,
    diff: Diff,
    torch: IndexSnapshot,
    facts: Mapping[str, ReleaseFacts],
    live: LiveSources,
) -> dict[str, Any]:
    """The overlay: ``previous`` with entries for ``diff`` added or replacing same-key ones.

    ``documents`` are the embedded documents merged with ``previous``; new releases missing
    from ``facts`` (not on PyPI yet) are left out. A release whose Python tags changed on PyPI
    is written whole with the new tags. Variants changed in a release covered by a shared
    variant set split that set: the untouched variants stay shared, the changed ones move to a
    set of their own per release, so no release gets a variant twice.
    """
    draft = _OverlayDraft(documents, torch, live)
    draft.add_releases(diff.new_releases, facts)
    draft.apply_pypi_python(diff.python_changes)
    draft.add_variants(diff.new_variants)
    draft.add_platforms(diff.new_platforms)
    draft.reconcile_index_python(diff.python_changes)
    draft.split_shared_sets()
    return draft.document(previous)


class _OverlayDraft:
    """The overlay of :func:`build_overlay` while it is written: release entries, the variant
    sets (by their tuple of releases) and which of them changed, and the variant entries
    changed per release."""

    def __init__(self, documents: Mapping[str, Any], torch: IndexSnapshot,
                 live: LiveSources) -> None:
        self.torch = torch
        self.live = live
        self.release_docs = {str(r.get("torch")): r for r in
                             documents["releases.yaml"].get("releases") or []}
        self.sets = _sets_of(documents)
        self.changed: set[tuple[str, ...]] = set()
        self.releases: dict[str, dict[str, Any]] = {}  # torch -> entry written to the overlay
        self.touched: dict[str, dict[str, dict[str, Any]]] = {}  # torch -> name -> new entry

    def add_releases(self, versions: Iterable[str], facts: Mapping[str, ReleaseFacts]) -> None:
        """New releases (those PyPI has facts for), each with a variant set of its builds."""
        live = self.live
        for version in versions:
            rel = facts.get(version)
            if rel is None:
                continue
            added = f"Added by {live.generated_by} on {live.date} from the live index and PyPI" + (
                f"; Requires-Python {rel.requires_python}." if rel.requires_python else ".")
            entry = release_entry(
                rel, sources=[PYPI_SOURCE_ID, INDEX_SOURCE_ID], extra_notes=[added],
                conda={"pytorch_channel": False if _vkey(version) > (2, 5) else "unknown",
                       "conda_forge": "unknown"})
            self.releases[version] = entry
            variants = [_new_variant(name, plats, entry["python"], live)
                        for name, plats in sorted(self.torch.builds.get(version, {}).items())]
            if variants:
                self.sets[(version,)] = variants
                self.changed.add((version,))

    def apply_pypi_python(self, changes: Iterable[PythonChange]) -> None:
        """A release's Python tags on PyPI, written into its whole entry."""
        for change in changes:
            if change.source != "pypi":
                continue
            entry = (self.releases.get(change.torch)
                     or copy.deepcopy(self.release_docs[change.torch]))
            python = dict(entry.get("python") or {})
            if change.live:
                python[change.platform] = list(change.live)
            else:  # no wheel for this platform any more
                python.pop(change.platform, None)
                for by_platform in ("manylinux", "pypi_default"):
                    entry[by_platform] = {p: v for p, v in (entry.get(by_platform) or {}).items()
                                          if p != change.platform}
            entry["python"] = {p: python[p] for p in _platform_order(python)}
            _append_note(entry, f"Python tags on PyPI for {change.platform} read by "
                         f"{self.live.generated_by} on {self.live.date} "
                         f"({_change_words(change)}).", PYPI_SOURCE_ID)
            self.releases[change.torch] = entry

    def release_python(self, version: str) -> Mapping[str, Any]:
        doc = self.releases.get(version) or self.release_docs.get(version) or {}
        return doc.get("python") or {}

    def current(self, version: str, name: str) -> dict[str, Any] | None:
        """The variant entry as the overlay has it so far (a copy of the embedded one)."""
        if name in self.touched.get(version, {}):
            return self.touched[version][name]
        for key, variants in self.sets.items():
            if version in key:
                for v in variants:
                    if v.get("name") == name:
                        return copy.deepcopy(v)
        return None

    def set_python(self, entry: dict[str, Any], version: str, platform: str,
                   tags: Iterable[str]) -> None:
        """A variant's own Python tags on ``platform``: none where its release's match."""
        python = dict(entry.get("python") or {})
        wanted = _tags(tags)
        if list(self.release_python(version).get(platform) or ()) == wanted:
            python.pop(platform, None)
        else:
            python[platform] = wanted
        if python:
            entry["python"] = {p: python[p] for p in _platform_order(python)}
        else:
            entry.pop("python", None)

    def add_variants(self, new_variants: Mapping[tuple[str, str], list[str]]) -> None:
        for (version, name), plats in new_variants.items():
            builds = {p: self.torch.builds[version][name][p] for p in plats}
            self.touched.setdefault(version, {})[name] = _new_variant(
                name, builds, self.release_python(version), self.live)

    def add_platforms(self, new_platforms: Mapping[tuple[str, str], list[str]]) -> None:
        """Platforms a listed variant gained; a CUDA variant's arch list there is unknown."""
        for (version, name), plats in new_platforms.items():
            entry = self.current(version, name)
            if entry is None:
                continue
            entry["platforms"] = _platform_order([*entry.get("platforms", []), *plats])
            for plat in plats:
                self.set_python(entry, version, plat, self.torch.builds[version][name][plat])
            sentence = f"Platforms {', '.join(plats)} found on the wheel index on {self.live.date}."
            if _kind(name) == "cuda":
                by_plat = dict(entry.get("arch_list_by_platform") or {})
                by_plat.update({p: "unknown" for p in plats if p not in by_plat})
                entry["arch_list_by_platform"] = {p: by_plat[p] for p in _platform_order(by_plat)}
                sentence += f" Their arch list is unknown: {_ARCH_NOTE.split(': ', 1)[1]}"
            _append_note(entry, sentence, INDEX_SOURCE_ID)
            self.touched.setdefault(version, {})[name] = entry

    def reconcile_index_python(self, changes: Sequence[PythonChange]) -> None:
        """Each variant's tags on the index, where they differ from the matrix or where its
        release's PyPI tags (which a variant without its own list inherits) changed."""
        builds = self.torch.builds
        reconcile = {(c.torch, c.variant, c.platform) for c in changes
                     if c.source == "index" and c.variant is not None}
        reconcile |= {(c.torch, name, c.platform) for c in changes if c.source == "pypi"
                      for name, plats in builds.get(c.torch, {}).items() if c.platform in plats}
        for version, name, plat in sorted(reconcile):
            variant = self.current(version, name)
            if variant is None or plat not in (variant.get("platforms") or ()):
                continue
            own = copy.deepcopy(variant.get("python"))
            before = tuple((own or {}).get(plat)
                           or (self.release_docs.get(version, {}).get("python") or {}).get(plat)
                           or ())
            live_tags = _tags(builds[version][name][plat])
            self.set_python(variant, version, plat, live_tags)
            if variant.get("python") == own:
                continue
            change = PythonChange(torch=version, platform=plat, source="index", matrix=before,
                                  live=tuple(live_tags), variant=name)
            words = _change_words(change)
            _append_note(variant, f"Python tags on the wheel index for {plat} read on "
                         f"{self.live.date}: {', '.join(live_tags)}"
                         + (f" ({words})." if words else "."), INDEX_SOURCE_ID)
            self.touched.setdefault(version, {})[name] = variant

    def split_shared_sets(self) -> None:
        """Move the changed variants of each release out of the sets it shares with others."""
        sets = self.sets
        for version, variants_by_name in self.touched.items():
            for shared in [k for k in sets if version in k]:
                kept = [v for v in sets[shared] if v.get("name") not in variants_by_name]
                if len(kept) == len(sets[shared]):
                    continue
                moved = [v for v in sets[shared] if v.get("name") in variants_by_name]
                sets[shared] = kept
                self.changed.add(shared)
                for other in shared:  # siblings keep the moved variants unchanged, in their own set
                    if other != version:
                        sets.setdefault((other,), []).extend(copy.deepcopy(moved))
                        self.changed.add((other,))
            own = sets.setdefault((version,), [])
            own[:] = [v for v in own if v.get("name") not in variants_by_name]
            own.extend(variants_by_name[n] for n in sorted(variants_by_name))
            self.changed.add((version,))

    def document(self, previous: Mapping[str, Any] | None) -> dict[str, Any]:
        """The overlay: ``previous`` with this draft's sources, releases and sets upserted."""
        overlay: dict[str, Any] = {
            "schema_version": 1,
            "matrix_version": self.live.date,
            "generated_by": self.live.generated_by,
        }
        prev = dict(previous or {})
        overlay["sources"] = _upsert(prev.get("sources"), self.live.documents(), ("id",))
        overlay["releases"] = sorted(_upsert(prev.get("releases"), list(self.releases.values()),
                                             ("torch",)),
                                     key=lambda r: _vkey(str(r.get("torch"))), reverse=True)
        set_entries = [{"releases": list(key), "variants": self.sets[key]}
                       for key in sorted(self.changed, key=lambda k: [_vkey(t) for t in k])]
        overlay["variant_sets"] = _upsert(prev.get("variant_sets"), set_entries, ("releases",))
        for top, value in prev.items():
            if top not in overlay:
                overlay[top] = value
        return overlay


def _change_words(change: PythonChange) -> str:
    words = []
    if change.added:
        words.append("added " + ", ".join(change.added))
    if change.removed:
        words.append("gone " + ", ".join(change.removed))
    return "; ".join(words)


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
