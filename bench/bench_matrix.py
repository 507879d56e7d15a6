"""Time `matrix ci` over everything and `matrix update` against a local ~10,000-file index.

    python bench/bench_matrix.py

Targets: matrix ci (all releases x Pythons x variants x platforms) <= 0.5 s wall, as a fresh
process; matrix update --check and a full update against 127.0.0.1 <= 2 s.
"""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

PLATFORM_TAGS = {
    "linux-x86_64": "manylinux_2_28_x86_64", "linux-aarch64": "manylinux_2_28_aarch64",
    "win-amd64": "win_amd64", "macos-arm64": "macosx_11_0_arm64",
}


def _names(target: int = 10_000) -> list[str]:
    from torchenv.matrix.loader import load_matrix

    names: list[str] = []
    matrix = load_matrix(overlay=False)
    for rel in matrix.releases:
        for v in rel.variants:
            for plat in v.platforms:
                if plat not in PLATFORM_TAGS:
                    continue
                for py in rel.python_tags(plat, v):
                    d = py.rstrip("t").replace(".", "")
                    abi = f"cp{d}t" if py.endswith("t") else f"cp{d}"
                    names.append(f"torch-{rel.torch}+{v.name}-cp{d}-{abi}-"
                                 f"{PLATFORM_TAGS[plat]}.whl")
    # pad with real-shaped history (old releases below the matrix floor), as the real page has
    i = 0
    while len(names) < target:
        names.append(f"torch-1.{i // 400}.{i % 7}+cu{90 + i % 30}-cp3{6 + i % 4}-cp3{6 + i % 4}m-"
                     f"linux_x86_64.whl")
        i += 1
    names.append("torch-2.99.0+cu130-cp312-cp312-manylinux_2_28_x86_64.whl")
    return names


def _serve(pages: dict[str, tuple[str, bytes]]) -> tuple[http.server.ThreadingHTTPServer, str]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            ctype, body = pages.get(self.path, ("text/plain", b""))
            self.send_response(200 if self.path in pages else 404)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, f"http://127.0.0.1:{httpd.server_address[1]}"


def _html(names: list[str]) -> bytes:
    rows = "\n".join(f'<a href="/whl/{n.replace("+", "%2B")}#sha256={"0" * 64}">{n}</a><br/>'
                     for n in names)
    return f"<!DOCTYPE html><html><body>\n{rows}\n</body></html>\n".encode()


def _time(argv: list[str], env: dict[str, str]) -> tuple[float, int, int]:
    start = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, env=env, check=False)
    return time.perf_counter() - start, proc.returncode, len(proc.stdout)


def main() -> int:
    names = _names()
    # PyPI's project JSON (every release's files, with their URLs) and the new wheel's PEP 658
    # metadata: what matrix update reads to derive a release
    wheel = "torch-2.99.0-cp312-cp312-manylinux_2_28_x86_64.whl"
    pypi = {"info": {"version": "2.99.0", "requires_python": ">=3.10"},
            "releases": {"2.99.0": [{"filename": wheel, "url": f"/files/{wheel}",
                                     "upload_time_iso_8601": "2099-01-01T00:00:00Z"}]}}
    empty = {"info": {"version": "0.0.0"}, "releases": {}}
    metadata = b"Metadata-Version: 2.1\nName: torch\nVersion: 2.99.0\nRequires-Python: >=3.10\n\n"
    pages = {
        "/whl/torch/": ("text/html", _html(names)),
        "/whl/torchvision/": ("text/html", _html([])),
        "/whl/torchaudio/": ("text/html", _html([])),
        "/pypi/torch/json": ("application/json", json.dumps(pypi).encode()),
        "/pypi/torchvision/json": ("application/json", json.dumps(empty).encode()),
        "/pypi/torchaudio/json": ("application/json", json.dumps(empty).encode()),
        f"/files/{wheel}.metadata": ("text/plain", metadata),
    }
    httpd, base = _serve(pages)
    tmp = Path(tempfile.mkdtemp())
    env = {**os.environ, "TORCHENV_MATRIX_OVERLAY": str(tmp / "overlay.yaml")}
    exe = [sys.executable, "-m", "torchenv"]
    update = [*exe, "matrix", "update", "--index-base", f"{base}/whl", "--pypi-base", base,
              "--quiet"]
    results = [
        ("matrix ci (everything, github)", 0.5,
         _time([*exe, "matrix", "ci", "--free-threaded"], env)),
        ("matrix ci (everything, gitlab)", 0.5,
         _time([*exe, "matrix", "ci", "--free-threaded", "--format", "gitlab"], env)),
        (f"matrix update --check ({len(names)} files)", 2.0, _time([*update, "--check"], env)),
        (f"matrix update ({len(names)} files, writes)", 2.0,
         _time([*update, "--output", str(tmp / "o.yaml")], env)),
    ]
    httpd.shutdown()
    print(f"{'benchmark':45} {'wall s':>8} {'target':>7} {'exit':>5} {'stdout B':>9}  ok")
    ok = True
    for name, target, (secs, code, size) in results:
        good = secs <= target
        ok &= good
        print(f"{name:45} {secs:8.3f} {target:7.1f} {code:5d} {size:9d}  {'yes' if good else 'NO'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
