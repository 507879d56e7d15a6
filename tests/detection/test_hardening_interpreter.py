"""Hostile input met by detection: an interpreter that hangs or prints nonsense, package
metadata that is a FIFO or a link to a device, a driver path the user names that is not there.

Each is bad input or a fact left unknown: never a hang, a traceback, a process left running or
another interpreter's facts."""

from __future__ import annotations

import _ctypes
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from detection_helpers import clean_env, cli_exact, make_exe, run_cli
from tests.conftest import Cli

from torchenv.detection._inspect_python import read_capped
from torchenv.detection._python_env import inspect_interpreter, torch_info_from
from torchenv.detection.detect import detect
from torchenv.errors import BadInput

needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")


def _running(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie waiting to be reaped is not)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            state = fh.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def _all_gone(pids: list[int], within: float = 3.0) -> bool:
    end = time.monotonic() + within
    while any(_running(p) for p in pids):
        if time.monotonic() > end:
            return False
        time.sleep(0.05)
    return True


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads /proc")
def test_a_hanging_interpreter_is_bad_input_fast_and_leaves_no_process(tmp_path: Path) -> None:
    """``resolve --python X`` where X hangs: exit 2 naming X within the probe timeout (5 s),
    never a plan for torchenv's own interpreter, and X and its child are gone."""
    pids = tmp_path / "pids"
    hang = make_exe(tmp_path, "python3", f'echo $$ > "{pids}"\nsleep 100 &\n'
                    f'echo $! >> "{pids}"\nwait\n')
    start = time.monotonic()
    res = run_cli(["resolve", "--python", str(hang), "--json"], clean_env(), timeout=60)
    took = time.monotonic() - start
    assert res.returncode == 2, res.stdout + res.stderr
    assert f"interpreter {hang} did not answer within 5 s" in res.stderr
    assert "Traceback" not in res.stderr
    doc = json.loads(res.stdout)
    assert doc["exit_code"] == 2 and str(hang) in doc["error"] and "torch" not in doc
    assert took < 9, took
    started = [int(line) for line in pids.read_text().split()]
    assert len(started) == 2  # the script and its sleep both ran ...
    assert _all_gone(started), [p for p in started if _running(p)]  # ... and both were ended


def test_a_hanging_interpreter_named_to_detect_is_bad_input(tmp_path: Path) -> None:
    hang = make_exe(tmp_path, "python", "exec sleep 100\n")
    start = time.monotonic()
    res = run_cli(["detect", "--python-exe", str(hang)],
                  clean_env(TORCHENV_PROBE_TIMEOUT="1"), timeout=60)
    assert res.returncode == 2, res.stdout + res.stderr
    assert f"interpreter {hang} did not answer within 1 s" in res.stderr
    assert time.monotonic() - start < 5
    # the message names the flag that gave the interpreter
    assert res.stderr.startswith("torchenv: error: --python-exe: "), res.stderr


@pytest.mark.parametrize(("args", "env", "named"), [
    (["detect", "--python-exe", "/bin/false"], {}, "--python-exe"),
    (["install", "--dry-run", "--python-exe", "/bin/false"], {}, "--python-exe"),
    (["resolve", "--python", "/bin/false"], {}, "--python"),
    (["resolve"], {"TORCHENV_PYTHON": "/bin/false"}, "TORCHENV_PYTHON"),
], ids=["detect", "install", "resolve-flag", "resolve-variable"])
def test_an_interpreter_that_fails_is_blamed_on_what_named_it(
        args: list[str], env: dict[str, str], named: str, cli: Cli) -> None:
    res = cli_exact(cli, args, clean_env(**env))
    assert res.returncode == 2, res.stdout + res.stderr
    assert res.stderr.startswith(
        f"torchenv: error: {named}: cannot inspect the interpreter /bin/false"), res.stderr


@pytest.mark.parametrize(
    ("printed", "problem"),
    [('{"version_info": 5}', "version_info '5' is not"),
     ('{"packages": {"torch": "x"}}', "version_info 'None' is not"),
     ('{"version_info": [3, 12, 1, "final", 0], "packages": {"torch": "x"}}',
      "packages.torch is not an object"),
     ('{"version_info": [3, 12, 1, "final", 0], "packages": ["torch"]}',
      "packages is not an object"),
     ('{"version_info": [3, 12, 1, "final", 0], "executable": 7}', "executable is not text"),
     ('{"version_info": [3, 12, 1, "final", 0], "gil_disabled": "no"}',
      "gil_disabled is not true"),
     ('{"version_info": [3, true, 1, "final", 0]}', "is not [major"),
     ('[3, 12]', "a JSON list, not an object"),
     ('{"version_info": [' + "9" * 5000 + ', 12, 1, "final", 0]}', "not the expected JSON"),
     ("[" * 100_000, "not the expected JSON")],
    ids=["version-int", "packages-only", "package-text", "packages-list", "executable-int",
         "gil-text", "bool-minor", "list", "5000-digits", "deep"],
)
def test_an_interpreter_printing_the_wrong_shape_is_bad_input(tmp_path: Path, printed: str,
                                                                problem: str) -> None:
    (tmp_path / "out.json").write_text(printed)
    exe = make_exe(tmp_path, "python", f'cat "{tmp_path / "out.json"}"\n')
    with pytest.raises(BadInput, match=str(exe)) as caught:
        inspect_interpreter(str(exe), timeout=10)
    assert problem in caught.value.message
    assert caught.value.value == str(exe)


@pytest.mark.parametrize("printed", ['{"version_info": 5}', '{"packages": {"torch": "x"}}'],
                         ids=["version-int", "packages-text"])
def test_the_cli_reports_a_wrong_shape_without_a_traceback(
        tmp_path: Path, printed: str, cli: Cli) -> None:
    exe = make_exe(tmp_path, "python", f"echo '{printed}'\n")
    res = cli_exact(cli, ["resolve", "--python", str(exe)], clean_env())
    assert res.returncode == 2, res.stdout + res.stderr
    assert str(exe) in res.stderr and "wrong shape" in res.stderr
    assert "Traceback" not in res.stderr


# --- metadata that is no regular file, read by the inspected interpreter's own child ----------


def _venv_with_hostile_metadata(root: Path) -> Path:
    """A real venv (no pip) whose torch METADATA and INSTALLER are FIFOs without a writer,
    torchvision's METADATA a link to /dev/zero, torchaudio's a link to a folder; torch's
    version.py is a regular file (so torch is still found, through it)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True,
                   timeout=60)
    (site,) = root.glob("lib/python*/site-packages")
    torch = site / "torch-2.7.1.dist-info"
    torch.mkdir()
    os.mkfifo(torch / "METADATA")
    os.mkfifo(torch / "INSTALLER")
    (site / "torch").mkdir()
    (site / "torch/version.py").write_text("__version__ = '2.7.1+cu126'\ncuda = '12.6'\n")
    vision = site / "torchvision-0.22.1.dist-info"
    vision.mkdir()
    (vision / "METADATA").symlink_to("/dev/zero")
    audio = site / "torchaudio-2.7.1.dist-info"
    audio.mkdir()
    (audio / "METADATA").symlink_to(site)
    return root / "bin" / "python"


@needs_fifo
def test_fifo_and_device_metadata_neither_hang_nor_exhaust_memory(tmp_path: Path) -> None:
    py = _venv_with_hostile_metadata(tmp_path / "env")
    start = time.monotonic()
    facts = inspect_interpreter(str(py), timeout=10, inventory=True)
    assert time.monotonic() - start < 5
    torch = torch_info_from(facts)
    assert torch is not None  # from torch/version.py; no METADATA could be read
    assert (torch.version, torch.variant, torch.installer) == ("2.7.1+cu126", "cu126", None)
    assert torch.torchvision is None and torch.torchaudio is None
    inventory = {d["name"]: d for d in facts["inventory"]["dists"]}
    # the inventory falls back to the folder's name, and reads no INSTALLER from the FIFO
    assert inventory["torch"]["version"] == "2.7.1" and inventory["torch"]["installer"] is None
    assert inventory["torchvision"]["version"] == "0.22.1"


@needs_fifo
def test_the_cli_inspects_that_interpreter_promptly(tmp_path: Path, cli: Cli) -> None:
    py = _venv_with_hostile_metadata(tmp_path / "env")
    res = cli_exact(cli, ["detect", "--json", "--python-exe", str(py)], clean_env())
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["torch"]["version"] == "2.7.1+cu126"


@needs_fifo
def test_read_capped_reads_only_regular_files_and_at_most_the_cap(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    big = tmp_path / "big"
    big.write_bytes(b"x" * 300_000)
    start = time.monotonic()
    assert read_capped(str(fifo)) is None
    assert time.monotonic() - start < 1
    assert read_capped("/dev/zero") is None
    assert read_capped(str(tmp_path)) is None
    assert read_capped(str(tmp_path / "missing")) is None
    assert read_capped(str(big), 100_000) == "x" * 100_000
    assert read_capped(str(big)) == "x" * 300_000


# --- driver paths the user names ---------------------------------------------------------------


def _not_a_program(tmp_path: Path) -> str:
    path = tmp_path / "nvidia-smi"
    path.write_text("this is text, not a program\n")
    path.chmod(0o755)
    return str(path)


def _not_executable(tmp_path: Path) -> str:
    path = tmp_path / "smi"
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(0o644)
    return str(path)


@pytest.mark.parametrize(
    ("variable", "value", "why"),
    [("TORCHENV_NVML_LIBRARY", lambda t: "/nonexistent/libnvidia-ml.so.1", "does not exist"),
     ("TORCHENV_NVML_LIBRARY", str, "is not a file"),
     ("TORCHENV_NVML_LIBRARY", _not_executable, "does not load"),
     ("TORCHENV_NVML_LIBRARY", lambda t: _ctypes.__file__, "is not an NVML library"),
     ("TORCHENV_NVIDIA_SMI", lambda t: "/nonexistent/nvidia-smi", "does not exist"),
     ("TORCHENV_NVIDIA_SMI", str, "is not a file"),
     ("TORCHENV_NVIDIA_SMI", _not_executable, "is not executable"),
     ("TORCHENV_NVIDIA_SMI", _not_a_program, "does not run")],
    ids=["nvml-missing", "nvml-folder", "nvml-not-a-library", "nvml-another-library",
         "smi-missing", "smi-folder",
         "smi-not-executable", "smi-not-a-program"],
)
def test_a_named_driver_path_that_is_unusable_is_bad_input(
        tmp_path: Path, variable: str, value: object, why: str) -> None:
    """Not exit 3 "an NVIDIA GPU is present" and not silently "no driver"."""
    path = value(tmp_path)  # type: ignore[operator]
    env = clean_env(**{variable: path})
    if variable == "TORCHENV_NVIDIA_SMI":
        env["TORCHENV_NVML_LIBRARY"] = "off"  # NVML answers first when it loads
    with pytest.raises(BadInput) as caught:
        detect(environ=env)
    assert caught.value.message.startswith(f"{variable}: {path} {why}")
    assert caught.value.value == path
    assert f"set {variable} to" in (caught.value.hint or "")  # what to do


@pytest.mark.parametrize("variable", ["TORCHENV_NVML_LIBRARY", "TORCHENV_NVIDIA_SMI"])
def test_the_cli_exits_2_for_a_named_driver_path_that_is_not_there(tmp_path: Path,
                                                                   variable: str, cli: Cli) -> None:
    """On a machine without a GPU: exit 2 naming the variable and the value."""
    path = str(tmp_path / "missing" / "lib")
    res = cli_exact(cli, ["resolve"], clean_env(**{variable: path}))
    assert res.returncode == 2, res.stdout + res.stderr
    assert f"torchenv: error: {variable}: {path} does not exist" in res.stderr
    assert "Traceback" not in res.stderr


def test_a_probe_root_that_is_not_a_directory_is_bad_input(tmp_path: Path, cli: Cli) -> None:
    """Read in place of /, a missing folder would find no GPU on a GPU host."""
    for root in (tmp_path / "missing", make_exe(tmp_path, "file", "true\n")):
        res = cli_exact(cli, ["resolve"], clean_env(TORCHENV_PROBE_ROOT=str(root)))
        assert res.returncode == 2, res.stdout + res.stderr
        assert f"torchenv: error: TORCHENV_PROBE_ROOT: {root} is not a directory" in res.stderr
