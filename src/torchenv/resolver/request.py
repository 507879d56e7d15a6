"""The user's intent: which torch, which variant, which extras, as values."""

from __future__ import annotations

from dataclasses import dataclass

from torchenv.errors import BadInput
from torchenv.values import CudaVersion, InvalidValue, TorchSpec, VariantName

__all__ = ["Request", "read_torch_spec"]


@dataclass(frozen=True)
class Request:
    """What the user asked for: a torch specifier, a variant (None: the resolver decides), a
    CUDA version. :meth:`from_text` reads them as the user typed them."""

    torch: TorchSpec | None = None
    variant: VariantName | None = None
    cuda: CudaVersion | None = None
    with_torchvision: bool = True
    with_torchaudio: bool = True
    index_base: str | None = None

    def __post_init__(self) -> None:
        if self.index_base is not None:
            from torchenv.matrix.index import check_index_base

            check_index_base(self.index_base)
        if (self.cuda is not None and self.variant is not None
                and self.variant.cuda != self.cuda):
            built = (f"a CUDA {self.variant.cuda} build" if self.variant.cuda is not None
                     else {"cpu": "the CPU build", "rocm": "a ROCm build"}.get(
                         self.variant.kind, f"the {self.variant.kind.upper()} build"))
            raise BadInput(f"{self.cuda} contradicts the variant {self.variant} ({built})",
                           hint="give one of them: a CUDA variant names its CUDA version",
                           field="cuda", value=str(self.cuda))

    @property
    def explicit_variant(self) -> bool:
        return self.variant is not None

    @classmethod
    def from_text(cls, *, torch: str | None = None, variant: str | None = None,
                  cuda: str | None = None, with_torchvision: bool = True,
                  with_torchaudio: bool = True, index_base: str | None = None) -> Request:
        """The request for the text of ``--torch``, ``--variant`` (``auto`` or None: the
        resolver decides) and ``--cuda``; raises :class:`BadInput` naming the field."""
        return cls(
            torch=read_torch_spec(torch) if torch else None,
            variant=_variant(variant) if variant not in (None, "auto") else None,
            cuda=_cuda(cuda) if cuda is not None else None,
            with_torchvision=with_torchvision,
            with_torchaudio=with_torchaudio,
            index_base=index_base,
        )


def read_torch_spec(text: str) -> TorchSpec:
    """The specifier ``--torch`` names (``2.7`` is the 2.7 series); raises :class:`BadInput`."""
    try:
        return TorchSpec(text)
    except InvalidValue:
        raise BadInput(f"{text!r} is not a version specifier",
                       hint="use PEP 440, e.g. '==2.7.*', '>=2.5,<2.9' or 2.7.1",
                       field="torch", value=text) from None


def _variant(text: str) -> VariantName:
    try:
        return VariantName(text)
    except InvalidValue:
        raise BadInput(f"{text!r} is not a variant",
                       hint="use auto, cpu, cuXYZ (e.g. cu128), rocmX.Y (e.g. rocm6.3) or xpu",
                       field="variant", value=text) from None


def _cuda(text: str) -> CudaVersion:
    """A CUDA version a build can be made with: ``12.8`` (two-digit major, one-digit minor)."""
    try:
        cuda = CudaVersion(text)
    except InvalidValue:
        cuda = None
    if cuda is None or cuda.major < 10 or cuda.minor > 9:
        raise BadInput(f"{text!r} is not a CUDA version",
                       hint="give major.minor, e.g. 12.8", field="cuda", value=text)
    return cuda
