"""AMD ROCm: the GPUs' gfx targets and the installed ROCm version.

Order: the KFD topology in sysfs (no child process; present whenever the amdgpu kernel driver
runs), then ``rocm_agent_enumerator`` and ``rocminfo`` (with a timeout; the only way on WSL2,
which has no KFD). The ROCm version comes from ``<ROCM_PATH or /opt/rocm>/.info/version``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from typing import Optional

    from torchenv._files import StrPath

__all__ = [
    "RocmFacts",
    "gfx_from_target_version",
    "parse_hsa_override",
    "parse_kfd_properties",
    "parse_rocm_agent_enumerator",
    "parse_rocm_version",
    "parse_rocminfo",
    "probe_rocm",
]

_GFX = re.compile(r"gfx[0-9a-f]{3,4}")
_AGENT = re.compile(r"Agent [0-9]+")
_NUMBER = re.compile(r"[0-9]+")
_VERSION = re.compile(r"\s*([0-9]+\.[0-9]+(?:\.[0-9]+)?)", re.ASCII)
_HSA_OVERRIDE = re.compile(r"([0-9]+)\.([0-9]+)\.([0-9]+)")


def gfx_from_target_version(value: int) -> Optional[str]:
    """KFD's ``gfx_target_version`` as a gfx name: 90010 -> gfx90a, 110000 -> gfx1100.

    The number is ``major * 10000 + minor * 100 + stepping``; minor and stepping are written in
    hex in the name. 0 is a CPU node: None.
    """
    if value <= 0:
        return None
    major, minor, step = value // 10000, (value // 100) % 100, value % 100
    if minor > 15 or step > 15:
        return None
    return f"gfx{major}{minor:x}{step:x}"


def parse_kfd_properties(text: str) -> Optional[str]:
    """The gfx target of one KFD topology node, None for a CPU node.

    Sample (``/sys/class/kfd/kfd/topology/nodes/1/properties``)::

        cpu_cores_count 0
        simd_count 416
        gfx_target_version 90010
        vendor_id 4098
    """
    for line in text.splitlines():
        key, _, value = line.strip().partition(" ")
        if key == "gfx_target_version" and _NUMBER.fullmatch(value.strip()):
            return gfx_from_target_version(int(value.strip()))
    return None


def parse_rocminfo(text: str) -> tuple[tuple[str, Optional[str]], ...]:
    """(gfx target, marketing name) of each GPU agent in ``rocminfo`` output.

    Sample::

        Agent 3
        *******
          Name:                    gfx90a
          Uuid:                    GPU-0000000000000000
          Marketing Name:          AMD Instinct MI210
          Vendor Name:             AMD
          ...
          Device Type:             GPU
    """
    agents: list[tuple[str, Optional[str]]] = []
    name: Optional[str] = None
    marketing: Optional[str] = None
    kind: Optional[str] = None

    def flush() -> None:
        if kind == "GPU" and name and _GFX.fullmatch(name):
            agents.append((name, marketing))

    for line in text.splitlines():
        if _AGENT.fullmatch(line.strip()) and not line.startswith(" "):
            flush()
            name = marketing = kind = None
            continue
        key, sep, value = line.strip().partition(":")
        if not sep:
            continue
        value = value.strip()
        if key == "Name" and name is None:
            name = value.split(":")[0]
        elif key == "Marketing Name" and marketing is None:
            marketing = value or None
        elif key == "Device Type" and kind is None:
            kind = value
    flush()
    return tuple(agents)


def parse_rocm_agent_enumerator(text: str) -> tuple[str, ...]:
    """The gfx targets ``rocm_agent_enumerator`` prints, one a line; ``gfx000`` (the CPU agent
    before ROCm 6) is dropped.

    Sample::

        gfx000
        gfx803
        gfx902
    """
    return tuple(t for t in (line.strip() for line in text.splitlines())
                 if _GFX.fullmatch(t) and t != "gfx000")


def parse_rocm_version(text: str) -> Optional[str]:
    """``/opt/rocm/.info/version``: ``7.0.1`` (some releases append ``-<build>``)."""
    m = _VERSION.match(text)
    return m.group(1) if m else None


def parse_hsa_override(value: str) -> Optional[str]:
    """``HSA_OVERRIDE_GFX_VERSION=10.3.0`` -> ``gfx1030`` (the target ROCm will pretend to be)."""
    m = _HSA_OVERRIDE.fullmatch(value.strip())
    if not m:
        return None
    minor, step = int(m.group(2)), int(m.group(3))
    if minor > 15 or step > 15:
        return None
    return f"gfx{int(m.group(1))}{minor:x}{step:x}"


class RocmFacts(NamedTuple):
    version: Optional[str] = None
    gfx_targets: tuple[str, ...] = ()
    source: Optional[str] = None
    rocm_path: Optional[str] = None
    warnings: tuple[str, ...] = ()


def _read(path: str) -> Optional[str]:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except OSError:
        return None


def _kfd_targets(root: StrPath) -> tuple[str, ...]:
    nodes = os.path.join(root, "sys/class/kfd/kfd/topology/nodes")
    try:
        names = sorted(os.listdir(nodes), key=lambda n: (len(n), n))
    except OSError:
        return ()
    targets = []
    for name in names:
        text = _read(os.path.join(nodes, name, "properties"))
        gfx = parse_kfd_properties(text) if text else None
        if gfx:
            targets.append(gfx)
    return tuple(targets)


def _rocm_path(root: StrPath, environ: Mapping[str, str]) -> str:
    """``ROCM_PATH`` (default ``/opt/rocm``) under ``root``."""
    return os.path.join(root, (environ.get("ROCM_PATH") or "/opt/rocm").strip("/"))


def _tool(name: str, rocm_bin: str, environ: Mapping[str, str]) -> Optional[str]:
    for d in (rocm_bin, *environ.get("PATH", "").split(os.pathsep)):
        if d:
            candidate = os.path.join(d, name)
            if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
                return candidate
    return None


def needs_tools(root: StrPath, environ: Mapping[str, str]) -> bool:
    """Whether :func:`probe_rocm` would start rocm_agent_enumerator or rocminfo (and so wait on a
    child): no GPU in the KFD topology, and one of the tools is installed."""
    if _kfd_targets(root):
        return False
    rocm_bin = os.path.join(_rocm_path(root, environ), "bin")
    return any(_tool(name, rocm_bin, environ) for name in ("rocm_agent_enumerator", "rocminfo"))


def probe_rocm(root: StrPath, environ: Mapping[str, str], *, timeout: float = 5.0) -> RocmFacts:
    """Find AMD GPUs and the ROCm install; an empty result when neither is present."""
    rocm_path = _rocm_path(root, environ)
    version_text = _read(os.path.join(rocm_path, ".info/version"))
    version = parse_rocm_version(version_text) if version_text else None
    warnings: list[str] = []
    targets = _kfd_targets(root)
    source = "kfd" if targets else None
    if not targets:
        import time

        deadline = time.monotonic() + timeout  # both tools share one budget

        def left() -> float:
            return max(0.1, deadline - time.monotonic())

        rocm_bin = os.path.join(rocm_path, "bin")
        enumerator = _tool("rocm_agent_enumerator", rocm_bin, environ)
        rocminfo = _tool("rocminfo", rocm_bin, environ)
        if enumerator or rocminfo:  # the subprocess machinery only where a tool runs
            from torchenv._subprocess import run_process
        if enumerator:
            res = run_process([enumerator], timeout=left())
            if res.ok:
                targets, source = parse_rocm_agent_enumerator(res.stdout), "rocm_agent_enumerator"
            else:
                warnings.append(f"ROCm: {res.describe_failure()}")
        if not targets and rocminfo and deadline - time.monotonic() > 0.1:
            res = run_process([rocminfo], timeout=left())
            if res.ok:
                targets = tuple(gfx for gfx, _ in parse_rocminfo(res.stdout))
                source = "rocminfo"
            else:
                warnings.append(f"ROCm: {res.describe_failure()}")
    override = environ.get("HSA_OVERRIDE_GFX_VERSION")
    if targets and override:
        gfx = parse_hsa_override(override)
        if gfx:
            warnings.append(f"HSA_OVERRIDE_GFX_VERSION={override} makes ROCm treat every AMD GPU "
                            f"({', '.join(sorted(set(targets)))}) as {gfx}")
            targets = tuple(gfx for _ in targets)
            source = f"{source} + HSA_OVERRIDE_GFX_VERSION"
    if version and not targets:
        warnings.append(f"ROCm {version} is installed at {rocm_path} but no AMD GPU was found")
    return RocmFacts(version=version, gfx_targets=targets, source=source,
                     rocm_path=rocm_path if version else None, warnings=tuple(warnings))
