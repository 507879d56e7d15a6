"""`resolve --json` and `detect --json` import nothing their path does not need.

Start-up is most of what these commands cost: a module imported on their path costs every run.
The modules named here are what a plain command line, detection through nvidia-smi and a
resolve on the embedded matrix do without: the argument parser argparse (a plain command line
is read from the declarations; argparse only for --help and errors), typing (type checkers
only), subprocess/threading/signal (the one child is spawned with posix_spawn and read with
poll), pathlib (and the urllib.parse and ipaddress it pulls in), re and enum (names, versions
and nvidia-smi's CSV are read with string methods), json (the document is written by
torchenv._json with the C escaper), shlex (POSIX quoting is torchenv's own), the YAML parser and
the matrix validation (the built matrix is loaded from matrix.pickle), packaging (no version
specifier was given), and the C type bindings (no NVML library).
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

NOT_ON_THE_PATH = ("argparse", "typing", "subprocess", "threading", "signal", "pathlib", "re",
                   "enum", "json", "shlex",
                   "urllib.parse", "ipaddress", "yaml", "torchenv.matrix.validate",
                   "packaging.version", "packaging.specifiers", "ctypes", "dataclasses",
                   "inspect", "tomllib", "rich")

SCRIPT = """
import atexit, contextlib, io, runpy, sys
out = io.StringIO()
sys.argv = ["torchenv", *sys.argv[1:]]

def report():  # run by the command line's own exit, before the process ends
    modules = sorted(sys.modules)  # before this script's own json import
    import json
    sys.__stdout__.write(json.dumps({"modules": modules, "output": out.getvalue()}) + "\\n")
    sys.__stdout__.flush()

atexit.register(report)
with contextlib.redirect_stdout(out):
    runpy.run_module("torchenv", run_name="__main__")
"""

def hermetic_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TORCHENV_", "FAKE_NVML"))}
    return dict(hermetic(env))


QUERY = "0, NVIDIA H200, 9.0, 143771, GPU-00000000-0000-0000-0000-000000000000, 580.82.07\n"


def _modules(args: list[str], env: dict[str, str], cwd: Path) -> tuple[set[str], str]:
    proc = subprocess.run([sys.executable, "-c", SCRIPT, *args], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout.splitlines()[-1])
    return set(doc["modules"]), doc["output"]


@pytest.mark.parametrize("args", [["resolve", "--json"], ["detect", "--json"]],
                         ids=["resolve", "detect"])
@pytest.mark.parametrize("gpu", [True, False], ids=["nvidia-smi", "no-gpu"])
def test_a_plain_run_imports_only_what_it_needs(args: list[str], gpu: bool,
                                                tmp_path: Path) -> None:
    env = hermetic_env()
    env["TORCHENV_NO_OVERLAY"] = "1"
    if gpu:
        env["TORCHENV_NVIDIA_SMI"] = str(fake_smi(tmp_path / "bin", query=QUERY))
    modules, output = _modules(args, env, tmp_path)
    doc = json.loads(output)
    if args[0] == "resolve":
        assert doc["torch"] is not None
        assert (doc["variant"] != "cpu") == gpu
    else:
        assert (doc["nvidia"] is not None) == gpu
    imported = [m for m in NOT_ON_THE_PATH if m in modules]
    assert imported == [], f"{' '.join(args)} imported {imported}"
    assert "torchenv.cli._parser" not in modules  # argparse's side of the CLI


def test_help_still_goes_through_argparse(tmp_path: Path) -> None:
    modules, output = _modules(["resolve", "--help"], hermetic_env(), tmp_path)
    assert "argparse" in modules and "usage: torchenv resolve" in output
