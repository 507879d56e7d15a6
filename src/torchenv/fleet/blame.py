"""Which node breaks a multi-node collective: pairwise probes, and their attribution.

When a collective across all nodes fails, every rank fails with it, so membership names every
node. Each node's local checks still decide its own verdict; the collective failure is
attributed by follow-up probes: two-node collectives between nodes that passed locally.

:func:`probe_rounds` plans them, :func:`attribute` reads their outcomes. Round 1 pairs the
nodes off (1-2, 3-4, ...), every pair at once. A pair that passes clears both nodes. Each node
of a failed pair is then probed with a cleared node (a reference), as many at once as there are
references; a node that fails with a reference breaks the fabric, one that passes is cleared.
Without any reference after round 1 (every pair failed: a fabric-wide fault, or more bad nodes
than good), round 2 pairs the suspects again, shifted by one, so that a good node meets another
partner; if that clears none, nothing more can be learned by pairs and the suspects stay
unresolved. Rounds are capped (``max_rounds``), each costing at most one probe timeout, so the
whole follow-up costs at most ``max_rounds × timeout``.

This module is pure: the probes themselves are run by the scheduler (one two-node step per
pair); their outcomes are handed in as ``{(a, b): passed}``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

__all__ = ["Attribution", "attribute", "probe_rounds"]

Pair = tuple[str, str]


@dataclass(frozen=True)
class Attribution:
    """``broken``: nodes that failed with a cleared partner; ``cleared``: nodes in a passing
    pair; ``unresolved``: nodes no probe could decide."""

    broken: tuple[str, ...]
    cleared: tuple[str, ...]
    unresolved: tuple[str, ...]


def _pairs(nodes: Sequence[str]) -> list[Pair]:
    return [(nodes[i], nodes[i + 1]) for i in range(0, len(nodes) - 1, 2)]


def probe_rounds(nodes: Sequence[str], outcomes: Mapping[Pair, bool], *, max_rounds: int = 3
                 ) -> list[Pair]:
    """The pairs to probe next, given the ``outcomes`` so far (empty: the first round); [] when
    the attribution is settled or ``max_rounds`` rounds have run. Every pair of one round can
    run at once: no node is in two of them."""
    nodes = sorted(dict.fromkeys(nodes))
    done = _rounds_run(outcomes)
    if done >= max_rounds or len(nodes) < 2:
        return []
    if not outcomes:  # an odd node out waits for a reference
        return _pairs(nodes)
    state = attribute(nodes, outcomes)
    suspects = list(state.unresolved)
    if not suspects:
        return []
    references = list(state.cleared)
    if references:
        return list(zip(suspects, references))
    if done == 1 and len(suspects) >= 3:  # no reference yet: new partners for everyone
        return _pairs(suspects[1:] + suspects[:1])
    return []


def _rounds_run(outcomes: Mapping[Pair, bool]) -> int:
    """How many rounds ``outcomes`` hold (a node appears once per round)."""
    seen: dict[str, int] = {}
    for a, b in outcomes:
        seen[a] = seen.get(a, 0) + 1
        seen[b] = seen.get(b, 0) + 1
    return max(seen.values(), default=0)


def attribute(nodes: Sequence[str], outcomes: Mapping[Pair, bool]) -> Attribution:
    """What the probe ``outcomes`` say about ``nodes``: a node in any passing pair is cleared;
    a node that failed with a cleared partner breaks the fabric; the rest are unresolved."""
    cleared = {n for pair, ok in outcomes.items() if ok for n in pair}
    broken = set()
    for (a, b), ok in outcomes.items():
        if ok:
            continue
        for node, partner in ((a, b), (b, a)):
            if partner in cleared and node not in cleared:
                broken.add(node)
    unresolved = [n for n in nodes if n not in cleared and n not in broken]
    return Attribution(broken=tuple(sorted(broken)), cleared=tuple(sorted(cleared)),
                       unresolved=tuple(sorted(unresolved)))
