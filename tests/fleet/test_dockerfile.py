"""examples/Dockerfile: its resolve-and-install step, run here with ``pip`` standing in (no
image is built: the step is the part torchenv owns), for a GPU fleet and for CPU nodes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hermetic import hermetic

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "examples" / "Dockerfile"


def resolve_step() -> str:
    """The shell of the RUN instruction that resolves and installs."""
    text = DOCKERFILE.read_text("utf-8")
    block = text.split("# resolve for the nodes, keep the plan, install with its pip command\n",
                       1)[1].split("\n\n", 1)[0]
    assert block.startswith("RUN ")
    return block[len("RUN "):]


def run_step(tmp_path: Path, **build_args: str) -> tuple[str, str]:
    """Run the step with ``torchenv`` and ``python`` this tree's, ``pip`` a recorder, and
    /opt/torchenv redirected to ``tmp_path``; what pip got, and the plan."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "torchenv").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m torchenv "$@"\n')
    (bin_dir / "python").write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    (bin_dir / "pip").write_text(f'#!/bin/sh\necho "$@" > "{tmp_path}/pip-args"\n')
    for tool in bin_dir.iterdir():
        tool.chmod(0o755)
    script = resolve_step().replace("/opt/torchenv", str(tmp_path))
    env = dict(hermetic({"PATH": f"{bin_dir}:{os.environ['PATH']}",
                         "PYTHONPATH": str(ROOT / "src"), "TORCHENV_NO_OVERLAY": "1",
                         "DRIVER": "", "GPU": "", "TORCH": "", "VARIANT": "auto",
                         **build_args}))
    proc = subprocess.run(["sh", "-c", script], capture_output=True, text=True, env=env,
                          timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return (tmp_path / "pip-args").read_text().strip(), (tmp_path / "plan.json").read_text()


def test_a_gpu_image_installs_the_build_resolve_picks(tmp_path: Path) -> None:
    args, text = run_step(tmp_path, DRIVER="550.54.15", GPU="8.0 9.0", TORCH="==2.7.*")
    plan = json.loads(text)
    assert plan["torch"].startswith("2.7.") and plan["variant"].startswith("cu")
    # the plan's own pip command, unchanged but for the cache
    assert "pip " + args == plan["commands"]["pip"] + " --no-cache-dir"


@pytest.mark.parametrize("build_args", [{}, {"VARIANT": "cpu"}])
def test_cpu_nodes_get_the_cpu_build(tmp_path: Path, build_args: dict[str, str]) -> None:
    args, text = run_step(tmp_path, **build_args)
    plan = json.loads(text)
    assert plan["variant"] == "cpu"
    assert "pip " + args == plan["commands"]["pip"] + " --no-cache-dir"
