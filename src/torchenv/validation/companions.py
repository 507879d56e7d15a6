"""``validate --with NAME``: each companion imported, and one small real operation run, in a
child of the interpreter being validated.

An operation is compared with torch's own answer (scatter sums, a dense matrix, attention against
``scaled_dot_product_attention``). Kernels that run only on the GPU are a skip with the reason
on a host without one; a package with no operation defined here is proven by its import alone,
and the check says so.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import NamedTuple

from torchenv.validation.report import CheckResult

__all__ = ["OPERATIONS", "Operation", "check_companion", "check_companions"]

DEFAULT_TIMEOUT = 180.0


class Operation(NamedTuple):
    """Python run after the import, with ``torch`` and the module as ``m``; it raises (an
    ``assert``) when the answer is wrong. ``cuda``: it needs a CUDA device."""

    code: str
    cuda: bool
    detail: str


_ATTENTION_REFERENCE = (
    "q = torch.randn(1, 128, 4, 64, device='cuda', dtype=torch.float16)\n"
    "k, v = torch.randn_like(q), torch.randn_like(q)\n"
    "ref = torch.nn.functional.scaled_dot_product_attention(\n"
    "    q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)).transpose(1, 2)\n")

OPERATIONS: Mapping[str, Operation] = {
    "torch-scatter": Operation(
        "out = m.scatter(torch.tensor([1.0, 2.0, 3.0]), torch.tensor([0, 0, 1]), reduce='sum')\n"
        "assert out.tolist() == [3.0, 3.0], out.tolist()\n",
        False, "scatter sum of 3 values into 2 slots on the CPU"),
    "torch-sparse": Operation(
        "t = m.SparseTensor(row=torch.tensor([0, 1]), col=torch.tensor([1, 0]),\n"
        "                   value=torch.tensor([2.0, 3.0]), sparse_sizes=(2, 2))\n"
        "assert t.to_dense().tolist() == [[0.0, 2.0], [3.0, 0.0]], t.to_dense().tolist()\n",
        False, "a 2x2 SparseTensor made dense on the CPU"),
    "flash-attn": Operation(
        _ATTENTION_REFERENCE
        + "out = m.flash_attn_func(q, k, v)\n"
        "assert torch.allclose(out, ref, atol=2e-2, rtol=2e-2), (out - ref).abs().max()\n",
        True, "flash_attn_func against scaled_dot_product_attention (fp16, CUDA)"),
    "xformers": Operation(
        "import xformers.ops\n" + _ATTENTION_REFERENCE
        + "out = xformers.ops.memory_efficient_attention(q, k, v)\n"
        "assert torch.allclose(out, ref, atol=2e-2, rtol=2e-2), (out - ref).abs().max()\n",
        True, "memory_efficient_attention against scaled_dot_product_attention (fp16, CUDA)"),
}
"""The small operation per package (by its project name)."""

_CHILD = r"""
import importlib, json, sys, time, traceback
name, module, code, cuda, detail = sys.argv[1:6]
start = time.monotonic()
def done(**doc):
    doc.update(name="companion:" + name, seconds=time.monotonic() - start)
    print("\n" + json.dumps(doc))
    sys.exit(0)
try:
    m = importlib.import_module(module)
except ModuleNotFoundError as exc:
    done(status="fail", error=f"{module} is not installed ({exc})",
         hint=f"install it with the commands of: torchenv resolve --with {name}")
except Exception as exc:
    done(status="fail", error=f"import {module}: {type(exc).__name__}: {exc}",
         hint="a build for another torch fails like this: torchenv doctor says which",
         traceback=traceback.format_exc())
import torch
version = getattr(m, "__version__", "?")
if not code:
    done(status="pass", detail=f"import {module} {version} (no small operation is defined "
         "for it: the import alone is proven)")
if cuda == "1" and not torch.cuda.is_available():
    done(status="skip", reason=f"no CUDA device: {detail} needs one (import {module} {version} "
         "passed)")
try:
    exec(code, {"torch": torch, "m": m})
    if cuda == "1":
        torch.cuda.synchronize()
except Exception as exc:
    done(status="fail", error=f"{detail}: {type(exc).__name__}: {exc}",
         traceback=traceback.format_exc(), device="cuda" if cuda == "1" else "cpu")
done(status="pass", detail=f"{module} {version}: {detail}",
     device="cuda" if cuda == "1" else "cpu")
"""


def check_companion(python: str, name: str, module: str, *, timeout: float = DEFAULT_TIMEOUT,
                    env: Mapping[str, str] | None = None) -> CheckResult:
    """Import ``module`` (of the project ``name``) in ``python`` and run its operation."""
    from torchenv._subprocess import run_process

    op = OPERATIONS.get(name, Operation("", False, "import"))
    result = run_process([python, "-c", _CHILD, name, module, op.code, "1" if op.cuda else "0",
                          op.detail], timeout=timeout, env=env)
    last = result.stdout.strip().rsplit("\n", 1)[-1] if result.stdout.strip() else ""
    try:
        doc = json.loads(last)
    except ValueError:
        doc = None
    if not isinstance(doc, dict):
        return CheckResult(f"companion:{name}", "fail", seconds=result.seconds,
                           error=result.describe_failure() if not result.ok else
                           "the check printed no result",
                           log=result.stderr[-4000:] or None)
    return CheckResult.from_child(doc)


def check_companions(python: str, packages: Sequence[tuple[str, str]], *,
                     timeout: float = DEFAULT_TIMEOUT,
                     env: Mapping[str, str] | None = None) -> tuple[CheckResult, ...]:
    """:func:`check_companion` for each (project name, import name), in order."""
    return tuple(check_companion(python, name, module, timeout=timeout, env=env)
                 for name, module in packages)
