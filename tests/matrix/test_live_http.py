"""`matrix update`'s inputs and its network funnel under hostile conditions.

Flags and variables with values out of range are refused before any request (exit 2, one line
naming the value; with --json one error document). Against real servers on 127.0.0.1: a server
that trickles a byte a second is cut off at the request's deadline, a body that never ends is cut
off at the size limit, and a server that ignores a Range header is not downloaded from.
"""

from __future__ import annotations

import contextlib
import http.server
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from torchenv.cli import main
from torchenv.errors import BadInput, NetworkError
from torchenv.matrix.live.http import Fetcher, FetchPolicy

Responder = Callable[[http.server.BaseHTTPRequestHandler], None]


class RawServer:
    """A local HTTP server whose every path answers with ``respond(handler)``."""

    def __init__(self, respond: Responder) -> None:
        self.hits = 0
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                outer.hits += 1
                with contextlib.suppress(OSError):  # the client hung up, as it should
                    respond(self)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.base = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def serve() -> Iterator[Callable[[Responder], RawServer]]:
    servers: list[RawServer] = []

    def start(respond: Responder) -> RawServer:
        servers.append(RawServer(respond))
        return servers[-1]

    yield start
    for s in servers:
        s.close()


def trickle_body(h: http.server.BaseHTTPRequestHandler) -> None:
    """Headers at once, then a 30-byte body at one byte per second."""
    h.send_response(200)
    h.send_header("Content-Type", "text/html")
    h.send_header("Content-Length", "30")
    h.end_headers()
    for _ in range(30):
        h.wfile.write(b"x")
        h.wfile.flush()
        time.sleep(1)


def trickle_headers(h: http.server.BaseHTTPRequestHandler) -> None:
    """The status line and headers at one byte per second."""
    for byte in b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 2\r\n\r\nok":
        h.wfile.write(bytes([byte]))
        h.wfile.flush()
        time.sleep(1)


def endless(h: http.server.BaseHTTPRequestHandler) -> None:
    """A body without a length that never ends (until the client hangs up)."""
    h.send_response(200)
    h.send_header("Content-Type", "text/html")
    h.send_header("Connection", "close")
    h.end_headers()
    chunk = b"<a>x</a>" * 8192
    for _ in range(100_000):
        h.wfile.write(chunk)


def huge_length(h: http.server.BaseHTTPRequestHandler) -> None:
    h.send_response(200)
    h.send_header("Content-Type", "text/html")
    h.send_header("Content-Length", str(10 * 1024**3))
    h.end_headers()
    h.wfile.write(b"<html>")


def absurd_length(h: http.server.BaseHTTPRequestHandler) -> None:
    h.send_response(200)
    h.send_header("Content-Type", "text/html")
    h.send_header("Content-Length", "9" * 5000)  # past int()'s 4300-digit limit
    h.end_headers()
    h.wfile.write(b"<html></html>")
    h.close_connection = True


def ignores_range(h: http.server.BaseHTTPRequestHandler) -> None:
    h.send_response(200)
    h.send_header("Content-Type", "application/octet-stream")
    h.send_header("Content-Length", str(1024 * 1024))
    h.end_headers()
    h.wfile.write(b"\0" * 1024 * 1024)


# --- the overall deadline --------------------------------------------------------------------


@pytest.mark.parametrize("respond", [trickle_body, trickle_headers], ids=["body", "headers"])
def test_a_trickling_server_is_cut_off_at_the_deadline(
        serve: Callable[[Responder], RawServer], respond: Responder) -> None:
    server = serve(respond)
    # each byte arrives well inside the read timeout: only the deadline can end this
    fetcher = Fetcher(FetchPolicy(read_timeout=5, deadline=1.5, retries=3, backoff=0))
    start = time.monotonic()
    try:
        with pytest.raises(NetworkError) as info:
            fetcher.get(f"{server.base}/whl/torch/")
    finally:
        fetcher.close()
    elapsed = time.monotonic() - start
    assert 1.4 < elapsed < 3.0
    assert f"{server.base}/whl/torch/: no complete answer within the 1.5 s deadline" in str(
        info.value)
    assert "TORCHENV_HTTP_DEADLINE" in (info.value.hint or "")
    assert server.hits == 1  # a deadline is not retried


def test_cli_deadline_from_the_environment(serve: Callable[[Responder], RawServer],
                                           capsys: pytest.CaptureFixture[str],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    server = serve(trickle_body)
    monkeypatch.setenv("TORCHENV_HTTP_DEADLINE", "1.5")
    monkeypatch.setenv("TORCHENV_HTTP_TIMEOUT", "5")
    start = time.monotonic()
    code = main(["matrix", "update", "--check", "--quiet", "--index-base", f"{server.base}/whl",
                 "--pypi-base", server.base])
    _, err = capsys.readouterr()
    assert time.monotonic() - start < 3.0
    assert code == 4  # a network error
    assert f"{server.base}/whl/torch/: no complete answer within the 1.5 s deadline" in err


# --- the size limit --------------------------------------------------------------------------


def test_an_endless_body_is_cut_off_at_the_size_limit(
        serve: Callable[[Responder], RawServer]) -> None:
    server = serve(endless)
    fetcher = Fetcher(FetchPolicy(max_bytes=256 * 1024, retries=0))
    start = time.monotonic()
    try:
        with pytest.raises(NetworkError, match=r"/whl/torch/: the response goes on past the "
                           r"256 KiB torchenv reads of one response; reading stopped"):
            fetcher.get(f"{server.base}/whl/torch/")
    finally:
        fetcher.close()
    assert time.monotonic() - start < 2.0


def test_an_announced_huge_body_is_refused_unread(
        serve: Callable[[Responder], RawServer]) -> None:
    server = serve(huge_length)
    fetcher = Fetcher(FetchPolicy(max_bytes=1024 * 1024, retries=0))
    try:
        with pytest.raises(NetworkError, match=r"announces 10737418240 bytes, more than the "
                           r"1 MiB torchenv reads"):
            fetcher.get(f"{server.base}/whl/torch/")
    finally:
        fetcher.close()


def test_a_content_length_that_is_no_number_is_ignored(
        serve: Callable[[Responder], RawServer]) -> None:
    """5,000 digits are no length any response has: the header is not read as a number (no
    ValueError from int()), and the body is read, bounded, as if it were missing."""
    server = serve(absurd_length)
    fetcher = Fetcher(FetchPolicy(max_bytes=1024 * 1024, retries=0))
    try:
        assert fetcher.get(f"{server.base}/whl/torch/").body == b"<html></html>"
    finally:
        fetcher.close()


def test_a_server_ignoring_range_is_not_downloaded_from(
        serve: Callable[[Responder], RawServer]) -> None:
    server = serve(ignores_range)
    fetcher = Fetcher(FetchPolicy(retries=0))
    try:
        with pytest.raises(NetworkError, match=r"ignored the Range header \(HTTP 200\)"):
            fetcher.get(f"{server.base}/x.whl", byte_range="-65536")
    finally:
        fetcher.close()


# --- flags and variables ---------------------------------------------------------------------


def _closed_port() -> str:
    """A local URL where nothing listens: a run that got past input checking fails fast."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


def _update(capsys: pytest.CaptureFixture[str], *extra: str, as_json: bool = False
            ) -> tuple[int, str, str]:
    base = _closed_port()
    argv = ["matrix", "update", "--check", "--quiet", "--index-base", f"{base}/whl",
            "--pypi-base", base, *extra, *(["--json"] if as_json else [])]
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(autouse=True)
def _quick(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("TORCHENV_HTTP_TIMEOUT", "TORCHENV_HTTP_DEADLINE", "TORCHENV_HTTP_RETRIES",
                 "TORCHENV_HTTP_BACKOFF"):
        monkeypatch.delenv(name, raising=False)


def _assert_refused(code: int, out: str, err: str, *words: str, as_json: bool) -> None:
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    for word in words:
        assert word in lines[0]
    if as_json:
        doc = json.loads(out)  # exactly one document: anything more does not parse
        assert doc["exit_code"] == 2
        assert all(word in doc["error"] for word in words)
    else:
        assert out == ""


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
@pytest.mark.parametrize("value", ["0", "nan", "inf", "-1", "-inf", "601", "1e999", "abc"])
def test_bad_timeout_is_refused_naming_it(capsys: pytest.CaptureFixture[str], value: str,
                                          as_json: bool) -> None:
    code, out, err = _update(capsys, f"--timeout={value}", as_json=as_json)
    _assert_refused(code, out, err, "--timeout", repr(value), "(0, 600]", as_json=as_json)


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
@pytest.mark.parametrize("value", ["abc", "2.x"])  # an empty one: tests/cli/test_parser.py
def test_bad_since_is_refused_naming_it(capsys: pytest.CaptureFixture[str], value: str,
                                        as_json: bool) -> None:
    code, out, err = _update(capsys, f"--since={value}", as_json=as_json)
    _assert_refused(code, out, err, "--since", repr(value), as_json=as_json)


@pytest.mark.parametrize(("name", "value", "bounds"), [
    ("TORCHENV_HTTP_BACKOFF", "-1", "[0, 60]"),
    ("TORCHENV_HTTP_BACKOFF", "abc", "[0, 60]"),
    ("TORCHENV_HTTP_BACKOFF", "1e9", "[0, 60]"),
    ("TORCHENV_HTTP_BACKOFF", "nan", "[0, 60]"),
    ("TORCHENV_HTTP_BACKOFF", "inf", "[0, 60]"),
    ("TORCHENV_HTTP_RETRIES", "-1", "0 to 10"),
    ("TORCHENV_HTTP_RETRIES", "11", "0 to 10"),
    ("TORCHENV_HTTP_RETRIES", "1000000", "0 to 10"),
    ("TORCHENV_HTTP_RETRIES", "1.5", "0 to 10"),
    ("TORCHENV_HTTP_RETRIES", "three", "0 to 10"),
    ("TORCHENV_HTTP_TIMEOUT", "0", "(0, 600]"),
    ("TORCHENV_HTTP_TIMEOUT", "nan", "(0, 600]"),
    ("TORCHENV_HTTP_TIMEOUT", "inf", "(0, 600]"),
    ("TORCHENV_HTTP_TIMEOUT", "-1", "(0, 600]"),
    ("TORCHENV_HTTP_DEADLINE", "0", "(0, 3600]"),
    ("TORCHENV_HTTP_DEADLINE", "1e6", "(0, 3600]"),
], ids=lambda v: str(v))
@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_bad_network_variable_is_refused_naming_it(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, name: str,
        value: str, bounds: str, as_json: bool) -> None:
    monkeypatch.setenv(name, value)
    code, out, err = _update(capsys, as_json=as_json)
    _assert_refused(code, out, err, name, repr(value), bounds, as_json=as_json)


def test_empty_variables_mean_unset() -> None:
    names = ("TORCHENV_HTTP_TIMEOUT", "TORCHENV_HTTP_DEADLINE", "TORCHENV_HTTP_RETRIES",
             "TORCHENV_HTTP_BACKOFF")
    assert FetchPolicy.from_env(dict.fromkeys(names, "")) == FetchPolicy()
    assert FetchPolicy.from_env(dict.fromkeys(names, "  ")) == FetchPolicy()


def test_empty_variables_run_with_the_defaults(capsys: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("TORCHENV_HTTP_TIMEOUT", "TORCHENV_HTTP_DEADLINE", "TORCHENV_HTTP_RETRIES",
                 "TORCHENV_HTTP_BACKOFF", "TORCHENV_INDEX_BASE", "TORCHENV_PYPI_BASE"):
        monkeypatch.setenv(name, "")
    monkeypatch.setenv("TORCHENV_HTTP_RETRIES", "0")  # nothing listens: fail at once
    code, _, err = _update(capsys)
    assert code == 4  # past input checking, at the (refused) connection
    assert "cannot connect" in err


def test_values_at_the_bounds_are_taken() -> None:
    policy = FetchPolicy.from_env({"TORCHENV_HTTP_TIMEOUT": "600", "TORCHENV_HTTP_RETRIES": "10",
                                   "TORCHENV_HTTP_BACKOFF": "0", "TORCHENV_HTTP_DEADLINE": "3600"})
    assert (policy.read_timeout, policy.retries, policy.backoff, policy.deadline) == (
        600.0, 10, 0.0, 3600.0)
    assert policy.connect_timeout == FetchPolicy().connect_timeout
    with pytest.raises(BadInput, match="TORCHENV_HTTP_RETRIES: '11'"):
        FetchPolicy.from_env({"TORCHENV_HTTP_RETRIES": "11"})
