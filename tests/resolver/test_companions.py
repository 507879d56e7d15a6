"""One (torch build, companion build) pair, judged from companions.yaml: each row a target and
the verdict the data implies, with the rule that decides it."""

from __future__ import annotations

from dataclasses import replace
from typing import NamedTuple

import pytest

from torchenv.matrix.companions import Companions, GpuRequirement, load_companions
from torchenv.matrix.model import Matrix
from torchenv.resolver.companions import (
    RULES,
    CompanionVerdict,
    gpu_floor,
    judge_companion,
    judge_release,
)
from torchenv.values import ArchEntry, ComputeCapability, Platform, TorchVersion, VariantName

ASSETS = "https://github.com/Dao-AILab/flash-attention/releases/download/v2.8.3/"


@pytest.fixture(scope="module")
def data(matrix: Matrix) -> Companions:
    return load_companions(matrix=matrix)


class Case(NamedTuple):
    package: str
    version: str
    torch: str
    variant: str
    python: str = "3.12"
    gpus: tuple[str, ...] = ()
    platform: str = "linux-x86_64"
    jit_ok: bool = True


def _judge(data: Companions, case: Case) -> CompanionVerdict:
    pkg = data.package(case.package)
    assert pkg is not None
    release = pkg.release(TorchVersion(case.version))
    assert release is not None
    return judge_release(
        data, pkg, release, torch=TorchVersion(case.torch), variant=VariantName(case.variant),
        platform=Platform(case.platform), python=case.python,
        gpus=tuple(ComputeCapability(g) for g in case.gpus), jit_ok=case.jit_ok)[0]


FITS = [
    ("flash-attn on Ampere with torch 2.8: the C++11 ABI file",
     Case("flash-attn", "2.8.3", "2.8.0", "cu128", gpus=("8.6",)),
     ASSETS + "flash_attn-2.8.3+cu12torch2.8cxx11abiTRUE-cp312-cp312-linux_x86_64.whl",
     "confirmed"),
    ("flash-attn on Blackwell with a patch release of the minor",
     Case("flash-attn", "2.8.3", "2.7.1", "cu128", "3.13", gpus=("12.0", "9.0")),
     ASSETS + "flash_attn-2.8.3+cu12torch2.7cxx11abiTRUE-cp313-cp313-linux_x86_64.whl",
     "confirmed"),
    ("flash-attn with torch 2.4 (old ABI): the FALSE file follows that torch",
     Case("flash-attn", "2.8.3", "2.4.1", "cu124", gpus=("9.0",)),
     ASSETS + "flash_attn-2.8.3+cu12torch2.4cxx11abiFALSE-cp312-cp312-linux_x86_64.whl",
     "confirmed"),
    ("flash-attn with torch 2.6 cu126, the one 2.6 family with the C++11 ABI",
     Case("flash-attn", "2.8.3", "2.6.0", "cu126"),
     ASSETS + "flash_attn-2.8.3+cu12torch2.6cxx11abiTRUE-cp312-cp312-linux_x86_64.whl",
     "confirmed"),
    ("xformers 0.0.33.post2 with the torch it pins",
     Case("xformers", "0.0.33.post2", "2.9.1", "cu128", gpus=("8.0",)), None, "unknown"),
    ("xformers 0.0.35 with any torch from 2.10",
     Case("xformers", "0.0.35", "2.15.0", "cu130", "3.14"), None, "confirmed"),
    ("torchao 0.18 with a later torch",
     Case("torchao", "0.18.0", "2.14.1", "cu130", "3.13"), None, "confirmed"),
    ("torch-scatter from the page of torch 2.12's minor",
     Case("torch-scatter", "2.1.2", "2.12.1", "cu130"),
     "https://data.pyg.org/whl/torch-2.12.0+cu130.html", "confirmed"),
    ("vLLM 0.29.0 on a T4",
     Case("vllm", "0.29.0", "2.13.0", "cu129", gpus=("7.5",)), None, "confirmed"),
]


@pytest.mark.parametrize(("case", "url", "evidence"), [row[1:] for row in FITS],
                         ids=[row[0] for row in FITS])
def test_a_pair_that_fits_names_its_file_and_evidence(data: Companions, case: Case,
                                                      url: str | None, evidence: str) -> None:
    verdict = _judge(data, case)
    assert verdict.fits, verdict.reason
    assert verdict.rule == "fits"
    assert (verdict.url, verdict.evidence) == (url, evidence)


REFUSED = [
    ("flash-attn on Turing", Case("flash-attn", "2.8.3", "2.8.0", "cu128", gpus=("7.5",)),
     "gpu", "flash-attn 2.8.3: GPU 0 (sm_75) is not among its compiled targets (8.0 9.0 10.0 "
            "12.0)"),
    ("flash-attn when one of two GPUs is Turing",
     Case("flash-attn", "2.8.3", "2.8.0", "cu128", gpus=("8.6", "7.5")),
     "gpu", "GPU 1 (sm_75)"),
    ("flash-attn with torch 2.11", Case("flash-attn", "2.8.3", "2.11.0", "cu128"),
     "torch", "built for torch 2.4 (minor), not 2.11.0"),  # each asset build: the first named
    ("flash-attn for Python 3.14", Case("flash-attn", "2.8.3", "2.8.0", "cu128", "3.14"),
     "python", "no wheel for Python 3.14 (3.9–3.12)"),
    ("flash-attn on Windows", Case("flash-attn", "2.8.3", "2.8.0", "cu128",
                                   platform="win-amd64"),
     "platform", "no win-amd64 file (it has linux-x86_64)"),
    ("flash-attn with CPU torch", Case("flash-attn", "2.8.3", "2.8.0", "cpu"),
     "variant", "built for CUDA 12 builds of torch, and torch 2.8.0 cpu is a CPU build"),
    ("flash-attn with CUDA 13 torch", Case("flash-attn", "2.8.3", "2.8.0", "cu130"),
     "variant", "torch 2.8.0 cu130 is CUDA 13 (cu130)"),
    ("flash-attn with torch 2.6 cu124: which ABI its FALSE file has is not recorded",
     Case("flash-attn", "2.8.3", "2.6.0", "cu124"),
     "abi", "the C++11 ABI of torch 2.6.0 cu124 on linux-x86_64 is not known, so no file"),
    ("flash-attn 2.8.3.post2 has only the sdist",
     Case("flash-attn", "2.8.3.post2", "2.8.0", "cu128"),
     "source-build", "only a source build here"),
    ("xformers 0.0.33.post2 with another torch",
     Case("xformers", "0.0.33.post2", "2.9.0", "cu128"),
     "torch", "built for torch 2.9.1 (exact), not 2.9.0"),
    ("xformers' abi3 wheel in a free-threaded Python",
     Case("xformers", "0.0.34", "2.10.0", "cu128", "3.13t"),
     "python", "no wheel for Python 3.13t (3.9+ (abi3))"),
    ("vLLM on a V100", Case("vllm", "0.29.0", "2.13.0", "cu129", gpus=("7.0",)),
     "gpu", "vllm 0.29.0: needs compute capability 7.5 or newer; GPU 0 is sm_70"),
    ("vLLM with the next torch", Case("vllm", "0.29.0", "2.14.0", "cu130"),
     "torch", "built for torch 2.13.0 (exact), not 2.14.0"),
    ("torch-scatter for a variant the page lacks",
     Case("torch-scatter", "2.1.2", "2.12.1", "cu128"),
     "variant", "no cu128 build (it has cu130)"),
    ("torch-scatter cu130 on Windows",
     Case("torch-scatter", "2.1.2", "2.12.0", "cu130", platform="win-amd64"),
     "variant", "no cu130 build (it has cpu)"),
    ("torchao 0.16 with torch 2.11", Case("torchao", "0.16.0", "2.11.0", "cu128"),
     "torch", "built for torch 2.10.0 (exact), not 2.11.0"),
]


@pytest.mark.parametrize(("case", "rule", "reason"), [row[1:] for row in REFUSED],
                         ids=[row[0] for row in REFUSED])
def test_a_pair_that_does_not_fit_names_the_rule_and_the_reason(
        data: Companions, case: Case, rule: str, reason: str) -> None:
    verdict = _judge(data, case)
    assert not verdict.fits
    assert verdict.rule == rule
    assert reason in verdict.reason, verdict.reason
    assert verdict.url is None


def test_a_fit_no_source_states_the_gpus_for_carries_a_warning(data: Companions) -> None:
    verdict = _judge(data, Case("vllm", "0.28.0", "2.13.0", "cu129", gpus=("8.0",)))
    assert verdict.fits and verdict.evidence == "unknown"
    assert verdict.warnings == ("vllm 0.28.0: no source read states which GPUs its kernels "
                                "run on",)


def test_no_gpu_rule_applies_without_gpus(data: Companions) -> None:
    verdict = _judge(data, Case("vllm", "0.29.0", "2.13.0", "cu129"))
    assert verdict.fits and verdict.warnings == ()


def test_the_nearest_failure_is_reported_first(data: Companions) -> None:
    pkg = data.package("flash-attn")
    assert pkg is not None
    release = pkg.release(TorchVersion("2.8.3"))
    assert release is not None
    verdicts = judge_release(data, pkg, release, torch=TorchVersion("2.8.0"),
                             variant=VariantName("cu128"), platform=Platform("linux-x86_64"),
                             python="3.12", gpus=(ComputeCapability("7.5"),))
    assert [v.rule for v in verdicts] == ["gpu", "torch", "source-build"]
    assert [RULES.index(v.rule) for v in verdicts] == sorted(
        (RULES.index(v.rule) for v in verdicts), reverse=True)


def test_every_binary_build_fits_some_torch_build_of_the_matrix(data: Companions,
                                                               matrix: Matrix) -> None:
    """No build in the data is unreachable: each fits at least one release, variant, platform
    and Python the matrix offers (a typo in a torch or variant name would leave one out)."""
    for pkg in data.packages:
        for release in pkg.releases:
            for build in release.builds:
                if build.is_source_build:
                    continue
                assert any(
                    judge_release(data, pkg, release, torch=rel.torch, variant=v.name,
                                  platform=plat, python=py)[0].build is build
                    and judge_release(data, pkg, release, torch=rel.torch, variant=v.name,
                                      platform=plat, python=py)[0].fits
                    for rel in matrix.releases if build.binds(rel.torch)
                    for v in rel.variants for plat in v.platforms if plat in build.platforms
                    for py in rel.python_tags(plat)
                ), (pkg.name, release.version, build.where, build.platforms)


def test_a_target_reached_only_by_ptx_needs_the_jit_and_says_so(data: Companions) -> None:
    """The build's targets are judged by the matrix's rule 3 (reach), PTX included: a PTX entry
    runs a newer GPU only when the driver can JIT it."""
    pkg = data.package("flash-attn")
    assert pkg is not None
    release = pkg.release(TorchVersion("2.8.3"))
    assert release is not None
    build = replace(release.builds[1], arch_list=(ArchEntry("8.0"), ArchEntry("9.0+PTX")))

    def judge(jit_ok: bool) -> CompanionVerdict:
        return judge_companion(data, pkg, release, build, torch=TorchVersion("2.8.0"),
                               variant=VariantName("cu128"), platform=Platform("linux-x86_64"),
                               python="3.12", gpus=(ComputeCapability("12.0"),), jit_ok=jit_ok)

    assert judge(True).fits
    assert judge(True).warnings == ("flash-attn 2.8.3 runs on GPU 0 (sm_120) only by "
                                    "JIT-compiling its PTX for 9.x",)
    assert (judge(False).fits, judge(False).rule) == (False, "gpu")


def test_the_gpu_floor_is_the_one_stated_for_the_release(data: Companions) -> None:
    """One rule for a companion's GPU floor: the floor stated for that release (not the
    package's first), and the GPUs below it by index."""
    pkg = data.package("flash-attn")
    assert pkg is not None
    newer = GpuRequirement(ComputeCapability("9.0"), (TorchVersion("2.8.3.post2"),), "primary",
                           ())
    pkg = replace(pkg, gpu=(newer, *pkg.gpu))
    gpus = (ComputeCapability("9.0"), ComputeCapability("8.6"), ComputeCapability("7.5"))
    post2 = gpu_floor(pkg, TorchVersion("2.8.3.post2"), gpus)
    assert (str(post2.least), [i for i, _ in post2.below]) == ("9.0", [1, 2])
    plain = gpu_floor(pkg, TorchVersion("2.8.3"), gpus)
    assert (str(plain.least), [i for i, _ in plain.below], plain.holds) == ("8.0", [2], False)
    assert gpu_floor(pkg, TorchVersion("2.8.3"), gpus[:2]).holds
    unstated = gpu_floor(replace(pkg, gpu=()), TorchVersion("2.8.3"), gpus)
    assert unstated.requirement is None and unstated.holds
