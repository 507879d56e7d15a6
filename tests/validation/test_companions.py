"""``validate --with``, the parts that run in torchenv's own process: which packages a name means,
what the child is told of each, and whether an installed version is the one the companion data
pairs with the installed torch."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from tests.conftest import Cli

from torchenv.errors import BadInput
from torchenv.matrix.companions import Companions, load_companions
from torchenv.validation import _probe, runner
from torchenv.validation.companions import (
    judge_pairing,
    known_names,
    probe_requests,
    read_with,
    with_pairings,
)
from torchenv.validation.options import ValidationOptions
from torchenv.validation.report import CheckResult, Report
from torchenv.values import Platform


@pytest.fixture(scope="module")
def data() -> Companions:
    return load_companions()


# ------------------------------------------------------------------------------- the names

def test_pyg_is_the_trio_and_names_are_read_as_pep_503_spells_them(data: Companions) -> None:
    assert read_with(["pyg,Flash_Attn", "torchao", "torch_scatter"], data) == (
        "pyg-lib", "torch-scatter", "torch-sparse", "flash-attn", "torchao")


@pytest.mark.parametrize("value", ["flash-atn", "torchao,,vllm"])
def test_an_unknown_or_empty_name_is_bad_input_naming_it_and_the_known_ones(
        data: Companions, value: str) -> None:
    with pytest.raises(BadInput) as err:
        read_with([value], data)
    wanted = "'flash-atn'" if value == "flash-atn" else repr(value)
    assert wanted in err.value.message
    assert err.value.hint is not None and "flash-attn, xformers" in err.value.hint
    assert set(known_names(data)) >= {"pyg", "vllm", "torchao", "torch-scatter"}


def test_the_child_is_told_the_module_the_install_command_and_the_data_s_gpu_floor(
        data: Companions) -> None:
    flash, ao = probe_requests(["flash-attn", "torchao"], data)
    assert flash.to_json() == {"name": "flash-attn", "import": "flash_attn",
                               "install": "torchenv resolve --with flash-attn",
                               "min_capability": "8.0"}
    assert (ao.import_name, ao.min_capability) == ("torchao", None)


def test_companion_checks_run_whatever_only_selects_and_the_probe_reads_the_same_variable(
        ) -> None:
    options = ValidationOptions(python="python", only=frozenset({"matmul"}))
    assert options.selects("companion:torchao") and options.selects("companion:vllm:torch_pin")
    assert not options.selects("autograd")
    assert runner.COMPANIONS_ENV == _probe.COMPANIONS_ENV


# ------------------------------------------------------------------------------ the pairing

@pytest.mark.parametrize(("package", "installed", "torch", "verdict", "says"), [
    ("torchao", "0.18.0", "2.13.0+cpu", "paired", ">=2.11"),
    ("torchao", "0.16.0", "2.13.0+cpu", "other-torch", "made for torch 2.10.0, not 2.13.0"),
    ("xformers", "0.0.33.post2", "2.9.1+cu128", "paired", "made for 2.9.1"),
    ("vllm", "0.29.0", "2.12.0", "other-torch", "made for torch 2.13.0, not 2.12.0"),
    ("torch-scatter", "2.1.2+pt212cpu", "2.12.1+cpu", "paired", "2.12"),
    # the variant and the platform count, not the release alone
    ("torch-scatter", "2.1.2+pt212cpu", "2.12.0+cu130", "other-torch",
     "names the pt212cpu build) is made for torch 2.12 (cpu), not 2.12.0+cu130"),
    ("torch-scatter", "2.1.2+pt212cu130", "2.12.0+rocm7.0", "other-torch",
     "made for torch 2.12 (cu130), not 2.12.0+rocm7.0"),
    ("torch-scatter", "2.1.2+pt212cu130", "2.12.0+cu130", "paired", "2.12 (cu130)"),
    ("flash-attn", "2.8.3", "2.8.0+cpu", "unknown", "made for torch 2.8.0+cpu; a source build"),
    ("flash-attn", "2.8.3+cu12torch2.8cxx11abiTRUE", "2.8.0+cpu", "other-torch",
     "made for torch 2.5, 2.6, 2.7, 2.8 (CUDA 12), not 2.8.0+cpu"),
    ("flash-attn", "2.8.3", "2.8.0+cu128", "paired", "2.5, 2.6, 2.7, 2.8 (CUDA 12)"),
    # a PyG build for torch 2.12 with a torch whose variant its version does not name
    ("torch-scatter", "2.1.2", "2.12.0", "unknown", "cannot be read"),
    # a source distribution of that release may have been built here against this torch
    ("torch-scatter", "2.1.2", "2.13.0+cpu", "unknown", "source build"),
    ("flash-attn", "2.8.3", "2.13.0+cu130", "unknown", "source build"),
    ("torchao", "0.99.0", "2.13.0+cpu", "unknown", "not in torchenv's companion data"),
    ("torchao", None, "2.13.0+cpu", "unknown", "could not be read"),
], ids=lambda v: str(v))
def test_the_installed_version_is_judged_by_the_data_and_never_a_false_alarm(
        data: Companions, package: str, installed: str | None, torch: str, verdict: str,
        says: str) -> None:
    found = data.package(package)
    assert found is not None
    pairing = judge_pairing(found, installed, torch)
    assert pairing.verdict == verdict
    assert says in pairing.text
    if verdict != "unknown":
        assert pairing.evidence == "confirmed" and pairing.sources
    if verdict == "other-torch":
        assert f"torchenv resolve --with {package}" in pairing.text


def test_a_build_the_data_has_for_another_platform_is_never_paired(data: Companions) -> None:
    """PyG's cu130 torch-scatter for torch 2.12 is a linux-x86_64 file: on Windows the same
    version cannot be the one the data pairs (a source build may be)."""
    found = data.package("torch-scatter")
    assert found is not None
    on = {p: judge_pairing(found, "2.1.2+pt212cu130", "2.12.0+cu130", Platform(p)).verdict
          for p in ("linux-x86_64", "win-amd64")}
    assert on == {"linux-x86_64": "paired", "win-amd64": "unknown"}


def test_a_version_made_for_another_torch_is_a_warning_in_the_passing_check_s_detail(
        data: Companions) -> None:
    imported = CheckResult(name="companion:torchao", status="pass", detail="torchao 0.16.0 "
                           "from /site/torchao/__init__.py", metrics={"version": "0.16.0"})
    operation = CheckResult(name="companion:torchao:quantize", status="pass", detail="ok")
    failed = CheckResult(name="companion:vllm", status="fail", error="import vllm fails",
                         metrics={"version": "0.29.0"})
    report = Report(python="python", torch="2.13.0+cpu", level="quick",
                    checks=(imported, operation, failed), companions=("torchao", "vllm"))
    judged = with_pairings(report, data)
    ao, op, vllm = judged.checks
    assert ao.detail is not None
    assert ao.detail.startswith("torchao 0.16.0 from /site/torchao/__init__.py; warning: ")
    assert ao.metrics["pairing"]["verdict"] == "other-torch"
    assert op == operation
    assert vllm.detail is None and vllm.metrics["pairing"]["verdict"] == "paired"
    assert judged.ok is False  # a pairing warning never turns a failure into a pass


def test_the_document_echoes_with_only_when_given() -> None:
    plain = Report(python="python", torch="2.13.0", level="quick", checks=())
    assert "with" not in plain.to_json()
    asked = Report(python="python", torch="2.13.0", level="quick", checks=(),
                   companions=("pyg-lib", "torch-scatter"))
    assert json.loads(json.dumps(asked.to_json()))["with"] == ["pyg-lib", "torch-scatter"]


# ------------------------------------------------------------------ the probe's pin reading

@pytest.mark.parametrize(("requires", "pin"), [
    (["torch==2.13.0", "torchvision==0.28.0"], "2.13.0"),
    (["numpy", "torch (==2.9.1)"], "2.9.1"),
    (['torch==2.8.0; extra == "bench"', "torch==2.13.0; platform_system == 'Linux'"], "2.13.0"),
    (["torch>=2.10"], None),
    (["torchvision==0.28.0"], None),
], ids=["plain", "parenthesised", "extra-skipped", "floor", "none"])
def test_the_probe_reads_the_torch_pin_from_requires_dist(requires: list[str],
                                                          pin: str | None) -> None:
    assert _probe.torch_pin(requires) == pin


# ------------------------------------------------------------------ the probe's companion checks

def test_each_companion_gets_an_import_check_and_its_operation_where_one_is_defined(
        monkeypatch: pytest.MonkeyPatch, data: Companions) -> None:
    monkeypatch.setattr(_probe, "SPECS", [])
    requests = probe_requests(["torchao", "pyg-lib", "vllm"], data)
    monkeypatch.setenv(_probe.COMPANIONS_ENV, json.dumps([r.to_json() for r in requests]))
    _probe.load_companion_checks()
    assert [(s.name, s.level, s.required) for s in _probe.SPECS] == [
        ("companion:torchao", "quick", True), ("companion:torchao:quantize", "quick", True),
        ("companion:pyg-lib", "quick", True),
        ("companion:vllm", "quick", True), ("companion:vllm:torch_pin", "quick", True)]


@pytest.mark.parametrize("op", [_probe.op_flash_attn_func, _probe.op_memory_efficient_attention],
                         ids=["flash-attn", "xformers"])
def test_a_gpu_only_kernel_without_a_cuda_device_is_a_skip_with_the_reason(op: object) -> None:
    ctx = _probe.Ctx(torch=None, device="cpu", gpu_host=False)
    with pytest.raises(_probe.Skip, match="runs only on a CUDA GPU; no CUDA device"):
        op(ctx, {"name": "x", "import": "x", "min_capability": "8.0"})  # type: ignore[operator]


def test_a_companion_that_is_not_installed_fails_with_how_to_install_it() -> None:
    ctx = _probe.Ctx(torch=None, device="cpu", gpu_host=False)
    request = {"name": "torch-sparse-absent", "import": "torch_sparse_absent",
               "install": "torchenv resolve --with torch-sparse"}
    with pytest.raises(_probe.Fail, match="torch-sparse-absent is not installed") as err:
        _probe.check_companion_import(ctx, request)
    assert err.value.hint is not None and "torchenv resolve --with torch-sparse" in err.value.hint


# --------------------------------------------------------------------------- the command line

def test_an_unknown_with_name_is_exit_2_naming_it_and_the_known_ones(cli: Cli) -> None:
    r = cli(["validate", "--json", "--with", "torchao,flash-atn"])
    assert r.returncode == 2
    doc = json.loads(r.stdout)
    assert doc["error"] == "--with: 'flash-atn' is not a companion package torchenv knows"
    assert "flash-attn, xformers" in doc["hint"] and "pyg" in doc["hint"]


def test_without_torch_the_companions_asked_for_are_skips_saying_why(
        cli: Cli, tmp_path: Path) -> None:
    """This Python without its site-packages is a real interpreter without torch."""
    python = tmp_path / "python"
    python.write_text(f'#!/bin/sh\nexec {sys.executable} -S "$@"\n')
    python.chmod(0o755)
    r = cli(["validate", "--json", "--python", str(python), "--with", "torchao"],
            env={"TORCHENV_CACHE_DIR": str(tmp_path / "cache")})
    assert r.returncode == 1, r.stderr
    doc = json.loads(r.stdout)
    assert doc["with"] == ["torchao"]
    checks = {c["name"]: c for c in doc["checks"]}
    assert checks["import_torch"]["error"] == "torch is not installed in this interpreter"
    assert checks["companion:torchao"]["status"] == "skip"
    assert checks["companion:torchao"]["reason"] == ("not run: torch could not be imported "
                                                     "(see import_torch)")


def test_torchao_s_own_record_of_skipped_kernels_is_in_the_import_check_s_detail(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """torchao imports without its C++ kernels where its .so files were not built for the
    installed torch, and keeps the reason in ``torchao._skip_reason``."""
    import importlib.machinery
    import types

    reason = ("Skipping import of cpp extensions due to incompatible torch version. Please "
              "upgrade to torch >= 2.11.0 (found 2.10.0).")
    standin = types.ModuleType("torchao")
    standin.__file__ = "/site/torchao/__init__.py"
    standin.__spec__ = importlib.machinery.ModuleSpec("torchao", None)  # found without an install
    standin._skip_reason = reason  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "torchao", standin)
    ctx = _probe.Ctx(torch=None, device="cpu", gpu_host=False)
    detail = _probe.check_companion_import(ctx, {"name": "torchao", "import": "torchao"})
    assert detail.endswith(f"from /site/torchao/__init__.py; its compiled kernels were skipped: "
                           f"{reason}")
    assert ctx.metrics["kernels_skipped"] == reason
