"""``env --format pyproject`` with companions, locked and installed by real uv against the local
index: torch from the plan's variant index, an index companion from its index, a find-links
companion from its page, a release asset by its URL with its sha256 and a PyPI companion from
the default index all resolve to the planned versions and install without a build; and the
``no-build-package`` setting keeps uv from compiling a companion whose sdist is all it finds,
which uv does without the setting."""

from __future__ import annotations

import dataclasses
import hashlib
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import tomllib
from index_server import (
    FAILING_BACKEND,
    LocalIndex,
    build_index,
    build_wheel,
    failing_sdist,
    write_project_page,
    write_root_page,
)
from installer_helpers import PY, clean_env

from torchenv.errors import BadInput
from torchenv.installers.render import (
    render_constraints,
    render_file,
    render_pixi_toml,
    render_pyproject,
)
from torchenv.matrix.loader import load_matrix
from torchenv.resolver import Request, resolve
from torchenv.resolver.plan import ChosenCompanion, Plan
from torchenv.values import TorchSpec, VariantName

UV = str(Path(sys.executable).parent / "uv")


@dataclasses.dataclass
class Served:
    """A folder of the served tree of one test, and its address."""

    path: Path
    url: str


@pytest.fixture
def served(local_index: LocalIndex) -> Served:
    name = f"pyproject-{uuid.uuid4().hex[:8]}"
    path = local_index.root / name
    path.mkdir()
    return Served(path, f"{local_index.url}/{name}")


def _plan(local_index: LocalIndex | None, *companions: ChosenCompanion) -> Plan:
    from torchenv.detection.profile import HostProfile, PythonInfo
    from torchenv.values import Platform

    host = HostProfile(platform=Platform("linux-x86_64"), python=PythonInfo(version=PY))
    plan = resolve(Request(torch=TorchSpec("==2.7.1"), variant=VariantName("cpu"),
                           index_base=local_index.base if local_index else None),
                   host, load_matrix(overlay=False))
    return dataclasses.replace(plan, companions=companions)


def _companion(name: str, version: str, source: str, **where: str) -> ChosenCompanion:
    return ChosenCompanion(name, version, source, "minor", "confirmed", (), **where)


def _simple_index(root: Path, wheels: dict[str, list[Path]]) -> None:
    for project, files in wheels.items():
        write_project_page(root / project, files)
    write_root_page(root, list(wheels))


def _stand_ins(local_index: LocalIndex, served: Served) -> Plan:
    """Each kind of companion source, served beside the variant index; the plan that names
    them: xformers from an index (pinning torch==2.7.1, as the real wheel does), torch-scatter
    from a find-links page, flash-attn as a release asset with its digest, torchao from PyPI."""
    tag = local_index.tag
    pypi = served.path / "pypi"
    build_index(pypi, tag, None)  # torch for the platforms the variant index leaves to PyPI
    (pypi / "torchao").mkdir()
    write_project_page(pypi / "torchao",
                       [build_wheel(pypi / "torchao", "torchao", "0.12.0", tag)])
    write_root_page(pypi, ["torch", "torchvision", "torchaudio", "torchao"])

    xidx = served.path / "xformers-index"
    (xidx / "xformers").mkdir(parents=True)
    write_project_page(xidx / "xformers", [build_wheel(xidx / "xformers", "xformers", "0.0.31",
                                                       tag, ("torch==2.7.1",))])
    write_root_page(xidx, ["xformers"])

    pages = served.path / "pyg"
    pages.mkdir()
    scatter = build_wheel(pages, "torch_scatter", "2.1.2+pt27cpu", tag)
    (pages / "torch-2.7.0+cpu.html").write_text(
        f'<html><body><a href="{scatter.name}">{scatter.name}</a></body></html>\n')

    assets = served.path / "releases"
    assets.mkdir()
    asset = build_wheel(assets, "flash_attn", "2.8.3+cu12torch2.7cxx11abiTRUE", tag)
    return _plan(
        local_index,
        _companion("xformers", "0.0.31", "pytorch-index", index_url=f"{served.url}/xformers-index"),
        _companion("torch-scatter", "2.1.2", "find-links",
                   url=f"{served.url}/pyg/torch-2.7.0+cpu.html"),
        _companion("flash-attn", "2.8.3", "release-asset",
                   url=f"{served.url}/releases/{asset.name}",
                   sha256=hashlib.sha256(asset.read_bytes()).hexdigest()),
        _companion("torchao", "0.12.0", "pypi", index_url="https://pypi.org/simple"))


_ASSET = ("https://github.com/o/r/releases/download/v2.8.3/"
          "flash_attn-2.8.3+cu12torch2.7cxx11abiTRUE-cp311-cp311-linux_x86_64.whl")
_DIGEST = "ab" * 32
_PAGE = "https://data.pyg.org/whl/torch-2.7.0+cpu.html"
_XINDEX = "https://download.pytorch.org/whl/cu126"


def _every_source() -> Plan:
    return _plan(None,
                 _companion("xformers", "0.0.31", "pytorch-index", index_url=_XINDEX),
                 _companion("torch-scatter", "2.1.2", "find-links", url=_PAGE),
                 _companion("flash-attn", "2.8.3", "release-asset", url=_ASSET, sha256=_DIGEST),
                 _companion("torchao", "0.12.0", "pypi", index_url="https://pypi.org/simple"),
                 _companion("torch-sparse", "0.6.18", "sdist"))


def test_the_pyproject_names_each_companion_where_its_files_are() -> None:
    plan = dataclasses.replace(_every_source(), companions=_every_source().companions[:4])
    doc = tomllib.loads(render_pyproject(plan))
    deps = doc["project"]["dependencies"]
    # a release asset is a direct reference with its digest, for its platform's file only
    assert (f"flash-attn @ {_ASSET}#sha256={_DIGEST} ; "
            "sys_platform == 'linux' and platform_machine == 'x86_64'") in deps
    assert {"xformers==0.0.31", "torch-scatter==2.1.2", "torchao==0.12.0"} <= set(deps)
    uv = doc["tool"]["uv"]
    indexes = {i["url"]: i for i in uv["index"]}
    assert uv["sources"]["xformers"] == [{"index": indexes[_XINDEX]["name"]}]
    assert uv["sources"]["torch-scatter"] == [{"index": indexes[_PAGE]["name"]}]
    assert indexes[_PAGE]["format"] == "flat"
    assert all(i["explicit"] for i in indexes.values())  # only what is routed there
    assert "torchao" not in uv["sources"] and "flash-attn" not in uv["sources"]
    pins = [line for line in render_constraints(plan).splitlines()
            if line and not line.startswith("#")]
    # the constraints file's pins, the variant's local tag left to the index
    assert uv["constraint-dependencies"] == [pin.replace("+cpu", "") for pin in pins]
    assert uv["build-constraint-dependencies"] == uv["constraint-dependencies"]
    assert uv["no-build-package"] == ["torch", "torchvision", "torchaudio", "xformers",
                                      "torch-scatter", "flash-attn", "torchao"]
    assert uv["environments"] == ["sys_platform == 'linux' and platform_machine == 'x86_64'"]


def test_the_pixi_toml_names_each_companion_where_its_files_are() -> None:
    plan = dataclasses.replace(_every_source(), companions=_every_source().companions[:4])
    doc = tomllib.loads(render_pixi_toml(plan))
    pypi = doc["pypi-dependencies"]
    assert pypi["xformers"] == {"version": "==0.0.31", "index": _XINDEX}
    assert pypi["torch-scatter"] == "==2.1.2" and pypi["torchao"] == "==0.12.0"
    assert pypi["flash-attn"] == {"url": f"{_ASSET}#sha256={_DIGEST}"}
    assert doc["pypi-options"]["find-links"] == [{"url": _PAGE}]
    assert doc["pypi-options"]["no-build"] == ["torch", "torchvision", "torchaudio", "xformers",
                                               "torch-scatter", "flash-attn", "torchao"]


@pytest.mark.parametrize("fmt", ["pyproject", "pixi"])
def test_a_chosen_source_build_is_refused_not_dropped(fmt: str) -> None:
    with pytest.raises(BadInput, match=f"torch-sparse is a source build.*a {fmt} file"):
        render_file(_every_source(), fmt)


def _uv(*args: str, project: Path, served: Served) -> subprocess.CompletedProcess[str]:
    env = clean_env(UV_DEFAULT_INDEX=f"{served.url}/pypi",  # PyPI's address, at its stand-in
                    UV_CACHE_DIR=str(project / ".uv-cache"), UV_PYTHON_DOWNLOADS="never",
                    XDG_CONFIG_HOME=str(project / ".config"))  # no user uv.toml, the project's
    return subprocess.run([UV, *args, "--python", sys.executable], cwd=project, env=env,
                          capture_output=True, text=True, timeout=180, check=False)


def _project(tmp_path: Path, text: str) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text(text, encoding="utf-8")
    return project


def _installed(project: Path) -> dict[str, str]:
    out = subprocess.run([str(project / ".venv" / "bin" / "python"), "-c",
                          "import importlib.metadata as m\n"
                          "for d in m.distributions(): print(d.metadata['Name'], d.version)"],
                         capture_output=True, text=True, timeout=60, check=True)
    return dict(line.split() for line in out.stdout.splitlines())


@pytest.mark.slow  # real uv: a lock and a sync
def test_uv_locks_and_installs_every_planned_companion_without_a_build(
        tmp_path: Path, local_index: LocalIndex, served: Served) -> None:
    plan = _stand_ins(local_index, served)
    project = _project(tmp_path, render_pyproject(plan))
    lock = _uv("lock", project=project, served=served)
    assert lock.returncode == 0, lock.stderr
    locked = {(p["name"], p["version"]): p["source"]
              for p in tomllib.loads((project / "uv.lock").read_text())["package"]}
    # torch for this platform from the variant index, with its local version
    assert locked[("torch", "2.7.1+cpu")] == {"registry": plan.index_url}
    assert locked[("xformers", "0.0.31")] == {"registry": f"{served.url}/xformers-index"}
    assert locked[("torch-scatter", "2.1.2+pt27cpu")] == {
        "registry": f"{served.url}/pyg/torch-2.7.0+cpu.html"}
    (flash,) = [source for (name, _), source in locked.items() if name == "flash-attn"]
    assert flash == {"url": plan.companions[2].url}
    assert locked[("torchao", "0.12.0")] == {"registry": f"{served.url}/pypi"}

    sync = _uv("sync", "--locked", project=project, served=served)
    assert sync.returncode == 0, sync.stderr
    assert "Built " not in sync.stderr and "Building " not in sync.stderr, sync.stderr
    assert _installed(project) == {
        "torch": "2.7.1+cpu", "torchvision": "0.22.1+cpu", "torchaudio": "2.7.1+cpu",
        "xformers": "0.0.31", "torch_scatter": "2.1.2+pt27cpu",
        "flash_attn": "2.8.3+cu12torch2.7cxx11abiTRUE", "torchao": "0.12.0"}


@pytest.mark.slow  # real uv resolving against the local index, twice
@pytest.mark.parametrize("no_build", [True, False], ids=["as-planned", "control"])
def test_uv_never_builds_a_companion_the_plan_chose_as_a_wheel(
        no_build: bool, tmp_path: Path, local_index: LocalIndex, served: Served) -> None:
    pypi = served.path / "pypi"
    build_index(pypi, local_index.tag, None)
    (pypi / "xformers").mkdir()
    write_project_page(pypi / "xformers", [failing_sdist(pypi / "xformers")])
    write_root_page(pypi, ["torch", "torchvision", "torchaudio", "xformers"])
    plan = _plan(local_index, _companion("xformers", "0.0.31", "pypi",
                                         index_url="https://pypi.org/simple"))
    text = render_pyproject(plan)
    if not no_build:
        doc = tomllib.loads(text)
        assert "xformers" in doc["tool"]["uv"]["no-build-package"]
        text = text.replace('    "xformers",\n]', "]")  # the last entry of no-build-package
        assert "xformers" not in tomllib.loads(text)["tool"]["uv"]["no-build-package"]
    project = _project(tmp_path, text)
    lock = _uv("lock", project=project, served=served)
    assert lock.returncode != 0
    said = " ".join((lock.stdout + lock.stderr).split())  # uv wraps the backend's lines
    if no_build:
        assert FAILING_BACKEND not in said, lock.stderr
        assert "xformers" in lock.stderr and "build" in lock.stderr.lower(), lock.stderr
    else:  # without the setting uv runs the sdist's build backend
        assert FAILING_BACKEND in said, lock.stderr


@pytest.mark.slow  # real uv resolving against the local index
def test_without_companions_uv_locks_the_planned_torch_from_the_variant_index(
        tmp_path: Path, local_index: LocalIndex, served: Served) -> None:
    build_index(served.path / "pypi", local_index.tag, None)
    plan = _plan(local_index)
    project = _project(tmp_path, render_pyproject(plan))
    lock = _uv("lock", project=project, served=served)
    assert lock.returncode == 0, lock.stderr
    locked = {(p["name"], p["version"]): p["source"]
              for p in tomllib.loads((project / "uv.lock").read_text())["package"]}
    # the plan's platform from the variant index, the others (macOS) from PyPI
    assert locked[("torch", "2.7.1+cpu")] == {"registry": plan.index_url}
    assert locked[("torch", "2.7.1")] == {"registry": f"{served.url}/pypi"}
