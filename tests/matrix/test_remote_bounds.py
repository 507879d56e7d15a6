"""Every byte ``matrix update`` reads from a mirror is bounded, and every malformed answer is a
clear error naming the URL: a METADATA member built to inflate without end, a zip record cut
short, a version of 5,000 digits in a wheel's name, a redirect to ``http://[``, a
``Content-Length`` that promises more than comes."""

from __future__ import annotations

import http.server
import io
import sys
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from torchenv.cli import main
from torchenv.errors import BadInput, NetworkError
from torchenv.matrix.live import pypi
from torchenv.matrix.live.derive import snapshot_from_filenames
from torchenv.matrix.live.http import Fetcher, FetchPolicy, check_url
from torchenv.matrix.live.pypi import UnexpectedMetadata, is_final, wheel_requires_dist
from torchenv.matrix.live.wheels import safe_parse_wheel

sys.path.insert(0, str(Path(__file__).parent))  # importlib mode: the sibling test modules

from test_live_http import RawServer, Responder, serve
from test_live_pypi import Served

__all__ = ["serve"]  # the fixture, used by name

URL = "https://files.example/torch-2.7.1-cp312-cp312-manylinux_2_28_x86_64.whl"
DIGITS = "9" * 5000


def _wheel(metadata: bytes, *, method: int = zipfile.ZIP_DEFLATED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", method) as whl:
        whl.writestr("torch/__init__.py", "x = 1\n")
        whl.writestr("torch-2.7.1.dist-info/METADATA", metadata)
    return buf.getvalue()


# ----------------------------------------------------------------------------- archive members

def test_a_metadata_member_that_inflates_past_the_limit_is_refused_unread() -> None:
    """A few KiB that inflate to more than the limit: inflating stops at the limit."""
    bomb = _wheel(b"Requires-Dist: x\n" + b"\0" * (pypi.MAX_METADATA_BYTES + 1))
    assert len(bomb) < pypi.MAX_METADATA_BYTES // 100
    with pytest.raises(UnexpectedMetadata, match=r"METADATA inflates past 4 MiB; not read"):
        wheel_requires_dist(Served({URL: bomb}), URL)


def test_inflating_is_bounded_not_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    """The inflater is asked for at most the limit (plus one byte), whatever the member says."""
    asked: list[int] = []
    real = pypi.zlib.decompressobj

    class Counting:
        def __init__(self, *args: int) -> None:
            self._inner = real(*args)

        def decompress(self, data: bytes, max_length: int = 0) -> bytes:
            asked.append(max_length)
            return self._inner.decompress(data, max_length)

    monkeypatch.setattr(pypi.zlib, "decompressobj", Counting)
    with pytest.raises(UnexpectedMetadata):
        wheel_requires_dist(Served({URL: _wheel(b"\0" * (8 * pypi.MAX_METADATA_BYTES))}), URL)
    assert asked == [pypi.MAX_METADATA_BYTES + 1]


def test_a_stored_member_past_the_limit_is_refused() -> None:
    big = _wheel(b"\0" * (pypi.MAX_METADATA_BYTES + 1), method=zipfile.ZIP_STORED)
    with pytest.raises(UnexpectedMetadata, match="more than the 4 MiB torchenv reads"):
        wheel_requires_dist(Served({URL: big}), URL)


def test_a_pep658_file_past_the_limit_is_refused() -> None:
    read = Served({URL + ".metadata": b"\0" * (pypi.MAX_METADATA_BYTES + 1)})
    with pytest.raises(UnexpectedMetadata, match=r"\.metadata: METADATA of \d+ bytes"):
        wheel_requires_dist(read, URL)


def _corrupt(data: bytes) -> bytes:
    """The wheel with the deflated stream after the member's local header overwritten."""
    member = data.index(b"METADATA") + len(b"METADATA")
    return data[:member] + b"\xff" * 16 + data[member + 16:]


@pytest.mark.parametrize(("case", "wheel", "words"), [
    ("corrupt-deflate", lambda: _corrupt(_wheel(b"Requires-Dist: x\n" * 50)),
     "does not inflate"),
    ("not-utf8", lambda: _wheel(b"Requires-Dist: \xff\xfe\n", method=zipfile.ZIP_STORED),
     "METADATA is not UTF-8"),
    ("central-directory-cut", lambda: _wheel(b"Requires-Dist: x\n")[:-30] + b"PK\x05\x06"
     + b"\0" * 4, "no end-of-central-directory"),
    ("zip64-record-cut", lambda: b"PK\x06\x07" + b"\0" * 16 + b"PK\x05\x06" + b"\0" * 8
     + b"\xff" * 8 + b"\0" * 2, "ZIP64|cut short"),
], ids=lambda v: v if isinstance(v, str) else "")
def test_a_malformed_archive_is_an_error_naming_the_wheel(case: str,
                                                          wheel: Callable[[], bytes],
                                                          words: str) -> None:
    with pytest.raises(UnexpectedMetadata, match=words) as caught:
        wheel_requires_dist(Served({URL: wheel()}), URL)
    assert URL in str(caught.value)


# ----------------------------------------------------------------------------- names and numbers

@pytest.mark.parametrize("name", [
    f"torch-2.{DIGITS}-cp312-cp312-manylinux_2_28_x86_64.whl",
    f"torch-2.7.1+cu{DIGITS}-cp312-cp312-manylinux_2_28_x86_64.whl",
    f"torch-2.7.1-{DIGITS}-cp312-cp312-manylinux_2_28_x86_64.whl",
    f"torch-2.7.1-cp312-cp312-manylinux_2_{DIGITS}_x86_64.whl",
    "torch-2.7.1-" + "x" * 300 + ".whl",
], ids=["version", "local", "build", "glibc", "long"])
def test_a_wheel_name_with_a_huge_number_is_an_invalid_name(name: str) -> None:
    assert safe_parse_wheel(name) is None
    snap = snapshot_from_filenames("torch", [name, "torch-2.7.1-cp312-cp312-win_amd64.whl"])
    assert snap.invalid == [name]


@pytest.mark.parametrize("version", [f"2.{DIGITS}", f"{DIGITS}.0", "2.7.1." + "1." * 200])
def test_a_pypi_version_with_a_huge_number_is_not_a_release(version: str) -> None:
    assert is_final(version) is False


@pytest.mark.parametrize("value", [f">=3.{DIGITS}", f"~=3.{DIGITS}", f"==3.{DIGITS}t",
                                   ">=3.10," * 100])
def test_a_ci_python_filter_with_a_huge_number_is_bad_input(
        value: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["matrix", "ci", "--python", value]) == 2
    err = capsys.readouterr().err
    assert "--python:" in err and "is not a Python filter" in err
    assert len(err) < 600  # the value is clipped, not printed whole


# ----------------------------------------------------------------------------- the funnel

@pytest.mark.parametrize("location", ["http://[", "http://[::1", "http://127.0.0.1:port/",
                                      "https://[fe80::1%zz/x"])
def test_a_redirect_to_a_malformed_url_is_a_network_error(
        serve: Callable[[Responder], RawServer], location: str) -> None:
    def redirect(h: http.server.BaseHTTPRequestHandler) -> None:
        h.send_response(302)
        h.send_header("Location", location)
        h.end_headers()

    server = serve(redirect)
    with pytest.raises(NetworkError, match=r"not (a )?well-formed") as caught:
        Fetcher(FetchPolicy(retries=0)).get(server.base + "/simple/torch/")
    assert server.base in caught.value.message


@pytest.mark.parametrize("url", ["http://[", "https://host:port/", "https://[::1"])
def test_a_malformed_url_given_is_bad_input(url: str) -> None:
    with pytest.raises(BadInput, match="is not a well-formed URL"):
        check_url(url, allow_http=True, field="index_base")


def test_a_content_length_that_promises_more_is_bounded_by_the_timeouts(
        serve: Callable[[Responder], RawServer]) -> None:
    """Ten bytes of an announced thousand, then silence on an open connection: each attempt
    ends at the read timeout, and the request fails naming the truncation."""
    def lies(h: http.server.BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("Content-Length", "1000")
        h.end_headers()
        h.wfile.write(b"x" * 10)
        h.wfile.flush()
        time.sleep(5)

    server = serve(lies)
    started = time.monotonic()
    with pytest.raises(NetworkError, match="ended early"):
        Fetcher(FetchPolicy(read_timeout=0.5, retries=1, backoff=0, deadline=10)).get(
            server.base + "/x")
    assert time.monotonic() - started < 4
    assert server.hits == 2


def test_a_content_length_that_promises_less_reads_only_that(
        serve: Callable[[Responder], RawServer]) -> None:
    def lies(h: http.server.BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("Content-Length", "10")
        h.end_headers()
        h.wfile.write(b"y" * 100_000)
        h.wfile.flush()
        time.sleep(5)

    server = serve(lies)
    started = time.monotonic()
    resp = Fetcher(FetchPolicy(read_timeout=0.5, retries=0)).get(server.base + "/x")
    assert resp is not None and resp.body == b"y" * 10
    assert time.monotonic() - started < 2
