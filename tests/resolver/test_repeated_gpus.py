"""Repeated input costs once: every rule judges a compute capability, so a host of 60,000 GPUs
of four kinds is judged as four GPUs are, and the plan is the same. A host file bounds how many
GPUs it may list, and names only GPUs it lists as visible."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from torchenv.cli import main
from torchenv.detection.profile import MAX_ENTRIES, Gpu, HostProfile, NvidiaInfo, PythonInfo
from torchenv.errors import BadInput
from torchenv.matrix.model import Matrix
from torchenv.resolver import rules
from torchenv.resolver.request import Request
from torchenv.resolver.resolve import resolve
from torchenv.values import ComputeCapability, DriverVersion, Platform

KINDS = ("8.6", "7.5", "9.0", "6.1")


def _host(copies: int) -> HostProfile:
    gpus = tuple(Gpu(index=i, name=f"GPU kind {KINDS[i % 4]}",
                     compute_capability=ComputeCapability(KINDS[i % 4]))
                 for i in range(copies * len(KINDS)))
    return HostProfile(platform=Platform("linux-x86_64"), python=PythonInfo("3.12"),
                       os="linux", machine="x86_64", glibc="2.35",
                       nvidia=NvidiaInfo(driver_version=DriverVersion("550.54.15"), gpus=gpus,
                                         source="override"))


def _judged(host: HostProfile, matrix: Matrix,
            monkeypatch: pytest.MonkeyPatch) -> tuple[int, object]:
    """How many times a GPU was judged against a build's arch facts, and the plan."""
    calls = 0
    real = rules.reach

    def counting(*args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(rules, "reach", counting)
    plan = resolve(Request(), host, matrix)
    return calls, plan


def test_sixty_thousand_gpus_of_four_kinds_cost_four_judgements(
        matrix: Matrix, monkeypatch: pytest.MonkeyPatch) -> None:
    four, plan_of_four = _judged(_host(1), matrix, monkeypatch)
    many, plan_of_many = _judged(_host(15_000), matrix, monkeypatch)
    assert four > 0
    assert many == four
    assert plan_of_many.variant == plan_of_four.variant  # type: ignore[attr-defined]
    assert plan_of_many.torch == plan_of_four.torch  # type: ignore[attr-defined]


def test_one_per_capability_keeps_the_first_of_each_kind() -> None:
    gpus = [Gpu(index=i, compute_capability=ComputeCapability(cc) if cc else None)
            for i, cc in enumerate(["8.6", "8.6", None, "9.0", "8.6", "9.0"])]
    assert [(g.index, str(cc)) for g, cc in rules.one_per_capability(gpus)] == \
        [(0, "8.6"), (3, "9.0")]


def test_the_gpus_variable_with_sixty_thousand_entries_is_quick(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    for name in [k for k in os.environ if k.startswith("TORCHENV_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("TORCHENV_NO_OVERLAY", "1")
    monkeypatch.setenv("TORCHENV_GPUS", ",".join(KINDS * 15_000))
    began = time.monotonic()
    status = main(["resolve", "--driver", "550.54.15", "--platform", "linux-x86_64",
                   "--python", "3.12", "--glibc", "2.35", "--json"])
    took = time.monotonic() - began
    assert status == 0, capsys.readouterr().err
    assert json.loads(capsys.readouterr().out)["torch"]
    assert took < 15, f"{took:.1f} s"


# ----------------------------------------------------------------------------- host files

def _host_file(tmp_path: Path, gpus: int, visible: list[int] | None = None) -> Path:
    doc = {"platform": "linux-x86_64", "python": "3.12", "glibc": "2.35",
           "nvidia": {"driver_version": "550.54.15", "source": "nvml", "visible": visible,
                      "gpus": [{"index": i, "name": "H100", "compute_capability": "9.0"}
                               for i in range(gpus)]}}
    path = tmp_path / "host.json"
    path.write_text(json.dumps(doc))
    return path


def test_a_host_file_with_150000_gpus_is_refused_at_once(tmp_path: Path) -> None:
    path = _host_file(tmp_path, 150_000)
    began = time.monotonic()
    with pytest.raises(BadInput, match=r"nvidia\.gpus: 150,000 entries; a host document "
                                       r"describes one machine and holds at most 1,024"):
        HostProfile.from_json(json.loads(path.read_text()), origin="host.json")
    assert time.monotonic() - began < 2


def test_a_host_file_at_the_bound_is_read(tmp_path: Path) -> None:
    path = _host_file(tmp_path, MAX_ENTRIES)
    host = HostProfile.from_json(json.loads(path.read_text()), origin="host.json")
    assert host.nvidia is not None and len(host.nvidia.gpus) == MAX_ENTRIES


@pytest.mark.parametrize("key", ["warnings", "nvidia_evidence"])
def test_every_list_of_a_host_file_is_bounded(key: str) -> None:
    doc = {"platform": "linux-x86_64", "python": "3.12", key: ["x"] * (MAX_ENTRIES + 1)}
    with pytest.raises(BadInput, match=f"{key}: 1,025 entries"):
        HostProfile.from_json(doc, origin="host.json")


@pytest.mark.parametrize("visible", [[5], [0, 2], [-1]])
def test_visible_gpus_the_file_does_not_list_are_bad_input(tmp_path: Path,
                                                           visible: list[int],
                                                           capsys: pytest.CaptureFixture[str],
                                                           monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    monkeypatch.setenv("TORCHENV_NO_OVERLAY", "1")
    path = _host_file(tmp_path, 2, visible)
    assert main(["resolve", "--host", str(path)]) == 2
    err = capsys.readouterr().err
    assert "nvidia.visible names GPU" in err and "which nvidia.gpus does not list" in err


def test_visible_gpus_the_file_lists_are_taken(tmp_path: Path) -> None:
    path = _host_file(tmp_path, 2, [1])
    host = HostProfile.from_json(json.loads(path.read_text()), origin="host.json")
    assert host.nvidia is not None
    assert [g.index for g in host.nvidia.visible_gpus()] == [1]


def test_a_command_line_past_the_bound_is_refused_before_it_is_parsed(
        capsys: pytest.CaptureFixture[str]) -> None:
    """argparse's time grows with the square of the number of options: 60,000 ``--gpu``
    flags would take minutes to parse, so they are refused at once, naming a way that scales."""
    began = time.monotonic()
    assert main(["resolve", *["--gpu", "8.6"] * 30_000]) == 2
    assert time.monotonic() - began < 1
    err = capsys.readouterr().err
    assert "60,001 arguments; torchenv reads at most 4,096" in err and "TORCHENV_GPUS" in err


def test_a_command_line_at_the_bound_is_parsed(capsys: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TORCHENV_NO_OVERLAY", "1")
    args = ["resolve", "--driver", "550.54.15", "--platform", "linux-x86_64", "--python",
            "3.12", "--glibc", "2.35", "--json"]
    args += ["--gpu", "8.6"] * ((4096 - len(args)) // 2)
    assert main(args) == 0, capsys.readouterr().err
