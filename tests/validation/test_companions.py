"""``validate --with``: each companion imported and one small operation run in a child of the
interpreter being validated (here the test venv's, with real torch), against stand-in packages
put on its path: a correct torch_scatter passes, a torch_sparse whose answer is wrong fails
naming the operation, flash-attn's CUDA kernels skip on this CPU-only host, a package with no
operation is proven by its import alone, and a missing one fails with the command that
installs it."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from tests.conftest import Cli

from torchenv.validation.companions import check_companions

STAND_INS = {
    # a correct scatter sum, written with torch
    "torch_scatter/__init__.py":
        "import torch\n__version__ = '0.0+standin'\n"
        "def scatter(src, index, reduce='sum'):\n"
        "    out = torch.zeros(int(index.max()) + 1, dtype=src.dtype)\n"
        "    return out.index_add_(0, index, src)\n",
    # a SparseTensor whose dense form is wrong
    "torch_sparse/__init__.py":
        "import torch\n"
        "class SparseTensor:\n"
        "    def __init__(self, row, col, value, sparse_sizes):\n"
        "        self.sizes = sparse_sizes\n"
        "    def to_dense(self):\n"
        "        return torch.zeros(self.sizes)\n",
    "flash_attn/__init__.py": "__version__ = '0.0+standin'\n",
    "torchao/__init__.py": "__version__ = '0.0+standin'\n",
}


@pytest.mark.slow  # four children, three of which import torch
def test_each_companion_is_imported_and_its_operation_judged(tmp_path: Path) -> None:
    for rel, text in STAND_INS.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    results = check_companions(sys.executable, [
        ("torch-scatter", "torch_scatter"), ("torch-sparse", "torch_sparse"),
        ("flash-attn", "flash_attn"), ("torchao", "torchao"), ("vllm", "vllm")],
        timeout=120, env=env)
    by = {r.name: r for r in results}
    assert by["companion:torch-scatter"].status == "pass", by["companion:torch-scatter"]
    sparse = by["companion:torch-sparse"]
    assert sparse.status == "fail" and "made dense" in (sparse.error or "")
    flash = by["companion:flash-attn"]
    assert flash.status == "skip" and "no CUDA device" in (flash.reason or "")
    ao = by["companion:torchao"]
    assert ao.status == "pass" and "import alone" in (ao.detail or "")
    vllm = by["companion:vllm"]
    assert vllm.status == "fail" and "not installed" in (vllm.error or "")
    assert "torchenv resolve --with vllm" in (vllm.hint or "")


def test_validate_with_an_unknown_name_is_exit_2_before_anything_runs(cli: Cli) -> None:
    r = cli(["validate", "--with", "flash-atn"])
    assert r.returncode == 2
    assert "--with: 'flash-atn' is not a companion package" in r.stderr
    assert "starting the validation child" not in r.stderr
