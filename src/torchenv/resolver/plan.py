"""The two outcomes of a decision, as data: a :class:`Plan` (one chosen build, why, what was
rejected and what to watch out for), or :class:`NoMatch` (nothing fits, and what would fix it).

They are the answer as the JSON document and the console show it: their versions, variant and
platform are text, written from the values the resolver decided with."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple, Union

from torchenv.errors import Unsatisfiable

if TYPE_CHECKING:
    from typing import Any, Literal

    from torchenv.values import TorchVersion, VariantName

    PlanLevel = Literal["full", "compat"]
    CondaAnswer = bool | Literal["unknown"]

Change = Mapping[str, Union[str, Sequence[str], None]]
"""A change of the request, field → value: ``{"variant": "cpu"}``, ``{"driver": "VERSION",
"gpus": ("6.1",)}``, in order. A sequence gives the field once per value (each GPU); None names
the field alone: a switch (``{"no_gpu": None}``) or the constraint itself (``{"torch": None}``).
The fields are the request's and the host's, never a flag."""

Speller = Callable[[Change], list[str]]
"""Writes a :data:`Change` as the words of a command line in its caller's terms: the command
line's turns ``{"variant": "cpu"}`` into ``["--variant", "cpu"]``."""

__all__ = [
    "ARCH_RULES",
    "Alternative",
    "Build",
    "BuildEvidence",
    "Change",
    "ChosenCompanion",
    "EvidenceAlternative",
    "Fix",
    "HeldBack",
    "NoMatch",
    "Plan",
    "Rejection",
    "Speller",
]


class Rejection(NamedTuple):
    """A candidate that does not fit, with a one-line reason, the kind of rule that said so
    (``category``: ``platform``, ``python``, ``glibc``, ``no-gpu``, ``driver``, ``arch``,
    ``cpu-on-gpu-host``) and the id of that rule (``rule``: the category, except for ``arch``,
    which names which architecture rule it was: :data:`ARCH_RULES`)."""

    torch: str
    variant: str  # "*" when the release has no wheels for the platform at all
    reason: str
    category: str = "other"
    rule: str = "other"

    @classmethod
    def of(cls, torch: TorchVersion, variant: VariantName | None, reason: str,
           category: str, rule: str | None = None) -> Rejection:
        """The rejection of torch ``torch`` ``variant`` (None: every variant of the release)
        by ``rule`` (default: the category's own)."""
        return cls(str(torch), str(variant) if variant is not None else "*", reason, category,
                   rule or category)

    def to_json(self) -> dict[str, str]:
        return {
            "torch": self.torch,
            "variant": self.variant,
            "reason": self.reason,
            "category": self.category,
            "rule": self.rule,
        }


ARCH_RULES = {
    "arch-list": "a known arch list runs none of a GPU's SASS, nor its PTX where JIT is possible",
    "toolkit-bounds": "the variant's CUDA toolkit cannot compile for the GPU at all",
    "oldest-target": "a primary source names the build's oldest target, newer than the GPU",
    "excluded-by-family": "the confirmed lists of the variant around an unknown one leave the "
                          "GPU out",
    "rocm-targets": "the GPU's gfx target is not in the ROCm variant's list",
}
"""The ids a rejection by rule 3 (the architecture) carries, and what each says."""


class Alternative(NamedTuple):
    """A compatible build ranked below the choice."""

    torch: str
    variant: str
    level: PlanLevel
    warnings: tuple[str, ...] = ()
    evidence: str = "n/a"  # arch support for the visible GPUs: confirmed / inferred / unknown


class Build(NamedTuple):
    """A build named beside the choice; ``--torch ==TORCH --variant VARIANT`` selects it."""

    torch: str
    variant: str

    def to_json(self) -> dict[str, str]:
        return {"torch": self.torch, "variant": self.variant}


class EvidenceAlternative(NamedTuple):
    """The best GPU build whose support for the visible GPUs is confirmed or inferred, offered
    when the choice's support is unknown."""

    torch: str
    variant: str
    evidence: str  # confirmed or inferred
    rule: str | None  # the inference rule behind an ``inferred`` arch list

    def to_json(self) -> dict[str, str | None]:
        return {"torch": self.torch, "variant": self.variant, "evidence": self.evidence,
                "rule": self.rule}


class ChosenCompanion(NamedTuple):
    """A companion package chosen with the torch build (``resolve --with``).

    ``source`` says where its files are (``pypi``, ``pytorch-index``, ``find-links``,
    ``release-asset``, or ``sdist`` for a source build the user allowed); ``url`` is the release
    asset file or the find-links page, ``index`` the index it comes from; ``sha256`` the asset's
    digest when the data has one."""

    name: str
    version: str
    source: str
    coupling: str
    evidence: str
    reasons: tuple[str, ...]
    url: str | None = None
    index_url: str | None = None
    sha256: str | None = None
    warnings: tuple[str, ...] = ()

    @property
    def prebuilt(self) -> bool:
        return self.source != "sdist"

    def requirement(self) -> str:
        """What an installer is asked for: ``xformers==0.0.35``, or a release asset as a PEP 508
        direct reference with its digest (``flash-attn @ https://...whl#sha256=...``)."""
        if self.source == "release-asset" and self.url is not None:
            digest = f"#sha256={self.sha256}" if self.sha256 else ""
            return f"{self.name} @ {self.url}{digest}"
        return f"{self.name}=={self.version}"

    def constraint(self) -> str:
        """Its line in the constraints file (a constraint cannot be a URL: the version is)."""
        return f"{self.name}=={self.version}"

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "version": self.version, "source": self.source,
                "url": self.url, "index": self.index_url, "sha256": self.sha256,
                "requirement": self.requirement(), "coupling": self.coupling,
                "evidence": self.evidence, "reasons": list(self.reasons),
                "warnings": list(self.warnings)}


class HeldBack(NamedTuple):
    """A companion without a prebuilt file for the torch build ranked first, which held torch
    back to an older one; ``source_build`` names what the newer pair needs instead (as the
    companion data states it), None when the package has no source distribution."""

    package: str
    from_torch: str
    from_variant: str
    to_torch: str
    to_variant: str
    reason: str
    source_build: str | None

    def to_json(self) -> dict[str, Any]:
        return {"package": self.package,
                "from": {"torch": self.from_torch, "variant": self.from_variant},
                "to": {"torch": self.to_torch, "variant": self.to_variant},
                "reason": self.reason,
                "alternative": {"torch": self.from_torch, "variant": self.from_variant,
                                "source_build": self.source_build}}


@dataclass(frozen=True)
class BuildEvidence:
    """How the chosen build is known to fit: its arch list and its index entry."""

    arch: str  # confirmed / inferred / unknown, or n/a when no GPU decides
    arch_rule: str | None
    arch_sources: tuple[str, ...]
    index: str  # confirmed / inferred / unknown
    index_sources: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "arch": self.arch,
            "arch_rule": self.arch_rule,
            "arch_sources": list(self.arch_sources),
            "index": self.index,
            "index_sources": list(self.index_sources),
        }


@dataclass(frozen=True)
class Plan:
    """What to install. ``index_url`` is None when the plain PyPI package is the chosen build."""

    torch: str
    torchvision: str | None
    torchaudio: str | None
    variant: str
    index_url: str | None
    python: str
    platform: str
    accelerator: str
    level: PlanLevel
    matrix_version: str
    local_tag: str | None = None
    reasons: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    rejected: tuple[Rejection, ...] = ()
    alternatives: tuple[Alternative, ...] = ()
    cuda: str | None = None
    glibc_floor: str | None = None
    conda_forge: CondaAnswer = "unknown"
    pytorch_channel: CondaAnswer = "unknown"
    evidence: BuildEvidence | None = None
    # the best build that fits without warnings, when the choice fits only with them
    confirmed_alternative: Build | None = None
    # when the choice's support for the GPUs is unknown: the best one whose support is not
    evidence_alternative: EvidenceAlternative | None = None
    # a newer build whose support for the GPUs is unknown, passed over for the choice
    newer_unverified: Build | None = None
    host_warnings: tuple[str, ...] = ()  # what detection could not read
    # resolve --with: the companions chosen with torch, the ones that held torch back, and
    # further pins of the constraints file (triton, where torch's wheel pins it)
    companions: tuple[ChosenCompanion, ...] = ()
    held_back: tuple[HeldBack, ...] = ()
    extra_constraints: tuple[str, ...] = ()

    @property
    def from_pypi(self) -> bool:
        return self.index_url is None

    def pin(self, package: str) -> str | None:
        """``torch==2.7.1+cu128`` style requirement for ``package``; None when not installed."""
        from torchenv.matrix.index import pin

        version = {
            "torch": self.torch,
            "torchvision": self.torchvision,
            "torchaudio": self.torchaudio,
        }[package]
        return pin(package, version, self.local_tag) if version is not None else None

    def requirements(self) -> list[str]:
        from torchenv.matrix.index import pins

        return pins((("torch", self.torch), ("torchvision", self.torchvision),
                     ("torchaudio", self.torchaudio)), self.local_tag)

    def to_json(self, commands: dict[str, str] | None = None) -> dict[str, Any]:
        return {
            "torch": self.torch,
            "torchvision": self.torchvision,
            "torchaudio": self.torchaudio,
            "variant": self.variant,
            "index_url": self.index_url,
            "python": self.python,
            "platform": self.platform,
            "commands": commands or {},
            "warnings": list(self.warnings),
            "rejected": [r.to_json() for r in self.rejected],
            "matrix_version": self.matrix_version,
            "accelerator": self.accelerator,
            "level": self.level,
            "cuda": self.cuda,
            "requirements": self.requirements(),
            "reasons": list(self.reasons),
            "confirmed_alternative": _json(self.confirmed_alternative),
            "alternatives": [
                {"torch": a.torch, "variant": a.variant, "level": a.level,
                 "evidence": a.evidence}
                for a in self.alternatives
            ],
            "evidence": _json(self.evidence),
            "evidence_alternative": _json(self.evidence_alternative),
            "newer_unverified": _json(self.newer_unverified),
            "host_warnings": list(self.host_warnings),
            "companions": [c.to_json() for c in self.companions],
            "held_back": [h.to_json() for h in self.held_back],
        }


def _json(part: Build | BuildEvidence | EvidenceAlternative | None) -> dict[str, Any] | None:
    return part.to_json() if part is not None else None


class Fix(NamedTuple):
    """What would make an unsatisfiable request work, as data: a sentence whose parts are text
    or a :data:`Change` of the request, which the caller writes in its own terms
    (:meth:`text`); ``Fix(({"variant": "cpu"}, " installs the CPU build explicitly"))``."""

    parts: tuple[Union[str, Change], ...]

    @property
    def changes(self) -> list[Change]:
        return [p for p in self.parts if not isinstance(p, str)]

    @property
    def plain(self) -> str | None:
        """The sentence when it changes nothing of the request (a fix of the machine, such as a
        driver upgrade), which every caller writes alike; None otherwise."""
        return None if self.changes else "".join(str(p) for p in self.parts)

    def text(self, spell: Speller) -> str:
        """The sentence, each change written by ``spell`` as words to paste into a shell."""
        import shlex

        return "".join(p if isinstance(p, str) else shlex.join(spell(p)) for p in self.parts)


class NoMatch(Unsatisfiable):
    """Raised when nothing fits the request on the host (exit 3): every rejection and the fixes,
    nearest first (the first is the hint, which the caller writes from it)."""

    def __init__(
        self,
        message: str,
        rejected: tuple[Rejection, ...],
        fixes: tuple[Fix, ...],
        matrix_version: str,
        python: str,
        platform: str,
        host_warnings: tuple[str, ...] = (),
    ) -> None:
        super().__init__(message)
        self.rejected = rejected
        self.fixes = fixes
        self.matrix_version = matrix_version
        self.python = python
        self.platform = platform
        self.host_warnings = host_warnings

    def to_json(self, spell: Speller) -> dict[str, Any]:
        """The ``resolve --json`` document of CLI.md, each fix written with ``spell``."""
        return {
            "torch": None,
            "torchvision": None,
            "torchaudio": None,
            "variant": None,
            "index_url": None,
            "python": self.python,
            "platform": self.platform,
            "commands": {},
            "warnings": [],
            "error": self.message,
            "hint": self.fixes[0].text(spell) if self.fixes else None,
            "exit_code": self.exit_code,
            "fixes": [f.text(spell) for f in self.fixes],
            "rejected": [r.to_json() for r in self.rejected],
            "matrix_version": self.matrix_version,
            "host_warnings": list(self.host_warnings),
        }
