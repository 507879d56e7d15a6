"""resolve() over a table of host profiles and constraints, plus properties generated from data.

Each row: (id, target overrides, request, expected (torch, variant, level) or None for exit 3).
The expectations follow the rules of DESIGN.md applied to the embedded matrix: newest torch
first, and a build whose arch list or index entry is unconfirmed ranks at the warning level
("compat") within its release.
"""

from __future__ import annotations

from typing import Any

import pytest

from torchenv.detection.detect import apply_overrides
from torchenv.detection.overrides import Overrides
from torchenv.detection.profile import (
    Gpu,
    HostProfile,
    NvidiaInfo,
    PciDevice,
    PythonInfo,
    RocmInfo,
)
from torchenv.matrix.model import Matrix
from torchenv.resolver import NoMatch, Request, resolve
from torchenv.resolver.plan import Fix
from torchenv.values import (
    ComputeCapability,
    CudaVersion,
    DriverVersion,
    Platform,
    TorchSpec,
    TorchVersion,
    VariantName,
)

BASE = HostProfile(platform=Platform("linux-x86_64"), python=PythonInfo("3.12"), glibc="2.35")


def _nvidia(driver: str, cuda: str | None, source: str, *gpus: Gpu, **rest: Any) -> NvidiaInfo:
    return NvidiaInfo(DriverVersion(driver), CudaVersion(cuda) if cuda else None, source, gpus,
                      **rest)


def _gpu(index: int, cc: str) -> Gpu:
    return Gpu(index, None, ComputeCapability(cc))

# Hosts no flag can describe: probes that failed, GPUs only partly read, CUDA_VISIBLE_DEVICES.
PCI_1080 = PciDevice("0000:01:00.0", "10de", "1b80", "0x030000", None)
HOSTS: dict[str, HostProfile] = {
    "smi hangs, PCI sees a GPU": BASE.with_changes(
        pci=(PCI_1080,),
        nvidia_evidence=("/usr/bin/nvidia-smi exists but failed: did not answer within 5 s",),
        warnings=("/usr/bin/nvidia-smi did not answer within 5 s",)),
    "smi cannot talk to the driver": BASE.with_changes(
        nvidia_evidence=("/dev/nvidia0", "/usr/bin/nvidia-smi exists but failed: couldn't "
                         "communicate with the NVIDIA driver")),
    "driver read, GPU names only (K80 on 470)": BASE.with_changes(nvidia=_nvidia(
        "470.82.01", "11.4", "nvidia-smi", Gpu(0, "Tesla K80"), Gpu(1, "Tesla K80")),
        nvidia_evidence=("/dev/nvidia0",)),
    "driver read, unknown GPU name": BASE.with_changes(nvidia=_nvidia(
        "580.65.06", None, "proc", Gpu(0, "NVIDIA Prototype X")),
        nvidia_evidence=("/proc/driver/nvidia",)),
    "driver read, no GPU facts": BASE.with_changes(nvidia=_nvidia("580.65.06", None, "proc"),
                                                   nvidia_evidence=("/proc/driver/nvidia",)),
    "CVD hides the GTX 1080 of 1080+3090": BASE.with_changes(nvidia=_nvidia(
        "580.65.06", "13.0", "nvml", _gpu(0, "6.1"), _gpu(1, "8.6"),
        cuda_visible_devices="1", visible=(1,))),
    "CVD shows the GTX 1080 of 1080+5090": BASE.with_changes(nvidia=_nvidia(
        "580.65.06", "13.0", "nvml", _gpu(0, "6.1"), _gpu(1, "12.0"),
        cuda_visible_devices="0", visible=(0,))),
    "CVD hides every GPU": BASE.with_changes(nvidia=_nvidia(
        "580.65.06", "13.0", "nvml", _gpu(0, "8.6"), cuda_visible_devices="",
        visible=())),
}

# (id, target overrides or a HOSTS key, request, expected (torch, variant, level, evidence) or
#  None for exit 3, the rule that decides). Rules: python / glibc / platform (rule 1), driver
# (rule 2: toolkit or minor-version-compatibility floor), arch (rule 3), evidence (a build whose
# support for every visible GPU is confirmed or inferred beats every unknown one, across
# releases), newest, pypi (within a release), probe (a GPU whose facts could not be read is not
# an absent GPU), catalog (GPU name -> compute capability), cvd (only visible GPUs count),
# index (an unconfirmed index entry), explicit (a forced variant).
TABLE: list[tuple[str, Any, dict[str, Any], Any, str]] = [
    # 2.15.0's cpu entry: not confirmed, inferred by rule index-every-earlier-release (every
    # release since 1.13 has it), so the plan is full; rocm7.14 below stays unknown
    ("cpu-only linux 3.12", {}, {}, ("2.15.0", "cpu", "full", "n/a"), "index"),
    ("cpu-only linux 3.9", {"python": "3.9"}, {}, ("2.8.0", "cpu", "full", "n/a"), "python"),
    ("cpu-only linux 3.8", {"python": "3.8"}, {}, ("2.4.1", "cpu", "full", "n/a"), "python"),
    ("cpu-only 3.7", {"python": "3.7"}, {}, ("1.13.1", "cpu", "full", "n/a"), "python"),
    ("glibc 2.17 py3.10", {"glibc": "2.17", "python": "3.10"}, {},
     ("2.6.0", "cpu", "full", "n/a"), "glibc"),
    ("glibc 2.17 aarch64", {"glibc": "2.17", "platform": "linux-aarch64", "python": "3.10"}, {},
     ("2.5.1", "cpu", "full", "n/a"), "glibc"),
    ("macos arm64 3.12", {"platform": "macos-arm64"}, {}, ("2.15.0", "cpu", "full", "n/a"),
     "newest"),
    ("macos x86_64 3.11", {"platform": "macos-x86_64", "python": "3.11"}, {},
     ("2.2.2", "cpu", "full", "n/a"), "platform"),
    ("macos x86_64 3.12", {"platform": "macos-x86_64", "python": "3.12"}, {},
     ("2.2.2", "cpu", "full", "n/a"), "platform"),
    ("windows cpu 3.12", {"platform": "win-amd64"}, {}, ("2.15.0", "cpu", "full", "n/a"),
     "pypi"),
    # the Windows lists of 2.9-2.14 are confirmed by the release's RELEASE.md CUDA support
    # matrix table (Linux x86 and Windows builds); a 560 driver reaches CUDA 12.6, a 576 one 12.8
    # (2.11 is the last release with cu128)
    ("windows rtx4090 560", {"platform": "win-amd64", "driver": "560.94", "gpus": ["8.9"]}, {},
     ("2.14.1", "cu126", "full", "confirmed"), "driver"),
    ("windows rtx5090 576", {"platform": "win-amd64", "driver": "576.02", "gpus": ["12.0"]}, {},
     ("2.11.0", "cu128", "full", "confirmed"), "driver"),
    ("windows rtx5090 576 torch>=2.6", {"platform": "win-amd64", "driver": "576.02",
                                        "gpus": ["12.0"]}, {"torch": ">=2.6"},
     ("2.11.0", "cu128", "full", "confirmed"), "driver"),
    ("aarch64 cpu", {"platform": "linux-aarch64"}, {}, ("2.15.0", "cpu", "full", "n/a"),
     "index"),
    # a 580 driver runs CUDA 13.2 by minor-version compatibility: the PyPI build (cu132, index
    # and list confirmed) before cu130, whose index entry and list are not confirmed
    ("aarch64 gh200 580", {"platform": "linux-aarch64", "driver": "580.65.06", "gpus": ["9.0"]},
     {}, ("2.15.0", "cu132", "compat", "confirmed"), "index"),
    ("h200 580 cuda13.0", {"driver": "580.65.06", "gpus": ["9.0"]}, {},
     ("2.15.0", "cu132", "compat", "confirmed"), "driver"),
    ("h200 595 cuda13.2", {"driver": "595.45.04", "gpus": ["9.0"]}, {},
     ("2.15.0", "cu132", "full", "confirmed"), "pypi"),
    # 2.15.0 has no cu126 (removed before the branch cut); the SASS of cu126 of 2.14 is
    # confirmed by the RELEASE.md table for 2.14 (its PTX entry is inferred)
    ("h100 550", {"driver": "550.54.15", "gpus": ["9.0"]}, {},
     ("2.14.1", "cu126", "compat", "confirmed"), "driver"),
    ("a100x8 535", {"driver": "535.104.05", "gpus": ["8.0"] * 8}, {},
     ("2.14.1", "cu126", "compat", "confirmed"), "driver"),
    ("rtx3090 525.60.13", {"driver": "525.60.13", "gpus": ["8.6"]}, {},
     ("2.14.1", "cu126", "compat", "confirmed"), "driver"),
    # 2.7.1 is the last CUDA 11.8 release; its 11.8 build is 2.5's unchanged (the release
    # manager's plans for 2.6 and 2.7: rule unchanged-by-statement)
    ("rtx3090 520", {"driver": "520.61.05", "gpus": ["8.6"]}, {},
     ("2.7.1", "cu118", "full", "inferred"), "driver"),
    ("gtx1080 535", {"driver": "535.104.05", "gpus": ["6.1"]}, {},
     ("2.14.1", "cu126", "compat", "confirmed"), "arch"),
    ("gtx1080+rtx3090 570", {"driver": "570.86.15", "gpus": ["6.1", "8.6"]}, {},
     ("2.14.1", "cu126", "full", "confirmed"), "arch"),
    # the confirmed 2.8 cu128 has no sm_61; 2.8 cu126 is inferred (2.7.1 and 2.9 confirm the
    # same SASS list), so it beats cu129, whose list is unknown
    ("gtx1080 580 torch==2.8.*", {"driver": "580.65.06", "gpus": ["6.1"]},
     {"torch": "==2.8.*"}, ("2.8.0", "cu126", "full", "inferred"), "arch"),
    ("gtx1080 580 torch>=2.12", {"driver": "580.65.06", "gpus": ["6.1"]}, {"torch": ">=2.12"},
     ("2.14.1", "cu126", "full", "confirmed"), "arch"),
    ("rtx5090 570", {"driver": "570.86.15", "gpus": ["12.0"]}, {},
     ("2.13.0", "cu129", "compat", "confirmed"), "driver"),
    ("rtx5090 550", {"driver": "550.54.15", "gpus": ["12.0"]}, {},
     ("2.13.0", "cu129", "compat", "confirmed"), "driver"),
    ("b200 580", {"driver": "580.65.06", "gpus": ["10.0"]}, {},
     ("2.15.0", "cu132", "compat", "confirmed"), "index"),
    # 2.5.1's cu118 list is confirmed and has 3.7; 2.6 and 2.7 kept the 11.8 build unchanged
    ("k80 470", {"driver": "470.82.01", "gpus": ["3.7"]}, {},
     ("2.7.1", "cu118", "compat", "inferred"), "driver"),
    ("k80 450", {"driver": "450.80.02", "gpus": ["3.7"]}, {},
     ("2.7.1", "cu118", "compat", "inferred"), "driver"),
    ("maxwell 5.2 580", {"driver": "580.65.06", "gpus": ["5.2"]}, {},
     ("2.14.1", "cu126", "full", "confirmed"), "arch"),
    ("volta 7.0 580", {"driver": "580.65.06", "gpus": ["7.0"]}, {},
     ("2.14.1", "cu126", "full", "confirmed"), "arch"),
    # no known list holds sm_35 (cu118 has SASS 3.7, PTX 3.7 on Windows only): exit 3 with the
    # reason, not an unknown build with a soft warning
    ("kepler 3.5 580", {"driver": "580.65.06", "gpus": ["3.5"]}, {}, None, "arch"),
    ("driver 390 pascal", {"driver": "390.116", "gpus": ["6.1"]}, {}, None, "driver"),
    ("free-threaded 3.13t h100 580", {"python": "3.13t", "driver": "580.65.06", "gpus": ["9.0"]},
     {}, ("2.12.0", "cu130", "full", "confirmed"), "python"),
    ("free-threaded 3.14t cpu", {"python": "3.14t"}, {}, ("2.15.0", "cpu", "full", "n/a"),
     "python"),
    ("3.15 cpu", {"python": "3.15"}, {}, ("2.15.0", "cpu", "full", "n/a"), "python"),
    # the rocm7.14 list is the wheel images' build configuration (no wheel of it seen)
    ("rocm gfx1100", {"rocm_archs": ["gfx1100"]}, {},
     ("2.15.0", "rocm7.14", "compat", "inferred"), "index"),
    ("rocm gfx942", {"rocm_archs": ["gfx942"]}, {},
     ("2.15.0", "rocm7.14", "compat", "inferred"), "index"),
    # 2.7.1's own rocm6.3 wheel lists gfx1201
    ("rocm gfx1201 ==2.7.1", {"rocm_archs": ["gfx1201"]}, {"torch": "==2.7.1"},
     ("2.7.1", "rocm6.3", "full", "confirmed"), "arch"),
    # 2.6.0: rocm6.1's own wheel leaves gfx1201 out; whether rocm6.2.4's has it is not known
    ("rocm gfx1201 ==2.6.0", {"rocm_archs": ["gfx1201"]}, {"torch": "==2.6.0"},
     ("2.6.0", "rocm6.2.4", "compat", "unknown"), "evidence"),
    ("rocm gfx803", {"rocm_archs": ["gfx803"]}, {}, None, "arch"),
    ("torch ==2.7.* on 3090 570", {"driver": "570.86.15", "gpus": ["8.6"]},
     {"torch": "==2.7.*"}, ("2.7.1", "cu126", "full", "confirmed"), "pypi"),
    ("torch 2.7.1 cu128 forced", {"driver": "570.86.15", "gpus": ["8.6"]},
     {"torch": "==2.7.1", "variant": "cu128"}, ("2.7.1", "cu128", "compat", "unknown"),
     "explicit"),
    ("variant cpu on gpu host", {"driver": "570.86.15", "gpus": ["8.6"]}, {"variant": "cpu"},
     ("2.15.0", "cpu", "full", "n/a"), "explicit"),
    # 2.8's CUDA 12.9 builds kept sm_70 (their maintainers); the 2.9-2.11 cu129 lists are not
    # known, so they are named as newer unverified builds
    ("volta --cuda 12.9 580", {"driver": "580.65.06", "gpus": ["7.0"]}, {"cuda": "12.9"},
     ("2.8.0", "cu129", "full", "confirmed"), "evidence"),
    ("--cuda 11.8 on 3090 570", {"driver": "570.86.15", "gpus": ["8.6"]}, {"cuda": "11.8"},
     ("2.7.1", "cu118", "full", "inferred"), "driver"),
    ("torch <2.0 py3.12", {}, {"torch": "<2.0"}, None, "python"),
    ("torch 2.4 cu124 driver 535", {"driver": "535.104.05", "gpus": ["8.9"]},
     {"torch": "==2.4.*", "variant": "cu124"}, ("2.4.1", "cu124", "compat", "confirmed"),
     "driver"),
    # no accelerator beside a driver and GPUs (the command line's variables): none is used
    ("no-gpu flag", {"no_gpu": True, "driver": "570.86.15", "gpus": ["8.6"]}, {},
     ("2.15.0", "cpu", "full", "n/a"), "index"),
    ("xpu variant forced no device", {}, {"variant": "xpu"},
     ("2.15.0", "xpu", "compat", "n/a"), "explicit"),
    ("rtx4090 + py3.8 torch<2.5", {"python": "3.8", "driver": "550.54.15", "gpus": ["8.9"]},
     {"torch": "<2.5"}, ("2.4.1", "cu121", "full", "confirmed"), "driver"),
    ("smi hangs, PCI sees a GPU", "smi hangs, PCI sees a GPU", {}, None, "probe"),
    ("smi cannot talk to the driver", "smi cannot talk to the driver", {}, None, "probe"),
    ("failed probe, --variant cpu", "smi cannot talk to the driver", {"variant": "cpu"},
     ("2.15.0", "cpu", "full", "n/a"), "explicit"),
    ("K80 named by nvidia-smi 470", "driver read, GPU names only (K80 on 470)", {},
     ("2.7.1", "cu118", "compat", "inferred"), "catalog"),
    ("unknown GPU name", "driver read, unknown GPU name", {}, None, "probe"),
    ("driver but no GPU facts", "driver read, no GPU facts", {}, None, "probe"),
    ("CVD: only the 3090 counts", "CVD hides the GTX 1080 of 1080+3090", {},
     ("2.15.0", "cu132", "compat", "confirmed"), "cvd"),
    ("CVD: only the 1080 counts", "CVD shows the GTX 1080 of 1080+5090", {},
     ("2.14.1", "cu126", "full", "confirmed"), "cvd"),
    ("CVD hides every GPU", "CVD hides every GPU", {}, ("2.15.0", "cu132", "compat", "n/a"),
     "cvd"),
]


def _table_host(spec: Any) -> HostProfile:
    if isinstance(spec, str):
        return HOSTS[spec]
    return apply_overrides(BASE, Overrides.from_sources(**spec))


@pytest.mark.parametrize(
    ("host_spec", "request_args", "expected", "rule"),
    [row[1:] for row in TABLE],
    ids=[row[0] for row in TABLE],
)
def test_resolution_table(
    matrix: Matrix, host_spec: Any, request_args: dict[str, Any], expected: Any, rule: str
) -> None:
    host = _table_host(host_spec)
    if expected is None:
        with pytest.raises(NoMatch) as info:
            resolve(Request.from_text(**request_args), host, matrix)
        assert info.value.fixes
        if rule == "probe":
            # a failed probe is "unknown": no candidate was even considered, and the reason says so
            assert "could not be read" in info.value.message
            assert info.value.fixes[-1].changes == [{"variant": "cpu"}]
            assert not info.value.rejected
        else:
            assert info.value.rejected, "an unsatisfiable request must explain every candidate"
            assert any(r.category == rule for r in info.value.rejected)
        return
    plan = resolve(Request.from_text(**request_args), host, matrix)
    assert plan.evidence is not None
    assert (plan.torch, plan.variant, plan.level, plan.evidence.arch) == expected
    if rule == "evidence" and expected[3] == "unknown":
        # the pick may not run: it says so, and names the best evidence-backed build
        [warning] = [w for w in plan.warnings if "nothing proves" in w]
        alternative = plan.evidence_alternative
        if alternative is None:
            assert "no build in the matrix has confirmed support" in warning
        else:
            assert f"is torch {alternative.torch} {alternative.variant}" in warning
    if rule == "evidence" and expected[3] != "unknown":
        assert plan.newer_unverified, "a newer unknown build must be named"


def test_the_table_is_big_enough_and_names_its_rules() -> None:
    assert len(TABLE) >= 40
    assert {row[4] for row in TABLE} >= {"evidence", "probe", "catalog", "cvd", "arch", "driver"}


def _host(driver: str, *ccs: str, platform: str | Platform = "linux-x86_64",
          py: str = "3.12") -> HostProfile:
    gpus = tuple(Gpu(index=i, compute_capability=ComputeCapability(c))
                 for i, c in enumerate(ccs))
    return HostProfile(
        platform=Platform(platform) if isinstance(platform, str) else platform,
        python=PythonInfo(py),
        glibc="2.39",
        nvidia=NvidiaInfo(DriverVersion(driver), None, "test", gpus),
    )


def _known_cuda(matrix: Matrix) -> list[tuple[TorchVersion, VariantName, Platform, str]]:
    """(torch, variant, platform, python) for every CUDA variant with a confirmed arch list."""
    out = []
    for r in matrix.releases:
        for v in r.variants:
            if v.kind != "cuda":
                continue
            for plat in v.platforms:
                arch = v.arch_list_for(plat)
                tags = [t for t in r.python_tags(plat, v) if not t.endswith("t")]
                if arch and tags:
                    out.append((r.torch, v.name, plat, tags[-1]))
    return out


def test_every_confirmed_sass_target_resolves_with_a_new_driver(matrix: Matrix) -> None:
    """Generated from the data: for each variant and each SASS entry, a GPU of exactly that
    capability on a driver newer than every floor gets that very variant when asked for it."""
    checked = 0
    for torch, variant, plat, py in _known_cuda(matrix):
        v = matrix.release(torch).variant(variant)  # type: ignore[union-attr]
        assert v is not None
        for entry in v.arch_list_for(plat) or ():
            cc = str(entry.capability.base)
            plan = resolve(
                Request(torch=TorchSpec(f"=={torch}"), variant=variant),
                _host("999.99", cc, platform=plat, py=py),
                matrix,
            )
            assert (plan.torch, plan.variant) == (str(torch), str(variant))
            checked += 1
    assert checked > 50


def test_a_gpu_older_than_every_entry_is_always_rejected(matrix: Matrix) -> None:
    checked = 0
    for torch, variant, plat, py in _known_cuda(matrix):
        v = matrix.release(torch).variant(variant)  # type: ignore[union-attr]
        assert v is not None
        lowest = min((e.major, e.minor) for e in v.arch_list_for(plat) or ())
        if lowest[0] <= 3:
            continue
        # an older device: the same major's .0 (7.0 below 7.5), else the previous major's
        older = f"{lowest[0]}.0" if lowest[1] else f"{lowest[0] - 1}.0"
        with pytest.raises(NoMatch) as info:
            resolve(
                Request(torch=TorchSpec(f"=={torch}"), variant=variant),
                _host("999.99", older, platform=plat, py=py),
                matrix,
            )
        assert any(r.category == "arch" for r in info.value.rejected)
        checked += 1
    assert checked > 20


def test_a_driver_below_every_compat_floor_gets_no_cuda_build(matrix: Matrix) -> None:
    with pytest.raises(NoMatch) as info:
        resolve(Request(), _host("400.0", "8.6"), matrix)
    assert all(r.category != "arch" for r in info.value.rejected if r.variant.startswith("cu"))
    assert any("upgrade the NVIDIA driver" in (f.plain or "") for f in info.value.fixes)


def test_cpu_is_never_chosen_silently_on_a_gpu_host(matrix: Matrix) -> None:
    with pytest.raises(NoMatch) as info:
        resolve(Request(), _host("400.0", "8.6"), matrix)
    assert any(r.category == "cpu-on-gpu-host" for r in info.value.rejected)
    # a fix is data: the change of the request, which the command line writes as --variant cpu
    assert Fix(({"variant": "cpu"}, " installs the CPU build explicitly")) in info.value.fixes


def test_the_macos_arm64_build_is_not_a_build_for_an_nvidia_gpu(matrix: Matrix) -> None:
    """It uses Apple's GPU: an NVIDIA GPU described on macOS arm64 has no build, as on macOS
    x86_64, instead of quietly getting the MPS build."""
    for platform in ("macos-arm64", "macos-x86_64"):
        with pytest.raises(NoMatch) as info:
            resolve(Request(), _host("580.65.06", "8.6", platform=platform), matrix)
        assert any(r.category == "cpu-on-gpu-host" for r in info.value.rejected)
    plan = resolve(Request(variant=VariantName("cpu")),
                   _host("580.65.06", "8.6", platform="macos-arm64"), matrix)
    assert plan.accelerator == "mps"


def test_torchvision_and_torchaudio_follow_the_pairing(matrix: Matrix) -> None:
    for r in matrix.releases:
        if "3.10" not in r.python.get("linux-x86_64", ()):
            continue
        host = HostProfile(platform="linux-x86_64", python=PythonInfo("3.10"), glibc="2.39")
        plan = resolve(Request.from_text(torch=f"=={r.torch}"), host, matrix)
        assert (plan.torchvision, plan.torchaudio) == (r.torchvision, r.torchaudio)


def test_a_plain_cpu_host_gets_the_newest_release_with_nothing_the_data_answers_as_warning(
        matrix: Matrix) -> None:
    # 2.15.0's cpu entry is inferred (rule index-every-earlier-release), its torchvision and
    # torchaudio by their maintainers' "X and later" statements: each is a reason, none a warning
    plan = resolve(Request(), BASE, matrix)
    assert (plan.torch, plan.variant, plan.level) == ("2.15.0", "cpu", "full")
    assert plan.warnings == ()
    assert plan.requirements() == ["torch==2.15.0+cpu", "torchvision==0.29.2+cpu",
                                   "torchaudio==2.11.1+cpu"]
    assert plan.evidence is not None and plan.evidence.index == "inferred"
    assert any("rule index-every-earlier-release" in r for r in plan.reasons)
    stated = [r for r in plan.reasons if "rule companion-by-statement" in r]
    assert [r.split()[0] for r in stated] == ["torchvision", "torchaudio"]
    assert "compatible with PyTorch 2.11 and later" in stated[1]
    # asked without them, no reason speaks of them
    bare = resolve(Request(with_torchvision=False, with_torchaudio=False), BASE, matrix)
    assert not any("companion-by-statement" in r for r in bare.reasons)


def test_a_t4g_on_graviton_is_not_given_a_2_11_build_without_its_target(
        matrix: Matrix) -> None:
    # RELEASE.md's aarch64 table for 2.11: cu128 8.0;9.0;10.0;12.0 and cu126 8.0;9.0, no PTX
    host = _host("580.65.06", "7.5", platform="linux-aarch64")
    plan = resolve(Request(), host, matrix)
    assert (plan.torch, plan.variant) != ("2.11.0", "cu128")
    # within 2.11.0 only cu129, whose aarch64 list no source gives, is left (as unknown)
    only = resolve(Request.from_text(torch="==2.11.0"), host, matrix)
    assert only.variant == "cu129" and only.evidence is not None
    assert only.evidence.arch == "unknown"
    reasons = {r.variant: r.reason for r in only.rejected if r.category == "arch"}
    assert reasons["cu128"] == "GPU 0 (sm_75) not in arch list 8.0–12.0"
    assert reasons["cu126"] == "GPU 0 (sm_75) not in arch list 8.0–9.0"


def test_an_index_build_is_pinned_with_its_local_tag(matrix: Matrix) -> None:
    plan = resolve(Request.from_text(torch="==2.7.1", variant="cu128"),
                   _host("570.86.15", "8.6"), matrix)
    assert plan.index_url == "https://download.pytorch.org/whl/cu128"
    assert plan.requirements() == [
        "torch==2.7.1+cu128",
        "torchvision==0.22.1+cu128",
        "torchaudio==2.7.1+cu128",
    ]


def test_the_pypi_build_needs_no_index(matrix: Matrix) -> None:
    plan = resolve(Request.from_text(torch="==2.7.1"), _host("570.86.15", "8.6"), matrix)
    assert (plan.variant, plan.index_url) == ("cu126", None)
    assert plan.requirements() == ["torch==2.7.1", "torchvision==0.22.1", "torchaudio==2.7.1"]


def test_the_index_base_replaces_the_pytorch_host(matrix: Matrix) -> None:
    plan = resolve(
        Request.from_text(torch="==2.7.1", variant="cpu", index_base="http://mirror/whl/"), BASE,
        matrix,
    )
    assert plan.index_url == "http://mirror/whl/cpu"


def test_rocm_targets_decide_rocm_builds(matrix: Matrix) -> None:
    host = BASE.with_changes(rocm=RocmInfo("6.3.4", ("gfx1100",), "test"))
    plan = resolve(Request.from_text(torch="==2.7.1"), host, matrix)
    assert plan.variant.startswith("rocm") and plan.accelerator == "rocm"


def test_every_rejection_has_a_one_line_reason(matrix: Matrix) -> None:
    with pytest.raises(NoMatch) as info:
        resolve(Request(), _host("390.116", "6.1"), matrix)
    assert info.value.rejected
    for r in info.value.rejected:
        assert r.reason and "\n" not in r.reason


def test_an_arch_rejection_names_the_gpu_and_the_list(matrix: Matrix) -> None:
    with pytest.raises(NoMatch) as info:
        resolve(Request.from_text(torch="==2.11.0", variant="cu128"),
                _host("580.65.06", "6.1"), matrix)
    reasons = [r.reason for r in info.value.rejected if r.variant == "cu128"]
    assert reasons == ["GPU 0 (sm_61) not in arch list 7.5–12.0"]


@pytest.mark.parametrize(
    ("cc", "torch", "variant", "words"),
    [
        ("12.0", "2.6.0", "cu126", "newer than anything CUDA 12.6 compiles for (newest sm_90)"),
        ("3.5", "2.9.0", "cu129", "older than anything CUDA 12.9 compiles for (oldest sm_50)"),
    ],
    ids=["blackwell-on-12.6", "kepler-on-12.9"],
)
def test_unknown_arch_lists_are_still_bounded_by_the_toolkit(
    matrix: Matrix, cc: str, torch: str, variant: str, words: str
) -> None:
    # these arch lists are unknown on linux-x86_64; the toolkits' limits still apply
    rel = matrix.release(TorchVersion(torch))
    assert rel is not None and rel.variant(VariantName(variant)) is not None
    assert rel.variant(VariantName(variant)).arch_list_for(  # type: ignore[union-attr]
        Platform("linux-x86_64")) is None
    with pytest.raises(NoMatch) as info:
        resolve(Request.from_text(torch=f"=={torch}", variant=variant), _host("999.99", cc), matrix)
    assert [r.reason for r in info.value.rejected if r.variant == variant] == [
        f"GPU 0 (sm_{cc.replace('.', '')}) is {words}"
    ]


def test_a_container_without_the_gpu_passed_in_says_so(matrix: Matrix) -> None:
    host = BASE.with_changes(container="docker", pci=(PCI_1080,),
                             nvidia_evidence=("PCI 10de:1b80 at 0000:01:00.0 (driver nvidia)",))
    with pytest.raises(NoMatch) as info:
        resolve(Request(), host, matrix)
    assert "this container has no /dev/nvidia* device" in info.value.message
    assert (info.value.fixes[0].plain or "").startswith("run the container with the GPU")


def test_the_pci_id_names_the_gpu_and_the_capability_to_give(matrix: Matrix) -> None:
    entry = matrix.nvidia_gpu_by_pci("1b80")
    assert entry is not None and entry.compute_capability == ComputeCapability("6.1")
    host = HOSTS["smi hangs, PCI sees a GPU"]
    with pytest.raises(NoMatch) as info:
        resolve(Request(), host, matrix)
    assert f"PCI 10de:1b80, {entry.name} per the GPU catalog" in info.value.message
    assert {"driver": "VERSION", "gpus": ("6.1",)} in [c for f in info.value.fixes
                                                    for c in f.changes]


def test_a_gpu_named_in_the_catalog_gets_its_capability(matrix: Matrix) -> None:
    host = HOSTS["driver read, GPU names only (K80 on 470)"]
    plan = resolve(Request(), host, matrix)
    assert plan.evidence is not None and plan.evidence.arch == "inferred"
    assert "3.7" in " ".join(plan.reasons)  # every visible GPU (3.7, 3.7) is in its arch list


def test_the_cvd_warning_and_json_keys_of_an_unknown_pick(matrix: Matrix) -> None:
    plan = resolve(Request(), HOSTS["CVD hides every GPU"], matrix)
    assert "CUDA_VISIBLE_DEVICES hides every GPU: torch will see none until it is unset or " \
           "lists a GPU" in plan.warnings
    doc = plan.to_json()
    assert {"evidence", "evidence_alternative", "newer_unverified", "host_warnings",
            "confirmed_alternative", "alternatives"} <= set(doc)
    # the 2.8 aarch64 cu129 list is unknown (the confirmed 2.13 one has sm_90: the pick says
    # which rule put it first); the 2.15 cu132 list is confirmed (its wheel)
    unknown = resolve(Request.from_text(torch="==2.8.*"),
                      _host("580.65.06", "9.0", platform="linux-aarch64"),
                      matrix).to_json()
    assert unknown["evidence"]["arch"] == "unknown"
    assert unknown["evidence"]["arch_rule"] == "neighbours-include"
    assert unknown["evidence_alternative"] == {
        "torch": "2.15.0", "variant": "cu132", "evidence": "confirmed", "rule": None}
    assert unknown["alternatives"] and all(a["evidence"] for a in unknown["alternatives"])


def test_an_unconfirmed_index_entry_ranks_below_a_confirmed_one_and_always_warns(
        matrix: Matrix) -> None:
    # 2.15.0 cu130 (index unknown) and cu132 (confirmed) both run an H200 on a 13.2 driver at
    # the same level; the confirmed one wins, and forcing the other shows its warning
    host = _host("595.45.04", "9.0")
    plan = resolve(Request.from_text(torch="==2.15.0"), host, matrix)
    assert plan.variant == "cu132"
    forced = resolve(Request.from_text(torch="==2.15.0", variant="cu130"), host, matrix)
    assert any("has a cu130 build on the PyTorch index is not confirmed" in w
               for w in forced.warnings)
    # on a 580 driver cu130 is at its toolkit floor and cu132 runs by minor-version
    # compatibility: both warn, so they share the tier, and the confirmed index entry wins
    plan = resolve(Request.from_text(torch="==2.15.0"), _host("580.65.06", "9.0"), matrix)
    assert (plan.variant, plan.level) == ("cu132", "compat")
    assert any("minor-version compatibility" in r for r in plan.reasons + plan.warnings)


def test_musl_is_rejected_naming_the_glibc_floor(matrix: Matrix) -> None:
    host = BASE.with_changes(glibc=None, musl="1.2.4")
    with pytest.raises(NoMatch) as info:
        resolve(Request(), host, matrix)
    # every release with a cp312 wheel is turned away for musl; none for another reason
    assert {r.category for r in info.value.rejected} == {"glibc", "python"}
    assert any(r.reason == "musl libc 1.2.4: the wheels need glibc ≥ 2.28"
               for r in info.value.rejected)


def test_a_confirmed_verdict_names_no_inference_rule(matrix: Matrix) -> None:
    """2.14.1 cu126 on Linux: SASS from the wheel (confirmed), its PTX by the release policy
    (inferred); an Ampere card runs by SASS, so no rule stands behind the verdict."""
    plan = resolve(Request(), _host("550.54.15", "8.6"), matrix)
    assert (plan.torch, plan.variant) == ("2.14.1", "cu126")
    assert plan.evidence is not None
    assert (plan.evidence.arch, plan.evidence.arch_rule) == ("confirmed", None)
