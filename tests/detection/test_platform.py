from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from torchenv.detection._platform import (
    current_platform,
    parse_cgroup_container,
    parse_glibc_confstr,
    parse_musl_version,
    parse_wsl,
    probe_platform,
)

WSL2 = ("Linux version 6.6.87.2-microsoft-standard-WSL2 (root@439a258ad544) (gcc (GCC) 11.2.0, "
        "GNU ld (GNU Binutils) 2.37) #1 SMP PREEMPT_DYNAMIC Thu Jun  5 18:30:46 UTC 2025\n")
WSL1 = "Linux version 4.4.0-19041-Microsoft (Microsoft@Microsoft.com) (gcc version 5.4.0) #1237\n"
NATIVE = "Linux version 6.8.0-31-generic (buildd@lcy02-amd64-078) (x86_64-linux-gnu-gcc-13)\n"


@pytest.mark.parametrize(
    ("system", "machine", "name"),
    [("Linux", "x86_64", "linux-x86_64"), ("Linux", "aarch64", "linux-aarch64"),
     ("Darwin", "arm64", "macos-arm64"), ("Darwin", "x86_64", "macos-x86_64"),
     ("Windows", "AMD64", "win-amd64")],
    ids=["linux", "linux-arm", "mac-arm", "mac-intel", "windows"],
)
def test_current_platform(system: str, machine: str, name: str) -> None:
    assert str(current_platform(system, machine)) == name


def test_glibc_confstr() -> None:
    assert parse_glibc_confstr("glibc 2.36") == "2.36"
    assert parse_glibc_confstr(None) is None
    assert parse_glibc_confstr("musl") is None


@given(st.integers(2, 2), st.integers(0, 99))
def test_glibc_roundtrip(major: int, minor: int) -> None:
    assert parse_glibc_confstr(f"glibc {major}.{minor}") == f"{major}.{minor}"


def test_musl_banner() -> None:
    banner = "musl libc (x86_64)\nVersion 1.2.4\nDynamic Program Loader\nUsage: ...\n"
    assert parse_musl_version(banner) == "1.2.4"
    assert parse_musl_version("ld.so: nope") is None


def test_wsl() -> None:
    assert parse_wsl(WSL2) == 2
    assert parse_wsl(WSL1) == 1
    assert parse_wsl(NATIVE) is None


def test_cgroup() -> None:
    assert parse_cgroup_container("12:pids:/docker/3601745b3bd5\n") == "docker"
    assert parse_cgroup_container("11:cpuset:/kubepods/besteffort/pod0c2b/e3b0\n") == "kubernetes"
    assert parse_cgroup_container("0::/init.scope\n") is None


def test_probe_on_fake_tree(tmp_path: Path) -> None:
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc/version").write_text(WSL2)
    (tmp_path / "run").mkdir()
    (tmp_path / "run/.containerenv").write_text("")
    facts = probe_platform(tmp_path, {}, system="Linux", machine="x86_64",
                           confstr=lambda: "glibc 2.39")
    assert (str(facts.platform), facts.glibc, facts.wsl, facts.wsl_version) == (
        "linux-x86_64", "2.39", True, 2)
    assert (facts.container, facts.container_source) == ("podman", "/run/.containerenv")


def test_probe_container_from_environment(tmp_path: Path) -> None:
    facts = probe_platform(tmp_path, {"APPTAINER_CONTAINER": "/x.sif"}, system="Linux",
                           machine="x86_64", confstr=lambda: "glibc 2.28")
    assert facts.container == "apptainer"
    assert not facts.wsl


def test_probe_musl_via_loader(tmp_path: Path) -> None:
    lib = tmp_path / "lib"
    lib.mkdir()
    loader = lib / "ld-musl-x86_64.so.1"
    loader.write_text("#!/bin/sh\necho 'musl libc (x86_64)' >&2\n"
                      "echo 'Version 1.2.5' >&2\nexit 1\n")
    loader.chmod(0o755)
    facts = probe_platform(tmp_path, {}, system="Linux", machine="x86_64", confstr=lambda: None)
    assert (facts.glibc, facts.musl) == (None, "1.2.5")


def test_macos_reads_no_linux_files(tmp_path: Path) -> None:
    facts = probe_platform(tmp_path, {}, system="Darwin", machine="arm64",
                           confstr=lambda: "glibc 2.36")
    assert (str(facts.platform), facts.glibc, facts.container) == ("macos-arm64", None, None)
