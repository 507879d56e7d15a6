"""`torchenv matrix update` against a local index server (127.0.0.1, port 0).

The torch page is written from the embedded matrix itself (so it has no differences), then
differences are planted: a new release, a new variant of an existing release, a new platform of
an existing variant. `--check` must report exactly those; `update` must write an overlay that
validates and makes the next `--check` clean.
"""

from __future__ import annotations

import http.server
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from torchenv.cli import main
from torchenv.matrix.live.derive import pypi_release, snapshot_from_filenames
from torchenv.matrix.live.wheels import MalformedPage, manylinux_floor, page_filenames, parse_wheel
from torchenv.matrix.loader import load_matrix

FIXTURES = Path(__file__).parent / "data"  # copied from shared/fixtures/index (see SOURCES.md)
REAL_NAME = "torch-2.7.1+cu128-cp312-cp312-manylinux_2_28_x86_64.whl"

_PLATFORM_TAGS = {
    "linux-x86_64": "manylinux_2_28_x86_64",
    "linux-aarch64": "manylinux_2_28_aarch64",
    "win-amd64": "win_amd64",
    "macos-arm64": "macosx_11_0_arm64",
    "macos-x86_64": "macosx_10_9_x86_64",
}

NEW_RELEASE = "2.99.0"


def _wheel(project: str, version: str, variant: str | None, python: str, platform: str) -> str:
    digits = python.rstrip("t").replace(".", "")
    abi = f"cp{digits}{'t' if python.endswith('t') else ''}"
    local = f"+{variant}" if variant else ""
    return f"{project}-{version}{local}-cp{digits}-{abi}-{_PLATFORM_TAGS[platform]}.whl"


def _matrix_filenames() -> list[str]:
    """Every labelled torch wheel the embedded matrix says the index has, plus macOS wheels."""
    matrix = load_matrix(overlay=False)
    names = []
    for rel in matrix.releases:
        for v in rel.variants:
            for plat in v.platforms:
                for py in rel.python_tags(plat, v) or ("3.12",):
                    names.append(_wheel("torch", rel.torch, v.name, py, plat))
        for py in rel.python_tags("macos-arm64"):
            names.append(_wheel("torch", rel.torch, None, py, "macos-arm64"))
    return names


def _planted() -> tuple[list[str], dict[str, Any]]:
    matrix = load_matrix(overlay=False)
    newest = matrix.releases[0]
    # an existing variant gains a platform it does not list
    target = next(v for r in matrix.releases for v in r.variants
                  if v.name.startswith("rocm") and "linux-aarch64" not in v.platforms)
    target_rel = next(r for r in matrix.releases if target in r.variants)
    names = _matrix_filenames()
    names += [_wheel("torch", NEW_RELEASE, var, py, plat)
              for var, plats in (("cpu", ("linux-x86_64", "linux-aarch64", "win-amd64")),
                                 ("cu130", ("linux-x86_64", "win-amd64")))
              for plat in plats for py in ("3.10", "3.11", "3.12", "3.13", "3.13t")]
    names += [_wheel("torch", newest.torch, "cu199", py, "linux-x86_64")
              for py in ("3.12", "3.13")]
    names += [_wheel("torch", target_rel.torch, target.name, "3.12", "linux-aarch64")]
    # noise that must be ignored: pre-releases, unknown labels, other platforms, sdists
    names += [
        "torch-3.0.0.dev20990101+cpu-cp312-cp312-manylinux_2_28_x86_64.whl",
        f"torch-{newest.torch}+cpu.cxx11.abi-cp312-cp312-linux_x86_64.whl",
        f"torch-{newest.torch}+cpu-cp312-cp312-manylinux_2_28_s390x.whl",
        "torch-1.0.0-cp27-cp27mu-manylinux1_x86_64.whl",
        "torch-0.1.2.tar.gz",
    ]
    expected = {
        "new_releases": [NEW_RELEASE],
        "new_variants": [{"torch": newest.torch, "variant": "cu199",
                          "platforms": ["linux-x86_64"]}],
        "new_platforms": [{"torch": target_rel.torch, "variant": target.name,
                           "platforms": ["linux-aarch64"]}],
    }
    return names, expected


def html_page(names: list[str], project: str) -> bytes:
    links = "\n".join(f'    <a href="/whl/{n.replace("+", "%2B")}#sha256=00">{n}</a><br/>'
                      for n in names)
    return (f"<!DOCTYPE html>\n<html>\n  <body>\n    <h1>Links for {project}</h1>\n{links}\n"
            "  </body>\n</html>\n").encode()


def json_page(names: list[str], project: str) -> bytes:
    return json.dumps({"meta": {"api-version": "1.1"}, "name": project,
                       "files": [{"filename": n, "url": f"/whl/{n}", "hashes": {}}
                                 for n in names]}).encode()


def pypi_doc(project: str, version: str, requires: list[str], files: list[str]) -> bytes:
    return json.dumps({
        "info": {"name": project, "version": version, "requires_dist": requires,
                 "requires_python": ">=3.10"},
        "urls": [{"filename": f, "upload_time_iso_8601": "2099-01-02T10:00:00.000000Z"}
                 for f in files],
    }).encode()


class Route:
    """Answers for one path, used in order; the last one repeats."""

    def __init__(self, *answers: tuple[Any, ...]) -> None:
        self.answers = list(answers)
        self.hits = 0

    def next(self) -> tuple[Any, ...]:
        self.hits += 1
        return self.answers[min(self.hits - 1, len(self.answers) - 1)]


class Server:
    def __init__(self) -> None:
        self.routes: dict[str, Route] = {}
        self.format = "html"
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                route = outer.routes.get(self.path)
                if route is None:
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                kind, *rest = route.next()
                if kind == "hang":
                    time.sleep(rest[0])
                    return
                if kind == "redirect":
                    self.send_response(302)
                    self.send_header("Location", rest[0])
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                status, ctype, body = rest
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.base = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def page(self, project: str, names: list[str], fmt: str | None = None) -> tuple[Any, ...]:
        if (fmt or self.format) == "json":
            return ("ok", 200, "application/vnd.pypi.simple.v1+json", json_page(names, project))
        return ("ok", 200, "text/html", html_page(names, project))

    def serve_index(self, names: list[str], fmt: str = "html") -> None:
        self.format = fmt
        self.routes["/whl/torch/"] = Route(self.page("torch", names))
        vision = [_wheel("torchvision", "0.114.0", "cpu", "3.12", "linux-x86_64"),
                  _wheel("torchvision", "0.114.1", "cpu", "3.12", "linux-x86_64")]
        audio = [_wheel("torchaudio", NEW_RELEASE, "cpu", "3.12", "linux-x86_64")]
        self.routes["/whl/torchvision/"] = Route(self.page("torchvision", vision))
        self.routes["/whl/torchaudio/"] = Route(self.page("torchaudio", audio))
        marker = 'platform_system == "Linux" and platform_machine == "x86_64"'
        torch_files = [_wheel("torch", NEW_RELEASE, None, py, plat)
                       for plat in ("linux-x86_64", "linux-aarch64", "win-amd64", "macos-arm64")
                       for py in ("3.10", "3.11", "3.12", "3.13", "3.13t")]
        self.routes[f"/pypi/torch/{NEW_RELEASE}/json"] = Route(("ok", 200, "application/json",
            pypi_doc("torch", NEW_RELEASE, [f"nvidia-cuda-runtime-cu13==13.0.48; {marker}",
                                            "filelock"], torch_files)))
        self.routes["/pypi/torchvision/0.114.1/json"] = Route(("ok", 200, "application/json",
            pypi_doc("torchvision", "0.114.1", ["torch==2.99.1"], [])))
        self.routes["/pypi/torchvision/0.114.0/json"] = Route(("ok", 200, "application/json",
            pypi_doc("torchvision", "0.114.0", ["numpy", "torch==2.99.0"], [])))
        self.routes[f"/pypi/torchaudio/{NEW_RELEASE}/json"] = Route(("ok", 200,
            "application/json", pypi_doc("torchaudio", NEW_RELEASE, ["torch==2.99.0"], [])))

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server() -> Iterator[Server]:
    s = Server()
    yield s
    s.close()


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TORCHENV_MATRIX_OVERLAY", str(tmp_path / "overlay.yaml"))
    monkeypatch.setenv("TORCHENV_HTTP_BACKOFF", "0.01")
    monkeypatch.setenv("TORCHENV_HTTP_TIMEOUT", "2")
    monkeypatch.delenv("TORCHENV_INDEX_BASE", raising=False)


def _run(server: Server, *extra: str) -> list[str]:
    return ["matrix", "update", "--index-base", f"{server.base}/whl", "--pypi-base",
            server.base, "--quiet", *extra]


def _cli(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, Any, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    doc = json.loads(out) if "--json" in argv and out.strip() else out
    return code, doc, err


# --- pure parsers on real material -----------------------------------------------------------


def test_parse_wheel_real_names() -> None:
    (w,) = parse_wheel(REAL_NAME)
    assert (w.project, w.version, w.variant, w.python, w.platform, w.manylinux) == (
        "torch", "2.7.1", "cu128", "3.12", "linux-x86_64", "2.28")
    (ft,) = parse_wheel("torch-2.7.1+cpu-cp313-cp313t-manylinux_2_28_aarch64.whl")
    assert (ft.python, ft.platform) == ("3.13t", "linux-aarch64")
    (mac,) = parse_wheel("torch-2.7.1-cp312-none-macosx_11_0_arm64.whl")
    assert (mac.variant, mac.platform, mac.manylinux) == (None, "macos-arm64", None)
    assert parse_wheel("torch-2.7.1-cp312-cp312-win32.whl") == []


@pytest.mark.parametrize(("tag", "floor"), [
    ("manylinux_2_28_x86_64", "2.28"), ("manylinux2014_aarch64", "2.17"),
    ("manylinux1_x86_64", "2.5"), ("manylinux2010_x86_64", "2.12"), ("linux_x86_64", None),
], ids=["pep600", "2014", "1", "2010", "bare-linux"])
def test_manylinux_floor(tag: str, floor: str | None) -> None:
    assert manylinux_floor(tag) == floor


def test_real_index_excerpt_parses() -> None:
    raw = next(FIXTURES.glob("download_pytorch_org_whl_torch_*.html")).read_bytes()
    page = b"<!DOCTYPE html><html><body>" + raw + b"</body></html>\n"
    names = page_filenames("https://x/whl/torch/", page, "text/html")
    assert names
    assert all(n.startswith("torch-2.7.0+cu128-") for n in names)
    snap = snapshot_from_filenames("torch", names)
    assert set(snap.builds["2.7.0"]["cu128"]) >= {"linux-x86_64", "win-amd64"}
    # the excerpt as stored has no closing tags: a cut page is an error naming the URL
    with pytest.raises(MalformedPage, match=r"https://x/whl/torch/: .*truncated"):
        page_filenames("https://x/whl/torch/", raw, "text/html")


def test_pypi_json_fixture_gives_cuda_default() -> None:
    doc = json.loads((FIXTURES / "pypi_json_torch_2.6.0_info_abridged.json").read_text())
    doc["urls"] = [{"filename": "torch-2.6.0-cp312-cp312-manylinux1_x86_64.whl",
                    "upload_time_iso_8601": "2025-01-29T16:23:00Z"},
                   {"filename": "torch-2.6.0-cp312-none-macosx_11_0_arm64.whl",
                    "upload_time_iso_8601": "2025-01-29T16:25:00Z"}]
    rel = pypi_release("u", doc)
    assert rel.pypi_default == {"linux-x86_64": "cu124", "macos-arm64": "cpu"}
    assert rel.manylinux == {"linux-x86_64": "2.5"}
    assert rel.released == "2025-01-29"
    assert rel.requires_python == ">=3.9.0"


# --- against the local server ----------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["html", "json"], ids=["pep503", "pep691"])
def test_check_reports_exactly_the_planted_differences(
        server: Server, capsys: pytest.CaptureFixture[str], fmt: str) -> None:
    names, expected = _planted()
    server.serve_index(names, fmt)
    code, doc, _ = _cli(capsys, _run(server, "--check", "--json"))
    assert code == 1
    assert doc["differences"] == expected
    assert doc["written"] is False
    assert not Path(doc["overlay"]).exists()


def test_check_clean_index_exits_0(server: Server, capsys: pytest.CaptureFixture[str]) -> None:
    server.serve_index(_matrix_filenames())
    code, out, _ = _cli(capsys, _run(server, "--check"))
    assert code == 0
    assert "current" in out


def test_update_writes_a_valid_overlay_then_check_is_clean(
        server: Server, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    names, expected = _planted()
    server.serve_index(names, "json")
    out_file = tmp_path / "out" / "overlay.yaml"
    code, doc, _ = _cli(capsys, _run(server, "--json", "--output", str(out_file)))
    assert code == 0, doc
    assert doc["written"] is True
    assert out_file.is_file()
    matrix = load_matrix(overlay=out_file)
    assert matrix.overlay_error is None
    new = matrix.release(NEW_RELEASE)
    assert new is not None
    assert (new.torchvision, new.torchaudio, new.released) == ("0.114.0", NEW_RELEASE,
                                                               "2099-01-02")
    assert new.pypi_default["linux-x86_64"] == "cu130"
    assert new.python["linux-x86_64"] == ("3.10", "3.11", "3.12", "3.13", "3.13t")
    cu130 = new.variant("cu130")
    assert cu130 is not None
    assert (cu130.status, cu130.arch_list) == ("unverified", None)
    added = expected["new_variants"][0]
    v = matrix.release(added["torch"]).variant("cu199")  # type: ignore[union-attr]
    assert v is not None
    assert v.status == "unverified"
    moved = expected["new_platforms"][0]
    rel = matrix.release(moved["torch"])
    assert rel is not None
    assert "linux-aarch64" in rel.variant(moved["variant"]).platforms  # type: ignore[union-attr]
    # the siblings of a split variant set keep their variants unchanged
    embedded = load_matrix(overlay=False)
    for old in embedded.releases:
        now = matrix.release(old.torch)
        assert now is not None
        assert {x.name for x in old.variants} <= {x.name for x in now.variants}
    # and the next check against the same index finds nothing
    code, doc, _ = _cli(capsys, _run(server, "--check", "--json", "--output", str(out_file)))
    assert code == 0
    assert doc["differences"] == {
        "new_releases": [], "new_variants": [], "new_platforms": []}


def test_truncated_page_errors_and_keeps_the_old_overlay(
        server: Server, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    names, _ = _planted()
    server.serve_index(names)
    good = tmp_path / "overlay.yaml"
    good.write_text("schema_version: 1\nmatrix_version: '2026-01-01'\nreleases: []\n")
    body = html_page(names, "torch")
    server.routes["/whl/torch/"] = Route(("ok", 200, "text/html", body[: len(body) // 2]))
    code, _, err = _cli(capsys, _run(server))
    assert code == 1
    assert f"{server.base}/whl/torch/" in err
    assert "truncated" in err
    assert good.read_text().startswith("schema_version: 1\nmatrix_version: '2026-01-01'")
    assert not (tmp_path / "overlay.yaml.bak").exists()


def test_server_error_then_success_is_retried(server: Server,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    names, expected = _planted()
    server.serve_index(names)
    page = server.routes["/whl/torch/"].answers[0]
    server.routes["/whl/torch/"] = Route(("ok", 500, "text/plain", b"oops"),
                                         ("ok", 503, "text/plain", b"busy"), page)
    code, doc, _ = _cli(capsys, _run(server, "--check", "--json"))
    assert code == 1
    assert doc["differences"] == expected
    assert server.routes["/whl/torch/"].hits == 3


def test_hanging_server_times_out(server: Server, capsys: pytest.CaptureFixture[str],
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TORCHENV_HTTP_RETRIES", "1")
    server.serve_index(_matrix_filenames())
    server.routes["/whl/torch/"] = Route(("hang", 3.0))
    start = time.monotonic()
    code, _, err = _cli(capsys, _run(server, "--timeout", "0.3"))
    assert time.monotonic() - start < 2.5
    assert code == 1
    assert "timed out" in err
    assert "gave up after 2 attempts" in err
    assert "offline" in err


def test_redirect_to_plain_http_is_refused(server: Server,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    server.serve_index(_matrix_filenames())
    server.routes["/whl/torch/"] = Route(("redirect", "http://mirror.example.com/whl/torch/"))
    code, _, err = _cli(capsys, _run(server, "--check"))
    assert code == 1
    assert "redirected to http://mirror.example.com/whl/torch/; refused" in err


def test_plain_http_base_is_refused_without_allow_http(capsys: pytest.CaptureFixture[str]
                                                       ) -> None:
    code = main(["matrix", "update", "--index-base", "http://mirror.example.com/whl",
                 "--check", "--quiet"])
    _, err = capsys.readouterr()
    assert code == 2
    assert "refusing plain HTTP http://mirror.example.com/whl/" in err
    assert "--allow-http" in err


def test_connection_refused_says_offline(capsys: pytest.CaptureFixture[str],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TORCHENV_HTTP_RETRIES", "1")
    s = Server()
    base = s.base
    s.close()  # nothing listens on that port now
    code = main(["matrix", "update", "--index-base", f"{base}/whl", "--pypi-base", base,
                 "--check", "--quiet"])
    _, err = capsys.readouterr()
    assert code == 1
    assert "cannot connect" in err
    assert "offline" in err
