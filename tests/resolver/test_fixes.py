"""A fix NoMatch offers is one that works: each change of the request it names, added to the
command as the flags the command line spells, resolves (exit 0) where the command alone exits 3.
A fix that would exit 3 too (``--variant cpu`` on musl, where no wheel loads) is not offered."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import Cli

from torchenv.cli._fields import spell
from torchenv.detection.profile import Gpu, HostProfile, NvidiaInfo, PythonInfo
from torchenv.matrix.model import Matrix
from torchenv.resolver.plan import Change, NoMatch
from torchenv.resolver.request import Request
from torchenv.resolver.resolve import resolve
from torchenv.values import ComputeCapability, DriverVersion, Platform

_GPU = NvidiaInfo(driver_version=DriverVersion("580.65.06"),
                  gpus=(Gpu(index=0, name="NVIDIA GeForce RTX 3090",
                            compute_capability=ComputeCapability("8.6")),))
_NO_DRIVER = NvidiaInfo(driver_version=None, gpus=(Gpu(index=0, name="NVIDIA GeForce RTX 3090"),))

# name: (host, the request's flags, whether --variant cpu works there and so is offered)
CASES: dict[str, tuple[dict[str, Any], list[str], bool]] = {
    "musl, GPU": ({"musl": "1.2.5", "nvidia": _GPU}, [], False),
    "musl, no GPU": ({"musl": "1.2.5"}, [], False),
    "musl, GPU, torch 2.7": ({"musl": "1.2.5", "nvidia": _GPU}, ["--torch", "2.7"], False),
    "musl, GPU, cu126": ({"musl": "1.2.5", "nvidia": _GPU}, ["--variant", "cu126"], False),
    # the CPU wheels of these releases need glibc 2.28 as much as the CUDA ones
    "glibc 2.17, torch >= 2.7": ({"glibc": "2.17", "nvidia": _GPU}, ["--torch", ">=2.7"], False),
    "glibc 2.4, no GPU": ({"glibc": "2.4"}, [], False),
    # the contrast: on glibc the CPU build does install, so it is offered
    "driver 390, GPU": ({"glibc": "2.35", "nvidia": NvidiaInfo(
        driver_version=DriverVersion("390.157"), gpus=_GPU.gpus)}, [], True),
}


def _host(**changes: object) -> HostProfile:
    return HostProfile(platform=Platform("linux-x86_64"), python=PythonInfo("3.12"),
                       os="linux", machine="x86_64").with_changes(**changes)


def _request(flags: list[str]) -> Request:
    given = dict(zip(flags[::2], flags[1::2]))
    return Request.from_text(torch=given.get("--torch"), variant=given.get("--variant"))


def _runnable(fix_changes: list[Change]) -> list[str] | None:
    """The flags of a fix's changes, when they can be pasted as they are: not a placeholder
    (VERSION, CC), not a flag to drop, not a display flag (--explain)."""
    flags: list[str] = []
    for change in fix_changes:
        if "explain" in change or any(v is None or v in ("VERSION", "CC", ("CC",))
                                      for v in change.values()):
            return None
        flags += spell(change)
    return flags


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_every_fix_offered_resolves_when_its_flags_are_added(
        matrix: Matrix, tmp_path: Path, cli: Cli, case: str) -> None:
    changes, flags, cpu_works = CASES[case]
    host = _host(**changes)
    with pytest.raises(NoMatch) as caught:
        resolve(_request(flags), host, matrix)
    texts = [f.text(spell) for f in caught.value.fixes]
    host_file = tmp_path / "host.json"
    host_file.write_text(json.dumps(host.to_json()))
    res = cli(["resolve", "--host", str(host_file), "--json", *flags])
    assert res.returncode == 3, res.stdout + res.stderr
    assert json.loads(res.stdout)["fixes"] == texts  # the command line offers the same
    runnable = [(t, r) for f, t in zip(caught.value.fixes, texts)
                if f.changes and (r := _runnable(f.changes)) is not None]
    assert runnable, f"no fix to run among {texts}"
    for text, extra in runnable:
        res = cli(["resolve", "--host", str(host_file), "--json", *flags, *extra])
        assert res.returncode == 0, f"{text!r} does not resolve: {res.stdout}{res.stderr}"
    assert any("--variant cpu" in t for t in texts) is cpu_works


@pytest.mark.parametrize("nvidia", [_GPU, None], ids=["GPU", "no GPU"])
def test_musl_names_a_glibc_host_not_the_cpu_build(matrix: Matrix,
                                                   nvidia: NvidiaInfo | None) -> None:
    with pytest.raises(NoMatch) as caught:
        resolve(Request(), _host(musl="1.2.5", nvidia=nvidia), matrix)
    texts = [f.text(spell) for f in caught.value.fixes]
    assert not any("--variant cpu" in t for t in texts)
    assert any(t.startswith("PyTorch publishes no wheels for musl libc (1.2.5): run this on a "
                            "glibc-based Linux with glibc ≥ ") and "--glibc " in t for t in texts)


def test_a_gpu_whose_driver_is_unknown_on_musl_is_not_sent_to_the_cpu_build(
        matrix: Matrix) -> None:
    """The facts of the GPU are missing (a gap): the fixes say how to supply them, and on musl
    that no CPU build installs either, instead of offering one."""
    host = _host(musl="1.2.5", nvidia=_NO_DRIVER, nvidia_evidence=("/dev/nvidia0",))
    with pytest.raises(NoMatch) as caught:
        resolve(Request(), host, matrix)
    texts = [f.text(spell) for f in caught.value.fixes]
    assert not any("--variant cpu" in t for t in texts)
    assert any("no wheels for musl libc (1.2.5), CPU builds included" in t for t in texts)
    glibc = _host(glibc="2.35", nvidia=_NO_DRIVER, nvidia_evidence=("/dev/nvidia0",))
    with pytest.raises(NoMatch) as caught:
        resolve(Request(), glibc, matrix)
    assert any("--variant cpu" in f.text(spell) for f in caught.value.fixes)


def _nvidia(driver: str, cc: str) -> NvidiaInfo:
    return NvidiaInfo(driver_version=DriverVersion(driver),
                      gpus=(Gpu(index=0, compute_capability=ComputeCapability(cc)),))


def test_no_build_for_this_gpu_is_said_only_when_a_newer_driver_would_not_give_one(
        matrix: Matrix) -> None:
    """A Blackwell card on a 520 driver: the builds with sm_120 were turned away for the
    driver (only the old cu118 ones for the architecture), so the fix is the driver."""
    def texts(host: HostProfile) -> list[str]:
        with pytest.raises(NoMatch) as info:
            resolve(Request(), host, matrix)
        return [f.text(spell) for f in info.value.fixes]

    old_driver = texts(_host(glibc="2.35", nvidia=_nvidia("520.61.05", "12.0")))
    assert any(t.startswith("upgrade the NVIDIA driver") for t in old_driver), old_driver
    assert not any("was compiled for this GPU" in t for t in old_driver), old_driver
    # a GPU older than every list: the driver is no help, and the sentence is true
    kepler = texts(_host(glibc="2.35", nvidia=_nvidia("580.65.06", "3.0")))
    assert any("was compiled for this GPU" in t for t in kepler), kepler
