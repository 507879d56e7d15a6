"""``matrix show --release``: how each companion pairing is known, in words."""

from __future__ import annotations

from torchenv.cli.render_matrix import companion_line
from torchenv.matrix.model import Matrix, Release
from torchenv.values import TorchVersion


def _release(matrix: Matrix, version: str) -> Release:
    rel = matrix.release(TorchVersion(version))
    assert rel is not None
    return rel


def test_a_pin_the_data_confirms_reads_confirmed(matrix: Matrix) -> None:
    assert companion_line("torchvision", _release(matrix, "2.14.1")) == (
        "torchvision 0.29.1: confirmed")


def test_a_pairing_by_statement_quotes_the_statement_and_its_sources(matrix: Matrix) -> None:
    line = companion_line("torchaudio", _release(matrix, "2.15.0"))
    assert line.startswith("torchaudio 2.11.1: by statement (rule companion-by-statement): "
                           "\"This is a minor release with no new feature. It's compatible "
                           "with PyTorch 2.11 and later.\"")
    assert line.endswith("(sources: pytorch-audio-release-2-11-1, pypi-json-torchaudio)")


def test_a_pairing_no_source_settles_reads_unknown(matrix: Matrix) -> None:
    from dataclasses import replace

    rel = replace(_release(matrix, "2.15.0"), torchvision=None, pairings={},
                  unconfirmed=("torchvision",))
    assert companion_line("torchvision", rel) == "torchvision –: unknown"
