"""``resolve --with``: torch and its companions chosen together, row by row from companions.yaml.

Each row: a host, the companions asked for, and the answer derived by hand from the data
(torch release and variant, each companion's version and where it comes from, what held torch
back), or the exit-3 rule. Beyond each row's expectation, every answer is checked against the
data independently of the planner: each chosen companion build names the chosen torch in its
coupling, has a file for the platform and Python, and respects the package's GPU floor.
"""

from __future__ import annotations

from typing import Any

import pytest

from torchenv.detection.detect import apply_overrides
from torchenv.detection.overrides import Overrides
from torchenv.detection.profile import HostProfile, PythonInfo
from torchenv.errors import BadInput
from torchenv.matrix.companions import Companions, load_companions
from torchenv.matrix.model import Matrix
from torchenv.resolver import NoMatch, Request
from torchenv.resolver.plan import Plan
from torchenv.resolver.stack import read_with, resolve_stack
from torchenv.values import Platform, TorchVersion

BASE = HostProfile(platform=Platform("linux-x86_64"), python=PythonInfo("3.12"), glibc="2.35")
LINUX_DRIVER = "580.65.06"  # CUDA 13.0
WIN_DRIVER = "595.97"
FA = "https://github.com/Dao-AILab/flash-attention/releases/download/v2.8.3/"


@pytest.fixture(scope="module")
def data(matrix: Matrix) -> Companions:
    return load_companions(matrix=matrix)


def _host(**spec: Any) -> HostProfile:
    return apply_overrides(BASE, Overrides.from_sources(**spec))


# (id, host overrides, request, --with, --allow-build, expected)
# expected: (torch, variant, {name: (version, source)}, held-back packages) or ("exit 3", text)
ROWS: list[tuple[str, dict[str, Any], dict[str, Any], str, tuple[str, ...], Any]] = [
    # flash-attn 2.8.3's assets cover torch 2.4-2.8 (minor), SASS 8.0/9.0/10.0/12.0, CUDA 12
    # builds of torch; 2.8.0 cu128 is the newest such torch for these GPUs
    *[(f"flash-attn {name} {cc}", {"driver": LINUX_DRIVER, "gpus": [cc]}, {}, "flash-attn", (),
       ("2.8.0", "cu128", {"flash-attn": ("2.8.3", "release-asset")}, ("flash-attn",)))
      for name, cc in [("ampere", "8.6"), ("hopper", "9.0"), ("blackwell", "12.0")]],
    ("flash-attn turing 7.5: exit 3", {"driver": LINUX_DRIVER, "gpus": ["7.5"]}, {},
     "flash-attn", (), ("exit 3", "scaled_dot_product_attention")),
    ("flash-attn ampere, source build allowed", {"driver": LINUX_DRIVER, "gpus": ["8.6"]}, {},
     "flash-attn", ("flash-attn",),
     ("2.15.0", "cu132", {"flash-attn": ("2.8.3.post2", "sdist")}, ())),
    # the assets are linux-x86_64 only; no source build without --allow-build
    ("flash-attn windows: exit 3", {"driver": WIN_DRIVER, "gpus": ["8.6"],
                                    "platform": "win-amd64"}, {}, "flash-attn", (),
     ("exit 3", "flash-attn")),
    # torch 2.5 and older are built with the old ABI: the FALSE asset follows that torch
    ("flash-attn hopper, torch 2.5 (old ABI)", {"driver": LINUX_DRIVER, "gpus": ["9.0"]},
     {"torch": "==2.5.*"}, "flash-attn", (),
     ("2.5.1", "cu124", {"flash-attn": ("2.8.3", "release-asset")}, ())),
    # Python 3.14: flash-attn's assets stop at 3.13
    ("flash-attn python 3.14: exit 3", {"driver": LINUX_DRIVER, "gpus": ["8.6"],
                                         "python": "3.14"}, {}, "flash-attn", (),
     ("exit 3", "flash-attn")),
    # xformers 0.0.35 is a floor (torch >= 2.10) on Linux x86_64 and Windows
    ("xformers hopper", {"driver": LINUX_DRIVER, "gpus": ["9.0"]}, {}, "xformers", (),
     ("2.15.0", "cu132", {"xformers": ("0.0.35", "pypi")}, ())),
    ("xformers windows", {"driver": WIN_DRIVER, "gpus": ["8.6"], "platform": "win-amd64"}, {},
     "xformers", (), ("2.15.0", "cu132", {"xformers": ("0.0.35", "pypi")}, ())),
    # below 2.10 only the exact pins: 0.0.33.post2 pins 2.9.1
    ("xformers ampere, torch <2.10", {"driver": LINUX_DRIVER, "gpus": ["8.6"]},
     {"torch": "<2.10"}, "xformers", (),
     ("2.9.1", "cu128", {"xformers": ("0.0.33.post2", "pypi")}, ())),
    # xformers has no aarch64 wheel
    ("xformers aarch64: exit 3", {"driver": LINUX_DRIVER, "gpus": ["9.0"],
                                  "platform": "linux-aarch64"}, {}, "xformers", (),
     ("exit 3", "xformers")),
    # vLLM 0.28/0.29 pin torch 2.13.0: the pin narrows torch before it is resolved
    ("vllm hopper", {"driver": LINUX_DRIVER, "gpus": ["9.0"]}, {}, "vllm", (),
     ("2.13.0", "cu130", {"vllm": ("0.29.0", "pypi")}, ())),
    ("vllm with --torch <2.13: exit 3", {"driver": LINUX_DRIVER, "gpus": ["9.0"]},
     {"torch": "<2.13"}, "vllm", (), ("exit 3", "pins torch to 2.13.0")),
    # torchao 0.18 is ABI stable from 2.11 (abi3, Python 3.10+): Python 3.14 is fine
    ("torchao blackwell python 3.14", {"driver": LINUX_DRIVER, "gpus": ["12.0"],
                                       "python": "3.14"}, {}, "torchao", (),
     ("2.15.0", "cu132", {"torchao": ("0.18.0", "pypi")}, ())),
    # torch-scatter and torch-sparse have find-links builds for torch 2.12 only (cu130, cpu);
    # pyg-lib 0.9.0 covers 2.12 cu130 too
    ("pyg ampere", {"driver": LINUX_DRIVER, "gpus": ["8.6"]}, {}, "pyg", (),
     ("2.12.1", "cu130", {"pyg-lib": ("0.9.0", "find-links"),
                          "torch-scatter": ("2.1.2", "find-links"),
                          "torch-sparse": ("0.6.18", "find-links")},
      ("pyg-lib", "torch-scatter", "torch-sparse"))),
]


def _check_against_data(data: Companions, plan: Plan) -> None:
    """Each chosen prebuilt companion, judged here without the planner: a build of that
    release binds the chosen torch, has the platform and the Python."""
    torch = TorchVersion.plain(plan.torch)
    for c in plan.companions:
        pkg = data.package(c.name)
        assert pkg is not None
        release = pkg.release(TorchVersion(c.version))
        assert release is not None
        if not c.prebuilt:
            assert any(b.is_source_build for b in release.builds)
            continue
        assert any(b.where == c.source and b.binds(torch)
                   and Platform(plan.platform) in b.platforms and b.fits_python(plan.python)
                   for b in release.builds), c


@pytest.mark.parametrize(("host", "request_", "names", "allow", "expected"),
                         [r[1:] for r in ROWS], ids=[r[0] for r in ROWS])
def test_profiles_with_companions(matrix: Matrix, data: Companions, host: dict[str, Any],
                                  request_: dict[str, Any], names: str,
                                  allow: tuple[str, ...], expected: Any) -> None:
    args = (Request.from_text(**request_), _host(**host), matrix, data,
            read_with([names], data), allow)
    if expected[0] == "exit 3":
        with pytest.raises(NoMatch) as caught:
            resolve_stack(*args)
        text = caught.value.message + " ".join(f.text(lambda c: [str(c)])
                                               for f in caught.value.fixes)
        assert expected[1] in text
        return
    plan = resolve_stack(*args)
    torch, variant, companions, held = expected
    assert (plan.torch, plan.variant) == (torch, variant)
    assert {c.name: (c.version, c.source) for c in plan.companions} == companions
    assert tuple(h.package for h in plan.held_back) == held
    _check_against_data(data, plan)


def test_flash_attn_asset_is_a_direct_reference_with_its_digest(matrix: Matrix,
                                                               data: Companions) -> None:
    plan = resolve_stack(Request(), _host(driver=LINUX_DRIVER, gpus=["8.6"]), matrix, data,
                         ("flash-attn",))
    (fa,) = plan.companions
    # the digest recorded for this one file (cp312, torch 2.8, TRUE) in companions.yaml
    assert fa.requirement() == (
        f"flash-attn @ {FA}flash_attn-2.8.3+cu12torch2.8cxx11abiTRUE-cp312-cp312-"
        "linux_x86_64.whl#sha256=f25da18657a87fc83dc1bfb8b7751b82246e9db355510226b674fd437c34b5fb")
    # held back from the newest torch, with the source build as the alternative
    (held,) = plan.held_back
    assert (held.from_torch, held.to_torch) == ("2.15.0", "2.8.0")
    assert held.source_build is not None and "nvcc" in held.source_build
    # torch 2.8.0's wheel pins triton 3.4.0 on Linux x86_64
    assert plan.extra_constraints == (
        'triton==3.4.0 ; platform_system == "Linux" and platform_machine == "x86_64"',)


def test_asset_without_a_recorded_digest_is_a_warning(matrix: Matrix, data: Companions) -> None:
    plan = resolve_stack(Request.from_text(torch="==2.7.*"),
                         _host(driver=LINUX_DRIVER, gpus=["8.6"]), matrix, data,
                         ("flash-attn",))
    (fa,) = plan.companions
    assert fa.sha256 is None and "#sha256=" not in fa.requirement()
    assert any("no digest" in w for w in plan.warnings)


@pytest.mark.parametrize(("given", "bad"), [(["flash-atn"], "flash-atn"),
                                            (["xformers,nope"], "nope"),
                                            (["xformers,,torchao"], "xformers,,torchao")])
def test_unknown_names_are_bad_input_naming_them(data: Companions, given: list[str],
                                                 bad: str) -> None:
    with pytest.raises(BadInput) as caught:
        read_with(given, data)
    assert caught.value.value == bad and "flash-attn" in (caught.value.hint or "")


def test_pyg_stands_for_the_trio_and_names_are_normalised(data: Companions) -> None:
    assert read_with(["Flash_Attn,pyg", "torch-scatter"], data) == (
        "flash-attn", "pyg-lib", "torch-scatter", "torch-sparse")


def test_the_same_torch_with_another_cuda_comes_before_an_older_torch(
        matrix: Matrix, data: Companions) -> None:
    """A companion page that carries only some CUDA builds of a torch minor (here pyg-lib 0.9.0
    narrowed to cu126, as PyG's pages for older minors are): the plan keeps torch 2.14.1 and
    takes its cu126 build, instead of holding torch back."""
    from dataclasses import replace

    from torchenv.values import VariantName

    pkg = data.package("pyg-lib")
    assert pkg is not None
    release = pkg.releases[0]
    builds = tuple(replace(b, variants=(VariantName("cu126"),)) for b in release.builds)
    narrowed = replace(pkg, releases=(replace(release, builds=builds),))
    only = replace(data, packages=(narrowed,))
    host = _host(driver="595.45.04", gpus=["8.6"])
    plain = resolve_stack(Request.from_text(torch="==2.14.*"), host, matrix, data, ("pyg-lib",))
    assert (plain.torch, plain.variant) == ("2.14.1", "cu130")  # the page has cu130 for 2.14
    plan = resolve_stack(Request.from_text(torch="==2.14.*"), host, matrix, only, ("pyg-lib",))
    assert (plan.torch, plan.variant) == ("2.14.1", "cu126")
    assert plan.companions[0].url == "https://data.pyg.org/whl/torch-2.14.0+cu126.html"
    (held,) = plan.held_back
    assert (held.from_variant, held.to_variant) == ("cu130", "cu126")
    assert held.reason == "pyg-lib 0.9.0: no cu130 build (it has cu126)"


def test_a_gpu_above_the_floor_but_outside_the_targets_gets_no_floor_advice(
        matrix: Matrix, data: Companions) -> None:
    """flash-attn's floor is 8.0; sm_110 is above it but not among 2.8.3's compiled targets.
    The headline names that target gap, and the data's advice for GPUs older than 8.0 (its
    ``gpu`` instead entry) is not offered: it is for a failing floor only."""
    with pytest.raises(NoMatch) as caught:
        resolve_stack(Request(), _host(driver=LINUX_DRIVER, gpus=["11.0"]), matrix, data,
                      ("flash-attn",))
    fixes = [f.text(lambda c: [str(c)]) for f in caught.value.fixes]
    assert "sm_110" in caught.value.message
    assert "not among its compiled targets" in caught.value.message
    assert "compute capability 8.0 or newer" not in caught.value.message
    assert not any("scaled_dot_product_attention" in f for f in fixes), fixes
    assert any("from source" in f for f in fixes), fixes


def test_a_failing_floor_names_the_floor_and_its_advice(matrix: Matrix,
                                                        data: Companions) -> None:
    with pytest.raises(NoMatch) as caught:
        resolve_stack(Request(), _host(driver=LINUX_DRIVER, gpus=["7.5"]), matrix, data,
                      ("flash-attn",))
    fixes = [f.text(lambda c: [str(c)]) for f in caught.value.fixes]
    assert "flash-attn needs compute capability 8.0 or newer, and GPU 0 is sm_75" \
        in caught.value.message
    assert any("scaled_dot_product_attention" in f for f in fixes), fixes
    assert not any("from source" in f for f in fixes), fixes
