"""Machines as the explorer page describes them, generated from the matrix, and their answers.

A machine is (platform, Python tag, GPU choice, torch series or None). The GPU choice holds what
a user would type: a compute capability (``8.6``, ``9.0a``) with a driver version or None, a gfx
target, or nothing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NamedTuple, Optional

from hypothesis import strategies as st

from torchenv.cli._fields import spell
from torchenv.explorer.classes import GpuChoice
from torchenv.explorer.tables import Job, Tables, answer, gfx_names, python_tags
from torchenv.matrix.model import PLATFORMS, Matrix
from torchenv.values import DriverVersion

__all__ = ["Machine", "boundary_drivers", "cli_args", "drivers", "expected", "machines"]


class Machine(NamedTuple):
    platform: str
    python: str
    gpu: GpuChoice
    minor: Optional[str] = None  # --torch ==MINOR.*

    @property
    def spec(self) -> str | None:
        return None if self.minor is None else f"=={self.minor}.*"


def expected(matrix: Matrix, machine: Machine) -> dict[str, Any]:
    """What ``resolve()`` says for the machine, as the page stores it (no ``rejected``)."""
    return answer(matrix, Job(machine.platform, machine.python, machine.gpu, torch=machine.spec),
                  spell)


def _floors(matrix: Matrix) -> list[DriverVersion]:
    found = {f for t in matrix.toolkit_floors for f in (t.linux, t.windows) if f}
    found |= {f for c in matrix.compat_floors for f in (c.linux, c.windows) if f}
    return sorted(found)


def _valid_driver(parts: tuple[int, ...]) -> str | None:
    """``parts`` spelled as the CLI accepts a driver (2–4 digit major, 1–3 more parts of 1–3
    digits), or None."""
    if not 2 <= len(parts) <= 3 or not 10 <= parts[0] <= 9999:
        return None
    if any(p < 0 or p > 999 for p in parts[1:]):
        return None
    return ".".join([str(parts[0])] + [f"{p:02d}" if p < 100 else str(p) for p in parts[1:]])


def drivers(matrix: Matrix) -> st.SearchStrategy[str | None]:
    """Driver versions around every floor (at it, just below, just above), anywhere between,
    and unknown."""
    near: set[str] = set()
    for floor in _floors(matrix):
        parts = floor.parts
        padded = parts if len(parts) > 1 else (*parts, 0)
        for candidate in (padded, (*padded[:-1], padded[-1] + 1), (*padded[:-1], padded[-1] - 1),
                          (padded[0] - 1, 99), (padded[0], 0)):
            text = _valid_driver(tuple(candidate))
            if text:
                near.add(text)
    anywhere = st.builds(lambda a, b, c: f"{a}.{b:02d}" + ("" if c is None else f".{c:02d}"),
                         st.integers(300, 999), st.integers(0, 199),
                         st.none() | st.integers(0, 99))
    exact = sorted({t for t in (_valid_driver(f.parts) for f in _floors(matrix))
                    if t})
    return st.one_of(st.none(), st.sampled_from(exact), st.sampled_from(sorted(near)), anywhere)


def boundary_drivers(floors: list[str]) -> list[str]:
    """Each floor (as the page's JSON writes it) as a driver spells it, and the driver just
    below it."""
    out: list[str] = []
    for floor in floors:
        parts = DriverVersion.floor(floor).parts
        padded = parts if len(parts) > 1 else (*parts, 0)
        below = (*padded[:-1], padded[-1] - 1) if padded[-1] else (padded[0] - 1, 99)
        out += [t for t in (_valid_driver(padded), _valid_driver(below)) if t]
    return out


def _capabilities(matrix: Matrix) -> st.SearchStrategy[str]:
    catalog = sorted({str(g.compute_capability) for g in matrix.nvidia_gpus})
    listed = sorted({str(a.capability.base) for r in matrix.releases for v in r.variants
                     for f in v.arch_facts.values() for a in (f.arch_list or ())})
    anything = st.builds(lambda major, minor, suffix: f"{major}.{minor}{suffix}",
                         st.integers(1, 19), st.integers(0, 9), st.sampled_from(["", "", "a", "f"]))
    return st.one_of(st.sampled_from(catalog), st.sampled_from(listed), anything)


def _gfx_targets(matrix: Matrix) -> st.SearchStrategy[str]:
    made_up = st.builds(lambda digits: "gfx" + digits,
                        st.text("0123456789abcdef", min_size=3, max_size=4))
    return st.one_of(st.sampled_from(gfx_names(matrix)), made_up)


@st.composite
def machines(draw: st.DrawFn, matrix: Matrix, tables: Tables) -> Machine:
    platform = draw(st.sampled_from(PLATFORMS))
    python = draw(st.sampled_from(python_tags(matrix, platform)))
    kind = draw(st.sampled_from(["none", "nvidia", "nvidia", "nvidia", "nvidia", "amd"]))
    if kind == "nvidia":
        gpu = GpuChoice("nvidia", cc=draw(_capabilities(matrix)), driver=draw(drivers(matrix)))
    elif kind == "amd":
        gpu = GpuChoice("amd", gfx=draw(_gfx_targets(matrix)))
    else:
        gpu = GpuChoice("none")
    minors = sorted(tables.windows[f"{platform}|{python}"]["specs"])
    minor = draw(st.one_of(st.none(), st.sampled_from(minors))) if minors else None
    return Machine(platform, python, gpu, minor)


def cli_args(machine: Machine, host_file: Path) -> list[str]:
    """``torchenv resolve --json`` for the machine: a host file without glibc (as the page
    assumes), the platform and Python, and the GPU flags."""
    host_file.write_text(json.dumps({"platform": machine.platform, "python": machine.python}),
                         encoding="utf-8")
    args = ["resolve", "--json", "--host", str(host_file), "--platform", machine.platform,
            "--python", machine.python]
    gpu = machine.gpu
    if gpu.kind == "nvidia":
        assert gpu.cc is not None
        args += ["--gpu", gpu.cc] + (["--driver", gpu.driver] if gpu.driver else [])
    elif gpu.kind == "amd":
        assert gpu.gfx is not None
        args += ["--rocm-arch", gpu.gfx]
    else:
        args.append("--no-gpu")
    if machine.spec:
        args += ["--torch", machine.spec]
    return args
