"""Keep the machine running the tests out of them: its NVIDIA driver, PCI bus and nvidia-smi.

Every CLI child gets these defaults unless the test sets the variable itself: NVML off
(``TORCHENV_NVML_LIBRARY=off``; a test of the stand-in library names it), the probes' files read
from an empty tree (``TORCHENV_PROBE_ROOT``), nvidia-smi only when the test put a fake one on
PATH, and a cache folder of the tests' own (``TORCHENV_CACHE_DIR``). So the suite passes
unchanged on a machine with a real GPU and driver, and leaves the user's cache alone.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import MutableMapping
from pathlib import Path

__all__ = ["CACHE_DIR", "EMPTY_ROOT", "hermetic"]

EMPTY_ROOT = Path(tempfile.gettempdir()) / "torchenv-tests-empty-root"
CACHE_DIR = Path(tempfile.gettempdir()) / "torchenv-tests-cache"
_SYSTEM_DIRS = {"/usr/bin", "/bin", "/usr/local/bin", "/usr/sbin", "/sbin", "/usr/local/sbin"}


def hermetic(env: MutableMapping[str, str]) -> MutableMapping[str, str]:
    EMPTY_ROOT.mkdir(exist_ok=True)
    env.setdefault("TORCHENV_NVML_LIBRARY", "off")
    env.setdefault("TORCHENV_PROBE_ROOT", str(EMPTY_ROOT))
    env.setdefault("TORCHENV_CACHE_DIR", str(CACHE_DIR))  # never the user's own cache
    if "TORCHENV_NVIDIA_SMI" not in env:
        fake = None
        for d in env.get("PATH", "").split(os.pathsep):
            candidate = os.path.join(d, "nvidia-smi")
            if d and d not in _SYSTEM_DIRS and os.path.isfile(candidate):
                fake = candidate
                break
        env["TORCHENV_NVIDIA_SMI"] = fake or "off"
    return env
