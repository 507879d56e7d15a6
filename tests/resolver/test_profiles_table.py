"""Host profiles by GPU generation, platform, pin and driver: the pick (or exit 3) and the rule
that decides it, replayed against the embedded matrix.

Each row: (id, target overrides, request, expected (torch, variant, arch evidence) or None for
exit 3, the rule). Rules of a pick: ``confirmed`` (a confirmed list runs every GPU, and it is the
newest such build), an inference rule of :mod:`torchenv.matrix.inference` named in the plan's
``evidence.arch_rule`` (``windows-covers-linux``, ``adjacent-releases-agree``,
``unchanged-between-releases``, ``runtime-table-in-sync``), ``neighbours-include`` (only unknown
builds fit; the variant's confirmed lists in other releases all run the GPU), ``ptx-jit`` (a GPU
reached only by JIT-compiling PTX). Rules of exit 3: ``toolkit-bounds``, ``excluded-by-family``,
``arch`` (confirmed lists leave the GPU out), ``driver``.

Beyond each row's expectation, every pick is checked against the data independently of the
resolver: it runs on every visible GPU by its list (for ``windows-covers-linux``, by the same
build's Linux x86_64 list), and no newer build with confirmed or inferred native support for
every GPU fits the host.
"""

from __future__ import annotations

from typing import Any

import pytest

from torchenv.detection.detect import apply_overrides
from torchenv.detection.overrides import Overrides
from torchenv.detection.profile import HostProfile, PythonInfo
from torchenv.matrix.model import Evidence, Matrix
from torchenv.resolver import NoMatch, Request, resolve
from torchenv.resolver.plan import ARCH_RULES
from torchenv.resolver.rank import ranked
from torchenv.values import ArchEntry, ComputeCapability, Platform, TorchVersion, VariantName

BASE = HostProfile(platform=Platform("linux-x86_64"), python=PythonInfo("3.12"), glibc="2.35")

WIN = "win-amd64"
WIN_DRIVER = "595.97"  # a current Windows driver (CUDA 13.2)
LINUX_DRIVER = "580.65.06"  # CUDA 13.0
K80_DRIVER = "470.82.01"  # the last branch for Kepler (CUDA 11.4)

Row = tuple[str, dict[str, Any], dict[str, Any], Any, str]

_LATEST_WIN: list[Row] = [
    ("win kepler 3.5 latest", {"gpus": ["3.5"]}, {}, None, "toolkit-bounds"),
    # the Windows cu118 lists of 2.0-2.5 carry 3.7 (and 3.7+PTX); 2.6 and 2.7 left the 11.8
    # build unchanged (their release manager)
    ("win kepler 3.7 latest", {"gpus": ["3.7"]}, {}, ("2.7.1", "cu118", "inferred"),
     "unchanged-by-statement"),
    # 2.15.0 has no cu126: the 2.14 cu126 Windows list (RELEASE.md table) is the newest with
    # Maxwell, Pascal and Volta
    *[(f"win {name} {cc} latest", {"gpus": [cc]}, {}, ("2.14.1", "cu126", "confirmed"),
       "confirmed")
      for name, cc in [("maxwell", "5.0"), ("maxwell", "5.2"), ("pascal", "6.0"),
                       ("pascal", "6.1"), ("volta", "7.0")]],
    # 2.15.0 cu132's Linux x86_64 list is confirmed (the PyPI wheel); its Windows list is not
    *[(f"win {name} {cc} latest", {"gpus": [cc]}, {}, ("2.15.0", "cu132", "inferred"),
       "windows-covers-linux")
      for name, cc in [("turing", "7.5"), ("ampere", "8.0"), ("ampere", "8.6"), ("ada", "8.9"),
                       ("hopper", "9.0"), ("blackwell", "10.0"), ("blackwell", "12.0")]],
]

_PINNED_WIN: list[Row] = [
    ("win kepler 3.5 ==2.8", {"gpus": ["3.5"]}, {"torch": "==2.8.*"}, None, "toolkit-bounds"),
    ("win kepler 3.7 ==2.8", {"gpus": ["3.7"]}, {"torch": "==2.8.*"}, None, "toolkit-bounds"),
    # 2.8.0 cu126 Linux is inferred (2.7.1 and 2.9 confirm the same list), and Windows runs
    # what it runs; cu128/cu129 Windows are unknown and their later lists leave these GPUs out
    *[(f"win {name} {cc} ==2.8", {"gpus": [cc]}, {"torch": "==2.8.*"},
       ("2.8.0", "cu126", "inferred"), "windows-covers-linux")
      for name, cc in [("maxwell", "5.0"), ("maxwell", "5.2"), ("pascal", "6.0"),
                       ("pascal", "6.1")]],
    # Volta, Turing: the 2.8.0 Windows cu129 list is not known whole, but its maintainers name
    # sm_70 in it (and in cu128's), whose SASS runs 7.x; 12.9 is the newer CUDA
    *[(f"win {name} {cc} ==2.8", {"gpus": [cc]}, {"torch": "==2.8.*"},
       ("2.8.0", "cu129", "confirmed"), "named-in-list")
      for name, cc in [("volta", "7.0"), ("turing", "7.5")]],
    # the confirmed 2.8.0 cu128 Linux list (wheel) runs 7.0 to 12.0
    *[(f"win {name} {cc} ==2.8", {"gpus": [cc]}, {"torch": "==2.8.*"},
       ("2.8.0", "cu128", "inferred"), "windows-covers-linux")
      for name, cc in [("ampere", "8.0"),
                       ("ampere", "8.6"), ("ada", "8.9"), ("hopper", "9.0"),
                       ("blackwell", "10.0"), ("blackwell", "12.0"),
                       # sm_120's SASS runs a 12.1 GPU (GB10): CUDA 12.8 holds code for it
                       ("blackwell", "12.1")]],
    ("win pascal 6.1 ==2.6", {"gpus": ["6.1"]}, {"torch": "==2.6.*"},
     ("2.6.0", "cu124", "inferred"), "windows-covers-linux"),
    ("win ampere 8.6 ==2.6", {"gpus": ["8.6"]}, {"torch": "==2.6.*"},
     ("2.6.0", "cu124", "inferred"), "windows-covers-linux"),
    # only the 11.8 build's 3.7+PTX reaches it (a long JIT)
    ("win blackwell 12.0 ==2.6", {"gpus": ["12.0"]}, {"torch": "==2.6.*"},
     ("2.6.0", "cu118", "inferred"), "ptx-jit"),
    ("win pascal 6.1 ==2.7", {"gpus": ["6.1"]}, {"torch": "==2.7.*"},
     ("2.7.1", "cu126", "inferred"), "windows-covers-linux"),
    ("win ampere 8.6 ==2.7", {"gpus": ["8.6"]}, {"torch": "==2.7.*"},
     ("2.7.1", "cu126", "inferred"), "windows-covers-linux"),
    # nothing known of 2.7 cu128 on either platform (the later cu128 lists all have sm_120):
    # known support through the 11.8 build's 3.7+PTX comes first, evidence before recency
    ("win blackwell 12.0 ==2.7", {"gpus": ["12.0"]}, {"torch": "==2.7.*"},
     ("2.7.1", "cu118", "inferred"), "ptx-jit"),
    ("win blackwell 12.0 ==2.7 cu128", {"gpus": ["12.0"]}, {"torch": "==2.7.*", "cuda": "12.8"},
     ("2.7.1", "cu128", "unknown"), "neighbours-include"),
]
_PINNED_WIN = [(i, {"platform": WIN, "driver": WIN_DRIVER, **o}, r, e, rule)
               for i, o, r, e, rule in _PINNED_WIN]
_LATEST_WIN = [(i, {"platform": WIN, "driver": WIN_DRIVER, **o}, r, e, rule)
               for i, o, r, e, rule in _LATEST_WIN]

_PTX: list[Row] = [
    # before 2.8 no Windows build is known to carry sm_120: the cu118 Windows lists reach it
    # only through their 3.7+PTX (a long JIT, said in the warnings)
    ("win blackwell 12.0 <2.8: PTX of 3.7", {"platform": WIN, "driver": WIN_DRIVER,
                                             "gpus": ["12.0"]}, {"torch": "<2.8"},
     ("2.7.1", "cu118", "inferred"), "ptx-jit"),
    ("win blackwell 12.0 <2.6: PTX of 3.7", {"platform": WIN, "driver": WIN_DRIVER,
                                             "gpus": ["12.0"]}, {"torch": "<2.6"},
     ("2.5.1", "cu118", "confirmed"), "ptx-jit"),
    # a Pascal and a Blackwell card: no known list runs both natively on Windows
    ("win pascal+blackwell latest", {"platform": WIN, "driver": WIN_DRIVER,
                                     "gpus": ["6.1", "12.0"]}, {},
     ("2.7.1", "cu118", "inferred"), "ptx-jit"),
    ("win ampere+blackwell latest", {"platform": WIN, "driver": WIN_DRIVER,
                                     "gpus": ["8.6", "12.0"]}, {},
     ("2.15.0", "cu132", "inferred"), "windows-covers-linux"),
]


def _linux(gen: str, cc: str, driver: str, rows: list[tuple[str, Any, str]]) -> list[Row]:
    return [(f"linux {gen} {cc} =={pin}", {"driver": driver, "gpus": [cc]},
             {"torch": f"=={pin}.*"}, expected, rule) for pin, expected, rule in rows]


_KEPLER = [
    *_linux("kepler", "3.7", K80_DRIVER, [
        ("2.4", ("2.4.1", "cu118", "confirmed"), "confirmed"),
        ("2.5", ("2.5.1", "cu118", "confirmed"), "confirmed"),
        # 2.6 and 2.7 left the 11.8 build unchanged (their release manager)
        ("2.6", ("2.6.0", "cu118", "inferred"), "unchanged-by-statement"),
        ("2.7", ("2.7.1", "cu118", "inferred"), "unchanged-by-statement"),
        # from 2.8 no CUDA 11 build: a 470 driver runs none
        *[(pin, None, "driver") for pin in
          ("2.8", "2.9", "2.10", "2.11", "2.12", "2.13", "2.14", "2.15")],
    ]),
    *_linux("kepler", "3.5", K80_DRIVER, [
        ("2.4", None, "arch"),
        ("2.5", None, "arch"),
        # the cu118 lists of 2.0-2.7 all start at 3.7
        ("2.6", None, "arch"),
        ("2.7", None, "arch"),
        *[(pin, None, "driver") for pin in
          ("2.8", "2.9", "2.10", "2.11", "2.12", "2.13", "2.14", "2.15")],
    ]),
]

_CU126_KEEPS = [  # cu126 carries 5.0, 6.0 and 7.0 SASS from 2.6 to 2.14 (no cu126 in 2.15)
    ("2.7", ("2.7.1", "cu126", "confirmed"), "confirmed"),
    ("2.8", ("2.8.0", "cu126", "inferred"), "adjacent-releases-agree"),
    ("2.9", ("2.9.1", "cu126", "confirmed"), "confirmed"),
    ("2.10", ("2.10.0", "cu126", "confirmed"), "confirmed"),
    ("2.11", ("2.11.0", "cu126", "confirmed"), "confirmed"),
    ("2.12", ("2.12.1", "cu126", "confirmed"), "confirmed"),
    ("2.13", ("2.13.0", "cu126", "confirmed"), "confirmed"),
    ("2.14", ("2.14.1", "cu126", "confirmed"), "confirmed"),
    ("2.15", None, "arch"),
]
_OLD_LINUX = [
    *[row for gen, cc in [("maxwell", "5.2"), ("pascal", "6.1")] for row in _linux(
        gen, cc, LINUX_DRIVER, [
            ("2.4", ("2.4.1", "cu121", "confirmed"), "confirmed"),
            ("2.5", ("2.5.1", "cu124", "confirmed"), "confirmed"),
            ("2.6", ("2.6.0", "cu124", "confirmed"), "confirmed"),
            *_CU126_KEEPS])],
    # Volta: cu128 kept sm_70 in 2.8-2.10 (wheels; RELEASE.md table), dropped it in 2.11
    *_linux("volta", "7.0", LINUX_DRIVER, [
        ("2.4", ("2.4.1", "cu121", "confirmed"), "confirmed"),
        ("2.5", ("2.5.1", "cu124", "confirmed"), "confirmed"),
        ("2.6", ("2.6.0", "cu124", "confirmed"), "confirmed"),
        ("2.7", ("2.7.1", "cu126", "confirmed"), "confirmed"),
        ("2.8", ("2.8.0", "cu128", "confirmed"), "confirmed"),
        ("2.9", ("2.9.1", "cu128", "confirmed"), "confirmed"),
        ("2.10", ("2.10.0", "cu128", "confirmed"), "confirmed"),
        *_CU126_KEEPS[4:]]),
]

_OTHER: list[Row] = [
    # old drivers: CUDA 11.8 only. 2.7.1 is the last CUDA 11.8 release, and its 11.8 build is
    # 2.5's unchanged (the release manager's plans for 2.6 and 2.7)
    *[(f"{gen} {cc} driver {drv} ({cuda})", {"driver": drv_full, "gpus": [cc]}, {},
       ("2.7.1", "cu118", "inferred"), "unchanged-by-statement")
      for gen, cc, drv, drv_full, cuda in [
          ("ampere", "8.6", "520", "520.61.05", "CUDA 11.8"),
          ("turing", "7.5", "520", "520.61.05", "CUDA 11.8"),
          ("ampere", "8.6", "470", K80_DRIVER, "CUDA 11.4"),
          ("kepler", "3.7", "520", "520.61.05", "CUDA 11.8")]],
    ("pascal 6.1 driver 390", {"driver": "390.116", "gpus": ["6.1"]}, {}, None, "driver"),
    # current Linux hosts
    # the PyPI build by minor-version compatibility (index and list confirmed) before cu130
    ("linux ada 8.9 580 latest", {"driver": LINUX_DRIVER, "gpus": ["8.9"]}, {},
     ("2.15.0", "cu132", "confirmed"), "confirmed"),
    ("linux ada 8.9 595 latest", {"driver": "595.45.04", "gpus": ["8.9"]}, {},
     ("2.15.0", "cu132", "confirmed"), "confirmed"),
    ("linux blackwell 12.0 580 latest", {"driver": LINUX_DRIVER, "gpus": ["12.0"]}, {},
     ("2.15.0", "cu132", "confirmed"), "confirmed"),
    ("linux pascal+ampere 580 latest", {"driver": LINUX_DRIVER, "gpus": ["6.1", "8.6"]}, {},
     ("2.14.1", "cu126", "confirmed"), "confirmed"),
    ("linux kepler 3.0 580", {"driver": LINUX_DRIVER, "gpus": ["3.0"]}, {}, None, "arch"),
    # aarch64: 2.9 and 2.11 (RELEASE.md's aarch64 table for 2.11) confirm cu126 8.0;9.0, so
    # 2.10 between them keeps it
    ("aarch64 hopper 9.0 ==2.10", {"platform": "linux-aarch64", "driver": LINUX_DRIVER,
                                   "gpus": ["9.0"]}, {"torch": "==2.10.*"},
     ("2.10.0", "cu126", "inferred"), "adjacent-releases-agree"),
    # 2.7.1's wheel and 2.9's table confirm cu126's SASS; its PTX entry is known only in
    # releases further off (2.7.1, 2.11.0), with unknown ones between
    ("pascal 6.1 ==2.8", {"driver": LINUX_DRIVER, "gpus": ["6.1"]}, {"torch": "==2.8.*"},
     ("2.8.0", "cu126", "inferred"), "unchanged-between-releases"),
    ("aarch64 thor 11.0 latest", {"platform": "linux-aarch64", "driver": LINUX_DRIVER,
                                  "gpus": ["11.0"]}, {},
     ("2.15.0", "cu132", "confirmed"), "confirmed"),
    ("aarch64 blackwell 12.0 ==2.10", {"platform": "linux-aarch64", "driver": LINUX_DRIVER,
                                       "gpus": ["12.0"]}, {"torch": "==2.10.*"},
     ("2.10.0", "cu130", "unknown"), "neighbours-include"),
]

# 2.8.0's CUDA 12.8/12.9 builds: Maxwell and Pascal removed, Volta kept (its maintainers), the
# rest of the cu129 lists not known; every later cu129 list known leaves Pascal out too
_CU129: list[Row] = [
    ("linux pascal 6.1 --cuda 12.9", {"driver": LINUX_DRIVER, "gpus": ["6.1"]},
     {"cuda": "12.9"}, None, "excluded-by-family"),
    ("linux pascal 6.1 ==2.8 cu129", {"driver": LINUX_DRIVER, "gpus": ["6.1"]},
     {"torch": "==2.8.*", "variant": "cu129"}, None, "oldest-target"),
    ("win pascal 6.1 ==2.8 --cuda 12.9", {"platform": WIN, "driver": WIN_DRIVER,
                                          "gpus": ["6.1"]},
     {"torch": "==2.8.*", "cuda": "12.9"}, None, "oldest-target"),
    ("aarch64 pascal 6.1 ==2.8", {"platform": "linux-aarch64", "driver": LINUX_DRIVER,
                                  "gpus": ["6.1"]}, {"torch": "==2.8.*"}, None, "oldest-target"),
    ("linux volta 7.0 --cuda 12.9", {"driver": LINUX_DRIVER, "gpus": ["7.0"]},
     {"cuda": "12.9"}, ("2.8.0", "cu129", "confirmed"), "named-in-list"),
    ("win volta 7.0 ==2.8 --cuda 12.9", {"platform": WIN, "driver": WIN_DRIVER,
                                         "gpus": ["7.0"]},
     {"torch": "==2.8.*", "cuda": "12.9"}, ("2.8.0", "cu129", "confirmed"), "named-in-list"),
]

TABLE: list[Row] = [*_LATEST_WIN, *_PINNED_WIN, *_PTX, *_KEPLER, *_OLD_LINUX, *_OTHER, *_CU129]


def _host(spec: dict[str, Any]) -> HostProfile:
    return apply_overrides(BASE, Overrides.from_sources(**spec))


def _runs(arch: tuple[ArchEntry, ...], cc: ComputeCapability) -> bool:
    """Written apart from the resolver: SASS of the same major and a minor at or below, or PTX
    at or below."""
    return any((e.major == cc.major and e.minor <= cc.minor and e.suffix != "a")
               or (e.ptx and (e.major, e.minor) <= (cc.major, cc.minor)) for e in arch)


def _check_runs(matrix: Matrix, host: HostProfile, torch: str, variant: str,
                rule: str) -> None:
    rel = matrix.release(TorchVersion(torch))
    assert rel is not None
    v = rel.variant(VariantName(variant))
    assert v is not None and host.nvidia is not None
    plat = Platform("linux-x86_64") if rule == "windows-covers-linux" else host.platform
    arch = v.arch_list_for(plat)
    if rule == "named-in-list":  # a partial list: the entries a source names in it
        partial = v.arch_fact(plat).partial
        assert arch is None and partial is not None
        arch = partial.includes
    assert arch is not None
    for gpu in host.nvidia.gpus:
        assert gpu.compute_capability is not None
        assert _runs(arch, gpu.compute_capability), f"{gpu.compute_capability} not in {arch}"


@pytest.mark.parametrize(("spec", "request_args", "expected", "rule"),
                         [row[1:] for row in TABLE], ids=[row[0] for row in TABLE])
def test_profile(matrix: Matrix, spec: dict[str, Any], request_args: dict[str, Any],
                 expected: Any, rule: str) -> None:
    host = _host(spec)
    request = Request.from_text(**request_args)
    if expected is None:
        with pytest.raises(NoMatch) as info:
            resolve(request, host, matrix)
        # the rule that rejects, by its id (an arch rejection names which rule 3 it was)
        assert {"arch": "arch-list"}.get(rule, rule) in {r.rule for r in info.value.rejected}
        assert {r.rule for r in info.value.rejected if r.category == "arch"} <= ARCH_RULES.keys()
        return
    plan = resolve(request, host, matrix)
    assert plan.evidence is not None
    assert (plan.torch, plan.variant, plan.evidence.arch) == expected
    if rule == "confirmed":
        assert plan.evidence.arch == "confirmed"
    elif rule == "ptx-jit":  # the evidence of the list is the expected tuple's
        assert plan.evidence.arch in ("confirmed", "inferred")
    elif rule == "neighbours-include":
        assert plan.evidence.arch_rule == "neighbours-include"
        assert any("rule neighbours-include" in r for r in plan.reasons)
        assert any("nothing proves" in w for w in plan.warnings)
    else:
        assert rule in (plan.evidence.arch_rule or "").split(" + ")
    jit = any("JIT-compiling PTX" in w for w in plan.warnings)
    assert jit is (rule == "ptx-jit")
    if plan.evidence.arch != "unknown":
        _check_runs(matrix, host, plan.torch, plan.variant, rule)
    # the newest build the evidence supports: nothing newer with known native support fits
    compatible, _ = ranked(request, host, matrix)
    newer = [c for c in compatible if c.release.torch > TorchVersion(plan.torch)
             and c.arch_evidence in (Evidence.CONFIRMED, Evidence.INFERRED)
             and not c.ptx_jit_only]
    assert not newer, [(str(c.release.torch), str(c.variant.name)) for c in newer]


def test_the_table_covers_what_it_claims() -> None:
    assert len(TABLE) >= 60
    assert len({row[0] for row in TABLE}) == len(TABLE)
    rules = {row[4] for row in TABLE}
    assert rules >= {"confirmed", "windows-covers-linux", "neighbours-include", "ptx-jit",
                     "toolkit-bounds", "excluded-by-family", "arch", "driver",
                     "adjacent-releases-agree", "unchanged-between-releases",
                     "oldest-target", "named-in-list", "unchanged-by-statement"}
    windows = {row[1]["gpus"][0] for row in TABLE if row[1].get("platform") == WIN}
    assert windows >= {"3.5", "3.7", "5.0", "6.1", "7.0", "7.5", "8.0", "8.6", "8.9", "9.0",
                       "10.0", "12.0"}
