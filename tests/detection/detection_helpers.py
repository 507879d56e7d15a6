"""Helpers for detection tests: captured data, fake executables, running the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from hermetic import hermetic

if TYPE_CHECKING:
    from tests.conftest import Cli

DATA = Path(__file__).parent / "data"
FAKE_NVML_SOURCE = Path(__file__).parent / "fake_nvml.c"

# variables a developer's shell may carry that would change what detection sees
_SCRUB = ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "LD_LIBRARY_PATH", "ROCM_PATH",
          "HSA_OVERRIDE_GFX_VERSION", "TORCHENV_DRIVER_VERSION", "TORCHENV_GPUS",
          "TORCHENV_PLATFORM", "TORCHENV_PYTHON", "TORCHENV_PROBE_TIMEOUT",
          "TORCHENV_NVML_LIBRARY", "TORCHENV_NVIDIA_SMI", "TORCHENV_PROBE_ROOT")


def build_fake_nvml(compiler: str, out: Path, omit: Optional[str] = None) -> Path:
    """Compile the stand-in ``out/libnvidia-ml.so.1``, without function ``omit`` when given."""
    argv = [compiler, "-shared", "-fPIC", "-O1", "-o", str(out / "libnvidia-ml.so.1"),
            str(FAKE_NVML_SOURCE)]
    if omit:
        argv.insert(1, f"-DOMIT_{omit}")
    subprocess.run(argv, check=True, capture_output=True, timeout=60)
    return out / "libnvidia-ml.so.1"


def data(name: str) -> str:
    return (DATA / name).read_text(encoding="utf-8")


def make_exe(folder: Path, name: str, script: str) -> Path:
    """An executable shell script ``folder/name``."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("#!/bin/sh\n" + script, encoding="utf-8")
    path.chmod(0o755)
    return path


def fake_smi(folder: Path, *, query: str = "", version: str = "", rc: int = 0,
             error: str = "", hang: bool = False, no_compute_cap: bool = False,
             marker: Optional[Path] = None, table: str = "", table_end: str = "exit 0"
             ) -> Path:
    """A fake ``nvidia-smi``: prints ``query`` for --query-gpu, ``version`` for --version and
    ``table`` (then runs the shell words ``table_end``) when called without arguments."""
    lines = []
    if marker is not None:
        lines.append(f'echo "$@" >> "{marker}"')
    if hang:
        lines.append("exec sleep 30")
    if error:
        (folder / "smi_error.txt").parent.mkdir(parents=True, exist_ok=True)
        (folder / "smi_error.txt").write_text(error, encoding="utf-8")
        lines.append(f'cat "{folder / "smi_error.txt"}"; exit {rc or 9}')
    (folder / "smi_query.txt").parent.mkdir(parents=True, exist_ok=True)
    (folder / "smi_query.txt").write_text(query, encoding="utf-8")
    (folder / "smi_version.txt").write_text(version, encoding="utf-8")
    (folder / "smi_table.txt").write_text(table, encoding="utf-8")
    lines.append('if [ "$#" = 0 ]; then')
    lines.append(f'  cat "{folder / "smi_table.txt"}"; {table_end}')
    lines.append("fi")
    lines.append('case "$1" in')
    lines.append(f'  --version) cat "{folder / "smi_version.txt"}"; exit 0;;')
    if no_compute_cap:
        lines.append('  *compute_cap*) echo \'Field "compute_cap" is not a valid field to '
                     "query.'; exit 2;;")
    lines.append(f'  --query-gpu=*) cat "{folder / "smi_query.txt"}"; exit {rc};;')
    lines.append("esac")
    lines.append("exit 1")
    return make_exe(folder, "nvidia-smi", "\n".join(lines) + "\n")


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _SCRUB and not k.startswith("FAKE_NVML")}
    env.update(extra)
    hermetic(env)
    return env


def run_cli(args: list[str], env: Mapping[str, str], timeout: float = 60
            ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "torchenv", *args], env=dict(env),
                          capture_output=True, text=True, timeout=timeout)


def cli_exact(cli: Cli, args: list[str], env: Mapping[str, str]
              ) -> subprocess.CompletedProcess[str]:
    """``torchenv ARGS`` in this process (the ``cli`` fixture) with exactly the environment
    ``env``, as :func:`run_cli` gives it to a child."""
    return cli(args, env, whole_env=True)


def detect_json(cli: Cli | None, env: Mapping[str, str], *args: str) -> dict[str, Any]:
    """``detect --json`` in this process (``cli``), or in a child (None: NVML's stand-in is
    loaded into the process that detects, and stays loaded there)."""
    argv = ["detect", "--json", *args]
    res = run_cli(argv, env) if cli is None else cli_exact(cli, argv, env)
    assert res.returncode == 0, res.stderr
    doc: dict[str, Any] = json.loads(res.stdout)
    return doc
