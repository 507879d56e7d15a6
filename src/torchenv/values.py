"""The facts torchenv reasons about, as small immutable values.

A torch version, an NVIDIA driver version, a CUDA version, a compute capability, an arch-list
entry, a variant name, a torch specifier and a platform each arrive as text: from a flag, an
environment variable, a host file, ``[tool.torchenv]``, the matrix data or a probe's output.
They are parsed once, where they arrive, into the types below; only the value travels on, and
no code further in splits the text again.

The types follow :class:`packaging.version.Version`:

* the constructor parses: ``ComputeCapability("sm_86")``; a named class method reads another
  spelling of the same fact (``CudaVersion.from_nvml(12080)``, ``ArchEntry.from_torch("sm_90a")``);
* each grammar is a compiled regular expression over ASCII (``[0-9]``, never ``\\d``), so a
  fullwidth ``８.６`` is refused, and the text's length is capped before any ``int()``, so a
  5,000-digit input is refused like any other typo;
* ``str()`` gives the spelling the matrix data and the JSON documents use (``sm_86`` reads as
  ``8.6``; driver and torch versions keep the spelling they were read in, as their vendors
  print them), and reading that spelling again gives an equal value;
* values are ordered and hashable, and compare only with values of their own type (a value is
  never equal to its text: ``ComputeCapability("8.6") != "8.6"``);
* bad text raises :class:`InvalidValue`, a :class:`ValueError` that names the kind of value
  and the text, for the caller to prefix with where the text came from
  (``--gpu: '8.x' is not a compute capability``).

They are plain classes with ``__slots__`` and explicit comparisons rather than dataclasses:
a resolve compares thousands of arch entries, and a slotted class comparing a precomputed key
does that in about half the time a frozen dataclass takes, while it builds in the same.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any, Literal

    from packaging.specifiers import SpecifierSet
    from packaging.version import Version

    VariantKind = Literal["cpu", "cuda", "rocm", "xpu"]
    System = Literal["linux", "win", "macos", "other"]

__all__ = [
    "PLATFORMS",
    "ArchEntry",
    "ComputeCapability",
    "CudaVersion",
    "DriverVersion",
    "InvalidValue",
    "Platform",
    "TorchSpec",
    "TorchVersion",
    "VariantName",
    "optional_text",
]


class InvalidValue(ValueError):
    """Raised when a text is not a value of the kind asked for.

    ``kind`` names the kind (``"compute capability"``), ``text`` is the text as given, and
    ``message`` is the sentence without the example (``"'8.x' is not a compute capability"``),
    for a caller that adds its own origin and hint; ``str()`` adds what was expected::

        '8.x' is not a compute capability (expected e.g. 8.6 or sm_86)
    """

    def __init__(self, kind: str, text: str, message: str, expected: str) -> None:
        super().__init__(f"{message} (expected {expected})")
        self.kind = kind
        self.text = text
        self.message = message
        self.expected = expected


def optional_text(value: object) -> str | None:
    """``str(value)``, or None for None: how a document (JSON, YAML) writes an optional value."""
    return None if value is None else str(value)


def _shown(text: str) -> str:
    shown = repr(text)
    return shown if len(shown) <= 40 else shown[:36] + "...'"


def _given(cls: type[_Value] | type[TorchSpec], text: object) -> str:
    """``text`` when it is a string short enough to read; raises otherwise."""
    if not isinstance(text, str):
        raise TypeError(f"{cls.__name__} reads a str, not {type(text).__name__}")
    if len(text) > cls._MAX_LENGTH:
        raise _invalid(cls, text)
    return text


def _invalid(cls: type[_Value] | type[TorchSpec], text: str, problem: str | None = None,
             expected: str | None = None) -> InvalidValue:
    return InvalidValue(cls._KIND, text, problem or f"{_shown(text)} is not {cls._A_KIND}",
                        expected or cls._EXPECTED)


class _Value:
    """Equality, order and hash of a value by its ``_key``, only against its own type."""

    __slots__ = ("_key",)

    _KIND = ""
    _A_KIND = ""
    _EXPECTED = ""
    _MAX_LENGTH = 32

    _key: tuple[Any, ...]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, self.__class__):
            return self._key == other._key
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        if isinstance(other, self.__class__):
            return self._key != other._key
        return NotImplemented

    def __lt__(self, other: object) -> bool:
        if isinstance(other, self.__class__):
            return self._key < other._key
        return NotImplemented

    def __le__(self, other: object) -> bool:
        if isinstance(other, self.__class__):
            return self._key <= other._key
        return NotImplemented

    def __gt__(self, other: object) -> bool:
        if isinstance(other, self.__class__):
            return self._key > other._key
        return NotImplemented

    def __ge__(self, other: object) -> bool:
        if isinstance(other, self.__class__):
            return self._key >= other._key
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._key)

    def __repr__(self) -> str:
        return f"<{self.__class__.__name__}({str(self)!r})>"


# --------------------------------------------------------------------------- torch versions

_PLAIN_RELEASE = re.compile(r"[0-9]+(?:\.[0-9]+)+", re.ASCII)


class TorchVersion(_Value):
    """A torch version (PEP 440): ``2.7.1``, ``2.7.1+cu128``, ``2.8.0.dev20250512+cpu``.

    Equal and ordered as :class:`packaging.version.Version` (``2.7.1+cu128`` is not ``2.7.1``,
    ``2.7.1+CU128`` is ``2.7.1+cu128``). ``str()`` keeps the spelling it was read from, without
    surrounding whitespace: an installed version is shown as its metadata records it (an
    NVIDIA container's ``2.6.0a0+ecf3bae40a.nv25.01``, which packaging would print as
    ``...nv25.1``). :meth:`plain` reads the matrix's stricter spelling, a bare release.
    """

    __slots__ = ("_text", "_version")

    _KIND = "torch version"
    _A_KIND = "a torch version"
    _EXPECTED = "e.g. 2.7.1 or 2.7.1+cu128"
    _MAX_LENGTH = 128

    _key: tuple[Version]
    _text: str
    _version: Version

    def __init__(self, text: str) -> None:
        from packaging.version import InvalidVersion, Version

        given = _given(TorchVersion, text)
        if not given.isascii():
            raise _invalid(TorchVersion, given)
        try:
            self._version = Version(given)
        except InvalidVersion:
            raise _invalid(TorchVersion, given) from None
        self._text = given.strip()
        self._key = (self._version,)

    @classmethod
    def plain(cls, text: str) -> TorchVersion:
        """A release as the matrix lists it: two or more dot-separated numbers, nothing else
        (no ``+local``, pre-, post- or dev-release, no whitespace)."""
        given = _given(cls, text)
        if not _PLAIN_RELEASE.fullmatch(given):
            raise _invalid(cls, given, expected="e.g. 2.7.1")
        return cls(given)

    @property
    def release(self) -> tuple[int, ...]:
        """The release numbers: ``(2, 7, 1)``."""
        return self._version.release

    @property
    def series(self) -> str:
        """The release's first two numbers, the series a bare ``--torch 2.7`` names: ``2.7``."""
        return ".".join(str(n) for n in self._version.release[:2])

    @property
    def public(self) -> str:
        """The text before the local label: ``2.7.1`` of ``2.7.1+cu128``."""
        return self._text.partition("+")[0]

    @property
    def local(self) -> str | None:
        """The local label as written: ``cu128`` of ``2.7.1+cu128``; None without one."""
        _, plus, local = self._text.partition("+")
        return local if plus else None

    def without_local(self) -> TorchVersion:
        """This version without its local label: the release the matrix knows it by."""
        if self._version.local is None:
            return self
        return TorchVersion(self.public)

    @property
    def variant(self) -> VariantName | None:
        """The build variant the local label names, or None when it names none.

        ``+cu128`` -> ``cu128``, ``+cpu`` and ``+cpu.cxx11.abi`` -> ``cpu``, ``+rocm6.3`` ->
        ``rocm6.3``, ``+xpu`` -> ``xpu``; no label (the PyPI build) or another -> None.
        """
        local = self._version.local  # lower case, "." between parts (cpu_cxx11 -> cpu.cxx11)
        if local is None:
            return None
        head = local.partition(".")[0]
        if head in ("cpu", "xpu"):
            return VariantName(head)
        if _CUDA_NAME.fullmatch(local) or _ROCM_NAME.fullmatch(local):
            return VariantName(local)
        return None

    def __str__(self) -> str:
        return self._text


# --------------------------------------------------------------------------- NVIDIA driver

_DRIVER = re.compile(r"[0-9]{2,4}(?:\.[0-9]{1,3}){1,2}", re.ASCII)
_DRIVER_FLOOR = re.compile(r"[0-9]{1,4}(?:\.[0-9]{1,3}){0,2}", re.ASCII)


class DriverVersion(_Value):
    """An NVIDIA driver version as nvidia-smi and NVML print it: ``550.54.15``, ``535.104.05``,
    ``470.57.02`` (Linux), ``551.61`` (Windows).

    Ordered by its numbers (``535.104.05`` > ``535.54.03``); ``str()`` keeps NVIDIA's spelling,
    zero padding included. Surrounding whitespace is ignored. :meth:`floor` also reads a bare
    branch (``580``), as the matrix's driver floors may give one.
    """

    __slots__ = ("_text",)

    _KIND = "NVIDIA driver version"
    _A_KIND = "an NVIDIA driver version"
    _EXPECTED = "e.g. 550.54.15 or 580.65"

    _key: tuple[int, ...]
    _text: str

    def __init__(self, text: str) -> None:
        given = _given(DriverVersion, text)
        core = given.strip()
        if not _DRIVER.fullmatch(core):
            raise _invalid(DriverVersion, given)
        self._text = core
        self._key = tuple(int(part) for part in core.split("."))

    @classmethod
    def floor(cls, text: str) -> DriverVersion:
        """A driver floor as the matrix writes one: a version, or a bare branch (``580``,
        reached by every ``580.x``), written without surrounding whitespace."""
        given = _given(cls, text)
        if not _DRIVER_FLOOR.fullmatch(given):
            raise _invalid(cls, given, expected="e.g. 550.54.15 or 580")
        value = cls.__new__(cls)
        value._text = given
        value._key = tuple(int(part) for part in given.split("."))
        return value

    @property
    def parts(self) -> tuple[int, ...]:
        """The numbers: ``(550, 54, 15)``."""
        return self._key

    @property
    def branch(self) -> int:
        """The first number, the driver branch: ``550``."""
        return self._key[0]

    def __str__(self) -> str:
        return self._text


# --------------------------------------------------------------------------- CUDA

_CUDA = re.compile(r"([0-9]{1,2})\.([0-9]{1,2})", re.ASCII)


class CudaVersion(_Value):
    """A CUDA ``major.minor``: ``12.8``, ``13.0``, ``11.8``.

    The toolkit a build was made with (from its variant name, :attr:`VariantName.cuda`), the
    newest CUDA a driver supports (``nvidia-smi``, :meth:`from_nvml`), a floor of the matrix.
    Surrounding whitespace is ignored; ``str()`` drops leading zeros (``12.08`` -> ``12.8``).
    """

    __slots__ = ()

    _KIND = "CUDA version"
    _A_KIND = "a CUDA version"
    _EXPECTED = "e.g. 12.8"

    _key: tuple[int, int]

    def __init__(self, text: str) -> None:
        given = _given(CudaVersion, text)
        match = _CUDA.fullmatch(given.strip())
        if match is None:
            raise _invalid(CudaVersion, given)
        self._key = (int(match[1]), int(match[2]))

    @classmethod
    def from_nvml(cls, value: int) -> CudaVersion:
        """NVML's integer (``nvmlSystemGetCudaDriverVersion_v2``: 1000 × major + 10 × minor):
        ``12080`` -> ``12.8``, ``13000`` -> ``13.0``. Zero or less means no CUDA driver, and is
        refused like any other number that is not a version."""
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"CudaVersion.from_nvml reads an int, not {type(value).__name__}")
        major, minor = value // 1000, value % 1000 // 10
        if value <= 0 or major > 99:
            raise _invalid(cls, str(value), expected="e.g. 12080 for 12.8")
        return cls._of(major, minor)

    @classmethod
    def _of(cls, major: int, minor: int) -> CudaVersion:
        value = cls.__new__(cls)
        value._key = (major, minor)
        return value

    @property
    def major(self) -> int:
        return self._key[0]

    @property
    def minor(self) -> int:
        return self._key[1]

    def __str__(self) -> str:
        return f"{self._key[0]}.{self._key[1]}"


# --------------------------------------------------------------------------- compute capability

_CAPABILITY = re.compile(r"(?:sm_?|compute_)?([0-9]{1,2})\.?([0-9])([af]?)", re.ASCII)
# a generous bound above the newest architecture (12.x): it catches typos like 99.9 or sm_999
# without turning away a GPU newer than this release of torchenv
_MAX_MAJOR = 19


class _Capability(_Value):
    """What a compute capability and an arch-list entry share: a key that starts with
    ``(major, minor, suffix)``."""

    __slots__ = ()

    _key: tuple[Any, ...]

    @property
    def major(self) -> int:
        major: int = self._key[0]
        return major

    @property
    def minor(self) -> int:
        minor: int = self._key[1]
        return minor

    @property
    def suffix(self) -> str:
        """``""``; ``"a"``: exactly this architecture; ``"f"``: this family (same major)."""
        suffix: str = self._key[2]
        return suffix

    @property
    def sm(self) -> str:
        """The compiler's spelling of the SASS target: ``sm_86``, ``sm_90a``, ``sm_120`` of
        ``12.0+PTX``."""
        return f"sm_{self.major}{self.minor}{self.suffix}"


class ComputeCapability(_Capability):
    """An NVIDIA compute capability: ``8.6``, ``9.0``, ``12.0``; with a suffix, a target of
    one architecture (``9.0a``, ``12.0a``) or of a family (``10.0f``).

    Reads ``8.6``, ``86``, ``sm_86``, ``sm86``, ``compute_86``, ``sm_90a``, ``100f``, in any
    case and with surrounding whitespace; majors run from 1 to 19. ``str()`` is ``8.6`` /
    ``9.0a``; :attr:`sm` is ``sm_86`` / ``sm_90a``. Ordered by major, minor, then suffix
    (``9.0`` < ``9.0a`` < ``9.0f`` < ``10.0``).
    """

    __slots__ = ()

    _KIND = "compute capability"
    _A_KIND = "a compute capability"
    _EXPECTED = "e.g. 8.6 or sm_86"

    _key: tuple[int, int, str]

    def __init__(self, text: str) -> None:
        given = _given(ComputeCapability, text)
        core = given.strip()
        match = _CAPABILITY.fullmatch(core.lower()) if core.isascii() else None
        if match is None:
            raise _invalid(ComputeCapability, given)
        self._key = _capability_key(int(match[1]), int(match[2]), match[3], given)

    @classmethod
    def from_parts(cls, major: int, minor: int, suffix: str = "") -> ComputeCapability:
        """From numbers, as NVML gives them: ``from_parts(8, 6)`` -> ``8.6``."""
        if not (_is_int(major) and _is_int(minor) and 0 <= minor <= 9
                and suffix in ("", "a", "f")):
            raise _invalid(cls, f"{major}.{minor}{suffix}")
        value = cls.__new__(cls)
        value._key = _capability_key(major, minor, suffix, f"{major}.{minor}{suffix}")
        return value


    @property
    def base(self) -> ComputeCapability:
        """The capability without its suffix: a device's own capability (``9.0a`` -> ``9.0``)."""
        if not self._key[2]:
            return self
        value = ComputeCapability.__new__(ComputeCapability)
        value._key = (self._key[0], self._key[1], "")
        return value

    def __str__(self) -> str:
        major, minor, suffix = self._key
        return f"{major}.{minor}{suffix}"


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _capability_key(major: int, minor: int, suffix: str, given: str) -> tuple[int, int, str]:
    if not 1 <= major <= _MAX_MAJOR:
        raise _invalid(ComputeCapability, given,
                       f"{_shown(given)} is not a compute capability any GPU has "
                       f"(major {major})",
                       "a major from 1 to 19, e.g. 8.6 or sm_86")
    return (major, minor, suffix)


# --------------------------------------------------------------------------- arch-list entries

_ARCH = re.compile(r"([0-9]{1,2})\.([0-9])([af]?)(\+PTX)?", re.ASCII)
_TORCH_ARCH = re.compile(r"(sm_|compute_)?([0-9]{1,2})\.?([0-9])([af]?)(\+ptx)?", re.ASCII)


class ArchEntry(_Capability):
    """One compiled target of a build's arch list, as the matrix writes it (the spelling of
    ``TORCH_CUDA_ARCH_LIST``): ``8.6`` (SASS for 8.6), ``9.0a``, ``10.0f``, ``12.0+PTX`` (SASS
    and PTX for 12.0).

    The constructor reads exactly that spelling; :meth:`from_torch` reads the one of
    ``torch.cuda.get_arch_list()`` (``sm_86``, ``compute_90``). Ordered by capability, then
    without PTX before with.
    """

    __slots__ = ()

    _KIND = "arch-list entry"
    _A_KIND = "a compute capability"  # the sentence the matrix check has always written
    _EXPECTED = "e.g. 8.6, 9.0a or 12.0+PTX"

    _key: tuple[int, int, str, bool]

    def __init__(self, text: str) -> None:
        given = _given(ArchEntry, text)
        match = _ARCH.fullmatch(given)
        if match is None:
            raise _invalid(ArchEntry, given)
        self._set(int(match[1]), int(match[2]), match[3], match[4] is not None, given)

    @classmethod
    def from_torch(cls, text: str) -> ArchEntry:
        """An entry in the spelling of ``torch.cuda.get_arch_list()`` or the matrix's, in any
        case: ``sm_86``, ``sm_90a``, ``compute_90``, ``86``, ``8.6+ptx``.

        ``compute_XY`` (PTX) reads as ``X.Y+PTX``, as the doctor has always read it: the SASS
        that spelling also claims matters only where the driver's JIT is not allowed.
        """
        given = _given(cls, text)
        core = given.strip()
        match = _TORCH_ARCH.fullmatch(core.lower()) if core.isascii() else None
        if match is None:
            raise _invalid(cls, given, expected="e.g. sm_86, sm_90a or compute_90")
        value = cls.__new__(cls)
        ptx = match[1] == "compute_" or match[5] is not None
        value._set(int(match[2]), int(match[3]), match[4], ptx, given)
        return value

    def _set(self, major: int, minor: int, suffix: str, ptx: bool, given: str) -> None:
        try:
            _capability_key(major, minor, suffix, given)
        except InvalidValue as exc:
            raise InvalidValue(self._KIND, given, exc.message, exc.expected) from None
        self._key = (major, minor, suffix, ptx)

    @property
    def capability(self) -> ComputeCapability:
        """The compute capability compiled for: ``12.0`` of ``12.0+PTX``."""
        capability = ComputeCapability.__new__(ComputeCapability)
        capability._key = self._key[:3]
        return capability

    @property
    def ptx(self) -> bool:
        """True for ``+PTX``: the build also carries PTX, which the driver can JIT-compile for
        any later GPU."""
        return self._key[3]

    def without_ptx(self) -> ArchEntry:
        """The SASS part of this entry: ``12.0`` of ``12.0+PTX`` (itself when it has no PTX)."""
        if not self._key[3]:
            return self
        value = ArchEntry.__new__(ArchEntry)
        value._key = (*self._key[:3], False)
        return value

    def __str__(self) -> str:
        major, minor, suffix, ptx = self._key
        return f"{major}.{minor}{suffix}{'+PTX' if ptx else ''}"


# --------------------------------------------------------------------------- variant names

_CUDA_NAME = re.compile(r"cu([0-9]{2,3})", re.ASCII)
_ROCM_NAME = re.compile(r"rocm([0-9]{1,3})\.([0-9]{1,3})(?:\.([0-9]{1,3}))?", re.ASCII)
_KINDS: tuple[VariantKind, ...] = ("cpu", "cuda", "rocm", "xpu")


class VariantName(_Value):
    """The name of a build variant on the wheel index: ``cpu``, ``cu128``, ``rocm6.3``,
    ``rocm6.2.4``, ``xpu`` (exactly so: lower case, no whitespace).

    :attr:`kind` is its accelerator family; :attr:`version` the CUDA or ROCm numbers
    (``(12, 8)``, ``(6, 2, 4)``; ``()`` for cpu and xpu). Ordered cpu, CUDA, ROCm, XPU, each
    by version: the order of ``known variants`` in messages and of CI rows.
    """

    __slots__ = ("_kind", "_name", "_version")

    _KIND = "variant name"
    _A_KIND = "a variant name"
    _EXPECTED = "e.g. cpu, cu128, rocm6.3 or xpu"

    _key: tuple[int, tuple[int, ...], str]
    _name: str
    _kind: VariantKind
    _version: tuple[int, ...]

    def __init__(self, text: str) -> None:
        name = _given(VariantName, text)
        kind: VariantKind
        version: tuple[int, ...]
        if name in ("cpu", "xpu"):
            kind, version = ("cpu" if name == "cpu" else "xpu"), ()
        elif (cuda := _CUDA_NAME.fullmatch(name)) is not None:
            digits = cuda[1]
            kind, version = "cuda", (int(digits[:-1]), int(digits[-1]))
        elif (rocm := _ROCM_NAME.fullmatch(name)) is not None:
            kind, version = "rocm", tuple(int(part) for part in rocm.groups() if part is not None)
        else:
            raise _invalid(VariantName, name)
        self._name, self._kind, self._version = name, kind, version
        self._key = (_KINDS.index(kind), version, name)

    @classmethod
    def of_cuda(cls, cuda: CudaVersion) -> VariantName:
        """The CUDA variant built with ``cuda``: ``12.8`` -> ``cu128``."""
        if cuda.minor > 9:
            raise _invalid(cls, f"cu{cuda.major}{cuda.minor}",
                           f"CUDA {cuda} has no variant name (its minor has two digits)")
        return cls(f"cu{cuda.major}{cuda.minor}")

    @property
    def kind(self) -> VariantKind:
        return self._kind

    @property
    def version(self) -> tuple[int, ...]:
        """The CUDA or ROCm numbers: ``(12, 8)``, ``(6, 2, 4)``; ``()`` for cpu and xpu."""
        return self._version

    @property
    def cuda(self) -> CudaVersion | None:
        """The CUDA version of a CUDA variant (``cu128`` -> ``12.8``); None for the others."""
        if self._kind != "cuda":
            return None
        return CudaVersion._of(*self._version[:2])

    def __str__(self) -> str:
        return self._name


# --------------------------------------------------------------------------- torch specifiers

_SERIES = re.compile(r"[0-9]+\.[0-9]+", re.ASCII)


class TorchSpec:
    """A PEP 440 specifier for torch releases: ``==2.7.*``, ``>=2.5,<2.9``.

    A bare ``X.Y`` means the series (``2.7`` -> ``==2.7.*``), any other text that starts with
    a digit that exact version (``2.7.1`` -> ``==2.7.1``); surrounding whitespace is ignored,
    and an empty text matches every release. :attr:`text` is the text as given (messages quote
    it); ``str()`` is the specifier it became. Equal when the specifiers are; hashable, but not
    ordered: specifiers have no order.
    """

    __slots__ = ("_spec", "_text")

    _KIND = "torch version specifier"
    _A_KIND = "a version specifier"
    _EXPECTED = "PEP 440, e.g. '==2.7.*', '>=2.5,<2.9' or 2.7.1"
    _MAX_LENGTH = 256

    _spec: SpecifierSet
    _text: str

    def __init__(self, text: str) -> None:
        from packaging.specifiers import InvalidSpecifier, SpecifierSet

        given = _given(TorchSpec, text)
        spec = given.strip()
        if not spec.isascii():
            raise _invalid(TorchSpec, given)
        if _SERIES.fullmatch(spec):
            spec = f"=={spec}.*"
        elif spec[:1].isdigit():
            spec = f"=={spec}"
        try:
            self._spec = SpecifierSet(spec)
        except InvalidSpecifier:
            raise _invalid(TorchSpec, given) from None
        self._text = given

    @property
    def text(self) -> str:
        """The specifier as the user wrote it: ``2.7``."""
        return self._text

    def contains(self, version: TorchVersion | str) -> bool:
        """Whether ``version`` matches; pre-releases match like any other release."""
        if isinstance(version, TorchVersion):
            return self._spec.contains(version._version, prereleases=True)
        return self._spec.contains(version, prereleases=True)

    def __contains__(self, version: TorchVersion | str) -> bool:
        return self.contains(version)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, TorchSpec):
            return self._spec == other._spec
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._spec)

    def __str__(self) -> str:
        return str(self._spec)

    def __repr__(self) -> str:
        return f"<TorchSpec({str(self)!r})>"


# --------------------------------------------------------------------------- platforms

PLATFORMS: tuple[str, ...] = (
    "linux-x86_64",
    "linux-aarch64",
    "win-amd64",
    "macos-arm64",
    "macos-x86_64",
)
"""Every platform torchenv knows, in the order tables and CI rows list them."""
_SYSTEMS: tuple[System, ...] = ("linux", "linux", "win", "macos", "macos")

_PLATFORM_ALIASES = {
    "linux": "linux-x86_64",
    "linux-amd64": "linux-x86_64",
    "linux_x86_64": "linux-x86_64",
    "manylinux_x86_64": "linux-x86_64",
    "linux-arm64": "linux-aarch64",
    "linux_aarch64": "linux-aarch64",
    "windows": "win-amd64",
    "win": "win-amd64",
    "win_amd64": "win-amd64",
    "windows-x86_64": "win-amd64",
    "macos": "macos-arm64",
    "darwin-arm64": "macos-arm64",
    "macos-aarch64": "macos-arm64",
    "darwin-x86_64": "macos-x86_64",
}


class Platform(_Value):
    """A platform wheels are built for: ``linux-x86_64``, ``linux-aarch64``, ``win-amd64``,
    ``macos-arm64``, ``macos-x86_64``.

    Also reads the common other names (``linux``, ``windows``, ``macos``, ``linux-arm64``,
    ``win_amd64``, ``darwin-x86_64``, ...), in any case and with surrounding whitespace;
    ``str()`` is always the canonical name. Ordered as :data:`PLATFORMS`.

    :meth:`other` names a machine torchenv has no wheels for (``freebsd-amd64``), as detection
    finds one: no matrix entry is keyed by it, so every question about its wheels says "none".

    Each of the five is one object (``Platform("linux") is Platform("linux-x86_64")``), as the
    members of an enum are: the matrix looks platforms up in every resolve, and a lookup that
    finds the very object it holds compares nothing.
    """

    __slots__ = ()

    _KIND = "platform"
    _A_KIND = "a platform"
    _EXPECTED = "one of " + ", ".join(PLATFORMS)

    _key: tuple[int, str]

    def __new__(cls, text: str) -> Platform:
        given = _given(Platform, text)
        name = given.strip()
        name = name.lower() if name.isascii() else name
        name = _PLATFORM_ALIASES.get(name, name)
        if name not in PLATFORMS:
            raise _invalid(Platform, given)
        return _KNOWN_PLATFORMS[PLATFORMS.index(name)]

    @classmethod
    def _of(cls, index: int, other: str = "") -> Platform:
        value = object.__new__(cls)
        value._key = (index, other)
        return value

    @classmethod
    def other(cls, name: str) -> Platform:
        """A platform outside :data:`PLATFORMS`, by the name detection gives it
        (``freebsd-amd64``); it sorts after the five and its :attr:`system` is ``other``."""
        if name in PLATFORMS or not name:
            raise _invalid(cls, name, f"{_shown(name)} is not another platform",
                           "a name outside " + ", ".join(PLATFORMS))
        return cls._of(len(PLATFORMS), name)

    def __reduce__(self) -> tuple[Any, ...]:
        """Copies (and a process pool's transfers) give back the one object of each name."""
        index, other = self._key
        return (Platform.other, (other,)) if other else (Platform, (PLATFORMS[index],))

    @property
    def system(self) -> System:
        """``linux``, ``win`` or ``macos``; ``other`` for a platform without wheels."""
        index = self._key[0]
        return _SYSTEMS[index] if index < len(_SYSTEMS) else "other"

    def __str__(self) -> str:
        index, other = self._key
        return PLATFORMS[index] if index < len(PLATFORMS) else other


_KNOWN_PLATFORMS = tuple(Platform._of(index) for index in range(len(PLATFORMS)))
