"""`torchenv matrix update` against a local index server (127.0.0.1, port 0).

The torch page is written from the embedded matrix itself (so it has no differences), then
differences are planted: a new release, a new variant of an existing release, a new platform of
an existing variant. `--check` must report exactly those; `update` must write an overlay that
validates and makes the next `--check` clean. PyPI's JSON API is served from the same matrix
(`/pypi/<project>/json`, with the core metadata of the wheels the update reads), so Python-tag
changes can be planted there too.
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
import yaml
from packaging.version import Version

from torchenv.cli import main
from torchenv.matrix.live.derive import snapshot_from_filenames
from torchenv.matrix.live.pypi import PypiFile, derive_release
from torchenv.matrix.live.wheels import (
    MalformedPage,
    manylinux_floor,
    page_filenames,
    parse_wheel,
    python_sort_key,
)
from torchenv.matrix.loader import load_matrix
from torchenv.values import Platform, TorchVersion, VariantName

FIXTURES = Path(__file__).parent / "data"  # copied from shared/fixtures/index (see SOURCES.md)
REAL_NAME = "torch-2.7.1+cu128-cp312-cp312-manylinux_2_28_x86_64.whl"

_PLATFORM_TAGS = {
    "linux-x86_64": "manylinux_2_28_x86_64",
    "linux-aarch64": "manylinux_2_28_aarch64",
    "win-amd64": "win_amd64",
    "macos-arm64": "macosx_11_0_arm64",
    "macos-x86_64": "macosx_10_9_x86_64",
}

LINUX, ARM64, WINDOWS = Platform("linux-x86_64"), Platform("linux-aarch64"), Platform("win-amd64")

NEW_RELEASE = "2.99.0"


def _wheel(project: str, version: object, variant: object | None, python: str,
           platform: object) -> str:
    digits = python.rstrip("t").replace(".", "")
    abi = f"cp{digits}{'t' if python.endswith('t') else ''}"
    local = f"+{variant}" if variant else ""
    return f"{project}-{version}{local}-cp{digits}-{abi}-{_PLATFORM_TAGS[str(platform)]}.whl"


def _matrix_filenames() -> list[str]:
    """Every labelled torch wheel the embedded matrix says the index has, plus macOS wheels."""
    matrix = load_matrix(overlay=False)
    names = []
    for rel in matrix.releases:
        for v in rel.variants:
            for plat in v.platforms:
                for py in rel.python_tags(plat, v) or ("3.12",):
                    names.append(_wheel("torch", rel.torch, v.name, py, plat))
        for py in rel.python_tags(Platform("macos-arm64")):
            names.append(_wheel("torch", rel.torch, None, py, "macos-arm64"))
    return names


def _planted() -> tuple[list[str], dict[str, Any]]:
    matrix = load_matrix(overlay=False)
    newest = matrix.releases[0]
    # an existing variant gains a platform it does not list
    target = next(v for r in matrix.releases for v in r.variants
                  if v.kind == "rocm" and ARM64 not in v.platforms)
    target_rel = next(r for r in matrix.releases if target in r.variants)
    # a CUDA variant with a confirmed arch list gains a platform: that platform's list is not
    # known from file names
    cuda_rel, cuda, cuda_plat = next(
        (r, v, p) for r in matrix.releases for v in r.variants
        for p in (ARM64, WINDOWS)
        if v.kind == "cuda" and p not in v.platforms and p not in v.arch_list_by_platform
        and v.arch_fact(LINUX).sass == "confirmed")
    names = _matrix_filenames()
    names += [_wheel("torch", NEW_RELEASE, var, py, plat)
              for var, plats in (("cpu", ("linux-x86_64", "linux-aarch64", "win-amd64")),
                                 ("cu130", ("linux-x86_64", "win-amd64")))
              for plat in plats for py in ("3.10", "3.11", "3.12", "3.13", "3.13t")]
    names += [_wheel("torch", newest.torch, "cu199", py, "linux-x86_64")
              for py in ("3.12", "3.13")]
    names += [_wheel("torch", target_rel.torch, target.name, "3.12", "linux-aarch64")]
    names += [_wheel("torch", cuda_rel.torch, cuda.name, py, cuda_plat)
              for py in cuda_rel.python_tags(cuda_plat)]
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
        "new_variants": [{"torch": str(newest.torch), "variant": "cu199",
                          "platforms": ["linux-x86_64"]}],
        "new_platforms": sorted(
            [{"torch": str(target_rel.torch), "variant": str(target.name),
              "platforms": ["linux-aarch64"]},
             {"torch": str(cuda_rel.torch), "variant": str(cuda.name),
              "platforms": [str(cuda_plat)]}],
            key=lambda d: ([-n for n in Version(d["torch"]).release], d["variant"])),
        "python_changes": [],
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


def pypi_project(project: str, releases: dict[str, list[tuple[str, str]]],
                 info: dict[str, Any] | None = None) -> bytes:
    """A `/pypi/<project>/json` document: version -> [(file name, upload time)]."""
    return json.dumps({
        "info": {"name": project, "version": max(releases, default="0"), **(info or {})},
        "releases": {v: [{"filename": f, "url": f"../../files/{f}", "yanked": False,
                          "upload_time_iso_8601": t, "requires_python": ">=3.10"}
                         for f, t in files]
                     for v, files in releases.items()},
    }).encode()


def metadata(project: str, version: str, requires: list[str]) -> bytes:
    lines = ["Metadata-Version: 2.1", f"Name: {project}", f"Version: {version}",
             *(f"Requires-Dist: {r}" for r in requires)]
    return ("\n".join(lines) + "\n\n").encode()


def matrix_pypi_files() -> dict[str, list[tuple[str, str]]]:
    """torch's files on PyPI as the embedded matrix describes them."""
    matrix = load_matrix(overlay=False)
    return {str(rel.torch): [(_wheel("torch", rel.torch, None, py, plat),
                              f"{rel.released}T12:00:00Z")
                             for plat, tags in rel.python.items() for py in tags]
            for rel in matrix.releases}


NEW_TAGS = ("3.10", "3.11", "3.12", "3.13", "3.13t")
NEW_PLATFORMS = ("linux-x86_64", "linux-aarch64", "win-amd64", "macos-arm64")
# the x86_64 wheels pull CUDA 13.0, the aarch64 ones are the CPU build: read per wheel, as
# PyPI's `info.requires_dist` (one file's metadata) would say cu130 for both
X86_REQUIRES = ['nvidia-cuda-runtime-cu13==13.0.48; platform_system == "Linux" and '
                'platform_machine == "x86_64"', "filelock"]
AARCH64_REQUIRES = ["filelock"]


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
        self.default_metadata: bytes | None = None  # for any wheel without its own
        self.format = "html"
        self.requests: list[str] = []  # every path asked for, in order
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                outer.requests.append(self.path)
                route = outer.routes.get(self.path)
                if route is None and self.path.endswith(".whl.metadata") \
                        and outer.default_metadata is not None:
                    route = Route(("ok", 200, "text/plain", outer.default_metadata))
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

    def json(self, path: str, body: bytes) -> None:
        self.routes[path] = Route(("ok", 200, "application/json", body))

    def file(self, name: str, body: bytes) -> None:
        self.routes[f"/files/{name}"] = Route(("ok", 200, "application/octet-stream", body))

    def serve_index(self, names: list[str], fmt: str = "html",
                    torch_files: dict[str, list[tuple[str, str]]] | None = None) -> None:
        """The index pages for ``names``, and PyPI: the matrix's releases (or ``torch_files``)
        plus the planted new release, its companions and the metadata the update reads."""
        self.format = fmt
        self.routes["/whl/torch/"] = Route(self.page("torch", names))
        vision = [_wheel("torchvision", "0.114.0", "cpu", "3.12", "linux-x86_64"),
                  _wheel("torchvision", "0.114.1", "cpu", "3.12", "linux-x86_64")]
        audio = [_wheel("torchaudio", NEW_RELEASE, "cpu", "3.12", "linux-x86_64")]
        self.routes["/whl/torchvision/"] = Route(self.page("torchvision", vision))
        self.routes["/whl/torchaudio/"] = Route(self.page("torchaudio", audio))
        uploaded = "2099-01-02T10:00:00.000000Z"
        files = dict(matrix_pypi_files() if torch_files is None else torch_files)
        files[NEW_RELEASE] = [(_wheel("torch", NEW_RELEASE, None, py, plat), uploaded)
                              for plat in NEW_PLATFORMS for py in NEW_TAGS]
        self.json("/pypi/torch/json", pypi_project("torch", files,
                                                   {"requires_dist": X86_REQUIRES}))
        for py in (NEW_TAGS[0], NEW_TAGS[-1]):
            for plat, requires in (("linux-x86_64", X86_REQUIRES),
                                   ("linux-aarch64", AARCH64_REQUIRES)):
                name = _wheel("torch", NEW_RELEASE, None, py, plat)
                self.file(name + ".metadata", metadata("torch", NEW_RELEASE, requires))
        companions = {
            "torchvision": {"0.114.0": ["numpy", "torch==2.99.0"], "0.114.1": ["torch==2.99.1"]},
            "torchaudio": {NEW_RELEASE: ["torch==2.99.0"]},
        }
        for project, pins in companions.items():
            releases = {}
            for version, requires in pins.items():
                name = f"{project}-{version}-py3-none-any.whl"
                releases[version] = [(name, uploaded)]
                self.file(name + ".metadata", metadata(project, version, requires))
            self.json(f"/pypi/{project}/json", pypi_project(project, releases))

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
    """The torch part only; the companion part has its own tests (test_update_companions.py)."""
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


def test_a_pep691_page_nested_past_any_index_is_malformed() -> None:
    page = b"[" * 200_000 + b"]" * 200_000
    with pytest.raises(MalformedPage, match=r"https://x/whl/torch/: not valid JSON"):
        page_filenames("https://x/whl/torch/", page, "application/vnd.pypi.simple.v1+json")


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
    """The fixture's Requires-Dist, as the metadata of 2.6.0's x86_64 wheel, says cu124."""
    requires = json.loads((FIXTURES / "pypi_json_torch_2.6.0_info_abridged.json").read_text()
                          )["info"]["requires_dist"]
    files = [PypiFile(name, f"https://files.example/{name}", "2025-01-29T16:23:00Z",
                      requires_python=">=3.9.0")
             for name in ("torch-2.6.0-cp312-cp312-manylinux1_x86_64.whl",
                          "torch-2.6.0-cp312-none-macosx_11_0_arm64.whl")]
    served = {f"https://files.example/{files[0].filename}.metadata":
              metadata("torch", "2.6.0", requires)}
    rel = derive_release("2.6.0", files, lambda url, _range: served.get(url), {})
    assert rel is not None
    assert dict(rel.pypi_default) == {"linux-x86_64": "cu124", "macos-arm64": "cpu"}
    assert dict(rel.manylinux) == {"linux-x86_64": "2.5"}
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
    new = matrix.release(TorchVersion(NEW_RELEASE))
    assert new is not None
    assert (str(new.torchvision), str(new.torchaudio), new.released) == (
        "0.114.0", NEW_RELEASE, "2099-01-02")
    # read from each platform's own wheels: aarch64 is the CPU build
    assert {str(p): str(v) for p, v in new.pypi_default.items()} == {
        "linux-x86_64": "cu130", "linux-aarch64": "cpu", "win-amd64": "cpu",
        "macos-arm64": "cpu"}
    assert new.python[LINUX] == ("3.10", "3.11", "3.12", "3.13", "3.13t")
    cu130 = new.variant(VariantName("cu130"))
    assert cu130 is not None
    assert (cu130.status, cu130.arch_list, cu130.index) == ("unverified", None, "unknown")
    written = yaml.safe_load(out_file.read_text())
    entry = next(v for vs in written["variant_sets"] if vs["releases"] == [NEW_RELEASE]
                 for v in vs["variants"] if v["name"] == "cu130")
    assert "status" not in entry
    assert (entry["index"], entry["arch_list"]) == ("unknown", "unknown")
    assert "Arch list unknown: only the index's file names were read" in entry["note"]
    assert f"{server.base}/whl is a mirror" in entry["note"]
    index_source = next(s for s in written["sources"] if s["id"] == "torchenv-live-index")
    assert index_source["primary"] is False
    added = expected["new_variants"][0]
    v = matrix.release(TorchVersion(added["torch"])).variant(  # type: ignore[union-attr]
        VariantName("cu199"))
    assert v is not None
    assert (v.status, v.index) == ("unverified", "unknown")
    for moved in expected["new_platforms"]:
        rel = matrix.release(TorchVersion(moved["torch"]))
        assert rel is not None
        variant = rel.variant(VariantName(moved["variant"]))
        assert variant is not None
        moved_to = {Platform(p) for p in moved["platforms"]}
        assert moved_to <= set(variant.platforms)
        for plat in moved_to:
            found = [n for n in names if n.startswith(f"torch-{rel.torch}+{variant.name}-")
                     and n.endswith(_PLATFORM_TAGS[str(plat)] + ".whl")]
            on_index = {w.python for n in found for w in parse_wheel(n)}
            assert rel.python_tags(plat, variant) == tuple(sorted(on_index, key=python_sort_key))
            if variant.kind == "cuda":  # the old platforms' list says nothing of the new one
                assert variant.arch_fact(plat).sass != "confirmed"
                old_plat = next(p for p in variant.platforms if p not in moved_to)
                assert variant.arch_fact(old_plat).sass == "confirmed"
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
        "new_releases": [], "new_variants": [], "new_platforms": [], "python_changes": []}


def _python_planted() -> tuple[list[str], dict[str, list[tuple[str, str]]], list[dict[str, Any]]]:
    """A clean index and PyPI, then: PyPI gains a cp314 wheel for a release whose matrix entry
    lacks 3.14, PyPI loses a release's oldest Windows tag, one variant on the index gains a
    Python tag and another loses one."""
    matrix = load_matrix(overlay=False)
    names = _matrix_filenames()
    files = matrix_pypi_files()
    gains = next(r for r in matrix.releases if "3.14" not in r.python.get(LINUX, ()))
    files[str(gains.torch)].append((_wheel("torch", gains.torch, None, "3.14", "linux-x86_64"),
                                    f"{gains.released}T12:00:00Z"))
    loses = next(r for r in matrix.releases
                 if r is not gains and len(r.python.get(WINDOWS, ())) > 1)
    gone = loses.python[WINDOWS][0]
    files[str(loses.torch)].remove((_wheel("torch", loses.torch, None, gone, "win-amd64"),
                                    f"{loses.released}T12:00:00Z"))
    widened = next(r for r in matrix.releases if r is not gains and r is not loses)
    grown = next(v for v in widened.variants if LINUX in v.platforms)
    new_tag = "3.99"
    names.append(_wheel("torch", widened.torch, grown.name, new_tag, "linux-x86_64"))
    shrunk = next(v for v in widened.variants if v is not grown and LINUX in v.platforms
                  and len(widened.python_tags(LINUX, v)) > 1)
    dropped = widened.python_tags(LINUX, shrunk)[-1]
    names.remove(_wheel("torch", widened.torch, shrunk.name, dropped, "linux-x86_64"))

    def change(rel: Any, plat: str, source: str, variant: object | None, added: list[str],
               removed: list[str], live: list[str]) -> dict[str, Any]:
        return {"torch": str(rel.torch), "variant": str(variant) if variant else None,
                "platform": plat, "source": source, "added": added, "removed": removed,
                "python": live}

    gains_tags = [*gains.python[LINUX], "3.14"]
    widened_tags = list(widened.python_tags(LINUX, grown))
    expected = [
        change(gains, "linux-x86_64", "pypi", None, ["3.14"], [],
               sorted(gains_tags, key=python_sort_key)),
        change(loses, "win-amd64", "pypi", None, [], [gone], list(loses.python[WINDOWS][1:])),
        change(widened, "linux-x86_64", "index", grown.name, [new_tag], [],
               [*widened_tags, new_tag]),
        change(widened, "linux-x86_64", "index", shrunk.name, [], [dropped],
               list(widened.python_tags(LINUX, shrunk)[:-1])),
    ]
    expected.sort(key=lambda c: ([-n for n in Version(c["torch"]).release],
                                 c["source"] != "pypi", c["variant"] or ""))
    return names, files, expected


def test_check_reports_python_tag_changes(server: Server,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    names, files, expected = _python_planted()
    server.serve_index(names, torch_files=files)
    code, doc, _ = _cli(capsys, _run(server, "--check", "--json"))
    assert code == 1
    assert doc["up_to_date"] is False
    assert doc["differences"]["python_changes"] == expected
    assert not (doc["differences"]["new_releases"] or doc["differences"]["new_variants"]
                or doc["differences"]["new_platforms"])
    code, out, _ = _cli(capsys, _run(server, "--check"))
    assert code == 1
    first = expected[0]
    words = " ".join([*(f"+{t}" for t in first["added"]), *(f"-{t}" for t in first["removed"])])
    assert f"~ python {words} for torch {first['torch']}" in out
    assert f"{len(expected)} place(s)" in out


def test_update_writes_python_tag_changes_then_check_is_clean(
        server: Server, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    names, files, expected = _python_planted()
    server.serve_index(names, torch_files=files)
    out_file = tmp_path / "overlay.yaml"
    code, doc, _ = _cli(capsys, _run(server, "--json", "--output", str(out_file)))
    assert code == 0, doc
    assert doc["written"] is True
    matrix = load_matrix(overlay=out_file)
    assert matrix.overlay_error is None
    for change in expected:
        rel = matrix.release(TorchVersion(change["torch"]))
        assert rel is not None
        variant = rel.variant(VariantName(change["variant"])) if change["variant"] else None
        tags = rel.python_tags(Platform(change["platform"]), variant)
        assert list(tags) == change["python"], change
    code, doc, _ = _cli(capsys, _run(server, "--check", "--json", "--output", str(out_file)))
    assert code == 0, doc["differences"]
    assert doc["up_to_date"] is True


def test_truncated_page_errors_and_keeps_the_old_overlay(
        server: Server, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    names, _ = _planted()
    server.serve_index(names)
    good = tmp_path / "overlay.yaml"
    good.write_text("schema_version: 1\nmatrix_version: '2026-01-01'\nreleases: []\n")
    body = html_page(names, "torch")
    server.routes["/whl/torch/"] = Route(("ok", 200, "text/html", body[: len(body) // 2]))
    code, _, err = _cli(capsys, _run(server))
    assert code == 4  # a network error, never 1 (drift found)
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
    assert code == 4  # a network error, never 1 (drift found)
    assert "timed out" in err
    assert "gave up after 2 attempts" in err
    assert "offline" in err


def test_redirect_to_plain_http_is_refused(server: Server,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    server.serve_index(_matrix_filenames())
    server.routes["/whl/torch/"] = Route(("redirect", "http://mirror.example.com/whl/torch/"))
    code, _, err = _cli(capsys, _run(server, "--check"))
    assert code == 4  # a network error, never 1 (drift found)
    assert "redirected to http://mirror.example.com/whl/torch/; refused" in err


def test_plain_http_base_is_refused_without_allow_http(capsys: pytest.CaptureFixture[str]
                                                       ) -> None:
    code = main(["matrix", "update", "--index-base", "http://mirror.example.com/whl",
                 "--check", "--quiet"])
    _, err = capsys.readouterr()
    assert code == 2
    assert "--index-base: refusing plain HTTP http://mirror.example.com/whl/" in err
    assert "--allow-http" in err


def test_a_plain_http_base_from_the_variable_names_the_variable(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TORCHENV_PYPI_BASE", "http://mirror.example.com")
    code = main(["matrix", "update", "--check", "--quiet"])
    _, err = capsys.readouterr()
    assert code == 2
    assert "TORCHENV_PYPI_BASE: refusing plain HTTP http://mirror.example.com/" in err


def test_connection_refused_says_offline(capsys: pytest.CaptureFixture[str],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TORCHENV_HTTP_RETRIES", "1")
    s = Server()
    base = s.base
    s.close()  # nothing listens on that port now
    code = main(["matrix", "update", "--index-base", f"{base}/whl", "--pypi-base", base,
                 "--check", "--quiet"])
    _, err = capsys.readouterr()
    assert code == 4  # a network error, never 1 (drift found)
    assert "cannot connect" in err
    assert "offline" in err


def test_derive_pypi_tool_and_update_derive_the_same_release(
        server: Server, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """tools/derive_pypi.py (for the embedded releases.yaml) and `matrix update` (for the
    overlay) read the same PyPI and write the same facts for a release."""
    import importlib.util

    names, _ = _planted()
    server.serve_index(names)
    server.default_metadata = metadata("torch", "0", ["filelock"])
    out_file = tmp_path / "overlay.yaml"
    code, doc, _ = _cli(capsys, _run(server, "--json", "--output", str(out_file)))
    assert code == 0, doc
    spec = importlib.util.spec_from_file_location(
        "derive_pypi", Path(__file__).parents[2] / "tools" / "derive_pypi.py")
    assert spec is not None and spec.loader is not None
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    generated = tmp_path / "releases.yaml"
    assert tool.main(["--pypi-base", server.base, "--cache", str(tmp_path / "cache"),
                      "--output", str(generated), "--matrix-version", "2099-01-02"]) == 0
    capsys.readouterr()
    from_tool = next(r for r in yaml.safe_load(generated.read_text())["releases"]
                     if r["torch"] == NEW_RELEASE)
    from_update = next(r for r in yaml.safe_load(out_file.read_text())["releases"]
                       if r["torch"] == NEW_RELEASE)
    keys = ("released", "torchvision", "torchaudio", "python", "manylinux", "pypi_default")
    assert {k: from_tool[k] for k in keys} == {k: from_update[k] for k in keys}
    assert from_update["pypi_default"]["linux-aarch64"] == "cpu"
    assert from_update["note"].startswith(from_tool["note"])


def test_derive_pypi_carries_the_maintainers_statements_it_cannot_derive() -> None:
    """The statements PyPI cannot show survive a regeneration of releases.yaml as they were."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "derive_pypi", Path(__file__).parents[2] / "tools" / "derive_pypi.py")
    assert spec is not None and spec.loader is not None
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    shipped = yaml.safe_load(
        (Path(__file__).parents[2] / "src/torchenv/matrix/data/releases.yaml").read_text())
    statements = shipped["companion_statements"]
    text = tool.render([], [], "2099-01-02", statements)
    assert yaml.safe_load(text)["companion_statements"] == statements
    assert "companion_statements" not in yaml.safe_load(tool.render([], [], "2099-01-02"))


@pytest.mark.parametrize("content", ["root:x:0:0:root:/root:/bin/bash\n", "just: [a, mapping]\n"],
                         ids=["not-yaml-mapping", "other-keys"])
def test_an_output_that_is_not_an_overlay_is_refused_before_any_request(
        server: Server, capsys: pytest.CaptureFixture[str], tmp_path: Path, content: str) -> None:
    names, _ = _planted()
    server.serve_index(names)
    precious = tmp_path / "passwd"
    precious.write_text(content)
    code, _, err = _cli(capsys, _run(server, "--output", str(precious)))
    assert code == 2
    assert "is not a matrix overlay; matrix update will not replace it" in err
    assert precious.read_text() == content
    assert not list(tmp_path.glob("*.bak"))
    assert server.requests == []


def test_force_replaces_it_and_keeps_a_backup(
        server: Server, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    names, _ = _planted()
    server.serve_index(names)
    other = tmp_path / "notes.yaml"
    other.write_text("just: [a, mapping]\n")
    code, _, err = _cli(capsys, _run(server, "--output", str(other), "--force"))
    assert code == 0, err
    assert load_matrix(overlay=other).overlay_error is None
    assert (tmp_path / "notes.yaml.bak").read_text() == "just: [a, mapping]\n"


def test_an_older_backup_is_never_overwritten(
        server: Server, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    names, _ = _planted()
    server.serve_index(names)
    out = tmp_path / "overlay.yaml"
    out.write_text("schema_version: 1\nmatrix_version: '2026-01-01'\nreleases: []\n")
    (tmp_path / "overlay.yaml.bak").write_text("the first backup\n")
    code, _, err = _cli(capsys, _run(server, "--output", str(out)))
    assert code == 0, err
    assert (tmp_path / "overlay.yaml.bak").read_text() == "the first backup\n"
    assert (tmp_path / "overlay.yaml.1.bak").read_text().startswith("schema_version: 1")


@pytest.mark.parametrize("where", ["under-a-file", "a-folder"])
def test_an_output_that_cannot_be_written_is_refused_before_any_request(
        server: Server, capsys: pytest.CaptureFixture[str], tmp_path: Path, where: str) -> None:
    """A missing folder is made when the overlay is written; these cannot be."""
    names, _ = _planted()
    server.serve_index(names)
    (tmp_path / "file").write_text("x")
    output = tmp_path / "file" / "sub" / "o.yaml" if where == "under-a-file" else tmp_path
    code, _, err = _cli(capsys, _run(server, "--output", str(output)))
    assert code == 2
    assert ("is not a directory" if where == "under-a-file" else "is a directory") in err
    assert server.requests == []
