"""Attributing a failed multi-node collective by pairwise probes, over recorded outcomes."""

from __future__ import annotations

from collections.abc import Callable

from torchenv.fleet.blame import Pair, attribute, probe_rounds


def run(nodes: list[str], works: Callable[[str, str], bool]) -> tuple[dict[Pair, bool], int]:
    """Every round the plan asks for, with ``works`` as the fabric; the outcomes and rounds."""
    outcomes: dict[Pair, bool] = {}
    rounds = 0
    while pairs := probe_rounds(nodes, outcomes):
        rounds += 1
        assert len({n for p in pairs for n in p}) == 2 * len(pairs), "a node twice in a round"
        outcomes.update({p: works(*p) for p in pairs})
    return outcomes, rounds


def test_one_bad_node_of_four_is_named_in_two_rounds() -> None:
    nodes = ["n1", "n2", "n3", "n4"]
    outcomes, rounds = run(nodes, lambda a, b: "n3" not in (a, b))
    found = attribute(nodes, outcomes)
    assert found.broken == ("n3",) and found.cleared == ("n1", "n2", "n4")
    assert not found.unresolved and rounds == 2


def test_an_odd_node_out_is_probed_with_a_reference() -> None:
    nodes = ["n1", "n2", "n3"]
    outcomes, rounds = run(nodes, lambda a, b: "n3" not in (a, b))
    assert attribute(nodes, outcomes).broken == ("n3",) and rounds == 2


def test_a_fabric_wide_fault_leaves_every_node_unresolved_within_the_cap() -> None:
    nodes = [f"n{i}" for i in range(1, 7)]
    outcomes, rounds = run(nodes, lambda a, b: False)
    found = attribute(nodes, outcomes)
    assert found.unresolved == tuple(nodes) and not found.broken and rounds == 2


def test_two_nodes_cannot_be_told_apart_by_pairs() -> None:
    """One pair, failed: either node may be at fault; local checks decide, nothing is blamed."""
    outcomes, rounds = run(["n1", "n2"], lambda a, b: False)
    found = attribute(["n1", "n2"], outcomes)
    assert found.unresolved == ("n1", "n2") and not found.broken and rounds == 1


def test_rounds_are_capped() -> None:
    nodes = [f"n{i}" for i in range(1, 9)]
    bad = {"n2", "n3", "n5", "n8"}
    outcomes, rounds = run(nodes, lambda a, b: not bad & {a, b})
    assert rounds <= 3
    found = attribute(nodes, outcomes)
    assert set(found.broken) <= bad and not set(found.cleared) & bad
