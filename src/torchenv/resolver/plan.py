"""The decision: one chosen build, why, what was rejected and what to watch out for."""

from __future__ import annotations

from torchenv._record import field, record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Literal, Optional

    Level = Literal["full", "compat"]

__all__ = ["Alternative", "Plan", "Rejection"]


@record
class Rejection:
    """A candidate that does not fit, with a one-line reason."""

    torch: str
    variant: str
    reason: str
    category: str = "other"

    def to_json(self) -> dict[str, str]:
        return {
            "torch": self.torch,
            "variant": self.variant,
            "reason": self.reason,
            "category": self.category,
        }


@record
class Alternative:
    torch: str
    variant: str
    level: Level
    warnings: tuple[str, ...] = ()
    evidence: str = "n/a"  # arch support for the visible GPUs: confirmed / inferred / unknown


@record
class Plan:
    """What to install. ``index_url`` is None when the plain PyPI package is the chosen build."""

    torch: str
    torchvision: Optional[str]
    torchaudio: Optional[str]
    variant: str
    index_url: Optional[str]
    python: str
    platform: str
    accelerator: str
    level: Level
    matrix_version: str
    local_tag: Optional[str] = None
    reasons: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    rejected: tuple[Rejection, ...] = ()
    alternatives: tuple[Alternative, ...] = ()
    cuda: Optional[str] = None
    glibc_floor: Optional[str] = None
    conda_forge: Any = "unknown"
    pytorch_channel: Any = "unknown"
    extras: dict[str, Any] = field(default_factory=dict)
    host_warnings: tuple[str, ...] = ()  # what detection could not read

    @property
    def from_pypi(self) -> bool:
        return self.index_url is None

    def pin(self, package: str) -> str | None:
        """``torch==2.7.1+cu128`` style requirement for ``package``; None when not installed."""
        from torchenv.installers.commands import pin

        version = {
            "torch": self.torch,
            "torchvision": self.torchvision,
            "torchaudio": self.torchaudio,
        }[package]
        return pin(package, version, self.local_tag) if version is not None else None

    def requirements(self) -> list[str]:
        from torchenv.installers.commands import pins

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
            "confirmed_alternative": self.extras.get("confirmed_alternative"),
            "alternatives": [
                {"torch": a.torch, "variant": a.variant, "level": a.level,
                 "evidence": a.evidence}
                for a in self.alternatives
            ],
            "evidence": self.extras.get("evidence"),
            "evidence_alternative": self.extras.get("evidence_alternative"),
            "newer_unverified": self.extras.get("newer_unverified"),
            "host_warnings": list(self.host_warnings),
        }
