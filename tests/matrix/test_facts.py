"""Known facts the matrix must get right, each checked against the embedded data."""

from __future__ import annotations

import pytest

from torchenv.matrix.model import Matrix, Release
from torchenv.values import (
    ComputeCapability,
    CudaVersion,
    DriverVersion,
    Platform,
    TorchVersion,
    VariantName,
)

LINUX, ARM64, WINDOWS = Platform("linux-x86_64"), Platform("linux-aarch64"), Platform("win-amd64")
MACOS_X86 = Platform("macos-x86_64")


def rel(matrix: Matrix, version: str) -> Release:
    r = matrix.release(TorchVersion(version))
    assert r is not None, version
    return r


def arch(
    matrix: Matrix, version: str, variant: str, platform: str = "linux-x86_64"
) -> tuple[str, ...]:
    v = rel(matrix, version).variant(VariantName(variant))
    assert v is not None, (version, variant)
    lst = v.arch_list_for(Platform(platform))
    assert lst is not None, (version, variant, platform)
    return tuple(map(str, lst))


def test_cu121_of_torch_2_1_dropped_sm_37_while_cu118_kept_it(matrix: Matrix) -> None:
    assert "3.7" not in arch(matrix, "2.1.0", "cu121")
    assert "3.7" in arch(matrix, "2.1.0", "cu118")


def test_the_pytorch_conda_channel_ends_at_2_5(matrix: Matrix) -> None:
    assert rel(matrix, "2.5.1").conda.pytorch_channel is True
    later = [
        r.torch for r in matrix.releases
        if r.torch.release >= (2, 6) and r.conda.pytorch_channel is not False
    ]
    assert later == []


def test_torch_2_5_has_cp313_wheels_only_for_linux_x86_64(matrix: Matrix) -> None:
    for version in ("2.5.0", "2.5.1"):
        r = rel(matrix, version)
        with_313 = sorted(p for p, tags in r.python.items() if "3.13" in tags)
        assert with_313 == [LINUX], version


def test_free_threaded_3_13_was_dropped_in_2_12_1(matrix: Matrix) -> None:
    assert "3.13t" in rel(matrix, "2.12.0").python[LINUX]
    assert "3.13t" not in rel(matrix, "2.12.1").python[LINUX]


def test_torchaudio_2_11_pairs_with_every_later_torch_by_its_maintainers_statement(
        matrix: Matrix) -> None:
    # no torchaudio pins a torch of 2.12 or later; its maintainers say 2.11 works with 2.11 and
    # every later torch, so each later release pairs with the newest torchaudio out by its own
    # date (2.11.1 came out with 2.15.0, as a cu132 build), inferred, quoted
    assert rel(matrix, "2.11.0").pairing("torchaudio").evidence == "confirmed"
    later = [r for r in matrix.releases if r.torch.release >= (2, 12)]
    assert later
    for r in later:
        pairing = r.pairing("torchaudio")
        expected = "2.11.1" if r.torch.release >= (2, 15) else "2.11.0"
        assert (str(r.torchaudio), pairing.evidence, pairing.rule) == (
            expected, "inferred", "companion-by-statement"), r.torch
        assert "2.11" in (pairing.statement or "")


def test_torchvision_for_2_15_is_inferred_from_the_0_29_statements(matrix: Matrix) -> None:
    r = rel(matrix, "2.15.0")
    assert str(r.torchvision) == "0.29.2"
    assert r.pairing("torchvision").evidence == "inferred"
    # a pin the data confirms is kept: 0.29.1's notes name 2.14.1
    assert rel(matrix, "2.14.1").pairing("torchvision").evidence == "confirmed"
    assert str(rel(matrix, "2.14.1").torchvision) == "0.29.1"


def test_python_3_12_wheels_exist_since_2_2(matrix: Matrix) -> None:
    assert "3.12" not in rel(matrix, "2.1.2").python[LINUX]
    assert "3.12" in rel(matrix, "2.2.0").python[LINUX]


@pytest.mark.parametrize(
    ("version", "pypi_cuda"),
    [
        ("2.0.1", "cu117"),
        ("2.1.0", "cu121"),
        ("2.5.1", "cu124"),
        ("2.7.1", "cu126"),
        ("2.8.0", "cu128"),
        ("2.11.0", "cu130"),
    ],
    ids=lambda x: str(x),
)
def test_the_pypi_build_for_linux_x86_64(matrix: Matrix, version: str, pypi_cuda: str) -> None:
    r = rel(matrix, version)
    assert r.pypi_default[LINUX] == VariantName(pypi_cuda)
    assert r.pypi_default[WINDOWS] == VariantName("cpu")


def test_linux_aarch64_pypi_wheels_became_cuda_builds_in_2_11(matrix: Matrix) -> None:
    assert rel(matrix, "2.10.0").pypi_default[ARM64] == VariantName("cpu")
    assert rel(matrix, "2.11.0").pypi_default[ARM64].kind == "cuda"


def test_macos_x86_64_wheels_stop_after_2_2(matrix: Matrix) -> None:
    assert MACOS_X86 in rel(matrix, "2.2.2").python
    assert all(MACOS_X86 not in r.python for r in matrix.releases if r.torch.release >= (2, 3))


def test_cu128_dropped_volta_in_2_11(matrix: Matrix) -> None:
    # torch.cuda.get_arch_list() of the real wheels: 2.10.0+cu128 has sm_70, 2.11.0+cu128 not
    assert "7.0" in arch(matrix, "2.10.0", "cu128")
    assert "7.0" not in arch(matrix, "2.11.0", "cu128")
    assert "12.0" in arch(matrix, "2.11.0", "cu128")


def test_manylinux_floor_rose_to_2_28(matrix: Matrix) -> None:
    assert rel(matrix, "2.7.0").manylinux[LINUX] == "2.28"
    assert rel(matrix, "2.5.1").manylinux[ARM64] == "2.17"


def test_driver_floors_follow_nvidia_tables(matrix: Matrix) -> None:
    f = matrix.toolkit_floor(CudaVersion("12.8"))
    assert f is not None and (f.linux, f.windows) == (DriverVersion("570.26"),
                                                      DriverVersion("570.65"))
    c = matrix.compat_floor(12)
    assert c is not None and (c.linux, c.windows) == (DriverVersion("525.60.13"),
                                                      DriverVersion("527.41"))
    c11 = matrix.compat_floor(11)
    assert c11 is not None and c11.linux == DriverVersion("450.80.02")


def test_the_gpu_catalog_knows_common_cards(matrix: Matrix) -> None:
    h100 = matrix.nvidia_gpu("NVIDIA H100 80GB HBM3")
    assert h100 is not None and h100.compute_capability == ComputeCapability("9.0")
    assert matrix.nvidia_gpu("GeForce GTX 1080") is not None  # old drivers drop "NVIDIA "
    mi300 = matrix.amd_gpu("AMD Instinct MI300X")
    assert mi300 is not None and mi300.gfx == "gfx942"


def test_rocm_targets_include_rdna3_from_rocm_5_5(matrix: Matrix) -> None:
    r63 = matrix.rocm_targets(VariantName("rocm6.3"), TorchVersion("2.7.1"))
    assert r63 is not None and "gfx1100" in r63.gfx
