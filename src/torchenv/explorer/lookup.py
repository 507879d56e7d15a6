"""Looking answers up in the explorer's tables, as the page's script does, in Python.

The page's script (``assets/page.js``) and these functions read the same JSON; the tests hold
both to ``resolve()`` and ``evaluate()``. Nothing here decides anything either.
"""

from __future__ import annotations

import json
from typing import Any

from torchenv.explorer.classes import GpuChoice, capability_index
from torchenv.explorer.tables import Tables
from torchenv.values import ComputeCapability, DriverVersion, TorchSpec, VariantName

__all__ = ["Unanswered", "decision", "fill", "grid_cells", "spec_key"]


class Unanswered(LookupError):
    """The page holds no exact answer for this question (a specifier it did not precompute)."""


def _driver_class(floors: list[str], driver: str | None) -> int:
    if driver is None:
        return -1
    version = DriverVersion(driver)
    return sum(1 for f in floors if DriverVersion.floor(f) <= version)


def _capability_class(classes: dict[str, Any], cc: str) -> int:
    return int(classes["cc"][capability_index(cc)], 36)


def _window_slot(window: dict[str, Any], gpu: GpuChoice) -> int:
    if gpu.kind == "none":
        return 0
    per = len(window["drivers"]) + 2
    if gpu.kind == "nvidia":
        assert gpu.cc is not None
        return (1 + _capability_class(window, gpu.cc) * per
                + _driver_class(window["drivers"], gpu.driver) + 1)
    assert gpu.gfx is not None
    return 1 + int(window["ccCount"]) * per + int(window["gfx"].get(gpu.gfx, 0))


def fill(value: Any, gpu: GpuChoice, tokens: dict[str, str], spec: str | None = None) -> Any:
    """``value`` with the placeholders replaced by what the user typed (``spec``: the torch
    specifier's text)."""
    cc = ComputeCapability(gpu.cc) if gpu.cc else None
    values = {"driver": gpu.driver or "", "cc": gpu.cc or "", "sm": cc.sm if cc else "sm_",
              "smbase": cc.base.sm if cc else "sm_", "gfx": gpu.gfx or "",
              "spec": json.dumps(repr(spec or ""))[1:-1]}
    text = json.dumps(value, ensure_ascii=False)
    for name, token in tokens.items():
        text = text.replace(token, values[name])
    return json.loads(text)


def spec_key(tables: Tables, platform: str, python: str, spec: str) -> str:
    """The set of releases the page answers ``--torch SPEC`` with (see ``tables._sets``);
    raises :class:`Unanswered`."""
    window = tables.windows[f"{platform}|{python}"]
    torch = TorchSpec(spec)
    admitted = [r for r in tables.releases if torch.contains(r)]
    inside = [r for r in window["releases"] if r in admitted]
    if not inside:
        return "outside" if admitted else "none"
    for key, releases in window["sets"].items():
        if sorted(releases) == sorted(inside):
            return str(key)
    raise Unanswered(f"no answers for {spec} with Python {python} on {platform}")


def decision(tables: Tables, tokens: dict[str, str], platform: str, python: str,
             gpu: GpuChoice, spec: str | None = None) -> dict[str, Any]:
    """The stored ``resolve --json`` answer (without ``rejected``) for the machine, and for
    ``--torch SPEC`` when ``spec`` is given; raises :class:`Unanswered`."""
    window = tables.windows[f"{platform}|{python}"]
    ids = window["any"]
    if spec is not None:
        ids = window["specs"][spec_key(tables, platform, python, spec)]
    return dict(fill(tables.plans[ids[_window_slot(window, gpu)]], gpu, tokens, spec))


def grid_cells(tables: Tables, tokens: dict[str, str], platform: str, python: str,
               gpu: GpuChoice) -> dict[tuple[str, str], tuple[str, str, str] | None]:
    """Every cell of the platform's grid with its stored (status, evidence, text)."""
    grid = tables.grid[platform]
    cells = [tuple(c) for c in grid["cells"]]
    wheel = grid["wheel"][python]
    ids: list[int | None] = [None] * len(cells)
    own = {"nvidia": "cuda", "amd": "rocm"}.get(gpu.kind)
    for name, column in grid["columns"].items():
        if VariantName(name).kind != own:
            continue
        if gpu.kind == "nvidia":
            assert gpu.cc is not None
            slot = (_capability_class(column, gpu.cc) * (len(column["drivers"]) + 2)
                    + _driver_class(column["drivers"], gpu.driver) + 1)
        else:
            assert gpu.gfx is not None
            slot = int(column["gfx"].get(gpu.gfx, 0))
        row = column["rows"][column["slots"][slot]]
        for position, cell in enumerate(column["cells"]):
            ids[cell] = row[position]
    out: dict[tuple[str, str], tuple[str, str, str] | None] = {}
    for i, cell in enumerate(cells):
        vid = wheel[i] if wheel[i] >= 0 else ids[i]
        if vid is None:
            vid = grid["fixed"][gpu.kind][i]
        out[(cell[0], cell[1])] = (None if vid is None or vid < 0
                                   else tuple(fill(tables.verdicts[vid], gpu, tokens)))
    return out
