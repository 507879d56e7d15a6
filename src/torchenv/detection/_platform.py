"""The operating system side of the host: platform name, C library, WSL, containers.

All file reads go through ``root`` so tests can hand in a fake tree.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, NamedTuple

from torchenv.values import Platform

if TYPE_CHECKING:
    from typing import Callable, Optional

    from torchenv._files import StrPath

__all__ = [
    "PlatformFacts",
    "current_platform",
    "parse_cgroup_container",
    "parse_glibc_confstr",
    "parse_musl_version",
    "parse_wsl",
    "probe_platform",
]


def _uname() -> tuple[str, str]:
    """(system, machine) as :mod:`platform` names them; ``os.uname`` where it exists (importing
    :mod:`platform` costs a few milliseconds of every start), else :mod:`platform` (Windows)."""
    uname = getattr(os, "uname", None)
    if uname is not None:
        u = uname()
        return u.sysname, u.machine
    import platform

    return platform.system(), platform.machine()


def current_platform(system: Optional[str] = None, machine: Optional[str] = None) -> Platform:
    """This machine's platform (``linux-x86_64``, ``win-amd64``, ``macos-arm64``, ...); one
    torchenv has no wheels for is named ``system-machine`` (``freebsd-amd64``)."""
    system = (system or _uname()[0]).lower()
    machine = (machine or _uname()[1]).lower()
    arm = machine in ("aarch64", "arm64")
    if system == "linux":
        return Platform("linux-aarch64" if arm else "linux-x86_64")
    if system == "darwin":
        return Platform("macos-arm64" if arm else "macos-x86_64")
    if system == "windows":
        return Platform("win-amd64")
    return Platform.other(f"{system}-{machine}")


_GLIBC = re.compile(r"glibc\s+([0-9]+\.[0-9]+)", re.ASCII)
_MUSL_VERSION = re.compile(r"Version\s+([0-9]+\.[0-9]+(?:\.[0-9]+)?)", re.ASCII)


def parse_glibc_confstr(text: Optional[str]) -> Optional[str]:
    """``os.confstr("CS_GNU_LIBC_VERSION")`` -> version: ``"glibc 2.36"`` -> ``"2.36"``."""
    if not text:
        return None
    m = _GLIBC.match(text.strip())
    return m.group(1) if m else None


def parse_musl_version(text: str) -> Optional[str]:
    """The version the musl loader prints when run without arguments (on stderr).

    Sample::

        musl libc (x86_64)
        Version 1.2.4
        Dynamic Program Loader
    """
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines or not lines[0].startswith("musl"):
        return None
    for line in lines[1:]:
        m = _MUSL_VERSION.match(line)
        if m:
            return m.group(1)
    return None


def parse_wsl(proc_version: str) -> Optional[int]:
    """2 for WSL2, 1 for WSL1, None for any other kernel, from ``/proc/version``.

    Sample (WSL2)::

        Linux version 6.6.87.2-microsoft-standard-WSL2 (root@439a258ad544) (gcc (GCC) 11.2.0 ...
    """
    low = proc_version.lower()
    if "microsoft" not in low and "wsl" not in low:
        return None
    return 2 if ("wsl2" in low or "microsoft-standard" in low) else 1


_CGROUP_HINTS = (("kubepods", "kubernetes"), ("docker", "docker"), ("containerd", "containerd"),
                 ("libpod", "podman"), ("lxc", "lxc"), ("garden", "garden"))


def parse_cgroup_container(text: str) -> Optional[str]:
    """A container runtime named in ``/proc/1/cgroup`` (cgroup v1), or None.

    Sample::

        12:pids:/docker/3601745b3bd54d9780436faa5f0e4f72bb46231663bb99a6bb892764917832c2
        11:cpuset:/kubepods/besteffort/pod0c2b2f8a-.../e3b0c442...
    """
    for line in text.splitlines():
        path = line.split(":", 2)[-1]
        for needle, name in _CGROUP_HINTS:
            if needle in path:
                return name
    return None


class PlatformFacts(NamedTuple):
    platform: Platform
    os: str
    machine: str
    glibc: Optional[str] = None
    musl: Optional[str] = None
    wsl: bool = False
    wsl_version: Optional[int] = None
    container: Optional[str] = None
    container_source: Optional[str] = None


def _read(path: str) -> Optional[str]:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except OSError:
        return None


def _confstr() -> Optional[str]:
    try:
        return os.confstr("CS_GNU_LIBC_VERSION")
    except (AttributeError, ValueError, OSError):
        return None


def _musl(root: StrPath, timeout: float) -> Optional[str]:
    from torchenv._subprocess import run_process

    for libdir in ("lib", "usr/lib"):
        directory = os.path.join(root, libdir)
        try:  # the loaders ld-musl-*.so.1
            loaders = sorted(n for n in os.listdir(directory)
                             if n.startswith("ld-musl-") and n.endswith(".so.1"))
        except OSError:
            continue
        for loader in loaders:
            res = run_process([os.path.join(directory, loader)], timeout=timeout)
            version = parse_musl_version(res.stderr or res.stdout)
            if version:
                return version
    return None


def container_hint(root: StrPath,
                   environ: Mapping[str, str]) -> tuple[Optional[str], Optional[str]]:
    """(runtime, where it was seen): the marker files first, then variables, then cgroups."""
    if os.path.exists(os.path.join(root, ".dockerenv")):
        return "docker", "/.dockerenv"
    if os.path.exists(os.path.join(root, "run/.containerenv")):
        return "podman", "/run/.containerenv"
    for var in ("APPTAINER_CONTAINER", "SINGULARITY_CONTAINER"):
        if environ.get(var):
            return "apptainer", var
    if environ.get("container"):
        return environ["container"], "$container"
    text = _read(os.path.join(root, "proc/1/cgroup"))
    if text:
        name = parse_cgroup_container(text)
        if name:
            return name, "/proc/1/cgroup"
    if environ.get("KUBERNETES_SERVICE_HOST"):
        return "kubernetes", "KUBERNETES_SERVICE_HOST"
    return None, None


def probe_platform(
    root: StrPath,
    environ: Mapping[str, str],
    *,
    system: Optional[str] = None,
    machine: Optional[str] = None,
    confstr: Callable[[], Optional[str]] = _confstr,
    timeout: float = 2.0,
) -> PlatformFacts:
    """Read the platform facts; ``system``/``machine``/``confstr`` default to this process's."""
    system = (system or _uname()[0]).lower()
    machine = (machine or _uname()[1]).lower()
    plat = current_platform(system, machine)
    glibc = musl = None
    wsl_version = None
    container = container_source = None
    if system == "linux":
        glibc = parse_glibc_confstr(confstr())
        if glibc is None:
            musl = _musl(root, timeout)
        text = _read(os.path.join(root, "proc/version"))
        wsl_version = parse_wsl(text) if text else None
        container, container_source = container_hint(root, environ)
    return PlatformFacts(
        platform=plat, os=system, machine=machine, glibc=glibc, musl=musl,
        wsl=wsl_version is not None, wsl_version=wsl_version,
        container=container, container_source=container_source,
    )
