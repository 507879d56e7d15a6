"""Triton pins read from torch wheels' metadata give companions.yaml's entries, and drift shows.

The recordings under data/companions/ are the header part of real PEP 658 ``.metadata`` files
of PyPI torch wheels (the long description after the headers left out), read 2026-12-05 from
the URLs companions.yaml cites.
"""

from __future__ import annotations

import copy
import io
import zipfile
from pathlib import Path
from typing import Any, Optional

import pytest

from torchenv.matrix.companions import COMPANIONS_FILE, Companions, build_companions
from torchenv.matrix.live.companions import triton_drift, triton_pin, triton_source
from torchenv.matrix.live.pypi import UnexpectedMetadata
from torchenv.matrix.loader import read_yaml

RECORDED = Path(__file__).parent / "data" / "companions"


@pytest.fixture(scope="module")
def shipped() -> dict[str, Any]:
    doc: dict[str, Any] = read_yaml(COMPANIONS_FILE)
    return doc


def _wheel_url(doc: dict[str, Any], torch: str) -> str:
    source = next(s for s in doc["sources"] if s["id"] == f"pypi-torch-{torch}-metadata")
    url: str = source["url"]
    return url.removesuffix(".metadata")


class Served:
    """A Reader over recorded files: the body at a URL, a byte range of it, or None (404)."""

    def __init__(self, files: dict[str, bytes]) -> None:
        self.files = files
        self.asked: list[tuple[str, Optional[str]]] = []

    def __call__(self, url: str, byte_range: Optional[str]) -> Optional[bytes]:
        self.asked.append((url, byte_range))
        body = self.files.get(url)
        if body is None or byte_range is None:
            return body
        start, _, end = byte_range.partition("-")
        if not start:
            return body[-int(end):]
        return body[int(start): int(end) + 1]


@pytest.mark.parametrize("torch", ["2.14.0", "2.6.0", "2.2.1", "1.13.1"])
def test_a_recorded_wheel_gives_the_shipped_entry_and_source(shipped: dict[str, Any],
                                                             torch: str) -> None:
    url = _wheel_url(shipped, torch)
    read = Served({f"{url}.metadata": (RECORDED / f"torch-{torch}.metadata").read_bytes()})
    entry = triton_pin(read, torch, url)
    committed = next(t for t in shipped["triton"] if t["torch"] == torch)
    assert entry == {k: committed.get(k) for k in entry}
    assert set(committed) <= set(entry)
    source = next(s for s in shipped["sources"] if s["id"] == entry["sources"][0])
    assert triton_source(torch, url) == source


def test_without_a_metadata_file_the_wheel_member_is_read_by_ranges() -> None:
    metadata = (RECORDED / "torch-2.6.0.metadata").read_bytes()
    wheel = io.BytesIO()
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr("torch/__init__.py", "")
        z.writestr("torch-2.6.0.dist-info/METADATA", metadata)
    url = "https://files.example/torch-2.6.0-cp312-cp312-manylinux1_x86_64.whl"
    read = Served({url: wheel.getvalue()})
    entry = triton_pin(read, "2.6.0", url)
    assert entry["requirement"] == "triton==3.2.0"
    assert all(byte_range is not None for asked, byte_range in read.asked if asked == url)


def _served(requires: list[str], url: str) -> Served:
    body = ("Metadata-Version: 2.1\nName: torch\nVersion: 2.8.0\n"
            + "".join(f"Requires-Dist: {r}\n" for r in requires) + "\n").encode()
    return Served({f"{url}.metadata": body})


URL = "https://files.example/torch-2.8.0-cp312-cp312-manylinux_2_28_x86_64.whl"


@pytest.mark.parametrize(("torch", "requires", "message"), [
    ("2.9.0", ["triton==3.4.0"], "not a wheel of torch 2.9.0"),
    ("2.8.0", ["triton==3.4.0", "triton==3.5.0; python_version >= '3.13'"],
     "requires triton 2 times"),
    ("2.8.0", ["triton (==3.4"], r"Requires-Dist 'triton \(==3\.4' is not a requirement"),
], ids=["another release", "two pins", "unreadable"])
def test_unexpected_metadata_is_refused_naming_the_wheel(torch: str, requires: list[str],
                                                         message: str) -> None:
    with pytest.raises(UnexpectedMetadata, match=message):
        triton_pin(_served(requires, URL), torch, URL)


def test_drift_names_each_release_whose_wheel_says_otherwise(shipped: dict[str, Any]) -> None:
    doc = copy.deepcopy(shipped)
    doc["triton"] = [t for t in doc["triton"] if t["torch"] != "2.7.1"]
    pin = next(t for t in doc["triton"] if t["torch"] == "2.8.0")
    pin["requirement"] = "triton==3.3.1"
    data: Companions = build_companions(doc)
    read = [triton_pin(_served(['triton==3.4.0; platform_system == "Linux" and '
                                'platform_machine == "x86_64"'], URL), "2.8.0", URL),
            {"torch": "2.7.1", "requirement": "triton==3.3.1", "marker": None},
            {"torch": "2.9.0", "requirement": "triton==3.5.0",
             "marker": 'platform_system == "Linux" and platform_machine == "x86_64"'}]
    assert triton_drift(data, read) == [
        'torch 2.8.0: companions.yaml says triton==3.3.1; platform_system == "Linux" and '
        'platform_machine == "x86_64", its wheel triton==3.4.0; platform_system == "Linux" and '
        'platform_machine == "x86_64"',
        "torch 2.7.1: not in companions.yaml; its wheel requires triton==3.3.1",
    ]
