"""The user's intent: which torch, which variant, which extras. Validated on construction."""

from __future__ import annotations

from dataclasses import dataclass

from torchenv.errors import BadInput
from torchenv.matrix.model import variant_kind

TYPE_CHECKING = False
if TYPE_CHECKING:
    from packaging.specifiers import SpecifierSet

__all__ = ["Request", "torch_specifier"]

_CUDA_RE = r"^(\d{2})\.(\d)$"


def _cuda_version_ok(text: str) -> bool:
    import re  # only when a CUDA version is asked for

    return re.match(_CUDA_RE, text) is not None


@dataclass(frozen=True)
class Request:
    """What the user asked for. ``variant="auto"`` lets the resolver decide."""

    torch: str | None = None
    variant: str = "auto"
    cuda: str | None = None
    with_torchvision: bool = True
    with_torchaudio: bool = True
    index_base: str | None = None

    def __post_init__(self) -> None:
        if self.torch is not None:
            _parse_specifier(self.torch)
        if self.variant != "auto" and variant_kind(self.variant) is None:
            raise BadInput(
                f"--variant: {self.variant!r} is not a variant",
                hint="use auto, cpu, cuXYZ (e.g. cu128), rocmX.Y (e.g. rocm6.3) or xpu",
            )
        if self.index_base is not None:
            from torchenv.installers.commands import check_index_base

            check_index_base(self.index_base)
        if self.cuda is not None and not _cuda_version_ok(self.cuda):
            raise BadInput(
                f"--cuda: {self.cuda!r} is not a CUDA version", hint="give major.minor, e.g. 12.8"
            )
        if (
            self.cuda is not None
            and self.variant not in ("auto",)
            and variant_kind(self.variant) != "cuda"
        ):
            raise BadInput(f"--cuda {self.cuda} contradicts --variant {self.variant}")

    @property
    def explicit_variant(self) -> bool:
        return self.variant != "auto"


def _parse_specifier(text: str) -> SpecifierSet:
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    spec = text.strip()
    if spec and spec[0].isdigit():
        spec = f"=={spec}"  # a bare version means exactly that version (2.7.1) or series (2.7.*)
    try:
        return SpecifierSet(spec)
    except InvalidSpecifier as exc:
        raise BadInput(
            f"--torch: {text!r} is not a version specifier",
            hint="use PEP 440, e.g. '==2.7.*', '>=2.5,<2.9' or 2.7.1",
        ) from exc


def torch_specifier(text: str | None) -> SpecifierSet | None:
    """The parsed SpecifierSet for ``--torch`` (a bare ``2.7`` means ``==2.7.*``)."""
    if text is None:
        return None
    t = text.strip()
    import re  # only with --torch, which needs packaging's parser anyway

    if re.match(r"^\d+\.\d+$", t):
        t = f"=={t}.*"
    return _parse_specifier(t)
