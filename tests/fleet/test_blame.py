"""Attributing a failed multi-node collective by probes alone and in pairs, over outcomes."""

from __future__ import annotations

from collections.abc import Callable, Collection

from torchenv.fleet.blame import MAX_ROUNDS, Probe, attribute, probe_rounds, round_number


def run(nodes: list[str], works: Callable[[str, str], bool], *,
        broken_alone: Collection[str] = ()) -> tuple[dict[Probe, bool | None], int]:
    """Every round the plan asks for, with ``works`` as the fabric between two nodes and
    ``broken_alone`` the nodes that fail even alone; the outcomes and the rounds run."""
    outcomes: dict[Probe, bool | None] = {}
    rounds = 0
    while probes := probe_rounds(nodes, outcomes):
        assert round_number(outcomes) == rounds
        rounds += 1
        assert len({n for p in probes for n in p}) == sum(map(len, probes)), "a node twice"
        outcomes.update({p: (p[0] not in broken_alone) if len(p) == 1 else works(*p)
                         for p in probes})
    return outcomes, rounds


def test_a_node_that_fails_alone_is_broken_and_its_only_partner_stays_a_suspect() -> None:
    """Two nodes, node-2 with a bad GLOO_SOCKET_IFNAME: it fails even alone; node-1 passes
    alone and has no partner left, so it is unresolved (a suspect, not broken)."""
    outcomes, rounds = run(["node-1", "node-2"], lambda a, b: False, broken_alone={"node-2"})
    found = attribute(["node-1", "node-2"], outcomes)
    assert found.broken == ("node-2",) and found.unresolved == ("node-1",)
    assert found.evidence == {"node-2": ("node-2",)} and rounds == 1


def test_one_bad_node_of_four_is_named_in_three_rounds() -> None:
    nodes = ["n1", "n2", "n3", "n4"]
    outcomes, rounds = run(nodes, lambda a, b: "n3" not in (a, b))
    found = attribute(nodes, outcomes)
    assert found.broken == ("n3",) and found.cleared == ("n1", "n2", "n4")
    assert not found.unresolved and rounds == 3
    # each verdict names its probe: n3 failed with a cleared partner, n4 passed with n2
    assert "n3" in found.evidence["n3"] and set(found.evidence["n3"]) - {"n3"} <= {"n1", "n4"}
    assert found.evidence["n4"] == ("n4", "n2")


def test_an_odd_node_out_is_probed_with_a_reference() -> None:
    nodes = ["n1", "n2", "n3"]
    outcomes, rounds = run(nodes, lambda a, b: "n3" not in (a, b))
    assert attribute(nodes, outcomes).broken == ("n3",) and rounds == 3


def test_a_fabric_wide_fault_leaves_every_node_unresolved_within_the_cap() -> None:
    nodes = [f"n{i}" for i in range(1, 7)]
    outcomes, rounds = run(nodes, lambda a, b: False)
    found = attribute(nodes, outcomes)
    assert found.unresolved == tuple(nodes) and not found.broken and rounds == 3


def test_two_nodes_cannot_be_told_apart_by_pairs() -> None:
    """Both pass alone, their pair fails: either may be at fault; nothing is blamed."""
    outcomes, rounds = run(["n1", "n2"], lambda a, b: False)
    found = attribute(["n1", "n2"], outcomes)
    assert found.unresolved == ("n1", "n2") and not found.broken and rounds == 2


def test_a_probe_that_did_not_finish_decides_nothing() -> None:
    outcomes = {("n1",): True, ("n2",): None}
    found = attribute(["n1", "n2"], outcomes)
    assert found.unresolved == ("n1", "n2") and not found.broken
    assert probe_rounds(["n1", "n2"], outcomes) == []  # one candidate: no pair to probe


def test_rounds_are_capped() -> None:
    nodes = [f"n{i}" for i in range(1, 9)]
    bad = {"n2", "n3", "n5", "n8"}
    outcomes, rounds = run(nodes, lambda a, b: not bad & {a, b})
    assert rounds <= 1 + MAX_ROUNDS
    found = attribute(nodes, outcomes)
    assert set(found.broken) <= bad and not set(found.cleared) & bad
