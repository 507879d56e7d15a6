"""The CLI process never imports torch, whatever the command (torch runs only in children)."""

from __future__ import annotations

import subprocess
import sys

import pytest

SCRIPT = """
import contextlib, io, sys
from torchenv.cli import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    status = main(sys.argv[1:])
assert 'torch' not in sys.modules, 'torch was imported in the CLI process'
print(status)
"""


@pytest.mark.parametrize(
    "args",
    [
        ["resolve", "--json"],
        ["env", "--format", "requirements", "--json"],
        ["install", "--dry-run", "--json"],
        pytest.param(["doctor", "--json"], marks=pytest.mark.slow),  # torch in its child
        ["matrix", "show", "--json"],
        pytest.param(["validate", "--json"], marks=pytest.mark.slow),  # torch in its child
    ],
    ids=["resolve", "env", "install", "doctor", "matrix", "validate"],
)
def test_the_cli_process_never_imports_torch(args: list[str]) -> None:
    # the venv running the tests has torch installed, so an accidental import would succeed
    proc = subprocess.run([sys.executable, "-c", SCRIPT, *args], capture_output=True,
                          text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() in ("0", "1")
