"""The classifier of what ``import torch`` did: pure, fed the error texts users paste and the
paths and distributions the child reports (the planted environments of test_import_probe.py
prove the same rules on real imports)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from torchenv.doctor.classify import classify, cuda_library, explains_import
from torchenv.doctor.seen import (
    MARK,
    ImportOutcome,
    RecordProblem,
    Seen,
    SeenDistribution,
    seen_from_report,
)

SITE = "/v/lib/python3.11/site-packages"
TORCH_DIR = f"{SITE}/torch"
MARKERS = {"platform_system": "Linux", "platform_machine": "x86_64", "python_version": "3.11",
           "python_full_version": "3.11.7", "sys_platform": "linux", "os_name": "posix",
           "implementation_name": "cpython", "platform_python_implementation": "CPython"}
REQUIRES_2_6 = tuple(json.loads(
    (Path(__file__).parent / "data" / "torch_2.6.0_requires_dist.json").read_text()
)["requires_dist"])


def dist(name: str, version: str, location: str = SITE, **kw: Any) -> SeenDistribution:
    return SeenDistribution(name, version, location, f"{location}/{name}-{version}.dist-info",
                            **kw)


TORCH = dist("torch", "2.13.0+cpu", has_record=True)


def ok(module: str = "torch", version: str = "2.13.0+cpu") -> ImportOutcome:
    return ImportOutcome(module, True, file=f"{SITE}/{module}/__init__.py", path_entry=SITE,
                         version=version, cxx11_abi=True)


def failed(message: str, module: str = "torch", error_type: str = "ImportError"
           ) -> ImportOutcome:
    return ImportOutcome(module, False, error=f"Traceback (most recent call last):\n"
                         f"{error_type}: {message}\n", error_type=error_type, message=message)


def seen(**kw: Any) -> Seen:
    base: dict[str, Any] = {
        "python": "/v/bin/python", "executable": "/v/bin/python", "version_info": (3, 11, 7),
        "ext_suffix": ".cpython-311-x86_64-linux-gnu.so", "cwd": "/home/u/project",
        "sys_path": ("", "/usr/lib/python311.zip", SITE), "distributions": (TORCH,),
        "torch_folder": TORCH_DIR, "torch_path_entry": SITE,
        "torch_c_files": ("_C", "_C.cpython-311-x86_64-linux-gnu.so"), "markers": MARKERS,
        "bundled_libraries": {"libgomp.so.1": f"{TORCH_DIR}/lib/libgomp.so.1",
                           "libc10.so": f"{TORCH_DIR}/lib/libc10.so"},
        "imports": (ok(),), "loaded_libraries": (f"{TORCH_DIR}/lib/libc10.so",), "limit": 60.0}
    base.update(kw)
    return Seen(**base)


def codes(findings: list[Any]) -> list[str]:
    return [f.code for f in findings]


def test_a_healthy_import_gives_no_finding() -> None:
    assert classify(seen()) == []


# -- undefined symbols: torch's own file vs an extension ---------------------------------------

OMP = (f"{TORCH_DIR}/lib/libtorch_cpu.so: undefined symbol: omp_set_num_threads, version "
       "OMP_1.0")


@pytest.mark.parametrize("variable", ["LD_PRELOAD", "LD_LIBRARY_PATH"])
def test_undefined_symbol_in_torch_with_a_library_path_override_names_the_override(
        variable: str) -> None:
    env = {variable: "/opt/old/libgomp.so.1" if variable == "LD_PRELOAD" else "/opt/old:/x"}
    found = classify(seen(
        imports=(failed(OMP),), env=env,
        ld_preload=("/opt/old/libgomp.so.1",) if variable == "LD_PRELOAD" else (),
        ld_library_path={"/opt/old": ("libgomp.so.1",), "/x": ()}
        if variable == "LD_LIBRARY_PATH" else {}))
    assert codes(found) == ["library-path-breaks-torch"]
    f = found[0]
    assert f.evidence["symbol"] == "omp_set_num_threads"
    assert f.evidence["file"] == f"{TORCH_DIR}/lib/libtorch_cpu.so"
    assert "/opt/old/libgomp.so.1" in f.title
    assert f.fix == ("unset LD_PRELOAD" if variable == "LD_PRELOAD" else
                     "export LD_LIBRARY_PATH=/x")


def test_undefined_symbol_in_torch_without_an_override_is_a_mixed_install() -> None:
    found = classify(seen(imports=(failed(OMP),)))
    assert codes(found) == ["undefined-symbol-in-torch"]
    assert found[0].fix is not None and "--force-reinstall" in found[0].fix
    assert "torch==2.13.0+cpu" in found[0].fix and "/whl/cpu" in found[0].fix


C10 = "_ZN3c106detail14torchCheckFailEPKcS2_jRKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE"


def test_an_extension_missing_a_c10_symbol_was_built_for_another_torch() -> None:
    so = f"{SITE}/torchvision/_C.so"
    found = classify(seen(
        distributions=(TORCH, dist("torchvision", "0.20.1")),
        imports=(ok(), failed(f"{so}: undefined symbol: _ZN3c1017RegisterOperatorsD1Ev",
                              module="torchvision"))),
        paired={"torchvision": "torchvision==0.28.0+cpu"})
    assert codes(found) == ["extension-built-for-other-torch"]
    f = found[0]
    assert f.evidence["file"] == so and f.evidence["distribution"] == "torchvision"
    assert f.fix == "/v/bin/python -m pip install --force-reinstall --no-deps " \
                    "torchvision==0.28.0+cpu"


def test_a_cxx11_symbol_missing_is_the_string_abi() -> None:
    so = f"{SITE}/myext/_ops.so"
    found = classify(seen(distributions=(TORCH, dist("myext", "1.0")),
                          imports=(ok(), failed(f"{so}: undefined symbol: {C10}",
                                                module="torchvision"))))
    assert codes(found) == ["extension-cxx11-abi"]
    assert found[0].evidence["torch_cxx11_abi"] is True
    assert "--no-binary myext myext" in (found[0].fix or "")


# -- missing libraries against torch's Requires-Dist -------------------------------------------

def cuda_torch(**kw: Any) -> SeenDistribution:
    return dist("torch", "2.6.0", requires=REQUIRES_2_6, **kw)


CUDNN = ("libcudnn.so.9: cannot open shared object file: No such file or directory")


def test_a_missing_cuda_library_names_the_nvidia_wheel_torch_pins() -> None:
    found = classify(seen(distributions=(cuda_torch(),), imports=(failed(CUDNN),)))
    assert "missing-shared-library" in codes(found)
    f = next(f for f in found if f.code == "missing-shared-library")
    assert f.evidence["requirement"] == "nvidia-cudnn-cu12==9.1.0.70"
    assert f.evidence["installed"] is None
    assert f.fix == ("/v/bin/python -m pip install --force-reinstall --no-deps "
                     "nvidia-cudnn-cu12==9.1.0.70")


def test_a_missing_library_of_the_wrong_wheel_version_and_an_ld_folder_offering_another() -> None:
    found = classify(seen(
        distributions=(cuda_torch(), dist("nvidia-cudnn-cu12", "8.9.2.26")),
        imports=(failed(CUDNN),), ld_library_path={"/usr/local/cuda/lib64": ("libcudnn.so.8",)}))
    f = next(f for f in found if f.code == "missing-shared-library")
    assert f.evidence["installed"] == "8.9.2.26"
    assert f.evidence["on_ld_library_path"] == ["/usr/local/cuda/lib64/libcudnn.so.8"]
    assert "requirement-version" in codes(found)


def test_requirements_torch_pins_are_checked_against_what_is_installed() -> None:
    nvidia = [dist(r.split("==")[0], r.split("==")[1].split(";")[0]) for r in REQUIRES_2_6
              if r.startswith(("nvidia-", "triton"))]
    assert classify(seen(distributions=(cuda_torch(), *nvidia))) == []
    wrong = [d._replace(version="12.1.0.26") if d.name == "nvidia-cublas-cu12" else d
             for d in nvidia if d.name != "triton"]
    found = classify(seen(distributions=(cuda_torch(), *wrong)))
    assert codes(found) == ["requirement-missing", "requirement-version"]
    assert found[0].evidence["missing"] == ["triton==3.2.0"]
    assert found[1].evidence["wanted"] == ["nvidia-cublas-cu12==12.4.5.8"]
    assert found[1].fix == "/v/bin/python -m pip install nvidia-cublas-cu12==12.4.5.8"


def test_requirements_whose_marker_excludes_the_interpreter_are_not_asked_for() -> None:
    arm = {**MARKERS, "platform_machine": "aarch64"}
    assert classify(seen(distributions=(cuda_torch(),), markers=arm)) == []


def nvidia_of_2_6(location: str = SITE) -> list[SeenDistribution]:
    return [dist(r.split("==")[0], r.split("==")[1].split(";")[0], location)
            for r in REQUIRES_2_6 if r.startswith(("nvidia-", "triton"))]


def test_a_requirement_gap_is_a_warning_while_torch_imports_and_an_error_when_it_fails() -> None:
    without_triton = [d for d in nvidia_of_2_6() if d.name != "triton"]
    imports = classify(seen(distributions=(cuda_torch(), *without_triton)))
    assert [(f.code, f.severity) for f in imports] == [("requirement-missing", "warning")]
    fails = classify(seen(distributions=(cuda_torch(), *without_triton),
                          imports=(failed("something else went wrong"),)))
    assert ("requirement-missing", "error") in [(f.code, f.severity) for f in fails]


def test_requirements_are_judged_by_the_copy_beside_the_torch_that_imports() -> None:
    user = "/home/u/.local/lib/python3.11/site-packages"
    # an older cuBLAS first on the path, the pinned one beside torch: torch loads its own
    stale = dist("nvidia-cublas-cu12", "12.1.0.26", user)
    assert classify(seen(distributions=(stale, cuda_torch(), *nvidia_of_2_6()))) == []
    # and the other way round: the pinned one elsewhere does not hide a wrong one beside torch
    beside = [d._replace(version="12.1.0.26") if d.name == "nvidia-cublas-cu12" else d
              for d in nvidia_of_2_6()]
    found = classify(seen(distributions=(dist("nvidia-cublas-cu12", "12.4.5.8", user),
                                         cuda_torch(), *beside)))
    assert codes(found) == ["requirement-version"]
    assert found[0].evidence["installed"] == [f"nvidia-cublas-cu12==12.1.0.26 in {SITE}"]


def test_a_requirement_whose_marker_cannot_be_judged_is_not_asked_for() -> None:
    odd = cuda_torch()._replace(requires=(
        *REQUIRES_2_6, 'nvidia-odd-cu12==1.0; os_name ~= "posix"'))
    assert classify(seen(distributions=(odd, *nvidia_of_2_6()))) == []


def test_nccl_for_two_cuda_majors() -> None:
    nvidia = [dist(r.split("==")[0], r.split("==")[1].split(";")[0]) for r in REQUIRES_2_6
              if r.startswith(("nvidia-", "triton"))]
    found = classify(seen(distributions=(cuda_torch(), *nvidia,
                                         dist("nvidia-nccl-cu11", "2.21.5"))))
    assert codes(found) == ["nccl-two-cuda-majors"]
    assert "uninstall -y nvidia-nccl-cu11" in (found[0].fix or "")


def test_libcuda_missing_under_wsl_points_at_the_driver_folder() -> None:
    wsl = {**MARKERS, "platform_release": "6.6.87.2-microsoft-standard-WSL2"}
    error = failed("libcuda.so.1: cannot open shared object file: No such file or directory",
                   error_type="OSError")
    found = classify(seen(imports=(error,), markers=wsl, env={"LD_LIBRARY_PATH": "/opt/x"}))
    assert codes(found) == ["missing-shared-library"]
    assert found[0].fix == "export LD_LIBRARY_PATH=/usr/lib/wsl/lib:/opt/x"
    elsewhere = classify(seen(imports=(error,)))  # not WSL: no folder to point at
    assert codes(elsewhere) == ["missing-shared-library"] and elsewhere[0].fix is None


@pytest.mark.parametrize(("name", "library"), [
    ("libcudnn_ops.so.9", "libcudnn"), ("libcublasLt.so.12", "libcublasLt"),
    ("libcusparseLt.so.0", "libcusparseLt"), ("libcuda.so.1", "libcuda"),
    ("libcudart.so.12", "libcudart"), ("libgomp.so.1", None)])
def test_cuda_library_names(name: str, library: str | None) -> None:
    lib = cuda_library(name)
    assert (lib.library if lib else None) == library


# -- which torch: a shadowing tree, another Python's wheel, two installs ------------------------

def test_a_source_tree_in_the_current_folder_shadows_the_install() -> None:
    found = classify(seen(
        torch_folder="/home/u/project/torch", torch_path_entry="", torch_c_files=("_C",),
        imports=(failed("No module named 'torch._C'", error_type="ModuleNotFoundError"),)))
    assert codes(found) == ["torch-shadowed"]
    f = found[0]
    assert f.evidence["source_tree"] is True and f.evidence["path_entry"] == ""
    assert f.fix is not None and f.fix.startswith("cd /home/u")


def test_a_tree_on_pythonpath_is_taken_off_it() -> None:
    found = classify(seen(
        torch_folder="/src/pytorch/torch", torch_path_entry="/src/pytorch",
        env={"PYTHONPATH": "/src/pytorch:/opt/lib"}, torch_c_files=("_C",),
        imports=(failed("No module named 'torch._C'"),)))
    assert codes(found) == ["torch-shadowed"]
    assert found[0].fix == "export PYTHONPATH=/opt/lib"


def test_a_wheel_for_another_python() -> None:
    torch = dist("torch", "2.13.0+cpu", wheel_tags=("cp312-cp312-manylinux_2_28_x86_64",))
    found = classify(seen(distributions=(torch,),
                          torch_c_files=("_C", "_C.cpython-312-x86_64-linux-gnu.so"),
                          imports=(failed("No module named 'torch._C'"),)))
    assert codes(found) == ["torch-wrong-python"]
    assert found[0].evidence["python_tag"] == "cp311"
    assert found[0].evidence["wheel_tags"] == ["cp312-cp312-manylinux_2_28_x86_64"]


def test_two_installs_name_the_one_that_imports() -> None:
    user = "/home/u/.local/lib/python3.11/site-packages"
    found = classify(seen(
        distributions=(dist("torch", "2.5.1", user), TORCH), user_site=user,
        user_site_enabled=True, torch_folder=f"{user}/torch",
        imports=(ok()._replace(path_entry=user, file=f"{user}/torch/__init__.py",
                               version="2.5.1"),)))
    assert codes(found) == ["multiple-torch"]
    f = found[0]
    assert f.evidence["imports"]["location"] == user
    assert [d["version"] for d in f.evidence["shadowed"]] == ["2.13.0+cpu"]
    assert (f.fix or "").startswith("export PYTHONNOUSERSITE=1")


# -- files and leftovers -----------------------------------------------------------------------

def test_record_problems_name_the_files() -> None:
    found = classify(seen(records=(RecordProblem("torch", "2.13.0+cpu", SITE,
                                                 missing=("torch/_utils.py",),
                                                 changed=("torch/version.py",)),)))
    assert codes(found) == ["files-missing", "files-changed"]
    assert "torch/_utils.py" in found[0].explanation
    assert found[1].severity == "warning"  # the import still works


def test_a_reinstall_fix_uses_the_index_of_a_variant_tag() -> None:
    found = classify(seen(records=(RecordProblem("torch", "2.13.0+cpu", SITE,
                                                 missing=("torch/_utils.py",)),)))
    assert found[0].fix == ("/v/bin/python -m pip install --force-reinstall --no-deps "
                            "torch==2.13.0+cpu --index-url https://download.pytorch.org/whl/cpu")
    assert "came from elsewhere" not in found[0].explanation


def test_a_build_whose_local_tag_is_no_variant_gets_no_made_up_index() -> None:
    ngc = "2.5.0a0+e000cf0ad9.nv24.10"
    found = classify(seen(distributions=(dist("torch", ngc, has_record=True),),
                          records=(RecordProblem("torch", ngc, SITE,
                                                 missing=("torch/_utils.py",)),)))
    f = found[0]
    assert f.code == "files-missing"
    assert f.fix == ("/v/bin/python -m pip install --force-reinstall --no-deps "
                     f"torch=={ngc}")
    assert "--index-url" not in (f.fix or "")
    assert "came from elsewhere" in f.explanation and "e000cf0ad9.nv24.10" in f.explanation


def test_leftover_folders_of_an_interrupted_upgrade() -> None:
    found = classify(seen(leftovers=(f"{SITE}/~orch",)))
    assert codes(found) == ["interrupted-install-leftover"]
    assert found[0].fix == f"rm -rf '{SITE}/~orch'"


def test_numpy_2_beside_a_torch_built_for_numpy_1() -> None:
    old = dist("torch", "2.2.2")
    said = ("A module that was compiled using NumPy 1.x cannot be run in NumPy 2.0.0 as it may "
            "crash.")
    found = classify(seen(distributions=(old, dist("numpy", "2.0.0")), stderr=said))
    assert codes(found) == ["numpy2-torch-built-for-numpy1"]
    assert found[0].evidence["printed"] == said
    assert found[0].fix == "/v/bin/python -m pip install 'numpy<2'"
    assert classify(seen(distributions=(dist("torch", "2.3.0"), dist("numpy", "2.0.0")))) == []


# -- how the child ended -----------------------------------------------------------------------

def test_a_hung_import() -> None:
    found = classify(seen(imports=(), timed_out=True, hung_in="torch", limit=5.0))
    assert codes(found) == ["import-timeout"]
    assert found[0].evidence["module"] == "torch"


def test_an_unknown_failure_still_gives_its_text() -> None:
    found = classify(seen(imports=(failed("something new"),)))
    assert codes(found) == ["import-failed"]
    assert "something new" in found[0].evidence["error"]
    assert all(explains_import(f) for f in found)


def test_torch_not_installed_is_no_import_cause() -> None:
    """'No module named torch' with nothing on the path is doctor's torch-missing finding (from
    the metadata) and validate's 'not installed', not an unexplained import failure."""
    absent = failed("No module named 'torch'", error_type="ModuleNotFoundError")
    assert classify(seen(imports=(absent,), distributions=(), torch_folder=None)) == []
    # a dist-info without its package is a broken install
    assert codes(classify(seen(imports=(absent,), torch_folder=None))) == ["import-failed"]


def test_the_report_lines_are_read_past_other_output_and_a_cut_line() -> None:
    lines = [
        "a sitecustomize printed this",
        MARK + json.dumps({"kind": "seen", "interpreter": {"version_info": [3, 11, 7, "final",
                                                                          0]},
                           "sys_path": [""], "distributions": [], "torch_spec": None}),
        MARK + json.dumps({"kind": "start", "module": "torch"}),
        MARK + '{"kind": "import", "mod',
    ]
    report = seen_from_report("/v/bin/python", "\n".join(lines), limit=3.0, timed_out=True,
                              ended=None)
    assert report.hung_in == "torch" and report.imports == ()
    assert report.python_tag == "cp311"


def test_every_finding_code_is_documented() -> None:
    """docs/doctor.md lists every code the classifier and the metadata rules can give."""
    import re

    source = "".join(p.read_text() for p in
                     (Path(__file__).parents[2] / "src" / "torchenv" / "doctor").glob("*.py"))
    emitted = set(re.findall(r'"(?:error|warning|info)",\s*"([a-z0-9-]+)"', source))
    emitted |= {f"{n}-{k}" for n in ("torchvision", "torchaudio") for k in ("unpaired", "variant")}
    emitted |= {f"multiple-{n}" for n in ("torch", "torchvision", "torchaudio")}
    emitted.discard("warning")  # the severity chosen at run time ("error" if failed else ...)
    doc = (Path(__file__).parents[2] / "docs" / "doctor.md").read_text()
    assert len(emitted) > 30
    assert {c for c in emitted if f"`{c}`" not in doc} == set()


def test_the_child_is_python_3_7_syntax_and_stdlib_only() -> None:
    """It runs in the interpreter being diagnosed, which may be as old as any release in the
    matrix supports."""
    import ast

    import torchenv.doctor._import_child as child

    tree = ast.parse(Path(child.__file__).read_text(), feature_version=(3, 7))
    imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import)
                for a in n.names}
    imported |= {n.module.split(".")[0] for n in ast.walk(tree)
                 if isinstance(n, ast.ImportFrom) and n.module}
    assert imported <= {"__future__", "importlib", "json", "os", "platform", "re", "site",
                        "sys", "sysconfig", "time", "traceback", "typing"}, imported


@pytest.mark.parametrize("name", ["torch", "Flash_Attn", "torch.scatter", "nvidia-cudnn-cu12",
                                  "a__b", "a._-b", "Pyg_Lib", "x---y"])
def test_the_childs_name_rule_is_pep_503_as_packaging_has_it(name: str) -> None:
    """The standalone child keeps its own copy of the one rule; it must agree with the one
    the rest of torchenv calls."""
    from packaging.utils import canonicalize_name

    import torchenv.doctor._import_child as child

    assert child.norm(name) == canonicalize_name(name)
