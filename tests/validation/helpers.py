"""Shared helpers for the validation tests: run the real CLI in a child process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

STATUSES = {"pass", "fail", "skip"}


MARK = "TORCHENV_TEST_MARK"
"""An environment variable a test sets on a child; every descendant inherits it."""


def marked(mark: str) -> list[int]:
    """Live processes (zombies left out) whose environment carries ``MARK=mark``."""
    needle = f"{MARK}={mark}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if needle in (entry / "environ").read_bytes().split(b"\0") \
                    and "State:\tZ" not in (entry / "status").read_text():
                found.append(int(entry.name))
        except OSError:
            continue  # gone while being read, or not ours to read
    return found


def run_cli(*args: str, env: dict[str, str] | None = None, timeout: float = 300
            ) -> subprocess.CompletedProcess[str]:
    """The CLI in a child, hermetic against this machine's NVIDIA driver even when called from a
    module-scoped fixture (which runs before the per-test environment fixture)."""
    from hermetic import hermetic

    full_env = dict(os.environ)
    full_env.update(env or {})
    hermetic(full_env)
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
    assert doc.get("interrupted", False) in (False, True)
    assert doc["ok"] is (not required_failed and not doc.get("interrupted", False))


def by_name(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in doc["checks"]}


def has_cuda_gpu() -> bool:
    """An NVIDIA GPU on this host: the Linux driver's list, WSL2's GPU bridge with NVIDIA's
    user-space driver, or a device node (containers that hide /proc/driver)."""
    try:
        if os.listdir("/proc/driver/nvidia/gpus"):
            return True
    except OSError:
        pass
    if os.path.exists("/dev/dxg") and os.path.exists("/usr/lib/wsl/lib/libcuda.so.1"):
        return True
    return os.path.exists("/dev/nvidia0")


def load(stdout: str) -> dict[str, Any]:
    doc = json.loads(stdout)
    check_contract(doc)
    return doc


def listing(path: Path) -> list[str]:
    return sorted(p.name for p in path.iterdir())


# The JUnit XML that CI servers read (the Jenkins/Ant schema): which elements may appear where,
# and which attributes each must carry.
_JUNIT_CHILDREN = {
    "testsuites": {"testsuite"},
    "testsuite": {"testcase", "properties", "system-out", "system-err"},
    "properties": {"property"},
    "testcase": {"failure", "error", "skipped", "system-out", "system-err"},
}
_JUNIT_REQUIRED = {
    "testsuite": {"name", "tests"},
    "testcase": {"name", "classname"},
    "failure": {"message"},
    "property": {"name", "value"},
}
_JUNIT_NUMERIC = {"tests", "failures", "errors", "skipped", "time"}


def check_junit_schema(root: Any) -> None:
    """Structural check of a JUnit report against the schema CI servers consume."""
    assert root.tag == "testsuites"

    def visit(el: Any) -> None:
        allowed = _JUNIT_CHILDREN.get(el.tag, set())
        for child in el:
            assert child.tag in allowed, f"<{child.tag}> inside <{el.tag}>"
            visit(child)
        missing = _JUNIT_REQUIRED.get(el.tag, set()) - set(el.attrib)
        assert not missing, f"<{el.tag}> lacks {sorted(missing)}"
        for key in _JUNIT_NUMERIC & set(el.attrib):
            assert float(el.attrib[key]) >= 0, f"<{el.tag} {key}> is not a number"

    visit(root)
    for suite in root.iter("testsuite"):
        cases = suite.findall("testcase")
        assert int(suite.get("tests")) == len(cases)
        assert int(suite.get("failures", "0")) == sum(c.find("failure") is not None
                                                      for c in cases)
