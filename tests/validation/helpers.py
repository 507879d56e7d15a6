"""Shared helpers for the validation tests: run the real CLI in a child process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

STATUSES = {"pass", "fail", "skip"}


def run_cli(*args: str, env: dict[str, str] | None = None, timeout: float = 300
            ) -> subprocess.CompletedProcess[str]:
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "torchenv", *args], capture_output=True,
                          text=True, env=full_env, timeout=timeout, check=False)


def check_contract(doc: Any) -> None:
    """The ``validate --json`` document as CLI.md defines it."""
    assert isinstance(doc, dict)
    assert {"ok", "python", "torch", "checks"} <= doc.keys()
    assert isinstance(doc["ok"], bool)
    assert isinstance(doc["python"], str)
    assert doc["torch"] is None or isinstance(doc["torch"], str)
    names = [c["name"] for c in doc["checks"]]
    assert len(names) == len(set(names)), "check names are unique"
    for c in doc["checks"]:
        assert isinstance(c["name"], str) and c["name"]
        assert c["status"] in STATUSES
        assert isinstance(c["seconds"], (int, float)) and c["seconds"] >= 0
        assert isinstance(c["device"], str)
        assert isinstance(c["required"], bool)
        if c["status"] == "skip":
            assert c["reason"]
        if c["status"] == "fail":
            assert c["error"]
    required_failed = any(c["status"] == "fail" and c["required"] for c in doc["checks"])
    assert doc["ok"] is (not required_failed)


def by_name(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in doc["checks"]}


def has_cuda_gpu() -> bool:
    try:
        return bool(os.listdir("/proc/driver/nvidia/gpus"))
    except OSError:
        return False


def load(stdout: str) -> dict[str, Any]:
    doc = json.loads(stdout)
    check_contract(doc)
    return doc


def listing(path: Path) -> list[str]:
    return sorted(p.name for p in path.iterdir())
