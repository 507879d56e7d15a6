"""`resolve --json` and `detect --json` import only their own command and no terminal renderer.

Commands are imported on demand: the modules of the other commands stay unimported, and so does
rich, which only output for a person needs; the matrix is the shipped built one, so neither YAML
nor the validation is loaded. (That no command imports torch is
test_no_torch_import.py's.)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.detection.detection_helpers import fake_smi

from hermetic import hermetic

NOT_ON_THE_PATH = ("rich", "torchenv.cli.doctor", "torchenv.cli.fleet", "torchenv.cli.matrix",
                   "torchenv.cli.validate", "torchenv.matrix.companions",
                   # the shipped matrix is constructed as built: no YAML, no validation
                   "yaml", "torchenv.matrix.validate")

SCRIPT = """
import contextlib, io, json, sys
from torchenv.cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    status = main(sys.argv[1:])
print(json.dumps({"status": status, "modules": sorted(sys.modules), "output": out.getvalue()}))
"""

QUERY = "0, NVIDIA H200, 9.0, 143771, GPU-00000000-0000-0000-0000-000000000000, 580.82.07\n"


@pytest.mark.parametrize("args", [["resolve", "--json"], ["detect", "--json"]],
                         ids=["resolve", "detect"])
@pytest.mark.parametrize("gpu", [True, False], ids=["nvidia-smi", "no-gpu"])
def test_a_json_run_imports_only_its_own_command(args: list[str], gpu: bool,
                                                 tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TORCHENV_", "FAKE_NVML"))}
    env = dict(hermetic(env))
    env["TORCHENV_NO_OVERLAY"] = "1"
    if gpu:
        env["TORCHENV_NVIDIA_SMI"] = str(fake_smi(tmp_path / "bin", query=QUERY))
    proc = subprocess.run([sys.executable, "-c", SCRIPT, *args], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    run = json.loads(proc.stdout)
    assert run["status"] == 0
    doc = json.loads(run["output"])
    if args[0] == "resolve":
        assert (doc["variant"] != "cpu") == gpu
    else:
        assert (doc["nvidia"] is not None) == gpu
    imported = [m for m in NOT_ON_THE_PATH if m in run["modules"]]
    assert imported == [], f"{' '.join(args)} imported {imported}"
