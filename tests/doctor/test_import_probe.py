"""Real broken environments, built from the CPU torch of this venv, diagnosed by a real child
``import torch``; where the fix needs no download, it is run as printed and torch imports after.

Cheap builds: a broken torch is a folder of symbolic links to the installed one with only the
files a case changes made real; the stand-in libraries and extension are compiled from C.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

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
CC = shutil.which("cc") or shutil.which("gcc")
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
    (tree / "torch" / "__init__.py").write_text(
        f"import os, time\nopen({str(pid_file)!r}, 'w').write(str(os.getpid()))\n"
        "while True:\n    time.sleep(1)\n")
    start = time.monotonic()
    seen, findings = diagnose(base_env(PYTHONPATH=str(tree)), tmp_path, limit=3.0)
    assert time.monotonic() - start < 20
    assert seen.timed_out and seen.hung_in == "torch"
    assert [f.code for f in findings][:1] == ["import-timeout"]
    assert "torch-shadowed" in [f.code for f in findings]
    pid = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


@needs_cc
def test_an_extension_built_for_another_torch(tmp_path: Path) -> None:
    """A torchvision whose _C references a c10 symbol this torch does not export."""
    site = tmp_path / "site"
    pkg = site / "torchvision"
    pkg.mkdir(parents=True)
    (tmp_path / "ext.c").write_text(
        "extern void _ZN3c1017RegisterOperatorsD1Ev_gone(void);\n"
        "void call(void){ _ZN3c1017RegisterOperatorsD1Ev_gone(); }\n")
    so = pkg / f"_C{_ext_suffix()}"
    subprocess.run([CC or "cc", "-shared", "-fPIC", "-o", str(so), str(tmp_path / "ext.c")],
                   check=True, timeout=60)
    (pkg / "__init__.py").write_text("from torchvision import _C\n")
    info = site / "torchvision-0.20.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: torchvision\nVersion: 0.20.1\n\n")
    _, findings = diagnose(base_env(PYTHONPATH=str(site)), tmp_path)
    assert [f.code for f in findings] == ["extension-built-for-other-torch"]
    f = findings[0]
    assert f.evidence["file"] == str(so)
    assert f.evidence["symbol"] == "_ZN3c1017RegisterOperatorsD1Ev_gone"
    assert f.evidence["distribution"] == "torchvision"


def _ext_suffix() -> str:
    import sysconfig

    return str(sysconfig.get_config_var("EXT_SUFFIX"))


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

    from conftest import run_cli

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


@needs_cc
def test_validate_and_doctor_give_the_same_cause_and_fix(stubs: Path, tmp_path: Path) -> None:
    import json

    from conftest import run_cli

    env = {"LD_PRELOAD": str(stubs / "libgomp.so.1")}
    validate = run_cli(["validate", "--json", "--python", PYTHON], env=env, cwd=str(tmp_path),
                       timeout=180)
    doctor = run_cli(["doctor", "--json", "--python", PYTHON], env=env, cwd=str(tmp_path),
                     timeout=180)
    assert validate.returncode == 1 and doctor.returncode == 1, validate.stderr
    check = json.loads(validate.stdout)["checks"][0]
    assert check["name"] == "import_torch" and check["status"] == "fail"
    cause = check["metrics"]["finding"]
    finding = json.loads(doctor.stdout)["findings"][0]
    assert (cause["code"], cause["fix"]) == (finding["code"], finding["fix"]) == (
        "library-path-breaks-torch", "unset LD_PRELOAD")
    assert "unset LD_PRELOAD" in check["hint"] and "run 'torchenv doctor" not in check["hint"]
