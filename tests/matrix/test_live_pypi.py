"""The one PyPI derivation (torchenv.matrix.live.pypi) that tools/derive_pypi.py and
`matrix update` share, on recorded PyPI material.

The torch 1.13.0 file list and the Requires-Dist of its wheels below were read from PyPI's JSON
API and the wheels' METADATA: the x86_64 wheels pin the CUDA 11.7 runtime with no marker, the
aarch64 wheels have no CUDA requirement at all, so only per-wheel metadata tells them apart.
"""

from __future__ import annotations

import io
import re
import zipfile
from pathlib import Path
from typing import Optional

import pytest
import yaml

from torchenv.matrix.live.pypi import (
    Companion,
    PypiFile,
    UnexpectedMetadata,
    carry_over,
    cuda_variant,
    derive_release,
    handwritten_note,
    pair,
    project_files,
    release_entry,
    wheel_requires_dist,
)

RELEASES_YAML = (Path(__file__).parents[2] / "src" / "torchenv" / "matrix" / "data"
                 / "releases.yaml")

# PyPI, torch 1.13.0: every file, and the upload time of the first (the release date)
TORCH_1_13_0 = [
    "torch-1.13.0-cp310-cp310-manylinux1_x86_64.whl",
    "torch-1.13.0-cp310-cp310-manylinux2014_aarch64.whl",
    "torch-1.13.0-cp310-cp310-win_amd64.whl",
    "torch-1.13.0-cp310-none-macosx_10_9_x86_64.whl",
    "torch-1.13.0-cp310-none-macosx_11_0_arm64.whl",
    "torch-1.13.0-cp311-cp311-manylinux1_x86_64.whl",
    "torch-1.13.0-cp37-cp37m-manylinux1_x86_64.whl",
    "torch-1.13.0-cp37-cp37m-manylinux2014_aarch64.whl",
    "torch-1.13.0-cp37-cp37m-win_amd64.whl",
    "torch-1.13.0-cp37-none-macosx_10_9_x86_64.whl",
    "torch-1.13.0-cp37-none-macosx_11_0_arm64.whl",
    "torch-1.13.0-cp38-cp38-manylinux1_x86_64.whl",
    "torch-1.13.0-cp38-cp38-manylinux2014_aarch64.whl",
    "torch-1.13.0-cp38-cp38-win_amd64.whl",
    "torch-1.13.0-cp38-none-macosx_10_9_x86_64.whl",
    "torch-1.13.0-cp38-none-macosx_11_0_arm64.whl",
    "torch-1.13.0-cp39-cp39-manylinux1_x86_64.whl",
    "torch-1.13.0-cp39-cp39-manylinux2014_aarch64.whl",
    "torch-1.13.0-cp39-cp39-win_amd64.whl",
    "torch-1.13.0-cp39-none-macosx_10_9_x86_64.whl",
    "torch-1.13.0-cp39-none-macosx_11_0_arm64.whl",
]
FIRST_UPLOAD = "2022-10-28T16:21:55.479709Z"
X86_64_REQUIRES = ["typing-extensions", "nvidia-cuda-runtime-cu11 (==11.7.99)",
                   "nvidia-cudnn-cu11 (==8.5.0.96)", "nvidia-cublas-cu11 (==11.10.3.66)",
                   "nvidia-cuda-nvrtc-cu11 (==11.7.99)",
                   "opt-einsum (>=3.3) ; extra == 'opt-einsum'"]
AARCH64_REQUIRES = ["typing-extensions", "opt-einsum (>=3.3) ; extra == 'opt-einsum'"]
# torch 2.15.0's Requires-Dist (both Linux wheels): the CUDA runtime comes as cuda-toolkit
TORCH_2_15_0_CUDA = ['cuda-toolkit[cublas,cudart,cufft,cufile,cupti,cusolver,cusparse,nvjitlink,'
                     'nvrtc,nvtx]==13.2.2; platform_system == "Linux"',
                     'nvidia-cudnn-cu13==9.26.0.51; platform_system == "Linux"']
# torch 2.9.0's x86_64 and aarch64 wheels both carry these, with a machine marker
TORCH_2_9_0_CUDA = ['nvidia-cuda-runtime-cu12==12.8.90; platform_system == "Linux" and '
                    'platform_machine == "x86_64"']


def _metadata(requires: list[str]) -> bytes:
    return ("Metadata-Version: 2.1\nName: torch\nVersion: 1.13.0\n"
            + "".join(f"Requires-Dist: {r}\n" for r in requires) + "\n").encode()


class Served:
    """A Reader over in-memory files, recording what was asked for."""

    def __init__(self, files: dict[str, bytes]) -> None:
        self.files = files
        self.asked: list[tuple[str, Optional[str]]] = []

    def __call__(self, url: str, byte_range: Optional[str]) -> Optional[bytes]:
        self.asked.append((url, byte_range))
        body = self.files.get(url)
        if body is None or byte_range is None:
            return body
        m = re.fullmatch(r"(\d*)-(\d*)", byte_range)
        assert m is not None
        if not m[1]:
            return body[-int(m[2]):]
        return body[int(m[1]): int(m[2]) + 1 if m[2] else None]


def _files(names: list[str]) -> list[PypiFile]:
    return [PypiFile(n, f"https://files.example/{n}", FIRST_UPLOAD) for n in names]


def test_recorded_1_13_0_gives_the_committed_entry() -> None:
    metadata = {
        f"https://files.example/torch-1.13.0-{tag}.whl.metadata": _metadata(requires)
        for tag, requires in (("cp37-cp37m-manylinux1_x86_64", X86_64_REQUIRES),
                              ("cp311-cp311-manylinux1_x86_64", X86_64_REQUIRES),
                              ("cp37-cp37m-manylinux2014_aarch64", AARCH64_REQUIRES),
                              ("cp310-cp310-manylinux2014_aarch64", AARCH64_REQUIRES))}
    read = Served(metadata)
    facts = derive_release("1.13.0", _files(TORCH_1_13_0), read, {})
    assert facts is not None
    committed = next(r for r in yaml.safe_load(RELEASES_YAML.read_text())["releases"]
                     if r["torch"] == "1.13.0")
    assert {p: list(t) for p, t in facts.python.items()} == committed["python"]
    assert dict(facts.manylinux) == committed["manylinux"]
    assert dict(facts.pypi_default) == committed["pypi_default"]
    assert facts.released == committed["released"]
    # only the oldest and newest Python tag's wheel per Linux platform is read
    assert sorted(url for url, _ in read.asked) == sorted(metadata)
    assert facts.notes[0] == "linux-x86_64 wheels pin nvidia-cuda-runtime-cu11==11.7.99."


def test_yanked_files_do_not_count() -> None:
    files = [PypiFile(f.filename, f.url, f.uploaded, yanked=True) for f in _files(TORCH_1_13_0)]
    assert derive_release("1.13.0", files, Served({}), {}) is None


@pytest.mark.parametrize(("requires", "machine", "python", "expected"), [
    (X86_64_REQUIRES, "x86_64", "3.10", ("cu117", "nvidia-cuda-runtime-cu11==11.7.99")),
    (AARCH64_REQUIRES, "aarch64", "3.10", ("cpu", None)),
    (TORCH_2_15_0_CUDA, "aarch64", "3.14t", ("cu132", "cuda-toolkit==13.2.2")),
    (TORCH_2_9_0_CUDA, "x86_64", "3.13", ("cu128", "nvidia-cuda-runtime-cu12==12.8.90")),
    (TORCH_2_9_0_CUDA, "aarch64", "3.13", ("cpu", None)),
], ids=["1.13-x86_64", "1.13-aarch64", "2.15-cuda-toolkit", "2.9-x86_64", "2.9-aarch64-marker"])
def test_cuda_variant(requires: list[str], machine: str, python: str,
                      expected: tuple[str, Optional[str]]) -> None:
    assert cuda_variant(requires, machine, python) == expected


@pytest.mark.parametrize("requires", [
    ["nvidia-cuda-runtime-cu12>=12.1"], ["cuda-toolkit==12.8.*,==13.0.1"], ["torch ==="],
], ids=["no-exact-pin", "two-pins", "unparsable"])
def test_cuda_variant_refuses_what_it_cannot_read(requires: list[str]) -> None:
    with pytest.raises(UnexpectedMetadata, match=r"w\.whl"):
        cuda_variant(requires, "x86_64", "3.12", where="w.whl")


def test_variant_differing_by_python_tag_is_an_error() -> None:
    names = ["torch-9.0.0-cp310-cp310-manylinux_2_28_x86_64.whl",
             "torch-9.0.0-cp313-cp313-manylinux_2_28_x86_64.whl"]
    read = Served({f"https://files.example/{names[0]}.metadata": _metadata(X86_64_REQUIRES),
                   f"https://files.example/{names[1]}.metadata": _metadata(AARCH64_REQUIRES)})
    with pytest.raises(UnexpectedMetadata, match="variant differs by Python tag"):
        derive_release("9.0.0", _files(names), read, {})


def _companion(version: str, spec: Optional[str], yanked: bool = False) -> Companion:
    from packaging.specifiers import SpecifierSet

    return Companion(version, SpecifierSet(spec) if spec is not None else None, yanked)


@pytest.mark.parametrize(("releases", "expected"), [
    ([_companion("0.15.0", "==2.0.0", yanked=True), _companion("0.15.1", "==2.0.0")],
     "0.15.1"),
    ([_companion("0.15.2", "==2.0.1"), _companion("0.16.0", "==2.1.0")], None),
    ([_companion("0.29.1", ">=2.0.0"), _companion("0.16.0", "==2.1.0")], "unknown"),
    ([_companion("2.11.0", None)], "unknown"),
], ids=["exact-newest-unyanked", "none-admits", "loose-admits", "no-torch-requirement"])
def test_pair(releases: list[Companion], expected: Optional[str]) -> None:
    found, notes = pair("2.0.0", releases, "torchvision")
    assert found == expected
    assert handwritten_note(" ".join(notes)) == ""  # every generated note is recognised


def test_metadata_from_the_wheel_when_there_is_no_pep658_file() -> None:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as whl:
        whl.writestr("torch/__init__.py", "x = 1\n" * 5000)
        whl.writestr("torch-1.13.0.dist-info/METADATA", _metadata(X86_64_REQUIRES))
        whl.writestr("torch-1.13.0.dist-info/RECORD", "")
    url = "https://files.example/torch-1.13.0-cp310-cp310-manylinux1_x86_64.whl"
    read = Served({url: buf.getvalue()})
    assert wheel_requires_dist(read, url) == X86_64_REQUIRES
    assert read.asked[0] == (url + ".metadata", None)
    assert all(byte_range is not None for _, byte_range in read.asked[1:])  # never whole


def test_not_a_wheel_is_an_error_naming_it() -> None:
    url = "https://files.example/x.whl"
    with pytest.raises(UnexpectedMetadata, match=r"x\.whl: no end-of-central-directory"):
        wheel_requires_dist(Served({url: b"<html>not found</html>"}), url)


def test_project_files_resolves_relative_urls_and_names_bad_entries() -> None:
    url = "https://mirror.example/pypi/torch/json"
    doc = {"releases": {"1.13.0": [{"filename": TORCH_1_13_0[0], "url": "../../packages/a.whl",
                                    "upload_time": "2022-10-28T16:21:55", "yanked": False}]}}
    (f,) = project_files(url, doc)["1.13.0"]
    assert f.url == "https://mirror.example/packages/a.whl"
    assert f.uploaded.startswith("2022-10-28")
    with pytest.raises(UnexpectedMetadata, match=r"releases\['1.13.0'\]\[0\] .* has no 'url'"):
        project_files(url, {"releases": {"1.13.0": [{"filename": "a.whl",
                                                     "upload_time": "2022-10-28"}]}})
    with pytest.raises(UnexpectedMetadata, match="no 'releases' object"):
        project_files(url, {"info": {}})


def test_every_committed_note_keeps_its_handwritten_part() -> None:
    """Regenerating releases.yaml drops only generated sentences: what remains of each note
    has none of them left, and all hand-written text (conda, pairing, Python 3.15) stays."""
    releases = yaml.safe_load(RELEASES_YAML.read_text())["releases"]
    for rel in releases:
        kept = handwritten_note(rel.get("note"))
        for marker in ("wheels pin ", "release on PyPI pins", "re-uploaded wheels",
                       "differ in glibc floor"):
            assert marker not in kept, (rel["torch"], kept)
    latest = next(r for r in releases if r["torch"] == "2.15.0")
    assert handwritten_note(latest["note"]).startswith("conda-forge: feedstock history")
    assert "torchvision pairing: 0.29.0 pins torch==2.14.0" in handwritten_note(latest["note"])


def test_carry_over_keeps_what_pypi_cannot_show() -> None:
    facts = derive_release("1.13.0", _files(TORCH_1_13_0), Served({
        f"https://files.example/torch-1.13.0-{tag}.whl.metadata": _metadata([])
        for tag in ("cp37-cp37m-manylinux1_x86_64", "cp311-cp311-manylinux1_x86_64",
                    "cp37-cp37m-manylinux2014_aarch64", "cp310-cp310-manylinux2014_aarch64")}),
        {"torchvision": [_companion("0.14.0", ">=1.0")]})
    assert facts is not None
    entry = release_entry(facts, sources=["pypi-json"],
                          conda={"pytorch_channel": "unknown", "conda_forge": "unknown"})
    assert entry["torchvision"] == "unknown"
    before = {"torch": "1.13.0", "torchvision": "0.14.0", "torchaudio": None,
              "conda": {"pytorch_channel": True, "conda_forge": True},
              "sources": ["pypi-json", "pytorch-previous-versions"],
              "note": "No torchvision release on PyPI pins torch==1.13.0; releases without an "
                      "exact pin: 0.13.9 (torch>=1.0). conda: read from the install page. "
                      "Pairing confirmed by the release notes."}
    carry_over(entry, before)
    assert entry["torchvision"] == "0.14.0"
    assert entry["torchaudio"] is None  # PyPI: none admits 1.13.0; unchanged
    assert entry["conda"] == {"pytorch_channel": True, "conda_forge": True}
    assert entry["sources"] == ["pypi-json", "pytorch-previous-versions"]
    assert entry["note"].endswith(" conda: read from the install page. Pairing confirmed by "
                                  "the release notes.")
    assert entry["note"].count("No torchvision release") == 1
