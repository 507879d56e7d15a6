"""Inference rules: facts derived from confirmed facts by a stated rule, never guessed.

Each rule has an id (what ``matrix show`` and ``resolve --json`` print as ``rule``), a docstring
that states it, and tests in ``tests/matrix/test_inference.py``. The rules run once, when the
matrix is built (:func:`apply_inference`), not per resolve. A fact a rule derives is marked
``inferred`` with the rule's id and the sources of the facts it was derived from; a fact no rule
reaches stays ``unknown``.

Rules:

``runtime-table-in-sync``
    :func:`infer_from_runtime_table`: from torch 2.13 on, the Linux build table of arch lists is
    kept identical to the runtime table the wheel carries (``PYTORCH_RELEASES_CODE_CC``) by a CI
    check in the release's own build script. So a Linux variant's unknown SASS list is that
    release's runtime-table row for its CUDA version and host arch. A row says nothing of whether
    the variant exists (that is the index entry's evidence) nor of PTX (the table has none).

``adjacent-releases-agree``
    :func:`infer_from_adjacent_releases`: a variant's unknown arch list on a platform takes the
    list of the same variant on the same platform when the releases on both sides of it (the
    nearest older and nearest newer release that build that variant there) have confirmed,
    identical lists. SASS and PTX are judged apart.

``release-ptx-policy``
    :func:`infer_ptx_from_policy`: where a confirmed release-wheel policy says the release wheels of
    some releases and CUDA versions carry no PTX, a list whose SASS entries are confirmed but whose
    PTX entry is unknown is inferred to have no PTX.

``toolkit-bounds``
    :func:`toolkit_excludes`: whatever an unknown list holds, a CUDA toolkit cannot emit code for
    an architecture newer than the newest it knows, and no build carries SASS for one older than
    the oldest it still compiles for (PTX never runs on an older GPU), so such a GPU is out.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from torchenv.matrix.model import ArchFact, Release, ToolkitFloor, Variant
from torchenv.values import (
    ArchEntry,
    ComputeCapability,
    CudaVersion,
    Platform,
    TorchVersion,
    VariantName,
)

if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "RULES",
    "PtxPolicy",
    "RuntimeTable",
    "apply_inference",
    "infer_from_adjacent_releases",
    "infer_from_runtime_table",
    "infer_ptx_from_policy",
    "toolkit_excludes",
]

RULES: Mapping[str, str] = {
    "runtime-table-in-sync": (
        "the release's Linux build table is kept equal to the runtime table read from its wheels"
    ),
    "adjacent-releases-agree": (
        "the same variant has the same confirmed list in the releases before and after"
    ),
    "release-ptx-policy": "the release wheels of this release carry no PTX (release policy)",
    "toolkit-bounds": (
        "a CUDA toolkit compiles for nothing newer than its newest or older than its oldest target"
    ),
}


@dataclass(frozen=True)
class PtxPolicy:
    """A confirmed statement that the release wheels of ``releases`` for CUDA ``cuda`` on
    ``platforms`` were built without PTX."""

    releases: tuple[TorchVersion, ...]
    cuda: tuple[CudaVersion, ...]
    platforms: tuple[Platform, ...]
    sources: tuple[str, ...]
    note: str | None = None


@dataclass(frozen=True)
class RuntimeTable:
    """``PYTORCH_RELEASES_CODE_CC`` of ``releases``: CUDA version -> platform -> SASS list.

    ``synced`` is True where the release's build script keeps its build table equal to it.
    """

    releases: tuple[TorchVersion, ...]
    rows: Mapping[CudaVersion, Mapping[Platform, tuple[ArchEntry, ...]]]
    synced: bool
    sources: tuple[str, ...]
    note: str | None = None


def infer_from_runtime_table(cuda: CudaVersion | None, platform: Platform,
                             table: RuntimeTable | None) -> ArchFact | None:
    """Rule ``runtime-table-in-sync`` for one unknown Linux fact; None when it does not apply."""
    if table is None or not table.synced or cuda is None or platform.system != "linux":
        return None
    row = table.rows.get(cuda, {}).get(platform)
    if row is None:
        return None
    return ArchFact(tuple(row), sass="inferred", ptx="unknown", rule="runtime-table-in-sync",
                    sources=table.sources)


def _sass(arch: Sequence[ArchEntry]) -> tuple[ArchEntry, ...]:
    return tuple(a.without_ptx() for a in arch)


def _ptx(arch: Sequence[ArchEntry]) -> tuple[ArchEntry, ...]:
    return tuple(a for a in arch if a.ptx)


def infer_from_adjacent_releases(
    older: ArchFact | None, newer: ArchFact | None
) -> ArchFact | None:
    """Rule ``adjacent-releases-agree`` for one unknown fact between ``older`` and ``newer``.

    Both neighbours must have a confirmed SASS list and the same SASS entries; the PTX entry is
    inferred only when both neighbours' PTX is confirmed and the same, else it stays unknown.
    Returns None when the rule does not apply.
    """
    if older is None or newer is None:
        return None
    if older.arch_list is None or newer.arch_list is None:
        return None
    if older.sass != "confirmed" or newer.sass != "confirmed":
        return None
    if _sass(older.arch_list) != _sass(newer.arch_list):
        return None
    ptx_agrees = (
        older.ptx == "confirmed"
        and newer.ptx == "confirmed"
        and _ptx(older.arch_list) == _ptx(newer.arch_list)
    )
    arch = older.arch_list if ptx_agrees else _sass(older.arch_list)
    return ArchFact(
        arch,
        sass="inferred",
        ptx="inferred" if ptx_agrees else "unknown",
        rule="adjacent-releases-agree",
        sources=tuple(dict.fromkeys((*older.sources, *newer.sources))),
    )


def infer_ptx_from_policy(fact: ArchFact, policy: PtxPolicy | None) -> ArchFact:
    """Rule ``release-ptx-policy``: no PTX in a list whose SASS is known and PTX is not."""
    if policy is None or fact.arch_list is None or fact.sass == "unknown":
        return fact
    if fact.ptx != "unknown":
        return fact
    return replace(
        fact,
        arch_list=_sass(fact.arch_list),
        ptx="inferred",
        rule=f"{fact.rule} + release-ptx-policy" if fact.rule else "release-ptx-policy",
        sources=tuple(dict.fromkeys((*fact.sources, *policy.sources))),
    )


def toolkit_excludes(cc: ComputeCapability, cuda: CudaVersion,
                     floor: ToolkitFloor | None) -> str | None:
    """Rule ``toolkit-bounds``: why CUDA ``cuda`` cannot hold code for compute capability ``cc``
    (``"is newer than anything CUDA 12.6 compiles for (newest sm_90)"``).

    None when the toolkit's known range (``oldest_arch``–``newest_arch`` of cuda.yaml) includes it
    or the range is not known. Suffixes do not matter: a device is its capability's base.
    """
    if floor is None:
        return None
    have = cc.base
    if floor.newest_arch and have > floor.newest_arch.base:
        newest = floor.newest_arch.base.sm
        return f"is newer than anything CUDA {cuda} compiles for (newest {newest})"
    if floor.oldest_arch and have < floor.oldest_arch.base:
        oldest = floor.oldest_arch.base.sm
        return f"is older than anything CUDA {cuda} compiles for (oldest {oldest})"
    return None


def _policy_for(
    policies: Sequence[PtxPolicy], torch: TorchVersion, cuda: CudaVersion | None,
    platform: Platform,
) -> PtxPolicy | None:
    if cuda is None:
        return None
    for p in policies:  # the short lists first: a torch version compares slowest
        if platform in p.platforms and cuda in p.cuda and torch in p.releases:
            return p
    return None


# id(variant) -> platform -> the fact a rule gives it, with the variant itself by id
_Updates = dict[int, dict[Platform, ArchFact]]


def apply_inference(
    releases: Sequence[Release],
    policies: Sequence[PtxPolicy] = (),
    tables: Sequence[RuntimeTable] = (),
) -> tuple[Release, ...]:
    """``releases`` (newest first) with every rule applied to every CUDA variant's arch facts.

    Patches that share a variant entry share its facts, so neighbours are looked for among the
    distinct entries of the same variant name on the same platform, in release order.
    """
    updates: _Updates = {}
    originals: dict[int, Variant] = {}

    def update(v: Variant, plat: Platform, fact: ArchFact) -> None:
        updates.setdefault(id(v), {})[plat] = fact
        originals[id(v)] = v

    _infer_from_neighbours(releases, update)
    if tables:
        _infer_from_tables(releases, tables, updates, update)
    if policies:
        _infer_from_policies(releases, policies, updates, update)
    if not updates:
        return tuple(releases)
    rebuilt: dict[int, Variant] = {
        key: replace(originals[key], arch_facts={**originals[key].arch_facts, **facts})
        for key, facts in updates.items()
    }
    out = []
    for rel in releases:
        if any(id(v) in rebuilt for v in rel.variants):
            rel = replace(rel, variants=tuple(rebuilt.get(id(v), v) for v in rel.variants))
        out.append(rel)
    return tuple(out)


def _infer_from_neighbours(releases: Sequence[Release],
                           update: Callable[[Variant, Platform, ArchFact], None]) -> None:
    """Rule ``adjacent-releases-agree`` over every unknown fact."""
    # (variant name, platform) -> [(release index, variant)] oldest first, one per distinct entry
    chains: dict[tuple[VariantName, Platform], list[tuple[int, Variant]]] = {}
    for i in range(len(releases) - 1, -1, -1):
        for v in releases[i].variants:
            if v.kind != "cuda":
                continue
            for plat in v.platforms:
                chain = chains.setdefault((v.name, plat), [])
                if not chain or chain[-1][1] is not v:
                    chain.append((i, v))
    for (_, plat), chain in chains.items():
        for pos, (_, v) in enumerate(chain):
            fact = v.arch_facts.get(plat)
            if fact is None or fact.known:
                continue
            older = chain[pos - 1][1].arch_facts.get(plat) if pos > 0 else None
            newer = chain[pos + 1][1].arch_facts.get(plat) if pos + 1 < len(chain) else None
            inferred = infer_from_adjacent_releases(older, newer)
            if inferred is not None:
                update(v, plat, inferred)


def _infer_from_tables(releases: Sequence[Release], tables: Sequence[RuntimeTable],
                       updates: _Updates,
                       update: Callable[[Variant, Platform, ArchFact], None]) -> None:
    """Rule ``runtime-table-in-sync`` over the facts still unknown."""
    for rel in releases:
        table = next((t for t in tables if rel.torch in t.releases), None)
        if table is None:
            continue
        for v in rel.variants:
            for plat in v.platforms:
                fact = v.arch_facts.get(plat)
                if fact is None or fact.known or plat in updates.get(id(v), {}):
                    continue
                inferred = infer_from_runtime_table(v.cuda_version, plat, table)
                if inferred is not None:
                    update(v, plat, inferred)


def _infer_from_policies(releases: Sequence[Release], policies: Sequence[PtxPolicy],
                         updates: _Updates,
                         update: Callable[[Variant, Platform, ArchFact], None]) -> None:
    """Rule ``release-ptx-policy`` over every fact, as the rules above left it."""
    for rel in releases:
        for v in rel.variants:
            for plat in v.platforms:
                fact = updates.get(id(v), {}).get(plat) or v.arch_facts.get(plat)
                policy = _policy_for(policies, rel.torch, v.cuda_version, plat)
                if fact is None or policy is None:
                    continue
                new = infer_ptx_from_policy(fact, policy)
                if new is not fact:
                    update(v, plat, new)


def describe(fact: ArchFact) -> dict[str, Any]:
    """The JSON form of a fact with its rule's statement."""
    doc = fact.to_json()
    if fact.rule:
        doc["rule_text"] = "; ".join(RULES.get(r, r) for r in fact.rule.split(" + "))
    return doc
