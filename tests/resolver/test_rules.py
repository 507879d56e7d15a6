"""The architecture and driver rules of DESIGN.md, one case at a time."""

from __future__ import annotations

import pytest

from torchenv.detection.profile import Gpu, HostProfile, NvidiaInfo, PythonInfo
from torchenv.detection.target import Target, read_target
from torchenv.matrix.inference import Reach, reach
from torchenv.matrix.model import ArchFact, Evidence, Matrix, PartialList, Variant
from torchenv.resolver.rules import check_cuda_arch, check_driver
from torchenv.values import (
    ArchEntry,
    ComputeCapability,
    CudaVersion,
    DriverVersion,
    Platform,
    VariantName,
)


@pytest.mark.parametrize(
    ("entry", "cc", "jit_ok", "expected"),
    [
        ("8.0", "8.6", True, True),  # SASS runs on a newer minor of the same major
        ("8.6", "8.0", True, False),  # ... not on an older minor
        ("8.0", "9.0", True, False),  # ... and never across majors
        ("9.0+PTX", "12.0", True, True),  # PTX runs forward through the JIT
        ("9.0+PTX", "12.0", False, False),  # ... which needs the toolkit-level driver
        ("9.0+PTX", "8.6", True, False),  # PTX never runs backward
        ("9.0a", "9.0", True, True),  # arch-specific targets run on exactly that arch
        ("10.0a", "10.3", True, False),
        ("12.0", "12.1", True, True),
    ],
    ids=lambda x: str(x),
)
def test_one_entry_reaches(entry: str, cc: str, jit_ok: bool, expected: bool) -> None:
    fact = ArchFact((ArchEntry(entry),), "confirmed", "confirmed")
    assert reach(fact, ComputeCapability(cc), jit_ok=jit_ok).runs is expected


@pytest.mark.parametrize(
    ("fact", "cc", "jit_ok", "expected"),
    [
        (ArchFact((ArchEntry("8.0"),), "confirmed", "inferred"), "8.6", True,
         Reach(True, "confirmed")),  # SASS: as sure as the SASS
        (ArchFact((ArchEntry("8.0+PTX"),), "confirmed", "inferred"), "9.0", True,
         Reach(True, "inferred", by_ptx=True, ptx_major=8)),  # PTX: the weaker of the two
        (ArchFact((ArchEntry("7.0+PTX"), ArchEntry("8.0+PTX")), "inferred", "confirmed"), "10.0",
         True, Reach(True, "inferred", by_ptx=True, ptx_major=8)),  # the nearest PTX
        (ArchFact((ArchEntry("8.0+PTX"),), "confirmed", "confirmed"), "9.0", False,
         Reach(False, "confirmed")),  # PTX without the JIT runs nothing
        (ArchFact(None, "unknown", "unknown"), "8.6", True, Reach(None, "unknown")),
        (ArchFact(None, "unknown", "unknown", partial=PartialList(oldest=ArchEntry("7.0"))),
         "6.1", True, Reach(False, "confirmed", rule="oldest-target")),
        (ArchFact(None, "unknown", "unknown", partial=PartialList(
            oldest=ArchEntry("7.0"), includes=(ArchEntry("9.0"),))),
         "9.0", True, Reach(True, "confirmed", rule="named-in-list")),
        (ArchFact(None, "unknown", "unknown", partial=PartialList(oldest=ArchEntry("7.0"))),
         "8.6", True, Reach(None, "unknown")),  # above the oldest target: nobody knows
    ],
    ids=["sass", "ptx", "nearest-ptx", "ptx-without-jit", "unknown", "oldest-target",
         "named-in-list", "partial-silent"],
)
def test_reach_says_how_sure_it_is(fact: ArchFact, cc: str, jit_ok: bool,
                                   expected: Reach) -> None:
    assert reach(fact, ComputeCapability(cc), jit_ok=jit_ok) == expected


def target(
    matrix: Matrix,
    driver: str | None,
    *ccs: str,
    platform: str = "linux-x86_64",
    cuda: str | None = None,
    visible: tuple[int, ...] | None = None,
    wsl: bool = False,
) -> Target:
    """The target of a host with these GPUs (capabilities given, no PCI devices: nothing to
    look up in ``matrix``'s catalog)."""
    gpus = tuple(Gpu(index=i, compute_capability=ComputeCapability(c), name=f"GPU{i}")
                 for i, c in enumerate(ccs))
    return read_target(HostProfile(
        platform=Platform(platform),
        python=PythonInfo("3.12"),
        glibc="2.35",
        wsl=wsl,
        nvidia=NvidiaInfo(DriverVersion(driver) if driver else None,
                          CudaVersion(cuda) if cuda else None, "test", gpus, visible=visible),
    ), matrix)


def arch(*entries: str) -> tuple[ArchEntry, ...]:
    return tuple(map(ArchEntry, entries))


def cu128(*entries: str) -> Variant:
    """A cu128 build whose Linux x86_64 list is ``entries``, confirmed."""
    return Variant(VariantName("cu128"), (Platform("linux-x86_64"),), arch_list=arch(*entries))


def test_every_visible_gpu_must_be_covered(matrix: Matrix) -> None:
    verdict = check_cuda_arch(target(matrix, "570.86", "8.6", "6.1"), matrix, matrix.releases[0],
                              cu128("7.5", "8.0", "8.6", "9.0"), jit_ok=True)
    assert verdict.reason == "GPU 1 (sm_61, GPU1) not in arch list 7.5–9.0"
    assert (verdict.rejected_by, verdict.evidence) == ("arch-list", Evidence.CONFIRMED)


def test_gpus_hidden_by_cuda_visible_devices_do_not_count(matrix: Matrix) -> None:
    h = target(matrix, "570.86", "8.6", "6.1", visible=(0,))
    verdict = check_cuda_arch(h, matrix, matrix.releases[0], cu128("7.5", "8.0", "8.6", "9.0"),
                              jit_ok=True)
    assert verdict.reason is None and verdict.evidence is Evidence.CONFIRMED


def test_driver_at_the_toolkit_floor_is_fully_compatible(matrix: Matrix) -> None:
    v = check_driver(target(matrix, "570.26", "9.0"), matrix, CudaVersion("12.8"))
    assert v.ok and v.full and not v.warnings


def test_driver_between_the_floors_works_with_a_warning(matrix: Matrix) -> None:
    v = check_driver(target(matrix, "550.54.15", "9.0"), matrix, CudaVersion("12.8"))
    assert v.ok and not v.full
    assert "minor-version compatibility" in v.warnings[0]
    assert v.needed == DriverVersion("570.26")


def test_driver_below_the_compat_floor_is_rejected(matrix: Matrix) -> None:
    v = check_driver(target(matrix, "520.61.05", "9.0"), matrix, CudaVersion("12.1"))
    assert not v.ok
    assert v.reason == "driver 520.61.05 is below the CUDA 12.x compatibility floor 525.60.13"


def test_the_cuda_version_nvml_reports_is_the_authority(matrix: Matrix) -> None:
    full = check_driver(target(matrix, "999.0", "9.0", cuda="12.4"), matrix, CudaVersion("12.4"))
    assert full.ok and full.full
    compat = check_driver(target(matrix, "999.0", "9.0", cuda="12.4"), matrix, CudaVersion("12.8"))
    assert compat.ok and not compat.full
    other_major = check_driver(target(matrix, "999.0", "9.0", cuda="12.4"), matrix,
                               CudaVersion("13.0"))
    assert not other_major.ok


def test_windows_and_wsl_use_the_windows_floors(matrix: Matrix) -> None:
    # 570.30 is above the Linux 12.8 floor (570.26) but below the Windows one (570.65)
    assert check_driver(target(matrix, "570.30", "9.0"), matrix, CudaVersion("12.8")).full
    windows = target(matrix, "570.30", "9.0", platform="win-amd64")
    assert not check_driver(windows, matrix, CudaVersion("12.8")).full
    wsl = target(matrix, "570.30", "9.0", wsl=True)
    assert not check_driver(wsl, matrix, CudaVersion("12.8")).full


def test_no_driver_is_a_rejection(matrix: Matrix) -> None:
    v = check_driver(target(matrix, None, "9.0"), matrix, CudaVersion("12.8"))
    assert not v.ok and v.reason == "no NVIDIA driver found"

