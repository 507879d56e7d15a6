"""The thin edge of doctor: ask the target interpreter what is installed, scan LD_LIBRARY_PATH."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from torchenv.doctor.findings import CUDA_LIB_PREFIXES, CondaRecord, Distribution, Installs
from torchenv.errors import BadInput

__all__ = ["gather", "gather_installs", "parse_inventory", "scan_ld_library_path"]

_NAMES = ("torch", "torchvision", "torchaudio")

def parse_inventory(doc: Mapping[str, Any]
                    ) -> tuple[str, tuple[Distribution, ...], tuple[CondaRecord, ...]]:
    """The inventory the interpreter reported; raises ValueError/KeyError/TypeError when it is not
    that document.

    Sample: ``{"python": "/v/bin/python", "dists": [{"name": "torch", "version": "2.7.1+cu128",
    "location": "/v/lib/python3.12/site-packages", "installer": "pip"}], "conda": []}``
    """
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


def gather(python: str, env: Mapping[str, str], *, timeout: float = 30.0
           ) -> tuple[Installs, dict[str, Any]]:
    """Ask ``python`` (run with ``env``), in ONE child, for its torch distributions and conda
    records and for the facts detection reads (returned raw, for ``detect(python_facts=...)``)."""
    from torchenv.detection._python_env import inspect_interpreter

    try:
        facts = inspect_interpreter(python, timeout=timeout, environ=env, inventory=True)
    except BadInput as exc:
        raise BadInput(exc.message, hint=exc.hint, field="python", value=python) from exc
    try:
        exe, dists, conda = parse_inventory(facts["inventory"])
    except (ValueError, KeyError, TypeError) as exc:
        raise BadInput(f"{python} printed no inventory ({exc})", field="python",
                       value=python) from exc
    installs = Installs(python=exe, distributions=dists, conda=conda,
                        cuda_libs_on_ld_path=scan_ld_library_path(env.get("LD_LIBRARY_PATH", "")))
    return installs, facts


def gather_installs(python: str, env: Mapping[str, str], *, timeout: float = 30.0) -> Installs:
    """Ask ``python`` (run with ``env``) for its torch distributions and conda records."""
    return gather(python, env, timeout=timeout)[0]
