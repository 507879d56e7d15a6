"""The explorer's lookup tables: ``resolve()`` and ``evaluate()`` run once per equivalence class.

Nothing here decides anything: every answer is what the resolver returned for a representative
host of its class (:mod:`torchenv.explorer.classes`), turned into a template and de-duplicated.

* **Decisions**, per (platform, Python) window: the ``resolve --json`` answer of every slot.
* **Specifier decisions**, per window and chosen minor ``==X.Y.*``, indexed by the same slots.
  They are resolved once per class of the specifier's own (smaller) window. Where such an answer
  also shows part of the unconstrained decision (an unsatisfiable request names it as a fix; a
  pick whose support is unknown names the best evidence-backed build), the slots of the class are
  split by that part, read from each slot's unconstrained answer, and resolved once per part.
* **The grid**, per platform: the verdict ``evaluate()`` gives every (release, variant). A
  candidate's verdict depends only on its own facts, so a CUDA (ROCm) column is evaluated alone
  (``Request(variant=V)``) over the classes of that column's arch (gfx) lists and driver floors,
  and every other cell once per kind of GPU; rule 1 (the Python tag) is a row per tag.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from typing import Any, Optional, Union

from torchenv.explorer.classes import (
    RULE1,
    TOKENS,
    Classes,
    GpuChoice,
    WindowFacts,
    facts_of,
    page_host,
    template,
    window_candidates,
)
from torchenv.installers.render import all_commands
from torchenv.matrix.model import PLATFORMS, Evidence, Matrix, Variant, python_sort_key
from torchenv.resolver.plan import Speller
from torchenv.resolver.request import Request
from torchenv.resolver.resolve import NoMatch, evaluate, resolve
from torchenv.values import Platform, TorchSpec, TorchVersion, VariantName

__all__ = [
    "NOTHING",
    "Job",
    "Tables",
    "answer",
    "answer_json",
    "build_tables",
    "cell_verdicts",
    "gfx_names",
    "minors",
    "python_tags",
]

Verdict = tuple[str, str, str]
"""(status, evidence, text) of a grid cell: status ``ok`` (runs), ``warn`` (runs with a warning,
or only at the compatibility level) or ``no``."""


@dataclass(frozen=True)
class Job:
    """One representative host: resolved (with the specifier ``torch``), or, with ``column``,
    evaluated for the grid (``"*"``: every candidate; a variant name: that column alone)."""

    platform: str
    python: str
    gpu: GpuChoice
    torch: Optional[str] = None
    column: Optional[str] = None
    releases: Optional[tuple[str, ...]] = None  # resolve over these releases only (see below)


def restricted(matrix: Matrix, releases: Iterable[str], *, ends: bool) -> Matrix:
    """``matrix`` with only ``releases`` (and, with ``ends``, its first and last one).

    A resolve reads a release outside its request's window only through the unconstrained
    decision and the best evidence-backed build, both the top of the resolver's own ranking,
    which stay the top of any subset that holds them; and, without a specifier, through the
    range of releases an unsatisfiable request's fix names (``ends``). Over such a subset the
    answer is the same as over the whole matrix, but for ``rejected``, which the page does not
    take from decisions.
    """
    keep = set(releases)
    if ends:
        keep |= {str(matrix.releases[0].torch), str(matrix.releases[-1].torch)}
    return replace(matrix, releases=tuple(r for r in matrix.releases if str(r.torch) in keep))


def answer(matrix: Matrix, job: Job, spell: Speller) -> dict[str, Any]:
    """The ``resolve --json`` document of the job's host, less ``rejected`` (the grid shows every
    candidate's verdict); ``spell`` writes a fix's changes of the request as the command line
    does (:func:`torchenv.cli._fields.spell`)."""
    host = page_host(job.platform, job.python, job.gpu)
    if job.releases is not None:
        matrix = restricted(matrix, job.releases, ends=job.torch is None)
    try:
        plan = resolve(Request(torch=TorchSpec(job.torch) if job.torch else None), host, matrix)
    except NoMatch as exc:
        doc = exc.to_json(spell)
    else:
        # as `torchenv resolve --json` renders it
        doc = plan.to_json(all_commands(plan, host, spell=spell))
    doc.pop("rejected", None)
    return doc


def answer_json(matrix: Matrix, job: Job, spell: Speller) -> str:
    """:func:`answer` as JSON text, the representative spellings replaced by placeholders."""
    text = json.dumps(answer(matrix, job, spell), sort_keys=True, ensure_ascii=False,
                      separators=(",", ":"))
    return _templated(text, job)


def _templated(text: str, job: Job) -> str:
    if "{{" in text:
        raise ValueError(f"resolver output already holds a placeholder: {text[:200]}")
    if job.torch is not None:  # messages quote the specifier as given (repr)
        text = text.replace(repr(job.torch), TOKENS["spec"])
    return template(text, job.gpu)


def cell_verdicts(matrix: Matrix, job: Job) -> dict[tuple[str, str], Verdict | None]:
    """Every candidate ``evaluate()`` looks at on the job's host (only column ``job.column``
    unless it is ``"*"``) with its verdict, texts templated; None when rule 1 rejects it."""
    host = page_host(job.platform, job.python, job.gpu)
    request = (Request() if job.column in (None, "*")
               else Request(variant=VariantName(str(job.column))))
    ok, rejected = evaluate(request, host, matrix)
    out: dict[tuple[str, str], Verdict | None] = {}
    for c in ok:
        status = "ok" if c.fully_compatible and not c.warnings else "warn"
        evidence = c.arch_evidence.value if c.arch_evidence is not None else c.index.value
        text = "; ".join(c.warnings) if c.warnings else "runs"
        out[(str(c.release.torch), str(c.variant.name))] = (status, evidence,
                                                           _templated(text, job))
    for r in rejected:
        if r.variant == "*":
            continue
        if r.category in RULE1:
            out[(r.torch, r.variant)] = None
            continue
        evidence = _rejected_evidence(matrix, job.platform, r.torch, r.variant, r.category)
        out[(r.torch, r.variant)] = ("no", evidence, _templated(r.reason, job))
    return out


def _rejected_evidence(matrix: Matrix, platform: str, torch: str, name: str,
                       category: str) -> Evidence:
    """The evidence class on a cell that does not run: of the build's GPU support on the platform
    (its arch or gfx list; an unknown arch list rejects only through the toolkit-bounds rule, an
    inference), or of its index entry for a build without one."""
    release = matrix.release(TorchVersion(torch))
    assert release is not None
    plat, variant_name = Platform(platform), VariantName(name)
    variant: Variant | None = release.variant(variant_name)
    if variant is None:
        return (Evidence.CONFIRMED if variant_name == release.pypi_default.get(plat)
                else Evidence.UNKNOWN)
    if variant.cuda_version is not None:
        sass = variant.arch_fact(plat).sass
        return Evidence.INFERRED if category == "arch" and sass == Evidence.UNKNOWN else sass
    if variant.kind == "rocm":
        targets = matrix.rocm_targets(variant_name, release.torch)
        return targets.evidence_for(release.torch) if targets is not None else Evidence.UNKNOWN
    return variant.index


_Result = Union[str, dict[tuple[str, str], Optional[Verdict]]]
_WORKER: tuple[Matrix, Speller] | None = None


def _init_worker(matrix: Matrix, spell: Speller) -> None:
    global _WORKER
    _WORKER = (matrix, spell)


def _run(matrix: Matrix, spell: Speller, job: Job) -> _Result:
    if job.column is not None:
        return cell_verdicts(matrix, job)
    return answer_json(matrix, job, spell)


def _run_chunk(jobs: Sequence[Job]) -> list[_Result]:
    assert _WORKER is not None
    return [_run(*_WORKER, job) for job in jobs]


def _chunks(items: Sequence[Job], size: int) -> Iterator[Sequence[Job]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


class _Runner:
    """Runs jobs in order, over one pool of ``workers`` processes kept for every phase."""

    def __init__(self, matrix: Matrix, spell: Speller, workers: int,
                 progress: Progress | None = None) -> None:
        self.matrix = matrix
        self.spell = spell
        self.workers = workers
        self.progress = progress
        self.pool: ProcessPoolExecutor | None = None

    def __enter__(self) -> _Runner:
        if self.workers > 1:
            self.pool = ProcessPoolExecutor(max_workers=self.workers, initializer=_init_worker,
                                            initargs=(self.matrix, self.spell))
        return self

    def __exit__(self, *exc: object) -> None:
        if self.pool is not None:
            self.pool.shutdown(cancel_futures=True)

    def run(self, jobs: Sequence[Job], what: str) -> list[_Result]:
        """The answers to ``jobs``, in order; ``what`` names them in the progress reports,
        one per finished chunk."""
        if self.pool is None or len(jobs) < 64:
            out = [_run(self.matrix, self.spell, job) for job in jobs]
            self._report(what, len(out), len(jobs))
            return out
        size = max(4, len(jobs) // (self.workers * 16))
        out = []
        for part in self.pool.map(_run_chunk, _chunks(jobs, size)):
            out.extend(part)
            self._report(what, len(out), len(jobs))
        return out

    def _report(self, what: str, done: int, total: int) -> None:
        if self.progress is not None and total:
            self.progress(what, done, total)


def python_tags(matrix: Matrix, platform: str) -> list[str]:
    """Every Python tag some release has a wheel for on ``platform``, oldest first."""
    plat = Platform(platform)
    tags = {t for r in matrix.releases for t in r.python.get(plat, ())}
    tags |= {t for r in matrix.releases for v in r.variants for t in v.python.get(plat, ())}
    return sorted(tags, key=python_sort_key)


def gfx_names(matrix: Matrix) -> list[str]:
    """Every gfx target the matrix names: ROCm lists and the AMD GPU catalog."""
    names = {g for r in matrix.rocm_variants for g in r.gfx}
    names |= {g.gfx for g in matrix.amd_gpus}
    return sorted(names)


def minors(candidates: Iterable[tuple[str, str]]) -> list[str]:
    """The minors (``2.7``) of the candidates' releases, newest first."""
    releases = sorted({TorchVersion(torch) for torch, _ in candidates}, reverse=True)
    return list(dict.fromkeys(release.series for release in releases))


class _Plans:
    """De-duplicated answers, numbered in order of first appearance."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}
        self.texts: list[str] = []
        self._docs: dict[int, dict[str, Any]] = {}

    def add(self, text: str) -> int:
        pid = self.ids.setdefault(text, len(self.texts))
        if pid == len(self.texts):
            self.texts.append(text)
        return pid

    def doc(self, pid: int) -> dict[str, Any]:
        if pid not in self._docs:
            self._docs[pid] = json.loads(self.texts[pid])
        return self._docs[pid]


class _Verdicts:
    def __init__(self) -> None:
        self.ids: dict[Verdict, int] = {}

    def add(self, verdict: Verdict | None) -> int:
        if verdict is None:
            return -1
        return self.ids.setdefault(verdict, len(self.ids))


def _dependency(doc: dict[str, Any]) -> str | None:
    """What part of the unconstrained decision a specifier's answer shows: ``unconstrained`` (an
    unsatisfiable request names it as a fix), ``evidence`` (a GPU pick whose support is unknown
    names the best evidence-backed build), or nothing."""
    if doc.get("torch") is None:
        # whether a fix names it depends on the member's own unconstrained answer, so a
        # representative without that fix says nothing of the other members
        return "unconstrained"
    evidence = doc.get("evidence") or {}
    if evidence.get("arch") == Evidence.UNKNOWN and doc.get("accelerator") != "cpu":
        return "evidence"
    return None


def _context(kind: str, unconstrained: dict[str, Any]) -> str:
    """The part of a slot's unconstrained answer that a specifier's answer shows."""
    if kind == "unconstrained":
        return json.dumps([unconstrained.get("torch"), unconstrained.get("variant")])
    if unconstrained.get("torch") is None:
        return "null"  # no GPU build fits at all: none is evidence-backed either
    evidence = unconstrained.get("evidence") or {}
    if evidence.get("arch") == Evidence.UNKNOWN:
        return json.dumps(unconstrained.get("evidence_alternative"), sort_keys=True)
    # its own pick is the best evidence-backed build: both rank GPU builds the same way
    return json.dumps({"torch": unconstrained["torch"], "variant": unconstrained["variant"],
                       "evidence": evidence.get("arch"), "rule": evidence.get("arch_rule")},
                      sort_keys=True)


@dataclass(frozen=True)
class Tables:
    """Everything the page looks up (see the module docstring); JSON-ready."""

    plans: list[Any]
    windows: dict[str, Any]
    grid: dict[str, Any]
    verdicts: list[Any]
    specifiers: list[str]
    releases: list[str]


def _cover(tags: dict[str, set[tuple[str, str]]], wanted: set[tuple[str, str]]) -> list[str]:
    """Few tags whose windows together hold every wanted candidate (greedy)."""
    left = set(wanted)
    chosen: list[str] = []
    while left:
        best = max(tags, key=lambda py: len(left & tags[py]))
        if not left & tags[best]:
            break
        chosen.append(best)
        left -= tags[best]
    return chosen


Progress = Callable[[str, int, int], None]
"""Told (what, done, total) as the decisions of each phase finish."""


def build_tables(matrix: Matrix, *, spell: Speller, specifiers: Sequence[str] | None = None,
                 workers: int | None = None, progress: Progress | None = None) -> Tables:
    """Every table of the page. ``spell``: how a fix's change of the request is written (the
    page shows the answers of ``torchenv resolve --json``, so the command line's way);
    ``specifiers``: the minors (``2.7``) whose ``==X.Y.*`` answers are precomputed (None: every
    minor); ``workers``: processes (None: one per CPU); ``progress``: told as decisions finish."""
    workers = workers if workers is not None else (os.cpu_count() or 1)
    names = gfx_names(matrix)
    windows: dict[str, Classes] = {}
    candidates: dict[str, dict[str, set[tuple[str, str]]]] = {}
    jobs: list[Job] = []
    for platform in PLATFORMS:
        candidates[platform] = {}
        for python in python_tags(matrix, platform):
            found = window_candidates(matrix, platform, python)
            candidates[platform][python] = set(found)
            classes = Classes.of(matrix, facts_of(matrix, platform, found), names)
            windows[f"{platform}|{python}"] = classes
            inside = tuple(sorted({torch for torch, _ in found}))
            jobs.extend(Job(platform, python, gpu, releases=inside) for gpu in classes.slots())
    grid_jobs, grid_layout = _grid_jobs(matrix, candidates, names)
    with _Runner(matrix, spell, workers, progress) as runner:
        return _build(matrix, runner, windows, jobs, grid_jobs, grid_layout, candidates,
                      names, specifiers)


def _build(matrix: Matrix, runner: _Runner, windows: dict[str, Classes], jobs: list[Job],
           grid_jobs: list[Job], grid_layout: list[Any],
           candidates: dict[str, dict[str, set[tuple[str, str]]]], names: list[str],
           specifiers: Sequence[str] | None) -> Tables:
    plans = _Plans()
    results = runner.run(jobs + grid_jobs, "decisions for every class of machine")

    window_out: dict[str, dict[str, Any]] = {}
    position = 0
    for key, classes in windows.items():
        count = len(classes.slots())
        texts = results[position:position + count]
        position += count
        inside = {torch for torch, _ in classes.facts.candidates}
        window_out[key] = {**classes.to_json(),
                           "any": [plans.add(str(t)) for t in texts], "specs": {},
                           "releases": [str(r.torch) for r in matrix.releases
                                        if str(r.torch) in inside]}

    chosen = _specifier_decisions(matrix, runner, windows, window_out, plans, candidates,
                                  names, specifiers)
    verdicts = _Verdicts()
    grid = _grid(matrix, grid_layout, results[position:], candidates, verdicts)
    return Tables(plans=[json.loads(t) for t in plans.texts], windows=window_out, grid=grid,
                  verdicts=[list(v) for v in verdicts.ids], specifiers=chosen,
                  releases=[str(r.torch) for r in matrix.releases])


NOTHING = "==0.0.0.0"
"""A specifier no release matches: the answer to every specifier that matches none."""


def _sets(matrix: Matrix, window: set[tuple[str, str]], wanted: set[str] | None,
          ) -> list[tuple[str, str, list[str], bool]]:
    """The sets of releases the page answers for a window, as (key, a specifier that admits
    exactly those of the window, the window's releases in it, whether to resolve over the whole
    matrix). A specifier's answer depends only on the window's releases it admits (rule 4 runs
    first; a release outside the window is rejected by rule 1 whatever else), and on whether it
    admits any release at all (those rejections are all that names the Pythons with wheels):
    each precomputed series, each release of a series with several in the window, none of the
    window's releases but some other (``outside``), and no release at all (``none``).

    A release is named ``==X.Y.Z.0``, a spelling that nothing prints (a pin is ``==X.Y.Z``), so
    that the quoted specifier can be turned into a placeholder."""
    inside = {torch for torch, _ in window}
    out: list[tuple[str, str, list[str], bool]] = []
    for minor in minors(window):
        if wanted is not None and minor not in wanted:
            continue
        releases = sorted((r for r in inside if TorchVersion(r).series == minor),
                          key=TorchVersion)
        out.append((minor, f"=={minor}.*", releases, False))
        if len(releases) > 1:
            out.extend((r, f"=={r}.0", [r], False) for r in releases)
    others = [str(r.torch) for r in matrix.releases if str(r.torch) not in inside]
    if others:
        out.append(("outside", f"=={others[0]}.0", [], True))
    # the GPU-facts fixes ask whether a CPU build fits at all: the whole matrix (a specifier that
    # admits nothing is quick to resolve)
    out.append(("none", NOTHING, [], True))
    return out


def _specifier_decisions(matrix: Matrix, runner: _Runner, windows: dict[str, Classes],
                         window_out: dict[str, dict[str, Any]], plans: _Plans,
                         candidates: dict[str, dict[str, set[tuple[str, str]]]],
                         names: list[str], specifiers: Sequence[str] | None) -> list[str]:
    wanted = None if specifiers is None else set(specifiers)
    slots_of = {key: classes.slots() for key, classes in windows.items()}
    # (window, set key, specifier, whole matrix, slots of one class)
    groups: list[tuple[str, str, str, bool, list[int]]] = []
    chosen: set[str] = set()
    for key in windows:
        platform, python = key.split("|")
        window_out[key]["sets"] = {}
        for name, spec, releases, whole in _sets(matrix, candidates[platform][python], wanted):
            if spec == f"=={name}.*":
                chosen.add(name)
            narrow = Classes.of(matrix, facts_of(matrix, platform, window_candidates(
                matrix, platform, python, spec)), names)
            by_class: dict[int, list[int]] = {}
            for slot, gpu in enumerate(slots_of[key]):
                by_class.setdefault(narrow.slot_of(gpu), []).append(slot)
            groups.extend((key, name, spec, whole, slots) for slots in by_class.values())
            window_out[key]["specs"][name] = [-1] * len(slots_of[key])
            window_out[key]["sets"][name] = releases

    def job(key: str, spec: str, whole: bool, slot: int) -> Job:
        platform, python = key.split("|")
        unconstrained = plans.doc(window_out[key]["any"][slot])
        inside = {str(r.torch) for r in matrix.releases if TorchSpec(spec).contains(r.torch)}
        inside |= {t for t in (unconstrained.get("torch"),
                               (unconstrained.get("evidence_alternative") or {}).get("torch"))
                   if t is not None}
        return Job(platform, python, slots_of[key][slot], torch=spec,
                   releases=None if whole else tuple(sorted(inside)))

    first = runner.run([job(k, spec, whole, slots[0]) for k, _, spec, whole, slots in groups],
                       "decisions for each torch series")
    pending: list[tuple[str, str, str, bool, list[int]]] = []
    for (key, name, spec, whole, slots), result in zip(groups, first):
        text = str(result)
        kind = _dependency(json.loads(text))
        parts = [slots]
        if kind is not None:
            by_context: dict[str, list[int]] = {}
            for slot in slots:
                unconstrained = plans.doc(window_out[key]["any"][slot])
                by_context.setdefault(_context(kind, unconstrained), []).append(slot)
            parts = list(by_context.values())
        pid = plans.add(text)
        for part in parts:
            if part[0] == slots[0]:
                for slot in part:
                    window_out[key]["specs"][name][slot] = pid
            else:
                pending.append((key, name, spec, whole, part))
    more = runner.run([job(k, spec, whole, part[0]) for k, _, spec, whole, part in pending],
                      "decisions that depend on the machine's own answer")
    for (key, name, _, _, part), result in zip(pending, more):
        pid = plans.add(str(result))
        for slot in part:
            window_out[key]["specs"][name][slot] = pid
    series = dict.fromkeys(r.torch.series for r in matrix.releases)  # newest first
    return [s for s in series if s in chosen]


@dataclass(frozen=True)
class _Column:
    """One CUDA or ROCm column of a platform's grid and the slots it is evaluated for."""

    platform: str
    name: str
    cells: tuple[tuple[str, str], ...]
    classes: Classes
    cover: tuple[str, ...]


def _grid_jobs(matrix: Matrix, candidates: dict[str, dict[str, set[tuple[str, str]]]],
               names: list[str]) -> tuple[list[Job], list[Any]]:
    """The grid's evaluations: each kind of GPU over every cell, then each CUDA and ROCm column
    over its own classes; with the layout to read them back."""
    jobs: list[Job] = []
    layout: list[Any] = []
    for platform in PLATFORMS:
        tags = candidates[platform]
        cells = _ordered_cells(matrix, set().union(*tags.values()) if tags else set())
        cover = _cover(tags, set(cells))
        for kind, gpu in (("none", GpuChoice("none")),
                          ("nvidia", GpuChoice("nvidia", cc="8.0a", driver="0999.0")),
                          ("amd", GpuChoice("amd", gfx="gfx90a"))):
            layout.append(("fixed", platform, kind, len(cover)))
            jobs.extend(Job(platform, py, gpu, column="*") for py in cover)
        by_name: dict[str, list[tuple[str, str]]] = {}
        for cell in cells:
            if VariantName(cell[1]).kind in ("cuda", "rocm"):
                by_name.setdefault(cell[1], []).append(cell)
        for name, column_cells in by_name.items():
            facts: WindowFacts = facts_of(matrix, platform, column_cells)
            classes = Classes.of(matrix, facts, names)
            column_cover = _cover(tags, set(column_cells))
            kind = "nvidia" if VariantName(name).kind == "cuda" else "amd"
            slots = [gpu for gpu in classes.slots() if gpu.kind == kind]
            layout.append(("column", _Column(platform, name, tuple(column_cells), classes,
                                             tuple(column_cover)), len(slots)))
            jobs.extend(Job(platform, py, gpu, column=name)
                        for gpu in slots for py in column_cover)
    return jobs, layout


def _ordered_cells(matrix: Matrix, cells: set[tuple[str, str]]) -> list[tuple[str, str]]:
    order = {str(r.torch): i for i, r in enumerate(matrix.releases)}
    return sorted(cells, key=lambda c: (order[c[0]], c[1]))


def _grid(matrix: Matrix, layout: list[Any], results: Sequence[_Result],
          candidates: dict[str, dict[str, set[tuple[str, str]]]],
          verdicts: _Verdicts) -> dict[str, Any]:
    out: dict[str, Any] = {}
    position = 0

    def merged(count: int) -> dict[tuple[str, str], Verdict | None]:
        nonlocal position
        found: dict[tuple[str, str], Verdict | None] = {}
        for result in results[position:position + count]:
            assert isinstance(result, dict)
            for cell, verdict in result.items():
                if found.get(cell) is None:  # rule 1 under one tag of the cover, not another
                    found[cell] = verdict
        position += count
        return found

    for item in layout:
        if item[0] == "fixed":
            _, platform, kind, count = item
            grid = out.setdefault(platform, _grid_platform(matrix, platform,
                                                           candidates[platform], verdicts))
            found = merged(count)
            own = {"nvidia": "cuda", "amd": "rocm"}.get(kind)  # those cells are columns
            grid["fixed"][kind] = [-1 if VariantName(c[1]).kind == own
                                   else verdicts.add(found.get((c[0], c[1])))
                                   for c in grid["cells"]]
        else:
            _, column, slots = item
            assert isinstance(column, _Column)
            grid = out[column.platform]
            rows: dict[tuple[int, ...], int] = {}
            slot_rows: list[int] = []
            for _ in range(slots):
                found = merged(len(column.cover))
                row = tuple(verdicts.add(found.get(c)) for c in column.cells)
                slot_rows.append(rows.setdefault(row, len(rows)))
            index = {tuple(c): i for i, c in enumerate(grid["cells"])}
            grid["columns"][column.name] = {
                **column.classes.to_json(),
                "cells": [index[c] for c in column.cells],
                "rows": [list(r) for r in rows],
                "slots": slot_rows,
            }
    return out


def _grid_platform(matrix: Matrix, platform: str, tags: dict[str, set[tuple[str, str]]],
                   verdicts: _Verdicts) -> dict[str, Any]:
    """The cells of a platform and, per Python tag, the cells rule 1 rejects with the reason."""
    cells = _ordered_cells(matrix, set().union(*tags.values()) if tags else set())
    index = {c: i for i, c in enumerate(cells)}
    wheel: dict[str, list[int]] = {}
    for python in tags:
        host = page_host(platform, python, GpuChoice("none"))
        _, rejected = evaluate(Request(), host, matrix)
        row = [-1] * len(cells)
        for r in rejected:
            if r.category in RULE1 and (r.torch, r.variant) in index:
                evidence = _rejected_evidence(matrix, platform, r.torch, r.variant, r.category)
                row[index[(r.torch, r.variant)]] = verdicts.add(("no", evidence, r.reason))
        wheel[python] = row
    return {"cells": [list(c) for c in cells], "wheel": wheel, "fixed": {}, "columns": {}}
