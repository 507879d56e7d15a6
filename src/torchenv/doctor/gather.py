"""The thin edge of doctor: ask the target interpreter what is installed, scan LD_LIBRARY_PATH."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping

from torchenv._subprocess import run_process
from torchenv.doctor.findings import CUDA_LIB_PREFIXES, CondaRecord, Distribution, Installs
from torchenv.errors import BadInput

__all__ = ["gather_installs", "parse_inventory", "scan_ld_library_path"]

_NAMES = ("torch", "torchvision", "torchaudio")

# Runs in the target interpreter (any Python >= 3.8, standard library only). Prints one JSON
# document: every torch/torchvision/torchaudio dist-info on sys.path and the conda-meta records
# of sys.prefix and $CONDA_PREFIX.
_INVENTORY = r"""
import glob, json, os, sys
names = {"torch", "torchvision", "torchaudio"}
dists, seen = [], set()
for entry in sys.path:
    if not entry or not os.path.isdir(entry):
        continue
    for meta in glob.glob(os.path.join(entry, "*.dist-info")) + glob.glob(
            os.path.join(entry, "*.egg-info")):
        real = os.path.realpath(meta)
        if real in seen:
            continue
        base = os.path.basename(meta).rsplit(".", 1)[0]
        name = base.split("-", 1)[0].replace("_", "-").lower()
        if name not in names:
            continue
        seen.add(real)
        version, installer = (base.split("-", 1) + [""])[1], None
        for fname in ("METADATA", "PKG-INFO"):
            path = os.path.join(meta, fname)
            if os.path.isfile(path):
                with open(path, encoding="utf-8", errors="replace") as f:
                    for line in f:
                        if line.startswith("Version:"):
                            version = line.split(":", 1)[1].strip()
                            break
                        if not line.strip():
                            break
                break
        path = os.path.join(meta, "INSTALLER")
        if os.path.isfile(path):
            with open(path, encoding="utf-8", errors="replace") as f:
                installer = f.read().strip() or None
        dists.append({"name": name, "version": version, "location": entry,
                      "installer": installer})
conda, prefixes = [], []
for prefix in (sys.prefix, os.environ.get("CONDA_PREFIX")):
    if prefix and os.path.realpath(prefix) not in prefixes:
        prefixes.append(os.path.realpath(prefix))
for prefix in prefixes:
    for path in glob.glob(os.path.join(prefix, "conda-meta", "*.json")):
        base = os.path.basename(path)
        if not base.startswith(("pytorch", "torch")):
            continue
        try:
            with open(path, encoding="utf-8") as f:
                rec = json.load(f)
        except (OSError, ValueError):
            continue
        conda.append({"name": rec.get("name", ""), "version": rec.get("version", ""),
                      "channel": rec.get("channel", ""), "build": rec.get("build", ""),
                      "path": path})
print(json.dumps({"python": sys.executable, "dists": dists, "conda": conda}))
"""


def parse_inventory(text: str) -> tuple[str, tuple[Distribution, ...], tuple[CondaRecord, ...]]:
    """Parse the inventory script's output; raises ValueError when it is not that document.

    Sample: ``{"python": "/v/bin/python", "dists": [{"name": "torch", "version": "2.7.1+cu128",
    "location": "/v/lib/python3.12/site-packages", "installer": "pip"}], "conda": []}``
    """
    doc = json.loads(text.strip().splitlines()[-1])
    dists = tuple(Distribution(name=str(d["name"]), version=str(d["version"]),
                               location=str(d["location"]), installer=d.get("installer"))
                  for d in doc["dists"])
    conda = tuple(CondaRecord(name=str(r["name"]), version=str(r["version"]),
                              channel=str(r["channel"]), build=str(r.get("build", "")),
                              path=str(r.get("path", "")))
                  for r in doc["conda"])
    return str(doc["python"]), dists, conda


def scan_ld_library_path(value: str) -> dict[str, tuple[str, ...]]:
    """For each directory in ``value``, the system CUDA libraries it holds (may be empty)."""
    found: dict[str, tuple[str, ...]] = {}
    for directory in value.split(os.pathsep):
        if not directory or directory in found:
            continue
        try:
            names = os.listdir(directory)
        except OSError:
            continue
        found[directory] = tuple(sorted(n for n in names if n.startswith(CUDA_LIB_PREFIXES)))
    return found


def gather_installs(python: str, env: Mapping[str, str], *, timeout: float = 30.0) -> Installs:
    """Ask ``python`` (run with ``env``) for its torch distributions and conda records."""
    result = run_process([python, "-c", _INVENTORY], timeout=timeout, env=env)
    if result.returncode is None and result.error:
        raise BadInput(f"--python: {result.error}", hint="pass the path of a Python interpreter")
    if not result.ok:
        raise BadInput(f"--python: cannot inspect {python}: {result.describe_failure()}")
    try:
        exe, dists, conda = parse_inventory(result.stdout)
    except (ValueError, KeyError, TypeError, IndexError) as exc:
        raise BadInput(f"--python: {python} printed no inventory ({exc})") from exc
    return Installs(python=exe, distributions=dists, conda=conda,
                    cuda_libs_on_ld_path=scan_ld_library_path(env.get("LD_LIBRARY_PATH", "")))
