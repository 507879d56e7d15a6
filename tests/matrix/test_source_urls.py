"""A source's URL becomes a link on the explorer page and a line on the console: only an
``https:``/``http:`` URL is accepted, where the data enters (shipped files and overlays alike),
and the page itself links only to those schemes, whatever data it was built from."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from torchenv.matrix.loader import load_matrix

HOSTILE = ["javascript:alert(document.domain)", "JaVaScRiPt:alert(1)", " javascript:alert(1)",
           "data:text/html,<script>alert(1)</script>", "vbscript:x", "file:///etc/passwd",
           "//evil.example/x", "https://", "https:// evil", "https://x/\"onmouseover=\"x",
           "https://x/<script>", "https://x/\n", "http://[", "https://x/\u202e", "ftp://x/"]


def _overlay(tmp_path: Path, source_id: str, url: str) -> Path:
    path = tmp_path / "overlay.yaml"
    path.write_text(json.dumps({"sources": [{"id": source_id, "title": "t", "url": url}]}))
    return path


@pytest.mark.parametrize("url", HOSTILE)
@pytest.mark.parametrize("source_id", ["pypi-json", "an-overlay-source"],
                         ids=["replacing-a-shipped-one", "new"])
def test_an_overlay_source_whose_url_is_not_http_is_refused(tmp_path: Path, url: str,
                                                            source_id: str) -> None:
    matrix = load_matrix(overlay=_overlay(tmp_path, source_id, url))
    assert matrix.overlay_error is not None
    assert ".url" in matrix.overlay_error and "https:// or http:// URL" in matrix.overlay_error
    assert all(s.url.startswith("https://") for s in matrix.sources.values())


@pytest.mark.parametrize("url", ["https://pytorch.org/get-started/previous-versions/",
                                 "http://localhost:8080/simple/torch/",
                                 "https://github.com/pytorch/pytorch/blob/v2.7.1/RELEASE.md#"
                                 "release-compatibility-matrix",
                                 "https://x.example/a?b=1&c=%20(d)"])
def test_an_http_url_is_taken(tmp_path: Path, url: str) -> None:
    matrix = load_matrix(overlay=_overlay(tmp_path, "an-overlay-source", url))
    assert matrix.overlay_error is None
    assert matrix.sources["an-overlay-source"].url == url


PAGE_JS = Path(__file__).parents[2] / "src" / "torchenv" / "explorer" / "assets" / "page.js"


def _function(source: str, name: str) -> str:
    """The text of the page script's top-level helper ``name`` (two-space indented)."""
    match = re.search(rf"^  function {name}\(.*?^  }}\n", source, re.M | re.S)
    assert match, name
    return match.group()


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_the_page_links_only_to_http_urls() -> None:
    """The page's element builder, run by node with a stand-in ``document``: an ``href`` that
    is not http(s) leaves the element without a link."""
    source = PAGE_JS.read_text()
    script = "\n".join([
        "const document = {createElement: (tag) => ({tag, attrs: {}, children: [],",
        "  setAttribute(k, v) { this.attrs[k] = v; }, append(c) { this.children.push(c); }})};",
        _function(source, "webLink"), _function(source, "el"),
        "const urls = JSON.parse(process.argv[1]);",
        "console.log(JSON.stringify(urls.map((u) => el('a', {href: u, text: 'x'}).attrs.href",
        "  ?? null)));"])
    other_schemes = ["javascript:alert(document.domain)", "JaVaScRiPt:alert(1)",
                     " javascript:alert(1)", "\tjavascript:alert(1)", "data:text/html,x",
                     "vbscript:x", "file:///etc/passwd", "ftp://x/", "//evil.example/x",
                     "https://", "https:// evil", "https:\\\\evil"]
    web = ["https://pytorch.org/", "http://localhost:8080/x", "https://x/\"onclick=\"x"]
    proc = subprocess.run(["node", "-e", script, json.dumps(other_schemes + web)],
                          capture_output=True, text=True, timeout=30, check=True)
    assert json.loads(proc.stdout) == [None] * len(other_schemes) + web
