"""Diagnose an environment: pure rules over a HostProfile, the environment, the matrix and the
installed distributions. Nothing here touches the outside world (see ``gather.py``)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal, Optional

from packaging.utils import canonicalize_name

from torchenv.detection.profile import Gpu, HostProfile, TorchInfo
from torchenv.detection.target import Target, read_target
from torchenv.errors import TorchenvError
from torchenv.installers.commands import chain_commands, quote_command, shell_for
from torchenv.matrix.index import index_url_for, pin
from torchenv.matrix.inference import reach
from torchenv.matrix.model import ArchFact, Evidence, Matrix, Release
from torchenv.resolver.rules import check_driver, driver_floors
from torchenv.values import (
    ArchEntry,
    CudaVersion,
    InvalidValue,
    TorchVersion,
    VariantName,
    optional_text,
)

if TYPE_CHECKING:
    from torchenv.doctor.seen import Seen
    from torchenv.installers.commands import Shell

__all__ = [
    "CondaRecord",
    "Distribution",
    "Finding",
    "Installs",
    "Severity",
    "diagnose",
    "summarize",
    "torch_info",
]

Severity = Literal["error", "warning", "info"]
_SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}
CUDA_LIB_PREFIXES = ("libcudart.so", "libcudnn.so", "libnccl.so", "libcublas.so")


@dataclass(frozen=True)
class Finding:
    """One problem: ``fix`` is a command (or None when no single command fixes it);
    ``evidence`` holds what the finding rests on (the error line, the paths, the versions)."""

    severity: Severity
    code: str
    title: str
    explanation: str
    fix: Optional[str] = None
    evidence: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"severity": self.severity, "code": self.code, "title": self.title,
                "explanation": self.explanation, "fix": self.fix,
                "evidence": dict(self.evidence)}


@dataclass(frozen=True)
class Distribution:
    """An installed ``*.dist-info`` (or ``.egg-info``) as the target interpreter sees it."""

    name: str
    version: str
    location: str
    installer: Optional[str] = None


@dataclass(frozen=True)
class CondaRecord:
    """A ``conda-meta/*.json`` package record."""

    name: str
    version: str
    channel: str
    build: str = ""
    path: str = ""


@dataclass(frozen=True)
class Installs:
    """What the gatherer found in the target interpreter and the environment."""

    python: Optional[str] = None
    distributions: tuple[Distribution, ...] = ()
    conda: tuple[CondaRecord, ...] = ()
    cuda_libs_on_ld_path: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def dists(self, name: str) -> tuple[Distribution, ...]:
        return tuple(d for d in self.distributions if canonicalize_name(d.name) == name)


def _local(version: str) -> Optional[str]:
    return version.split("+", 1)[1] if "+" in version else None


def _public(version: str) -> str:
    return version.split("+", 1)[0]


# The installed torch is described as text (as its metadata and torch/version.py write it); it is
# read into values here, where it meets the matrix and the resolver's rules.


def _release(matrix: Matrix, version: str) -> Optional[Release]:
    """The matrix's release of an installed torch version (``2.7.1+cu128``: 2.7.1)."""
    try:
        return matrix.release(TorchVersion(version).without_local())
    except InvalidValue:
        return None


def _stated_pair(matrix: Matrix, package: str, installed: str, torch: str) -> bool:
    """A maintainer's range statement covers the installed ``package`` with this torch
    (torchaudio 2.11.0 with torch 2.13: "works with every future PyTorch release")."""
    try:
        return matrix.companion_statement(package, TorchVersion(_public(installed)),
                                          TorchVersion(torch)) is not None
    except InvalidValue:
        return False


def _variant(name: Optional[str]) -> Optional[VariantName]:
    try:
        return VariantName(name) if name else None
    except InvalidValue:
        return None


def _cuda(text: Optional[str]) -> Optional[CudaVersion]:
    try:
        return CudaVersion(text) if text else None
    except InvalidValue:
        return None


def torch_info(host: HostProfile, installs: Installs, matrix: Matrix) -> Optional[TorchInfo]:
    """The installed torch: the profile's when detection found it, else from the dist-info."""
    if host.torch is not None:
        return host.torch
    dists = installs.dists("torch")
    if not dists:
        return None
    version = dists[0].version
    variant = _local(version)
    if variant is None:
        release = _release(matrix, version)
        default = release.pypi_default.get(host.platform) if release else None
        variant = str(default) if default else None
    cuda = name.cuda if (name := _variant(variant)) else None
    vision, audio = installs.dists("torchvision"), installs.dists("torchaudio")
    return TorchInfo(version=version, variant=variant,
                     cuda_version=str(cuda) if cuda else None,
                     location=dists[0].location,
                     torchvision=vision[0].version if vision else None,
                     torchaudio=audio[0].version if audio else None,
                     installer=dists[0].installer)


def _resolved_command(host: HostProfile, matrix: Matrix) -> Optional[str]:
    """The pip command of the resolver's plan for this host, or None when no build fits it."""
    from torchenv.installers.render import pip_command
    from torchenv.resolver import Request, resolve

    if host.nvidia is not None and host.nvidia.visible is not None:
        # the fix must suit every GPU of the machine, not only those CUDA_VISIBLE_DEVICES
        # shows right now (an empty value would otherwise steer it to any CUDA build)
        host = host.with_changes(nvidia=replace(host.nvidia, visible=None))
    try:
        plan = resolve(Request(), host, matrix)
    except TorchenvError:  # no build fits (Unsatisfiable), or the host cannot be judged
        return None
    return pip_command(plan, host.python.executable)


def _fix(host: HostProfile, matrix: Matrix, fallback: str) -> str:
    return _resolved_command(host, matrix) or fallback




def _gpus(host: HostProfile) -> tuple[Gpu, ...]:
    return host.nvidia.visible_gpus() if host.nvidia is not None else ()


def diagnose(host: HostProfile, env: Mapping[str, str], matrix: Matrix,
             installs: Installs = Installs(), seen: Optional[Seen] = None) -> list[Finding]:
    """Every problem found, errors first. ``seen``: what a child ``import torch`` saw, whose
    causes :func:`torchenv.doctor.classify.classify` names (they replace the metadata-only
    findings of the same code)."""
    findings: list[Finding] = []
    torch = torch_info(host, installs, matrix)
    target = installs.python or host.python.executable or "python"
    all_gpus = host.nvidia.gpus if host.nvidia is not None else ()
    facts = read_target(host, matrix)  # the host as the resolver's rules read it

    if torch is None:
        findings.append(Finding(
            "error", "torch-missing", f"torch is not installed in {target}",
            "The interpreter cannot import torch; 'torchenv resolve' picks the build for this "
            "machine.", _fix(host, matrix, "torchenv install")))

    cpu_build = torch is not None and (torch.variant == "cpu"
                                       or torch.version.endswith("+cpu"))
    shell = shell_for(str(host.platform))
    if torch is not None and cpu_build and all_gpus:
        findings.append(Finding(
            "error", "cpu-build-on-gpu-host",
            f"torch {torch.version} is a CPU-only build on a host with an NVIDIA GPU",
            ("The GPUs (" + ", ".join(g.name or f"GPU {g.index}" for g in all_gpus) + ") are"
             if len(all_gpus) > 1 else f"The GPU ({all_gpus[0].name or 'GPU 0'}) is")
            + " never used: torch.cuda.is_available() is False with this build.",
            _fix(host, matrix, "torchenv install  # 'torchenv resolve' shows the CUDA build")))

    if torch is not None and not cpu_build:
        findings += _arch_findings(host, matrix, torch)
        findings += _driver_findings(facts, matrix, torch)
    if torch is not None:
        findings += _pairing_findings(host, matrix, torch)
    findings += _install_findings(installs, target, shell)
    findings += _env_findings(host, env, installs, torch, cpu_build)
    from torchenv.resolver.resolve import gpu_facts_gap

    gap = gpu_facts_gap(facts, matrix)
    if gap is not None:
        reason, fixes = gap
        # a fix of the machine; those that change a resolve's request are not doctor's to give
        fix = next((f.plain for f in fixes if f.plain is not None), None)
        findings.append(Finding(
            "error", "nvidia-unreadable",
            "An NVIDIA GPU is present but its facts could not be read",
            f"{reason[0].upper()}{reason[1:]}. Until the driver answers, torch cannot use the GPU "
            "and no CUDA build can be checked against it.", fix))
    if seen is not None:
        from torchenv.doctor.classify import classify

        seen_findings = classify(seen, paired=_paired(matrix, torch), shell=shell)
        replaced = {f.code for f in seen_findings} | {"ld-library-path-cuda"}
        if any(f.code == "torch-shadowed" for f in seen_findings):
            replaced.add("torch-missing")  # torch imports, from the folder that finding names
        conda_torch = [r for r in installs.conda if r.name in ("pytorch", "torch")]
        if conda_torch:  # the child sees pip's dist-info folders only: conda's records too
            listed = "; ".join(f"{r.version} from conda ({r.channel}) in {r.path}"
                               for r in conda_torch)
            seen_findings = [replace(f, explanation=f"{f.explanation} Also installed: {listed}.",
                                     evidence={**f.evidence, "conda": [r.path for r in
                                                                       conda_torch]})
                             if f.code == "multiple-torch" else f for f in seen_findings]
        findings = [f for f in findings if f.code not in replaced] + seen_findings
    for warning in host.warnings:
        if re.search(r"mismatch", warning, re.I) and re.search(r"nvml|driver", warning, re.I):
            findings.append(Finding(
                "error", "nvml-mismatch", "NVIDIA driver/library version mismatch",
                f"{warning.strip()} CUDA cannot initialise until the two agree.",
                "sudo reboot"))
            break
    findings.sort(key=lambda f: _SEVERITY_ORDER[f.severity])
    return findings


def _paired(matrix: Matrix, torch: Optional[TorchInfo]) -> dict[str, str]:
    """torchvision's and torchaudio's requirement paired with the installed torch (pinned with
    its local tag, as resolve pins them)."""
    release = _release(matrix, torch.version) if torch is not None else None
    if release is None or torch is None:
        return {}
    local = _local(torch.version)
    out = {}
    for name, wanted in (("torchvision", optional_text(release.torchvision)),
                         ("torchaudio", optional_text(release.torchaudio))):
        if wanted:
            out[name] = pin(name, wanted, local)
    return out


def _arch_list(host: HostProfile, matrix: Matrix,
               torch: TorchInfo) -> tuple[tuple[str, ...], tuple[ArchEntry, ...]]:
    """The installed build's arch list as shown (torch's own spelling, ``sm_86``, when it was
    read from torch, else the matrix's) and as values; empty when unknown. An entry that is no
    compiled target runs nothing."""
    if torch.arch_list:
        entries = []
        for text in torch.arch_list:
            try:
                entries.append(ArchEntry.from_torch(text))
            except InvalidValue:
                continue
        return torch.arch_list, tuple(entries)
    release = _release(matrix, torch.version)
    name = _variant(torch.variant)
    variant = release.variant(name) if release and name else None
    arch = variant.arch_list_for(host.platform) if variant else None
    return (tuple(map(str, arch)), arch) if arch else ((), ())


def _arch_findings(host: HostProfile, matrix: Matrix, torch: TorchInfo) -> list[Finding]:
    archs, entries = _arch_list(host, matrix, torch)
    if not archs or not torch.cuda_version:
        return []
    out = []
    # what the installed build says
    built_for = ArchFact(entries, Evidence.CONFIRMED, Evidence.CONFIRMED)
    for gpu in _gpus(host):
        cc = gpu.compute_capability
        # the resolver's rule 3, with the PTX JIT assumed available (the driver is checked apart)
        if cc and reach(built_for, cc, jit_ok=True).runs is False:
            sm = cc.sm
            out.append(Finding(
                "error", "gpu-arch-unsupported",
                f"GPU {gpu.index} ({sm}, {gpu.name or 'unknown'}) is not in torch "
                f"{torch.version}'s arch list",
                f"This build was compiled for {' '.join(archs)}; kernels fail with 'no kernel "
                f"image is available' ('{sm} is not compatible with the current PyTorch "
                "installation').",
                _fix(host, matrix, "torchenv resolve  # shows a build that covers this GPU")))
    return out


def _driver_findings(target: Target, matrix: Matrix, torch: TorchInfo) -> list[Finding]:
    variant = _variant(torch.variant)
    cuda = _cuda(torch.cuda_version) or (variant.cuda if variant else None)
    driver = target.driver
    if not cuda or not driver:
        return []
    verdict = check_driver(target, matrix, cuda)  # the resolver's rule: floors, WSL, NVML's CUDA
    toolkit_min, compat_min = driver_floors(matrix, cuda, windows=target.windows_driver)
    host = target.profile
    if not verdict.ok:
        return [Finding(
            "error", "driver-too-old",
            f"driver {driver} is too old for torch {torch.version} (CUDA {cuda})",
            f"CUDA {cuda} needs driver ≥ {compat_min} (minor-version compatibility) and "
            f"≥ {toolkit_min or '?'} for full support; torch.cuda.is_available() is False.",
            _fix(host, matrix, f"upgrade the NVIDIA driver to ≥ {toolkit_min or compat_min}, "
                 "or install an older CUDA build: torchenv resolve"))]
    if not verdict.full:
        return [Finding(
            "warning", "driver-below-toolkit",
            f"driver {driver} is below CUDA {cuda}'s toolkit floor {toolkit_min or '(unknown)'}",
            (verdict.warnings[0] if verdict.warnings else "It runs through minor-version "
             "compatibility only.").rstrip(".") + ".",
            f"upgrade the NVIDIA driver to ≥ {toolkit_min}" if toolkit_min
            else f"upgrade the NVIDIA driver to the one released with CUDA {cuda}")]
    return []


def _pairing_findings(host: HostProfile, matrix: Matrix, torch: TorchInfo) -> list[Finding]:
    release = _release(matrix, torch.version)
    out = []
    torch_local = _local(torch.version)
    shell = shell_for(str(host.platform))
    for name, installed, wanted in (
        ("torchvision", torch.torchvision, optional_text(release.torchvision) if release else None),
        ("torchaudio", torch.torchaudio, optional_text(release.torchaudio) if release else None),
    ):
        if not installed:
            continue
        variant = torch.variant or torch_local
        index = ["--index-url", index_url_for(variant)] if variant else []
        # pinned as resolve pins it: with the local tag of the torch build it must pair with
        requirement = pin(name, wanted, torch_local or None) if wanted else name
        fix = quote_command(["pip", "install", "--force-reinstall", "--no-deps", requirement,
                             *index], shell)
        if (wanted and _public(installed) != wanted
                and not _stated_pair(matrix, name, installed, torch.version)):
            out.append(Finding(
                "error", f"{name}-unpaired",
                f"{name} {installed} is not the release paired with torch {torch.version}",
                f"torch {torch.public_version} pairs with {name} {wanted}; a mismatch fails at "
                f"import or with 'torchvision::nms does not exist'.", fix))
        elif _local(installed) != torch_local and (_local(installed) or torch_local):
            out.append(Finding(
                "error", f"{name}-variant",
                f"{name} {installed} is from a different build variant than torch "
                f"{torch.version}",
                "Its compiled operators link against another CUDA/CPU build of torch.", fix))
    return out


def _install_findings(installs: Installs, target: str, shell: Shell) -> list[Finding]:
    out = []
    torches = installs.dists("torch")
    conda_torch = [r for r in installs.conda if r.name in ("pytorch", "torch")]
    places = sorted({d.location for d in torches})
    if len(places) > 1 or len(torches) > 1 or (torches and conda_torch):
        listed = [f"{d.version} in {d.location} ({d.installer or 'unknown installer'})"
                  for d in torches] + [f"{r.version} from conda ({r.channel}) in {r.path}"
                                       for r in conda_torch]
        out.append(Finding(
            "error", "multiple-torch",
            "several torch installs are visible to " + target,
            "Which one imports depends on sys.path order: " + "; ".join(listed) + ".",
            quote_command([target, "-m", "pip", "uninstall", "-y", "torch"], shell)
            + "  # repeat until none is left, then 'torchenv install'"))
    legacy = [r for r in installs.conda
              if r.channel.lower().rstrip("/").split("/")[-1] == "pytorch"]
    if legacy:
        packages = sorted({r.name for r in legacy})
        out.append(Finding(
            "warning", "conda-pytorch-channel",
            "conda packages from the retired 'pytorch' channel: " + " ".join(packages),
            "The pytorch conda channel received no releases after 2.5; 'conda update' will not "
            "move past it. Newer builds come from conda-forge (pytorch, pytorch-gpu with "
            "cuda-version) or pip inside the environment.",
            chain_commands([["conda", "remove", *packages],
                            ["conda", "install", "-c", "conda-forge", "pytorch"]], shell)))
    return out


def _env_findings(host: HostProfile, env: Mapping[str, str], installs: Installs,
                  torch: Optional[TorchInfo], cpu_build: bool) -> list[Finding]:
    out = []
    shadowing = {d: libs for d, libs in installs.cuda_libs_on_ld_path.items() if libs}
    if shadowing:
        listed = "; ".join(f"{d}: {', '.join(libs)}" for d, libs in shadowing.items())
        out.append(Finding(
            "info" if cpu_build else "warning", "ld-library-path-cuda",
            "LD_LIBRARY_PATH lists system CUDA libraries",
            f"{listed}. They are loaded instead of the CUDA runtime, cuDNN and NCCL bundled "
            "with the wheel, which gives 'undefined symbol' errors or version mismatches.",
            quote_command(["export", "LD_LIBRARY_PATH=" + ":".join(
                p for p in env.get("LD_LIBRARY_PATH", "").split(":") if p and p not in shadowing)])
            + "  # drop the CUDA directories"))
    cvd = env.get("CUDA_VISIBLE_DEVICES")
    gpus = host.nvidia.gpus if host.nvidia is not None else ()
    if cvd is not None and gpus:
        from torchenv.detection._cuda_visible import parse_cuda_visible_devices

        # detection's own parser: indices, UUID prefixes, MIG ids, CUDA's stop at a bad entry
        visible, _ = parse_cuda_visible_devices(cvd, gpus, env)
        if visible == ():
            ids = sorted({str(g.index) for g in gpus} | {g.uuid for g in gpus if g.uuid})
            out.append(Finding(
                "error", "cuda-visible-devices-hides-all",
                f"CUDA_VISIBLE_DEVICES={cvd!r} hides every GPU",
                f"This machine has {len(gpus)} GPU(s) ({', '.join(ids)}), but none is "
                "named first in CUDA_VISIBLE_DEVICES, so torch sees no device.",
                _unset("CUDA_VISIBLE_DEVICES", shell_for(str(host.platform)))))
    if "CUDA_MEMORY_POOL" in env:
        out.append(Finding(
            "warning", "cuda-memory-pool",
            "CUDA_MEMORY_POOL is set, but it is not a PyTorch setting",
            "PyTorch's caching allocator is configured with PYTORCH_CUDA_ALLOC_CONF "
            "(e.g. expandable_segments:True); CUDA_MEMORY_POOL is ignored.",
            _unset("CUDA_MEMORY_POOL", shell_for(str(host.platform)))
            + "  # use PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"))
    del torch
    return out


def _unset(variable: str, shell: Shell) -> str:
    return f"Remove-Item Env:{variable}" if shell == "powershell" else f"unset {variable}"


def summarize(findings: Sequence[Finding]) -> dict[str, int]:
    return {s: sum(1 for f in findings if f.severity == s) for s in ("error", "warning", "info")}
