"""``matrix update``: read the live index and PyPI, diff against the matrix, write the overlay.

Order of work, so that a failure anywhere leaves the previous overlay untouched:

1. check the base URLs (HTTPS rule), load the embedded matrix and the current overlay;
2. read ``<index>/torch/``, ``/torchvision/``, ``/torchaudio/`` (PEP 691 JSON when the server
   offers it, PEP 503 HTML otherwise) and ``<pypi>/pypi/torch/json``, and diff them against the
   matrix: new releases, variants and platforms on the index, and changed Python tags of the
   releases the matrix has (on PyPI, and of each variant on the index);
3. with ``check`` stop here; otherwise derive each new release's PyPI facts exactly as
   ``tools/derive_pypi.py`` does for the embedded data (:mod:`torchenv.matrix.live.pypi`):
   date, Python tags, manylinux floors, the build PyPI serves (from its Linux wheels'
   metadata), and the torchvision / torchaudio release pinned to it (from
   ``<pypi>/pypi/torchvision/json``, ``/torchaudio/json`` and one wheel's metadata each);
4. build the overlay, merge it with the embedded documents and validate the result exactly as
   ``matrix check`` does;
5. only then write it: temp file in the same folder, fsync, copy of the old file to ``.bak``,
   ``os.replace``.

Beside the torch data, the companion data (companions.yaml) is compared with its packages' live
sources through the same fetcher (:func:`_companion_drift`; the judging is in
:mod:`torchenv.matrix.live.companions`): PyPI's JSON API and wheel metadata, the PyG find-links
pages, GitHub's releases API. Its drift is reported (``companions`` in ``--json``, and exit 1
with ``check``) with the facts the sources give whole attached; companions.yaml is embedded
data, so the update never writes it.
"""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from torchenv import __version__
from torchenv.errors import BadInput, MatrixError
from torchenv.matrix.index import DEFAULT_INDEX_BASE
from torchenv.matrix.live.companions import (
    DEFAULT_GITHUB_API,
    DEFAULT_PYG_BASE,
    CompanionDrift,
    asset_drift,
    find_links_drift,
    find_links_pages,
    github_release_api,
    index_drift,
    on_pytorch_index,
    pypi_drift,
    release_assets,
)
from torchenv.matrix.live.derive import (
    Diff,
    IndexSnapshot,
    LiveSources,
    build_overlay,
    diff_matrix,
    snapshot_from_filenames,
)
from torchenv.matrix.live.http import Fetcher, FetchPolicy, check_url
from torchenv.matrix.live.pypi import (
    COMPANIONS,
    Companion,
    PypiFile,
    ReleaseFacts,
    UnexpectedMetadata,
    companion_releases,
    derive_release,
    project_files,
    python_by_platform,
)
from torchenv.matrix.live.wheels import PEP691_ACCEPT, MalformedPage, page_filenames
from torchenv.matrix.model import Matrix
from torchenv.values import TorchVersion

__all__ = [
    "DEFAULT_PYPI_BASE",
    "ProgressHook",
    "UpdateOptions",
    "UpdateResult",
    "run_update",
    "write_overlay",
]

DEFAULT_PYPI_BASE = "https://pypi.org"
PROJECTS = ("torch", "torchvision", "torchaudio")

#: called as ``hook(description, done, total)`` after each request
ProgressHook = Callable[[str, int, int], None]


@dataclass(frozen=True)
class UpdateOptions:
    index_base: str = DEFAULT_INDEX_BASE
    pypi_base: str = DEFAULT_PYPI_BASE
    output: Optional[Path] = None       # None: loader.default_overlay_path()
    check: bool = False
    since: Optional[TorchVersion] = None  # None: the oldest release in the matrix
    force: bool = False                 # replace an output that is not a matrix overlay
    policy: FetchPolicy = field(default_factory=FetchPolicy)
    companions: bool = True             # compare companions.yaml with its live sources too
    pyg_base: str = DEFAULT_PYG_BASE
    github_api_base: str = DEFAULT_GITHUB_API


@dataclass
class UpdateResult:
    diff: Diff
    overlay_path: Path
    written: bool = False
    not_on_pypi: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    pages: dict[str, int] = field(default_factory=dict)  # URL -> files listed
    requests: int = 0
    companions: list[CompanionDrift] = field(default_factory=list)

    @property
    def up_to_date(self) -> bool:
        return self.diff.empty and not self.companions

    def lines(self) -> list[str]:
        """The differences, one line each: the torch data's, then the companions'."""
        return self.diff.lines() + [d.line() for d in self.companions]

    def to_json(self) -> dict[str, Any]:
        return {
            "differences": self.diff.to_json(),
            "companions": [d.to_json() for d in self.companions],
            "up_to_date": self.up_to_date,
            "overlay": str(self.overlay_path),
            "written": self.written,
            "not_on_pypi": self.not_on_pypi,
            "warnings": self.warnings,
            "pages": self.pages,
            "requests": self.requests,
        }


def _today() -> str:
    return _dt.date.today().isoformat()


class _Progress:
    def __init__(self, hook: ProgressHook | None, total: int) -> None:
        self.hook = hook
        self.total = total
        self.done = 0

    def step(self, what: str) -> None:
        self.done += 1
        self.total = max(self.total, self.done)
        if self.hook is not None:
            self.hook(what, self.done, self.total)


def run_update(options: UpdateOptions, *, progress: ProgressHook | None = None,
               today: str | None = None) -> UpdateResult:
    """Do one update (or ``check``); raises NetworkError/MatrixError/BadInput, writing nothing."""
    from torchenv.matrix.loader import default_overlay_path, load_embedded_documents

    index_base = options.index_base.rstrip("/")
    pypi_base = options.pypi_base.rstrip("/")
    check_url(index_base + "/", allow_http=options.policy.allow_http, field="index_base")
    check_url(pypi_base + "/", allow_http=options.policy.allow_http, field="pypi_base")
    if options.companions:
        check_url(options.pyg_base.rstrip("/") + "/", allow_http=options.policy.allow_http,
                  field="pyg_base")
        check_url(options.github_api_base.rstrip("/") + "/",
                  allow_http=options.policy.allow_http, field="github_api_base")
    path = options.output or default_overlay_path()
    if not options.check and not options.force:
        _refuse_what_is_not_an_overlay(path)
    result = UpdateResult(diff=Diff(), overlay_path=path)

    documents, _ = load_embedded_documents()
    origin = {name: f"matrix/data/{name} + {path.name}" for name in documents}
    merged, previous, matrix = _current_overlay(path, documents, origin, result)

    fetcher = Fetcher(options.policy)
    bar = _Progress(progress, len(PROJECTS) + 1)
    try:
        torch_snap = _index_snapshots(fetcher, index_base, result, bar)["torch"]
        torch_files = _project(fetcher, pypi_base, "torch")
        bar.step("PyPI torch")
        pypi_python = _pypi_python(matrix, torch_files, options.since, result)
        result.diff = diff_matrix(matrix, torch_snap, pypi_python=pypi_python,
                                  since=options.since)
        if options.companions:
            _companion_drift(fetcher, options, result, bar)
        if options.check or result.diff.empty:
            return result
        facts = _new_release_facts(fetcher, pypi_base, torch_files, result, bar)
    finally:
        result.requests = fetcher.requests_made
        fetcher.close()

    live = LiveSources(index_base=index_base, pypi_base=pypi_base,
                       index_primary=index_base == DEFAULT_INDEX_BASE,
                       pypi_primary=pypi_base == DEFAULT_PYPI_BASE, date=today or _today(),
                       generated_by=f"torchenv {__version__} matrix update")
    overlay = build_overlay(documents=merged, previous=previous, diff=result.diff,
                            torch=torch_snap, facts=facts, live=live)
    _check_updated(documents, overlay, origin)
    write_overlay(path, overlay)
    result.written = True
    return result


def _current_overlay(path: Path, documents: dict[str, Any], origin: dict[str, str],
                     result: UpdateResult) -> tuple[dict[str, Any], dict[str, Any] | None, Matrix]:
    """The embedded documents merged with the overlay at ``path`` (when there is a usable one),
    that overlay, and the matrix they build; a broken overlay is a warning, and replaced."""
    from torchenv.matrix.loader import merge_overlay, read_yaml
    from torchenv.matrix.validate import build_matrix

    if path.is_file():
        try:
            doc = read_yaml(path)
            if not isinstance(doc, dict):
                raise MatrixError(f"{path}: expected a mapping at the top level")
            merged = merge_overlay(documents, doc)
            return merged, doc, build_matrix(merged, origin=origin)
        except MatrixError as exc:
            result.warnings.append(f"current overlay ignored ({exc.message}); a new one "
                                   "replaces it and the old file is kept as .bak")
    return documents, None, build_matrix(documents, origin=origin)


def _index_snapshots(fetcher: Fetcher, index_base: str, result: UpdateResult,
                     bar: _Progress) -> dict[str, IndexSnapshot]:
    """What the wheel index lists for each project; a torch page without wheels is an error."""
    snapshots: dict[str, IndexSnapshot] = {}
    for project in PROJECTS:
        url = f"{index_base}/{project}/"
        resp = fetcher.get(url, accept=PEP691_ACCEPT)
        assert resp is not None
        names = page_filenames(resp.url, resp.body, resp.content_type)
        snapshots[project] = snapshot_from_filenames(project, names)
        result.pages[url] = len(names)
        if project == "torch" and not snapshots[project].versions:
            raise MalformedPage(f"{url}: lists no torch wheels",
                                hint="is --index-base the root of a PyTorch wheel index?")
        bar.step(f"{project} index")
    invalid = snapshots["torch"].invalid
    if invalid:
        result.warnings.append(f"{len(invalid)} file names on the torch page are "
                               f"not valid wheel names (first: {invalid[0]})")
    return snapshots


def _pypi_python(matrix: Matrix, torch_files: Mapping[str, Sequence[PypiFile]],
                 since: TorchVersion | None,
                 result: UpdateResult) -> dict[str, dict[str, tuple[str, ...]]]:
    """The Python tags per platform of each release of ``matrix`` with wheels on PyPI."""
    pypi_python = {r.torch: python_by_platform(torch_files.get(str(r.torch), ()))
                   for r in matrix.releases}
    missing = [str(t) for t, tags in pypi_python.items()
               if not tags and (since is None or t >= since)]
    if missing:
        result.warnings.append("in the matrix but with no wheel on PyPI (their Python tags "
                               "were not compared): " + ", ".join(missing))
    return {str(t): tags for t, tags in pypi_python.items() if tags}


def _new_release_facts(fetcher: Fetcher, pypi_base: str,
                       torch_files: Mapping[str, Sequence[PypiFile]], result: UpdateResult,
                       bar: _Progress) -> dict[str, ReleaseFacts]:
    """The PyPI facts of each new release already on PyPI; the others are listed in
    ``result.not_on_pypi``."""

    def read(url: str, byte_range: Optional[str]) -> Optional[bytes]:
        resp = fetcher.get(url, allow_404=True, byte_range=byte_range)
        bar.step(f"PyPI {url.rsplit('/', 1)[-1][:60]}")
        return None if resp is None else resp.body

    facts: dict[str, ReleaseFacts] = {}
    on_pypi = [v for v in result.diff.new_releases
               if any(not f.yanked for f in torch_files.get(v, ()))]
    result.not_on_pypi = [v for v in result.diff.new_releases if v not in on_pypi]
    if on_pypi:
        bar.total += 4 * len(on_pypi)  # two wheels' metadata per Linux platform
        companions = _companions(fetcher, pypi_base, read, result, bar)
        for version in on_pypi:
            try:
                found = derive_release(version, torch_files[version], read, companions)
            except UnexpectedMetadata as exc:
                raise MalformedPage(f"PyPI torch {version}: {exc}") from exc
            if found is not None:
                facts[version] = found
    if result.not_on_pypi:
        result.warnings.append("on the index but not on PyPI yet (left out of the overlay): "
                               + ", ".join(result.not_on_pypi))
    return facts


def _check_updated(documents: dict[str, Any], overlay: dict[str, Any],
                   origin: dict[str, str]) -> None:
    from torchenv.matrix.loader import merge_overlay
    from torchenv.matrix.validate import build_matrix

    try:
        build_matrix(merge_overlay(documents, overlay), origin=origin)
    except MatrixError as exc:
        raise MatrixError(f"the updated matrix does not validate, overlay not written: "
                          f"{exc.message}", hint="report this; the live index may have "
                          "changed shape") from exc


def _project(fetcher: Fetcher, pypi_base: str, project: str) -> dict[str, list[PypiFile]]:
    """``<pypi>/pypi/<project>/json`` as version -> files."""
    url = f"{pypi_base}/pypi/{project}/json"
    resp = fetcher.get(url, accept="application/json")
    assert resp is not None
    try:
        return project_files(resp.url, json.loads(resp.body))
    except (ValueError, RecursionError) as exc:  # bad or absurdly nested JSON, or
        # UnexpectedMetadata naming what is missing
        text = str(exc) if isinstance(exc, UnexpectedMetadata) else f"{url}: not valid JSON " \
            f"({exc})"
        raise MalformedPage(text, hint="is --pypi-base the root of PyPI or a mirror of its "
                            "JSON API?") from exc


def _companions(fetcher: Fetcher, pypi_base: str, read: Any, result: UpdateResult,
                bar: _Progress) -> dict[str, list[Companion]]:
    """torchvision and torchaudio releases with their torch requirement, to pair new releases."""
    out: dict[str, list[Companion]] = {}
    for project in COMPANIONS:
        files = _project(fetcher, pypi_base, project)
        bar.step(f"PyPI {project}")
        bar.total += sum(1 for v in files if v)  # about one metadata file per release
        try:
            scan = companion_releases(project, files, read)
        except UnexpectedMetadata as exc:
            raise MalformedPage(f"PyPI {project}: {exc}") from exc
        result.warnings.extend(scan.warnings)
        out[project] = scan.releases
    return out


def _companion_drift(fetcher: Fetcher, options: UpdateOptions, result: UpdateResult,
                     bar: _Progress) -> None:
    """companions.yaml against the PyTorch index, PyPI, the find-links pages and the GitHub
    releases API."""
    from torchenv.matrix.companions import load_companions

    data = load_companions()
    pypi_base = options.pypi_base.rstrip("/")

    def read(url: str, byte_range: Optional[str]) -> Optional[bytes]:
        resp = fetcher.get(url, allow_404=True, byte_range=byte_range)
        bar.step(f"PyPI {url.rsplit('/', 1)[-1][:60]}")
        return None if resp is None else resp.body

    on_pypi = [p for p in data.packages
               if any(b.where in ("pypi", "sdist") for r in p.releases for b in r.builds)]
    pages = find_links_pages(data.packages, options.pyg_base)
    on_index = [p for p in data.packages if on_pytorch_index(p)]
    bar.total += len(on_pypi) + len(pages) + len(on_index)
    for pkg in on_index:
        url = f"{options.index_base.rstrip('/')}/{pkg.name}/"
        resp = fetcher.get(url, accept=PEP691_ACCEPT)
        assert resp is not None
        names = page_filenames(resp.url, resp.body, resp.content_type)
        result.pages[url] = len(names)
        bar.step(f"{pkg.name} index")
        result.companions += index_drift(
            pkg, names, url, primary=options.index_base.rstrip("/") == DEFAULT_INDEX_BASE)
    for pkg in on_pypi:
        files = _project(fetcher, pypi_base, pkg.name)
        bar.step(f"PyPI {pkg.name}")
        try:
            result.companions += pypi_drift(pkg, files, f"{pypi_base}/pypi/{pkg.name}/json",
                                            read, primary=pypi_base == DEFAULT_PYPI_BASE)
        except UnexpectedMetadata as exc:
            raise MalformedPage(f"PyPI {pkg.name}: {exc}") from exc
    listed: dict[str, Optional[list[str]]] = {}
    for url in pages:
        resp = fetcher.get(url, allow_404=True)
        bar.step(f"find-links {url.rsplit('/', 1)[-1][:60]}")
        listed[url] = None if resp is None else page_filenames(resp.url, resp.body,
                                                                resp.content_type)
        if listed[url] is not None:
            result.pages[url] = len(listed[url] or ())
    for pkg in data.packages:
        result.companions += find_links_drift(pkg, listed, options.pyg_base)
    for pkg in data.packages:
        apis: dict[str, str] = {}  # releases API URL -> the release whose assets it lists
        for r in pkg.releases:
            for b in r.builds:
                api = github_release_api(b.url, options.github_api_base) \
                    if b.where == "release-asset" and b.url else None
                if api is not None:
                    apis.setdefault(api, str(r.version))
        assets = {}
        for api, version in apis.items():
            resp = fetcher.get(api, accept="application/vnd.github+json", allow_404=True)
            bar.step(f"GitHub {api.rsplit('/', 1)[-1][:60]}")
            if resp is None:
                result.companions.append(CompanionDrift(
                    pkg.name, "missing", f"{version}: the release is not on GitHub (its "
                    "assets are listed in companions.yaml)", api, version))
                continue
            try:
                assets[api] = release_assets(api, json.loads(resp.body))
            except (ValueError, RecursionError) as exc:
                text = str(exc) if isinstance(exc, UnexpectedMetadata) else \
                    f"{api}: not valid JSON ({exc})"
                raise MalformedPage(text, hint="is --github-api-base the root of GitHub's "
                                    "REST API?") from exc
        result.companions += asset_drift(
            pkg, assets, options.github_api_base,
            primary=options.github_api_base.rstrip("/") == DEFAULT_GITHUB_API)


def write_overlay(path: Path, overlay: dict[str, Any]) -> None:
    """Write atomically; the file it replaces is kept as ``<name>.bak`` (or, when that name is
    taken, the first free ``<name>.N.bak``: an older backup is never overwritten)."""
    import yaml

    text = ("# written by `torchenv matrix update`; entries here replace or extend the "
            "embedded matrix\n" + yaml.safe_dump(overlay, sort_keys=False, width=100,
                                                 allow_unicode=True))
    from torchenv._files import write_atomic

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_file():
            _back_up(path)
    except OSError as exc:
        raise MatrixError(f"{path}: cannot write the overlay: {exc.strerror or exc}",
                          hint="choose another place with --output") from exc
    write_atomic(path, text)


def _back_up(path: Path) -> Path:
    """A copy of ``path`` under the first backup name nobody has taken (claimed exclusively)."""
    from torchenv._files import write_atomic

    data = path.read_bytes()
    for n in range(1000):
        backup = path.with_name(path.name + (".bak" if n == 0 else f".{n}.bak"))
        try:
            return write_atomic(backup, data, force=False)
        except BadInput:
            if not backup.exists():  # a failure other than a taken name
                raise
    raise MatrixError(f"{path}: a thousand backups of it exist already",
                      hint="remove old .bak files beside it")


def _refuse_what_is_not_an_overlay(path: Path) -> None:
    """An existing file at ``path`` is replaced only when it is a matrix overlay (a YAML
    mapping of overlay keys, broken entries or not): any other file is refused before anything
    is fetched."""
    from torchenv.matrix.loader import is_overlay_document, read_yaml

    if not path.exists() and not path.is_symlink():
        return
    why = None
    if not path.is_file():
        why = "is not a regular file"
    else:
        try:
            doc = read_yaml(path)
        except MatrixError:
            doc = None
        if not is_overlay_document(doc):
            why = "is not a matrix overlay"
    if why is not None:
        raise BadInput(f"{path} {why}; matrix update will not replace it",
                       hint="write the overlay somewhere else, or pass --force to replace it")
