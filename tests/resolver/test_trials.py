"""Evaluations that share a Trials give what fresh evaluations give, on every driver floor."""

from __future__ import annotations

import pytest

from torchenv._record import replace
from torchenv.detection.profile import Gpu, HostProfile, NvidiaInfo, PythonInfo
from torchenv.matrix.model import Matrix
from torchenv.resolver.request import Request
from torchenv.resolver.resolve import Trials, evaluate
from torchenv.resolver.rules import driver_floors

HOSTS = {
    "rtx 2070, driver 440": ("440.100", ("7.5",)),
    "gtx 1080 + rtx 3090, driver 535": ("535.104.05", ("6.1", "8.6")),
    "h100 x2, driver 565": ("565.57.01", ("9.0", "9.0")),
    "unknown cc, driver 470": ("470.82.01", (None,)),
}


def _host(driver: str, ccs: tuple[str | None, ...]) -> HostProfile:
    gpus = tuple(Gpu(index=i, name=f"GPU {i}", compute_capability=cc)
                 for i, cc in enumerate(ccs))
    return HostProfile(platform="linux-x86_64", python=PythonInfo("3.11"), glibc="2.35",
                       nvidia=NvidiaInfo(driver_version=driver, gpus=gpus))


def _floors(matrix: Matrix) -> list[str]:
    cudas = {v.cuda_version for r in matrix.releases for v in r.variants if v.cuda_version}
    return sorted({f for c in cudas for f in driver_floors(matrix, c, windows=False) if f},
                  key=lambda f: tuple(int(x) for x in f.split(".")))


@pytest.mark.parametrize("name", list(HOSTS))
def test_shared_trials_change_no_answer(matrix: Matrix, name: str) -> None:
    driver, ccs = HOSTS[name]
    host = _host(driver, ccs)
    assert host.nvidia is not None
    for request in (Request(), Request(torch="2.8.*")):
        trials = Trials()
        evaluate(request, host, matrix, trials=trials)  # as resolve() does first
        for floor in _floors(matrix):
            trial = host.with_changes(nvidia=replace(host.nvidia, driver_version=floor))
            for only_kind in (None, "cuda"):
                shared = evaluate(request, trial, matrix, only_kind=only_kind, trials=trials)
                fresh = evaluate(request, trial, matrix, only_kind=only_kind)
                assert shared == fresh, (name, floor, only_kind)
