"""`matrix update` compares companions.yaml with its packages' live sources, served locally.

The torch part is served clean (as in test_update.py), so every difference is a companion's.
PyPI answers with its real JSON and wheel metadata (trimmed recordings), the PyG find-links
pages and GitHub's releases API with hand-written recordings (data/SOURCES.md). Then drift is
planted in those answers, and hostile answers are served: each must be a clear error (exit 4),
never a traceback, and companions.yaml is never written.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

import pytest
from tests.matrix.test_update import Route, Server, _matrix_filenames, metadata

from torchenv.cli import main
from torchenv.errors import NetworkError
from torchenv.matrix.companions import COMPANIONS_FILE, load_companions
from torchenv.matrix.live.companions import asset_drift, index_drift, release_assets
from torchenv.matrix.live.http import FetchPolicy
from torchenv.matrix.live.update import UpdateOptions, run_update
from torchenv.matrix.live.wheels import page_filenames

RECORDED = Path(__file__).parent / "data" / "companions"
ON_PYPI = ("xformers", "torchao", "vllm", "flash-attn", "torch-scatter", "torch-sparse")
GH_PATH = "/gh/repos/Dao-AILab/flash-attention/releases/tags/v2.8.3"
KNOWN_DIGEST = "f25da18657a87fc83dc1bfb8b7751b82246e9db355510226b674fd437c34b5fb"
HUGE = "9" * 5000


class Sources:
    """The recorded answers, as documents a test may change before they are served."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.pypi = {p: json.loads((RECORDED / "pypi" / f"{p}.json").read_text())
                     for p in ON_PYPI}
        self.metadata = {f.name.removesuffix(".metadata"): f.read_bytes()
                         for f in (RECORDED / "pypi").glob("*.metadata")}
        self.pages = {f.name: f.read_bytes() for f in (RECORDED / "pyg").glob("*.html")}
        self.release = json.loads((RECORDED / "github" / "flash-attention-v2.8.3.json")
                                  .read_text())
        self.index = (RECORDED / "index" / "xformers.html").read_bytes()

    def add_release(self, project: str, version: str, files: list[str],
                    requires: list[str] | None) -> None:
        """A new release on PyPI; its first wheel's metadata declares ``requires``."""
        self.pypi[project]["releases"][version] = [
            {"filename": f, "url": f"../../packages/new/{f}", "yanked": False,
             "upload_time_iso_8601": "2099-03-04T05:06:07.000000Z", "requires_python": None,
             "packagetype": "bdist_wheel" if f.endswith(".whl") else "sdist"}
            for f in files]
        wheels = [f for f in files if f.endswith(".whl")]
        if wheels and requires is not None:
            self.metadata[wheels[0]] = metadata(project, version, requires)

    def serve(self) -> None:
        base = self.server.base
        for project, doc in self.pypi.items():
            url = f"{base}/pypi/{project}/json"
            self.server.json(urlsplit(url).path, json.dumps(doc).encode())
            for files in doc["releases"].values():
                for f in files:
                    body = self.metadata.get(f["filename"])
                    if body is not None:
                        path = urlsplit(urljoin(url, f["url"])).path + ".metadata"
                        self.server.routes[path] = Route(("ok", 200, "text/plain", body))
        for name, body in self.pages.items():
            self.server.routes[f"/pyg/{name}"] = Route(("ok", 200, "text/html", body))
        self.server.json(GH_PATH, json.dumps(self.release).encode())
        self.server.routes["/whl/xformers/"] = Route(("ok", 200, "text/html", self.index))


@pytest.fixture
def server() -> Iterator[Server]:
    s = Server()
    s.serve_index(_matrix_filenames())
    yield s
    s.close()


@pytest.fixture
def sources(server: Server) -> Sources:
    return Sources(server)


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TORCHENV_MATRIX_OVERLAY", str(tmp_path / "overlay.yaml"))
    monkeypatch.setenv("TORCHENV_HTTP_BACKOFF", "0.01")
    monkeypatch.setenv("TORCHENV_HTTP_TIMEOUT", "2")
    monkeypatch.setenv("TORCHENV_HTTP_RETRIES", "0")


def _argv(server: Server, *extra: str) -> list[str]:
    return ["matrix", "update", "--quiet", "--index-base", f"{server.base}/whl",
            "--pypi-base", server.base, "--pyg-base", f"{server.base}/pyg",
            "--github-api-base", f"{server.base}/gh", "--companions", *extra]


def _check(sources: Sources, capsys: pytest.CaptureFixture[str]) -> tuple[int, Any, str]:
    sources.serve()
    code = main(_argv(sources.server, "--check", "--json"))
    out, err = capsys.readouterr()
    return code, json.loads(out) if out.strip() else None, err


def _kinds(doc: Any) -> list[tuple[str, str, str | None]]:
    return [(d["package"], d["kind"], d["version"]) for d in doc["companions"]]


# the drift the recordings themselves hold: xformers' index builds, which the data does not
# list yet; digests the data lacks, a torch 2.9 asset
INDEX_BASELINE = [("xformers", "index-builds", v) for v in ("0.0.33.post2", "0.0.34", "0.0.35")]
BASELINE = [("flash-attn", "asset-digests", "2.8.3"), ("flash-attn", "assets-unlisted", "2.8.3")]


def test_the_recorded_sources_agree_with_the_data_but_for_the_assets_it_lacks(
        sources: Sources, capsys: pytest.CaptureFixture[str]) -> None:
    before = COMPANIONS_FILE.read_bytes()
    code, doc, err = _check(sources, capsys)
    assert code == 1, err
    assert doc["differences"] == {"new_releases": [], "new_variants": [], "new_platforms": [],
                                  "python_changes": []}
    assert _kinds(doc) == INDEX_BASELINE + BASELINE
    index = doc["companions"][2]
    assert index["text"] == ("0.0.35: the PyTorch index has builds for cu126, cu128, cu130 that "
                             "companions.yaml does not list")
    assert index["source"] == f"{sources.server.base}/whl/xformers/"
    assert index["derived"] == [{
        "where": "pytorch-index", "coupling": None, "variants": ["cu126", "cu128", "cu130"],
        "platforms": ["linux-x86_64", "win-amd64"], "python_min": "3.9", "python_abi": "none",
        "evidence": {"exists": "unknown", "coupling": "unknown", "python": "unknown"},
        "sources": [index["source"]]}]
    digests, unlisted = doc["companions"][3:]
    api = f"{sources.server.base}{GH_PATH}"
    assert digests["source"] == unlisted["source"] == api
    # the two assets of listed builds with a digest; the one without a digest is not derived
    assert digests["derived"] == [
        {"file": "flash_attn-2.8.3+cu12torch2.7cxx11abiTRUE-cp311-cp311-linux_x86_64.whl",
         "sha256": "2" * 64, "evidence": "unknown", "sources": [api]},
        {"file": "flash_attn-2.8.3+cu12torch2.8cxx11abiFALSE-cp312-cp312-linux_x86_64.whl",
         "sha256": "1" * 64, "evidence": "unknown", "sources": [api]}]
    assert unlisted["derived"] == {
        "2.9": ["flash_attn-2.8.3+cu12torch2.9cxx11abiTRUE-cp312-cp312-linux_x86_64.whl"]}
    assert doc["up_to_date"] is False
    assert COMPANIONS_FILE.read_bytes() == before
    # every find-links page the data names was read
    pages = [u for u in doc["pages"] if "/pyg/" in u]
    assert len(pages) == 16
    assert all(n > 0 for u, n in doc["pages"].items() if u in pages)


def test_plain_output_lists_each_drift_on_a_line(sources: Sources,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    sources.serve()
    code = main(_argv(sources.server, "--check"))
    out = capsys.readouterr().out
    assert code == 1
    assert "differ from the matrix in 5 place(s)" in out
    assert "~ flash-attn: 2.8.3: 1 asset(s) for torch 2.9, which no build" in out


def test_without_companions_no_companion_source_is_read(
        sources: Sources, capsys: pytest.CaptureFixture[str]) -> None:
    # a plain update compares the torch data alone (the companions are asked for)
    sources.serve()
    argv = _argv(sources.server, "--check", "--json")
    argv.remove("--companions")
    code = main(argv)
    doc = json.loads(capsys.readouterr().out)
    assert code == 0
    assert doc["companions"] == []
    assert not [p for p in sources.server.requests if "/pyg/" in p or "/gh/" in p
                or "xformers" in p or "vllm" in p]


def test_facts_from_the_sources_themselves_are_confirmed_and_from_a_copy_unknown() -> None:
    """The local server is a mirror, so the tests above see `unknown`; the same answers read
    from download.pytorch.org, PyPI or GitHub confirm what they show."""
    data = load_companions()
    xformers, flash_attn = data.package("xformers"), data.package("flash-attn")
    assert xformers is not None and flash_attn is not None
    page = "https://download.pytorch.org/whl/xformers/"
    names = page_filenames(page, (RECORDED / "index" / "xformers.html").read_bytes(), "text/html")
    api = "https://api.github.com/repos/Dao-AILab/flash-attention/releases/tags/v2.8.3"
    doc = json.loads((RECORDED / "github" / "flash-attention-v2.8.3.json").read_text())
    assets = {api: release_assets(api, doc)}
    for primary, evidence in ((True, "confirmed"), (False, "unknown")):
        index = index_drift(xformers, names, page, primary=primary)
        assert {b["evidence"]["exists"] for d in index for b in d.derived} == {evidence}
        lacking = asset_drift(flash_attn, assets, "https://api.github.com", primary=primary)[0]
        assert {a["evidence"] for a in lacking.derived} == {evidence}


# --- PyPI -------------------------------------------------------------------------------------


def test_new_pypi_releases_come_with_the_coupling_their_metadata_states(
        sources: Sources, capsys: pytest.CaptureFixture[str]) -> None:
    sources.add_release("xformers", "0.0.36", [
        "xformers-0.0.36-py39-none-manylinux_2_28_x86_64.whl",
        "xformers-0.0.36-py39-none-win_amd64.whl", "xformers-0.0.36.tar.gz"],
        ["torch>=2.11", "numpy"])
    sources.add_release("vllm", "0.30.0", [
        "vllm-0.30.0-cp38-abi3-manylinux_2_28_x86_64.whl",
        "vllm-0.30.0-cp38-abi3-manylinux_2_28_aarch64.whl"],
        ["regex", "torch==2.14.0", 'zentorch==2.14.0.0; extra == "zen"'])
    sources.add_release("torchao", "0.19.0", [
        "torchao-0.19.0-cp310-abi3-manylinux_2_24_x86_64.manylinux_2_28_x86_64.whl",
        "torchao-0.19.0-py3-none-any.whl"], [])
    sources.add_release("flash-attn", "2.8.4", ["flash_attn-2.8.4.tar.gz"], None)
    # noise: a pre-release, a yanked-only release, a version of 5,000 digits
    sources.add_release("xformers", "0.0.37rc1", ["xformers-0.0.37rc1.tar.gz"], None)
    sources.add_release("torch-scatter", "2.1.3", ["torch_scatter-2.1.3.tar.gz"], None)
    sources.pypi["torch-scatter"]["releases"]["2.1.3"][0]["yanked"] = True
    sources.add_release("torch-sparse", f"0.{HUGE}", [], None)
    code, doc, err = _check(sources, capsys)
    assert code == 1, err
    new = {d["package"]: d for d in doc["companions"] if d["kind"] == "new-release"}
    assert sorted(new) == ["flash-attn", "torchao", "vllm", "xformers"]
    base = sources.server.base
    x = new["xformers"]
    assert x["version"] == "0.0.36"
    assert x["source"] == (f"{base}/packages/new/xformers-0.0.36-py39-none-manylinux_2_28_"
                           "x86_64.whl.metadata")
    assert x["derived"] == {"version": "0.0.36", "released": "2099-03-04", "builds": [{
        "where": "pypi", "coupling": "floor", "torch": ">=2.11", "requires_dist": "torch>=2.11",
        "platforms": ["linux-x86_64", "win-amd64"], "python_min": "3.9", "python_abi": "none",
        "evidence": {"exists": "unknown", "coupling": "unknown", "python": "unknown"},
        "sources": [f"{base}/pypi/xformers/json", x["source"]]}]}
    v = new["vllm"]["derived"]["builds"][0]
    assert (v["coupling"], v["torch"], v["requires_dist"]) == ("exact", ["2.14.0"],
                                                               "torch==2.14.0")
    assert (v["platforms"], v["python_min"], v["python_abi"]) == (
        ["linux-aarch64", "linux-x86_64"], "3.8", "abi3")
    # no torch requirement: no coupling is made up
    ao = new["torchao"]
    assert ao["derived"]["builds"][0]["coupling"] is None
    assert ao["derived"]["builds"][0]["evidence"]["coupling"] == "unknown"
    assert "declares no torch requirement" in ao["text"]
    assert "for a person to set" in ao["text"]
    fa = new["flash-attn"]["derived"]["builds"]
    assert fa == [{"where": "sdist", "coupling": "none",
                   "evidence": {"exists": "unknown", "coupling": "unknown"},
                   "sources": [f"{base}/pypi/flash-attn/json"]}]
    assert _kinds(doc)[-2:] == BASELINE


def test_a_requirement_that_differs_is_drift_and_the_data_is_not_changed(
        sources: Sources, capsys: pytest.CaptureFixture[str]) -> None:
    name = "xformers-0.0.34-cp39-abi3-manylinux_2_28_x86_64.whl"
    sources.metadata[name] = sources.metadata[name].replace(b"torch==2.10.0", b"torch==2.10.1")
    before = COMPANIONS_FILE.read_bytes()
    code, doc, _ = _check(sources, capsys)
    assert code == 1
    drift = [d for d in doc["companions"] if d["kind"] == "coupling"]
    assert len(drift) == 1
    assert drift[0]["version"] == "0.0.34"
    assert "companions.yaml says torch==2.10.0" in drift[0]["text"]
    assert f"{name} declares torch==2.10.1" in drift[0]["text"]
    assert drift[0]["source"].endswith(f"/{name}.metadata")
    assert drift[0]["derived"] == {"coupling": "exact", "torch": ["2.10.1"],
                                   "requires_dist": "torch==2.10.1"}
    assert COMPANIONS_FILE.read_bytes() == before


def test_a_release_gone_from_pypi_is_drift(sources: Sources,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    for f in sources.pypi["vllm"]["releases"]["0.28.0"]:
        f["yanked"] = True
    code, doc, _ = _check(sources, capsys)
    assert code == 1
    assert ("vllm", "missing", "0.28.0") in _kinds(doc)


# --- the PyTorch index ------------------------------------------------------------------------


def test_a_newer_release_on_the_pytorch_index_is_drift_with_its_builds(
        sources: Sources, capsys: pytest.CaptureFixture[str]) -> None:
    names = ["xformers-0.0.36+cu130-py39-none-manylinux_2_28_x86_64.whl",
             "xformers-0.0.36+cu129-py39-none-manylinux_2_28_x86_64.whl",
             "xformers-0.0.36+cu129-py39-none-win_amd64.whl",
             f"xformers-0.0.{HUGE}+cu130-py39-none-manylinux_2_28_x86_64.whl",
             "xformers-0.0.37+cu130.weird-py39-none-manylinux_2_28_x86_64.whl"]
    links = "".join(f'<a href="/whl/{n}">{n}</a><br/>\n' for n in names).encode()
    sources.index = sources.index.replace(b"  </body>", links + b"  </body>")
    code, doc, err = _check(sources, capsys)
    assert code == 1, err
    new = [d for d in doc["companions"] if d["kind"] == "new-release"]
    assert [(d["package"], d["version"]) for d in new] == [("xformers", "0.0.36")]
    assert new[0]["text"] == "+ release 0.0.36 on the PyTorch index (cu129, cu130)"
    assert [(b["variants"], b["platforms"]) for b in new[0]["derived"]["builds"]] == [
        (["cu129"], ["linux-x86_64", "win-amd64"]), (["cu130"], ["linux-x86_64"])]
    assert _kinds(doc)[:3] == INDEX_BASELINE


# --- find-links pages -------------------------------------------------------------------------


def test_find_links_pages_gone_changed_and_with_a_new_release(
        sources: Sources, capsys: pytest.CaptureFixture[str]) -> None:
    del sources.pages["torch-2.13.0+cu128.html"]
    page = "torch-2.14.0+cu126.html"
    sources.pages[page] = b"\n".join(
        line for line in sources.pages[page].split(b"\n")
        if b"pyg_lib-0.9.0%2Bpt214cu126-cp314-cp314-win_amd64" not in line)
    extra = ("torch-2.14.0+cu130/pyg_lib-0.10.0+pt214cu130-cp312-cp312-manylinux_2_28_x86_64.whl",
             f"torch-2.14.0+cu130/pyg_lib-0.{HUGE}+pt214cu130-cp312-cp312-linux_x86_64.whl",
             f"pyg_lib-0.{'9' * 200}+pt214cu130-cp312-cp312-linux_x86_64.whl")
    links = "".join(f'<a href="{n}">{n}</a><br/>\n' for n in extra).encode()
    sources.pages["torch-2.14.0+cu130.html"] = sources.pages["torch-2.14.0+cu130.html"].replace(
        b"</body>", links + b"</body>")
    code, doc, err = _check(sources, capsys)
    assert code == 1, err
    found = [d for d in doc["companions"] if d["package"] == "pyg-lib"]
    base = f"{sources.server.base}/pyg"
    assert [(d["kind"], d["version"], d["source"]) for d in found] == [
        ("missing", "0.9.0", f"{base}/torch-2.13.0+cu128.html"),
        ("python", "0.9.0", f"{base}/torch-2.14.0+cu126.html"),
        ("new-release", "0.10.0", f"{base}/torch-2.14.0+cu130.html")]
    assert "find-links page for torch 2.13 cu128 is not there" in found[0]["text"]
    assert found[1]["text"] == ("0.9.0 for torch 2.14 cu126 on win-amd64: Python 3.14 not on "
                                "the page")
    assert found[1]["derived"] == {"python": ["3.10", "3.11", "3.12", "3.13"]}
    assert _kinds(doc)[-2:] == BASELINE


# --- release assets ---------------------------------------------------------------------------


def test_a_digest_that_differs_is_reported_beside_the_written_one(
        sources: Sources, capsys: pytest.CaptureFixture[str]) -> None:
    sources.release["assets"][0]["digest"] = "sha256:" + "e" * 64
    code, doc, _ = _check(sources, capsys)
    assert code == 1
    drift = next(d for d in doc["companions"] if d["kind"] == "asset-digest")
    assert f"companions.yaml says sha256 {KNOWN_DIGEST}, the release {'e' * 64}" \
        in drift["text"]
    assert "not changed" in drift["text"]


def test_a_listed_asset_gone_from_the_release_is_drift(
        sources: Sources, capsys: pytest.CaptureFixture[str]) -> None:
    del sources.release["assets"][0]
    code, doc, _ = _check(sources, capsys)
    assert code == 1
    assert ("flash-attn", "missing", "2.8.3") in _kinds(doc)


def test_a_release_gone_from_github_is_drift(sources: Sources,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    sources.serve()
    del sources.server.routes[GH_PATH]
    code = main(_argv(sources.server, "--check", "--json"))
    doc = json.loads(capsys.readouterr().out)
    assert code == 1
    gone = [d for d in doc["companions"] if d["package"] == "flash-attn"]
    assert [(d["kind"], d["version"]) for d in gone] == [("missing", "2.8.3")]
    assert gone[0]["text"] == ("2.8.3: the release is not on GitHub (its assets are listed in "
                               "companions.yaml)")


# --- bad and hostile answers ------------------------------------------------------------------


def _hostile(sources: Sources, what: str) -> str:
    """Plant one bad answer; the text the error must carry."""
    if what == "github-json":
        sources.serve()
        sources.server.routes[GH_PATH] = Route(("ok", 200, "application/json", b'{"assets": ['))
        return "releases/tags/v2.8.3: not valid JSON"
    if what == "github-shape":
        sources.release = {"message": "Not Found"}
        return "no 'assets' list"
    if what == "digest":
        sources.release["assets"][1]["digest"] = "sha256:" + HUGE
        return "is not 'sha256:' and 64 hex digits"
    if what == "asset-name":
        sources.release["assets"][1]["name"] = f"flash_attn-2.8.3+cu12torch2.{HUGE}.whl"
        return "characters, longer than any file name"
    if what == "index-truncated":
        sources.index = sources.index[:-40]
        return "/whl/xformers/: the page ends before </html>"
    if what == "find-links-truncated":
        page = "torch-2.12.0+cpu.html"
        sources.pages[page] = sources.pages[page][:-30]
        return "torch-2.12.0+cpu.html: the page ends before </html>"
    if what == "pypi-json":
        sources.serve()
        sources.server.json("/pypi/torchao/json", b"[" * 100_000)
        return "/pypi/torchao/json: not valid JSON"
    assert what == "metadata"
    name = "xformers-0.0.35-py39-none-manylinux_2_28_x86_64.whl"
    sources.metadata[name] = b"\xff\xfe not utf-8"
    return "METADATA is not UTF-8"


@pytest.mark.parametrize("what", ["github-json", "github-shape", "digest", "asset-name",
                                  "index-truncated", "find-links-truncated", "pypi-json",
                                  "metadata"])
def test_a_bad_answer_is_a_clear_error_and_nothing_is_written(
        sources: Sources, capsys: pytest.CaptureFixture[str], tmp_path: Path,
        what: str) -> None:
    expected = _hostile(sources, what)
    if what not in ("github-json", "pypi-json"):
        sources.serve()
    out_file = tmp_path / "overlay.yaml"
    code = main(_argv(sources.server, "--output", str(out_file)))
    _, err = capsys.readouterr()
    assert code == 4, err
    assert expected in err
    assert "Traceback" not in err
    assert not out_file.exists()


def test_an_oversized_find_links_page_is_cut_off_by_the_funnel(sources: Sources) -> None:
    page = "torch-2.12.0+cu130.html"
    sources.pages[page] = sources.pages[page].replace(
        b"<body>", b"<body>\n<!--" + b" " * (3 * 1024 * 1024) + b"-->")
    sources.serve()
    base = sources.server.base
    torch_page = len(copy.copy(sources.server.routes["/whl/torch/"].answers[0][3]))
    assert torch_page < 2 * 1024 * 1024  # the limit below lets every other answer through
    options = UpdateOptions(index_base=f"{base}/whl", pypi_base=base, pyg_base=f"{base}/pyg",
                            github_api_base=f"{base}/gh", check=True,
                            policy=FetchPolicy(max_bytes=2 * 1024 * 1024, retries=0))
    with pytest.raises(NetworkError, match=r"torch-2\.12\.0\+cu130\.html: the server announces "
                       r"\d+ bytes, more than the 2 MiB"):
        run_update(options)


def test_a_plain_http_companion_base_is_refused(server: Server,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    code = main([*_argv(server, "--check"), "--pyg-base", "http://data.example.org/whl"])
    _, err = capsys.readouterr()
    assert code == 2
    assert "--pyg-base: refusing plain HTTP http://data.example.org/whl/" in err
    assert server.requests == []
