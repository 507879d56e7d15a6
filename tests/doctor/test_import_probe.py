"""Real broken environments, built from the CPU torch of this venv, diagnosed by a real child
``import torch``; where the fix needs no download, it is run as printed and torch imports after.

Cheap builds: a broken torch is a folder of symbolic links to the installed one with only the
files a case changes made real; the stand-in libraries and extension are compiled from C.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from tests.doctor.extensions import CC, build_missing_symbol_extension, ext_suffix

from torchenv.doctor.classify import classify
from torchenv.doctor.probe import probe_import
from torchenv.doctor.seen import Seen

pytestmark = pytest.mark.slow

PYTHON = sys.executable  # this venv's interpreter, with the CPU torch installed

def _installed_torch() -> tuple[str, str]:
    """(site-packages, its torch folder) of this venv, found without importing torch."""
    import importlib.util

    spec = importlib.util.find_spec("torch")
    assert spec is not None and spec.submodule_search_locations, "the test venv has torch"
    folder = next(iter(spec.submodule_search_locations))
    return os.path.dirname(folder), folder


SITE, TORCH = _installed_torch()
needs_cc = pytest.mark.skipif(CC is None, reason="no C compiler")


def base_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "LD_LIBRARY_PATH", "LD_PRELOAD", "PYTHONNOUSERSITE")}
    env.update(extra)
    return env


def diagnose(env: Mapping[str, str], cwd: Path, limit: float = 60.0, python: str = PYTHON,
             check_files: bool = False) -> tuple[Seen, list[Any]]:
    seen = probe_import(python, env, cwd=str(cwd), limit=limit, check_files=check_files)
    return seen, classify(seen)


def imports_after(fix: str, env: Mapping[str, str], cwd: Path, python: str = PYTHON) -> str:
    """Run the fix as printed, then ``import torch`` in the same shell: torch's __file__."""
    proc = subprocess.run(["bash", "-c", f"{fix}\nexec \"$0\" -c 'import torch; "
                           "print(torch.__file__)'", python],
                          env=dict(env), cwd=str(cwd), capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout.strip()


def shadow_torch(dest: Path, *, real: tuple[str, ...] = ()) -> Path:
    """A torch folder at ``dest``/torch whose entries link to the installed torch, except the
    top-level files named in ``real`` (copied, to be changed or deleted)."""
    folder = dest / "torch"
    folder.mkdir(parents=True)
    for entry in os.listdir(TORCH):
        if entry in real:
            shutil.copy2(os.path.join(TORCH, entry), folder / entry)
        else:
            (folder / entry).symlink_to(os.path.join(TORCH, entry))
    return folder


def copy_dist_info(dest: Path, version: str = "2.13.0+cpu") -> Path:
    source = next(Path(SITE).glob("torch-*.dist-info"))
    target = dest / f"torch-{version}.dist-info"
    shutil.copytree(source, target)
    meta = target / "METADATA"
    text = meta.read_text()
    old = next(line for line in text.splitlines() if line.startswith("Version:"))
    meta.write_text(text.replace(old, f"Version: {version}", 1))
    record = target / "RECORD"  # only the torch/ folder is planted: its rows alone are kept
    record.write_text("".join(line for line in record.read_text().splitlines(keepends=True)
                              if line.startswith("torch/")))
    return target


@pytest.fixture(scope="module")
def stubs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A libgomp.so.1 built from C that lacks omp_set_num_threads (torch's libtorch_cpu needs
    it), with the symbol versions libtorch_cpu asks for."""
    if CC is None:
        pytest.skip("no C compiler")
    base = tmp_path_factory.mktemp("stubs")
    (base / "g.map").write_text(
        "OMP_1.0 { global: omp_get_max_threads; local: *; };\n"
        "GOMP_1.0 { global: GOMP_barrier; } OMP_1.0;\n"
        "GOMP_4.0 { global: GOMP_single_start; } GOMP_1.0;\n")
    (base / "g.c").write_text("int omp_get_max_threads(void){return 1;}\n"
                              "void GOMP_barrier(void){}\nint GOMP_single_start(void){return 1;}\n")
    lib = base / "lib"
    lib.mkdir()
    subprocess.run([CC, "-shared", "-fPIC", "-o", str(lib / "libgomp.so.1"),
                    "-Wl,-soname,libgomp.so.1", f"-Wl,--version-script={base / 'g.map'}",
                    str(base / "g.c")], check=True, timeout=60)
    return lib


def test_a_healthy_environment_gives_no_finding(tmp_path: Path) -> None:
    seen, findings = diagnose(base_env(), tmp_path, check_files=True)
    assert findings == [], [f.title for f in findings]
    torch = seen.outcome("torch")
    assert torch is not None and torch.ok and torch.version and torch.version.endswith("+cpu")
    assert torch.path_entry == SITE and seen.torch_folder == TORCH
    assert torch.cxx11_abi is not None
    assert any(p.endswith("libtorch_cpu.so") for p in seen.loaded_libraries)
    assert seen.records == ()


@needs_cc
@pytest.mark.parametrize("variable", ["LD_PRELOAD", "LD_LIBRARY_PATH"])
def test_a_library_lacking_a_symbol_on_the_library_path(stubs: Path, tmp_path: Path,
                                                        variable: str) -> None:
    value = str(stubs / "libgomp.so.1") if variable == "LD_PRELOAD" else str(stubs)
    env = base_env(**{variable: value})
    _, findings = diagnose(env, tmp_path)
    assert [f.code for f in findings] == ["library-path-breaks-torch"]
    f = findings[0]
    assert f.evidence["symbol"] == "omp_set_num_threads"
    assert f.evidence["file"].endswith("torch/lib/libtorch_cpu.so")
    assert f.evidence["libraries"] == [str(stubs / "libgomp.so.1")]
    assert imports_after(f.fix, env, tmp_path).startswith(TORCH)


@pytest.mark.parametrize("where", ["cwd", "PYTHONPATH"])
def test_a_source_tree_shadows_the_install(tmp_path: Path, where: str) -> None:
    checkout = tmp_path / "pytorch"
    (checkout / "torch" / "_C").mkdir(parents=True)  # the repository's torch/_C (stubs, no .so)
    shutil.copy2(os.path.join(TORCH, "__init__.py"), checkout / "torch" / "__init__.py")
    cwd = checkout if where == "cwd" else tmp_path
    env = base_env(**({"PYTHONPATH": f"{checkout}{os.pathsep}/nonexistent"}
                      if where == "PYTHONPATH" else {}))
    seen, findings = diagnose(env, cwd)
    torch = seen.outcome("torch")
    assert torch is not None and not torch.ok
    assert [f.code for f in findings] == ["torch-shadowed"]
    f = findings[0]
    assert f.evidence["torch_folder"] == str(checkout / "torch")
    assert f.evidence["source_tree"] is True
    assert f.evidence["path_entry"] == ("" if where == "cwd" else str(checkout))
    assert imports_after(f.fix, env, cwd).startswith(TORCH)


def test_a_torch_that_hangs_ends_at_the_limit_and_leaves_nothing_running(tmp_path: Path) -> None:
    tree = tmp_path / "hang"
    (tree / "torch").mkdir(parents=True)
    pid_file = tmp_path / "pid"
    (tree / "torch" / "__init__.py").write_text(  # and a process of its own that waits too
        "import os, subprocess, time\n"
        "child = subprocess.Popen(['sleep', '600'])\n"
        f"open({str(pid_file)!r}, 'w').write(f'{{os.getpid()}} {{child.pid}}')\n"
        "while True:\n    time.sleep(1)\n")
    start = time.monotonic()
    seen, findings = diagnose(base_env(PYTHONPATH=str(tree)), tmp_path, limit=3.0)
    assert time.monotonic() - start < 20
    assert seen.timed_out and seen.hung_in == "torch"
    assert [f.code for f in findings][:1] == ["import-timeout"]
    assert "torch-shadowed" in [f.code for f in findings]
    for pid in map(int, pid_file.read_text().split()):
        assert _ended(pid), f"process {pid} of the hung import is still running"


def _ended(pid: int, wait: float = 5.0) -> bool:
    """Whether ``pid`` is gone or a zombie (killed, not yet reaped by whoever adopted it)."""
    deadline = time.monotonic() + wait
    while True:
        try:
            with open(f"/proc/{pid}/stat") as fh:
                state = fh.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            return True
        if state in ("Z", "X"):
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)


@needs_cc
@pytest.mark.parametrize(("symbol", "code"), [
    ("_ZN3c1017RegisterOperatorsD1Ev_gone", "extension-built-for-other-torch"),
    ("_ZN3c106detail19torchCheckMsgImplB5cxx11EPKc", "extension-cxx11-abi"),
], ids=["c10", "cxx11-abi"])
def test_an_extension_built_for_another_torch(tmp_path: Path, symbol: str, code: str) -> None:
    """A torchvision whose _C references a c10 symbol this torch does not export (one of
    another release; one of the other C++ string ABI)."""
    site = tmp_path / "site"
    pkg = site / "torchvision"
    so = build_missing_symbol_extension(pkg, "_C", symbol)
    (pkg / "__init__.py").write_text("from torchvision import _C\n")
    info = site / "torchvision-0.20.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: torchvision\nVersion: 0.20.1\n\n")
    _, findings = diagnose(base_env(PYTHONPATH=str(site)), tmp_path)
    assert [f.code for f in findings] == [code]
    f = findings[0]
    assert f.evidence["file"] == str(so)
    assert f.evidence["symbol"] == symbol
    assert f.evidence["distribution"] == "torchvision"


@needs_cc
def test_doctor_imports_an_installed_companion_and_names_one_built_for_another_torch(
        tmp_path: Path, cli: Any) -> None:
    """torch_scatter (a companion in the data) installed beside torch, its compiled module built
    for another torch: doctor imports it after torch in its child and says so."""
    site = tmp_path / "site"
    pkg = site / "torch_scatter"
    so = build_missing_symbol_extension(pkg, "_scatter", "_ZN3c1017RegisterOperatorsD1Ev_gone")
    (pkg / "__init__.py").write_text("from torch_scatter import _scatter\n")
    info = site / "torch_scatter-2.1.2.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: torch-scatter\n"
                                   "Version: 2.1.2\n\n")
    env = {k: v for k, v in base_env(PYTHONPATH=str(site)).items()
           if not k.startswith("TORCHENV_")}
    result = cli(["doctor", "--json", "--python", PYTHON, "--no-gpu"], env=env, cwd=tmp_path,
                 whole_env=True)
    doc = json.loads(result.stdout)
    found = [f for f in doc["findings"] if f["code"] == "extension-built-for-other-torch"]
    assert found, doc["findings"]
    assert found[0]["evidence"]["file"] == str(so)
    assert found[0]["evidence"]["distribution"] == "torch-scatter"
    assert result.returncode == 1


def test_files_missing_from_and_changed_against_record(tmp_path: Path) -> None:
    site = tmp_path / "site"
    folder = shadow_torch(site, real=("_utils_internal.py", "_VF.py"))
    copy_dist_info(site)
    (folder / "_utils_internal.py").unlink()
    with open(folder / "_VF.py", "a") as fh:
        fh.write("# edited\n")
    seen, findings = diagnose(base_env(PYTHONPATH=str(site)), tmp_path, check_files=True)
    by_code = {f.code: f for f in findings}
    assert by_code["files-missing"].evidence["missing"] == ["torch/_utils_internal.py"]
    assert by_code["files-changed"].evidence["changed"] == ["torch/_VF.py"]
    assert by_code["files-missing"].evidence["location"] == str(site)
    # the copy on PYTHONPATH is the one that imports, and its import fails on the missing file
    assert by_code["multiple-torch"].evidence["imports"]["location"] == str(site)
    torch = seen.outcome("torch")
    assert torch is not None and not torch.ok and "_utils_internal" in (torch.message or "")


def test_a_leftover_of_an_interrupted_upgrade_is_removed_by_its_fix(tmp_path: Path) -> None:
    site = tmp_path / "site"
    (site / "~orch").mkdir(parents=True)
    env = base_env(PYTHONPATH=str(site))
    _, findings = diagnose(env, tmp_path)
    assert [f.code for f in findings] == ["interrupted-install-leftover"]
    assert imports_after(findings[0].fix, env, tmp_path).startswith(TORCH)
    assert not (site / "~orch").exists()


@pytest.fixture(scope="module")
def user_site_venv(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A --system-site-packages venv holding torch 2.13.0+cpu, and a user site (enabled in such
    a venv) holding a 'torch 2.12.0+cpu': links to the same files, another dist-info."""
    base = tmp_path_factory.mktemp("usersite")
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--system-site-packages",
                    str(venv)], check=True, timeout=120)
    major, minor = sys.version_info[:2]
    venv_site = venv / "lib" / f"python{major}.{minor}" / "site-packages"
    shadow_torch(venv_site)
    copy_dist_info(venv_site)
    userbase = base / "userbase"
    user_site = userbase / "lib" / f"python{major}.{minor}" / "site-packages"
    shadow_torch(user_site)
    copy_dist_info(user_site, "2.12.0+cpu")
    for dep in ("torchgen", "typing_extensions.py", "sympy", "mpmath", "networkx", "jinja2",
                "markupsafe", "filelock", "fsspec", "numpy", "numpy.libs"):
        if os.path.exists(os.path.join(SITE, dep)):
            (venv_site / dep).symlink_to(os.path.join(SITE, dep))
    return {"python": str(venv / "bin" / "python"), "venv": str(venv),
            "venv_site": str(venv_site), "userbase": str(userbase), "user_site": str(user_site)}


def test_a_user_site_install_shadows_the_venv(user_site_venv: dict[str, Any],
                                              tmp_path: Path) -> None:
    env = base_env(PYTHONUSERBASE=user_site_venv["userbase"])
    seen, findings = diagnose(env, tmp_path, python=user_site_venv["python"])
    assert seen.user_site_enabled and seen.user_site == user_site_venv["user_site"]
    assert [f.code for f in findings] == ["multiple-torch"]
    f = findings[0]
    # a venv's own site-packages comes before the user site; the user-site copy is shadowed
    assert f.evidence["imports"]["location"] == user_site_venv["venv_site"]
    assert [d["location"] for d in f.evidence["shadowed"]] == [user_site_venv["user_site"]]
    assert [d["version"] for d in f.evidence["shadowed"]] == ["2.12.0+cpu"]
    assert f.fix.startswith("export PYTHONNOUSERSITE=1")
    after = imports_after(f.fix.split("#")[0] + "\n\"$0\" -c 'import site, sys; "
                          "assert site.getusersitepackages() not in sys.path'", env, tmp_path,
                          python=user_site_venv["python"])
    assert after.startswith(user_site_venv["venv_site"])


def test_doctor_diagnoses_the_active_venv_and_says_so(user_site_venv: dict[str, Any],
                                                      tmp_path: Path) -> None:
    import json

    from tests.conftest import run_cli

    env = {"VIRTUAL_ENV": user_site_venv["venv"], "PYTHONUSERBASE": user_site_venv["userbase"]}
    proc = run_cli(["doctor", "--json"], env=env, cwd=str(tmp_path), timeout=180)
    doc = json.loads(proc.stdout)
    assert proc.returncode == 1, proc.stderr
    assert doc["interpreter"] == {"path": user_site_venv["python"], "source": "$VIRTUAL_ENV"}
    assert doc["seen"]["user_site"] == user_site_venv["user_site"]
    found = {f["code"]: f for f in doc["findings"]}
    assert found["multiple-torch"]["evidence"]["shadowed"][0]["location"] == \
        user_site_venv["user_site"]
    text = run_cli(["doctor"], env=env, cwd=str(tmp_path), timeout=180)
    assert text.stdout.splitlines()[0] == \
        f"Diagnosing {user_site_venv['python']} ($VIRTUAL_ENV)"


def _planted(case: str, stubs: Path, tmp_path: Path) -> dict[str, str]:
    """The environment of one planted break, for the CLI."""
    if case == "LD_PRELOAD":
        return {"LD_PRELOAD": str(stubs / "libgomp.so.1")}
    site = tmp_path / "site"
    if case == "source-tree":
        (site / "torch" / "_C").mkdir(parents=True)
        shutil.copy2(os.path.join(TORCH, "__init__.py"), site / "torch" / "__init__.py")
    else:  # a file of the install gone
        folder = shadow_torch(site, real=("_utils_internal.py",))
        copy_dist_info(site)
        (folder / "_utils_internal.py").unlink()
    return {"PYTHONPATH": str(site)}


@needs_cc
@pytest.mark.parametrize(("case", "code"), [
    ("LD_PRELOAD", "library-path-breaks-torch"), ("source-tree", "torch-shadowed"),
    ("files-missing", "files-missing")])
def test_validate_and_doctor_give_the_same_cause_and_fix(stubs: Path, tmp_path: Path,
                                                         case: str, code: str) -> None:
    import json

    from tests.conftest import run_cli

    from torchenv.doctor.classify import IMPORT_CAUSES

    env = _planted(case, stubs, tmp_path)
    validate = run_cli(["validate", "--json", "--python", PYTHON], env=env, cwd=str(tmp_path),
                       timeout=180)
    doctor = run_cli(["doctor", "--json", "--python", PYTHON], env=env, cwd=str(tmp_path),
                     timeout=180)
    assert validate.returncode == 1 and doctor.returncode == 1, validate.stderr
    check = json.loads(validate.stdout)["checks"][0]
    assert check["name"] == "import_torch" and check["status"] == "fail"
    cause = check["metrics"]["finding"]
    finding = next(f for f in json.loads(doctor.stdout)["findings"]
                   if f["code"] in IMPORT_CAUSES)
    assert (cause["code"], cause["fix"]) == (finding["code"], finding["fix"])
    assert cause["code"] == code
    assert cause["fix"] in check["hint"] and "run 'torchenv doctor" not in check["hint"]


def test_a_wheel_for_another_python(tmp_path: Path) -> None:
    """torch's extension named for another CPython (and its WHEEL tag saying so): Python finds
    only the torch/_C folder of type stubs, and torch says it loaded the repository's _C."""
    site = tmp_path / "site"
    folder = shadow_torch(site)
    mine = f"_C{ext_suffix()}"
    other = mine.replace(f"-{sys.version_info[0]}{sys.version_info[1]}-",
                         f"-{sys.version_info[0]}{sys.version_info[1] + 1}-")
    (folder / mine).rename(folder / other)
    info = copy_dist_info(site)
    wheel = (info / "WHEEL").read_text()
    tag = f"cp{sys.version_info[0]}{sys.version_info[1]}"
    other_tag = f"cp{sys.version_info[0]}{sys.version_info[1] + 1}"
    (info / "WHEEL").write_text(wheel.replace(tag, other_tag))
    seen, findings = diagnose(base_env(PYTHONPATH=str(site)), tmp_path)
    torch = seen.outcome("torch")
    assert torch is not None and not torch.ok
    by_code = {f.code: f for f in findings}
    f = by_code["torch-wrong-python"]
    assert f.evidence["compiled"] == [other]
    assert f.evidence["python_tag"] == tag
    assert all(t.startswith(f"{other_tag}-") for t in f.evidence["wheel_tags"])
    assert f.severity == "error"


# -- torch's Requires-Dist against stand-in nvidia-* wheels, installed and repaired by real pip --

def _wheel(dest: Path, name: str, version: str, files: Mapping[str, bytes]) -> Path:
    """A valid py3-none-any wheel holding ``files`` (a metadata-only one when empty)."""
    import base64
    import hashlib
    import zipfile

    dist_info = f"{name.replace('-', '_')}-{version}.dist-info"
    contents = dict(files)
    contents[f"{dist_info}/METADATA"] = (f"Metadata-Version: 2.1\nName: {name}\n"
                                         f"Version: {version}\n\n").encode()
    contents[f"{dist_info}/WHEEL"] = (b"Wheel-Version: 1.0\nGenerator: torchenv-tests\n"
                                      b"Root-Is-Purelib: true\nTag: py3-none-any\n")
    record = "".join(
        f"{path},sha256="
        f"{base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()},"
        f"{len(data)}\n" for path, data in contents.items()) + f"{dist_info}/RECORD,,\n"
    contents[f"{dist_info}/RECORD"] = record.encode()
    path = dest / f"{name.replace('-', '_')}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as zf:
        for arcname, data in contents.items():
            zf.writestr(arcname, data)
    return path


@pytest.fixture(scope="module")
def cuda_like_venv(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A venv (with pip) whose torch (links to the CPU build) declares two nvidia-* wheels in
    its Requires-Dist, as CUDA builds do; stand-in wheels of both at the wrong version installed
    by real pip; and a torchvision whose library needs libcudnn.so.9 from the nvidia-cudnn wheel
    folder (RUNPATH $ORIGIN/../nvidia/cudnn/lib, as torch's CUDA libraries find theirs)."""
    if CC is None:
        pytest.skip("no C compiler")
    base = tmp_path_factory.mktemp("cudalike")
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=180)
    python = venv / "bin" / "python"
    major, minor = sys.version_info[:2]
    site = venv / "lib" / f"python{major}.{minor}" / "site-packages"
    shadow_torch(site)
    info = copy_dist_info(site)
    meta = info / "METADATA"
    marker = 'platform_system == "Linux" and platform_machine == "x86_64"'
    meta.write_text(meta.read_text().replace(
        "Requires-Dist: filelock",
        f"Requires-Dist: nvidia-cudnn-cu12==9.1.0.70; {marker}\n"
        f"Requires-Dist: nvidia-cublas-cu12==12.4.5.8; {marker}\n"
        "Requires-Dist: filelock", 1))
    for dep in ("torchgen", "typing_extensions.py", "sympy", "mpmath", "networkx", "jinja2",
                "markupsafe", "filelock", "fsspec", "numpy", "numpy.libs"):
        if os.path.exists(os.path.join(SITE, dep)):
            (site / dep).symlink_to(os.path.join(SITE, dep))
    build = base / "build"
    build.mkdir()
    (build / "cudnn.c").write_text("int cudnnGetVersion(void){return 90100;}\n")
    for soname in ("libcudnn.so.9", "libcudnn.so.8"):
        subprocess.run([CC, "-shared", "-fPIC", "-o", str(build / soname),
                        f"-Wl,-soname,{soname}", str(build / "cudnn.c")], check=True,
                       timeout=60)
    (build / "ops.c").write_text("extern int cudnnGetVersion(void);\n"
                                 "int ops_cudnn(void){ return cudnnGetVersion(); }\n")
    vision = site / "torchvision"
    vision.mkdir()
    subprocess.run([CC, "-shared", "-fPIC", "-o", str(vision / "libtorchvision_ops.so"),
                    str(build / "ops.c"), f"-L{build}", "-l:libcudnn.so.9",
                    "-Wl,-rpath,$ORIGIN/../nvidia/cudnn/lib"], check=True, timeout=60)
    (vision / "__init__.py").write_text(
        "import ctypes, os\n"
        "ctypes.CDLL(os.path.join(os.path.dirname(__file__), 'libtorchvision_ops.so'))\n")
    vinfo = site / "torchvision-0.28.0+cpu.dist-info"
    vinfo.mkdir()
    (vinfo / "METADATA").write_text("Metadata-Version: 2.1\nName: torchvision\n"
                                    "Version: 0.28.0+cpu\n\n")
    wheels = base / "wheels"
    wheels.mkdir()
    lib = "nvidia/cudnn/lib"
    _wheel(wheels, "nvidia-cudnn-cu12", "8.9.2.26",
           {f"{lib}/libcudnn.so.8": (build / "libcudnn.so.8").read_bytes()})
    _wheel(wheels, "nvidia-cudnn-cu12", "9.1.0.70",
           {f"{lib}/libcudnn.so.9": (build / "libcudnn.so.9").read_bytes()})
    _wheel(wheels, "nvidia-cublas-cu12", "12.1.0.26", {})
    pip_env = base_env(PIP_NO_INDEX="1", PIP_FIND_LINKS=str(wheels),
                       PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1")
    pip_env = {k: v for k, v in pip_env.items() if k not in ("PIP_CONSTRAINT", "VIRTUAL_ENV")}
    subprocess.run([str(python), "-m", "pip", "install", "--no-deps",
                    "nvidia-cudnn-cu12==8.9.2.26", "nvidia-cublas-cu12==12.1.0.26"],
                   env=pip_env, check=True, timeout=180, capture_output=True)
    return {"python": str(python), "site": str(site), "pip_env": pip_env}


def test_a_missing_cuda_library_names_the_wheel_torch_requires_and_its_fix_works(
        cuda_like_venv: dict[str, Any], tmp_path: Path) -> None:
    python, env = cuda_like_venv["python"], cuda_like_venv["pip_env"]
    seen, findings = diagnose(env, tmp_path, python=python)
    vision = seen.outcome("torchvision")
    assert vision is not None and not vision.ok
    assert "libcudnn.so.9: cannot open shared object file" in (vision.message or "")
    by_code = {f.code: f for f in findings}
    missing = by_code["missing-shared-library"]
    assert missing.evidence["requirement"] == "nvidia-cudnn-cu12==9.1.0.70"
    assert missing.evidence["installed"] == "8.9.2.26"
    assert by_code["requirement-version"].evidence["wanted"] == [
        "nvidia-cudnn-cu12==9.1.0.70", "nvidia-cublas-cu12==12.4.5.8"]
    # the fix, as printed, with pip taking the stand-in wheels from a local folder
    imports_after(missing.fix or "false", env, tmp_path, python=python)
    seen, findings = diagnose(env, tmp_path, python=python)
    assert all(o.ok for o in seen.imports), [o.message for o in seen.imports]
    assert [f.code for f in findings] == ["requirement-version"]
    assert findings[0].evidence["wanted"] == ["nvidia-cublas-cu12==12.4.5.8"]
