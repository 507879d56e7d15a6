#!/usr/bin/env python3
"""Derive the PyPI-backed facts of ``releases.yaml`` from PyPI metadata.

Data used (all cached under ``--cache``):

* ``https://pypi.org/pypi/<project>/json`` -- one request per project (torch,
  torchvision, torchaudio): file names and upload times of every release.
* The core metadata (``METADATA``) of one wheel per needed file: first the
  PEP 658 ``<wheel-url>.metadata`` file, and where PyPI has none (older
  wheels), the ``*.dist-info/METADATA`` member read out of the wheel with HTTP
  range requests (a few kilobytes to a few megabytes; never the whole wheel).
  The per-version ``/pypi/<project>/<version>/json`` endpoint is not used: it
  only reports the metadata of the first uploaded file, and torch's Linux
  aarch64 wheels carry different ``Requires-Dist`` than the x86_64 ones.

Fields that PyPI cannot provide (``conda``, extra notes and sources) are taken
from an existing releases.yaml with ``--merge-existing FILE``: its ``conda``
blocks, its ``sources`` entries whose ids this script does not define, its
torchvision/torchaudio values where PyPI shows no exact pin (``unknown``), and
the ``note`` sentences that start with ``conda`` or ``Pairing`` are carried over.

Usage::

    python tools/derive_pypi.py --cache .cache/pypi \
        --merge-existing src/torchenv/matrix/data/releases.yaml > releases.yaml
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import struct
import sys
import tempfile
import urllib.error
import urllib.parse
import urllib.request
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from email.parser import HeaderParser
from pathlib import Path
from typing import Any

import yaml
from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import parse_wheel_filename
from packaging.version import Version

PYPI = "https://pypi.org"
TIMEOUT_S = 30
USER_AGENT = "torchenv-derive-pypi/1 (+https://pypi.org/pypi/torch/json)"

FIRST_TORCH = Version("1.13.0")
# Companion releases older than these cannot pair with torch >= 1.13.
FIRST_COMPANION = {"torchvision": Version("0.14.0"), "torchaudio": Version("0.13.0")}

SCHEMA_VERSION = 1
MATRIX_VERSION = "2026-11-29"

PLATFORM_ORDER = ["linux-x86_64", "linux-aarch64", "win-amd64", "macos-arm64", "macos-x86_64"]
LINUX_MACHINE = {"linux-x86_64": "x86_64", "linux-aarch64": "aarch64"}

DERIVED_SOURCES: list[dict[str, str]] = [
    {
        "id": "pypi-json",
        "title": "PyPI JSON API for torch (file names, upload times) and its wheels' Requires-Dist",
        "url": "https://pypi.org/pypi/torch/json",
    },
    {
        "id": "pypi-json-torchvision",
        "title": "PyPI JSON API for torchvision; Requires-Dist torch pin of its wheels",
        "url": "https://pypi.org/pypi/torchvision/json",
    },
    {
        "id": "pypi-json-torchaudio",
        "title": "PyPI JSON API for torchaudio; Requires-Dist torch pin of its wheels",
        "url": "https://pypi.org/pypi/torchaudio/json",
    },
]

# Packages whose exact pin names the CUDA runtime of a wheel.
CUDA_PIN = re.compile(r"^(nvidia-cuda-runtime(-cu\d+)?|cuda-toolkit)$")


# --------------------------------------------------------------------------- fetching


class Fetcher:
    """HTTP GET with a timeout and an on-disk cache keyed by URL and byte range."""

    def __init__(self, cache_dir: Path) -> None:
        self.cache_dir = cache_dir
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        self.requests = 0

    def _path(self, url: str, byte_range: str | None) -> Path:
        key = hashlib.sha256(f"{url}|{byte_range or ''}".encode()).hexdigest()
        return self.cache_dir / key

    def get(self, url: str, byte_range: str | None = None) -> bytes | None:
        """Return the body, or None on HTTP 404. ``byte_range`` is e.g. ``"-65536"``."""
        path = self._path(url, byte_range)
        missing = path.with_suffix(".404")
        if path.exists():
            return path.read_bytes()
        if missing.exists():
            return None
        headers = {"User-Agent": USER_AGENT}
        if byte_range is not None:
            headers["Range"] = f"bytes={byte_range}"
        request = urllib.request.Request(url, headers=headers)
        self.requests += 1
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
                body: bytes = response.read()
                if byte_range is not None and response.status != 206:
                    raise RuntimeError(f"server ignored the Range header for {url}")
        except urllib.error.HTTPError as error:
            if error.code == 404:
                missing.write_bytes(b"")
                return None
            raise
        path.write_bytes(body)
        return body

    def json(self, url: str) -> Any:
        body = self.get(url)
        if body is None:
            raise RuntimeError(f"404 for {url}")
        return json.loads(body)


def file_url(project_json_url: str, entry: dict[str, Any]) -> str:
    """Absolute download URL of a file entry (some mirrors give relative URLs)."""
    url = urllib.parse.urljoin(project_json_url, str(entry["url"]))
    # Some PyPI mirrors serve relative URLs; use the canonical file host instead.
    match = re.search(r"/packages/(?:packages/)?([0-9a-f]{2}/[0-9a-f]{2}/[0-9a-f]{60}/[^/]+)$", url)
    return f"https://files.pythonhosted.org/packages/{match[1]}" if match else url


def _zip_metadata(fetcher: Fetcher, url: str) -> str | None:
    """Read ``*.dist-info/METADATA`` from a remote wheel with range requests."""
    tail = fetcher.get(url, "-65536")
    if tail is None:
        return None
    eocd = tail.rfind(b"PK\x05\x06")
    if eocd < 0:
        raise RuntimeError(f"no end-of-central-directory record in {url}")
    cd_size, cd_offset = struct.unpack("<II", tail[eocd + 12 : eocd + 20])
    if cd_offset == 0xFFFFFFFF or cd_size == 0xFFFFFFFF:  # ZIP64
        locator = tail.rfind(b"PK\x06\x07", 0, eocd)
        if locator < 0:
            raise RuntimeError(f"ZIP64 locator missing in {url}")
        (eocd64_offset,) = struct.unpack("<Q", tail[locator + 8 : locator + 16])
        record = fetcher.get(url, f"{eocd64_offset}-{eocd64_offset + 55}")
        if record is None or record[:4] != b"PK\x06\x06":
            raise RuntimeError(f"bad ZIP64 end record in {url}")
        cd_size, cd_offset = struct.unpack("<QQ", record[40:56])
    directory = fetcher.get(url, f"{cd_offset}-{cd_offset + cd_size - 1}")
    assert directory is not None
    pos = 0
    while pos + 46 <= len(directory) and directory[pos : pos + 4] == b"PK\x01\x02":
        method = struct.unpack("<H", directory[pos + 10 : pos + 12])[0]
        csize, _usize = struct.unpack("<II", directory[pos + 20 : pos + 28])
        name_len, extra_len, comment_len = struct.unpack("<HHH", directory[pos + 28 : pos + 34])
        (local_offset,) = struct.unpack("<I", directory[pos + 42 : pos + 46])
        name = directory[pos + 46 : pos + 46 + name_len].decode()
        pos += 46 + name_len + extra_len + comment_len
        if re.fullmatch(r"[^/]+\.dist-info/METADATA", name):
            # Local header is 30 bytes + name + extra; read generously.
            end = local_offset + 30 + name_len + 1024 + csize
            local = fetcher.get(url, f"{local_offset}-{end}")
            if local is None or local[:4] != b"PK\x03\x04":
                raise RuntimeError(f"bad local header for {name} in {url}")
            lname, lextra = struct.unpack("<HH", local[26:30])
            data = local[30 + lname + lextra : 30 + lname + lextra + csize]
            if method == 8:
                return zlib.decompress(data, -15).decode()
            if method == 0:
                return data.decode()
            raise RuntimeError(f"unsupported compression {method} in {url}")
    raise RuntimeError(f"no METADATA member in {url}")


def wheel_requires_dist(fetcher: Fetcher, url: str) -> list[str]:
    """Requires-Dist of a wheel: PEP 658 metadata file first, zip member second."""
    text_bytes = fetcher.get(url + ".metadata")
    text = text_bytes.decode() if text_bytes is not None else _zip_metadata(fetcher, url)
    if text is None:
        raise RuntimeError(f"no metadata for {url}")
    headers = HeaderParser().parsestr(text)
    return list(headers.get_all("Requires-Dist") or [])


# --------------------------------------------------------------------------- parsing


def platform_of(tag_platform: str) -> str | None:
    if tag_platform.startswith("manylinux") and tag_platform.endswith("_x86_64"):
        return "linux-x86_64"
    if tag_platform.startswith("manylinux") and tag_platform.endswith("_aarch64"):
        return "linux-aarch64"
    if tag_platform == "win_amd64":
        return "win-amd64"
    if tag_platform.startswith("macosx_") and tag_platform.endswith("_arm64"):
        return "macos-arm64"
    if tag_platform.startswith("macosx_") and tag_platform.endswith("_x86_64"):
        return "macos-x86_64"
    return None


def glibc_floor(tag_platform: str) -> Version | None:
    legacy = {"manylinux1": "2.5", "manylinux2010": "2.12", "manylinux2014": "2.17"}
    for prefix, glibc in legacy.items():
        if tag_platform.startswith(prefix + "_"):
            return Version(glibc)
    match = re.match(r"manylinux_(\d+)_(\d+)_", tag_platform)
    return Version(f"{match[1]}.{match[2]}") if match else None


def python_tag(interpreter: str, abi: str) -> str | None:
    match = re.fullmatch(r"cp(\d)(\d+)", interpreter)
    if not match:
        return None
    tag = f"{match[1]}.{match[2]}"
    return tag + "t" if abi.endswith("t") else tag


def python_sort_key(tag: str) -> tuple[int, int, int]:
    major, minor = tag.rstrip("t").split(".")
    return int(major), int(minor), int(tag.endswith("t"))


@dataclass
class Wheel:
    filename: str
    url: str
    platform: str
    python: str
    glibc: Version | None
    build: int  # wheel build tag; 0 when absent (pip prefers the highest)


@dataclass
class Release:
    torch: str
    released: str
    wheels: list[Wheel] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def collect_wheels(
    project_url: str, files: Iterable[dict[str, Any]]
) -> tuple[list[Wheel], list[str]]:
    wheels: list[Wheel] = []
    skipped: list[str] = []
    for entry in files:
        filename = str(entry["filename"])
        if not filename.endswith(".whl") or entry.get("yanked"):
            continue
        _name, _ver, build, tags = parse_wheel_filename(filename)
        for tag in sorted(tags, key=str):
            platform = platform_of(tag.platform)
            python = python_tag(tag.interpreter, tag.abi)
            if platform is None or python is None:
                skipped.append(filename)
                continue
            floors = [f for t in tags if (f := glibc_floor(t.platform)) is not None]
            wheels.append(
                Wheel(
                    filename,
                    file_url(project_url, entry),
                    platform,
                    python,
                    min(floors, default=None),
                    build[0] if build else 0,
                )
            )
            break
    return wheels, skipped


def cuda_variant(requires: list[str], machine: str, python: str) -> tuple[str, str | None]:
    """Variant a Linux wheel installs (``cpu`` or ``cuXY``) and the pin that says so."""
    env = {
        "platform_system": "Linux",
        "sys_platform": "linux",
        "os_name": "posix",
        "platform_machine": machine,
        "python_version": python.rstrip("t"),
        "python_full_version": python.rstrip("t") + ".0",
        "implementation_name": "cpython",
        "platform_python_implementation": "CPython",
        "extra": "",
    }
    for line in requires:
        req = Requirement(line)
        if not CUDA_PIN.match(req.name.lower()):
            continue
        if req.marker is not None and not Marker(str(req.marker)).evaluate(env):
            continue
        pins = [s.version for s in req.specifier if s.operator == "=="]
        if len(pins) != 1:
            raise RuntimeError(f"unexpected CUDA requirement {line!r}")
        major, minor = pins[0].split(".")[:2]
        return f"cu{major}{minor}", f"{req.name}=={pins[0]}"
    return "cpu", None


def torch_requirement(requires: list[str]) -> SpecifierSet | None:
    """The specifier of the unconditional ``torch`` requirement, if any."""
    for line in requires:
        req = Requirement(line)
        if req.name.lower() == "torch" and (req.marker is None or "extra" not in str(req.marker)):
            return req.specifier
    return None


# --------------------------------------------------------------------------- derivation


def project(fetcher: Fetcher, name: str) -> tuple[str, dict[str, Any]]:
    url = f"{PYPI}/pypi/{name}/json"
    return url, fetcher.json(url)


def is_final(version: str) -> bool:
    parsed = Version(version)
    return not (parsed.is_prerelease or parsed.is_devrelease or parsed.local)


@dataclass
class Companion:
    """One torchvision/torchaudio release and the torch requirement of its wheels."""

    version: str
    torch_spec: SpecifierSet | None  # None: the wheels do not require torch at all
    yanked: bool

    @property
    def exact(self) -> str | None:
        if self.torch_spec is None:
            return None
        pins = [s.version for s in self.torch_spec if s.operator in ("==", "===")]
        return pins[0] if len(pins) == 1 and "*" not in pins[0] else None

    def describe(self) -> str:
        spec = f"torch{self.torch_spec}" if self.torch_spec is not None else "no torch requirement"
        return f"{self.version} ({spec}{', yanked' if self.yanked else ''})"


def companions(fetcher: Fetcher, name: str) -> list[Companion]:
    """Every final release of a companion project with its torch requirement."""
    url, data = project(fetcher, name)
    found: list[Companion] = []
    for version, files in data["releases"].items():
        if not is_final(version) or Version(version) < FIRST_COMPANION[name]:
            continue
        wheels = sorted((f for f in files if str(f["filename"]).endswith(".whl")), key=str)
        wheels.sort(key=lambda f: (bool(f.get("yanked")), str(f["filename"])))
        if not wheels:
            print(f"warning: {name} {version} has no wheel", file=sys.stderr)
            continue
        requires = wheel_requires_dist(fetcher, file_url(url, wheels[0]))
        spec = torch_requirement(requires)
        yanked = all(bool(f.get("yanked")) for f in files)
        found.append(Companion(version, spec, yanked))
    return sorted(found, key=lambda c: Version(c.version))


def pair(torch: str, releases: list[Companion], name: str) -> tuple[str | None, list[str]]:
    """The companion release made for ``torch`` (by exact pin), and notes."""
    exact = [c for c in releases if c.exact == torch]
    if exact:
        usable = [c for c in exact if not c.yanked] or exact
        chosen = usable[-1]
        notes = []
        if len(exact) > 1:
            others = ", ".join(c.describe() for c in exact)
            notes.append(
                f"Several {name} releases pin torch=={torch}: {others}; newest unyanked kept."
            )
        return chosen.version, notes
    loose = [
        c
        for c in releases
        if c.exact is None and (c.torch_spec is None or c.torch_spec.contains(torch))
    ]
    if not loose:
        return None, [f"No {name} release on PyPI pins or admits torch {torch}."]
    listed = ", ".join(c.describe() for c in loose)
    return "unknown", [
        f"No {name} release on PyPI pins torch=={torch}; releases without an exact pin: {listed}."
    ]


def derive(fetcher: Fetcher) -> list[dict[str, Any]]:
    url, data = project(fetcher, "torch")
    versions = sorted(
        (v for v in data["releases"] if is_final(v) and Version(v) >= FIRST_TORCH), key=Version
    )
    vision = companions(fetcher, "torchvision")
    audio = companions(fetcher, "torchaudio")

    entries: list[dict[str, Any]] = []
    for version in reversed(versions):
        files = [f for f in data["releases"][version] if not f.get("yanked")]
        if not files:
            continue
        notes: list[str] = []
        released = min(str(f["upload_time_iso_8601"] or f["upload_time"]) for f in files)[:10]
        wheels, skipped = collect_wheels(url, files)
        if skipped:
            notes.append(
                f"Wheels for other platforms not tracked: {', '.join(sorted(set(skipped)))}."
            )

        rebuilt = sorted(w.filename for w in wheels if w.build)
        if rebuilt:
            notes.append(
                f"PyPI also has {len(rebuilt)} re-uploaded wheels with a build tag"
                f" (e.g. {rebuilt[0]}); metadata read from the highest build."
            )

        python: dict[str, list[str]] = {}
        for platform in PLATFORM_ORDER:
            tags = {w.python for w in wheels if w.platform == platform}
            if tags:
                python[platform] = sorted(tags, key=python_sort_key)

        manylinux: dict[str, str] = {}
        for platform in LINUX_MACHINE:
            floors = {
                w.python: w.glibc for w in wheels if w.platform == platform and w.glibc is not None
            }
            if not floors:
                continue
            lowest = min(floors.values())
            manylinux[platform] = str(lowest)
            if len(set(floors.values())) > 1:
                detail = ", ".join(
                    f"{py}: {floors[py]}" for py in sorted(floors, key=python_sort_key)
                )
                notes.append(f"{platform} wheels differ in glibc floor by Python tag ({detail}).")

        default: dict[str, str] = {}
        for platform in python:
            if platform not in LINUX_MACHINE:
                default[platform] = "cpu"
                continue
            # Read the metadata of the oldest and newest Python tag's wheel only.
            results: dict[str, tuple[str, str | None]] = {}
            for py in sorted({python[platform][0], python[platform][-1]}, key=python_sort_key):
                wheel = min(
                    (w for w in wheels if w.platform == platform and w.python == py),
                    key=lambda w: (-w.build, w.filename),
                )
                results[py] = cuda_variant(
                    wheel_requires_dist(fetcher, wheel.url), LINUX_MACHINE[platform], py
                )
            variants = {variant for variant, _ in results.values()}
            if len(variants) > 1:
                raise RuntimeError(
                    f"torch {version} {platform}: variant differs by Python tag: {results}"
                )
            variant = variants.pop()
            default[platform] = variant
            pins = sorted({pin for _, pin in results.values() if pin})
            if pins:
                notes.append(f"{platform} wheels pin {', '.join(pins)}.")

        sources = ["pypi-json"]
        entry: dict[str, Any] = {"torch": version, "released": released}
        for key, paired, source in (
            ("torchvision", vision, "pypi-json-torchvision"),
            ("torchaudio", audio, "pypi-json-torchaudio"),
        ):
            entry[key], pair_notes = pair(version, paired, key)
            notes.extend(pair_notes)
            sources.append(source)
        entry["python"] = python
        entry["manylinux"] = manylinux
        entry["pypi_default"] = default
        entry["conda"] = {"pytorch_channel": "unknown", "conda_forge": "unknown"}
        entry["sources"] = sources
        if notes:
            entry["note"] = " ".join(notes)
        entries.append(entry)
    print(f"info: {fetcher.requests} HTTP requests (rest from cache)", file=sys.stderr)
    return entries


def merge_existing(
    entries: list[dict[str, Any]], sources: list[dict[str, str]], path: Path
) -> None:
    """Carry conda facts, their sources and their note sentences from an older file."""
    old = yaml.safe_load(path.read_text())
    known = {s["id"] for s in sources}
    sources.extend(s for s in old.get("sources", []) if s["id"] not in known)
    previous = {str(e["torch"]): e for e in old.get("releases", [])}
    for entry in entries:
        before = previous.get(entry["torch"])
        if before is None:
            continue
        if "conda" in before:
            entry["conda"] = before["conda"]
        for key in ("torchvision", "torchaudio"):  # hand-confirmed pairings PyPI cannot show
            if entry[key] == "unknown" and key in before and before[key] != "unknown":
                entry[key] = before[key]  # a confirmed version, or null: no paired release
        entry["sources"] += [s for s in before.get("sources", []) if s not in entry["sources"]]
        kept = [
            s
            for s in re.split(r"(?<=\.)\s+", str(before.get("note", "")))
            if s.lower().startswith(("conda", "pairing"))
        ]
        if kept:
            entry["note"] = " ".join([entry["note"], *kept] if "note" in entry else kept)


# --------------------------------------------------------------------------- output


def scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if (
        isinstance(value, str)
        and re.fullmatch(r"[a-z][a-z0-9_-]*", value)
        and value not in ("null", "true", "false", "yes", "no", "on", "off")
    ):
        return value
    return json.dumps(value, ensure_ascii=False)


def flow(values: list[Any]) -> str:
    return "[" + ", ".join(scalar(v) for v in values) + "]"


def render(entries: list[dict[str, Any]], sources: list[dict[str, str]]) -> str:
    out = [
        "# Generated by tools/derive_pypi.py from PyPI metadata;"
        " conda facts merged from the previous file.",
        f"schema_version: {SCHEMA_VERSION}",
        f"matrix_version: {json.dumps(MATRIX_VERSION)}",
        "sources:",
    ]
    for source in sources:
        out.append(f"  - id: {source['id']}")
        out.append(f"    title: {json.dumps(source['title'], ensure_ascii=False)}")
        out.append(f"    url: {json.dumps(source['url'])}")
    out.append("releases:")
    for entry in entries:
        out.append(f"  - torch: {json.dumps(entry['torch'])}")
        out.append(f"    released: {json.dumps(entry['released'])}")
        out.append(f"    torchvision: {scalar(entry['torchvision'])}")
        out.append(f"    torchaudio: {scalar(entry['torchaudio'])}")
        for key in ("python", "manylinux", "pypi_default", "conda"):
            out.append(f"    {key}:")
            for sub, value in entry[key].items():
                rendered = flow(value) if isinstance(value, list) else scalar(value)
                out.append(f"      {sub}: {rendered}")
        out.append(f"    sources: {flow(entry['sources'])}")
        if entry.get("note"):
            out.append(f"    note: {json.dumps(entry['note'], ensure_ascii=False)}")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--cache", type=Path, default=None, help="cache directory (default: a new temp dir)"
    )
    parser.add_argument(
        "--merge-existing", type=Path, default=None, help="old releases.yaml for conda facts"
    )
    parser.add_argument("--output", type=Path, default=None, help="write here instead of stdout")
    args = parser.parse_args(argv)

    cache = args.cache or Path(tempfile.mkdtemp(prefix="derive-pypi-"))
    fetcher = Fetcher(cache)
    entries = derive(fetcher)
    sources = [dict(s) for s in DERIVED_SOURCES]
    if args.merge_existing is not None and args.merge_existing.exists():
        merge_existing(entries, sources, args.merge_existing)
    text = render(entries, sources)
    yaml.safe_load(text)  # the output must parse
    if args.output is not None:
        args.output.write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
