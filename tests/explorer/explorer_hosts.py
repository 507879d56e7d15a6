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
from torchenv.explorer.classes import GpuChoice, window_candidates
from torchenv.explorer.tables import Job, Tables, answer, gfx_names, python_tags
from torchenv.matrix.model import PLATFORMS, Matrix
from torchenv.values import DriverVersion, TorchSpec, TorchVersion

__all__ = ["Machine", "answerable", "boundary_drivers", "cli_args", "drivers", "expected",
           "machines", "specifiers"]


class Machine(NamedTuple):
    platform: str
    python: str
    gpu: GpuChoice
    spec: Optional[str] = None  # --torch SPEC, as typed


def expected(matrix: Matrix, machine: Machine) -> dict[str, Any]:
    """What ``resolve()`` says for the machine, as the page stores it (no ``rejected``)."""
    return answer(matrix, Job(machine.platform, machine.python, machine.gpu, torch=machine.spec),
                  spell)


def answerable(matrix: Matrix, tables: Tables, machine: Machine) -> bool:
    """Whether the page should answer the machine exactly: no specifier; or the releases with a
    wheel for the machine's Python that it admits are none, all of a series the page was made
    for, or one release of such a series."""
    if machine.spec is None:
        return True
    spec = TorchSpec(machine.spec)
    window = {torch for torch, _ in window_candidates(matrix, machine.platform,
                                                      machine.python)}
    admitted = {r for r in window if spec.contains(r)}
    series = {TorchVersion(r).series for r in admitted}
    if not admitted:
        return True
    if len(series) != 1 or series.pop() not in tables.specifiers:
        return False
    minor = TorchVersion(next(iter(admitted))).series
    return len(admitted) == 1 or admitted == {r for r in window
                                              if TorchVersion(r).series == minor}


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


def machines(matrix: Matrix, tables: Tables) -> st.SearchStrategy[Machine]:
    """Any machine the page can describe. Its parts are built once, not per example: each
    reads the matrix, and hypothesis validates every new strategy (most of the time a
    thousand machines took)."""
    pythons = {platform: st.sampled_from(python_tags(matrix, platform)) for platform in PLATFORMS}
    kinds = st.sampled_from(["none", "nvidia", "nvidia", "nvidia", "nvidia", "amd"])
    capability, driver, gfx = _capabilities(matrix), drivers(matrix), _gfx_targets(matrix)
    spec = st.none() | st.none() | specifiers(matrix, tables)

    @st.composite
    def machine(draw: st.DrawFn) -> Machine:
        platform = draw(st.sampled_from(PLATFORMS))
        python = draw(pythons[platform])
        kind = draw(kinds)
        if kind == "nvidia":
            gpu = GpuChoice("nvidia", cc=draw(capability), driver=draw(driver))
        elif kind == "amd":
            gpu = GpuChoice("amd", gfx=draw(gfx))
        else:
            gpu = GpuChoice("none")
        return Machine(platform, python, gpu, draw(spec))

    return machine()


def specifiers(matrix: Matrix, tables: Tables) -> st.SearchStrategy[str]:
    """Specifiers the page answers exactly, in the spellings people type: a precomputed series
    (``2.14``, ``==2.14.*``, ``>=2.14,<2.15``, ``~=2.14.0``), one of its releases (``==2.14`` is
    2.14.0, ``2.14.1``), a release or a series of any other release (which the page answers
    where the machine's Python has no wheel of it), and releases that do not exist."""
    series = tables.specifiers
    releases = [str(r.torch) for r in matrix.releases]
    ours = [r for r in releases if ".".join(r.split(".")[:2]) in series]

    def series_spelling(minor: str, form: int) -> str:
        major, low = minor.split(".")
        return [minor, f"=={minor}.*", f">={minor},<{major}.{int(low) + 1}",
                f"~={minor}.0", f"== {minor}.*"][form]

    def release_spelling(release: str, form: int) -> str:
        short = release[:-2] if release.endswith(".0") else release
        return [release, f"=={release}", f"=={short}", f">={release},<={release}"][form]

    return st.one_of(
        st.builds(series_spelling, st.sampled_from(series), st.integers(0, 4)),
        st.builds(release_spelling, st.sampled_from(ours), st.integers(0, 3)),
        st.builds(release_spelling, st.sampled_from(releases), st.integers(0, 3)),
        st.sampled_from(sorted({r.rsplit(".", 1)[0] for r in releases})),
        st.sampled_from(["==9.9", "==2.14.7", ">=99", "<1.0", "==1.*"]),
    )


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
