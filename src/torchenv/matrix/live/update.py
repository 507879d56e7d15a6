"""``matrix update``: read the live index and PyPI, diff against the matrix, write the overlay.

Order of work, so that a failure anywhere leaves the previous overlay untouched:

1. check the base URLs (HTTPS rule), load the embedded matrix and the current overlay;
2. read ``<index>/torch/``, ``/torchvision/``, ``/torchaudio/`` (PEP 691 JSON when the server
   offers it, PEP 503 HTML otherwise) and diff the torch page against the matrix;
3. with ``check`` stop here; otherwise read ``<pypi>/pypi/torch/<v>/json`` for each new release
   (date, Python tags, manylinux floors, the CUDA build PyPI serves) and the torchvision /
   torchaudio candidates' pins;
4. build the overlay, merge it with the embedded documents and validate the result exactly as
   ``matrix check`` does;
5. only then write it: temp file in the same folder, fsync, copy of the old file to ``.bak``,
   ``os.replace``.
"""

from __future__ import annotations

import datetime as _dt
import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from torchenv import __version__
from torchenv.errors import MatrixError
from torchenv.matrix.live.derive import (
    INDEX_SOURCE_ID,
    PYPI_SOURCE_ID,
    Diff,
    IndexSnapshot,
    PypiRelease,
    build_overlay,
    diff_matrix,
    pairing_candidates,
    pinned_torch,
    pypi_release,
    snapshot_from_filenames,
)
from torchenv.matrix.live.http import Fetcher, FetchPolicy, check_url
from torchenv.matrix.live.wheels import PEP691_ACCEPT, MalformedPage, page_filenames

__all__ = [
    "DEFAULT_INDEX_BASE",
    "DEFAULT_PYPI_BASE",
    "ProgressHook",
    "UpdateOptions",
    "UpdateResult",
    "run_update",
    "write_overlay",
]

DEFAULT_INDEX_BASE = "https://download.pytorch.org/whl"
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
    since: Optional[str] = None
    policy: FetchPolicy = field(default_factory=FetchPolicy)


@dataclass
class UpdateResult:
    diff: Diff
    overlay_path: Path
    written: bool = False
    not_on_pypi: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    pages: dict[str, int] = field(default_factory=dict)  # URL -> files listed
    requests: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "differences": self.diff.to_json(),
            "up_to_date": self.diff.empty,
            "overlay": str(self.overlay_path),
            "written": self.written,
            "not_on_pypi": self.not_on_pypi,
            "warnings": self.warnings,
            "pages": self.pages,
            "requests": self.requests,
        }


def _today() -> str:
    return _dt.date.today().isoformat()


def run_update(options: UpdateOptions, *, progress: ProgressHook | None = None,
               today: str | None = None) -> UpdateResult:
    """Do one update (or ``check``); raises NetworkError/MatrixError/BadInput, writing nothing."""
    from torchenv.matrix.loader import (
        default_overlay_path,
        load_embedded_documents,
        merge_overlay,
        read_yaml,
    )
    from torchenv.matrix.validate import build_matrix

    date = today or _today()
    index_base = options.index_base.rstrip("/")
    pypi_base = options.pypi_base.rstrip("/")
    check_url(index_base + "/", allow_http=options.policy.allow_http, what="--index-base")
    check_url(pypi_base + "/", allow_http=options.policy.allow_http, what="--pypi-base")
    path = options.output or default_overlay_path()
    result = UpdateResult(diff=Diff(), overlay_path=path)

    documents, _ = load_embedded_documents()
    origin = {name: f"matrix/data/{name} + {path.name}" for name in documents}
    previous: dict[str, Any] | None = None
    merged = documents
    if path.is_file():
        try:
            doc = read_yaml(path)
            if not isinstance(doc, dict):
                raise MatrixError(f"{path}: expected a mapping at the top level")
            merged = merge_overlay(documents, doc)
            matrix = build_matrix(merged, origin=origin)
            previous = doc
        except MatrixError as exc:
            result.warnings.append(f"current overlay ignored ({exc.message}); a new one "
                                   "replaces it and the old file is kept as .bak")
            merged = documents
    matrix = build_matrix(merged, origin=origin)

    fetcher = Fetcher(options.policy)
    total = len(PROJECTS)
    done = 0

    def step(what: str) -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress(what, done, total)

    try:
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
            step(f"{project} index")
        torch_snap = snapshots["torch"]
        if torch_snap.invalid:
            result.warnings.append(f"{len(torch_snap.invalid)} file names on the torch page are "
                                   f"not valid wheel names (first: {torch_snap.invalid[0]})")
        result.diff = diff_matrix(matrix, torch_snap, since=options.since)
        if options.check or result.diff.empty:
            return result

        pypi: dict[str, PypiRelease] = {}
        pairs: dict[str, tuple[Optional[str], Optional[str]]] = {}
        for version in result.diff.new_releases:
            cands = {p: pairing_candidates(version, p, snapshots[p].versions)
                     for p in ("torchvision", "torchaudio")}
            total += 1 + sum(len(c) for c in cands.values())
            facts = _pypi_json(fetcher, f"{pypi_base}/pypi/torch/{version}/json")
            step(f"PyPI torch {version}")
            if facts is None:
                result.not_on_pypi.append(version)
                continue
            try:
                pypi[version] = pypi_release(f"{pypi_base}/pypi/torch/{version}/json", facts)
            except ValueError as exc:
                raise MalformedPage(f"{pypi_base}/pypi/torch/{version}/json: {exc}") from exc
            paired: list[Optional[str]] = []
            for project in ("torchvision", "torchaudio"):
                match = None
                for cand in cands[project]:
                    doc = _pypi_json(fetcher, f"{pypi_base}/pypi/{project}/{cand}/json")
                    step(f"PyPI {project} {cand}")
                    if pinned_torch(doc) == version:
                        match = cand
                        break
                paired.append(match)
            pairs[version] = (paired[0], paired[1])
        if result.not_on_pypi:
            result.warnings.append("on the index but not on PyPI yet (left out of the overlay): "
                                   + ", ".join(result.not_on_pypi))
    finally:
        result.requests = fetcher.requests_made
        fetcher.close()

    sources = [
        {"id": INDEX_SOURCE_ID, "title": f"PyTorch wheel index read by torchenv matrix update "
         f"on {date}", "url": f"{index_base}/torch/"},
        {"id": PYPI_SOURCE_ID, "title": f"PyPI JSON API read by torchenv matrix update on {date}",
         "url": f"{pypi_base}/pypi/torch/json"},
    ]
    overlay = build_overlay(documents=merged, previous=previous, diff=result.diff,
                            torch=snapshots["torch"], pypi=pypi, pairs=pairs, sources=sources,
                            date=date, generated_by=f"torchenv {__version__} matrix update")
    try:
        build_matrix(merge_overlay(documents, overlay), origin=origin)
    except MatrixError as exc:
        raise MatrixError(f"the updated matrix does not validate, overlay not written: "
                          f"{exc.message}", hint="report this; the live index may have "
                          "changed shape") from exc
    write_overlay(path, overlay)
    result.written = True
    return result


def _pypi_json(fetcher: Fetcher, url: str) -> Any:
    resp = fetcher.get(url, accept="application/json", allow_404=True)
    if resp is None:
        return None
    try:
        return json.loads(resp.body)
    except ValueError as exc:
        raise MalformedPage(f"{url}: not valid JSON ({exc})") from exc


def write_overlay(path: Path, overlay: dict[str, Any]) -> None:
    """Write atomically; the file it replaces is kept as ``<name>.bak``."""
    import yaml

    text = ("# written by `torchenv matrix update`; entries here replace or extend the "
            "embedded matrix\n" + yaml.safe_dump(overlay, sort_keys=False, width=100,
                                                 allow_unicode=True))
    from torchenv._files import write_atomic

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_file():
            shutil.copy2(path, path.with_name(path.name + ".bak"))
    except OSError as exc:
        raise MatrixError(f"{path}: cannot write the overlay: {exc.strerror or exc}",
                          hint="choose another place with --output") from exc
    write_atomic(path, text)
