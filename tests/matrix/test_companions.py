"""companions.yaml: what it says about the stack above torch, and how broken data is reported.

The facts tests read like the data's specification (each names the package behaviour it pins
down); the validation table breaks the shipped document one way per row and expects the message
that names the bad path and value.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from typing import Any

import pytest

from torchenv.errors import MatrixError
from torchenv.matrix.companions import (
    COMPANIONS_FILE,
    CompanionBuild,
    Companions,
    build_companions,
    load_companions,
)
from torchenv.matrix.loader import read_yaml
from torchenv.matrix.model import Matrix
from torchenv.values import ComputeCapability, Platform, TorchVersion, VariantName

LINUX = Platform("linux-x86_64")


@pytest.fixture(scope="module")
def shipped_doc() -> dict[str, Any]:
    doc: dict[str, Any] = read_yaml(COMPANIONS_FILE)
    return doc


@pytest.fixture(scope="module")
def data(matrix: Matrix) -> Companions:
    return load_companions(matrix=matrix)


def _binary_builds(data: Companions, package: str,
                   torch: TorchVersion) -> list[CompanionBuild]:
    pkg = data.package(package)
    assert pkg is not None
    return [b for r in pkg.releases for b in r.builds
            if not b.is_source_build and b.binds(torch)]


# --------------------------------------------------------------------------- the facts


def test_the_shipped_data_passes_its_checks_against_the_matrix(data: Companions) -> None:
    assert [p.name for p in data.packages] == ["flash-attn", "xformers", "torchao", "pyg-lib",
                                               "torch-scatter", "torch-sparse", "vllm"]


def test_flash_attn_has_no_wheel_for_torch_2_11_to_2_15(data: Companions,
                                                         matrix: Matrix) -> None:
    later = [r.torch for r in matrix.releases if (2, 11) <= r.torch.release[:2] <= (2, 15)]
    assert later
    for torch in later:
        assert _binary_builds(data, "flash-attn", torch) == [], torch


def test_flash_attn_wheels_are_release_assets_for_torch_2_4_to_2_8_and_pypi_has_the_sdist(
        data: Companions) -> None:
    pkg = data.package("flash_attn")  # the import spelling finds the project too
    assert pkg is not None
    release = pkg.release(TorchVersion("2.8.3"))
    assert release is not None
    binaries = [b for b in release.builds if not b.is_source_build]
    assert {b.where for b in binaries} == {"release-asset"}
    assert sorted(m for b in binaries for m in b.torch_minors) == ["2.4", "2.5", "2.6", "2.7",
                                                                   "2.8"]
    assert all(b.coupling == "minor" and b.cuda_major == 12 for b in binaries)
    assert [b.where for b in release.builds if b.is_source_build] == ["sdist"]
    for later in pkg.releases:
        if later.version > TorchVersion("2.8.3"):
            assert [b.where for b in later.builds] == ["sdist"], later.version


def test_flash_attn_runs_on_compute_capability_8_0_and_newer_only(data: Companions) -> None:
    pkg = data.package("flash-attn")
    assert pkg is not None
    floor = pkg.gpu_requirement(TorchVersion("2.8.3"))
    assert floor is not None and floor.evidence == "confirmed"
    assert floor.min_compute_capability == ComputeCapability("8.0")
    for r in pkg.releases:
        for b in r.builds:
            assert b.arch_list is None or all(
                (e.major, e.minor) >= (8, 0) and not e.ptx for e in b.arch_list)


def test_flash_attn_cxx11abi_false_files_for_torch_2_7_and_later_use_the_cxx11_abi(
        data: Companions, matrix: Matrix) -> None:
    """A FALSE name only means the flag was not forced: the build follows its torch, and from
    2.7 torch's Linux builds use the C++11 ABI, so the name says less than the file does."""
    for torch in (TorchVersion("2.7.1"), TorchVersion("2.8.0")):
        (build,) = _binary_builds(data, "flash-attn", torch)
        assert build.abi_flags == {"TRUE": "true", "FALSE": "follows-torch"}
        release = matrix.release(torch)
        assert release is not None
        for v in release.variants:
            if LINUX in v.platforms:
                fact = data.abi_fact(torch, LINUX, v.name)
                assert fact is not None and fact.value is True, (torch, v.name)


def test_the_cxx11_abi_of_torch_linux_builds(data: Companions) -> None:
    def abi(torch: str, variant: str, platform: str = "linux-x86_64") -> bool | None:
        fact = data.abi_fact(TorchVersion(torch), Platform(platform), VariantName(variant))
        return None if fact is None else fact.value

    assert abi("2.7.0", "cu128") is True
    assert abi("2.15.0", "cpu", "linux-aarch64") is True
    assert abi("2.6.0", "cu126") is True  # 2.6's first builds with it
    assert abi("2.6.0", "rocm6.2.4") is True and abi("2.6.0", "rocm6.1") is False
    assert abi("2.6.0", "cpu", "linux-aarch64") is True
    assert abi("2.6.0", "cu124") is False
    assert abi("2.5.1", "cu121") is False
    assert abi("2.5.1", "cpu", "linux-aarch64") is None  # not stated: unknown


def test_xformers_0_0_33_post2_pins_its_torch_exactly_and_0_0_35_sets_a_floor(
        data: Companions) -> None:
    pkg = data.package("xformers")
    assert pkg is not None
    old = pkg.release(TorchVersion("0.0.33.post2"))
    new = pkg.release(TorchVersion("0.0.35"))
    assert old is not None and new is not None
    linux_old = next(b for b in old.builds if LINUX in b.platforms)
    assert (linux_old.coupling, linux_old.requires_dist) == ("exact", "torch==2.9.1")
    assert linux_old.binds(TorchVersion("2.9.1"))
    assert not linux_old.binds(TorchVersion("2.9.0"))
    linux_new = next(b for b in new.builds if LINUX in b.platforms)
    assert (linux_new.coupling, linux_new.requires_dist) == ("floor", "torch>=2.10")
    assert linux_new.binds(TorchVersion("2.15.0")) and not linux_new.binds(TorchVersion("2.9.1"))
    for r in pkg.releases:
        expected = "floor" if r.version >= TorchVersion("0.0.35") else "exact"
        assert {b.coupling for b in r.builds} == {expected}, r.version


def test_xformers_windows_pins_are_unknown_until_their_metadata_is_read(
        data: Companions) -> None:
    pkg = data.package("xformers")
    assert pkg is not None
    windows = [b for r in pkg.releases for b in r.builds
               if Platform("win-amd64") in b.platforms]
    assert windows
    assert {b.fact_evidence("coupling") for b in windows} == {"unknown"}


def test_torchao_declares_no_torch_requirement_and_is_abi_stable_from_0_17(
        data: Companions) -> None:
    pkg = data.package("torchao")
    assert pkg is not None
    for r in pkg.releases:
        (build,) = r.builds
        assert build.requires_dist is None
        if r.version >= TorchVersion("0.17.0"):
            assert build.coupling == "floor" and str(build.torch_floor) == ">=2.11"
        else:
            assert build.coupling == "exact" and len(build.torch_exact) == 1
    sixteen = pkg.release(TorchVersion("0.16.0"))
    assert sixteen is not None and sixteen.builds[0].torch_exact == (TorchVersion("2.10.0"),)


def test_pyg_wheels_live_on_find_links_pages_per_torch_minor_and_pypi_has_sdists_only(
        data: Companions) -> None:
    for name in ("pyg-lib", "torch-scatter", "torch-sparse"):
        pkg = data.package(name)
        assert pkg is not None
        binaries = [b for r in pkg.releases for b in r.builds if not b.is_source_build]
        assert {(b.where, b.coupling) for b in binaries} == {("find-links", "minor")}, name
        assert all(b.url == "https://data.pyg.org/whl/torch-{torch_minor}.0+{variant}.html"
                   for b in binaries)
    scatter = data.package("torch-scatter")
    assert scatter is not None
    cu130 = [b for r in scatter.releases for b in r.builds
             if VariantName("cu130") in b.variants]
    assert [b.platforms for b in cu130] == [(LINUX,)]  # no Windows file on that page


def test_vllm_pins_torch_exactly_and_needs_compute_capability_7_5(data: Companions) -> None:
    pkg = data.package("vllm")
    assert pkg is not None
    release = pkg.release(TorchVersion("0.29.0"))
    assert release is not None
    assert {(b.coupling, b.torch_exact) for b in release.builds} == {
        ("exact", (TorchVersion("2.13.0"),))}
    floor = pkg.gpu_requirement(TorchVersion("0.29.0"))
    assert floor is not None
    assert floor.min_compute_capability == ComputeCapability("7.5")
    assert floor.evidence == "confirmed"
    assert pkg.gpu_requirement(TorchVersion("0.28.0")) is None  # no source for that release
    assert all(not b.fits_python("3.15") and b.fits_python("3.10") for b in release.builds)


@pytest.mark.parametrize(("torch", "requirement", "marker"), [
    ("2.14.0", "triton~=3.8.0", 'platform_system == "Linux" and python_version < "3.15"'),
    ("2.13.0", "triton==3.7.1", 'platform_system == "Linux" and python_version < "3.15"'),
    ("2.11.0", "triton==3.6.0", 'platform_system == "Linux"'),
    ("2.8.0", "triton==3.4.0", 'platform_system == "Linux" and platform_machine == "x86_64"'),
    ("2.2.1", "triton==2.2.0",
     'platform_system == "Linux" and platform_machine == "x86_64" and python_version < "3.12"'),
    ("1.13.1", None, None),
], ids=lambda v: str(v))
def test_torch_wheels_pin_triton_as_their_metadata_says(data: Companions, torch: str,
                                                        requirement: str | None,
                                                        marker: str | None) -> None:
    pin = data.triton_pin(TorchVersion(torch))
    assert pin is not None
    assert (pin.requirement, pin.marker) == (requirement, marker)
    assert pin.wheel.startswith(f"torch-{torch}-") and pin.evidence == "confirmed"


def test_every_triton_pin_cites_the_metadata_of_the_wheel_it_was_read_from(
        data: Companions) -> None:
    for pin in data.triton:
        (source,) = pin.sources
        assert data.sources[source].url.endswith(f"/{pin.wheel}.metadata")


def test_python_ranges_of_abi3_and_none_wheels() -> None:
    abi3 = CompanionBuild(where="pypi", coupling="none", python_min="3.9", python_abi="abi3")
    none = CompanionBuild(where="pypi", coupling="none", python_min="3.9", python_abi="none",
                          python_max="3.13")
    assert abi3.fits_python("3.14") and not abi3.fits_python("3.8")
    assert not abi3.fits_python("3.13t")  # the limited API is not free-threaded
    assert none.fits_python("3.13t") and not none.fits_python("3.14")


# --------------------------------------------------------------------------- validation


def _pkg(doc: dict[str, Any], name: str) -> dict[str, Any]:
    found: dict[str, Any] = next(p for p in doc["packages"] if p["name"] == name)
    return found


def _release(doc: dict[str, Any], name: str, version: str) -> dict[str, Any]:
    found: dict[str, Any] = next(r for r in _pkg(doc, name)["releases"]
                                 if r["version"] == version)
    return found


def _build(doc: dict[str, Any], name: str, version: str, index: int = 0) -> dict[str, Any]:
    build: dict[str, Any] = _release(doc, name, version)["builds"][index]
    return build


def _fa(doc: dict[str, Any]) -> dict[str, Any]:
    """flash-attn 2.8.3's second asset build (torch 2.5-2.8, with a digest)."""
    return _build(doc, "flash-attn", "2.8.3", 1)


def _xf(doc: dict[str, Any]) -> dict[str, Any]:
    """xformers 0.0.33.post2's Linux build."""
    return _build(doc, "xformers", "0.0.33.post2")


def _set(target: Callable[[dict[str, Any]], dict[str, Any]], key: str,
         value: Any) -> Callable[[dict[str, Any]], None]:
    def mutate(doc: dict[str, Any]) -> None:
        target(doc)[key] = value
    return mutate


def _drop(target: Callable[[dict[str, Any]], dict[str, Any]],
          key: str) -> Callable[[dict[str, Any]], None]:
    def mutate(doc: dict[str, Any]) -> None:
        del target(doc)[key]
    return mutate


def _root(doc: dict[str, Any]) -> dict[str, Any]:
    return doc


def _source(index: int) -> Callable[[dict[str, Any]], dict[str, Any]]:
    def pick(doc: dict[str, Any]) -> dict[str, Any]:
        found: dict[str, Any] = doc["sources"][index]
        return found
    return pick


def _abi(index: int) -> Callable[[dict[str, Any]], dict[str, Any]]:
    def pick(doc: dict[str, Any]) -> dict[str, Any]:
        found: dict[str, Any] = doc["cxx11_abi"][index]
        return found
    return pick


def _triton(index: int) -> Callable[[dict[str, Any]], dict[str, Any]]:
    def pick(doc: dict[str, Any]) -> dict[str, Any]:
        found: dict[str, Any] = doc["triton"][index]
        return found
    return pick


def _asset(doc: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = _fa(doc)["assets"][0]
    return found


def _vllm_gpu(doc: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = _pkg(doc, "vllm")["gpu"][0]
    return found


def _sdist(doc: dict[str, Any]) -> dict[str, Any]:
    return _build(doc, "flash-attn", "2.8.3", 2)


def _duplicate_package(doc: dict[str, Any]) -> None:
    doc["packages"].append({**copy.deepcopy(_pkg(doc, "flash-attn")), "name": "flash_attn"})


def _duplicate_release(doc: dict[str, Any]) -> None:
    releases = _pkg(doc, "torchao")["releases"]
    releases.append(copy.deepcopy(releases[0]))


def _duplicate_source(doc: dict[str, Any]) -> None:
    doc["sources"].append(copy.deepcopy(doc["sources"][0]))


def _duplicate_triton(doc: dict[str, Any]) -> None:
    doc["triton"].append(copy.deepcopy(doc["triton"][0]))


BROKEN = [
    ("schema", _set(_root, "schema_version", 2),
     r"schema_version: is 2; this torchenv reads schema_version 1"),
    ("top-level key", _set(_root, "extensions", []),
     r": extensions: is not a key of companions\.yaml"),
    ("source url", _set(_source(0), "url", "http://github.com/pytorch/pytorch/issues/143962"),
     r"sources\[0\]\.url: 'http://github\.com/.*' is not an https:// address"),
    ("source defined twice", _duplicate_source,
     r"sources\[\d+\]\.id: source 'pytorch-issue-143962' is defined twice"),
    ("undefined source", _set(_xf, "sources", ["nope"]),
     r"packages\[1\]\.releases\[4\]\.builds\[0\]\.sources\[0\]: source 'nope' is not defined"),
    ("confirmed without a primary source", _set(_xf, "sources", ["flash-attn-issue-2299"]),
     r"packages\[1\]\.releases\[4\]\.builds\[0\]\.evidence\.exists: exists is 'confirmed' but "
     r"every source it cites is a copy"),
    ("GPU floor confirmed by copies only", _set(_vllm_gpu, "sources", ["vllm-docs-0.29.0-gpu"]),
     r"packages\[6\]\.gpu\[0\]: the GPU floor is 'confirmed' but every source"),
    ("ABI confirmed by copies only", _set(_abi(0), "sources", ["flash-attn-issue-2299"]),
     r"cxx11_abi\[0\]: the ABI fact is 'confirmed' but every source"),
    ("pin confirmed by copies only", _set(_triton(0), "sources", ["flash-attn-issue-2299"]),
     r"triton\[0\]: the pin is 'confirmed' but every source"),
    ("digest confirmed by copies only", _set(_asset, "evidence", "confirmed"),
     r"builds\[1\]\.assets\[0\]: the digest is 'confirmed' but every source"),
    ("duplicate package", _duplicate_package,
     r"packages\[7\]\.name: 'flash_attn' is listed twice \(also packages\[0\]\)"),
    ("bad package name", _set(lambda d: _pkg(d, "vllm"), "name", "vLLM!"),
     r"packages\[6\]\.name: 'vLLM!' is not a package name"),
    ("unknown field", _set(_xf, "torch_version", "2.9.1"),
     r"builds\[0\]\.torch_version: is not a field here"),
    ("duplicate release", _duplicate_release,
     r"packages\[2\]\.releases\[6\]\.version: 0\.13\.0 is listed twice"),
    ("empty builds", _set(lambda d: _release(d, "vllm", "0.29.0"), "builds", []),
     r"releases\[1\]\.builds: empty: a release lists at least one build"),
    ("release date", _set(lambda d: _release(d, "vllm", "0.29.0"), "released", "Sept 2026"),
     r"releases\[1\]\.released: 'Sept 2026' is not an ISO date or 'unknown'"),
    ("unknown location", _set(_xf, "where", "conda"),
     r"builds\[0\]\.where: 'conda' is not one of pypi, pytorch-index, find-links"),
    ("unknown coupling", _set(_xf, "coupling", "patch"),
     r"builds\[0\]\.coupling: 'patch' is not one of exact, minor, floor, none"),
    ("sdist with a coupling", _set(_sdist, "coupling", "exact"),
     r"builds\[2\]\.coupling: a source distribution \(where: sdist\) and only it has coupling"),
    ("source build naming torch", _set(_sdist, "torch", ["2.8"]),
     r"builds\[2\]\.torch: a source build names no torch"),
    ("exact without torch", _set(_xf, "torch", []),
     r"builds\[0\]\.torch: empty: an exact build names the torch it is built for"),
    ("exact with a local version", _set(_xf, "torch", ["2.9.1+cu128"]),
     r"builds\[0\]\.torch\[0\]: .*'2\.9\.1\+cu128'"),
    ("exact release twice", _set(_xf, "torch", ["2.9.1", "2.9.1"]),
     r"builds\[0\]\.torch: lists a torch release twice"),
    ("minor with a patch release", _set(_fa, "torch", ["2.8.0"]),
     r"builds\[1\]\.torch\[0\]: '2\.8\.0' is not a torch series like '2\.8'"),
    ("minor twice", _set(_fa, "torch", ["2.8", "2.8"]),
     r"builds\[1\]\.torch: lists a torch series twice"),
    ("floor without >=", _set(lambda d: _build(d, "xformers", "0.0.35"), "torch", "2.10"),
     r"builds\[0\]\.torch: '2\.10' is not a floor like '>=2\.10'"),
    ("pin disagrees with the coupling", _set(_xf, "requires_dist", "torch==2.9.0"),
     r"builds\[0\]\.requires_dist: 'torch==2\.9\.0' does not pin the one release the exact "
     r"coupling names \(==2\.9\.1\)"),
    ("floor disagrees with the coupling",
     _set(lambda d: _build(d, "xformers", "0.0.35"), "requires_dist", "torch>=2.9"),
     r"requires_dist: 'torch>=2\.9' is not the floor the coupling names \(>=2\.10\)"),
    ("requirement on another package", _set(_xf, "requires_dist", "numpy==2.9.1"),
     r"requires_dist: 'numpy==2\.9\.1' is not a requirement on torch"),
    ("requirement on a minor build", _set(_fa, "requires_dist", "torch==2.8.0"),
     r"builds\[1\]\.requires_dist: a minor build's metadata declares no torch requirement"),
    ("binary without platforms", _drop(_xf, "platforms"),
     r"builds\[0\]\.platforms: a binary build names its platforms"),
    ("unknown platform", _set(_xf, "platforms", ["linux-riscv64"]),
     r"builds\[0\]\.platforms\[0\]: unknown platform 'linux-riscv64'"),
    ("python twice over", _set(_xf, "python", ["3.12"]),
     r"builds\[0\]\.python: give a list of Python versions or python_min"),
    ("binary without python", _drop(_fa, "python"),
     r"builds\[1\]\.python: a binary build names its Python versions"),
    ("python_max below python_min", _set(_xf, "python_max", "3.8"),
     r"builds\[0\]\.python_max: 3\.8 is older than python_min 3\.9"),
    ("python abi", _set(_xf, "python_abi", "cp39"),
     r"builds\[0\]\.python_abi: 'cp39' is not 'abi3' or 'none'"),
    ("find-links without variants",
     _drop(lambda d: _build(d, "torch-scatter", "2.1.2"), "variants"),
     r"builds\[0\]\.variants: a find-links build names the torch variants it is for"),
    ("unknown variant", _set(lambda d: _build(d, "torch-scatter", "2.1.2"), "variants",
                             ["cuda130"]),
     r"builds\[0\]\.variants\[0\]: .*'cuda130'"),
    ("placeholder", _set(_fa, "url", "https://github.com/o/r/releases/download/v1/f-{cuda}.whl"),
     r"builds\[1\]\.url: \{cuda\} is not a placeholder of a release-asset address"),
    ("http url", _set(_fa, "url", "http://github.com/o/r/releases/download/v1/f.whl"),
     r"builds\[1\]\.url: 'http://github\.com/.*' is not an https:// address"),
    ("asset outside a release", _set(_fa, "url", "https://example.org/{abi_flag}/f.whl"),
     r"builds\[1\]\.url: 'https://example\.org/.*' is not a GitHub release asset"),
    ("url on a PyPI build", _set(_xf, "url", "https://pypi.org/simple/xformers/"),
     r"builds\[0\]\.url: a pypi build has no url"),
    ("abi flags missing", _drop(_fa, "abi_flags"),
     r"builds\[1\]\.abi_flags: the url names an \{abi_flag\}"),
    ("abi flag meaning", _set(_fa, "abi_flags", {"TRUE": "true", "FALSE": "maybe"}),
     r"builds\[1\]\.abi_flags\.FALSE: 'maybe' is not one of true, false, follows-torch"),
    ("abi flag name", _set(_fa, "abi_flags", {"YES": "true"}),
     r"builds\[1\]\.abi_flags\.YES: 'YES' is not an ABI flag"),
    ("abi flags without a flag in the url", _set(_xf, "abi_flags", {"TRUE": "true"}),
     r"builds\[0\]\.abi_flags: only a release asset whose url has \{abi_flag\} has abi_flags"),
    ("bad arch entry", _set(_fa, "arch_list", ["8.0", "9.0x"]),
     r"builds\[1\]\.arch_list\[1\]: .*'9\.0x'"),
    ("cuda major as text", _set(_fa, "cuda_major", "12"),
     r"builds\[1\]\.cuda_major: expected a CUDA major version, got '12'"),
    ("evidence class", _set(_xf, "evidence", {"exists": "sure", "coupling": "confirmed",
                                              "python": "confirmed"}),
     r"builds\[0\]\.evidence\.exists: 'sure' is not one of confirmed, inferred, unknown"),
    ("inferred written by hand", _set(_xf, "evidence", {"exists": "confirmed",
                                                        "coupling": "inferred",
                                                        "python": "confirmed"}),
     r"builds\[0\]\.evidence\.coupling: 'inferred' is set by a named rule"),
    ("evidence for an unstated fact", _set(_xf, "evidence", {"exists": "confirmed",
                                                             "coupling": "confirmed",
                                                             "python": "confirmed",
                                                             "abi": "confirmed"}),
     r"builds\[0\]\.evidence\.abi: the build states no abi"),
    ("evidence for an unknown fact", _set(_xf, "evidence", {"exists": "confirmed",
                                                            "coupling": "confirmed",
                                                            "python": "confirmed",
                                                            "speed": "confirmed"}),
     r"builds\[0\]\.evidence\.speed: is not a fact of a build"),
    ("arch list without evidence", _set(_fa, "evidence", {
        "exists": "confirmed", "coupling": "confirmed", "python": "confirmed",
        "abi": "confirmed"}),
     r"builds\[1\]\.evidence: missing 'arch_list': every fact the build states has an evidence"),
    ("digest", _set(_asset, "sha256", "F25DA1"),
     r"assets\[0\]\.sha256: 'F25DA1' is not a sha256 digest"),
    ("asset of another file", _set(_asset, "file", "flash_attn-2.8.3-cp312-cp312-any.whl"),
     r"assets\[0\]\.file: 'flash_attn-2\.8\.3-cp312-cp312-any\.whl' is not a file the build's "
     r"url names"),
    ("digest of a PyPI build", _set(_xf, "assets", [{"file": "x.whl", "sha256": "0" * 64,
                                                     "evidence": "unknown",
                                                     "sources": ["pypi-simple-xformers"]}]),
     r"builds\[0\]\.assets: only a release-asset build lists asset digests"),
    ("GPU floor", _set(_vllm_gpu, "min_compute_capability", "seven"),
     r"packages\[6\]\.gpu\[0\]\.min_compute_capability: .*'seven'"),
    ("GPU floor of an unlisted release", _set(_vllm_gpu, "versions", ["0.99.0"]),
     r"packages\[6\]\.gpu\[0\]\.versions\[0\]: 0\.99\.0 is not among the package's releases"),
    ("ABI on Windows", _set(_abi(0), "platforms", ["win-amd64"]),
     r"cxx11_abi\[0\]\.platforms\[0\]: win-amd64: the C\+\+11 ABI flag is a property of Linux"),
    ("ABI value and evidence", _set(_abi(5), "evidence", "confirmed"),
     r"cxx11_abi\[5\]\.evidence: 'confirmed' for value 'unknown'"),
    ("ABI variants both ways", _set(_abi(1), "except_variants", ["cu124"]),
     r"cxx11_abi\[1\]\.except_variants: give variants or except_variants, not both"),
    ("ABI torch specifier", _set(_abi(0), "torch", ">=two"),
     r"cxx11_abi\[0\]\.torch: .*'>=two'"),
    ("triton marker inside the requirement",
     _set(_triton(0), "requirement", 'triton==3.8.0; platform_system == "Linux"'),
     r"triton\[0\]\.requirement: .*write 'triton<specifier>' here and its environment marker"),
    ("triton requirement", _set(_triton(0), "requirement", "triton=3.8"),
     r"triton\[0\]\.requirement: 'triton=3\.8' is not a requirement"),
    ("triton marker", _set(_triton(0), "marker", "platform is Linux"),
     r"triton\[0\]\.marker: 'platform is Linux' is not an environment marker"),
    ("triton marker without a requirement", _set(_triton(27), "marker", 'os_name == "posix"'),
     r"triton\[27\]\.marker: a marker without a requirement"),
    ("triton wheel of another torch",
     _set(_triton(0), "wheel", "torch-2.13.0-cp312-cp312-manylinux_2_28_x86_64.whl"),
     r"triton\[0\]\.wheel: 'torch-2\.13\.0-.*' is not a wheel of torch 2\.14\.0"),
    ("triton listed twice", _duplicate_triton,
     r"triton\[28\]\.torch: torch 2\.14\.0 is listed twice"),
]


@pytest.mark.parametrize(("mutate", "message"), [(m, msg) for _, m, msg in BROKEN],
                         ids=[row[0] for row in BROKEN])
def test_broken_data_is_refused_naming_the_path_and_value(
        shipped_doc: dict[str, Any], mutate: Callable[[dict[str, Any]], None],
        message: str) -> None:
    doc = copy.deepcopy(shipped_doc)
    mutate(doc)
    with pytest.raises(MatrixError) as err:
        build_companions(doc, origin="matrix/data/companions.yaml")
    assert err.value.message.startswith("matrix/data/companions.yaml: ")
    assert re.search(message, err.value.message), err.value.message
    assert err.value.exit_code == 2


def _triton_of_2_99(doc: dict[str, Any]) -> None:
    doc["triton"][0].update(torch="2.99.0", wheel="torch-2.99.0-cp312-cp312-linux_x86_64.whl")


AGAINST_THE_MATRIX = [
    ("release not in the matrix",
     _set(lambda d: _build(d, "vllm", "0.29.0", 1), "torch", ["2.99.0"]),
     r"packages\[6\]\.releases\[1\]\.builds\[1\]\.torch: torch 2\.99\.0 is not in the matrix"),
    ("series not in the matrix", _set(_fa, "torch", ["2.99"]),
     r"builds\[1\]\.torch: torch 2\.99 is not a series of the matrix"),
    ("variant not in the matrix", _set(lambda d: _build(d, "pyg-lib", "0.7.0"), "variants",
                                       ["cu999"]),
     r"builds\[0\]\.variants: cu999 is not a variant of any release in the matrix"),
    ("triton of an unknown torch", _triton_of_2_99,
     r"triton\[0\]\.torch: torch 2\.99\.0 is not in the matrix"),
    ("two ABI facts for one build", _set(_abi(4), "torch", "<2.7"),
     r"cxx11_abi\[4\]: torch 2\.6\.0 \S+ on linux-x86_64 is also covered by cxx11_abi\[[13]\]"),
]


@pytest.mark.parametrize(("mutate", "message"), [(m, msg) for _, m, msg in AGAINST_THE_MATRIX],
                         ids=[row[0] for row in AGAINST_THE_MATRIX])
def test_names_the_matrix_does_not_know_are_refused(
        shipped_doc: dict[str, Any], matrix: Matrix, mutate: Callable[[dict[str, Any]], None],
        message: str) -> None:
    doc = copy.deepcopy(shipped_doc)
    mutate(doc)
    build_companions(doc)  # sound on its own: only the matrix shows what is wrong
    with pytest.raises(MatrixError) as err:
        build_companions(doc, matrix=matrix)
    assert re.search(message, err.value.message), err.value.message


def test_a_missing_file_is_reported(tmp_path: Any) -> None:
    with pytest.raises(MatrixError, match=r"companions\.yaml: missing"):
        load_companions(tmp_path / "companions.yaml")


def test_the_start_up_matrix_does_not_read_the_companions() -> None:
    from torchenv.matrix import loader

    assert "companions.yaml" not in loader.DATA_FILES
