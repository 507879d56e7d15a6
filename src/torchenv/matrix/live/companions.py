"""Keeping companions.yaml current: the triton pins, and drift against each package's sources.

A torch wheel's core metadata names the triton release it needs (``Requires-Dist:
triton==3.4.0; platform_system == "Linux" and …``, in older files ``triton (==3.2.0) ; …``).
:func:`triton_pin` reads it through the same :data:`~torchenv.matrix.live.pypi.Reader` as
``matrix update`` (the PEP 658 ``.metadata`` file first, the wheel's ``METADATA`` member by
range requests second) and writes the ``triton`` entry of companions.yaml; :func:`triton_drift`
says where the data and the wheels disagree.

``matrix update`` compares each package with the live source its builds name, through the same
funnel as the torch update (:mod:`torchenv.matrix.live.update` fetches, these functions judge):

* the PyTorch index page of a package published there (:func:`index_drift`): its builds per
  variant, platform and Python of each release, and newer releases;
* PyPI's JSON API (:func:`pypi_drift`): releases newer than the data's newest, with what their
  files say (platforms, Python tags) and what one wheel's metadata says of torch (``torch==X``:
  coupling ``exact``; ``torch>=X``: ``floor``; nothing: the coupling is left to a person), and
  the torch requirement of each release the data states one for;
* the find-links pages (:func:`find_links_drift`): which wheels of each release exist per torch
  minor, variant, platform and Python;
* the GitHub releases API (:func:`asset_drift`): the release assets' names and ``sha256``
  digests, against the digests and torch minors the data lists.

A drift entry cites the URL that shows it and, where the source gives the whole fact, carries it
``derived`` in companions.yaml's shape for a person to review; a derived fact never replaces a
written one (the two are reported side by side). Nothing here opens a connection: the caller
passes the reader or the parsed answers.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Optional

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import InvalidWheelFilename, parse_wheel_filename

from torchenv.matrix.companions import (
    CompanionBuild,
    CompanionPackage,
    CompanionRelease,
    Companions,
)
from torchenv.matrix.live.pypi import (
    PypiFile,
    Reader,
    UnexpectedMetadata,
    is_final,
    torch_requirement,
    wheel_requires_dist,
)
from torchenv.matrix.live.wheels import MAX_FILENAME, platform_name, safe_parse_wheel
from torchenv.values import TorchVersion

__all__ = [
    "DEFAULT_GITHUB_API",
    "DEFAULT_PYG_BASE",
    "CompanionDrift",
    "asset_drift",
    "find_links_drift",
    "find_links_pages",
    "github_release_api",
    "index_drift",
    "on_pytorch_index",
    "pypi_drift",
    "release_assets",
    "triton_drift",
    "triton_pin",
    "triton_source",
]

DEFAULT_PYG_BASE = "https://data.pyg.org/whl"
"""The folder of the PyG find-links pages as companions.yaml writes their addresses."""
DEFAULT_GITHUB_API = "https://api.github.com"
_INDEX_PACKAGES = ("xformers",)
"""Packages whose builds per variant the PyTorch index carries (besides any with a
``pytorch-index`` build in the data): the xformers maintainers publish there."""
_INDEX_LABEL = re.compile(r"^(cpu|cu\d{2,4}|rocm\d+(\.\d+){0,2}|xpu)$")


def _wheel_name(url: str) -> str:
    return url.rsplit("/", 1)[-1]


def triton_source(torch: str, wheel_url: str) -> dict[str, str]:
    """The source entry a pin read from ``wheel_url`` cites."""
    return {"id": f"pypi-torch-{torch}-metadata",
            "title": f"torch {torch}: METADATA of {_wheel_name(wheel_url)} on PyPI",
            "url": f"{wheel_url}.metadata"}


def triton_pin(read: Reader, torch: str, wheel_url: str) -> dict[str, Any]:
    """The ``triton`` entry for ``torch`` read from the wheel at ``wheel_url``:
    ``requirement`` (``triton==3.4.0``, or None when the wheel requires no triton) and its
    ``marker`` as the metadata writes them, the wheel, and the source it cites.

    Raises :class:`UnexpectedMetadata` for a wheel of another release, an unreadable
    requirement, or two triton requirements."""
    name = _wheel_name(wheel_url)
    if not name.startswith(f"torch-{torch}-") or not name.endswith(".whl"):
        raise UnexpectedMetadata(f"{wheel_url}: not a wheel of torch {torch}")
    found = []
    for line in wheel_requires_dist(read, wheel_url):
        try:
            req = Requirement(line)
        except InvalidRequirement:
            raise UnexpectedMetadata(f"{wheel_url}: Requires-Dist {line!r} is not a "
                                     "requirement") from None
        if req.name == "triton":
            found.append(req)
    if len(found) > 1:
        raise UnexpectedMetadata(f"{wheel_url}: requires triton {len(found)} times")
    entry: dict[str, Any] = {"torch": torch}
    if found:
        req = found[0]
        entry["requirement"] = f"triton{req.specifier}"
        entry["marker"] = None if req.marker is None else str(req.marker)
    else:
        entry["requirement"] = None
    entry["wheel"] = name
    entry["sources"] = [triton_source(torch, wheel_url)["id"]]
    return entry


def triton_drift(data: Companions, entries: Iterable[Mapping[str, Any]]) -> list[str]:
    """Where the pins read from the wheels (``entries``, as :func:`triton_pin` writes them)
    differ from the data: a release the data lacks, or another requirement or marker."""
    drift = []
    for entry in entries:
        torch = str(entry["torch"])
        pin = data.triton_pin(TorchVersion(torch))
        read = (entry.get("requirement"), entry.get("marker"))
        if pin is None:
            drift.append(f"torch {torch}: not in companions.yaml; its wheel requires "
                         f"{read[0] or 'no triton'}")
        elif (pin.requirement, pin.marker) != read:
            drift.append(f"torch {torch}: companions.yaml says {pin.requirement or 'no triton'}"
                         f"{'; ' + pin.marker if pin.marker else ''}, its wheel "
                         f"{read[0] or 'no triton'}{'; ' + read[1] if read[1] else ''}")
    return drift


# --------------------------------------------------------------------------- drift


@dataclass(frozen=True)
class CompanionDrift:
    """One place where a live source and companions.yaml differ.

    ``kind``: ``new-release`` (the source has a release newer than the data's newest),
    ``coupling`` (the wheel's torch requirement is not the data's), ``missing`` (the data lists
    what the source does not have), ``python`` (other Python tags), ``asset-digest`` (a digest
    differs), ``asset-digests`` (digests the data lacks), ``assets-unlisted`` (assets for torch
    minors the data has no build for), ``index-builds`` (variants on the PyTorch index the data
    lists no build for). ``source`` is the URL that shows it; ``derived`` the fact
    in companions.yaml's shape when the source gives it whole."""

    package: str
    kind: str
    text: str
    source: str
    version: Optional[str] = None
    derived: Optional[Any] = None

    def to_json(self) -> dict[str, Any]:
        return {"package": self.package, "kind": self.kind, "version": self.version,
                "text": self.text, "source": self.source, "derived": self.derived}

    def line(self) -> str:
        return f"~ {self.package}: {self.text}"


def _py_tags(interpreter: str, abi: str) -> tuple[str, str] | None:
    """(``3.12`` or a floor like ``3.9``, ``cp``/``abi3``/``none``) of one wheel tag."""
    m = re.fullmatch(r"(cp|py)3(\d{0,3})", interpreter)
    if m is None:
        return None
    minor = m.group(2)
    version = f"3.{minor}" if minor else "3.0"
    if abi == interpreter and m.group(1) == "cp":
        return version, "cp"
    if abi in ("abi3", "none"):
        return version, abi
    return None


def _wheel_facts(files: Iterable[PypiFile]) -> tuple[list[str], dict[str, Any], list[PypiFile]]:
    """Platforms, the Python field (tags, or a floor and its ABI) and the wheels of a release's
    unyanked files; names that are no wheel name (or absurdly long) are left out."""
    platforms: set[str] = set()
    exact: set[str] = set()
    floors: dict[str, str] = {}
    wheels = []
    for f in files:
        if f.yanked or not f.wheel or len(f.filename) > MAX_FILENAME:
            continue
        try:
            _, _, _, tags = parse_wheel_filename(f.filename)
        except (InvalidWheelFilename, ValueError):
            continue
        for tag in tags:
            plat = platform_name(tag.platform)
            py = _py_tags(tag.interpreter, tag.abi)
            if plat is None or py is None:
                continue
            platforms.add(plat)
            wheels.append(f)
            if py[1] == "cp":
                exact.add(py[0])
            else:
                floors[py[1]] = min(floors.get(py[1], py[0]), py[0], key=_py_key)
    python: dict[str, Any] = {}
    if exact and not floors:
        python["python"] = sorted(exact, key=_py_key)
    elif floors:
        abi = "abi3" if "abi3" in floors else "none"
        python = {"python_min": floors[abi], "python_abi": abi}
    return sorted(platforms), python, list(dict.fromkeys(wheels))


def _py_key(tag: str) -> tuple[int, ...]:
    return tuple(int(p) for p in tag.split("."))


def _coupling(spec: SpecifierSet | None) -> dict[str, Any] | None:
    """The coupling a torch requirement states: one ``==X`` pin (exact), one ``>=X`` (floor)."""
    if spec is None:
        return None
    parts = list(spec)
    if len(parts) != 1:
        return None
    one = parts[0]
    if one.operator == "==" and re.fullmatch(r"\d+(\.\d+){1,3}", one.version):
        return {"coupling": "exact", "torch": [one.version],
                "requires_dist": f"torch=={one.version}"}
    if one.operator == ">=":
        return {"coupling": "floor", "torch": f">={one.version}",
                "requires_dist": f"torch>={one.version}"}
    return None


def _metadata_wheel(wheels: Sequence[PypiFile]) -> PypiFile | None:
    """The wheel whose metadata is read: a Linux x86_64 one when there is one."""
    linux = [w for w in wheels if "x86_64" in w.filename and "linux" in w.filename]
    chosen = linux or list(wheels)
    return chosen[0] if chosen else None


def _requirement_text(read: Reader, wheel: PypiFile) -> tuple[SpecifierSet | None, str]:
    requires = wheel_requires_dist(read, wheel.url)
    return torch_requirement(requires, where=wheel.filename), f"{wheel.url}.metadata"


def pypi_drift(pkg: CompanionPackage, files: Mapping[str, Sequence[PypiFile]], json_url: str,
               read: Reader, *, primary: bool = True) -> list[CompanionDrift]:
    """Where PyPI (``files``, read from ``json_url``) and the data of ``pkg`` differ: releases
    newer than the data's newest, and the torch requirement of each release whose data states
    one. Derived facts are ``confirmed`` when ``primary`` (PyPI itself), else ``unknown`` (a
    mirror is a copy and cannot confirm). Raises :class:`UnexpectedMetadata` for a wheel whose
    metadata cannot be read."""
    out: list[CompanionDrift] = []
    newest = max((r.version for r in pkg.releases), default=None)
    fresh = sorted((TorchVersion(v) for v in files
                    if is_final(v) and any(not f.yanked for f in files[v])),
                   reverse=True)
    for value in fresh:
        if newest is not None and value <= newest:
            continue
        out.append(_new_pypi_release(pkg.name, str(value), files[str(value)], json_url, read,
                                     _confirmed(primary)))
    for release in pkg.releases:
        stated = [b for b in release.builds if b.where == "pypi" and b.requires_dist]
        if not stated:
            continue
        version = str(release.version)
        _, _, wheels = _wheel_facts(files.get(version, ()))
        wheel = _metadata_wheel(wheels)
        if wheel is None:
            out.append(CompanionDrift(pkg.name, "missing", f"{version}: companions.yaml lists "
                                      "PyPI wheels, PyPI has none (unyanked)", json_url, version))
            continue
        spec, source = _requirement_text(read, wheel)
        for build in stated:
            assert build.requires_dist is not None
            if spec != Requirement(build.requires_dist).specifier:
                read_text = f"torch{spec}" if spec is not None else "no torch requirement"
                out.append(CompanionDrift(
                    pkg.name, "coupling", f"{version}: companions.yaml says "
                    f"{build.requires_dist}, {wheel.filename} declares {read_text} "
                    "(the data is not changed)", source, version, _coupling(spec)))
    return out


def _confirmed(primary: bool) -> str:
    """The evidence class a fact read from a source gets: a copy cannot confirm."""
    return "confirmed" if primary else "unknown"


def _new_pypi_release(name: str, version: str, files: Sequence[PypiFile], json_url: str,
                      read: Reader, confirmed: str) -> CompanionDrift:
    platforms, python, wheels = _wheel_facts(files)
    released = min((f.uploaded[:10] for f in files if not f.yanked), default="unknown")
    entry: dict[str, Any] = {"version": version, "released": released, "builds": []}
    if not wheels:
        entry["builds"].append({"where": "sdist", "coupling": "none",
                                "evidence": {"exists": confirmed, "coupling": confirmed},
                                "sources": [json_url]})
        return CompanionDrift(name, "new-release", f"+ release {version} on PyPI: a source "
                              "distribution only (installing it compiles)", json_url, version,
                              entry)
    wheel = _metadata_wheel(wheels)
    assert wheel is not None
    spec, source = _requirement_text(read, wheel)
    coupling = _coupling(spec)
    build: dict[str, Any] = {"where": "pypi", **(coupling or {"coupling": None}),
                             "platforms": platforms, **python,
                             "evidence": {"exists": confirmed,
                                          "coupling": confirmed if coupling else "unknown",
                                          "python": confirmed},
                             "sources": [json_url, source]}
    entry["builds"].append(build)
    if coupling is None:
        says = (f"declares torch{spec}" if spec is not None else "declares no torch requirement")
        how = f"{says}: its coupling is for a person to set from the maintainers' statement"
    else:
        how = f"declares {coupling['requires_dist']} (coupling {coupling['coupling']})"
    return CompanionDrift(name, "new-release", f"+ release {version} on PyPI "
                          f"({', '.join(platforms)}); {wheel.filename} {how}", source, version,
                          entry)


# --------------------------------------------------------------------------- find-links


def _find_links_url(template: str, minor: str, variant: str, base: str) -> str:
    url = template.replace("{torch_minor}", minor).replace("{variant}", variant)
    if url.startswith(DEFAULT_PYG_BASE + "/"):
        url = base.rstrip("/") + url[len(DEFAULT_PYG_BASE):]
    return url


def find_links_pages(packages: Iterable[CompanionPackage], base: str) -> list[str]:
    """Every find-links page the data's builds name (their torch minors times variants), with
    the folder ``base`` in place of data.pyg.org's, in a stable order."""
    urls: dict[str, None] = {}
    for pkg in packages:
        for _, build, minor, variant in _find_links_cells(pkg):
            assert build.url is not None
            urls[_find_links_url(build.url, minor, variant, base)] = None
    return list(urls)


def _find_links_cells(pkg: CompanionPackage
                      ) -> Iterable[tuple[CompanionRelease, CompanionBuild, str, str]]:
    for release in pkg.releases:
        for build in release.builds:
            if build.where != "find-links" or build.url is None:
                continue
            for minor in build.torch_minors:
                for variant in build.variants:
                    yield release, build, minor, str(variant)


def find_links_drift(pkg: CompanionPackage, pages: Mapping[str, Optional[Sequence[str]]],
                     base: str) -> list[CompanionDrift]:
    """Where the find-links pages (URL -> the file names each lists, None for a page that is
    not there) and the data of ``pkg`` differ: a page gone, a build's platform or Python tags
    missing or added, and releases of ``pkg`` on the pages newer than the data's newest."""
    out: list[CompanionDrift] = []
    project = pkg.name.replace("_", "-").lower()
    newest = max((r.version for r in pkg.releases), default=None)
    newer: dict[str, list[str]] = {}
    for release, build, minor, variant in _find_links_cells(pkg):
        assert build.url is not None
        url = _find_links_url(build.url, minor, variant, base)
        names = pages.get(url)
        version = str(release.version)
        if names is None:
            out.append(CompanionDrift(pkg.name, "missing", f"{version}: the find-links page "
                                      f"for torch {minor} {variant} is not there", url, version))
            continue
        label = f"pt{minor.replace('.', '')}{variant}"
        found: dict[str, set[str]] = {}
        for name in names:  # a page's label may carry the file's folder: torch-2.12.0+cpu/…
            for w in safe_parse_wheel(name.rsplit("/", 1)[-1]) or ():
                if w.project != project:
                    continue
                if w.variant == label and w.version == version:
                    found.setdefault(w.platform, set()).add(w.python)
                elif (w.variant or "").startswith(f"pt{minor.replace('.', '')}") \
                        and newest is not None and is_final(w.version) \
                        and TorchVersion(w.version) > newest:
                    newer.setdefault(w.version, [])
                    if url not in newer[w.version]:
                        newer[w.version].append(url)
        for plat in map(str, build.platforms):
            got = found.get(plat, set())
            want = set(build.python)
            where = f"{version} for torch {minor} {variant} on {plat}"
            if not got:
                out.append(CompanionDrift(pkg.name, "missing", f"{where}: no wheel on the "
                                          "find-links page", url, version))
            elif got != want:
                gone = sorted(want - got, key=_py_key)
                added = sorted(got - want, key=_py_key)
                text = "; ".join(filter(None, (
                    f"Python {', '.join(gone)} not on the page" if gone else "",
                    f"Python {', '.join(added)} on the page, not in the data" if added else "")))
                out.append(CompanionDrift(pkg.name, "python", f"{where}: {text}", url, version,
                                          {"python": sorted(got, key=_py_key)}))
    for version in sorted(newer, key=TorchVersion, reverse=True):
        out.append(CompanionDrift(pkg.name, "new-release", f"+ release {version} on "
                                  f"{len(newer[version])} find-links page(s)",
                                  newer[version][0], version))
    return out


# --------------------------------------------------------------------------- release assets

_RELEASE_URL = re.compile(r"^https://github\.com/([A-Za-z0-9_.-]+)/([A-Za-z0-9_.-]+)"
                          r"/releases/download/([^/]+)/")
_DIGEST = re.compile(r"^sha256:([0-9a-f]{64})$")
_MAX_ASSETS = 10_000


def github_release_api(build_url: str, api_base: str) -> str | None:
    """The GitHub releases API address of the release a release-asset url names."""
    m = _RELEASE_URL.match(build_url)
    if m is None:
        return None
    owner, repo, tag = m.groups()
    return f"{api_base.rstrip('/')}/repos/{owner}/{repo}/releases/tags/{tag}"


def release_assets(url: str, doc: Any) -> dict[str, Optional[str]]:
    """Asset name -> sha256 (None where the API states no digest) of a releases API answer;
    :class:`UnexpectedMetadata` naming ``url`` and the bad part otherwise."""
    assets = doc.get("assets") if isinstance(doc, dict) else None
    if not isinstance(assets, list):
        raise UnexpectedMetadata(f"{url}: no 'assets' list (is this GitHub's releases API?)")
    if len(assets) > _MAX_ASSETS:
        raise UnexpectedMetadata(f"{url}: {len(assets)} assets, more than the {_MAX_ASSETS} "
                                 "torchenv reads of one release")
    out: dict[str, Optional[str]] = {}
    for i, asset in enumerate(assets):
        name = asset.get("name") if isinstance(asset, dict) else None
        if not isinstance(name, str) or not name:
            raise UnexpectedMetadata(f"{url}: assets[{i}] has no 'name'")
        if len(name) > MAX_FILENAME:
            raise UnexpectedMetadata(f"{url}: assets[{i}] has a name of {len(name)} "
                                     f"characters, longer than any file name ({MAX_FILENAME})")
        digest = asset.get("digest")
        if digest is None:
            out[name] = None
            continue
        m = _DIGEST.match(digest) if isinstance(digest, str) else None
        if m is None:
            raise UnexpectedMetadata(f"{url}: assets[{i}] ({name}): digest "
                                     f"{str(digest)[:80]!r} is not 'sha256:' and 64 hex digits")
        out[name] = m.group(1)
    return out


def _asset_pattern(template: str) -> re.Pattern[str]:
    name = template.rsplit("/", 1)[-1]
    parts = re.split(r"\{([^{}]*)\}", name)
    seen: set[str] = set()
    out = []
    for i, part in enumerate(parts):
        if i % 2 == 0:
            out.append(re.escape(part))
        elif part in seen:
            out.append(f"(?P={part})")
        else:
            seen.add(part)
            out.append(f"(?P<{part}>[^/]+?)")
    return re.compile("".join(out))


def asset_drift(pkg: CompanionPackage, assets: Mapping[str, Mapping[str, Optional[str]]],
                api_base: str, *, primary: bool = True) -> list[CompanionDrift]:
    """Where the release assets (API URL -> asset name -> sha256, as :func:`release_assets`
    reads them) and the release-asset builds of ``pkg`` differ: a listed file gone, a digest
    that differs, digests the data lacks (derived, confirmed by the API), and assets for torch
    minors no build of the release names. A derived digest is ``confirmed`` when ``primary``
    (GitHub's API itself), else ``unknown``."""
    out: list[CompanionDrift] = []
    for release in pkg.releases:
        version = str(release.version)
        builds = [b for b in release.builds if b.where == "release-asset" and b.url]
        for template in dict.fromkeys(b.url for b in builds if b.url):
            api = github_release_api(template, api_base)
            if api is None or api not in assets:
                continue
            live = assets[api]
            mine = [b for b in builds if b.url == template]
            listed = {a.file: a.sha256 for b in mine for a in b.assets}
            for file, sha in listed.items():
                if file not in live:
                    out.append(CompanionDrift(pkg.name, "missing", f"{version}: asset {file} "
                                              "is not on the release", api, version))
                elif live[file] is not None and live[file] != sha:
                    out.append(CompanionDrift(
                        pkg.name, "asset-digest", f"{version}: {file}: companions.yaml says "
                        f"sha256 {sha}, the release {live[file]} (the data is not changed)",
                        api, version, {"file": file, "sha256": live[file]}))
            pattern = _asset_pattern(template)
            minors = {m for b in mine for m in b.torch_minors}
            lacking: list[dict[str, Any]] = []
            unlisted: dict[str, list[str]] = {}
            for name, digest in sorted(live.items()):
                m = pattern.fullmatch(name)
                if m is None:
                    continue
                minor = m.groupdict().get("torch_minor") or ""
                if minor not in minors:
                    unlisted.setdefault(minor, []).append(name)
                elif name not in listed and digest is not None:
                    lacking.append({"file": name, "sha256": digest,
                                    "evidence": _confirmed(primary),
                                    "sources": [api]})
            if lacking:
                out.append(CompanionDrift(pkg.name, "asset-digests", f"{version}: "
                                          f"{len(lacking)} asset(s) of its builds with a digest "
                                          "on the release that companions.yaml lacks", api,
                                          version, lacking))
            if unlisted:
                keys = sorted(unlisted, key=lambda k: (len(k), k))
                count = sum(len(v) for v in unlisted.values())
                out.append(CompanionDrift(
                    pkg.name, "assets-unlisted", f"{version}: {count} asset(s) for torch "
                    f"{', '.join(k[:20] for k in keys)}, which no build in companions.yaml "
                    "names", api, version, {k: unlisted[k] for k in keys}))
    return out


# --------------------------------------------------------------------------- the PyTorch index


def on_pytorch_index(pkg: CompanionPackage) -> bool:
    """Whether the package's builds per variant are looked for on the PyTorch index."""
    return pkg.name in _INDEX_PACKAGES or any(
        b.where == "pytorch-index" for r in pkg.releases for b in r.builds)


def _index_builds(project: str, names: Iterable[str]
                  ) -> dict[str, dict[str, tuple[set[str], set[str], dict[str, str]]]]:
    """release -> variant -> (platforms, cpXY tags, {abi3/none: floor}) of a project's wheels
    on an index page; names that are no wheel of it, or too long, are left out."""
    out: dict[str, dict[str, tuple[set[str], set[str], dict[str, str]]]] = {}
    for raw in names:
        name = raw.rsplit("/", 1)[-1]
        if not name.endswith(".whl") or len(name) > MAX_FILENAME:
            continue
        try:
            dist, version, _, tags = parse_wheel_filename(name)
        except (InvalidWheelFilename, ValueError):
            continue
        label = version.local or ""
        if dist != project or not _INDEX_LABEL.match(label) or not is_final(version.public):
            continue
        plats, exact, floors = out.setdefault(version.public, {}).setdefault(
            label, (set(), set(), {}))
        for tag in tags:
            plat, py = platform_name(tag.platform), _py_tags(tag.interpreter, tag.abi)
            if plat is None or py is None:
                continue
            plats.add(plat)
            if py[1] == "cp":
                exact.add(py[0])
            else:
                floors[py[1]] = min(floors.get(py[1], py[0]), py[0], key=_py_key)
    return out


def index_drift(pkg: CompanionPackage, names: Sequence[str], page_url: str, *,
                primary: bool = True) -> list[CompanionDrift]:
    """Where the PyTorch index page of ``pkg`` (the file names it lists, read from
    ``page_url``) and the data differ: variants of a release the data lists no index build
    for (derived as ``pytorch-index`` builds, their coupling left unknown: only names were
    read), index builds the data lists that the page lacks, and newer releases. Derived facts
    are ``confirmed`` when ``primary`` (download.pytorch.org itself), else ``unknown``."""
    out: list[CompanionDrift] = []
    found = _index_builds(pkg.name, names)
    newest = max((r.version for r in pkg.releases), default=None)
    for release in pkg.releases:
        version = str(release.version)
        listed = {str(v) for b in release.builds if b.where == "pytorch-index"
                  for v in b.variants}
        live = found.get(version, {})
        for gone in sorted(listed - set(live)):
            out.append(CompanionDrift(pkg.name, "missing", f"{version}: no {gone} build on "
                                      "the PyTorch index", page_url, version))
        extra = sorted(set(live) - listed)
        if extra:
            out.append(CompanionDrift(
                pkg.name, "index-builds", f"{version}: the PyTorch index has builds for "
                f"{', '.join(extra)} that companions.yaml does not list", page_url, version,
                _derived_index_builds(live, extra, page_url, primary)))
    for version in sorted(found, key=TorchVersion, reverse=True):
        if newest is not None and TorchVersion(version) > newest:
            variants = sorted(found[version])
            out.append(CompanionDrift(
                pkg.name, "new-release", f"+ release {version} on the PyTorch index "
                f"({', '.join(variants)})", page_url, version,
                {"version": version, "released": "unknown",
                 "builds": _derived_index_builds(found[version], variants, page_url,
                                                 primary)}))
    return out


def _derived_index_builds(live: Mapping[str, tuple[set[str], set[str], dict[str, str]]],
                          variants: Sequence[str], page_url: str,
                          primary: bool) -> list[dict[str, Any]]:
    """One ``pytorch-index`` build per set of variants with the same platforms and tags."""
    groups: dict[tuple[Any, ...], list[str]] = {}
    for v in variants:
        plats, exact, floors = live[v]
        key = (tuple(sorted(plats)), tuple(sorted(exact, key=_py_key)),
               tuple(sorted(floors.items())))
        groups.setdefault(key, []).append(v)
    builds = []
    for (plats, exact, floors), vs in groups.items():
        python: dict[str, Any] = {"python": list(exact)} if exact and not floors else {}
        if floors:
            abi = "abi3" if "abi3" in dict(floors) else "none"
            python = {"python_min": dict(floors)[abi], "python_abi": abi}
        builds.append({"where": "pytorch-index", "coupling": None, "variants": vs,
                       "platforms": list(plats), **python,
                       "evidence": {"exists": _confirmed(primary), "coupling": "unknown",
                                    "python": _confirmed(primary)},
                       "sources": [page_url]})
    return builds
