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


def _tests_cache_dir() -> Path:
    """The tests' cache folder: this user's own under the temp folder (its C++ extension builds
    are loaded by the validation children), made 0700; a fresh one when that name is taken by
    someone else or is open to others."""
    uid = os.getuid() if hasattr(os, "getuid") else 0
    folder = Path(tempfile.gettempdir()) / f"torchenv-tests-cache-{uid}"
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        st = folder.stat(follow_symlinks=False)
        if folder.is_dir() and not folder.is_symlink() and st.st_uid == uid \
                and not st.st_mode & 0o077:
            return folder
    except OSError:
        pass
    return Path(tempfile.mkdtemp(prefix="torchenv-tests-cache-"))


CACHE_DIR = _tests_cache_dir()
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
