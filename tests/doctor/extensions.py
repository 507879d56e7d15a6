"""Stand-in compiled extensions: a real shared library, built from C, that references a symbol
the installed torch does not export, so that importing it fails as an extension built for
another torch does (``undefined symbol: _ZN3c10...``)."""

from __future__ import annotations

import shutil
import subprocess
import sysconfig
from pathlib import Path

CC = shutil.which("cc") or shutil.which("gcc")
"""The C compiler the stand-ins are built with; tests that need one skip without it."""


def ext_suffix() -> str:
    """``.cpython-311-x86_64-linux-gnu.so``: what this interpreter imports an extension as."""
    return str(sysconfig.get_config_var("EXT_SUFFIX"))


def build_missing_symbol_extension(package: Path, module: str, symbol: str) -> Path:
    """Compile ``package/<module><EXT_SUFFIX>`` referencing ``symbol`` (which nothing loaded
    defines); returns the file. ``package`` is created."""
    package.mkdir(parents=True, exist_ok=True)
    source = package.parent / f"{package.name}_{module}.c"
    source.write_text(f"extern void {symbol}(void);\nvoid call(void){{ {symbol}(); }}\n")
    so = package / f"{module}{ext_suffix()}"
    subprocess.run([CC or "cc", "-shared", "-fPIC", "-o", str(so), str(source)], check=True,
                   timeout=60)
    source.unlink()
    return so
