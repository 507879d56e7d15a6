"""The equivalence classes of host facts that decide :func:`~torchenv.resolver.resolve.resolve`.

The explorer page answers "what does ``torchenv resolve`` say for this machine" by looking the
answer up, never by running rules in the browser. That is possible because ``resolve()`` reads the
facts a user can type only through a few comparisons with the matrix, so the unbounded input
space falls into finitely many classes whose members get the same answer. Each class is computed
here from what the resolver actually reads, and one representative host per class is resolved
(:mod:`torchenv.explorer.tables`).

A page host is what the CLI builds from ``--platform P --python X`` plus one of ``--no-gpu``,
``--driver D --gpu CC``, ``--gpu CC`` (driver unknown) or ``--rocm-arch GFX`` (no glibc, no
``CUDA_VISIBLE_DEVICES``, no WSL, one GPU). For such a host:

**Platform and Python.** Kept exactly: they are compared by equality (a wheel's tag) and printed.
Everything below is computed *per (platform, Python tag)*, and per torch specifier where one is
given, over the *window*: the candidates (release, variant) that pass rule 1 (a wheel for the tag
on the platform) and match the specifier. A candidate outside the window is rejected before the
driver, the GPU or its index entry is looked at, in every evaluation the resolver runs for that
host (its fixes and the evidence-backed alternative included), so facts of variants outside the
window cannot change the answer; the window is read from ``evaluate()`` itself
(:func:`window_facts`).

**Driver version.** ``check_driver`` compares the driver only with the toolkit floor and the
minor-version-compatibility floor of each CUDA version in the window (``driver_floors``, Linux or
Windows numbers), and the fixes compare it only with those floors (an upgrade that adds no fit is
never named). So the classes are the intervals between consecutive floors, plus "no driver
known" (:class:`DriverClasses`).

**Compute capability.** ``check_cuda_arch`` asks, for each arch list of the window, whether an
entry runs the GPU as SASS, whether one runs it with the driver's JIT, and whether a PTX entry
could run it (the hint in the reason), through ``matrix.inference.reach`` (and ``entry_runs`` for
the PTX hint); for a CUDA version whose list is
unknown on the platform it asks ``toolkit_excludes``, and the per-GPU inference rules ask of the
confirmed lists around it how many entries are at or below the GPU and whether one of those
carries PTX (``matrix.inference``). Two capabilities with the same answers to all of these are
one class; the ``a``/``f`` suffix of a typed capability changes only the text
(:class:`CapabilityClasses`). Capabilities 1.0 to 19.9 (the range the CLI accepts) are
tabulated.

**ROCm target.** ``check_rocm`` asks whether the gfx target is in each ROCm variant's list or
among the targets it leaves open; targets in the same lists are one class, and every target in
no list of the window is one class (:class:`GfxClasses`).

**Torch specifier.** Rule 4 runs first, and a release outside the window is then rejected by
rule 1 whatever else, so a specifier's answer depends only on the window's releases it admits and
on whether it admits any release at all: the page answers each series it was generated with,
each release of such a series that has several in the window, "none of the window's" and "none
at all"; anything else is not answered.

The driver, capability and gfx target are also *printed* (``driver 550.54.15 supports CUDA
12.4``, ``GPU 0 (sm_86)``). Representatives are therefore spelled so that they cannot occur in
any other text: a driver with its branch padded to four digits (``0550.54.14`` is 550.54.14;
NVIDIA never pads a branch), a capability with the ``a`` suffix (``8.6a``, ``sm_86a``: no arch
list of the matrix holds one, and a suffix changes no rule's answer for a device). The resolved
answer is turned into a template by replacing those spellings with placeholders, and the page
fills in what the user typed. ``tests/explorer`` checks every table against ``resolve()`` for
generated hosts.

The explorer works on text at its own edge (what the user types, the page's JSON): a GPU
choice, a window's candidates (torch, variant) and its platform are text, read into values where
they meet the matrix and the resolver.
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Optional

from torchenv.detection.detect import apply_overrides
from torchenv.detection.overrides import Overrides
from torchenv.detection.profile import HostProfile, PythonInfo
from torchenv.matrix.inference import entry_runs, reach, toolkit_excludes
from torchenv.matrix.model import ArchFact, Evidence, Matrix, ToolkitFloor
from torchenv.resolver.request import Request
from torchenv.resolver.resolve import evaluate
from torchenv.resolver.rules import driver_floors
from torchenv.values import (
    ArchEntry,
    ComputeCapability,
    CudaVersion,
    DriverVersion,
    Platform,
    TorchSpec,
    TorchVersion,
    VariantName,
)

__all__ = [
    "CC_MAJORS",
    "RULE1",
    "TOKENS",
    "CapabilityClasses",
    "Classes",
    "DriverClasses",
    "GfxClasses",
    "GpuChoice",
    "WindowFacts",
    "capability_index",
    "facts_of",
    "page_host",
    "template",
    "window_candidates",
    "window_facts",
]

CC_MAJORS = range(1, 20)
"""Compute capability majors the page tabulates (the CLI accepts 1 to 19)."""

TOKENS = {"driver": "{{driver}}", "cc": "{{cc}}", "sm": "{{sm}}", "smbase": "{{smbase}}",
          "gfx": "{{gfx}}", "spec": "{{spec}}"}
"""Placeholders of a templated answer: the driver, the capability (``8.6``), its ``sm_86a``
spelling, the same without suffix (``sm_86``), the gfx target, as the user typed them, and the
torch specifier as messages quote it (Python's ``repr`` of the text)."""

_GFX_ABSENT = "gfxzzz"  # a spelling no list holds and no text prints: the "in no list" class


def capability_index(cc: str) -> int:
    """Position of ``8.6`` / ``9.0a`` in the tables of :class:`CapabilityClasses`."""
    capability = ComputeCapability(cc)
    return (capability.major - CC_MAJORS.start) * 10 + capability.minor


@dataclass(frozen=True)
class GpuChoice:
    """The accelerator part of a page host: ``none``, ``nvidia`` (capability, driver or None for
    unknown) or ``amd`` (gfx target)."""

    kind: str
    cc: Optional[str] = None
    driver: Optional[str] = None
    gfx: Optional[str] = None


def page_host(platform: str, python: str, gpu: GpuChoice) -> HostProfile:
    """The host ``torchenv resolve --platform P --python X`` plus the GPU flags describes, built by
    the CLI's own override code (detection contributes nothing: no GPU, no glibc)."""
    plat = Platform(platform)
    base = HostProfile(platform=plat, python=PythonInfo(version=python))
    if gpu.kind == "none":
        overrides = Overrides(platform=plat, python=python, no_gpu=True)
    elif gpu.kind == "nvidia":
        assert gpu.cc is not None
        driver = DriverVersion(gpu.driver) if gpu.driver is not None else None
        overrides = Overrides(platform=plat, python=python, driver=driver,
                              gpus=(ComputeCapability(gpu.cc),))
    elif gpu.kind == "amd":
        assert gpu.gfx is not None
        overrides = Overrides(platform=plat, python=python, rocm_archs=(gpu.gfx,))
    else:
        raise ValueError(f"unknown GPU kind {gpu.kind!r}")
    return apply_overrides(base, overrides)


@dataclass(frozen=True)
class WindowFacts:
    """What the accelerator rules can read for one (platform, Python[, specifier]) window.

    ``arch_lists``: the distinct known CUDA arch lists; ``unknown_cudas``: CUDA versions with a
    candidate whose list on the platform is unknown; ``cudas``: every CUDA version; ``gfx_lists``:
    the distinct known ROCm target lists; ``candidates``: (torch, variant) of the window.
    """

    platform: str
    cudas: tuple[CudaVersion, ...]
    arch_lists: tuple[tuple[ArchEntry, ...], ...]
    unknown_cudas: tuple[CudaVersion, ...]
    gfx_lists: tuple[tuple[str, ...], ...]
    candidates: tuple[tuple[str, str], ...]


RULE1 = ("python", "platform", "glibc")
"""Rejection categories of rule 1 (a wheel for the platform, the Python tag and glibc)."""


def window_candidates(matrix: Matrix, platform: str, python: str,
                      torch: str | None = None) -> list[tuple[str, str]]:
    """(torch, variant) of the window, read from ``evaluate()``: on a host without GPUs every
    candidate that passes rule 1 is either compatible (CPU) or rejected by a later rule."""
    host = page_host(platform, python, GpuChoice("none"))
    request = Request(torch=TorchSpec(torch) if torch else None)
    ok, rejected = evaluate(request, host, matrix)
    names = [(str(c.release.torch), str(c.variant.name)) for c in ok]
    names += [(r.torch, r.variant) for r in rejected if r.category not in RULE1]
    return names


def window_facts(matrix: Matrix, platform: str, python: str,
                 torch: str | None = None) -> WindowFacts:
    """The facts of the window of (platform, Python[, specifier])."""
    return facts_of(matrix, platform, window_candidates(matrix, platform, python, torch))


def facts_of(matrix: Matrix, platform: str,
             candidates: Iterable[tuple[str, str]]) -> WindowFacts:
    """What the accelerator rules can read of ``candidates`` (torch, variant) on ``platform``."""
    names = list(dict.fromkeys(candidates))
    plat = Platform(platform)
    cudas: set[CudaVersion] = set()
    lists: set[tuple[ArchEntry, ...]] = set()
    unknown: set[CudaVersion] = set()
    gfx: set[tuple[str, ...]] = set()
    for torch_text, name_text in names:
        torch_version, name = TorchVersion(torch_text), VariantName(name_text)
        release = matrix.release(torch_version)
        assert release is not None
        variant = release.variant(name)
        if variant is None or variant.kind in ("cpu", "xpu"):
            # a PyPI default missing from the variants is built without an arch list
            cuda = name.cuda if variant is None else None
            if cuda is not None:
                cudas.add(cuda)
                unknown.add(cuda)
            continue
        if variant.cuda_version is not None:
            cudas.add(variant.cuda_version)
            fact = variant.arch_fact(plat)
            if fact.sass != Evidence.UNKNOWN and fact.arch_list is not None:
                lists.add(fact.arch_list)
            else:
                unknown.add(variant.cuda_version)
                # the lists the per-GPU inference rules read for an unknown one split the
                # GPUs too (matrix.inference: excluded-by-family, windows-covers-linux), and
                # so do what partial lists say (oldest target, entries named)
                around = fact.neighbours
                near = [fact, *(f for _, f in (*around.older, *around.newer))] if around \
                    else [fact]
                lists.update(f.arch_list for f in near[1:] if f.arch_list is not None)
                lists.update(_partial_lists(near))
                if around is not None and around.linux is not None \
                        and around.linux.arch_list is not None:
                    lists.add(around.linux.arch_list)
        elif variant.kind == "rocm":
            targets = matrix.rocm_targets(name, torch_version)
            if targets is not None:
                gfx.add(targets.gfx)
                if targets.may_have:  # an open target answers otherwise (unknown)
                    gfx.add(targets.may_have)
    return WindowFacts(platform, tuple(sorted(cudas)), tuple(sorted(lists)),
                       tuple(sorted(unknown)), tuple(sorted(gfx)), tuple(names))


def _partial_lists(facts: list[ArchFact]) -> list[tuple[ArchEntry, ...]]:
    """Lists whose answers split the capabilities where partial lists' rules do: the oldest
    target alone, and the entries named."""
    out: list[tuple[ArchEntry, ...]] = []
    for f in facts:
        if f.partial is not None:
            if f.partial.oldest is not None:
                out.append((f.partial.oldest,))
            if f.partial.includes:
                out.append(f.partial.includes)
    return out


@dataclass(frozen=True)
class DriverClasses:
    """Driver versions as the intervals between the floors of a window.

    Class ``i`` holds the drivers at or above ``floors[i-1]`` and below ``floors[i]`` (class 0:
    below every floor); :data:`UNKNOWN` is a GPU whose driver is not known.
    """

    floors: tuple[DriverVersion, ...]

    UNKNOWN = -1

    @classmethod
    def of(cls, matrix: Matrix, facts: WindowFacts) -> DriverClasses:
        windows = facts.platform == "win-amd64"
        floors = {f for cuda in facts.cudas
                  for f in driver_floors(matrix, cuda, windows=windows) if f}
        return cls(tuple(sorted(floors)))

    @property
    def count(self) -> int:
        return len(self.floors) + 1

    def index(self, driver: str | None) -> int:
        if driver is None:
            return self.UNKNOWN
        return bisect.bisect_right(self.floors, DriverVersion(driver))

    def representative(self, index: int) -> str | None:
        """A driver of class ``index`` spelled as no text prints one: its floor with the branch
        padded to four digits (``0550.54.14``; a bare branch ``0580.0``), or ``0000.0``."""
        if index == self.UNKNOWN:
            return None
        if not index:
            return "0000.0"
        floor = self.floors[index - 1]  # a branch of three digits, as every NVIDIA one has
        return f"0{floor}" if len(floor.parts) > 1 else f"0{floor}.0"


_CAPABILITIES = tuple(ComputeCapability.from_parts(major, minor)
                      for major in CC_MAJORS for minor in range(10))


@functools.cache
def _list_answers(arch_list: tuple[ArchEntry, ...]
                  ) -> tuple[tuple[bool, bool, bool, int, bool], ...]:
    """For every tabulated capability, what the rules can learn of it from one list: an entry
    runs it as SASS, one runs it with the driver's JIT, a PTX entry could run it (the hint in
    ``check_cuda_arch``'s reason); and, for the per-GPU inference rules that read a confirmed
    list around an unknown one (``matrix.inference.list_excludes``, ``excluded-by-family``),
    how many entries are at or below it and whether one of those carries PTX."""
    def below(cc: ComputeCapability) -> list[ArchEntry]:
        return [e for e in arch_list if (e.major, e.minor) <= (cc.major, cc.minor)]

    # the evidence is not asked here
    fact = ArchFact(arch_list, Evidence.CONFIRMED, Evidence.CONFIRMED)
    return tuple((reach(fact, cc, jit_ok=False).runs is True,
                  reach(fact, cc, jit_ok=True).runs is True,
                  any(entry_runs(e, cc, jit_ok=True) for e in arch_list if e.ptx),
                  len(below(cc)), any(e.ptx for e in below(cc)))
                 for cc in _CAPABILITIES)


@functools.cache
def _bounds(cuda: CudaVersion, floor: ToolkitFloor | None) -> tuple[str | None, ...]:
    """For every tabulated capability, why CUDA ``cuda`` cannot hold code for it, or None."""
    return tuple(toolkit_excludes(cc, cuda, floor) for cc in _CAPABILITIES)


@dataclass(frozen=True)
class CapabilityClasses:
    """Compute capabilities 1.0–19.9 grouped by what the arch rules of a window answer.

    ``table[capability_index(cc)]`` is the class of ``cc``; ``representatives[k]`` spells one
    member of class ``k`` as ``M.ma`` (``8.6a`` is 8.6 to every rule, and printed only where the
    GPU is).
    """

    table: tuple[int, ...]
    representatives: tuple[str, ...]

    @classmethod
    def of(cls, matrix: Matrix, facts: WindowFacts) -> CapabilityClasses:
        answers: list[tuple[object, ...]] = [_list_answers(arch) for arch in facts.arch_lists]
        answers += [_bounds(cuda, matrix.toolkit_floor(cuda)) for cuda in facts.unknown_cudas]
        seen: dict[tuple[object, ...], int] = {}
        table: list[int] = []
        reps: list[str] = []
        for i, cc in enumerate(_CAPABILITIES):
            sig = tuple(column[i] for column in answers)
            if sig not in seen:
                seen[sig] = len(reps)
                reps.append(str(ComputeCapability.from_parts(cc.major, cc.minor, "a")))
            table.append(seen[sig])
        return cls(tuple(table), tuple(reps))

    @property
    def count(self) -> int:
        return len(self.representatives)

    def index(self, cc: str) -> int:
        return self.table[capability_index(cc)]


@dataclass(frozen=True)
class GfxClasses:
    """ROCm gfx targets grouped by the lists of a window that hold them.

    Targets not in ``known`` are in class 0 with every target no list of the window holds.
    """

    known: tuple[tuple[str, int], ...]
    representatives: tuple[str, ...]

    @classmethod
    def of(cls, facts: WindowFacts, names: Iterable[str]) -> GfxClasses:
        seen: dict[tuple[bool, ...], int] = {(False,) * len(facts.gfx_lists): 0}
        reps = [_GFX_ABSENT]
        known: list[tuple[str, int]] = []
        for name in sorted(set(names)):
            sig = tuple(name in gfx for gfx in facts.gfx_lists)
            if sig not in seen:
                seen[sig] = len(reps)
                reps.append(name)
            known.append((name, seen[sig]))
        return cls(tuple(known), tuple(reps))

    @property
    def count(self) -> int:
        return len(self.representatives)

    def index(self, gfx: str) -> int:
        return dict(self.known).get(gfx, 0)


@dataclass(frozen=True)
class Classes:
    """The classes of one window, numbered as *slots*: slot 0 is "no GPU"; then, for each
    capability class ``k`` and driver class ``d`` (unknown first), slot ``1 + k·(D+1) + d + 1``;
    then one slot per gfx class. The page computes the same numbers from what the user typed."""

    facts: WindowFacts
    drivers: DriverClasses
    capabilities: CapabilityClasses
    gfx: GfxClasses

    @classmethod
    def of(cls, matrix: Matrix, facts: WindowFacts, gfx_names: Iterable[str]) -> Classes:
        return cls(facts, DriverClasses.of(matrix, facts), CapabilityClasses.of(matrix, facts),
                   GfxClasses.of(facts, gfx_names))

    def slots(self) -> list[GpuChoice]:
        """One representative per slot, in slot order."""
        out = [GpuChoice("none")]
        for cc in self.capabilities.representatives:
            for d in range(DriverClasses.UNKNOWN, self.drivers.count):
                out.append(GpuChoice("nvidia", cc=cc, driver=self.drivers.representative(d)))
        out.extend(GpuChoice("amd", gfx=gfx) for gfx in self.gfx.representatives)
        return out

    def slot_of(self, gpu: GpuChoice) -> int:
        """The slot of a GPU choice, typed by a user or a representative of any window."""
        if gpu.kind == "none":
            return 0
        per = self.drivers.count + 1
        if gpu.kind == "nvidia":
            assert gpu.cc is not None
            k = self.capabilities.index(gpu.cc)
            return 1 + k * per + self.drivers.index(gpu.driver) + 1
        assert gpu.gfx is not None
        return 1 + self.capabilities.count * per + self.gfx.index(gpu.gfx)

    def to_json(self) -> dict[str, Any]:
        """What the page needs to number the slots."""
        return {
            "drivers": [str(f) for f in self.drivers.floors],
            "cc": _base36(self.capabilities.table),
            "ccCount": self.capabilities.count,
            "gfx": dict(self.gfx.known),
            "gfxCount": self.gfx.count,
        }


def _base36(values: Sequence[int]) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    if any(v >= len(digits) for v in values):
        raise ValueError(f"{max(values) + 1} capability classes: more than one character each")
    return "".join(digits[v] for v in values)


def template(text: str, gpu: GpuChoice) -> str:
    """``text`` (a resolved answer) with the representative spellings of ``gpu`` replaced by
    the placeholders of :data:`TOKENS`."""
    if gpu.kind == "nvidia":
        assert gpu.cc is not None
        cc = ComputeCapability(gpu.cc)
        text = text.replace(cc.sm, TOKENS["sm"])
        text = text.replace(cc.base.sm, TOKENS["smbase"])
        text = text.replace(str(cc), TOKENS["cc"])
        if gpu.driver is not None:
            text = text.replace(gpu.driver, TOKENS["driver"])
    elif gpu.kind == "amd":
        assert gpu.gfx is not None
        text = re.sub(rf"(?<![0-9a-z]){re.escape(gpu.gfx)}(?![0-9a-z])", TOKENS["gfx"], text)
    return text
