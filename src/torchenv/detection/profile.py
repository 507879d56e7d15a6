"""The HostProfile: a frozen snapshot of what detection found, and how it round-trips to JSON.

The JSON form is the public ``torchenv detect --json`` document (see README.md), and
``torchenv resolve --host FILE`` reads it back with :meth:`HostProfile.from_json`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, NamedTuple

from torchenv.errors import BadInput
from torchenv.values import ComputeCapability, CudaVersion, DriverVersion, Platform, optional_text

if TYPE_CHECKING:
    from typing import Any, Optional

__all__ = [
    "Gpu",
    "HostProfile",
    "NvidiaInfo",
    "PciDevice",
    "PythonInfo",
    "RocmInfo",
    "TorchInfo",
    "XpuInfo",
]


@dataclass(frozen=True)
class Gpu:
    """One NVIDIA GPU. ``compute_capability`` is 8.6; None when no probe could tell.

    ``compute_capability_source`` says where it came from: ``driver`` (NVML or nvidia-smi
    reported it), ``catalog`` (the GPU catalog, by the GPU's name or PCI id: the sources cite
    the entry), ``override`` (``--gpu``); None with no compute capability.
    """

    index: int
    name: Optional[str] = None
    compute_capability: Optional[ComputeCapability] = None
    memory_mib: Optional[int] = None
    uuid: Optional[str] = None
    mig_mode: Optional[bool] = None
    compute_capability_source: Optional[str] = None

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "name": self.name,
            "compute_capability": optional_text(self.compute_capability),
            "compute_capability_source": self.compute_capability_source,
            "memory_mib": self.memory_mib,
            "uuid": self.uuid,
            "mig_mode": self.mig_mode,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Gpu:
        """A GPU of a document :meth:`HostProfile.from_json` has read (its facts values)."""
        return cls(
            index=int(d.get("index", 0)),
            name=d.get("name"),
            compute_capability=d.get("compute_capability"),
            memory_mib=d.get("memory_mib"),
            uuid=d.get("uuid"),
            mig_mode=d.get("mig_mode"),
            compute_capability_source=d.get("compute_capability_source"),
        )


@dataclass(frozen=True)
class NvidiaInfo:
    """The NVIDIA driver and its GPUs.

    ``source`` names the probe that found the driver (``nvml``, ``proc``, ``sysfs``, ``nvidia-smi``,
    ``override``). ``gpus`` holds every GPU the driver has; ``visible`` holds the indices torch will
    see after ``CUDA_VISIBLE_DEVICES`` (None when that variable is unset: all are visible).
    ``cuda_driver_version_source`` says where the CUDA version came from: ``nvml``,
    ``nvidia-smi`` (a tool reported it), or ``derived`` (no tool did: the newest CUDA whose
    toolkit driver floor the driver meets, a lower bound); None with no CUDA version.
    """

    driver_version: Optional[DriverVersion]
    cuda_driver_version: Optional[CudaVersion] = None
    source: str = "unknown"
    gpus: tuple[Gpu, ...] = ()
    cuda_visible_devices: Optional[str] = None
    visible: Optional[tuple[int, ...]] = None
    cuda_driver_version_source: Optional[str] = None

    def visible_gpus(self) -> tuple[Gpu, ...]:
        if self.visible is None:
            return self.gpus
        visible = set(self.visible)
        return tuple(g for g in self.gpus if g.index in visible)

    def to_json(self) -> dict[str, Any]:
        return {
            "driver_version": optional_text(self.driver_version),
            "cuda_driver_version": optional_text(self.cuda_driver_version),
            "cuda_driver_version_source": self.cuda_driver_version_source,
            "source": self.source,
            "gpus": [g.to_json() for g in self.gpus],
            "cuda_visible_devices": self.cuda_visible_devices,
            "visible": list(self.visible) if self.visible is not None else None,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> NvidiaInfo:
        """The NVIDIA part of a document :meth:`HostProfile.from_json` has read (its facts
        values)."""
        vis = d.get("visible")
        return cls(
            driver_version=d.get("driver_version"),
            cuda_driver_version=d.get("cuda_driver_version"),
            source=str(d.get("source", "file")),
            gpus=tuple(Gpu.from_json(g) for g in d.get("gpus") or []),
            cuda_visible_devices=d.get("cuda_visible_devices"),
            visible=tuple(int(i) for i in vis) if vis is not None else None,
            cuda_driver_version_source=d.get("cuda_driver_version_source"),
        )


class PciDevice(NamedTuple):
    """A display or 3D controller on the PCI bus: driver-independent evidence of a GPU.

    ``vendor`` and ``device`` are 4 lower-case hex digits (``10de``, ``1b80``); ``driver`` is the
    kernel driver bound to it, or None.
    """

    address: str
    vendor: str
    device: str
    pci_class: str
    driver: Optional[str] = None

    def to_json(self) -> dict[str, Any]:
        return {"address": self.address, "vendor": self.vendor, "device": self.device,
                "class": self.pci_class, "driver": self.driver}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> PciDevice:
        return cls(address=str(d.get("address", "")), vendor=str(d.get("vendor", "")).lower(),
                   device=str(d.get("device", "")).lower(), pci_class=str(d.get("class", "")),
                   driver=d.get("driver"))


class RocmInfo(NamedTuple):
    version: Optional[str]
    gfx_targets: tuple[str, ...] = ()
    source: str = "unknown"

    def to_json(self) -> dict[str, Any]:
        return {"version": self.version, "gfx_targets": list(self.gfx_targets),
                "source": self.source}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> RocmInfo:
        return cls(version=d.get("version"), gfx_targets=tuple(d.get("gfx_targets") or ()),
                   source=str(d.get("source", "file")))


class XpuInfo(NamedTuple):
    devices: tuple[str, ...] = ()
    level_zero: bool = False
    source: str = "unknown"

    def to_json(self) -> dict[str, Any]:
        return {"devices": list(self.devices), "level_zero": self.level_zero,
                "source": self.source}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> XpuInfo:
        return cls(devices=tuple(d.get("devices") or ()), level_zero=bool(d.get("level_zero")),
                   source=str(d.get("source", "file")))


class PythonInfo(NamedTuple):
    """The interpreter being inspected. ``version`` is ``"3.12"`` or ``"3.13t"`` (free-threaded)."""

    version: str
    implementation: str = "cpython"
    free_threaded: bool = False
    executable: Optional[str] = None
    full_version: Optional[str] = None
    env_kind: str = "unknown"

    def to_json(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "implementation": self.implementation,
            "free_threaded": self.free_threaded,
            "executable": self.executable,
            "full_version": self.full_version,
            "env_kind": self.env_kind,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> PythonInfo:
        return cls(
            version=str(d.get("version")),
            implementation=str(d.get("implementation", "cpython")),
            free_threaded=bool(d.get("free_threaded", str(d.get("version", "")).endswith("t"))),
            executable=d.get("executable"),
            full_version=d.get("full_version"),
            env_kind=str(d.get("env_kind", "unknown")),
        )


class TorchInfo(NamedTuple):
    """torch as installed in the inspected interpreter (read without importing it)."""

    version: str
    variant: Optional[str] = None
    cuda_version: Optional[str] = None
    arch_list: Optional[tuple[str, ...]] = None
    location: Optional[str] = None
    torchvision: Optional[str] = None
    torchaudio: Optional[str] = None
    installer: Optional[str] = None
    hip_version: Optional[str] = None
    git_version: Optional[str] = None

    @property
    def public_version(self) -> str:
        return self.version.split("+")[0]

    def to_json(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "variant": self.variant,
            "cuda_version": self.cuda_version,
            "arch_list": list(self.arch_list) if self.arch_list is not None else None,
            "location": self.location,
            "torchvision": self.torchvision,
            "torchaudio": self.torchaudio,
            "installer": self.installer,
            "hip_version": self.hip_version,
            "git_version": self.git_version,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> TorchInfo:
        arch = d.get("arch_list")
        return cls(
            version=str(d.get("version")),
            variant=d.get("variant"),
            cuda_version=d.get("cuda_version"),
            arch_list=tuple(arch) if arch is not None else None,
            location=d.get("location"),
            torchvision=d.get("torchvision"),
            torchaudio=d.get("torchaudio"),
            installer=d.get("installer"),
            hip_version=d.get("hip_version"),
            git_version=d.get("git_version"),
        )


@dataclass(frozen=True)
class HostProfile:
    """Everything the resolver needs to know about a machine."""

    platform: Platform
    python: PythonInfo
    os: str = "unknown"
    machine: str = "unknown"
    glibc: Optional[str] = None
    musl: Optional[str] = None
    wsl: bool = False
    container: Optional[str] = None
    nvidia: Optional[NvidiaInfo] = None
    rocm: Optional[RocmInfo] = None
    xpu: Optional[XpuInfo] = None
    mps: bool = False
    torch: Optional[TorchInfo] = None
    warnings: tuple[str, ...] = ()
    sources: Mapping[str, str] = field(default_factory=dict)
    pci: tuple[PciDevice, ...] = ()
    # what shows an NVIDIA GPU or driver is here even when its facts could not be read: a PCI
    # function, /dev/nvidia*, /proc/driver/nvidia, an nvidia-smi or NVML that failed or hung
    nvidia_evidence: tuple[str, ...] = ()

    @functools.cached_property
    def gpu_kinds(self) -> frozenset[str]:
        """The accelerator families here that steer the choice of a build: ``cuda`` (an NVIDIA
        GPU, driver or CUDA driver version), ``rocm`` (an AMD gfx target), ``xpu`` (an Intel
        GPU with the Level Zero runtime). Worked out once per profile; the resolver and the
        installers both read it."""
        kinds = set()
        if self.nvidia is not None and (self.nvidia.gpus or self.nvidia.driver_version
                                        or self.nvidia.cuda_driver_version):
            kinds.add("cuda")
        if self.rocm is not None and self.rocm.gfx_targets:
            kinds.add("rocm")
        if self.xpu is not None and self.xpu.devices and self.xpu.level_zero:
            # an Intel display device without the Level Zero runtime is usually an iGPU that
            # the xpu build cannot use; it must not steer the choice
            kinds.add("xpu")
        return frozenset(kinds)

    @property
    def has_gpu(self) -> bool:
        """Some accelerator torch could use is here: a family of :attr:`gpu_kinds`, or
        Apple's MPS."""
        return bool(self.gpu_kinds) or self.mps

    def with_changes(self, **changes: Any) -> HostProfile:
        return replace(self, **changes)

    def to_json(self) -> dict[str, Any]:
        return {
            "platform": str(self.platform),
            "python": self.python.version,
            "glibc": self.glibc,
            "nvidia": self.nvidia.to_json() if self.nvidia else None,
            "rocm": self.rocm.to_json() if self.rocm else None,
            "xpu": self.xpu.to_json() if self.xpu else None,
            "mps": self.mps,
            "torch": self.torch.to_json() if self.torch else None,
            "os": self.os,
            "machine": self.machine,
            "musl": self.musl,
            "wsl": self.wsl,
            "container": self.container,
            "interpreter": self.python.to_json(),
            "warnings": list(self.warnings),
            "sources": dict(self.sources),
            "pci": [d.to_json() for d in self.pci],
            "nvidia_evidence": list(self.nvidia_evidence),
        }

    @classmethod
    def from_json(cls, d: Any, *, origin: str = "host profile") -> HostProfile:
        """Read a ``detect --json`` document; raises :class:`BadInput` naming ``origin``."""
        if not isinstance(d, dict):
            raise BadInput(f"{origin}: expected a JSON object from 'torchenv detect --json'",
                           hint="create it with 'torchenv detect --json > host.json' on the "
                           "machine it describes")
        d = _read_host_document(d, origin)
        try:
            platform = d["platform"]
            py = d.get("interpreter") or {"version": d["python"]}
            return cls(
                platform=platform,
                python=PythonInfo.from_json(py),
                os=str(d.get("os", "unknown")),
                machine=str(d.get("machine", "unknown")),
                glibc=d.get("glibc"),
                musl=d.get("musl"),
                wsl=bool(d.get("wsl", False)),
                container=d.get("container"),
                nvidia=NvidiaInfo.from_json(d["nvidia"]) if d.get("nvidia") else None,
                rocm=RocmInfo.from_json(d["rocm"]) if d.get("rocm") else None,
                xpu=XpuInfo.from_json(d["xpu"]) if d.get("xpu") else None,
                mps=bool(d.get("mps", False)),
                torch=TorchInfo.from_json(d["torch"]) if d.get("torch") else None,
                warnings=tuple(str(w) for w in d.get("warnings") or ()),
                sources=dict(d.get("sources") or {}),
                pci=tuple(PciDevice.from_json(x) for x in d.get("pci") or ()),
                nvidia_evidence=tuple(str(e) for e in d.get("nvidia_evidence") or ()),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            what = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
            raise BadInput(f"{origin}: not a torchenv host profile ({what!s} is missing or "
                           "malformed)",
                           hint="create one with 'torchenv detect --json > host.json'") from exc


class _Object(NamedTuple):
    """A nested object of a host document (or null, when ``nullable``)."""

    keys: Mapping[str, Any]
    nullable: bool = True


class _ListOf(NamedTuple):
    """A list of objects (or null, when ``nullable``)."""

    item: _Object
    nullable: bool = True


# The type of every key a host document may hold, as ``detect --json`` writes them: "str",
# "int", "bool", "str?" (or null), "[str]" (a list of them), "{str}" (an object of them), or a
# nested _Object / _ListOf. Keys not listed are not checked, so newer documents still load.
_GPU_KEYS = {"index": "int", "name": "str?", "compute_capability": "str?",
             "compute_capability_source": "str?", "memory_mib": "int?", "uuid": "str?",
             "mig_mode": "bool?"}
_HOST_KEYS = {
    "platform": "str", "python": "str", "glibc": "str?", "os": "str", "machine": "str",
    "musl": "str?", "wsl": "bool", "container": "str?", "mps": "bool", "warnings": "[str]",
    "sources": "{str}", "nvidia_evidence": "[str]",
    "interpreter": _Object({"version": "str", "implementation": "str", "free_threaded": "bool",
                            "executable": "str?", "full_version": "str?", "env_kind": "str"}),
    "nvidia": _Object({"driver_version": "str?", "cuda_driver_version": "str?",
                       "cuda_driver_version_source": "str?", "source": "str",
                       "gpus": _ListOf(_Object(_GPU_KEYS)), "cuda_visible_devices": "str?",
                       "visible": "[int]?"}),
    "rocm": _Object({"version": "str?", "gfx_targets": "[str]", "source": "str"}),
    "xpu": _Object({"devices": "[str]", "level_zero": "bool", "source": "str"}),
    "torch": _Object({"version": "str", "variant": "str?", "cuda_version": "str?",
                      "arch_list": "[str]?", "location": "str?", "torchvision": "str?",
                      "torchaudio": "str?", "installer": "str?", "hip_version": "str?",
                      "git_version": "str?"}),
    "pci": _ListOf(_Object({"address": "str", "vendor": "str", "device": "str", "class": "str",
                            "driver": "str?"})),
}
_SCALARS = {"str": (str,), "int": (int,), "bool": (bool,)}


_HINT = "create the file with 'torchenv detect --json > host.json'"


def _read(d: Mapping[str, Any], keys: Mapping[str, Any], origin: str,
          prefix: str = "") -> dict[str, Any]:
    """The keys of ``d`` that ``keys`` lists, each checked for its type and the facts among them
    read into values (:data:`_FACTS`), in one walk along the schema; raises :class:`BadInput`
    naming the first key that is wrong. Keys not listed are left out (never walked)."""
    out: dict[str, Any] = {}
    for key, kind in keys.items():
        if key not in d:
            continue
        value, where = d[key], f"{prefix}{key}"
        if isinstance(kind, str):
            _check_value(value, kind, origin, where, _HINT)
            fact = _FACTS.get(re.sub(r"\[[0-9]+\]", "[]", where))
            out[key] = fact(value, f"{origin}: {where}") if fact and value is not None else value
        elif value is None and kind.nullable:
            out[key] = None
        elif isinstance(kind, _Object):
            if not isinstance(value, dict):
                raise BadInput(f"{origin}: {where}: expected an object, got {_shown(value)}",
                               hint=_HINT)
            out[key] = _read(value, kind.keys, origin, f"{where}.")
        else:
            if not isinstance(value, list):
                raise BadInput(f"{origin}: {where}: expected a list, got {_shown(value)}",
                               hint=_HINT)
            _check_length(value, origin, where, _HINT)
            items = []
            for i, item in enumerate(value):
                if not isinstance(item, dict):
                    raise BadInput(f"{origin}: {where}[{i}]: expected an object, got "
                                   f"{_shown(item)}", hint=_HINT)
                items.append(_read(item, kind.item.keys, origin, f"{where}[{i}]."))
            out[key] = items
    return out


MAX_ENTRIES = 1024
"""The most entries of any list or object in a host document: one machine's GPUs, devices
and warnings are far fewer (a rack-scale system shows 72 GPUs to a host at most)."""


def _check_length(value: Any, origin: str, where: str, hint: str) -> None:
    if len(value) > MAX_ENTRIES:
        raise BadInput(f"{origin}: {where}: {len(value):,} entries; a host document describes "
                       f"one machine and holds at most {MAX_ENTRIES:,}", hint=hint)


_KIND_NAMES = {"str": "a string", "int": "an integer", "bool": "true or false"}


def _check_value(value: Any, kind: str, origin: str, where: str, hint: str) -> None:
    if kind.endswith("?"):
        if value is None:
            return
        kind = kind[:-1]
    if kind[0] in "[{":
        if isinstance(value, list) and kind[0] == "[":
            items: list[tuple[Any, Any]] = list(enumerate(value))
        elif isinstance(value, dict) and kind[0] == "{":
            items = list(value.items())
        else:
            what = "a list" if kind[0] == "[" else "an object"
            raise BadInput(f"{origin}: {where}: expected {what}, got {_shown(value)}", hint=hint)
        _check_length(items, origin, where, hint)
        for i, item in items:
            _check_value(item, kind[1:-1], origin, f"{where}[{i!r}]", hint)
        return
    # a bool is an int to Python, but never a GPU index or a size
    if not isinstance(value, _SCALARS[kind]) or (kind == "int" and isinstance(value, bool)):
        raise BadInput(f"{origin}: {where}: expected {_KIND_NAMES[kind]}, got {_shown(value)}",
                       hint=hint)


def _shown(value: Any) -> str:
    """``value`` as a message shows it: a few levels and characters of its repr (a value
    nested thousands deep is shown as ``[[[[...]]]]``, never walked whole)."""
    import reprlib

    shortened = reprlib.Repr()
    shortened.maxlevel, shortened.maxstring, shortened.maxother = 4, 60, 60
    text = shortened.repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _check_visible(nv: Mapping[str, Any], gpus: list[Any], origin: str, hint: str) -> None:
    """``nvidia.visible`` names GPUs of ``nvidia.gpus`` only: an index the file does not list
    would make torch's GPUs fewer than the file says, silently."""
    visible = nv.get("visible")
    if not visible:
        return
    listed = {g.get("index", 0) for g in gpus}  # as Gpu.from_json reads it
    unknown = sorted({v for v in visible if v not in listed})
    if unknown:
        shown = ", ".join(map(str, unknown[:5])) + (" ..." if len(unknown) > 5 else "")
        have = ", ".join(map(str, sorted(listed)[:8])) or "none"
        raise BadInput(f"{origin}: nvidia.visible names GPU {shown}, which nvidia.gpus does "
                       f"not list (its indices: {have})", hint=hint)


def _memory_mib(value: int, where: str) -> int:
    if value < 0:
        raise BadInput(f"{where}: {value!r} is not a size in MiB (a whole number ≥ 0)",
                       hint=_HINT)
    return value


def _facts() -> dict[str, Callable[[Any, str], Any]]:
    """Each fact of a host document (by its key path, ``[]`` for any index) and how its text is
    read into a value: the platform, driver, CUDA and compute capabilities (``sm_86`` -> 8.6),
    the Python version, glibc and gfx targets normalised (``cp312`` -> ``3.12``)."""
    from torchenv.detection.overrides import (
        normalize_glibc,
        normalize_python,
        normalize_rocm_arch,
        read_compute_capability,
        read_cuda_driver_version,
        read_driver_version,
        read_platform,
    )

    return {
        "platform": lambda v, w: read_platform(v, origin=w, field="host"),
        "python": lambda v, w: normalize_python(v, origin=w, field="host"),
        "interpreter.version": lambda v, w: normalize_python(v, origin=w, field="host"),
        "glibc": lambda v, w: normalize_glibc(v, origin=w, field="host"),
        "nvidia.driver_version": lambda v, w: read_driver_version(v, origin=w, field="host"),
        "nvidia.cuda_driver_version":
            lambda v, w: read_cuda_driver_version(v, origin=w, field="host"),
        "nvidia.gpus[].compute_capability":
            lambda v, w: read_compute_capability(v, origin=w, field="host"),
        "nvidia.gpus[].memory_mib": _memory_mib,
        "rocm.gfx_targets": lambda v, w: [normalize_rocm_arch(g, origin=f"{w}[{i}]", field="host")
                                          for i, g in enumerate(v)],
    }


_FACTS: dict[str, Callable[[Any, str], Any]] = {}


def _read_host_document(d: Mapping[str, Any], origin: str) -> dict[str, Any]:
    """The document's keys checked and its facts read into values, in one walk
    (:func:`_read`); raises :class:`BadInput` naming the key."""
    if not _FACTS:
        _FACTS.update(_facts())
    if "platform" not in d:
        raise BadInput(f"{origin}: 'platform' is missing", hint=_HINT)
    out = _read(d, _HOST_KEYS, origin)
    interp = out.get("interpreter")
    if isinstance(interp, dict):
        if "version" not in interp:
            raise BadInput(f"{origin}: interpreter.version: expected a string, got None",
                           hint=_HINT)
        out["python"] = interp["version"]
    elif "python" not in out:
        raise BadInput(f"{origin}: python: expected a string, got None", hint=_HINT)
    nv = out.get("nvidia")
    if nv is not None:
        _check_visible(nv, nv.get("gpus") or [], origin, _HINT)
    return out
