"""A local copy of download.pytorch.org for the installer tests: tiny stand-in wheels on HTTP.

The session fixture :func:`local_index` (registered by conftest.py) builds valid wheel zips named
like the real ones and tagged for this interpreter, so pip and uv accept them here, and serves
them on 127.0.0.1 as PEP 503 simple indexes laid out like download.pytorch.org
(``/whl/cu128/torch/``, ``/whl/cpu/...``), plus a "PyPI" index with the plain builds at
``/pypi/simple/<name>/``. :meth:`LocalIndex.hold_downloads` keeps every wheel download waiting,
so a test can look at what an installer has shown before it finishes.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import hashlib
import io
import platform
import sys
import tarfile
import threading
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote, urlparse

import pytest
from packaging import tags

__all__ = ["AUDIO", "FAILING_BACKEND", "TORCH", "VARIANTS", "VERSIONS", "VISION", "LocalIndex",
           "build_wheel", "failing_sdist",
           "local_index", "wheel_tag"]

TORCH, VISION, AUDIO = "2.7.1", "0.22.1", "2.7.1"
VERSIONS = {"torch": TORCH, "torchvision": VISION, "torchaudio": AUDIO}
VARIANTS = ("cu128", "cu126", "cu118", "cpu", "rocm6.3")

_HOLD_LIMIT = 60.0
"""Seconds a held download waits at most, so a failing test never hangs the server."""


# --------------------------------------------------------------------------- stand-in wheels


def wheel_tag() -> str:
    """The tag the real wheels carry (cp311-cp311-manylinux_2_28_x86_64), if this host takes it.

    Falls back to the most specific tag of this interpreter so pip and uv accept the wheels on any
    machine the tests run on.
    """
    interp = f"cp{sys.version_info.major}{sys.version_info.minor}"
    mine = [t for t in tags.sys_tags() if t.interpreter == interp and t.abi == interp]
    if not mine:  # pragma: no cover - not CPython
        pytest.skip("the stand-in wheels are CPython wheels")
    preferred = f"manylinux_2_28_{platform.machine()}"
    for t in mine:
        if t.platform == preferred:
            return str(t)
    return str(mine[0])


def _b64_digest(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def build_wheel(
    dest: Path, name: str, version: str, tag: str, requires: tuple[str, ...] = ()
) -> Path:
    """A valid, tiny wheel: one module, METADATA, WHEEL and a RECORD with real hashes."""
    dist_info = f"{name}-{version}.dist-info"
    metadata = (
        f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
        f"Summary: torchenv test stand-in for {name}\n"
        + "".join(f"Requires-Dist: {r}\n" for r in requires)
    )
    files = {
        f"{name}/__init__.py": f'__version__ = "{version}"\n',
        f"{dist_info}/METADATA": metadata,
        f"{dist_info}/WHEEL": (
            f"Wheel-Version: 1.0\nGenerator: torchenv-tests\nRoot-Is-Purelib: false\nTag: {tag}\n"
        ),
    }
    record = (
        "".join(
            f"{path},sha256={_b64_digest(text.encode())},{len(text.encode())}\n"
            for path, text in files.items()
        )
        + f"{dist_info}/RECORD,,\n"
    )
    files[f"{dist_info}/RECORD"] = record
    path = dest / f"{name}-{version}-{tag}.whl"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for arcname, text in files.items():
            info = zipfile.ZipInfo(arcname, date_time=(2025, 6, 4, 0, 0, 0))
            info.external_attr = 0o644 << 16
            zf.writestr(info, text)
    return path


def write_project_page(project_dir: Path, wheels: list[Path]) -> None:
    """A PEP 503 project page: one anchor per file, with its sha256 in the fragment."""
    links = "".join(
        f'    <a href="{quote(w.name)}#sha256={hashlib.sha256(w.read_bytes()).hexdigest()}">'
        f"{w.name}</a><br/>\n"
        for w in sorted(wheels)
    )
    (project_dir / "index.html").write_text(
        f"<!DOCTYPE html>\n<html>\n  <body>\n    <h1>Links for {project_dir.name}</h1>\n"
        f"{links}  </body>\n</html>\n",
        encoding="utf-8",
    )


def write_root_page(index_dir: Path, projects: list[str]) -> None:
    links = "".join(f'    <a href="{p}/">{p}</a><br/>\n' for p in sorted(projects))
    (index_dir / "index.html").write_text(
        f"<!DOCTYPE html>\n<html>\n  <body>\n{links}  </body>\n</html>\n", encoding="utf-8"
    )


def build_index(
    index_dir: Path,
    tag: str,
    local: str | None,
    only: tuple[str, ...] = ("torch", "torchvision", "torchaudio"),
    audio_local: str | None = "same",
) -> dict[str, Path]:
    """One simple index with torch/torchvision/torchaudio of one build (``local`` tag or plain)."""
    suffix = f"+{local}" if local else ""
    out: dict[str, Path] = {}
    for name in only:
        version = VERSIONS[name] + suffix
        if name == "torchaudio" and audio_local != "same":
            version = VERSIONS[name] + (f"+{audio_local}" if audio_local else "")
        project = index_dir / name
        project.mkdir(parents=True)
        requires = () if name == "torch" else (f"torch=={TORCH}",)
        out[name] = build_wheel(project, name, version, tag, requires)
        write_project_page(project, [out[name]])
    write_root_page(index_dir, list(only))
    return out


# --------------------------------------------------------------------------- the HTTP server


@dataclass
class _Hold:
    """Wheel downloads wait while ``released`` is clear; ``waiting`` says one has arrived."""

    active: bool = False
    released: threading.Event = field(default_factory=threading.Event)
    waiting: threading.Event = field(default_factory=threading.Event)


@dataclass
class LocalIndex:
    """The served tree: ``{base}/cu128`` etc., ``{pypi}`` and a deliberately broken mirror."""

    url: str
    tag: str
    root: Path
    wheels: dict[str, dict[str, Path]]  # index path ("whl/cu128") -> name -> file
    requests: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    hold: _Hold = field(default_factory=_Hold)

    @property
    def base(self) -> str:
        return f"{self.url}/whl"

    @property
    def pypi(self) -> str:
        return f"{self.url}/pypi/simple"

    @property
    def spaced_base(self) -> str:
        return f"{self.url}/my mirror/whl"

    @property
    def broken_base(self) -> str:
        return f"{self.url}/broken"

    def expected(self, index: str) -> dict[str, tuple[str, str]]:
        """name -> (file name, sha256) of the three wheels of ``index`` ("whl/cu128", "pypi")."""
        return {
            name: (p.name, hashlib.sha256(p.read_bytes()).hexdigest())
            for name, p in self.wheels[index].items()
        }

    def mark(self) -> int:
        with self.lock:
            return len(self.requests)

    def since(self, mark: int) -> list[str]:
        with self.lock:
            return list(self.requests[mark:])

    @contextlib.contextmanager
    def hold_downloads(self) -> Iterator[_Hold]:
        """Within the block every wheel download waits (at most a minute) until
        ``hold.released`` is set; leaving the block releases them."""
        hold = _Hold(active=True)
        self.hold = hold
        try:
            yield hold
        finally:
            hold.released.set()
            self.hold = _Hold()


@pytest.fixture(scope="session")
def local_index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalIndex]:
    root = tmp_path_factory.mktemp("pytorch-mirror")
    tag = wheel_tag()
    wheels: dict[str, dict[str, Path]] = {}
    for variant in VARIANTS:
        wheels[f"whl/{variant}"] = build_index(root / "whl" / variant, tag, variant)
    wheels["pypi"] = build_index(root / "pypi" / "simple", tag, None)
    # a mirror whose cu128 index lacks torchaudio+cu128 (it only has the cu126 one)
    wheels["broken/cu128"] = build_index(
        root / "broken" / "cu128", tag, "cu128", audio_local="cu126"
    )

    # the same tree under a name with a space, for mirrors with awkward paths
    (root / "my mirror").symlink_to(root, target_is_directory=True)

    index = LocalIndex("", tag, root, wheels)

    class Handler(SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            with index.lock:
                index.requests.append(f"{self.command} {unquote(urlparse(self.path).path)}")

        def do_GET(self) -> None:
            hold = index.hold
            if hold.active and urlparse(self.path).path.endswith(".whl"):
                hold.waiting.set()
                hold.released.wait(_HOLD_LIMIT)
            super().do_GET()

    handler = functools.partial(Handler, directory=str(root))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, name="local-pytorch-index", daemon=True)
    thread.start()
    try:
        host, port = server.server_address[:2]
        index.url = f"http://{host}:{port}"
        yield index
    finally:
        index.hold.released.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


FAILING_BACKEND = "stand-in backend: building xformers from source is what the plan forbids"
"""What :func:`failing_sdist`'s backend says: an installer that ran it built what a plan forbids."""


def failing_sdist(project: Path) -> Path:
    """xformers-0.0.31.tar.gz whose in-tree build backend fails as soon as an installer calls it."""
    files = {
        "xformers-0.0.31/pyproject.toml": '[build-system]\nrequires = []\n'
        'build-backend = "refuse"\nbackend-path = ["."]\n',
        "xformers-0.0.31/refuse.py": f"raise SystemExit({FAILING_BACKEND!r})\n",
        "xformers-0.0.31/PKG-INFO": "Metadata-Version: 2.1\nName: xformers\nVersion: 0.0.31\n",
    }
    path = project / "xformers-0.0.31.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path
