"""PyPI facts of torch releases: the one derivation behind ``matrix update`` and
``tools/derive_pypi.py``.

Input is what PyPI's JSON API lists for a project (``/pypi/<project>/json``: every release's file
names, upload times and yanked flags) and the ``Requires-Dist`` of a few wheels. Output is one
:class:`ReleaseFacts` per torch release:

* ``python``: the CPython tags with a wheel, per platform, from the wheel file names
  (``torch-2.7.1-cp313-cp313t-manylinux_2_28_x86_64.whl`` -> ``3.13t`` on ``linux-x86_64``);
* ``manylinux``: the lowest glibc floor of each Linux platform's wheels;
* ``pypi_default``: the variant PyPI's wheel is. On Linux, the exact pin on the CUDA runtime
  (``nvidia-cuda-runtime-cu12==12.6.77``, ``cuda-toolkit==13.0.3``) in the ``Requires-Dist`` of
  that platform's wheels for the oldest and newest Python tag (they must agree), else ``cpu``;
  elsewhere always ``cpu``;
* ``torchvision`` / ``torchaudio``: the companion release whose wheels require ``torch==X``
  exactly; ``"unknown"`` when none pins X but some admit it; None when none admits it.

``Requires-Dist`` is read per wheel, never from the JSON API's ``info.requires_dist``: that is
the metadata of one uploaded file only, and torch's Linux aarch64 wheels carry different
requirements than the x86_64 ones. A wheel's metadata is its PEP 658 ``<wheel-url>.metadata``
file, or where the server has none, the ``*.dist-info/METADATA`` member read out of the wheel
with HTTP range requests (a few kilobytes, never the whole wheel).

Nothing here opens a connection or a file: the caller passes a :data:`Reader`.
"""

from __future__ import annotations

import re
import struct
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from email.parser import HeaderParser
from typing import Any, Optional, Union
from urllib.parse import urljoin

from packaging.markers import InvalidMarker, UndefinedComparison, UndefinedEnvironmentName
from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from torchenv.matrix.live.wheels import safe_parse_wheel
from torchenv.matrix.model import PLATFORMS, glibc_sort_key, python_sort_key

__all__ = [
    "COMPANIONS",
    "FIRST_COMPANION",
    "FIRST_TORCH",
    "MAX_METADATA_BYTES",
    "Companion",
    "Pairing",
    "PypiFile",
    "Reader",
    "ReleaseFacts",
    "UnexpectedMetadata",
    "carry_over",
    "companion_releases",
    "cuda_variant",
    "derive_release",
    "handwritten_note",
    "is_final",
    "pair",
    "project_files",
    "python_by_platform",
    "release_entry",
    "torch_versions",
    "wheel_requires_dist",
]

FIRST_TORCH = Version("1.13.0")
"""The oldest torch release the matrix covers."""
COMPANIONS = ("torchvision", "torchaudio")
FIRST_COMPANION = {"torchvision": Version("0.14.0"), "torchaudio": Version("0.13.0")}
"""Companion releases older than these cannot pair with torch >= 1.13."""

LINUX_MACHINE = {"linux-x86_64": "x86_64", "linux-aarch64": "aarch64"}
# packages whose exact pin names the CUDA runtime a wheel installs
_CUDA_PIN = re.compile(r"^(nvidia-cuda-runtime(-cu\d+)?|cuda-toolkit)$")

Reader = Callable[[str, Optional[str]], Optional[bytes]]
"""``read(url, byte_range)``: the body at ``url`` (only the bytes of ``byte_range``, written as
after ``bytes=`` in a Range header, e.g. ``"-65536"``, when it is not None), or None when the
server answers 404."""

Pairing = Union[str, None]
"""A companion version, ``"unknown"`` (not confirmed), or None (no release pairs)."""


class UnexpectedMetadata(ValueError):
    """Raised when a JSON document, wheel or ``Requires-Dist`` does not have the expected shape;
    the message names the URL or the release."""


# ---------------------------------------------------------------------------------------------
# the JSON API


@dataclass(frozen=True)
class PypiFile:
    """One file of a release as the JSON API lists it."""

    filename: str
    url: str                # absolute
    uploaded: str           # ISO 8601 upload time
    yanked: bool = False
    requires_python: Optional[str] = None

    @property
    def wheel(self) -> bool:
        return self.filename.endswith(".whl")


def project_files(url: str, doc: Any) -> dict[str, list[PypiFile]]:
    """Version -> files of a ``/pypi/<project>/json`` document fetched from ``url``.

    Relative file URLs (some mirrors serve them) are resolved against ``url``. Raises
    :class:`UnexpectedMetadata` naming ``url`` and the bad part.
    """
    releases = doc.get("releases") if isinstance(doc, dict) else None
    if not isinstance(releases, dict):
        raise UnexpectedMetadata(f"{url}: no 'releases' object (is this PyPI's JSON API?)")
    out: dict[str, list[PypiFile]] = {}
    for version, entries in releases.items():
        if not isinstance(entries, list):
            raise UnexpectedMetadata(f"{url}: releases[{version!r}] is not a list")
        files = []
        for i, entry in enumerate(entries):
            where = f"{url}: releases[{version!r}][{i}]"
            if not isinstance(entry, dict):
                raise UnexpectedMetadata(f"{where} is not an object")
            name, href = entry.get("filename"), entry.get("url")
            uploaded = entry.get("upload_time_iso_8601") or entry.get("upload_time")
            if not isinstance(name, str) or not name:
                raise UnexpectedMetadata(f"{where} has no 'filename'")
            if not isinstance(href, str) or not href:
                raise UnexpectedMetadata(f"{where} ({name}) has no 'url'")
            if not isinstance(uploaded, str) or len(uploaded) < 10:
                raise UnexpectedMetadata(f"{where} ({name}) has no upload time")
            rp = entry.get("requires_python")
            files.append(PypiFile(filename=name, url=urljoin(url, href), uploaded=uploaded,
                                  yanked=bool(entry.get("yanked")),
                                  requires_python=rp if isinstance(rp, str) and rp else None))
        out[str(version)] = files
    return out


_MAX_VERSION = 64
"""The longest version text read (a release's is under 20 characters)."""

MAX_METADATA_BYTES = 4 * 1024 * 1024
"""The most read of one wheel's METADATA, inflated or not (torch's is about 30 KiB): a member
that inflates past it is refused, never inflated whole."""


def is_final(version: str) -> bool:
    """A release version: not a pre-, dev- or local version (and a valid one)."""
    if len(version) > _MAX_VERSION:  # int() refuses a 5,000-digit number with a ValueError
        return False
    try:
        parsed = Version(version)
    except (InvalidVersion, ValueError):
        return False
    return not (parsed.is_prerelease or parsed.is_devrelease or parsed.local)


def torch_versions(files: Mapping[str, Sequence[PypiFile]]) -> list[str]:
    """The final torch releases the matrix covers (from :data:`FIRST_TORCH`), newest first."""
    return sorted((v for v in files if is_final(v) and Version(v) >= FIRST_TORCH),
                  key=Version, reverse=True)


# ---------------------------------------------------------------------------------------------
# wheel metadata


def wheel_requires_dist(read: Reader, url: str) -> list[str]:
    """``Requires-Dist`` of the wheel at ``url``: the PEP 658 file first, the zip member second."""
    body = read(url + ".metadata", None)
    text = _metadata_text(body, f"{url}.metadata") if body is not None \
        else _zip_metadata(read, url)
    headers = HeaderParser().parsestr(text)
    return list(headers.get_all("Requires-Dist") or [])


def _metadata_text(data: bytes, where: str) -> str:
    if len(data) > MAX_METADATA_BYTES:
        raise UnexpectedMetadata(f"{where}: METADATA of {len(data)} bytes, more than the "
                                 f"{MAX_METADATA_BYTES // (1024 * 1024)} MiB torchenv reads")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UnexpectedMetadata(f"{where}: METADATA is not UTF-8 (byte {exc.start})") from exc


def _inflate(data: bytes, where: str) -> bytes:
    """A deflated member, inflated up to :data:`MAX_METADATA_BYTES` and no further."""
    inflater = zlib.decompressobj(-15)
    try:
        out = inflater.decompress(data, MAX_METADATA_BYTES + 1)
    except zlib.error as exc:
        raise UnexpectedMetadata(f"{where}: METADATA does not inflate ({exc})") from exc
    if len(out) > MAX_METADATA_BYTES:
        raise UnexpectedMetadata(f"{where}: METADATA inflates past "
                                 f"{MAX_METADATA_BYTES // (1024 * 1024)} MiB; not read "
                                 "(a real one is a few KiB)")
    return out


def _zip_metadata(read: Reader, url: str) -> str:
    """``*.dist-info/METADATA`` of a remote wheel, read with range requests; a record cut
    short is :class:`UnexpectedMetadata`, as is a member that inflates past its limit."""
    try:
        return _zip_member(read, url)
    except struct.error as exc:
        raise UnexpectedMetadata(f"{url}: a zip record is cut short ({exc}); not a wheel?") \
            from exc


def _zip_member(read: Reader, url: str) -> str:

    def part(byte_range: str) -> bytes:
        body = read(url, byte_range)
        if body is None:
            raise UnexpectedMetadata(f"{url}: not found (HTTP 404)")
        return body

    tail = part("-65536")
    eocd = tail.rfind(b"PK\x05\x06")
    if eocd < 0 or len(tail) < eocd + 22:
        raise UnexpectedMetadata(f"{url}: no end-of-central-directory record; not a wheel?")
    cd_size, cd_offset = struct.unpack("<II", tail[eocd + 12 : eocd + 20])
    if cd_offset == 0xFFFFFFFF or cd_size == 0xFFFFFFFF:  # ZIP64
        locator = tail.rfind(b"PK\x06\x07", 0, eocd)
        if locator < 0:
            raise UnexpectedMetadata(f"{url}: ZIP64 locator missing")
        (eocd64_offset,) = struct.unpack("<Q", tail[locator + 8 : locator + 16])
        record = part(f"{eocd64_offset}-{eocd64_offset + 55}")
        if record[:4] != b"PK\x06\x06":
            raise UnexpectedMetadata(f"{url}: bad ZIP64 end record")
        cd_size, cd_offset = struct.unpack("<QQ", record[40:56])
    directory = part(f"{cd_offset}-{cd_offset + cd_size - 1}")
    pos = 0
    while pos + 46 <= len(directory) and directory[pos : pos + 4] == b"PK\x01\x02":
        (method,) = struct.unpack("<H", directory[pos + 10 : pos + 12])
        (csize,) = struct.unpack("<I", directory[pos + 20 : pos + 24])
        name_len, extra_len, comment_len = struct.unpack("<HHH", directory[pos + 28 : pos + 34])
        (local_offset,) = struct.unpack("<I", directory[pos + 42 : pos + 46])
        name = directory[pos + 46 : pos + 46 + name_len].decode("utf-8", "replace")
        pos += 46 + name_len + extra_len + comment_len
        if not re.fullmatch(r"[^/]+\.dist-info/METADATA", name):
            continue
        # the local header is 30 bytes + name + extra; its extra field may differ in length
        local = part(f"{local_offset}-{local_offset + 30 + name_len + 1024 + csize}")
        if local[:4] != b"PK\x03\x04":
            raise UnexpectedMetadata(f"{url}: bad local header for {name}")
        lname, lextra = struct.unpack("<HH", local[26:30])
        data = local[30 + lname + lextra : 30 + lname + lextra + csize]
        if method == 8:
            return _metadata_text(_inflate(data, f"{url}: {name}"), f"{url}: {name}")
        if method == 0:
            return _metadata_text(data, f"{url}: {name}")
        raise UnexpectedMetadata(f"{url}: {name} uses compression method {method}")
    raise UnexpectedMetadata(f"{url}: no *.dist-info/METADATA member")


def _requirements(lines: Iterable[str], where: str) -> list[Requirement]:
    out = []
    for line in lines:
        try:
            out.append(Requirement(line))
        except InvalidRequirement as exc:
            raise UnexpectedMetadata(f"{where}: Requires-Dist {line!r} does not parse: "
                                     f"{exc}") from exc
    return out


def cuda_variant(requires: Sequence[str], machine: str, python: str, *, where: str = "wheel"
                 ) -> tuple[str, Optional[str]]:
    """The variant a Linux wheel is (``cpu`` or ``cuXY``) and the pin that says so.

    ``requires`` is the wheel's ``Requires-Dist``; ``machine`` its ``platform_machine``;
    ``python`` the Python tag its markers are evaluated for.
    """
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
    for req in _requirements(requires, where):
        if not _CUDA_PIN.match(req.name.lower()):
            continue
        try:
            if req.marker is not None and not req.marker.evaluate(env):
                continue
        except (InvalidMarker, UndefinedComparison, UndefinedEnvironmentName) as exc:
            raise UnexpectedMetadata(f"{where}: marker of {req} cannot be evaluated: "
                                     f"{exc}") from exc
        pins = [s.version for s in req.specifier if s.operator == "=="]
        if len(pins) != 1:
            raise UnexpectedMetadata(f"{where}: unexpected CUDA requirement {str(req)!r} "
                                     "(expected one exact == pin)")
        major, minor = pins[0].split(".")[:2]
        return f"cu{major}{minor}", f"{req.name}=={pins[0]}"
    return "cpu", None


def torch_requirement(requires: Sequence[str], *, where: str = "wheel") -> SpecifierSet | None:
    """The specifier of the unconditional ``torch`` requirement, if any."""
    for req in _requirements(requires, where):
        if req.name.lower() == "torch" and (req.marker is None or "extra" not in str(req.marker)):
            return req.specifier
    return None


# ---------------------------------------------------------------------------------------------
# one torch release


@dataclass(frozen=True)
class _Wheel:
    file: PypiFile
    platform: str
    python: str
    glibc: Optional[str]
    build: int


def _wheels(files: Iterable[PypiFile]) -> tuple[list[_Wheel], list[str]]:
    """The wheels of tracked platforms and Pythons, and the names of the other wheels."""
    wheels: list[_Wheel] = []
    skipped: list[str] = []
    for f in files:
        if not f.wheel:
            continue
        parsed = safe_parse_wheel(f.filename)
        if not parsed:
            skipped.append(f.filename)
            continue
        wheels += [_Wheel(f, w.platform, w.python, w.manylinux, w.build) for w in parsed]
    return wheels, skipped


def _ordered(python: Mapping[str, set[str]]) -> dict[str, tuple[str, ...]]:
    return {p: tuple(sorted(python[p], key=python_sort_key)) for p in PLATFORMS if python.get(p)}


def python_by_platform(files: Iterable[PypiFile]) -> dict[str, tuple[str, ...]]:
    """The Python tags with an unyanked wheel, per platform (in :data:`PLATFORMS` order)."""
    found: dict[str, set[str]] = {}
    for w in _wheels(f for f in files if not f.yanked)[0]:
        found.setdefault(w.platform, set()).add(w.python)
    return _ordered(found)


@dataclass(frozen=True)
class ReleaseFacts:
    """What PyPI shows of one torch release (see the module docstring for each field)."""

    torch: str
    released: str
    python: Mapping[str, tuple[str, ...]]
    manylinux: Mapping[str, str]
    pypi_default: Mapping[str, str]
    torchvision: Pairing = None
    torchaudio: Pairing = None
    requires_python: Optional[str] = None
    notes: tuple[str, ...] = ()

    def pairing(self, project: str) -> Pairing:
        return self.torchvision if project == "torchvision" else self.torchaudio


def derive_release(version: str, files: Sequence[PypiFile], read: Reader,
                   companions: Mapping[str, Sequence[Companion]]) -> Optional[ReleaseFacts]:
    """The facts of torch ``version`` from its ``files``; None when all of them are yanked.

    ``read`` fetches the metadata of two wheels per Linux platform; ``companions`` are the
    torchvision and torchaudio releases (:func:`companion_releases`) to pair it with. Raises
    :class:`UnexpectedMetadata` when a wheel's requirements do not say one variant.
    """
    files = [f for f in files if not f.yanked]
    if not files:
        return None
    notes: list[str] = []
    released = min(f.uploaded for f in files)[:10]
    wheels, skipped = _wheels(files)
    if skipped:
        notes.append(f"Wheels for other platforms not tracked: {', '.join(sorted(set(skipped)))}.")
    rebuilt = sorted(w.file.filename for w in wheels if w.build)
    if rebuilt:
        notes.append(f"PyPI also has {len(rebuilt)} re-uploaded wheels with a build tag"
                     f" (e.g. {rebuilt[0]}); metadata read from the highest build.")

    found: dict[str, set[str]] = {}
    for w in wheels:
        found.setdefault(w.platform, set()).add(w.python)
    python = _ordered(found)

    manylinux: dict[str, str] = {}
    for platform in LINUX_MACHINE:
        floors = {w.python: w.glibc for w in wheels
                  if w.platform == platform and w.glibc is not None}
        if not floors:
            continue
        manylinux[platform] = min(floors.values(), key=glibc_sort_key)
        if len(set(floors.values())) > 1:
            detail = ", ".join(f"{py}: {floors[py]}" for py in sorted(floors, key=python_sort_key))
            notes.append(f"{platform} wheels differ in glibc floor by Python tag ({detail}).")

    default: dict[str, str] = {}
    for platform, tags in python.items():
        if platform not in LINUX_MACHINE:
            default[platform] = "cpu"
            continue
        # the metadata of the oldest and the newest Python tag's wheel only
        results: dict[str, tuple[str, Optional[str]]] = {}
        for py in sorted({tags[0], tags[-1]}, key=python_sort_key):
            wheel = min((w for w in wheels if w.platform == platform and w.python == py),
                        key=lambda w: (-w.build, w.file.filename))
            requires = wheel_requires_dist(read, wheel.file.url)
            results[py] = cuda_variant(requires, LINUX_MACHINE[platform], py,
                                       where=wheel.file.filename)
        variants = {variant for variant, _ in results.values()}
        if len(variants) > 1:
            raise UnexpectedMetadata(f"torch {version} {platform}: the variant differs by "
                                     f"Python tag: {results}")
        default[platform] = variants.pop()
        pins = sorted({pin for _, pin in results.values() if pin})
        if pins:
            notes.append(f"{platform} wheels pin {', '.join(pins)}.")

    paired: dict[str, Pairing] = {}
    for project in COMPANIONS:
        paired[project], pair_notes = pair(version, companions.get(project, ()), project)
        notes.extend(pair_notes)
    requires_python = next((f.requires_python for f in files if f.requires_python), None)
    return ReleaseFacts(torch=version, released=released, python=python, manylinux=manylinux,
                        pypi_default=default, torchvision=paired["torchvision"],
                        torchaudio=paired["torchaudio"], requires_python=requires_python,
                        notes=tuple(notes))


# ---------------------------------------------------------------------------------------------
# torchvision and torchaudio


@dataclass(frozen=True)
class Companion:
    """One torchvision/torchaudio release and the torch requirement of its wheels."""

    version: str
    torch_spec: Optional[SpecifierSet]  # None: the wheels do not require torch at all
    yanked: bool

    @property
    def exact(self) -> Optional[str]:
        if self.torch_spec is None:
            return None
        pins = [s.version for s in self.torch_spec if s.operator in ("==", "===")]
        return pins[0] if len(pins) == 1 and "*" not in pins[0] else None

    def describe(self) -> str:
        spec = f"torch{self.torch_spec}" if self.torch_spec is not None else "no torch requirement"
        return f"{self.version} ({spec}{', yanked' if self.yanked else ''})"


@dataclass
class CompanionScan:
    """What :func:`companion_releases` found, and the releases it could not use."""

    releases: list[Companion] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def companion_releases(project: str, files: Mapping[str, Sequence[PypiFile]], read: Reader
                       ) -> CompanionScan:
    """Every final ``project`` release from :data:`FIRST_COMPANION` on, with the torch
    requirement of its first wheel (unyanked first, then by name), oldest first."""
    scan = CompanionScan()
    for version, entries in files.items():
        if not is_final(version) or Version(version) < FIRST_COMPANION[project]:
            continue
        wheels = sorted((f for f in entries if f.wheel), key=lambda f: (f.yanked, f.filename))
        if not wheels:
            scan.warnings.append(f"{project} {version} has no wheel on PyPI")
            continue
        spec = torch_requirement(wheel_requires_dist(read, wheels[0].url),
                                 where=wheels[0].filename)
        scan.releases.append(Companion(version, spec, all(f.yanked for f in entries)))
    scan.releases.sort(key=lambda c: Version(c.version))
    return scan


def pair(torch: str, releases: Sequence[Companion], project: str) -> tuple[Pairing, list[str]]:
    """The ``project`` release made for ``torch`` (by exact pin), and notes saying how."""
    exact = [c for c in releases if c.exact == torch]
    if exact:
        usable = [c for c in exact if not c.yanked] or exact
        notes = []
        if len(exact) > 1:
            others = ", ".join(c.describe() for c in exact)
            notes.append(f"Several {project} releases pin torch=={torch}: {others}; "
                         "newest unyanked kept.")
        return usable[-1].version, notes
    loose = [c for c in releases
             if c.exact is None and (c.torch_spec is None or c.torch_spec.contains(torch))]
    if not loose:
        return None, [f"No {project} release on PyPI pins or admits torch {torch}."]
    listed = ", ".join(c.describe() for c in loose)
    return "unknown", [f"No {project} release on PyPI pins torch=={torch}; releases without "
                       f"an exact pin: {listed}."]


# ---------------------------------------------------------------------------------------------
# releases.yaml entries


def release_entry(facts: ReleaseFacts, *, sources: Sequence[str],
                  conda: Mapping[str, Any], extra_notes: Sequence[str] = ()) -> dict[str, Any]:
    """``facts`` as a ``releases.yaml`` entry, keys in the file's order."""
    entry: dict[str, Any] = {
        "torch": facts.torch,
        "released": facts.released,
        "torchvision": facts.torchvision,
        "torchaudio": facts.torchaudio,
        "python": {p: list(t) for p, t in facts.python.items()},
        "manylinux": dict(facts.manylinux),
        "pypi_default": dict(facts.pypi_default),
        "conda": dict(conda),
        "sources": list(sources),
    }
    notes = [*facts.notes, *extra_notes]
    if notes:
        entry["note"] = " ".join(notes)
    return entry


# Every sentence :func:`derive_release` writes into a note; whatever else a note says was
# written by hand and is carried over when the file is derived again.
_GENERATED = re.compile("|".join([
    r"Wheels for other platforms not tracked: \S+(?:, \S+)*\.(?=\s|$)",
    r"PyPI also has \d+ re-uploaded wheels with a build tag \(e\.g\. \S+\); metadata read "
    r"from the highest build\.",
    r"linux-[a-z0-9_]+ wheels differ in glibc floor by Python tag \([^)]*\)\.",
    r"linux-[a-z0-9_]+ wheels pin \S+?(?:, \S+?)*\.(?=\s|$)",
    r"Several (?:torchvision|torchaudio) releases pin torch==\S+: .*?; newest unyanked kept\.",
    r"No (?:torchvision|torchaudio) release on PyPI pins or admits torch \S+?\.(?=\s|$)",
    r"No (?:torchvision|torchaudio) release on PyPI pins torch==\S+; releases without an exact "
    r"pin: .*?\.(?=\s|$)",
]))


def handwritten_note(note: Optional[str]) -> str:
    """``note`` without the sentences :func:`derive_release` generates."""
    return " ".join(_GENERATED.sub(" ", note or "").split())


def carry_over(entry: dict[str, Any], before: Mapping[str, Any]) -> None:
    """Keep in ``entry`` what PyPI cannot show and ``before`` (the same release in the previous
    file) recorded: its ``conda`` facts, its torchvision/torchaudio pairings where PyPI shows no
    exact pin (a version confirmed elsewhere, or null), its other sources and its hand-written
    note sentences."""
    if "conda" in before:
        entry["conda"] = before["conda"]
    for key in COMPANIONS:
        if entry.get(key) == "unknown" and key in before and before[key] != "unknown":
            entry[key] = before[key]
    entry["sources"] = [*entry["sources"],
                        *(s for s in before.get("sources") or [] if s not in entry["sources"])]
    kept = handwritten_note(before.get("note"))
    if kept:
        entry["note"] = f"{entry['note']} {kept}" if entry.get("note") else kept
