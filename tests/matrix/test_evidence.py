"""One evidence scale for the matrix, the resolver, doctor and the explorer: ordered by strength,
written and read as its text."""

from __future__ import annotations

import json

from torchenv.matrix.built import from_document, to_document
from torchenv.matrix.inference import reach
from torchenv.matrix.model import EVIDENCE_CLASSES, ArchFact, Evidence, Matrix
from torchenv.values import ArchEntry, ComputeCapability


def test_the_classes_are_ordered_by_strength() -> None:
    assert Evidence.UNKNOWN < Evidence.INFERRED < Evidence.CONFIRMED
    assert min(Evidence.CONFIRMED, Evidence.UNKNOWN, Evidence.INFERRED) is Evidence.UNKNOWN
    assert EVIDENCE_CLASSES == (Evidence.CONFIRMED, Evidence.INFERRED, Evidence.UNKNOWN)


def test_a_class_is_its_text() -> None:
    assert Evidence("inferred") is Evidence.INFERRED
    assert Evidence.CONFIRMED == "confirmed" and f"{Evidence.CONFIRMED}" == "confirmed"
    assert json.dumps({"arch": Evidence.UNKNOWN}) == '{"arch": "unknown"}'
    assert {"confirmed": 1}[Evidence.CONFIRMED] == 1


def test_a_ptx_reach_is_as_sure_as_the_weaker_of_sass_and_ptx() -> None:
    fact = ArchFact((ArchEntry("8.0+PTX"),), Evidence.CONFIRMED, Evidence.INFERRED)
    assert reach(fact, ComputeCapability("9.0"), jit_ok=True).evidence is Evidence.INFERRED
    assert reach(fact, ComputeCapability("8.6"), jit_ok=True).evidence is Evidence.CONFIRMED


def test_the_built_matrix_holds_the_classes_not_their_text(matrix: Matrix) -> None:
    rebuilt = from_document(to_document(matrix))
    facts = [(v.index, f.sass, f.ptx) for r in rebuilt.releases for v in r.variants
             for f in v.arch_facts.values()]
    assert facts and all(type(e) is Evidence for fact in facts for e in fact)
    assert rebuilt == matrix
