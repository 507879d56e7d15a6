"""Every inference rule replayed against the confirmed facts of the embedded data.

A rule may be used only if it never mispredicts a confirmed fact: each confirmed list is hidden
in turn, the rule is asked about it from the other confirmed facts alone, and whatever it says
must hold of the hidden list. Each test also counts its predictions, so a rule that never fires
cannot pass by saying nothing.
"""

from __future__ import annotations

from dataclasses import replace

from torchenv.matrix.inference import (
    LINUX_X86_64,
    WINDOWS,
    FamilyFact,
    chains,
    excluded_by_family,
    family,
    family_includes,
    infer_in_chain,
    infer_ptx_in_chain,
    list_excludes,
    list_includes,
    windows_covers_linux,
)
from torchenv.matrix.model import ArchFact, Matrix
from torchenv.values import ArchEntry, ComputeCapability

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
    return fact if fact.ptx == "confirmed" else replace(fact, ptx="unknown")


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
            hidden = [*facts[:pos], replace(fact, ptx="unknown"), *facts[pos + 1:]]
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


def _members_without(members: tuple[FamilyFact, ...], hidden: ArchFact
                     ) -> tuple[FamilyFact, ...]:
    """The family with one list (shared by patch releases) hidden and only confirmed facts."""
    return tuple(FamilyFact(m.torch, UNKNOWN if m.fact is hidden
                            else _confirmed_only(m.fact) or UNKNOWN) for m in members)


def test_exclusion_by_family_replayed_on_every_confirmed_list(matrix: Matrix) -> None:
    """``excluded-by-family`` never leaves out a GPU that the hidden list runs, natively or
    through PTX (where its PTX entry is not confirmed, any entry at or below the GPU counts as
    possibly carrying PTX, and such a prediction is counted as unsettled, not as passed)."""
    predicted = unsettled = 0
    for (name, plat), chain in chains(matrix.releases).items():
        members = family(matrix.releases, name, plat)
        for torch, v in chain:
            fact = v.arch_facts.get(plat)
            if fact is None or fact.sass != "confirmed":
                continue
            others = _members_without(members, fact)
            for cc in CAPABILITIES:
                if excluded_by_family(cc, torch, others) is None:
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
    from torchenv.values import TorchVersion

    def member(torch: str, *entries: str) -> FamilyFact:
        return FamilyFact(TorchVersion(torch),
                          ArchFact(tuple(map(ArchEntry, entries)), "confirmed", "confirmed"))

    old, new = member("2.5.0", "3.7", "5.0"), member("2.9.0", "5.0", "6.0")
    volta = ComputeCapability("7.0")
    kepler = ComputeCapability("3.5")
    between = TorchVersion("2.7.0")
    # both sides leave 7.0 out: so does the list between
    assert excluded_by_family(volta, between, (old, new)) == (old, new)
    # one side only (no newer confirmed list): only a GPU older than every entry is left out
    assert excluded_by_family(kepler, between, (old,)) == (old,)
    assert excluded_by_family(volta, between, (old,)) is None
    # the newer side alone never excludes: a target can come back (Volta in 2.8 cu128)
    assert excluded_by_family(kepler, between, (new,)) is None
    # PTX reaches newer GPUs: a list with 6.0+PTX does not leave 7.0 out
    ptx = member("2.9.0", "5.0", "6.0+PTX")
    assert excluded_by_family(volta, between, (old, ptx)) is None
    # the ranking hint
    assert family_includes(ComputeCapability("5.2"), between, (old, new)) is True
    assert family_includes(volta, between, (old, new)) is False
    assert family_includes(ComputeCapability("6.1"), between, (old, new)) is None
    assert family_includes(volta, between, ()) is None
