from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from torchenv.detection import _inspect_python
from torchenv.detection._python_env import (
    inspect_current,
    inspect_interpreter,
    python_info_from,
    torch_info_from,
)
from torchenv.errors import BadInput


@pytest.mark.parametrize(
    ("layout", "kind"),
    [("pixi", "pixi"), ("conda", "conda"), ("uv", "uv"), ("venv", "venv"), ("bare", "system")],
    ids=["pixi", "conda", "uv", "venv", "system"],
)
def test_env_kind(tmp_path: Path, layout: str, kind: str) -> None:
    prefix = tmp_path / (".pixi/envs/default" if layout == "pixi" else "env")
    prefix.mkdir(parents=True)
    if layout in ("conda", "pixi"):
        (prefix / "conda-meta").mkdir()
    if layout == "uv":
        (prefix / "pyvenv.cfg").write_text("home = /usr/bin\nuv = 0.8.4\nversion_info = 3.12\n")
    if layout == "venv":
        (prefix / "pyvenv.cfg").write_text("home = /usr/bin\nversion = 3.12.1\n")
    base = str(prefix) if layout != "venv" else "/usr"
    assert _inspect_python._env_kind(str(prefix), base, {})[0] == kind


def test_env_kind_conda_prefix_variable(tmp_path: Path) -> None:
    assert _inspect_python._env_kind(str(tmp_path), str(tmp_path),
                                     {"CONDA_PREFIX": str(tmp_path)})[0] == "conda"


def fake_venv(root: Path, torch_version: str, version_py: str, uv: bool = False) -> Path:
    """A real venv (no pip) with a stand-in torch distribution: metadata and version.py only."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True,
                   timeout=60)
    if uv:
        cfg = root / "pyvenv.cfg"
        cfg.write_text(cfg.read_text() + "uv = 0.8.4\n")
    (site,) = root.glob("lib/python*/site-packages")
    dist = site / f"torch-{torch_version}.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: torch\nVersion: {torch_version}\n")
    (dist / "INSTALLER").write_text("uv\n")
    (site / "torch").mkdir()
    (site / "torch/__init__.py").write_text("raise SystemExit('torch must not be imported')\n")
    (site / "torch/version.py").write_text(version_py)
    tv = site / "torchvision-0.22.1.dist-info"
    tv.mkdir()
    (tv / "METADATA").write_text("Metadata-Version: 2.1\nName: torchvision\nVersion: 0.22.1\n")
    return root / "bin" / "python"


def test_other_interpreter_pypi_cuda_build(tmp_path: Path) -> None:
    py = fake_venv(tmp_path / "env", "2.7.1",
                   "__version__ = '2.7.1'\ncuda: Optional[str] = '12.6'\nhip = None\n", uv=True)
    facts = inspect_interpreter(str(py))
    info = python_info_from(facts)
    assert info.env_kind == "uv"
    assert info.executable
    assert info.version.startswith("3.")
    torch = torch_info_from(facts)
    assert torch is not None
    assert (torch.version, torch.variant, torch.cuda_version, torch.torchvision,
            torch.torchaudio, torch.installer) == ("2.7.1", "cu126", "12.6", "0.22.1", None, "uv")


def test_current_interpreter_does_not_import_torch() -> None:
    before = "torch" in sys.modules
    facts = inspect_current()
    assert ("torch" in sys.modules) == before
    assert python_info_from(facts).version == f"{sys.version_info[0]}.{sys.version_info[1]}"


@pytest.mark.parametrize("exe", ["/nonexistent/python", "/bin/false"], ids=["missing", "false"])
def test_bad_interpreter_is_bad_input(exe: str) -> None:
    with pytest.raises(BadInput, match=exe):
        inspect_interpreter(exe)


def test_a_relative_interpreter_is_the_file_named_not_one_on_path(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``--python-exe ./python`` inspects ./python, even with another python on PATH."""
    here = tmp_path / "project"
    here.mkdir()
    local = here / "python"
    local.write_text("#!/bin/sh\necho 'this is ./python' >&2\nexit 7\n")
    local.chmod(0o755)
    elsewhere = tmp_path / "bin"
    elsewhere.mkdir()
    (elsewhere / "python").symlink_to(sys.executable)
    monkeypatch.chdir(here)
    monkeypatch.setenv("PATH", str(elsewhere))
    for spelling in ("./python", "python"):
        with pytest.raises(BadInput, match=r"this is \./python"):
            inspect_interpreter(spelling)


OLDEST = sorted(Path.home().glob(".pyenv/versions/3.7.*/bin/python"))


@pytest.mark.skipif(not OLDEST, reason="no Python 3.7 under ~/.pyenv here")
def test_the_oldest_python_a_release_supports_can_be_inspected() -> None:
    """torch 1.13 has wheels for Python 3.7: its interpreter answers the inspection."""
    facts = inspect_interpreter(str(OLDEST[-1]))
    assert python_info_from(facts).version == "3.7"
