"""The value types: every spelling each one reads, every text it refuses and why, its order,
equality and hash, and the canonical spelling ``str()`` gives back."""

from __future__ import annotations

import copy
import os
from typing import Any, Callable

import pytest
import yaml

from torchenv.values import (
    PLATFORMS,
    ArchEntry,
    ComputeCapability,
    CudaVersion,
    DriverVersion,
    InvalidValue,
    Platform,
    TorchSpec,
    TorchVersion,
    VariantName,
    optional_text,
)

# (constructor, text, canonical spelling)
ACCEPTED: list[tuple[Callable[[str], Any], str, str]] = [
    # compute capabilities: the forms --gpu, TORCHENV_GPUS and host files accept
    (ComputeCapability, "8.6", "8.6"),
    (ComputeCapability, "12.0", "12.0"),
    (ComputeCapability, "86", "8.6"),
    (ComputeCapability, "120", "12.0"),
    (ComputeCapability, "sm_86", "8.6"),
    (ComputeCapability, "sm86", "8.6"),
    (ComputeCapability, "SM_86", "8.6"),
    (ComputeCapability, "compute_86", "8.6"),
    (ComputeCapability, "sm_8.6", "8.6"),
    (ComputeCapability, "9.0a", "9.0a"),
    (ComputeCapability, "sm_90a", "9.0a"),
    (ComputeCapability, "SM_90A", "9.0a"),
    (ComputeCapability, "10.0f", "10.0f"),
    (ComputeCapability, "sm_100f", "10.0f"),
    (ComputeCapability, "12.0a", "12.0a"),
    (ComputeCapability, "08.6", "8.6"),
    (ComputeCapability, " 8.6\n", "8.6"),
    (ComputeCapability, "1.0", "1.0"),
    (ComputeCapability, "19.9", "19.9"),
    # arch-list entries, as the matrix writes them
    (ArchEntry, "8.6", "8.6"),
    (ArchEntry, "3.7+PTX", "3.7+PTX"),
    (ArchEntry, "12.0+PTX", "12.0+PTX"),
    (ArchEntry, "9.0a", "9.0a"),
    (ArchEntry, "10.0f", "10.0f"),
    (ArchEntry, "12.0a+PTX", "12.0a+PTX"),
    # ... and as torch.cuda.get_arch_list() prints them
    (ArchEntry.from_torch, "sm_86", "8.6"),
    (ArchEntry.from_torch, "sm_90a", "9.0a"),
    (ArchEntry.from_torch, "sm_100f", "10.0f"),
    (ArchEntry.from_torch, "compute_90", "9.0+PTX"),
    (ArchEntry.from_torch, "SM_120", "12.0"),
    (ArchEntry.from_torch, "8.6", "8.6"),
    (ArchEntry.from_torch, "86", "8.6"),
    (ArchEntry.from_torch, "8.6+ptx", "8.6+PTX"),
    (ArchEntry.from_torch, "12.0+PTX", "12.0+PTX"),
    # driver versions: as nvidia-smi and NVML print them (Linux and Windows)
    (DriverVersion, "550.54.15", "550.54.15"),
    (DriverVersion, "535.104.05", "535.104.05"),
    (DriverVersion, "470.57.02", "470.57.02"),
    (DriverVersion, "580.65", "580.65"),
    (DriverVersion, "551.61", "551.61"),
    (DriverVersion, "35.3.1", "35.3.1"),
    (DriverVersion, " 550.54.15\n", "550.54.15"),
    (DriverVersion, "1000.1.1", "1000.1.1"),
    # ... and the matrix's floors, which may name a bare branch
    (DriverVersion.floor, "580", "580"),
    (DriverVersion.floor, "450.80.02", "450.80.02"),
    (DriverVersion.floor, "452.39", "452.39"),
    # CUDA versions
    (CudaVersion, "12.8", "12.8"),
    (CudaVersion, "13.0", "13.0"),
    (CudaVersion, "11.8", "11.8"),
    (CudaVersion, "9.2", "9.2"),
    (CudaVersion, "12.10", "12.10"),
    (CudaVersion, "12.08", "12.8"),
    (CudaVersion, " 12.8\n", "12.8"),
    # variant names
    (VariantName, "cpu", "cpu"),
    (VariantName, "xpu", "xpu"),
    (VariantName, "cu128", "cu128"),
    (VariantName, "cu92", "cu92"),
    (VariantName, "cu118", "cu118"),
    (VariantName, "rocm6.3", "rocm6.3"),
    (VariantName, "rocm6.2.4", "rocm6.2.4"),
    (VariantName, "rocm7.14", "rocm7.14"),
    # torch versions
    (TorchVersion, "2.7.1", "2.7.1"),
    (TorchVersion, "2.7.1+cu128", "2.7.1+cu128"),
    (TorchVersion, "2.7.1+CU128", "2.7.1+CU128"),
    (TorchVersion, "2.8.0.dev20250512+cpu", "2.8.0.dev20250512+cpu"),
    (TorchVersion, "2.6.0a0+ecf3bae40a.nv25.01", "2.6.0a0+ecf3bae40a.nv25.01"),
    (TorchVersion, "2.7.1+cpu_cxx11-abi", "2.7.1+cpu_cxx11-abi"),
    (TorchVersion, " 2.7.1 ", "2.7.1"),
    (TorchVersion, "1.13.0", "1.13.0"),
    (TorchVersion.plain, "2.7.1", "2.7.1"),
    (TorchVersion.plain, "2.10.0", "2.10.0"),
    # torch specifiers: a bare series means the series, another bare version that version
    (TorchSpec, "2.7", "==2.7.*"),
    (TorchSpec, " 2.7 ", "==2.7.*"),
    (TorchSpec, "2.7.1", "==2.7.1"),
    (TorchSpec, "2.7.1+cu128", "==2.7.1+cu128"),
    (TorchSpec, "2.7.*", "==2.7.*"),
    (TorchSpec, "==2.7.*", "==2.7.*"),
    (TorchSpec, ">=2.5,<2.9", "<2.9,>=2.5"),
    (TorchSpec, "~=2.5", "~=2.5"),
    (TorchSpec, "!=2.6.0", "!=2.6.0"),
    (TorchSpec, "", ""),
    # platforms: the names, and the other names --platform has always read
    *((Platform, name, name) for name in PLATFORMS),
    (Platform, "linux", "linux-x86_64"),
    (Platform, "linux-amd64", "linux-x86_64"),
    (Platform, "linux_x86_64", "linux-x86_64"),
    (Platform, "manylinux_x86_64", "linux-x86_64"),
    (Platform, "linux-arm64", "linux-aarch64"),
    (Platform, "linux_aarch64", "linux-aarch64"),
    (Platform, "windows", "win-amd64"),
    (Platform, "win", "win-amd64"),
    (Platform, "win_amd64", "win-amd64"),
    (Platform, "windows-x86_64", "win-amd64"),
    (Platform, "macos", "macos-arm64"),
    (Platform, "darwin-arm64", "macos-arm64"),
    (Platform, "macos-aarch64", "macos-arm64"),
    (Platform, "darwin-x86_64", "macos-x86_64"),
    (Platform, " Linux-X86_64\n", "linux-x86_64"),
]


def _label(parse: Callable[[str], Any]) -> str:
    return getattr(parse, "__qualname__", str(parse))


def _ids(rows: list[tuple[Callable[[str], Any], str, str]]) -> list[str]:
    return [f"{_label(parse)}({text!r})" for parse, text, _ in rows]


@pytest.mark.parametrize(("parse", "text", "canonical"), ACCEPTED, ids=_ids(ACCEPTED))
def test_reads_and_spells_canonically(parse: Callable[[str], Any], text: str,
                                      canonical: str) -> None:
    value = parse(text)
    assert str(value) == canonical
    # the canonical spelling reads back as the same value, through the plain constructor too
    # (but for a bare driver branch, which only a floor may be)
    assert parse(canonical) == value
    if not (isinstance(value, DriverVersion) and len(value.parts) == 1):
        assert type(value)(canonical) == value
        assert hash(type(value)(canonical)) == hash(value)
    assert repr(value) == f"<{type(value).__name__}({canonical!r})>"


# (constructor, text, message); str() of the error adds the expected form in parentheses
REFUSED: list[tuple[Callable[[str], Any], str, str]] = [
    (ComputeCapability, "8.x", "'8.x' is not a compute capability"),
    (ComputeCapability, "", "'' is not a compute capability"),
    (ComputeCapability, "8", "'8' is not a compute capability"),
    (ComputeCapability, "8.60", "'8.60' is not a compute capability"),
    (ComputeCapability, "8.6b", "'8.6b' is not a compute capability"),
    (ComputeCapability, "8.6+PTX", "'8.6+PTX' is not a compute capability"),
    (ComputeCapability, "sm_1000", "'sm_1000' is not a compute capability"),
    (ComputeCapability, "gfx90a", "'gfx90a' is not a compute capability"),
    (ComputeCapability, "８.６", "'８.６' is not a compute capability"),
    (ComputeCapability, "sm_８６", "'sm_８６' is not a compute capability"),
    (ComputeCapability, "٨.٦", "'٨.٦' is not a compute capability"),
    (ComputeCapability, "sm_999", "'sm_999' is not a compute capability any GPU has (major 99)"),
    (ComputeCapability, "99.9", "'99.9' is not a compute capability any GPU has (major 99)"),
    (ComputeCapability, "0.5", "'0.5' is not a compute capability any GPU has (major 0)"),
    (ComputeCapability, "20.0", "'20.0' is not a compute capability any GPU has (major 20)"),
    (ArchEntry, "8.6x", "'8.6x' is not a compute capability"),
    (ArchEntry, "sm_86", "'sm_86' is not a compute capability"),
    (ArchEntry, "86", "'86' is not a compute capability"),
    (ArchEntry, "8.6+ptx", "'8.6+ptx' is not a compute capability"),
    (ArchEntry, " 8.6", "' 8.6' is not a compute capability"),
    (ArchEntry, "8.6\n", "'8.6\\n' is not a compute capability"),
    (ArchEntry, "８.６", "'８.６' is not a compute capability"),
    (ArchEntry, "0.0", "'0.0' is not a compute capability any GPU has (major 0)"),
    (ArchEntry, "25.0+PTX", "'25.0+PTX' is not a compute capability any GPU has (major 25)"),
    (ArchEntry.from_torch, "sm86", "'sm86' is not a compute capability"),
    (ArchEntry.from_torch, "gfx90a", "'gfx90a' is not a compute capability"),
    (ArchEntry.from_torch, "compute_８６", "'compute_８６' is not a compute capability"),
    (DriverVersion, "580", "'580' is not an NVIDIA driver version"),
    (DriverVersion, "5.1", "'5.1' is not an NVIDIA driver version"),
    (DriverVersion, "550.54.15.1", "'550.54.15.1' is not an NVIDIA driver version"),
    (DriverVersion, "550.1234", "'550.1234' is not an NVIDIA driver version"),
    (DriverVersion, "55000.1", "'55000.1' is not an NVIDIA driver version"),
    (DriverVersion, "r550.54", "'r550.54' is not an NVIDIA driver version"),
    (DriverVersion, "550.54.", "'550.54.' is not an NVIDIA driver version"),
    (DriverVersion, "latest", "'latest' is not an NVIDIA driver version"),
    (DriverVersion, "５５０.５４.１５", "'５５０.５４.１５' is not an NVIDIA driver version"),
    (DriverVersion.floor, "", "'' is not an NVIDIA driver version"),
    (DriverVersion.floor, " 580", "' 580' is not an NVIDIA driver version"),
    (DriverVersion.floor, "580.1.2.3", "'580.1.2.3' is not an NVIDIA driver version"),
    (DriverVersion.floor, "unknown", "'unknown' is not an NVIDIA driver version"),
    (CudaVersion, "12", "'12' is not a CUDA version"),
    (CudaVersion, "12.8.1", "'12.8.1' is not a CUDA version"),
    (CudaVersion, "cu128", "'cu128' is not a CUDA version"),
    (CudaVersion, "123.4", "'123.4' is not a CUDA version"),
    (CudaVersion, "１２.８", "'１２.８' is not a CUDA version"),
    (VariantName, "cuda12", "'cuda12' is not a variant name"),
    (VariantName, "auto", "'auto' is not a variant name"),
    (VariantName, "mps", "'mps' is not a variant name"),
    (VariantName, "CU128", "'CU128' is not a variant name"),
    (VariantName, " cu128", "' cu128' is not a variant name"),
    (VariantName, "cu128\n", "'cu128\\n' is not a variant name"),
    (VariantName, "cu1", "'cu1' is not a variant name"),
    (VariantName, "cu1280", "'cu1280' is not a variant name"),
    (VariantName, "rocm6", "'rocm6' is not a variant name"),
    (VariantName, "rocm6.2.4.1", "'rocm6.2.4.1' is not a variant name"),
    (VariantName, "cpu.cxx11.abi", "'cpu.cxx11.abi' is not a variant name"),
    (VariantName, "cu１２８", "'cu１２８' is not a variant name"),
    (TorchVersion, "two", "'two' is not a torch version"),
    (TorchVersion, "2.7.x", "'2.7.x' is not a torch version"),
    (TorchVersion, "２.７.１", "'２.７.１' is not a torch version"),
    (TorchVersion.plain, "2.7.1+cu128", "'2.7.1+cu128' is not a torch version"),
    (TorchVersion.plain, "2.7.0rc1", "'2.7.0rc1' is not a torch version"),
    (TorchVersion.plain, "2", "'2' is not a torch version"),
    (TorchVersion.plain, " 2.7.1", "' 2.7.1' is not a torch version"),
    (TorchSpec, ">>2", "'>>2' is not a version specifier"),
    (TorchSpec, "2.7.x", "'2.7.x' is not a version specifier"),
    (TorchSpec, "latest", "'latest' is not a version specifier"),
    (TorchSpec, "２.７", "'２.７' is not a version specifier"),
    (Platform, "linux-riscv64", "'linux-riscv64' is not a platform"),
    (Platform, "", "'' is not a platform"),
    (Platform, "darwin", "'darwin' is not a platform"),
]


@pytest.mark.parametrize(("parse", "text", "message"), REFUSED, ids=_ids(REFUSED))
def test_refuses_with_a_message_naming_the_text(parse: Callable[[str], Any], text: str,
                                                message: str) -> None:
    with pytest.raises(InvalidValue) as caught:
        parse(text)
    error = caught.value
    assert issubclass(InvalidValue, ValueError)
    assert error.text == text
    assert error.message == message
    assert str(error) == f"{message} (expected {error.expected})"
    assert error.expected


EXPECTED_KINDS = [
    (ComputeCapability, "compute capability", "e.g. 8.6 or sm_86"),
    (ArchEntry, "arch-list entry", "e.g. 8.6, 9.0a or 12.0+PTX"),
    (DriverVersion, "NVIDIA driver version", "e.g. 550.54.15 or 580.65"),
    (CudaVersion, "CUDA version", "e.g. 12.8"),
    (VariantName, "variant name", "e.g. cpu, cu128, rocm6.3 or xpu"),
    (TorchVersion, "torch version", "e.g. 2.7.1 or 2.7.1+cu128"),
    (TorchSpec, "torch version specifier", "PEP 440, e.g. '==2.7.*', '>=2.5,<2.9' or 2.7.1"),
    (Platform, "platform", "one of " + ", ".join(PLATFORMS)),
]


@pytest.mark.parametrize(("cls", "kind", "expected"), EXPECTED_KINDS,
                         ids=[cls.__name__ for cls, _, _ in EXPECTED_KINDS])
def test_the_error_names_the_kind_and_an_example(cls: type, kind: str, expected: str) -> None:
    with pytest.raises(InvalidValue) as caught:
        cls("x?")
    assert (caught.value.kind, caught.value.expected) == (kind, expected)


def test_the_brief_form_of_the_error() -> None:
    with pytest.raises(InvalidValue, match=r"^'8\.x' is not a compute capability "
                       r"\(expected e\.g\. 8\.6 or sm_86\)$"):
        ComputeCapability("8.x")


CONSTRUCTORS: list[Callable[[str], Any]] = [
    ComputeCapability, ArchEntry, ArchEntry.from_torch, DriverVersion, DriverVersion.floor,
    CudaVersion, VariantName, TorchVersion, TorchVersion.plain, TorchSpec, Platform,
]


@pytest.mark.parametrize("parse", CONSTRUCTORS, ids=[_label(p) for p in CONSTRUCTORS])
@pytest.mark.parametrize("text", ["1" * 5000, "1." + "1" * 5000, "8.6" + " " * 5000],
                         ids=["5000 digits", "5000-digit part", "5000 spaces"])
def test_a_huge_input_is_a_clean_refusal(parse: Callable[[str], Any], text: str) -> None:
    # not int()'s "Exceeds the limit (4300 digits)", and the message does not repeat it all
    with pytest.raises(InvalidValue) as caught:
        parse(text)
    assert "4300" not in str(caught.value)
    assert len(str(caught.value)) < 200
    assert caught.value.text == text


FULLWIDTH = [
    (ComputeCapability, "８.６"), (ComputeCapability, "sm_８６"), (ArchEntry, "８.６"),
    (ArchEntry.from_torch, "sm_８６"), (DriverVersion, "５５０.５４.１５"),
    (DriverVersion.floor, "５８０"), (CudaVersion, "１２.８"), (VariantName, "cu１２８"),
    (VariantName, "rocm６.３"), (TorchVersion, "２.７.１"), (TorchVersion.plain, "２.７.１"),
    (TorchSpec, "２.７"), (TorchSpec, "==２.７.*"), (Platform, "ｌｉｎｕｘ"),
    # letters that match ASCII ones only under Unicode case folding (KELVIN SIGN, LONG S)
    (TorchVersion, "2.7.1+\u212a"), (TorchVersion, "1.0.po\u017ft1"), (TorchSpec, "==2.7.1+\u212a"),
    (Platform, "linu\u212a"),
]


@pytest.mark.parametrize(("parse", "text"), FULLWIDTH,
                         ids=[f"{_label(p)}({t!a})" for p, t in FULLWIDTH])
def test_non_ascii_digits_and_letters_are_refused(parse: Callable[[str], Any],
                                                  text: str) -> None:
    with pytest.raises(InvalidValue):
        parse(text)


@pytest.mark.parametrize("parse", CONSTRUCTORS, ids=[_label(p) for p in CONSTRUCTORS])
def test_only_text_is_read(parse: Callable[[Any], Any]) -> None:
    with pytest.raises(TypeError):
        parse(8.6)


# --------------------------------------------------------------------------- order

ORDERS: list[tuple[Callable[[str], Any], list[str]]] = [
    (ComputeCapability, ["1.0", "3.7", "8.0", "8.6", "8.9", "9.0", "9.0a", "9.0f", "10.0",
                         "10.0a", "10.3", "12.0", "12.1", "19.9"]),
    (ArchEntry, ["3.7", "3.7+PTX", "8.6", "9.0", "9.0+PTX", "9.0a", "10.0f", "12.0",
                 "12.0+PTX"]),
    (DriverVersion.floor, ["450.51.05", "450.80.02", "451.48", "470.42.01", "535.54.03",
                           "535.104.05", "575.51.03", "580", "580.65.06", "610.43.02"]),
    (CudaVersion, ["9.2", "10.2", "11.8", "12.1", "12.8", "12.10", "13.0"]),
    (VariantName, ["cpu", "cu92", "cu118", "cu126", "cu128", "cu130", "rocm5.1.1", "rocm5.7",
                   "rocm6.2", "rocm6.2.4", "rocm6.3", "rocm7.14", "xpu"]),
    (TorchVersion, ["1.13.0", "2.0.0", "2.7.0", "2.7.1", "2.7.1+cpu", "2.7.1+cu128",
                    "2.8.0.dev20250512", "2.8.0", "2.10.0"]),
    (Platform, list(PLATFORMS)),
]


@pytest.mark.parametrize(("parse", "ordered"), ORDERS, ids=[_label(p) for p, _ in ORDERS])
def test_values_sort_in_their_natural_order(parse: Callable[[str], Any],
                                            ordered: list[str]) -> None:
    values = [parse(text) for text in ordered]
    shuffled = values[1::2] + values[::2]
    assert [str(v) for v in sorted(shuffled)] == ordered
    assert max(shuffled) == values[-1] and min(shuffled) == values[0]
    for smaller, larger in zip(values, values[1:]):
        assert smaller < larger and smaller <= larger and larger > smaller and larger >= smaller
        assert smaller != larger
        assert (smaller == larger) is False


def test_drivers_order_by_number_not_text() -> None:
    assert DriverVersion("535.104.05") > DriverVersion("535.54.03")
    # a floor that names a branch is reached by every version of it
    assert DriverVersion("580.65.06") >= DriverVersion.floor("580")
    assert DriverVersion("575.51.03") < DriverVersion.floor("580")


# --------------------------------------------------------------------------- equality, hash

EQUAL_SPELLINGS: list[tuple[Callable[[str], Any], list[str]]] = [
    (ComputeCapability, ["8.6", "86", "sm_86", "SM86", "compute_86", " 8.6 ", "08.6"]),
    (ComputeCapability, ["9.0a", "sm_90a", "90A"]),
    (DriverVersion, ["470.57.02", "470.57.2", " 470.57.02"]),
    (CudaVersion, ["12.8", "12.08", " 12.8"]),
    (TorchVersion, ["2.7.1+cu128", "2.7.1+CU128", "v2.7.1+cu128"]),
    (TorchSpec, ["2.7", "2.7.*", "==2.7.*", " ==2.7.* "]),
    (TorchSpec, [">=2.5,<2.9", "<2.9,>=2.5", "<2.9, >=2.5"]),
    (Platform, ["linux-x86_64", "linux", "LINUX", "manylinux_x86_64"]),
]


@pytest.mark.parametrize(("parse", "spellings"), EQUAL_SPELLINGS,
                         ids=[f"{_label(p)}({s[0]})" for p, s in EQUAL_SPELLINGS])
def test_spellings_of_one_value_are_equal_and_hash_alike(parse: Callable[[str], Any],
                                                         spellings: list[str]) -> None:
    values = [parse(text) for text in spellings]
    assert all(v == values[0] for v in values)
    assert len({hash(v) for v in values}) == 1
    assert len(set(values)) == 1


def test_a_driver_keeps_nvidia_s_spelling() -> None:
    assert str(DriverVersion("470.57.02")) == "470.57.02"


@pytest.mark.parametrize("value", [
    ComputeCapability("8.6"), ArchEntry("8.6"), DriverVersion("550.54.15"), CudaVersion("12.8"),
    VariantName("cu128"), TorchVersion("2.7.1"), TorchSpec("==2.7.1"), Platform("win-amd64"),
], ids=repr)
def test_a_value_is_never_equal_to_its_text_or_another_type(value: Any) -> None:
    assert value != str(value)
    others = [ComputeCapability("8.6"), ArchEntry("8.6"), CudaVersion("8.6"),
              TorchVersion("8.6"), DriverVersion("550.54.15")]
    assert all(value != other for other in others if type(other) is not type(value))
    with pytest.raises(TypeError):
        value < str(value)  # noqa: B015 - the comparison itself is what raises


def test_a_capability_differs_from_its_arch_specific_target() -> None:
    assert ComputeCapability("9.0") != ComputeCapability("9.0a")
    assert ComputeCapability("9.0a").base == ComputeCapability("9.0")
    assert ArchEntry("8.6") != ArchEntry("8.6+PTX")


@pytest.mark.parametrize(("value", "attribute"), [
    (ComputeCapability("8.6"), "major"), (ArchEntry("12.0+PTX"), "ptx"),
    (DriverVersion("550.54.15"), "parts"), (CudaVersion("12.8"), "minor"),
    (VariantName("cu128"), "kind"), (TorchVersion("2.7.1"), "release"),
    (TorchSpec("2.7"), "text"), (Platform("linux"), "system"),
], ids=lambda x: x if isinstance(x, str) else type(x).__name__)
def test_values_cannot_be_changed(value: Any, attribute: str) -> None:
    with pytest.raises(AttributeError):
        setattr(value, attribute, None)
    with pytest.raises(AttributeError):
        value.note = "anything"
    assert not hasattr(value, "__dict__")


# --------------------------------------------------------------------------- what each one tells

@pytest.mark.parametrize(("text", "major", "minor", "suffix", "sm"), [
    ("8.6", 8, 6, "", "sm_86"), ("sm_90a", 9, 0, "a", "sm_90a"), ("10.0f", 10, 0, "f", "sm_100f"),
    ("12.0", 12, 0, "", "sm_120"), ("12.0a", 12, 0, "a", "sm_120a"),
], ids=lambda x: str(x))
def test_compute_capability_parts(text: str, major: int, minor: int, suffix: str,
                                  sm: str) -> None:
    cc = ComputeCapability(text)
    assert (cc.major, cc.minor, cc.suffix, cc.sm) == (major, minor, suffix, sm)
    assert str(cc.base) == f"{major}.{minor}"
    assert ComputeCapability.from_parts(major, minor, suffix) == cc


@pytest.mark.parametrize("parts", [(8, 10), (8, -1), (0, 0), (20, 0), (8, 6, "b"), (True, 0)],
                         ids=str)
def test_compute_capability_from_bad_parts(parts: tuple[Any, ...]) -> None:
    with pytest.raises(InvalidValue):
        ComputeCapability.from_parts(*parts)


@pytest.mark.parametrize(("text", "capability", "ptx", "sm"), [
    ("8.6", "8.6", False, "sm_86"), ("12.0+PTX", "12.0", True, "sm_120"),
    ("9.0a", "9.0a", False, "sm_90a"), ("10.0f+PTX", "10.0f", True, "sm_100f"),
], ids=lambda x: str(x))
def test_arch_entry_parts(text: str, capability: str, ptx: bool, sm: str) -> None:
    entry = ArchEntry(text)
    assert (str(entry.capability), entry.ptx, entry.sm) == (capability, ptx, sm)
    cc = ComputeCapability(capability)
    assert (entry.major, entry.minor, entry.suffix) == (cc.major, cc.minor, cc.suffix)


@pytest.mark.parametrize(("text", "kind", "version", "cuda"), [
    ("cpu", "cpu", (), None), ("xpu", "xpu", (), None), ("cu128", "cuda", (12, 8), "12.8"),
    ("cu92", "cuda", (9, 2), "9.2"), ("cu130", "cuda", (13, 0), "13.0"),
    ("rocm6.3", "rocm", (6, 3), None), ("rocm6.2.4", "rocm", (6, 2, 4), None),
], ids=lambda x: str(x))
def test_variant_name_parts(text: str, kind: str, version: tuple[int, ...],
                            cuda: str | None) -> None:
    name = VariantName(text)
    assert (name.kind, name.version) == (kind, version)
    assert (str(name.cuda) if name.cuda else None) == cuda
    if name.cuda is not None:
        assert VariantName.of_cuda(name.cuda) == name


def test_a_cuda_version_with_a_two_digit_minor_has_no_variant_name() -> None:
    with pytest.raises(InvalidValue, match="has no variant name"):
        VariantName.of_cuda(CudaVersion("12.10"))


@pytest.mark.parametrize(("value", "cuda"), [(12080, "12.8"), (13000, "13.0"), (11080, "11.8"),
                                             (12090, "12.9"), (9020, "9.2")], ids=str)
def test_cuda_version_from_nvml(value: int, cuda: str) -> None:
    assert CudaVersion.from_nvml(value) == CudaVersion(cuda)


@pytest.mark.parametrize("value", [0, -1, 100000], ids=str)
def test_cuda_version_from_nvml_refuses_no_driver(value: int) -> None:
    with pytest.raises(InvalidValue):
        CudaVersion.from_nvml(value)


@pytest.mark.parametrize(("text", "variant"), [
    ("2.7.1+cu128", "cu128"), ("2.7.1+cpu", "cpu"), ("2.7.1+cpu.cxx11.abi", "cpu"),
    ("2.7.1+cpu_cxx11_abi", "cpu"), ("2.7.1+rocm6.3", "rocm6.3"),
    ("2.7.1+rocm6.2.4", "rocm6.2.4"), ("2.7.1+xpu", "xpu"), ("2.7.1+CU128", "cu128"),
    ("2.7.1", None), ("2.6.0a0+ecf3bae40a.nv25.01", None), ("2.7.1+cu12", "cu12"),
    ("2.7.1+cu1", None), ("2.7.1+cpuonly", None),
], ids=str)
def test_torch_version_variant(text: str, variant: str | None) -> None:
    found = TorchVersion(text).variant
    assert (str(found) if found is not None else None) == variant


def test_torch_version_parts() -> None:
    version = TorchVersion("2.7.1+cu128")
    assert (version.release, version.series, version.public, version.local) == (
        (2, 7, 1), "2.7", "2.7.1", "cu128")
    assert version.without_local() == TorchVersion("2.7.1")
    plain = TorchVersion("2.7.1")
    assert plain.without_local() is plain and plain.local is None


def test_torch_version_keeps_the_spelling_its_metadata_records() -> None:
    version = TorchVersion("2.6.0a0+ecf3bae40a.nv25.01")
    assert (str(version), version.public, version.local) == (
        "2.6.0a0+ecf3bae40a.nv25.01", "2.6.0a0", "ecf3bae40a.nv25.01")
    assert version == TorchVersion("2.6.0a0+ecf3bae40a.nv25.1")


@pytest.mark.parametrize(("spec", "matching", "not_matching"), [
    ("2.7", ["2.7.0", "2.7.1", "2.7.1+cu128", "2.7.0rc1"], ["2.6.0", "2.8.0", "2.70.0"]),
    ("2.7.1", ["2.7.1", "2.7.1+cu128"], ["2.7.0", "2.7.2"]),
    ("2.7.0", ["2.7.0", "2.7"], ["2.7.1"]),
    (">=2.5,<2.9", ["2.5.0", "2.8.0", "2.8.0rc1"], ["2.4.1", "2.9.0", "2.9.0rc1"]),
    ("", ["1.13.0", "2.7.1"], []),
], ids=lambda x: repr(x) if isinstance(x, str) else None)
def test_torch_spec_matches(spec: str, matching: list[str], not_matching: list[str]) -> None:
    parsed = TorchSpec(spec)
    for version in matching:
        assert parsed.contains(TorchVersion(version)) and version in parsed
    for version in not_matching:
        assert not parsed.contains(TorchVersion(version)) and version not in parsed


def test_torch_spec_keeps_the_text_as_given() -> None:
    spec = TorchSpec(" 2.7 ")
    assert (spec.text, str(spec)) == (" 2.7 ", "==2.7.*")


def test_torch_specs_are_not_ordered() -> None:
    with pytest.raises(TypeError):
        TorchSpec("2.7") < TorchSpec("2.8")  # type: ignore[operator]  # noqa: B015


@pytest.mark.parametrize(("platform", "system"), [
    ("linux-x86_64", "linux"), ("linux-aarch64", "linux"), ("win-amd64", "win"),
    ("macos-arm64", "macos"), ("macos-x86_64", "macos"),
], ids=str)
def test_platform_system(platform: str, system: str) -> None:
    assert Platform(platform).system == system


def test_another_platform_names_itself_and_sorts_last() -> None:
    other = Platform.other("freebsd-amd64")
    assert (str(other), other.system) == ("freebsd-amd64", "other")
    assert other == Platform.other("freebsd-amd64") != Platform.other("sunos-i86pc")
    assert max(Platform(name) for name in PLATFORMS) < other
    for name in ("linux-x86_64", ""):
        with pytest.raises(InvalidValue):
            Platform.other(name)


def test_each_platform_is_one_object() -> None:
    assert Platform("linux") is Platform("linux-x86_64") is Platform(" LINUX-X86_64 ")
    for platform in (*(Platform(name) for name in PLATFORMS), Platform.other("freebsd-amd64")):
        assert copy.deepcopy(platform) == platform
    assert copy.deepcopy(Platform("win")) is Platform("win-amd64")


def test_a_document_writes_a_value_as_its_text() -> None:
    assert (optional_text(CudaVersion("12.08")), optional_text(None)) == ("12.8", None)


def test_arch_entry_without_ptx() -> None:
    assert ArchEntry("12.0+PTX").without_ptx() == ArchEntry("12.0")
    assert str(ArchEntry("9.0a+PTX").without_ptx()) == "9.0a"
    entry = ArchEntry("8.6")
    assert entry.without_ptx() is entry


# --------------------------------------------------------------------------- the shipped data

_DATA = os.path.join(os.path.dirname(__file__), os.pardir, "src", "torchenv", "matrix", "data")


def _load(name: str) -> Any:
    with open(os.path.join(_DATA, name), encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def _facts() -> list[tuple[Callable[[str], Any], Any]]:
    """(how the value reads, the text) for every fact of the shipped matrix data."""
    facts: list[tuple[Callable[[str], Any], Any]] = []
    for release in _load("releases.yaml")["releases"]:
        facts.append((TorchVersion.plain, release["torch"]))
        facts += [(TorchVersion.plain, release[companion]) for companion in ("torchvision",
                  "torchaudio") if release.get(companion) not in (None, "unknown")]
        for key in ("python", "manylinux", "pypi_default"):
            facts += [(Platform, plat) for plat in release.get(key) or {}]
        facts += [(VariantName, name) for name in (release.get("pypi_default") or {}).values()]
    variants = _load("variants.yaml")
    for variant_set in variants["variant_sets"]:
        facts += [(TorchVersion.plain, torch) for torch in variant_set["releases"]]
        for variant in variant_set["variants"]:
            facts.append((VariantName, variant["name"]))
            facts += [(Platform, plat) for plat in variant["platforms"]]
            lists = [variant.get("arch_list")]
            for plat, arch in (variant.get("arch_list_by_platform") or {}).items():
                facts.append((Platform, plat))
                lists.append(arch)
            facts += [(ArchEntry, a) for arch in lists if isinstance(arch, list) for a in arch]
    for policy in variants.get("ptx_policy") or []:
        facts += [(TorchVersion.plain, torch) for torch in policy["releases"]]
        facts += [(CudaVersion, cuda) for cuda in policy["cuda"]]
        facts += [(Platform, plat) for plat in policy["platforms"]]
    for table in variants.get("runtime_cc_tables") or []:
        facts += [(TorchVersion.plain, torch) for torch in table["releases"]]
        for cuda, per_platform in table["cuda"].items():
            facts.append((CudaVersion, cuda))
            for plat, arch in per_platform.items():
                facts.append((Platform, plat))
                facts += [(ArchEntry, a) for a in arch or ()]
    floors = _load("cuda.yaml")
    for floor in floors["toolkit_floors"] + floors["compat_floors"]:
        if "cuda" in floor:
            facts.append((CudaVersion, floor["cuda"]))
        facts += [(DriverVersion.floor, floor[os_]) for os_ in ("linux", "windows")
                  if floor.get(os_) not in (None, "unknown")]
        facts += [(ComputeCapability, floor[key]) for key in ("newest_arch", "oldest_arch")
                  if floor.get(key) is not None]
    for entry in _load("rocm.yaml")["rocm_variants"]:
        facts.append((VariantName, entry["name"]))
        facts += [(TorchVersion.plain, torch) for torch in entry.get("torch") or ()]
    for gpu in _load("gpus.yaml").get("nvidia") or ():
        facts.append((ComputeCapability, gpu["compute_capability"]))
    return facts


def test_every_fact_in_the_matrix_data_reads_in_its_canonical_spelling() -> None:
    facts = _facts()
    for parse, raw in facts:
        text = str(raw)  # as the loader reads a YAML number
        assert str(parse(text)) == text, (_label(parse), text)
    kinds = {_label(parse) for parse, _ in facts}
    assert kinds == {"TorchVersion.plain", "Platform", "VariantName", "ArchEntry", "CudaVersion",
                     "DriverVersion.floor", "ComputeCapability"}
    assert len(facts) > 1000
