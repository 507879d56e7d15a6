"""``validate --with`` for real: the validation child imports each companion and runs its
operation with the CPU torch of this venv.

torchao is the real package (the ``test`` extra pins it; it declares no torch requirement and
runs its int8 quantization on the CPU). The others cannot be installed here without a GPU or
hours of compiling, so stand-ins take their place on ``PYTHONPATH``: a ``torch_scatter`` written
in Python over real torch operations, a ``torch_sparse`` whose compiled module (built from C)
needs a ``c10`` symbol this torch does not export, an ``xformers`` whose GPU-only kernel has no
GPU here, and a ``vllm`` whose metadata pins another torch.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import types
from pathlib import Path
from typing import Any

import pytest
from tests.doctor.extensions import CC, build_missing_symbol_extension
from tests.validation.helpers import check_contract, run_cli

from torchenv.validation import _probe

pytestmark = pytest.mark.slow

MISSING = "_ZN3c1017RegisterOperatorsD1Ev_gone"
"""A symbol of torch's C++ API (namespace c10) that no torch exports."""

SCATTER = '''
import torch

__version__ = "2.1.2"


def scatter(src, index, dim=0, dim_size=None, reduce="sum"):
    """Row by row, unlike torch's scatter_reduce the check compares it with."""
    assert dim == 0
    n = dim_size if dim_size is not None else int(index.max()) + 1
    out = torch.zeros((n,) + tuple(src.shape[1:]), dtype=src.dtype)
    for i in range(n):
        rows = src[index == i]
        if rows.numel():
            out[i] = rows.sum(0) if reduce == "sum" else rows.max(0).values
    return out
'''


def _dist_info(site: Path, name: str, version: str, *requires: str) -> None:
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
        + "".join(f"Requires-Dist: {r}\n" for r in requires) + "\n")


@pytest.fixture(scope="module")
def stand_ins(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    site = tmp_path_factory.mktemp("companions") / "site"
    (site / "torch_scatter").mkdir(parents=True)
    (site / "torch_scatter" / "__init__.py").write_text(SCATTER)
    _dist_info(site, "torch-scatter", "2.1.2+pt213cpu")
    so = build_missing_symbol_extension(site / "torch_sparse", "_version_cpu", MISSING)
    (site / "torch_sparse" / "__init__.py").write_text("from torch_sparse import _version_cpu\n")
    _dist_info(site, "torch-sparse", "0.6.18")
    (site / "xformers").mkdir()
    (site / "xformers" / "__init__.py").write_text('__version__ = "0.0.35"\n')
    _dist_info(site, "xformers", "0.0.35", "torch>=2.10")
    (site / "vllm").mkdir()
    (site / "vllm" / "__init__.py").write_text("")
    _dist_info(site, "vllm", "0.27.0", "torch==2.12.0", 'pytest; extra == "test"')
    return {"site": site, "torch_sparse_so": so}


@pytest.mark.skipif(CC is None, reason="no C compiler for the stand-in extension")
@pytest.mark.skipif(importlib.util.find_spec("torchao") is None,
                    reason="torchao is not installed: pip install -e '.[test]'")
def test_each_companion_is_imported_and_runs_its_operation_or_says_why_not(
        stand_ins: dict[str, Any]) -> None:
    r = run_cli("validate", "--json", "--with", "pyg,torchao", "--with", "xformers,vllm",
                "--only", "import_torch", env={"PYTHONPATH": str(stand_ins["site"])},
                timeout=240)
    assert r.returncode == 1, r.stderr
    doc = json.loads(r.stdout)
    check_contract(doc)
    assert doc["with"] == ["pyg-lib", "torch-scatter", "torch-sparse", "torchao", "xformers",
                           "vllm"]
    checks = {c["name"]: c for c in doc["checks"]}
    site = str(stand_ins["site"])

    # not installed: a failure saying how to get the build made for this torch
    assert checks["companion:pyg-lib"]["status"] == "fail"
    assert checks["companion:pyg-lib"]["error"] == "pyg-lib is not installed in this interpreter"
    assert "torchenv resolve --with pyg-lib" in checks["companion:pyg-lib"]["hint"]

    # a Python stand-in over real torch: imported from the site, its scatter agrees with torch
    scatter = checks["companion:torch-scatter"]
    assert scatter["status"] == "pass", scatter
    assert scatter["metrics"]["version"] == "2.1.2+pt213cpu"
    assert scatter["metrics"]["file"] == f"{site}/torch_scatter/__init__.py"
    assert scatter["metrics"]["pairing"]["verdict"] == "unknown"  # data: 2.12 files, an sdist
    assert checks["companion:torch-scatter:scatter"]["status"] == "pass"
    assert "agrees with torch" in checks["companion:torch-scatter:scatter"]["detail"]

    # an extension built for another torch: doctor's classifier names it, with doctor's fix
    sparse = checks["companion:torch-sparse"]
    assert sparse["status"] == "fail"
    assert "undefined symbol" in sparse["error"] and MISSING in sparse["error"]
    finding = sparse["metrics"]["finding"]
    assert finding["code"] == "extension-built-for-other-torch"
    assert finding["evidence"]["file"] == str(stand_ins["torch_sparse_so"])
    assert finding["evidence"]["distribution"] == "torch-sparse"
    assert finding["fix"] in sparse["hint"] and "--no-binary torch-sparse" in finding["fix"]
    assert "torchenv resolve --with torch-sparse" in sparse["hint"]
    matmul = checks["companion:torch-sparse:matmul"]
    assert matmul["status"] == "skip" and "import torch_sparse fails" in matmul["reason"]

    # the real torchao: paired with this torch by the data, its int8 Linear runs on the CPU
    ao = checks["companion:torchao"]
    assert ao["status"] == "pass" and ao["metrics"]["pairing"]["verdict"] == "paired"
    assert ao["metrics"]["version"] == "0.18.0"
    assert checks["companion:torchao:quantize"]["status"] == "pass"

    # a GPU-only kernel on a host without a CUDA device: a skip with the reason, never a pass
    assert checks["companion:xformers"]["status"] == "pass"
    attention = checks["companion:xformers:memory_efficient_attention"]
    assert attention["status"] == "skip" and "no CUDA device" in attention["reason"]

    # vLLM pins another torch than the one installed: a failure naming both
    pin = checks["companion:vllm:torch_pin"]
    assert pin["status"] == "fail"
    assert "torch==2.12.0" in pin["error"] and doc["torch"] in pin["error"]
    # what --only does not name does not run; the companions always do
    assert not {"matmul", "autograd"} & set(checks)


def test_a_scatter_that_gets_it_wrong_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    torch = pytest.importorskip("torch")
    wrong = types.ModuleType("torch_scatter")

    def scatter(src: Any, index: Any, dim: int = 0, dim_size: int = 0,
                reduce: str = "sum") -> Any:
        return torch.zeros(dim_size, *src.shape[1:]).index_add_(0, index, src) * (
            1 if reduce == "sum" else 2)

    wrong.scatter = scatter  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "torch_scatter", wrong)
    ctx = _probe.Ctx(torch, "cpu", False)
    companion = {"name": "torch-scatter", "import": "torch_scatter",
                 "install": "torchenv resolve --with torch-scatter"}
    with pytest.raises(_probe.Fail, match=r"reduce='max'.*differs from torch's scatter_reduce"):
        _probe.op_scatter(ctx, companion)
