#!/usr/bin/env python3
"""Derive the PyPI-backed facts of ``releases.yaml`` from PyPI metadata.

The derivation itself is :mod:`torchenv.matrix.live.pypi`, the same one ``torchenv matrix
update`` uses (see its docstring for what each field is derived from). This script reads PyPI
through the same network funnel (:mod:`torchenv.matrix.live.http`: HTTPS only, timeouts,
retries, size limits, ``TORCHENV_HTTP_*``), keeps every answer in an on-disk cache (``--cache``)
and writes the file in the layout of ``src/torchenv/matrix/data/releases.yaml``.

What it reads: ``<pypi>/pypi/<project>/json`` for torch, torchvision and torchaudio (file names,
upload times, yanked flags of every release), and the core metadata of two wheels per Linux
platform and torch release plus one wheel per companion release (PEP 658 ``.metadata`` files,
or the wheel's ``METADATA`` member through range requests).

Facts PyPI cannot provide come from the previous file with ``--merge-existing FILE``: its
``conda`` blocks, the sources it defines beyond the derived ones, the sources each release cites,
torchvision/torchaudio values where PyPI shows no exact pin (``unknown``), and every note
sentence the derivation does not itself write (``torchenv.matrix.live.pypi.carry_over``).

Usage::

    python tools/derive_pypi.py --cache .cache/pypi \\
        --merge-existing src/torchenv/matrix/data/releases.yaml --output /tmp/releases.yaml
    diff src/torchenv/matrix/data/releases.yaml /tmp/releases.yaml
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import Any, Optional

import yaml

from torchenv.errors import TorchenvError
from torchenv.matrix.live.http import Fetcher, FetchPolicy
from torchenv.matrix.live.pypi import (
    COMPANIONS,
    ReleaseFacts,
    UnexpectedMetadata,
    carry_over,
    companion_releases,
    derive_release,
    project_files,
    release_entry,
    torch_versions,
)

SCHEMA_VERSION = 1
DEFAULT_PYPI = "https://pypi.org"

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
UNKNOWN_CONDA = {"pytorch_channel": "unknown", "conda_forge": "unknown"}


class CachedReader:
    """The :data:`~torchenv.matrix.live.pypi.Reader` of this script: the fetcher, with every
    answer (404s included) kept under ``cache_dir`` by URL and byte range."""

    def __init__(self, fetcher: Fetcher, cache_dir: Path) -> None:
        self.fetcher = fetcher
        self.cache_dir = cache_dir
        self.cache_dir.mkdir(parents=True, exist_ok=True)

    def __call__(self, url: str, byte_range: Optional[str] = None) -> Optional[bytes]:
        key = hashlib.sha256(f"{url}|{byte_range or ''}".encode()).hexdigest()
        path = self.cache_dir / key
        missing = path.with_suffix(".404")
        if path.exists():
            return path.read_bytes()
        if missing.exists():
            return None
        resp = self.fetcher.get(url, allow_404=True, byte_range=byte_range)
        if resp is None:
            missing.write_bytes(b"")
            return None
        path.write_bytes(resp.body)
        return resp.body

    def project(self, base: str, name: str) -> dict[str, Any]:
        url = f"{base}/pypi/{name}/json"
        body = self(url, None)
        if body is None:
            raise SystemExit(f"error: {url}: not found (HTTP 404)")
        return {"url": url, "files": project_files(url, json.loads(body))}


def derive(read: CachedReader, base: str) -> list[ReleaseFacts]:
    torch = read.project(base, "torch")["files"]
    companions = {}
    for project in COMPANIONS:
        scan = companion_releases(project, read.project(base, project)["files"], read)
        for warning in scan.warnings:
            print(f"warning: {warning}", file=sys.stderr)
        companions[project] = scan.releases
    facts = [derive_release(v, torch[v], read, companions) for v in torch_versions(torch)]
    return [f for f in facts if f is not None]


def merge_existing(entries: list[dict[str, Any]], sources: list[dict[str, str]],
                   old: dict[str, Any]) -> None:
    """Carry the previous file's own sources and, per release, what PyPI cannot show."""
    known = {s["id"] for s in sources}
    sources.extend(s for s in old.get("sources") or [] if s["id"] not in known)
    previous = {str(e["torch"]): e for e in old.get("releases") or []}
    for entry in entries:
        before = previous.get(entry["torch"])
        if before is not None:
            carry_over(entry, before)


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


def render(entries: list[dict[str, Any]], sources: list[dict[str, str]],
           matrix_version: str, statements: list[dict[str, Any]] | None = None) -> str:
    """The releases.yaml text; ``statements``: the previous file's ``companion_statements``
    (maintainers' words PyPI cannot show), carried as they were."""
    out = [
        "# Generated by tools/derive_pypi.py from PyPI metadata;"
        " conda facts merged from the previous file.",
        f"schema_version: {SCHEMA_VERSION}",
        f"matrix_version: {json.dumps(matrix_version)}",
        "sources:",
    ]
    for source in sources:
        out.append(f"  - id: {source['id']}")
        out.append(f"    title: {json.dumps(source['title'], ensure_ascii=False)}")
        out.append(f"    url: {json.dumps(source['url'])}")
        if "primary" in source:
            out.append(f"    primary: {scalar(source['primary'])}")
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
    if statements:
        out.append("companion_statements:")
        for statement in statements:
            first = True
            for key, value in statement.items():
                rendered = flow(value) if isinstance(value, list) else scalar(value)
                out.append(f"  {'- ' if first else '  '}{key}: {rendered}")
                first = False
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--cache", type=Path, default=None, help="cache directory (default: a new temp dir)"
    )
    parser.add_argument(
        "--merge-existing", type=Path, default=None,
        help="the previous releases.yaml: conda facts, pairings, sources and notes to keep",
    )
    parser.add_argument("--output", type=Path, default=None, help="write here instead of stdout")
    parser.add_argument("--pypi-base", default=DEFAULT_PYPI,
                        help=f"PyPI root for the JSON API (default {DEFAULT_PYPI})")
    parser.add_argument(
        "--matrix-version", default=None, metavar="DATE",
        help="matrix_version to write (default: the previous file's, else today)",
    )
    args = parser.parse_args(argv)

    old: dict[str, Any] = {}
    if args.merge_existing is not None and args.merge_existing.exists():
        old = yaml.safe_load(args.merge_existing.read_text(encoding="utf-8")) or {}
    matrix_version = (args.matrix_version or old.get("matrix_version")
                      or datetime.date.today().isoformat())

    cache = args.cache or Path(tempfile.mkdtemp(prefix="derive-pypi-"))
    fetcher = Fetcher(FetchPolicy.from_env(os.environ))
    try:
        facts = derive(CachedReader(fetcher, cache), args.pypi_base.rstrip("/"))
    except (TorchenvError, UnexpectedMetadata) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    finally:
        fetcher.close()
    print(f"info: {fetcher.requests_made} HTTP requests (rest from cache)", file=sys.stderr)

    entries = [release_entry(f, sources=[s["id"] for s in DERIVED_SOURCES], conda=UNKNOWN_CONDA)
               for f in facts]
    sources = [dict(s) for s in DERIVED_SOURCES]
    if old:
        merge_existing(entries, sources, old)
    text = render(entries, sources, str(matrix_version), old.get("companion_statements"))
    yaml.safe_load(text)  # the output must parse
    if args.output is not None:
        args.output.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
