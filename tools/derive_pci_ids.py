#!/usr/bin/env python3
"""Derive the ``pci_ids`` of the NVIDIA GPU catalog (``gpus.yaml``) from the PCI ID database.

The database is the ``pci.ids`` file of the PCI ID Repository (Debian/Ubuntu package
``pci.ids``, installed as ``/usr/share/misc/pci.ids``). Its NVIDIA section (vendor ``10de``)
names each device id as ``CHIP [Product]``::

    10de  NVIDIA Corporation
    \t2204  GA102 [GeForce RTX 3090]
    \t1ba0  GP104M [GeForce GTX 1080 Mobile]

A device id is given to a catalog entry when its product name, compared as a set of words and
ignoring a leading ``NVIDIA``, equals the entry's name or one of its aliases. Stages, the first
that matches anything wins:

1. the product name as written;
2. without the words of a variant of the same chip (``Mobile``, ``Max-Q``, ``Laptop GPU``,
   ``Lite Hash Rate``/``LHR``, ``Rev. A``, ``PCIe``): these run the same compute capability
   (``Engineering Sample`` is stripped too, so that samples are found and then left out);
3. also without a memory size or type (``6GB``, ``GDDR6X``), which catalog names of consumer cards
   leave out.

A product that lists alternatives (``L6000 / RTX 6000 Ada Generation``) matches through any of
them. An id is skipped, and reported, when it matches two entries, when its chip names another
architecture than the entry (``GP104`` is Pascal), or when it is an engineering sample. The
script owns the ``pci_ids`` field and the ``pci-ids`` source: it rewrites only those lines, and
the entries' ``sources`` line for ``pci-ids``, so comments and every other field stay as they are.
The result depends only on the two input files.

Usage::

    python tools/derive_pci_ids.py --pci-ids /usr/share/misc/pci.ids --write
    python tools/derive_pci_ids.py > gpus.yaml   # print the patched catalog instead
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

NVIDIA_VENDOR = "10de"
SOURCE_ID = "pci-ids"
SOURCE_URL = "https://pci-ids.ucw.cz/read/PC/10de"
DEFAULT_PCI_IDS = Path("/usr/share/misc/pci.ids")
DEFAULT_CATALOG = Path(__file__).resolve().parent.parent / "src/torchenv/matrix/data/gpus.yaml"
WIDTH = 100

# NVIDIA's chip codes name the architecture: GP104 is Pascal, AD102 is Ada.
CHIP_ARCHITECTURE = {
    "GK": "kepler",
    "GM": "maxwell",
    "GP": "pascal",
    "GV": "volta",
    "TU": "turing",
    "GA": "ampere",
    "AD": "ada",
    "GH": "hopper",
    "GB": "blackwell",
}
_CHIP_RE = re.compile(r"^(G[KMPVAHB]|TU|AD)\d")

_PRODUCT_RE = re.compile(r"^(?P<chip>[^\[\]]*?)\s*\[(?P<product>[^\[\]]+)\]\s*$")
_ALTERNATIVES_RE = re.compile(r"\s+/\s+")
_EXCLUDED_RE = re.compile(r"\bengineering sample\b", re.IGNORECASE)
_VARIANT_RE = re.compile(
    r"\b(?:mobile|max-q|laptop gpu|lite hash rate|lhr|pcie|rev\.\s*\w+|engineering sample)(?=\W|$)",
    re.IGNORECASE,
)
_MEMORY_RE = re.compile(r"\b(?:\d+\s*gb|gddr\d+x?)\b", re.IGNORECASE)
_HEADER_RE = re.compile(r"^#\s*(Version|Date):\s*(.+?)\s*$")
_VENDOR_RE = re.compile(r"^([0-9a-f]{4})\s+(.*)$")
_DEVICE_RE = re.compile(r"^\t([0-9a-f]{4})\s+(.*)$")

Key = tuple[str, ...]


@dataclass(frozen=True)
class PciDevice:
    """One NVIDIA device line of pci.ids: ``2204``, chip ``GA102``, product ``GeForce RTX 3090``."""

    device_id: str
    chip: str
    product: str


@dataclass(frozen=True)
class PciDatabase:
    version: str
    date: str
    devices: tuple[PciDevice, ...]


@dataclass
class Derivation:
    """Device ids per catalog entry, and what could not be used, for the report."""

    ids: dict[str, list[str]] = field(default_factory=dict)
    matched_as: dict[str, list[str]] = field(default_factory=dict)
    ambiguous: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    samples: list[str] = field(default_factory=list)

    def unmatched(self, names: Iterable[str]) -> list[str]:
        return [n for n in names if not self.ids.get(n)]


def parse_pci_ids(text: str, vendor: str = NVIDIA_VENDOR) -> PciDatabase:
    """The header's version and date and the vendor's device lines that name a product."""
    version = date = "unknown"
    devices: list[PciDevice] = []
    in_vendor = False
    for line in text.splitlines():
        header = _HEADER_RE.match(line)
        if header and not devices and not in_vendor:
            if header.group(1) == "Version":
                version = header.group(2)
            else:
                date = header.group(2)
            continue
        if not line or line.startswith("#"):
            continue
        vendor_line = _VENDOR_RE.match(line)
        if vendor_line:
            in_vendor = vendor_line.group(1) == vendor
            continue
        device_line = _DEVICE_RE.match(line) if in_vendor else None
        if device_line is None:
            continue  # subsystem lines (two tabs), or another vendor's devices
        named = _PRODUCT_RE.match(device_line.group(2))
        if named is None:
            continue  # a bare chip code ("GH100") or a chipset function names no product
        devices.append(PciDevice(device_line.group(1), named.group("chip").strip(),
                                 named.group("product").strip()))
    return PciDatabase(version, date, tuple(devices))


def name_key(text: str) -> Key:
    """Words of a GPU name, lower-case and sorted, without ``NVIDIA``: word order and
    punctuation differ between pci.ids (``A100 PCIe 80GB``) and NVML (``NVIDIA A100 80GB PCIe``)."""
    return tuple(sorted(w for w in re.findall(r"[a-z0-9]+", text.lower()) if w != "nvidia"))


def _stage_keys(alternative: str) -> tuple[Key, Key, Key]:
    variant = _VARIANT_RE.sub(" ", alternative)
    return name_key(alternative), name_key(variant), name_key(_MEMORY_RE.sub(" ", variant))


def chip_architecture(chip: str) -> str | None:
    found = _CHIP_RE.match(chip)
    return CHIP_ARCHITECTURE[found.group(1)] if found else None


def derive(database: PciDatabase, catalog: Sequence[dict[str, Any]]) -> Derivation:
    """Match every device of ``database`` against the NVIDIA entries of the catalog."""
    by_key: dict[Key, set[str]] = {}
    architecture = {}
    for entry in catalog:
        name = str(entry["name"])
        architecture[name] = str(entry.get("architecture", ""))
        for n in (name, *(str(a) for a in entry.get("aliases") or ())):
            by_key.setdefault(name_key(n), set()).add(name)

    out = Derivation(ids={str(e["name"]): [] for e in catalog},
                     matched_as={str(e["name"]): [] for e in catalog})
    for dev in database.devices:
        alternatives = _ALTERNATIVES_RE.split(dev.product)
        staged = [_stage_keys(a) for a in alternatives]
        hits: set[str] = set()
        for stage in range(3):
            hits = set().union(*(by_key.get(keys[stage], set()) for keys in staged))
            if hits:
                break
        if not hits:
            continue
        label = f"{dev.device_id} {dev.chip} [{dev.product}]"
        if _EXCLUDED_RE.search(dev.product):
            out.samples.append(label)
            continue
        if len(hits) > 1:
            out.ambiguous.append(f"{label} -> {', '.join(sorted(hits))}")
            continue
        (name,) = hits
        arch = chip_architecture(dev.chip)
        if arch is not None and arch != architecture[name]:
            out.conflicts.append(f"{label} -> {name}: chip is {arch}, entry is "
                                 f"{architecture[name]}")
            continue
        out.ids[name].append(dev.device_id)
        out.matched_as[name].append(label)
    for name in out.ids:
        out.ids[name] = sorted(set(out.ids[name]), key=lambda i: int(i, 16))
    return out


# --- patching gpus.yaml line by line ------------------------------------------------------------


def _source_block(database: PciDatabase) -> list[str]:
    title = (f"PCI ID Repository database (pci.ids) version {database.version}, dated "
             f"{database.date}: NVIDIA (vendor 10de) device ids and product names")
    return yaml.safe_dump([{"id": SOURCE_ID, "title": title, "url": SOURCE_URL,
                            "primary": False}],
                          sort_keys=False, width=WIDTH, allow_unicode=True).splitlines()


def _top_level_block(lines: list[str], key: str) -> tuple[int, int]:
    """[start, end) of the lines under the top-level ``key:`` (start is the key's line)."""
    start = lines.index(f"{key}:")
    end = start + 1
    while end < len(lines) and (not lines[end] or lines[end][0] in " -#"):
        end += 1
    return start, end


def _items(lines: list[str], start: int, end: int) -> list[tuple[int, int]]:
    """[start, end) of each ``- `` item of a block sequence at column 0."""
    heads = [i for i in range(start, end) if lines[i].startswith("- ")]
    return [(h, heads[k + 1] if k + 1 < len(heads) else end) for k, h in enumerate(heads)]


def _flow_list(key: str, values: Sequence[str], indent: str) -> list[str]:
    out, line = [], f"{indent}{key}: ["
    for k, value in enumerate(values):
        word = f"'{value}'" + (", " if k + 1 < len(values) else "]")
        if len(line) + len(word.rstrip()) > WIDTH:
            out.append(line.rstrip())
            line = indent + "  "
        line += word
    return [*out, line]


def _patch_entry(block: list[str], ids: Sequence[str]) -> list[str]:
    """One catalog entry with its ``pci_ids`` set to ``ids`` (removed when empty) and the
    ``pci-ids`` source listed exactly when there are ids."""
    out: list[str] = []
    skipping = False
    for line in block:
        if skipping and (line.startswith("    ") or line.startswith("  - ")):
            continue  # continuation of the old pci_ids value
        skipping = line.startswith("  pci_ids:")
        if skipping or line == f"  - {SOURCE_ID}":
            continue
        out.append(line)
    if not ids:
        return out
    cc = next(i for i, line in enumerate(out) if line.startswith("  compute_capability:"))
    out[cc + 1:cc + 1] = _flow_list("pci_ids", ids, "  ")
    src = out.index("  sources:")
    last = src + 1
    while last < len(out) and out[last].startswith("  - "):
        last += 1
    out.insert(last, f"  - {SOURCE_ID}")
    return out


def patch_catalog(text: str, database: PciDatabase, derived: Derivation) -> str:
    """``text`` (gpus.yaml) with the derived ``pci_ids`` and the ``pci-ids`` source."""
    lines = text.splitlines()
    start, end = _top_level_block(lines, "nvidia")
    entries = _items(lines, start + 1, end)
    patched: list[str] = []
    for first, stop in entries:
        block = lines[first:stop]
        (entry,) = yaml.safe_load("\n".join(block))
        patched.extend(_patch_entry(block, derived.ids.get(str(entry["name"]), [])))
    lines[entries[0][0]:entries[-1][1]] = patched

    start, end = _top_level_block(lines, "sources")
    items = _items(lines, start + 1, end)
    ours = [(a, b) for a, b in items if lines[a] == f"- id: {SOURCE_ID}"]
    if ours:
        a, b = ours[0]
        lines[a:b] = _source_block(database)
    else:
        last = items[-1][1] if items else start + 1
        lines[last:last] = _source_block(database)
    return "\n".join(lines) + "\n"


def _check(before: str, after: str, derived: Derivation) -> None:
    """The patch changed nothing but pci_ids, the pci-ids source and its citations."""
    old, new = yaml.safe_load(before), yaml.safe_load(after)

    def without_ours(doc: dict[str, Any]) -> dict[str, Any]:
        doc = dict(doc)
        doc["sources"] = [s for s in doc["sources"] if s["id"] != SOURCE_ID]
        doc["nvidia"] = [{k: ([s for s in v if s != SOURCE_ID] if k == "sources" else v)
                          for k, v in e.items() if k != "pci_ids"} for e in doc["nvidia"]]
        return doc

    if without_ours(old) != without_ours(new):
        raise SystemExit("derive_pci_ids: the patch would change other fields; not written")
    for entry in new["nvidia"]:
        if list(entry.get("pci_ids") or []) != derived.ids.get(entry["name"], []):
            raise SystemExit(f"derive_pci_ids: pci_ids of {entry['name']!r} came out wrong")


def report(database: PciDatabase, derived: Derivation, out: Any) -> None:
    total = sum(len(v) for v in derived.ids.values())
    with_ids = [n for n, v in derived.ids.items() if v]
    print(f"pci.ids version {database.version} ({database.date}): {total} device ids for "
          f"{len(with_ids)} of {len(derived.ids)} catalog entries", file=out)
    for name in with_ids:
        print(f"  {name}: {', '.join(derived.matched_as[name])}", file=out)
    sections = [
        ("catalog entries without a device id in this pci.ids", derived.unmatched(derived.ids)),
        ("skipped, more than one entry matches", derived.ambiguous),
        ("skipped, the chip's architecture differs from the entry's", derived.conflicts),
        ("skipped, engineering samples", derived.samples),
    ]
    for title, rows in sections:
        print(f"{title}: {len(rows)}", file=out)
        for row in rows:
            print(f"  {row}", file=out)


def _write_atomic(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pci-ids", type=Path, default=DEFAULT_PCI_IDS,
                        help=f"the PCI ID database (default {DEFAULT_PCI_IDS})")
    parser.add_argument("--catalog", type=Path, default=DEFAULT_CATALOG,
                        help="gpus.yaml to patch (default: the embedded catalog)")
    parser.add_argument("--write", action="store_true",
                        help="patch the catalog in place instead of printing it")
    args = parser.parse_args(argv)
    try:
        database = parse_pci_ids(args.pci_ids.read_text(encoding="utf-8", errors="replace"))
    except FileNotFoundError:
        print(f"derive_pci_ids: {args.pci_ids} not found; install the pci.ids package "
              "(apt-get install pci.ids) or pass --pci-ids FILE", file=sys.stderr)
        return 2
    before = args.catalog.read_text(encoding="utf-8")
    derived = derive(database, yaml.safe_load(before)["nvidia"])
    after = patch_catalog(before, database, derived)
    _check(before, after, derived)
    report(database, derived, sys.stderr)
    if args.write:
        if after != before:
            _write_atomic(args.catalog, after)
    else:
        sys.stdout.write(after)
    return 0


if __name__ == "__main__":
    sys.exit(main())
