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

``adjacent-releases-agree`` and ``unchanged-between-releases``
    :func:`infer_from_adjacent_releases`: a variant's unknown arch list on a platform takes the
    list of the same variant on the same platform when the nearest older and the nearest newer
    release that confirm that variant's list there confirm identical lists: a list unchanged
    between two releases is the list of every release between them. The rule is called
    ``adjacent-releases-agree`` when those two releases are the direct neighbours, and
    ``unchanged-between-releases`` when unknown lists lie between them too. SASS and PTX are
    judged apart: an unknown PTX entry of a list whose SASS is known is inferred the same way.

``release-ptx-policy``
    :func:`infer_ptx_from_policy`: where a confirmed release-wheel policy says the release wheels of
    some releases and CUDA versions carry no PTX, a list whose SASS entries are confirmed but whose
    PTX entry is unknown is inferred to have no PTX.

``toolkit-bounds``
    :func:`toolkit_excludes`: whatever an unknown list holds, a CUDA toolkit cannot emit code for
    an architecture newer than the newest it knows, and no build carries SASS for one older than
    the oldest it still compiles for (PTX never runs on an older GPU), so such a GPU is out.

Three rules infer facts other than arch lists:

``index-every-earlier-release``
    :func:`index_in_every_earlier_release`: a build of a kind that carries no version (``cpu``,
    ``xpu``) that the index has had for a platform in every release since its first there is on
    the index for that platform in the next release too. Builds named for a CUDA or ROCm version
    are left out: the replay shows they are dropped (cu117 after 2.0, rocm6.0 after 2.4).

``index-in-release-row``
    :func:`index_row_for`: the maintainers' row for a release (its go-live change of the binary
    build matrix, or its RELEASE.md compatibility row) names the build, so the index has it.

``companion-by-statement``
    :func:`infer_companions`: a torchvision or torchaudio release whose maintainers state that it
    works with every torch from some release on ("compatible with PyTorch 2.11 and later") pairs
    with each release in that range whose own pairing the data does not confirm; the newest
    such companion is taken.

Two rules answer for one GPU at a time, when the resolver meets an unknown list (they cannot be
written as a list):

``windows-covers-linux``
    :func:`windows_covers_linux`: in every release and variant whose Windows and Linux x86_64
    lists are both confirmed, the Windows list runs every GPU the Linux list runs natively (the
    maintainers' support tables from 2.9 on state one row for "Linux x86 and Windows builds").
    So an unknown Windows list runs a GPU natively when the same release and variant's known Linux
    x86_64 list does. It never rejects: Windows lists have held targets Linux lists lacked.

``excluded-by-family``
    :func:`excluded_by_family`: an unknown list leaves a GPU out when the confirmed lists of the
    same variant on the same platform around it all do: the nearest confirmed older and nearest
    confirmed newer lists both leave it out, or, when no newer list is confirmed, the GPU is older
    than every entry of every confirmed older list (a target a variant has dropped, or never had,
    does not come back in a later release of it). It only rejects.

The premise of every rule is replayed against the confirmed facts of the embedded data in
``tests/matrix/test_inference_replay.py``: each confirmed list is hidden in turn, and no rule may
predict anything of it that it does not hold.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, NamedTuple

from torchenv.matrix.model import (
    COMPANIONS,
    ArchFact,
    CompanionStatement,
    Evidence,
    IndexRow,
    Neighbours,
    Pairing,
    Release,
    SameAs,
    ToolkitFloor,
    Variant,
)
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
    "LINUX_X86_64",
    "RULES",
    "UNVERSIONED_KINDS",
    "WINDOWS",
    "IndexRow",
    "PtxPolicy",
    "Reach",
    "RuntimeTable",
    "apply_inference",
    "chains",
    "entry_runs",
    "excluded_by_family",
    "family_includes",
    "index_history",
    "index_in_every_earlier_release",
    "index_row_for",
    "infer_companions",
    "infer_from_adjacent_releases",
    "infer_from_runtime_table",
    "infer_in_chain",
    "infer_index_entries",
    "infer_ptx_between",
    "infer_ptx_from_policy",
    "infer_ptx_in_chain",
    "list_excludes",
    "list_includes",
    "neighbours_in_chain",
    "reach",
    "statement_pairing",
    "toolkit_excludes",
    "windows_covers_linux",
]

RULES: Mapping[str, str] = {
    "runtime-table-in-sync": (
        "the release's Linux build table is kept equal to the runtime table read from its wheels"
    ),
    "adjacent-releases-agree": (
        "the same variant has the same confirmed list in the releases before and after"
    ),
    "unchanged-between-releases": (
        "the nearest older and newer releases that confirm the variant's list confirm the same "
        "list, so the releases between them keep it"
    ),
    "windows-covers-linux": (
        "every confirmed Windows list runs what the same release's Linux x86_64 list runs "
        "natively"
    ),
    "excluded-by-family": (
        "the confirmed lists of the same variant around this release all leave the GPU out"
    ),
    "neighbours-include": (
        "a ranking hint, not evidence: every confirmed list of the same variant in the other "
        "releases runs the GPU"
    ),
    "unchanged-by-statement": (
        "a primary source says the build is an earlier release's build unchanged"
    ),
    "oldest-target": (
        "a primary source says the build carries nothing older than this target (a partial list)"
    ),
    "named-in-list": (
        "a primary source names a target in the build's list whose SASS runs the GPU natively "
        "(a partial list)"
    ),
    "release-ptx-policy": "the release wheels of this release carry no PTX (release policy)",
    "index-every-earlier-release": (
        "the index has had this build (a kind without a version: cpu, xpu) for the platform in "
        "every release since its first there"
    ),
    "index-in-release-row": (
        "the maintainers' row for the release (go-live build matrix or RELEASE.md) names the build"
    ),
    "companion-by-statement": (
        "its maintainers state that this release works with every torch from a release on "
        "(\"X and later\")"
    ),
    "toolkit-bounds": (
        "a CUDA toolkit compiles for nothing newer than its newest or older than its oldest target"
    ),
}


class PtxPolicy(NamedTuple):
    """A confirmed statement that the release wheels of ``releases`` for CUDA ``cuda`` on
    ``platforms`` were built without PTX."""

    releases: tuple[TorchVersion, ...]
    cuda: tuple[CudaVersion, ...]
    platforms: tuple[Platform, ...]
    sources: tuple[str, ...]
    note: str | None = None


class RuntimeTable(NamedTuple):
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
    return ArchFact(tuple(row), sass=Evidence.INFERRED, ptx=Evidence.UNKNOWN,
                    rule="runtime-table-in-sync", sources=table.sources)


def _sass(arch: Sequence[ArchEntry]) -> tuple[ArchEntry, ...]:
    return tuple(a.without_ptx() for a in arch)


def _ptx(arch: Sequence[ArchEntry]) -> tuple[ArchEntry, ...]:
    return tuple(a for a in arch if a.ptx)


def infer_from_adjacent_releases(
    older: ArchFact | None, newer: ArchFact | None, rule: str = "adjacent-releases-agree"
) -> ArchFact | None:
    """Rule ``adjacent-releases-agree`` (or ``unchanged-between-releases``, named by ``rule``) for
    one unknown fact between ``older`` and ``newer``, the nearest releases that confirm the list.

    Both must have a confirmed SASS list and the same SASS entries; the PTX entry is inferred only
    when both PTX entries are confirmed and the same, else it stays unknown. Returns None when the
    rule does not apply.
    """
    if older is None or newer is None:
        return None
    if older.arch_list is None or newer.arch_list is None:
        return None
    if older.sass != Evidence.CONFIRMED or newer.sass != Evidence.CONFIRMED:
        return None
    if _sass(older.arch_list) != _sass(newer.arch_list):
        return None
    ptx_agrees = _ptx_agrees(older, newer)
    arch = older.arch_list if ptx_agrees else _sass(older.arch_list)
    return ArchFact(
        arch,
        sass=Evidence.INFERRED,
        ptx=Evidence.INFERRED if ptx_agrees else Evidence.UNKNOWN,
        rule=rule,
        sources=tuple(dict.fromkeys((*older.sources, *newer.sources))),
    )


def _ptx_agrees(older: ArchFact, newer: ArchFact) -> bool:
    assert older.arch_list is not None
    assert newer.arch_list is not None
    return (older.ptx == Evidence.CONFIRMED and newer.ptx == Evidence.CONFIRMED
            and _ptx(older.arch_list) == _ptx(newer.arch_list))


def infer_ptx_between(fact: ArchFact, older: ArchFact | None, newer: ArchFact | None,
                      rule: str) -> ArchFact | None:
    """The PTX half of ``rule`` for a list whose SASS is known and PTX is not: the nearest older
    and newer lists with confirmed PTX agree on it. None when the rule does not apply."""
    if fact.arch_list is None or fact.ptx != Evidence.UNKNOWN or older is None or newer is None:
        return None
    if older.arch_list is None or newer.arch_list is None or not _ptx_agrees(older, newer):
        return None
    ptx = {a.without_ptx() for a in _ptx(older.arch_list)}
    sass = _sass(fact.arch_list)
    if not ptx <= set(sass):  # a PTX entry of a target this list does not build: no rule
        return None
    return fact._replace(
        arch_list=tuple(ArchEntry(f"{a}+PTX") if a in ptx else a for a in sass),
        ptx=Evidence.INFERRED,
        rule=f"{fact.rule} + {rule}" if fact.rule and fact.rule != rule else rule,
        sources=tuple(dict.fromkeys((*fact.sources, *older.sources, *newer.sources))),
    )


def infer_ptx_from_policy(fact: ArchFact, policy: PtxPolicy | None) -> ArchFact:
    """Rule ``release-ptx-policy``: no PTX in a list whose SASS is known and PTX is not."""
    if policy is None or fact.arch_list is None or fact.sass == Evidence.UNKNOWN:
        return fact
    if fact.ptx != Evidence.UNKNOWN:
        return fact
    return fact._replace(
        arch_list=_sass(fact.arch_list),
        ptx=Evidence.INFERRED,
        rule=f"{fact.rule} + release-ptx-policy" if fact.rule else "release-ptx-policy",
        sources=tuple(dict.fromkeys((*fact.sources, *policy.sources))),
    )


def toolkit_excludes(cc: ComputeCapability, cuda: CudaVersion,
                     floor: ToolkitFloor | None) -> str | None:
    """Rule ``toolkit-bounds``: why CUDA ``cuda`` cannot hold code for compute capability ``cc``
    (``"is newer than anything CUDA 12.6 compiles for (newest sm_90)"``).

    None when the toolkit's known range (``oldest_arch``–``newest_arch`` of cuda.yaml) includes it
    or the range is not known. Suffixes do not matter: a device is its capability's base. A
    device of the newest target's major with a higher minor is in range: that target's SASS
    runs on it (sm_120 on a 12.1 GPU).
    """
    if floor is None:
        return None
    have = cc.base
    if floor.newest_arch and have.major > floor.newest_arch.major:
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
        written = v.arch_facts.get(plat)
        if written is not None and written.partial is not None:
            # what a source says of the list stays with it, and a rule's list that
            # contradicts it is not used
            fact = fact._replace(partial=written.partial)
            if fact.known and not agrees_with_partial(fact):
                return
        updates.setdefault(id(v), {})[plat] = fact
        originals[id(v)] = v

    by_variant = chains(releases)
    _infer_from_statements(releases, by_variant, updates, update)
    _infer_from_neighbours(by_variant, update)
    if tables:
        _infer_from_tables(releases, tables, updates, update)
    if policies:
        _infer_from_policies(releases, policies, updates, update)
    _infer_ptx_from_neighbours(by_variant, updates, update)
    _attach_neighbours(by_variant, updates, update)
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


def chains(releases: Sequence[Release]
           ) -> dict[tuple[VariantName, Platform], list[tuple[TorchVersion, Variant]]]:
    """(variant name, platform) -> [(release, variant)] oldest first, one per distinct entry
    (patches that share a variant entry share its facts), for every CUDA variant."""
    out: dict[tuple[VariantName, Platform], list[tuple[TorchVersion, Variant]]] = {}
    for i in range(len(releases) - 1, -1, -1):
        for v in releases[i].variants:
            if v.kind != "cuda":
                continue
            for plat in v.platforms:
                chain = out.setdefault((v.name, plat), [])
                if not chain or chain[-1][1] is not v:
                    chain.append((releases[i].torch, v))
    return out


def _nearest(facts: Sequence[ArchFact | None], pos: int, step: int,
             wanted: Callable[[ArchFact], bool]) -> tuple[int, ArchFact] | None:
    i = pos + step
    while 0 <= i < len(facts):
        fact = facts[i]
        if fact is not None and wanted(fact):
            return i, fact
        i += step
    return None


def _sass_confirmed(f: ArchFact) -> bool:
    return f.sass == Evidence.CONFIRMED and f.arch_list is not None


def _ptx_confirmed(f: ArchFact) -> bool:
    return f.ptx == Evidence.CONFIRMED and f.arch_list is not None


def infer_in_chain(facts: Sequence[ArchFact | None], pos: int) -> ArchFact | None:
    """Rules ``adjacent-releases-agree`` / ``unchanged-between-releases`` for an unknown SASS
    list at ``pos`` of one variant's facts on one platform, oldest first (None where a release
    gives none); None when the rule does not apply."""
    fact = facts[pos]
    if fact is None or fact.known:
        return None
    older = _nearest(facts, pos, -1, _sass_confirmed)
    newer = _nearest(facts, pos, 1, _sass_confirmed)
    if older is None or newer is None:
        return None
    return infer_from_adjacent_releases(older[1], newer[1], _rule_name(pos, older[0], newer[0]))


def infer_ptx_in_chain(facts: Sequence[ArchFact | None], pos: int) -> ArchFact | None:
    """The PTX half of the same rules for a list at ``pos`` whose SASS is known and PTX is not:
    the nearest lists with confirmed PTX on both sides agree on it."""
    fact = facts[pos]
    if fact is None or not fact.known or fact.ptx != Evidence.UNKNOWN:
        return None
    older = _nearest(facts, pos, -1, _ptx_confirmed)
    newer = _nearest(facts, pos, 1, _ptx_confirmed)
    if older is None or newer is None:
        return None
    return infer_ptx_between(fact, older[1], newer[1], _rule_name(pos, older[0], newer[0]))


def _rule_name(pos: int, older: int, newer: int) -> str:
    direct = older == pos - 1 and newer == pos + 1
    return "adjacent-releases-agree" if direct else "unchanged-between-releases"


_Chains = dict[tuple[VariantName, Platform], list[tuple[TorchVersion, Variant]]]


def infer_same_as(source: ArchFact, statement: SameAs) -> ArchFact | None:
    """Rule ``unchanged-by-statement``: the known list of the release a statement names, for
    the build it calls unchanged; None when that list is not known either."""
    if not source.known:
        return None
    return ArchFact(source.arch_list, sass=Evidence.INFERRED,
                    ptx=Evidence.INFERRED if source.ptx != Evidence.UNKNOWN else Evidence.UNKNOWN,
                    rule="unchanged-by-statement",
                    sources=tuple(dict.fromkeys((*statement.sources, *source.sources))),
                    note=statement.note)


def _infer_from_statements(releases: Sequence[Release], by_variant: _Chains, updates: _Updates,
                           update: Callable[[Variant, Platform, ArchFact], None]) -> None:
    """Rule ``unchanged-by-statement`` over every unknown list of a build with ``same_as``,
    oldest first, so that a statement may name a release whose list a statement gave."""
    by_torch = {r.torch: r for r in releases}
    for (name, plat), chain in by_variant.items():
        for _, v in chain:
            fact = v.arch_facts.get(plat)
            if v.same_as is None or fact is None or fact.known:
                continue
            earlier = by_torch[v.same_as.torch].variant(name)
            assert earlier is not None  # checked when the data was read
            source = updates.get(id(earlier), {}).get(plat) or earlier.arch_facts.get(plat)
            inferred = infer_same_as(source, v.same_as) if source is not None else None
            if inferred is not None:
                update(v, plat, inferred)


def _infer_from_neighbours(by_variant: _Chains,
                           update: Callable[[Variant, Platform, ArchFact], None]) -> None:
    """Rules ``adjacent-releases-agree`` and ``unchanged-between-releases`` over every unknown
    SASS list (``by_variant``: :func:`chains`)."""
    for (_, plat), chain in by_variant.items():
        facts = [v.arch_facts.get(plat) for _, v in chain]
        for pos, (_, v) in enumerate(chain):
            inferred = infer_in_chain(facts, pos)
            if inferred is not None:
                update(v, plat, inferred)


def _infer_ptx_from_neighbours(by_variant: _Chains, updates: _Updates,
                               update: Callable[[Variant, Platform, ArchFact], None]) -> None:
    """The PTX half of those rules over every list whose PTX the rules before left unknown."""
    for (_, plat), chain in by_variant.items():
        facts = [updates.get(id(v), {}).get(plat) or v.arch_facts.get(plat) for _, v in chain]
        for pos, (_, v) in enumerate(chain):
            inferred = infer_ptx_in_chain(facts, pos)
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
                if fact is None or fact.ptx != Evidence.UNKNOWN or not fact.known:
                    continue  # the rule has nothing to say: look no policy up
                policy = _policy_for(policies, rel.torch, v.cuda_version, plat)
                if policy is None:
                    continue
                new = infer_ptx_from_policy(fact, policy)
                if new is not fact:
                    update(v, plat, new)


# --- rules for one GPU against an unknown list ----------------------------------------------


def entry_runs(entry: ArchEntry, cc: ComputeCapability, *, jit_ok: bool) -> bool:
    """Can code compiled for ``entry`` run on a device of compute capability ``cc``?

    SASS runs on the same major with an equal or higher minor; ``a`` targets only on exactly that
    arch; PTX on any device at or above it, but only through the driver's JIT (``jit_ok``). A
    device is its capability's base: the suffix of ``cc`` does not matter.
    """
    major, minor = cc.major, cc.minor
    if entry.suffix == "a":
        if major == entry.major and minor == entry.minor:
            return True
    elif major == entry.major and minor >= entry.minor:
        return True
    return entry.ptx and jit_ok and (major, minor) >= (entry.major, entry.minor)


class Reach(NamedTuple):
    """What :func:`reach` answers: whether a build runs on a GPU (``runs``: None when nobody
    knows) and how sure that is (``evidence``: ``confirmed``, ``inferred`` or ``unknown``).

    ``by_ptx``: it runs only by JIT-compiling PTX, whose nearest architecture is major
    ``ptx_major``. ``rule``: for a list not known whole, the rule of its partial list that
    answered (``oldest-target``, ``named-in-list``)."""

    runs: bool | None
    evidence: Evidence
    by_ptx: bool = False
    ptx_major: int | None = None
    rule: str | None = None


def _weaker(a: Evidence, b: Evidence) -> Evidence:
    return min(Evidence(a), Evidence(b))


def reach(fact: ArchFact, cc: ComputeCapability, *, jit_ok: bool) -> Reach:
    """Does a build compiled for ``fact`` run on a GPU of compute capability ``cc``, and how
    sure are we: the one answer of rule 3 for one GPU.

    A known list runs ``cc`` by SASS (as sure as its SASS) or, with ``jit_ok`` (a driver at the
    toolkit floor), by PTX (as sure as the weaker of its SASS and PTX), else not (as sure as its
    SASS). Of a list not known whole, a partial list still answers: ``cc`` older than its oldest
    target does not run, SASS it names does (both ``confirmed``); otherwise nobody knows.
    """
    arch = fact.arch_list
    if arch is None or fact.sass == Evidence.UNKNOWN:
        if partial_excludes(fact, cc):
            return Reach(False, Evidence.CONFIRMED, rule="oldest-target")
        if fact.partial is not None and list_includes(fact, cc):
            return Reach(True, Evidence.CONFIRMED, rule="named-in-list")
        return Reach(None, Evidence.UNKNOWN)
    if any(entry_runs(e, cc, jit_ok=False) for e in arch):
        return Reach(True, fact.sass)
    jit = [e.major for e in arch if entry_runs(e, cc, jit_ok=jit_ok)]
    if jit:
        return Reach(True, _weaker(fact.sass, fact.ptx), by_ptx=True, ptx_major=max(jit))
    return Reach(False, fact.sass)


def _below(cc: ComputeCapability | ArchEntry, oldest: ArchEntry) -> bool:
    return (cc.major, cc.minor) < (oldest.major, oldest.minor)


def agrees_with_partial(fact: ArchFact) -> bool:
    """A list a rule gives to a fact with a :class:`PartialList` says what the partial list
    says: nothing older than ``oldest``, every ``includes`` entry's SASS."""
    part = fact.partial
    if part is None or fact.arch_list is None:
        return True
    sass = {(e.major, e.minor, e.suffix) for e in fact.arch_list}
    return (not (part.oldest and any(_below(e, part.oldest) for e in fact.arch_list))
            and all((e.major, e.minor, e.suffix) in sass for e in part.includes))


def list_includes(fact: ArchFact, cc: ComputeCapability) -> bool:
    """The list carries SASS that runs ``cc`` natively: a known list, or the entries a partial
    list names."""
    if fact.known and fact.arch_list is not None:
        return any(entry_runs(e, cc, jit_ok=False) for e in fact.arch_list)
    return fact.partial is not None and any(
        entry_runs(e, cc, jit_ok=False) for e in fact.partial.includes)


def partial_excludes(fact: ArchFact, cc: ComputeCapability) -> bool:
    """A partial list leaves ``cc`` out: ``cc`` is older than its oldest target."""
    part = fact.partial
    return part is not None and part.oldest is not None and _below(cc, part.oldest)


def list_excludes(fact: ArchFact, cc: ComputeCapability) -> bool:
    """The list cannot run ``cc`` at all: a known list has no SASS for it and no PTX that could
    reach it (where the PTX entry is unknown, any target at or below ``cc`` might carry PTX); a
    partial list's oldest target is newer than ``cc``."""
    if not fact.known or fact.arch_list is None:
        return partial_excludes(fact, cc)
    if list_includes(fact, cc):
        return False
    below = [e for e in fact.arch_list if (e.major, e.minor) <= (cc.major, cc.minor)]
    if fact.ptx == Evidence.UNKNOWN:
        return not below
    return not any(e.ptx for e in below)


def _older_than_every_entry(fact: ArchFact, cc: ComputeCapability) -> bool:
    if fact.arch_list is None:
        return partial_excludes(fact, cc)
    return all((cc.major, cc.minor) < (e.major, e.minor) for e in fact.arch_list)


def neighbours_in_chain(chain: Sequence[tuple[TorchVersion, ArchFact | None]], pos: int,
                        linux: ArchFact | None = None) -> Neighbours:
    """The :class:`Neighbours` of the fact at ``pos`` of one variant's facts on one platform,
    oldest first: the confirmed lists (whole or partial) before and after it."""
    def confirmed(part: Sequence[tuple[TorchVersion, ArchFact | None]]
                  ) -> tuple[tuple[TorchVersion, ArchFact], ...]:
        return tuple((t, f) for t, f in part if f is not None and (
            (f.sass == Evidence.CONFIRMED and f.arch_list is not None)
            or (f.partial is not None and not f.known)))

    return Neighbours(confirmed(chain[:pos]), confirmed(chain[pos + 1:]),
                      linux if linux is not None and linux.known else None)


def excluded_by_family(cc: ComputeCapability, around: Neighbours | None
                       ) -> tuple[tuple[TorchVersion, ArchFact], ...] | None:
    """Rule ``excluded-by-family`` for a GPU of capability ``cc`` and an unknown list whose
    :class:`Neighbours` are ``around``: the confirmed lists that leave it out, or None when the
    rule does not apply.

    Applies when the nearest confirmed older and newer lists both leave the GPU out, or, with no
    confirmed newer list, when the GPU is older than every entry of every confirmed older list.
    """
    if around is None:
        return None
    older, newer = _speaking(around.older, cc), _speaking(around.newer, cc)
    if not older:
        return None
    if newer:
        pair = (older[-1], newer[0])
        return pair if all(list_excludes(f, cc) for _, f in pair) else None
    if all(_older_than_every_entry(f, cc) for _, f in older):
        return older
    return None


def _speaking(facts: tuple[tuple[TorchVersion, ArchFact], ...], cc: ComputeCapability
              ) -> tuple[tuple[TorchVersion, ArchFact], ...]:
    """The neighbours that say something of ``cc``: every whole list, and the partial lists
    that include or exclude it (one silent about it is passed over, not counted as doubt)."""
    return tuple((t, f) for t, f in facts
                 if f.known or list_includes(f, cc) or partial_excludes(f, cc))


def family_includes(cc: ComputeCapability, around: Neighbours | None) -> bool | None:
    """What the confirmed lists of the other releases of the variant say of ``cc`` (the ranking
    hint ``neighbours-include``): True when all run it natively, False when all leave it out,
    None when they differ or none is confirmed."""
    if around is None:
        return None
    confirmed = [f for _, f in _speaking((*around.older, *around.newer), cc)]
    if confirmed and all(list_includes(f, cc) for f in confirmed):
        return True
    if confirmed and all(list_excludes(f, cc) for f in confirmed):
        return False
    return None


WINDOWS = Platform("win-amd64")
LINUX_X86_64 = Platform("linux-x86_64")


def windows_covers_linux(cc: ComputeCapability, linux: ArchFact | None) -> bool:
    """Rule ``windows-covers-linux``: the Windows build of a release and variant runs ``cc``
    natively because its Linux x86_64 build, whose list is known, does (``linux``: that list,
    as :class:`Neighbours` keeps it)."""
    return linux is not None and list_includes(linux, cc)


def _attach_neighbours(by_variant: _Chains, updates: _Updates,
                       update: Callable[[Variant, Platform, ArchFact], None]) -> None:
    """Every list still unknown after the rules keeps its :class:`Neighbours`."""
    def current(v: Variant, plat: Platform) -> ArchFact | None:
        return updates.get(id(v), {}).get(plat) or v.arch_facts.get(plat)

    for (_, plat), chain in by_variant.items():
        facts = [(torch, current(v, plat)) for torch, v in chain]
        for pos, (_, v) in enumerate(chain):
            fact = facts[pos][1]
            if fact is None or fact.known:
                continue
            linux = (current(v, LINUX_X86_64)
                     if plat == WINDOWS and LINUX_X86_64 in v.platforms else None)
            update(v, plat, fact._replace(neighbours=neighbours_in_chain(facts, pos, linux)))


def describe(fact: ArchFact) -> dict[str, Any]:
    """The JSON form of a fact with its rule's statement."""
    doc = fact.to_json()
    if fact.rule:
        doc["rule_text"] = "; ".join(RULES.get(r, r) for r in fact.rule.split(" + "))
    return doc


# --- index entries ----------------------------------------------------------------------------


UNVERSIONED_KINDS: tuple[str, ...] = ("cpu", "xpu")
"""The kinds of build rule ``index-every-earlier-release`` speaks of: one build per release
whose name carries no toolkit version, so nothing retires it with a toolkit."""

_Entry = tuple[VariantName, Platform]


def index_history(releases: Sequence[Release]
                  ) -> list[tuple[TorchVersion, frozenset[_Entry]]]:
    """Each release (oldest first) with the (build, platform) entries its data confirms on the
    index."""
    out = []
    for rel in sorted(releases, key=lambda r: r.torch):
        out.append((rel.torch, frozenset((v.name, p) for v in rel.variants
                                         if v.index == Evidence.CONFIRMED for p in v.platforms)))
    return out


def index_in_every_earlier_release(entry: _Entry, earlier: Sequence[frozenset[_Entry]],
                                   kinds: Sequence[str] = UNVERSIONED_KINDS) -> bool:
    """Rule ``index-every-earlier-release``: ``entry`` (build, platform) is confirmed in every
    release of ``earlier`` (the confirmed entries of the earlier releases, oldest first) since
    the first that has it, and its build is of one of ``kinds``."""
    if entry[0].kind not in kinds:
        return False
    first = next((i for i, have in enumerate(earlier) if entry in have), None)
    return first is not None and all(entry in have for have in earlier[first:])


def index_row_for(torch: TorchVersion, entry: _Entry,
                  rows: Sequence[IndexRow]) -> IndexRow | None:
    """Rule ``index-in-release-row``: the row of ``torch`` that names ``entry``, if any."""
    for row in rows:
        if torch in row.releases and entry[0] in row.variants and entry[1] in row.platforms:
            return row
    return None


def infer_index_entries(releases: Sequence[Release],
                        rows: Sequence[IndexRow] = ()) -> tuple[Release, ...]:
    """``releases`` with each unknown index entry that a rule infers for every platform of its
    build marked ``inferred``, with the rule and the sources of its premise."""
    history = index_history(releases)
    position = {torch: i for i, (torch, _) in enumerate(history)}
    sources_of: dict[_Entry, tuple[str, ...]] = {}  # the newest confirming entry's sources
    for rel in sorted(releases, key=lambda r: r.torch):
        for v in rel.variants:
            if v.index == Evidence.CONFIRMED:
                for p in v.platforms:
                    sources_of[(v.name, p)] = v.sources
    out = []
    for rel in releases:
        earlier = [have for _, have in history[:position[rel.torch]]]
        variants = tuple(_infer_index(rel.torch, v, earlier, rows, sources_of)
                         if v.index == Evidence.UNKNOWN and v.platforms else v
                         for v in rel.variants)
        changed = any(a is not b for a, b in zip(variants, rel.variants))
        out.append(replace(rel, variants=variants) if changed else rel)
    return tuple(out)


def _infer_index(torch: TorchVersion, v: Variant, earlier: Sequence[frozenset[_Entry]],
                 rows: Sequence[IndexRow],
                 sources_of: Mapping[_Entry, tuple[str, ...]]) -> Variant:
    """One unknown entry through rule ``index-in-release-row``, then
    ``index-every-earlier-release``: ``v`` itself when neither holds on every platform."""
    row_sources: list[str] = []
    for p in v.platforms:
        row = index_row_for(torch, (v.name, p), rows)
        if row is None:
            break
        row_sources += row.sources
    else:
        return replace(v, index=Evidence.INFERRED, index_rule="index-in-release-row",
                       index_sources=tuple(dict.fromkeys(row_sources)))
    if all(index_in_every_earlier_release((v.name, p), earlier) for p in v.platforms):
        premise = tuple(dict.fromkeys(s for p in v.platforms for s in sources_of[(v.name, p)]))
        return replace(v, index=Evidence.INFERRED, index_rule="index-every-earlier-release",
                       index_sources=premise)
    return v


# --- companions -------------------------------------------------------------------------------


def statement_pairing(package: str, torch: TorchVersion, released: str,
                      statements: Sequence[CompanionStatement]) -> Pairing | None:
    """Rule ``companion-by-statement`` for one release (``torch``, out on ``released``): the
    newest ``package`` release out by then whose statement's range holds ``torch``; None when no
    statement does. A companion released later was built in a later release cycle, for that
    cycle's variants: on an older release's indexes it may not exist (torchaudio 2.11.1 came out
    with torch 2.15.0 as a cu132 build, so 2.12-2.14 pair with 2.11.0)."""
    best = None
    for s in statements:
        if s.package == package and s.covers(torch) and s.released <= released \
                and (best is None or s.version > best.version):
            best = s
    if best is None:
        return None
    return Pairing(best.version, "inferred", rule="companion-by-statement",
                   statement=best.statement, sources=best.sources)


def infer_companions(releases: Sequence[Release],
                     statements: Sequence[CompanionStatement]) -> tuple[Release, ...]:
    """``releases`` with rule ``companion-by-statement`` applied to every companion whose
    pairing the data does not confirm (null or ``unknown``); a confirmed pairing is kept."""
    out = []
    for rel in releases:
        pairings = dict(rel.pairings)
        fields: dict[str, Any] = {}
        for package in COMPANIONS:
            if getattr(rel, package) is not None:
                continue
            found = statement_pairing(package, rel.torch, rel.released, statements)
            if found is None:
                continue
            pairings[package] = found
            fields[package] = found.version
        if fields:
            rel = replace(rel, pairings=pairings,
                          unconfirmed=tuple(p for p in rel.unconfirmed if p not in fields),
                          **fields)
        out.append(rel)
    return tuple(out)
