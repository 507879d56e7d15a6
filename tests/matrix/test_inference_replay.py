"""Every inference rule replayed against the confirmed facts of the embedded data.

A rule may be used only if it never mispredicts a confirmed fact: each confirmed list is hidden
in turn, the rule is asked about it from the other confirmed facts alone, and whatever it says
must hold of the hidden list. Each test also counts its predictions, so a rule that never fires
cannot pass by saying nothing.
"""

from __future__ import annotations

import pytest

from torchenv.matrix.inference import (
    LINUX_X86_64,
    UNVERSIONED_KINDS,
    WINDOWS,
    agrees_with_partial,
    chains,
    excluded_by_family,
    family_includes,
    index_history,
    index_in_every_earlier_release,
    index_row_for,
    infer_in_chain,
    infer_ptx_in_chain,
    list_excludes,
    list_includes,
    neighbours_in_chain,
    windows_covers_linux,
)
from torchenv.matrix.model import ArchFact, Matrix, Neighbours, PartialList
from torchenv.values import ArchEntry, ComputeCapability, Platform, TorchVersion, VariantName

UNKNOWN = ArchFact(None, "unknown", "unknown")

# every capability a GPU of majors 3 to 12 can have, whether or not one was sold
CAPABILITIES = [ComputeCapability.from_parts(major, minor)
                for major in range(3, 13) for minor in range(10)]


def _sass(fact: ArchFact) -> tuple[ArchEntry, ...]:
    assert fact.arch_list is not None
    return tuple(e.without_ptx() for e in fact.arch_list)


def _ptx(fact: ArchFact) -> tuple[ArchEntry, ...]:
    assert fact.arch_list is not None
    return tuple(e for e in fact.arch_list if e.ptx)


def _confirmed_only(fact: ArchFact | None) -> ArchFact | None:
    """What the data confirms of a fact: its SASS and PTX halves when confirmed, else unknown."""
    if fact is None or fact.sass != "confirmed":
        return UNKNOWN
    return fact if fact.ptx == "confirmed" else fact._replace(ptx="unknown")


def test_unchanged_lists_replayed_on_every_confirmed_sass_list(matrix: Matrix) -> None:
    """``adjacent-releases-agree`` / ``unchanged-between-releases``, SASS half."""
    predicted = 0
    for (name, plat), chain in chains(matrix.releases).items():
        facts = [_confirmed_only(v.arch_facts.get(plat)) for _, v in chain]
        for pos, fact in enumerate(facts):
            if fact is None or fact.sass != "confirmed":
                continue
            hidden = [*facts[:pos], UNKNOWN, *facts[pos + 1:]]
            got = infer_in_chain(hidden, pos)
            if got is None:
                continue
            predicted += 1
            assert _sass(got) == _sass(fact), (
                f"{chain[pos][0]} {name} {plat}: {got.rule} predicts {got.arch_list}")
    assert predicted >= 20


def test_unchanged_lists_replayed_on_every_confirmed_ptx_entry(matrix: Matrix) -> None:
    """The PTX half of the same rules."""
    predicted = 0
    for (name, plat), chain in chains(matrix.releases).items():
        facts = [_confirmed_only(v.arch_facts.get(plat)) for _, v in chain]
        for pos, fact in enumerate(facts):
            if fact is None or fact.ptx != "confirmed":
                continue
            hidden = [*facts[:pos], fact._replace(ptx="unknown"), *facts[pos + 1:]]
            got = infer_ptx_in_chain(hidden, pos)
            if got is None:
                continue
            predicted += 1
            assert _ptx(got) == _ptx(fact), (
                f"{chain[pos][0]} {name} {plat}: {got.rule} predicts PTX {_ptx(got)}")
    assert predicted >= 10


def test_windows_runs_what_linux_runs_in_every_confirmed_pair(matrix: Matrix) -> None:
    """The premise of ``windows-covers-linux``: every confirmed Windows list, hidden, is
    predicted by the rule only where it holds."""
    pairs = predicted = 0
    for rel in matrix.releases:
        for v in rel.variants:
            if v.kind != "cuda" or not {WINDOWS, LINUX_X86_64} <= set(v.platforms):
                continue
            linux, win = _confirmed_only(v.arch_fact(LINUX_X86_64)), v.arch_fact(WINDOWS)
            if win.sass != "confirmed" or linux is None or linux.sass != "confirmed":
                continue
            pairs += 1
            for cc in CAPABILITIES:
                if windows_covers_linux(cc, linux):
                    predicted += 1
                    assert list_includes(win, cc), f"{rel.torch} {v.name}: {cc.sm}"
    assert pairs >= 30
    assert predicted >= 300


def test_exclusion_by_family_replayed_on_every_confirmed_list(matrix: Matrix) -> None:
    """``excluded-by-family`` never leaves out a GPU that the hidden list runs, natively or
    through PTX (where its PTX entry is not confirmed, any entry at or below the GPU counts as
    possibly carrying PTX, and such a prediction is counted as unsettled, not as passed)."""
    predicted = unsettled = 0
    for (name, plat), chain in chains(matrix.releases).items():
        facts = [(torch, _confirmed_only(v.arch_facts.get(plat))) for torch, v in chain]
        for pos, (torch, v) in enumerate(chain):
            fact = v.arch_facts.get(plat)
            if fact is None or fact.sass != "confirmed":
                continue
            around = neighbours_in_chain(facts, pos)  # the list itself is not among them
            for cc in CAPABILITIES:
                if excluded_by_family(cc, around) is None:
                    continue
                assert not list_includes(fact, cc), (
                    f"{torch} {name} {plat}: {cc.sm} excluded but in {fact.arch_list}")
                if list_excludes(_confirmed_only(fact) or UNKNOWN, cc):
                    predicted += 1  # else its PTX entry is not confirmed: PTX might reach it
                else:
                    unsettled += 1
    assert predicted >= 200
    assert unsettled < predicted


def test_the_family_rules_on_a_made_up_family() -> None:
    def member(torch: str, *entries: str) -> tuple[TorchVersion, ArchFact]:
        return TorchVersion(torch), ArchFact(tuple(map(ArchEntry, entries)), "confirmed",
                                             "confirmed")

    old, new = member("2.5.0", "3.7", "5.0"), member("2.9.0", "5.0", "6.0")
    volta = ComputeCapability("7.0")
    kepler = ComputeCapability("3.5")
    # both sides leave 7.0 out: so does the list between
    assert excluded_by_family(volta, Neighbours((old,), (new,))) == (old, new)
    # one side only (no newer confirmed list): only a GPU older than every entry is left out
    assert excluded_by_family(kepler, Neighbours((old,))) == (old,)
    assert excluded_by_family(volta, Neighbours((old,))) is None
    # the newer side alone never excludes: a target can come back (Volta in 2.8 cu128)
    assert excluded_by_family(kepler, Neighbours((), (new,))) is None
    assert excluded_by_family(kepler, None) is None
    # PTX reaches newer GPUs: a list with 6.0+PTX does not leave 7.0 out
    ptx = member("2.9.0", "5.0", "6.0+PTX")
    assert excluded_by_family(volta, Neighbours((old,), (ptx,))) is None
    # the ranking hint
    both = Neighbours((old,), (new,))
    assert family_includes(ComputeCapability("5.2"), both) is True
    assert family_includes(volta, both) is False
    assert family_includes(ComputeCapability("6.1"), both) is None
    assert family_includes(volta, Neighbours()) is None


def test_partial_lists_take_part_only_where_they_speak() -> None:
    """A partial list (a source's "nothing below 7.0", "has 7.0") counts as a neighbour for the
    GPUs it speaks of; for the others it is passed over, not taken as doubt."""
    def whole(torch: str, *entries: str) -> tuple[TorchVersion, ArchFact]:
        return TorchVersion(torch), ArchFact(tuple(map(ArchEntry, entries)), "confirmed",
                                             "confirmed")

    partial = (TorchVersion("2.8.0"), ArchFact(None, partial=PartialList(
        ComputeCapability("7.0"), (ArchEntry("7.0"),), ("s",))))
    newer = whole("2.12.0", "7.5", "8.0", "12.0")
    pascal, volta, ampere = (ComputeCapability(c) for c in ("6.1", "7.0", "8.0"))
    assert list_excludes(partial[1], pascal) and not list_includes(partial[1], pascal)
    assert list_includes(partial[1], volta) and not list_excludes(partial[1], volta)
    assert not list_includes(partial[1], ampere) and not list_excludes(partial[1], ampere)
    # both sides leave Pascal out: the partial one by its oldest target
    assert excluded_by_family(pascal, Neighbours((partial,), (newer,))) == (partial, newer)
    # Volta: the partial list has it, the newer one not: no exclusion
    assert excluded_by_family(volta, Neighbours((partial,), (newer,))) is None
    # Ampere: the partial list is silent, so the newer whole list alone is the family's word
    assert family_includes(ampere, Neighbours((partial,), (newer,))) is True
    assert excluded_by_family(ampere, Neighbours((partial,), (newer,))) is None
    # a rule's list that contradicts the partial one is not taken
    assert agrees_with_partial(partial[1]._replace(arch_list=(ArchEntry("7.0"), ArchEntry("8.0"))))
    assert not agrees_with_partial(partial[1]._replace(arch_list=(ArchEntry("6.0"),
                                                                  ArchEntry("7.0"))))
    assert not agrees_with_partial(partial[1]._replace(arch_list=(ArchEntry("7.5"),)))


def test_every_unknown_list_keeps_its_neighbours(matrix: Matrix) -> None:
    """The per-GPU rules read what the build of the matrix kept with each unknown list, so a
    matrix cut down to some releases (the explorer's) answers as the whole one does."""
    seen = 0
    for rel in matrix.releases:
        for v in rel.variants:
            for plat, fact in v.arch_facts.items():
                if fact.known:
                    assert fact.neighbours is None
                    continue
                assert fact.neighbours is not None, f"{rel.torch} {v.name} {plat}"
                seen += 1
                for torch, f in (*fact.neighbours.older, *fact.neighbours.newer):
                    # a whole confirmed list, or a partial one of a list still unknown
                    assert f.sass == "confirmed" or (f.partial is not None and not f.known)
                    assert (torch < rel.torch) is ((torch, f) in fact.neighbours.older)
    assert seen >= 20


@pytest.mark.parametrize(("variant", "platform"), [
    ("cu129", "linux-x86_64"), ("cu129", "win-amd64"), ("cu128", "win-amd64")])
def test_maintainers_partial_statements_about_unknown_lists_hold(
        matrix: Matrix, variant: str, platform: str) -> None:
    """What maintainers said of lists the data does not hold whole: 2.8 kept sm_70 in its CUDA
    12.8 and 12.9 builds (pytorch/pytorch#160269), on Windows too (#158126). The cu129 lists of
    2.12 and later lack sm_70, which is why ``excluded-by-family`` never reasons from newer
    lists alone; these facts must stay unexcluded."""
    rel = matrix.release(TorchVersion("2.8.0"))
    assert rel is not None
    v = rel.variant(VariantName(variant))
    assert v is not None
    fact = v.arch_fact(Platform(platform))
    volta = ComputeCapability("7.0")
    if fact.known:
        assert list_includes(fact, volta)
        return
    assert excluded_by_family(volta, fact.neighbours) is None
    assert fact.neighbours is not None
    if fact.neighbours.linux is not None:
        assert windows_covers_linux(volta, fact.neighbours.linux)


# --- index entries: hide each confirmed entry, ask the rules for it back ----------------------


def _index_replay(matrix: Matrix, kinds: tuple[str, ...]
                  ) -> tuple[int, int, list[str]]:
    """Rule ``index-every-earlier-release`` (for builds of ``kinds``) asked, for every release
    whose index entries are all confirmed, about every (build, platform) an earlier release
    had: (entries it infers back, entries it predicts, its mispredictions)."""
    history = index_history(matrix.releases)
    complete = {r.torch for r in matrix.releases
                if all(v.index == "confirmed" for v in r.variants)}
    back = predicted = 0
    wrong = []
    for pos, (torch, have) in enumerate(history):
        if torch not in complete:
            continue
        earlier = [entries for _, entries in history[:pos]]
        for entry in sorted(set().union(*earlier), key=str) if earlier else []:
            if not index_in_every_earlier_release(entry, earlier, kinds):
                continue
            predicted += 1
            if entry in have:
                back += 1
            else:
                wrong.append(f"{torch} {entry[0]} {entry[1]}")
    return back, predicted, wrong


def test_every_earlier_release_replayed_on_every_confirmed_index_entry(matrix: Matrix) -> None:
    """``index-every-earlier-release``: each release's confirmed entries, hidden, are asked
    for from the releases before it; no prediction may name an entry the release lacks."""
    back, predicted, wrong = _index_replay(matrix, UNVERSIONED_KINDS)
    assert wrong == []
    assert back == predicted
    assert predicted >= 60  # cpu on three platforms and xpu on two, release after release


def test_the_premise_is_narrowed_to_builds_without_a_version(matrix: Matrix) -> None:
    """Taken for every kind of build, the premise mispredicts: a CUDA or ROCm build the index
    had in every release since its first is dropped with its toolkit. That is why the rule
    speaks only of cpu and xpu."""
    _, _, wrong = _index_replay(matrix, ("cpu", "xpu", "cuda", "rocm"))
    assert "2.1.0 cu117 linux-x86_64" in wrong
    assert len(wrong) >= 10


def test_release_rows_replayed_on_every_confirmed_index_entry(matrix: Matrix) -> None:
    """``index-in-release-row``: every build a maintainers' row names for a release is among
    that release's confirmed entries (each entry hidden is named back by its row)."""
    assert matrix.index_rows
    predicted = 0
    for rel in matrix.releases:
        have = {(v.name, p) for v in rel.variants if v.index == "confirmed" for p in v.platforms}
        for row in matrix.index_rows:
            if rel.torch not in row.releases:
                continue
            for name in row.variants:
                for plat in row.platforms:
                    assert index_row_for(rel.torch, (name, plat), matrix.index_rows) is row
                    predicted += 1
                    assert (name, plat) in have, f"{rel.torch} {name} {plat}: {row.sources}"
    assert predicted >= 50


def test_the_index_rules_infer_only_entries_the_data_leaves_unknown(matrix: Matrix) -> None:
    newest = matrix.releases[0]
    by_name = {str(v.name): v for v in newest.variants}
    assert str(newest.torch) == "2.15.0"
    for name in ("cpu", "xpu"):
        v = by_name[name]
        assert (v.index, v.index_rule) == ("inferred", "index-every-earlier-release"), name
        assert v.index_sources  # the confirmations of 2.14.1 it rests on
    # versioned builds no row names stay unknown
    assert by_name["cu134"].index == "unknown"
    assert by_name["rocm7.2"].index == "unknown"
    inferred = [(r.torch, v.name) for r in matrix.releases[1:] for v in r.variants
                if v.index_rule is not None]
    assert inferred == []
