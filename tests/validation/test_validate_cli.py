"""``torchenv validate`` for real: the CPU torch in this venv, in child processes."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from tests.validation.helpers import (
    by_name,
    check_junit_schema,
    has_cuda_gpu,
    listing,
    load,
    run_cli,
)

HERE = Path(__file__).resolve().parent
CPU_CHECKS = ("import_torch", "build", "matmul", "autograd", "nn_module", "amp")
GPU_CHECKS = ("cuda_arch", "roundtrip", "memory")

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def quick(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One real quick-level run, shared: JSON on stdout, JUnit to a file, a private TMPDIR."""
    base = tmp_path_factory.mktemp("quick")
    tmpdir = base / "tmp"
    tmpdir.mkdir()
    junit = base / "report.xml"
    proc = run_cli("validate", "--json", "--junit", str(junit), env={"TMPDIR": str(tmpdir)})
    return {"proc": proc, "doc": load(proc.stdout), "junit": junit, "tmpdir": tmpdir}


def test_quick_suite_passes_on_cpu(quick: dict[str, Any]) -> None:
    assert quick["proc"].returncode == 0, quick["proc"].stderr
    doc = quick["doc"]
    assert doc["ok"] is True
    assert doc["torch"].startswith("2.")
    assert Path(doc["python"]).exists()
    checks = by_name(doc)
    for name in CPU_CHECKS:
        assert checks[name]["status"] == "pass", checks[name]
        assert checks[name]["device"] == ("cuda:0" if has_cuda_gpu() and name in
                                          ("matmul", "autograd", "nn_module", "amp") else "cpu")


@pytest.mark.skipif(has_cuda_gpu(), reason="this host has a GPU; see the gpu-marked test")
def test_gpu_checks_skip_without_a_device(quick: dict[str, Any]) -> None:
    checks = by_name(quick["doc"])
    for name in GPU_CHECKS:
        assert checks[name]["status"] == "skip"
        assert checks[name]["reason"] == "no CUDA device"


@pytest.mark.gpu
def test_gpu_checks_pass_on_a_gpu(quick: dict[str, Any]) -> None:
    if not has_cuda_gpu():
        pytest.skip("no NVIDIA GPU on this host")
    checks = by_name(quick["doc"])
    for name in (*GPU_CHECKS, "matmul", "amp", "build", "cuda_libraries"):
        assert checks[name]["status"] == "pass", checks[name]
    assert "tf32" in checks["matmul"]["detail"]


def test_json_stdout_only_and_nothing_left_in_tmp(quick: dict[str, Any]) -> None:
    assert quick["proc"].stdout.lstrip().startswith("{")
    assert listing(quick["tmpdir"]) == []


def test_junit_parses_back(quick: dict[str, Any]) -> None:
    root = ET.parse(quick["junit"]).getroot()
    check_junit_schema(root)
    suite = root.find("testsuite")
    assert suite is not None
    cases = suite.findall("testcase")
    doc = quick["doc"]
    assert [c.get("name") for c in cases] == [c["name"] for c in doc["checks"]]
    skipped = [c for c in cases if c.find("skipped") is not None]
    assert int(suite.get("skipped", "-1")) == len(skipped)
    assert int(suite.get("failures", "-1")) == 0
    assert int(suite.get("tests", "-1")) == len(cases)
    for case in cases:
        float(case.get("time", "x"))
    assert not list(quick["junit"].parent.glob(".report.xml.*")), "no temp file left"


def test_table_output_and_exit_status() -> None:
    """The table of a passing run (one check: the quick suite itself is proved above)."""
    proc = run_cli("validate", "--only", "matmul", env={"TORCHENV_VALIDATE_EXTRA_CHECKS": ""})
    assert proc.returncode == 0, proc.stderr
    rows = [[cell.strip() for cell in line.split("│")] for line in proc.stdout.splitlines()]
    assert any(row[1:3] == ["matmul", "pass"] for row in rows if len(row) > 3), proc.stdout
    assert re.search(r"^OK: \d+ passed, 0 failed", proc.stdout, re.M), proc.stdout


def test_planted_hang_and_abort_are_reported_and_the_suite_goes_on(tmp_path: Path) -> None:
    """Only the planted checks run: ``--timeout`` replaces every check's budget, and a real
    check given the hang's few seconds fails on a busy machine (the quick suite is proved
    above)."""
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    junit = tmp_path / "failures.xml"
    proc = run_cli("validate", "--json", "--timeout", "3", "--junit", str(junit),
                   "--only", "planted_hang,planted_abort,planted_after",
                   env={"TORCHENV_VALIDATE_EXTRA_CHECKS": str(HERE / "_planted_checks.py"),
                        "TMPDIR": str(tmpdir)})
    assert proc.returncode == 1, proc.stderr
    root = ET.parse(junit).getroot()
    check_junit_schema(root)
    failed = {c.get("name") for c in root.iter("testcase") if c.find("failure") is not None}
    assert failed == {"planted_hang", "planted_abort"}
    doc = load(proc.stdout)
    checks = by_name(doc)
    assert set(checks) == {"import_torch", "device_count", "planted_hang", "planted_abort",
                           "planted_after"}
    assert doc["ok"] is False
    hang = checks["planted_hang"]
    assert hang["status"] == "fail"
    assert "did not finish within 3 s" in hang["error"]
    assert 2.7 <= hang["seconds"] < 30
    abort = checks["planted_abort"]
    assert abort["status"] == "fail"
    assert "SIGABRT" in abort["error"]
    assert abort["hint"]
    assert checks["planted_after"]["status"] == "pass"
    assert "after a hang and a crash" in checks["planted_after"]["detail"]
    assert listing(tmpdir) == []


@pytest.fixture(scope="module")
def bare_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("bare") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(target)], check=True)
    return target / "bin" / "python"


def test_missing_torch_is_one_clear_failure(bare_venv: Path) -> None:
    proc = run_cli("validate", "--json", "--python", str(bare_venv))
    assert proc.returncode == 1
    doc = load(proc.stdout)
    assert doc["torch"] is None
    assert doc["ok"] is False
    [check] = doc["checks"]
    assert check["name"] == "import_torch"
    assert check["status"] == "fail"
    assert check["error"] == "torch is not installed in this interpreter"
    assert "torchenv install" in check["hint"]
    assert str(bare_venv) in check["hint"]
    assert "Traceback" not in proc.stdout + proc.stderr


def test_a_crash_while_importing_torch_is_named(tmp_path: Path) -> None:
    venv = tmp_path / "crash"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    [site] = list(venv.glob("lib/python*/site-packages"))
    (site / "torch").mkdir()
    (site / "torch" / "__init__.py").write_text("import os\nos.abort()\n")
    proc = run_cli("validate", "--json", "--python", str(venv / "bin" / "python"))
    assert proc.returncode == 1
    [check] = load(proc.stdout)["checks"]
    assert check["error"] == "the child process was killed by SIGABRT while importing torch"
    assert "--python-exe" in check["hint"]


def test_missing_torch_table(bare_venv: Path) -> None:
    proc = run_cli("validate", "--python", str(bare_venv))
    assert proc.returncode == 1
    assert "torch is not installed" in proc.stdout
    assert "Traceback" not in proc.stdout + proc.stderr


@pytest.mark.parametrize(("args", "message"), [
    (["--python", "/nonexistent/python"], "--python: interpreter /nonexistent/python does not"),
    (["--timeout", "0"], "--timeout"),
    (["--nnodes", "2"], "--rdzv-endpoint"),
    (["--level", "full", "--nproc-per-node", "1000"], "--nproc-per-node 1000: this node has"),
    (["--nproc-per-node", "99999999999999999999"], "is not a whole number from 1 to 1024"),
    (["--nnodes", "2", "--node-rank", "-1", "--rdzv-endpoint", "h:29500"], "out of range"),
    (["--nnodes", "2", "--node-rank", "5", "--rdzv-endpoint", "h:29500"],
     "--node-rank: 5 is not a rank of 2 node(s)"),
    (["--nnodes", "2", "--node-rank", "0", "--rdzv-endpoint", "h:70000"],
     "--rdzv-endpoint: port 70000 is out of range"),
    (["--nnodes", "2", "--node-rank", "0", "--rdzv-endpoint", "nohost"], "is not HOST:PORT"),
], ids=["missing-interpreter", "zero-timeout", "nnodes-without-endpoint", "nproc-above-cpus",
        "nproc-20-digits", "negative-rank", "rank-past-nodes", "port-70000", "no-port"])
def test_bad_input_exits_2(args: list[str], message: str) -> None:
    proc = run_cli("validate", *args)
    assert proc.returncode == 2
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr


def test_full_level_runs_gloo_through_torchrun(tmp_path: Path) -> None:
    """The tests' own cache folder (``hermetic``), as the Slurm nodes use it: the C++
    extension is built once on this machine, by the first full run of the suite, and loaded by
    the others, as a user's later runs load it (a minute of compiling spared)."""
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    junit = tmp_path / "full.xml"
    proc = run_cli("validate", "--level", "full", "--json", "--junit", str(junit),
                   env={"TMPDIR": str(tmpdir)}, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = load(proc.stdout)
    checks = by_name(doc)
    for name in ("gloo_allreduce", "gloo_broadcast", "gloo_allgather", "ddp_step",
                 "torch_compile", "torchscript", "profiler"):
        assert checks[name]["status"] == "pass", checks[name]
    assert "2 ranks" in checks["gloo_allreduce"]["detail"]
    assert "identical" in checks["ddp_step"]["detail"]
    # the test extra brings ninja, onnx and onnxscript: with a C++ compiler both must pass
    compiler = shutil.which(os.environ.get("CXX", "c++")) or shutil.which("g++")
    if compiler and importlib.util.find_spec("ninja") is not None:
        assert checks["cpp_extension"]["status"] == "pass", checks["cpp_extension"]
    else:
        assert checks["cpp_extension"]["status"] == "skip"
    if all(importlib.util.find_spec(m) is not None for m in ("onnx", "onnxscript")):
        assert checks["onnx_export"]["status"] == "pass", checks["onnx_export"]
        assert "batch" in checks["onnx_export"]["detail"]
    else:
        assert "onnx" in checks["onnx_export"]["reason"]
    if not has_cuda_gpu():
        for name in ("nccl_allreduce", "nccl_broadcast", "nccl_allgather",
                     "nccl_bus_bandwidth", "cudnn_conv", "perf"):
            assert checks[name] == {**checks[name], "status": "skip",
                                    "reason": "no CUDA device"}
    assert listing(tmpdir) == [], "torchrun/inductor left files in the temp dir"
    assert ET.parse(junit).getroot().find("testsuite") is not None


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "1e9"])
def test_a_timeout_that_is_not_a_finite_positive_number_exits_2(value: str) -> None:
    proc = run_cli("validate", "--timeout", value)
    assert proc.returncode == 2
    assert "--timeout: must be a number of seconds above 0 and at most 86400, not " in proc.stderr
    assert "Traceback" not in proc.stderr


def test_an_unwritable_junit_path_is_refused_before_any_check_runs(tmp_path: Path) -> None:
    proc = run_cli("validate", "--junit", str(tmp_path / "missing" / "r.xml"), "--json",
                   timeout=30)
    assert proc.returncode == 2
    assert f"--junit: {tmp_path / 'missing'} does not exist" in proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["exit_code"] == 2 and "--junit" in doc["error"]


def test_a_wrapper_printing_json_first_is_passed_over(tmp_path: Path) -> None:
    wrapper = tmp_path / "python-wrapper"
    wrapper.write_text(f'#!/bin/sh\necho \'{{"status": "ready"}}\'\nexec {sys.executable} "$@"\n')
    wrapper.chmod(0o755)
    proc = run_cli("validate", "--json", "--python", str(wrapper), "--only", "matmul")
    assert proc.returncode == 0, proc.stderr
    assert by_name(load(proc.stdout))["matmul"]["status"] == "pass"


def test_an_interpreter_answering_in_another_shape_is_one_clear_failure(tmp_path: Path) -> None:
    fake = tmp_path / "not-python"
    fake.write_text(f'#!/bin/sh\nif [ "$1" = "-I" ]; then exec {sys.executable} "$@"; fi\n'
                    'echo \'{"event": "hello", "checks": 5}\'\nsleep 30\n')  # inspected as Python
    fake.chmod(0o755)
    proc = run_cli("validate", "--json", "--python", str(fake), timeout=60)
    assert proc.returncode == 1
    [check] = load(proc.stdout)["checks"]
    assert check["name"] == "import_torch" and check["status"] == "fail"
    assert "not as the validation probe does" in check["error"]
    assert "Traceback" not in proc.stderr


def test_markup_in_a_checks_output_is_printed_as_is(tmp_path: Path) -> None:
    plant = tmp_path / "markup.py"
    plant.write_text("def check_markup(ctx):\n"
                     "    raise Fail('[enforce fail at alloc.cpp:42] . [/a] bad')\n")
    proc = run_cli("validate", "--only", "markup",
                   env={"TORCHENV_VALIDATE_EXTRA_CHECKS": str(plant), "COLUMNS": "250"})
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert "[enforce fail at alloc.cpp:42] . [/a] bad" in proc.stdout


def test_a_sticky_cuda_error_restarts_the_child_for_the_checks_after_it(tmp_path: Path) -> None:
    proc = run_cli("validate", "--json", "--only", "planted_poison,planted_next", env={
        "TORCHENV_VALIDATE_EXTRA_CHECKS": str(HERE / "_planted_poison.py"),
        "PLANTED_PID_DIR": str(tmp_path)})
    assert proc.returncode == 1
    checks = by_name(load(proc.stdout))
    poisoned = checks["planted_poison"]
    assert poisoned["status"] == "fail" and "illegal memory access" in poisoned["error"]
    assert "fresh child" in poisoned["hint"]
    assert checks["planted_next"]["status"] == "pass"
    assert (tmp_path / "poisoned").read_text() != (tmp_path / "next").read_text()


def test_a_plain_failure_keeps_the_same_child(tmp_path: Path) -> None:
    plant = tmp_path / "plain.py"
    plant.write_text("import os\n\n"
                     "def check_plain_fail(ctx):\n"
                     f"    open({str(tmp_path / 'a')!r}, 'w').write(str(os.getpid()))\n"
                     "    raise RuntimeError('an ordinary error')\n\n"
                     "def check_plain_next(ctx):\n"
                     f"    open({str(tmp_path / 'b')!r}, 'w').write(str(os.getpid()))\n")
    proc = run_cli("validate", "--json", "--only", "plain_fail,plain_next",
                   env={"TORCHENV_VALIDATE_EXTRA_CHECKS": str(plant)})
    assert proc.returncode == 1
    checks = by_name(load(proc.stdout))
    assert checks["plain_fail"]["status"] == "fail" and checks["plain_next"]["status"] == "pass"
    assert (tmp_path / "a").read_text() == (tmp_path / "b").read_text()


def test_only_runs_the_named_checks_and_reports_a_name_that_matched_nothing() -> None:
    proc = run_cli("validate", "--json", "--only", "matmul, amp,no_such_check")
    assert proc.returncode == 0, proc.stderr
    checks = by_name(load(proc.stdout))
    assert set(checks) == {"import_torch", "device_count", "matmul", "amp", "no_such_check"}
    assert checks["matmul"]["status"] == "pass"
    assert checks["no_such_check"]["status"] == "skip"
    assert "no check of this name ran" in checks["no_such_check"]["reason"]


def test_only_with_no_name_is_bad_input() -> None:
    proc = run_cli("validate", "--only", " , ")
    assert proc.returncode == 2
    assert "--only: ' , ' names no check" in proc.stderr
