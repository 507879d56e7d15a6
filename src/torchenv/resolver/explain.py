"""Why a build was chosen and what to watch out for, as data: the reasons and warnings of a
:class:`~torchenv.resolver.plan.Plan`, each a sentence the CLI prints as it is."""

from __future__ import annotations

from torchenv.detection.target import Target
from torchenv.matrix.model import Evidence, Release
from torchenv.resolver.candidate import Candidate
from torchenv.resolver.plan import EvidenceAlternative
from torchenv.resolver.request import Request
from torchenv.resolver.rules import arch_range
from torchenv.values import Platform, TorchVersion

__all__ = [
    "companion_reasons",
    "companions",
    "distant_ptx_reason",
    "evidence_warning",
    "host_warnings",
    "newer_unverified",
    "newer_unverified_reason",
    "reasons",
]

_MACOS_ARM64 = Platform("macos-arm64")


def reasons(c: Candidate, target: Target, request: Request) -> list[str]:
    """Why ``c`` is the choice: what was asked, what the GPUs and driver allow, the release."""
    out = []
    v = c.variant
    if request.explicit_variant:
        out.append(f"variant {v.name} was asked for")
    if v.kind == "cuda" and target.nvidia is not None:
        out += _cuda_reasons(c, target)
    elif v.kind == "rocm" and target.profile.rocm is not None:
        out.append(f"{v.name} is built for {', '.join(target.rocm_targets)}")
    elif v.kind == "cpu":
        if target.platform == _MACOS_ARM64:
            out.append("the macOS arm64 build uses the GPU through MPS")
        elif not target.kinds:
            out.append("no NVIDIA, AMD or Intel GPU was found, so the CPU build is the right one")
    newest = ("the newest release" if c.arch_evidence is not Evidence.UNKNOWN
              else "the newest release (no build with known support fits)")
    out.append(
        f"torch {c.release.torch} is {newest} with a wheel for Python "
        f"{target.python} on {target.platform} that fits"
        if not request.torch
        else f"torch {c.release.torch} is {newest} matching {request.torch.text!r} that fits"
    )
    if c.from_pypi:
        out.append(f"PyPI's own {target.platform} build is {v.name}, so no extra index is needed")
    elif c.index is Evidence.INFERRED and v.index_rule:
        out.append(f"its {v.name} entry on the PyTorch index is not confirmed for torch "
                   f"{c.release.torch}, but rule {v.index_rule} infers it")
    return out


def companion_reasons(release: Release, request: Request) -> list[str]:
    """How each companion that a maintainer's range statement pairs is known, quoted."""
    out = []
    for package, wanted in (("torchvision", request.with_torchvision),
                            ("torchaudio", request.with_torchaudio)):
        pairing = release.pairing(package)
        if wanted and pairing.evidence == "inferred" and pairing.statement:
            out.append(f"{package} {pairing.version} pairs with torch {release.torch} by its "
                       f"maintainers' statement (rule {pairing.rule}): "
                       f"\"{pairing.statement}\"")
    return out


def _cuda_reasons(c: Candidate, target: Target) -> list[str]:
    """The driver and the arch list of a CUDA choice."""
    v = c.variant
    drv = target.driver or f"CUDA {target.cuda_driver}"
    out = [f"driver {drv} supports CUDA {v.cuda_version}"
           + ("" if c.driver_at_toolkit_floor else " through minor-version compatibility")]
    platform = target.platform
    arch = v.arch_list_for(platform)
    gpus = target.gpus
    how = (f"inferred: {c.arch_rule}" if c.arch_evidence is Evidence.INFERRED
           else c.arch_evidence_name)
    if c.arch_evidence is Evidence.CONFIRMED and not arch and c.arch_rule:
        # an unknown list of which a source names the GPUs' targets
        out.append(f"its arch list on {platform} is not known whole, but a source names "
                   f"every visible GPU's target in it (rule {c.arch_rule}, confirmed)")
    if c.arch_evidence is Evidence.INFERRED and not arch and c.arch_rule:
        # an unknown list whose support a rule for one GPU at a time gives
        out.append(f"its arch list on {platform} is not known, but every visible GPU "
                   f"runs on it by rule {c.arch_rule}")
    if c.arch_evidence is Evidence.UNKNOWN and c.neighbours:
        out.append(f"the confirmed {v.name} lists of the other releases on {platform} all "
                   "run every visible GPU (rule neighbours-include: a hint, not evidence), so "
                   "it ranks above unknown builds without that hint")
    if arch and gpus and c.ptx_jit_only:
        out.append(f"its arch list {arch_range(arch)} ({how}) reaches every visible GPU, "
                   "some only through PTX JIT")
    elif arch and gpus:
        out.append(
            f"every visible GPU ({', '.join(str(g.compute_capability or '?') for g in gpus)}"
            f") is in its arch list {arch_range(arch)} ({how})"
        )
    return out


def evidence_warning(c: Candidate, alternative: EvidenceAlternative | None) -> str:
    """The warning of a choice whose support for the GPUs is unknown."""
    torch, variant = c.release.torch, c.variant.name
    if alternative is None:
        return (f"nothing proves torch {torch} {variant} runs on this GPU, and no build in the "
                "matrix has confirmed support for it; run 'torchenv validate' after installing")
    alt = alternative
    return (f"nothing proves torch {torch} {variant} runs on this GPU; the newest build whose "
            f"support is {alt.evidence} is torch {alt.torch} {alt.variant} "
            f"(--torch =={alt.torch} --variant {alt.variant})")


def distant_ptx_reason(best: Candidate, ranked: list[Candidate]) -> str | None:
    """Why a newer build that reaches a GPU only through PTX of a much older architecture was
    passed over for ``best`` (rule ``ptx-jit-across-majors``), or None."""
    newer = next((c for c in ranked if c.ptx_jit_distant
                  and c.release.torch > best.release.torch), None)
    if newer is None or best.ptx_jit_distant:
        return None
    return (f"torch {newer.release.torch} {newer.variant.name} reaches a visible GPU only by "
            "JIT-compiling PTX of an architecture more than one major older (rule "
            "ptx-jit-across-majors), so a build that runs it natively ranks first")


def newer_unverified(best: Candidate, ranked: list[Candidate]) -> Candidate | None:
    """The newest GPU build, newer than ``best``, passed over because its support for the GPUs
    is unknown (``ranked``: best first, so the first such one is the newest)."""
    return next((c for c in ranked if c.arch_evidence is Evidence.UNKNOWN and c.gpu_build
                 and c.release.torch > best.release.torch), None)


def newer_unverified_reason(newer: Candidate, platform: Platform) -> str:
    torch, variant = newer.release.torch, newer.variant.name
    return (f"newer builds exist whose support for this GPU is unknown, e.g. torch {torch} "
            f"{variant} (arch list on {platform} not known; --torch =={torch} --variant "
            f"{variant} takes the risk)")


def host_warnings(c: Candidate, target: Target, request: Request) -> list[str]:
    """What about the host stands between the choice and its GPU."""
    out = []
    kind = c.variant.kind
    nv = target.nvidia
    if "xpu" in target.kinds and kind == "cpu" and not request.explicit_variant:
        out.append("an Intel GPU is present but no xpu build fits; using the CPU build")
    if nv is not None and nv.visible == () and kind == "cuda":
        out.append("CUDA_VISIBLE_DEVICES hides every GPU: torch will see none until it is "
                   "unset or lists a GPU")
    if kind == "cuda" and nv is not None and not nv.gpus and nv.source.startswith("override"):
        out.append("no GPU was described (only the driver): the arch list was not checked; "
                   "give the GPUs with --gpu")
    return out


def companions(release: Release, request: Request
               ) -> tuple[TorchVersion | None, TorchVersion | None, list[str]]:
    """(torchvision, torchaudio, warnings): the releases paired with ``release`` that the
    request wants, and why one is left out."""
    warnings = []
    torchvision = release.torchvision if request.with_torchvision else None
    if request.with_torchvision and torchvision is None:
        if "torchvision" in release.unconfirmed:
            warnings.append(f"which torchvision pairs with torch {release.torch} is not "
                            f"confirmed; left out (see 'torchenv matrix show --release "
                            f"{release.torch}')")
        else:
            warnings.append(f"no torchvision release pairs with torch {release.torch}; left "
                            "out (--torch with an older release brings it, --no-torchvision "
                            "silences this)")
    torchaudio = release.torchaudio if request.with_torchaudio else None
    if request.with_torchaudio and torchaudio is None:
        if "torchaudio" in release.unconfirmed:
            warnings.append(f"which torchaudio pairs with torch {release.torch} is not "
                            "confirmed; left out")
        else:
            warnings.append(f"no torchaudio release pairs with torch {release.torch}; left out")
    return torchvision, torchaudio, warnings
