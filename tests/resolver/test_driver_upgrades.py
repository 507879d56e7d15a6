"""The nearest driver upgrades a NoMatch names are those trying every driver floor would give."""

from __future__ import annotations

from dataclasses import replace

from torchenv.detection.profile import Gpu, HostProfile, NvidiaInfo, PythonInfo
from torchenv.detection.target import read_target
from torchenv.matrix.model import Matrix
from torchenv.resolver.candidate import evaluate
from torchenv.resolver.request import Request
from torchenv.resolver.rules import driver_floors
from torchenv.values import ComputeCapability, DriverVersion, Platform

HOSTS = {
    "rtx 2070, driver 440": ("440.100", ("7.5",)),
    "gtx 1080 + rtx 3090, driver 535": ("535.104.05", ("6.1", "8.6")),
    "h100 x2, driver 565": ("565.57.01", ("9.0", "9.0")),
    "unknown cc, driver 470": ("470.82.01", (None,)),
}


def _host(driver: str, ccs: tuple[str | None, ...]) -> HostProfile:
    gpus = tuple(Gpu(index=i, name=f"GPU {i}",
                     compute_capability=ComputeCapability(cc) if cc else None)
                 for i, cc in enumerate(ccs))
    return HostProfile(platform=Platform("linux-x86_64"), python=PythonInfo("3.11"),
                       glibc="2.35",
                       nvidia=NvidiaInfo(driver_version=DriverVersion(driver), gpus=gpus))


def _floors(matrix: Matrix) -> list[DriverVersion]:
    cudas = {v.cuda_version for r in matrix.releases for v in r.variants if v.cuda_version}
    return sorted({f for c in cudas for f in driver_floors(matrix, c, windows=False) if f})


def _upgrades_by_every_floor(request: Request, host: HostProfile, matrix: Matrix,
                             floors: list[DriverVersion]) -> tuple[object, object]:
    """The nearest driver upgrades found by trying every floor above the driver in turn."""
    from torchenv.resolver.rank import rank_key

    assert host.nvidia is not None and host.nvidia.driver_version is not None
    current = host.nvidia.driver_version
    above = [f for f in floors if f > current]

    def best(floor: DriverVersion) -> tuple[object, object, object] | None:
        assert host.nvidia is not None
        trial = host.with_changes(nvidia=replace(host.nvidia, driver_version=floor,
                                                 cuda_driver_version=None))
        fits = [c for c in evaluate(request, trial, matrix)[0] if c.variant.kind == "cuda"]
        if not fits:
            return None
        top = min(fits, key=lambda c: rank_key(c, True))
        return floor, top.release.torch, top.variant.name

    if not above:
        return None, None
    ceiling = best(above[-1])
    if ceiling is None:
        return None, None
    lowest = None
    for floor in above:
        found = best(floor)
        if found is None:
            continue
        lowest = lowest or found
        if found[1] == ceiling[1]:
            return lowest, found
    return lowest, ceiling


def test_the_nearest_upgrades_are_those_every_floor_would_give(matrix: Matrix) -> None:
    from torchenv.resolver.fixes import _driver_upgrades

    floors = _floors(matrix)
    intermediate = 0
    for driver in ("384.81", "418.67", "440.100", "450.80.02", "470.82.01", "510.39.01",
                   "525.60.13", "535.104.05", "550.54.14", "560.28.03"):
        for ccs in (("7.5",), ("6.1", "8.6"), ("9.0",), ("12.0",), (None,)):
            host = _host(driver, ccs)
            for request in (Request(), Request.from_text(torch="2.6.*")):
                expected = _upgrades_by_every_floor(request, host, matrix, floors)
                assert _driver_upgrades(request, read_target(host, matrix), matrix) == expected, (
                    driver, ccs, request.torch)
                newest = expected[1]
                if newest is not None and newest[0] not in (floors[-1], expected[0][0]):
                    intermediate += 1
    assert intermediate, "no case whose answer lies between the lowest and the highest floor"
