"""The shell scripts under tools/ are valid bash and clean for shellcheck."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

TOOLS = Path(__file__).resolve().parent.parent / "tools"


@pytest.mark.parametrize("script", sorted(TOOLS.glob("*.sh")), ids=lambda p: p.name)
def test_a_tools_script_is_valid_bash_and_clean_for_shellcheck(script: Path) -> None:
    syntax = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True,
                            timeout=30, check=False)
    assert syntax.returncode == 0, syntax.stderr
    if shutil.which("shellcheck") is None:
        pytest.skip("shellcheck is not installed (apt-get install shellcheck)")
    lint = subprocess.run(["shellcheck", str(script)], capture_output=True, text=True,
                          timeout=60, check=False)
    assert lint.returncode == 0, lint.stdout + lint.stderr
