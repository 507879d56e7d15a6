"""Which node breaks a multi-node collective: probes alone and in pairs, and their attribution.

When a collective across all nodes fails, every rank fails with it, so membership names every
node. Each node's local checks still decide its own verdict; the collective failure is
attributed by follow-up probes among the nodes that passed locally (the candidates), a round
at a time, every probe of a round at once (no node is in two of them):

- round 0: each candidate runs the collective alone (its own ranks, no other node). A node
  that fails it breaks any collective it joins (a bad ``GLOO_SOCKET_IFNAME``, NCCL that cannot
  start): it is broken;
- round 1: the nodes that passed alone are paired off (1-2, 3-4, ...). A pair that passes
  clears both nodes;
- then each node of a failed pair is probed with a cleared node (a reference), as many at once
  as there are references; a node that fails with a reference breaks the fabric, one that
  passes is cleared. Without any reference after round 1 (every pair failed: a fabric-wide
  fault, or more bad nodes than good), the suspects are paired again, shifted by one, so that a
  good node meets another partner; if that clears none, pairs can tell nothing more.

Pair rounds are capped (``max_rounds``); each round costs at most one probe's time limit, so
the whole follow-up costs at most ``(1 + max_rounds) × limit``. A node no probe could decide is
``unresolved``: it stays in service as a suspect (two nodes whose only pair failed cannot be
told apart; nor can a node whose only possible partner is broken).

A probe's outcome is True (passed), False (failed) or None (it did not finish, e.g. cut short
by the job's time limit): None decides nothing. This module is pure: the scheduler runs the
probes (:func:`probe_rounds` says which), and :func:`attribute` reads their outcomes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Optional

__all__ = ["MAX_ROUNDS", "Attribution", "Probe", "attribute", "probe_rounds", "round_number"]

Probe = tuple[str, ...]
"""The nodes of one probe: one (alone) or two (a pair), in the order they were planned."""
Outcomes = Mapping[Probe, Optional[bool]]

MAX_ROUNDS = 3
"""Pair rounds at most, after the round of probes alone."""


@dataclass(frozen=True)
class Attribution:
    """``broken``: nodes that failed alone or with a cleared partner; ``cleared``: nodes in a
    passing pair; ``unresolved``: nodes no probe could decide. ``evidence`` maps each broken
    or cleared node to the probe that decided it."""

    broken: tuple[str, ...]
    cleared: tuple[str, ...]
    unresolved: tuple[str, ...]
    evidence: Mapping[str, Probe]


def _pairs(nodes: Sequence[str]) -> list[Probe]:
    return [(nodes[i], nodes[i + 1]) for i in range(0, len(nodes) - 1, 2)]


def _pair_rounds(outcomes: Outcomes) -> int:
    """How many pair rounds ``outcomes`` hold (a node is in one pair per round)."""
    seen: dict[str, int] = {}
    for probe in outcomes:
        if len(probe) == 2:
            for node in probe:
                seen[node] = seen.get(node, 0) + 1
    return max(seen.values(), default=0)


def round_number(outcomes: Outcomes) -> int:
    """The number of the next round: 0 (alone) when nothing ran yet, then 1, 2, ..."""
    if not any(len(p) == 1 for p in outcomes):
        return 0
    return 1 + _pair_rounds(outcomes)


def probe_rounds(nodes: Sequence[str], outcomes: Outcomes, *, max_rounds: int = MAX_ROUNDS
                 ) -> list[Probe]:
    """The probes of the next round among the candidate ``nodes``, given the ``outcomes`` so
    far (empty: round 0); [] when the attribution is settled or the rounds are spent."""
    nodes = sorted(dict.fromkeys(nodes))
    if not nodes:
        return []
    if round_number(outcomes) == 0:
        return [(n,) for n in nodes]
    alone = {p[0]: ok for p, ok in outcomes.items() if len(p) == 1}
    candidates = [n for n in nodes if alone.get(n) is True]
    done = _pair_rounds(outcomes)
    if done >= max_rounds or len(candidates) < 2:
        return []
    if done == 0:  # an odd node out waits for a reference
        return _pairs(candidates)
    state = attribute(nodes, outcomes)
    suspects = [n for n in state.unresolved if n in candidates]
    if not suspects:
        return []
    references = [n for n in state.cleared if n in candidates]
    if references:
        return list(zip(suspects, references))
    if done == 1 and len(suspects) >= 3:  # no reference yet: new partners for everyone
        return _pairs(suspects[1:] + suspects[:1])
    return []


def attribute(nodes: Sequence[str], outcomes: Outcomes) -> Attribution:
    """What the probe ``outcomes`` say about ``nodes``: a node that failed alone is broken; a
    node in any passing pair is cleared; a node that failed with a cleared partner is broken;
    the rest are unresolved."""
    evidence: dict[str, Probe] = {}
    broken: set[str] = set()
    for probe, ok in outcomes.items():
        if len(probe) == 1 and ok is False:
            broken.add(probe[0])
            evidence[probe[0]] = probe
    cleared: set[str] = set()
    for probe, ok in outcomes.items():
        if len(probe) == 2 and ok is True:
            for node in probe:
                if node not in broken:
                    cleared.add(node)
                    evidence.setdefault(node, probe)
    for probe, ok in outcomes.items():
        if len(probe) != 2 or ok is not False:
            continue
        a, b = probe
        for node, partner in ((a, b), (b, a)):
            if partner in cleared and node not in cleared and node not in broken:
                broken.add(node)
                evidence[node] = probe
    unresolved = [n for n in nodes if n not in cleared and n not in broken]
    return Attribution(broken=tuple(sorted(broken)), cleared=tuple(sorted(cleared)),
                       unresolved=tuple(sorted(unresolved)),
                       evidence={n: evidence[n] for n in sorted(evidence)})
