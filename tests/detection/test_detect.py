"""Detection as a whole: probe order, overrides that skip probes, the CLI contract."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from detection_helpers import clean_env, cli_exact, data, detect_json, fake_smi, make_exe, run_cli
from tests.conftest import Cli

from torchenv.detection import _nvml, _rocm
from torchenv.detection import detect as detect_mod
from torchenv.detection.detect import detect
from torchenv.detection.overrides import Overrides
from torchenv.detection.profile import HostProfile

SMI_QUERY = (
    "0, NVIDIA GeForce GTX 1080, 6.1, 8192, GPU-00000000-0000-0000-0000-000000000000, 580.173.02\n"
    "1, NVIDIA GeForce RTX 3090, 8.6, 24576, GPU-00000000-0000-0000-0000-000000000001, 580.173.02\n"
)


@pytest.fixture
def no_nvml(monkeypatch: pytest.MonkeyPatch) -> None:
    """In-process tests must not depend on a real driver of the machine running them."""
    monkeypatch.setattr(_nvml, "probe_nvml_bounded", lambda **_: _nvml.NvmlResult(ok=False))


def proc_tree(root: Path) -> None:
    (root / "proc/driver/nvidia").mkdir(parents=True)
    (root / "proc/driver/nvidia/version").write_text(
        data("proc_driver_nvidia_version_proprietary_580.173.02.txt"))


@pytest.mark.usefixtures("no_nvml")
def test_proc_then_nvidia_smi(tmp_path: Path) -> None:
    proc_tree(tmp_path)
    smi = fake_smi(tmp_path / "bin", query=SMI_QUERY,
                   version=data("version_610.57.04_kmd.txt"))
    profile = detect(root=tmp_path, environ={"PATH": f"{smi.parent}:/usr/bin:/bin",
                                             "CUDA_VISIBLE_DEVICES": "1"})
    nv = profile.nvidia
    assert nv is not None
    # this nvidia-smi's table names no CUDA version: the driver table's answer, said so
    assert (str(nv.driver_version), nv.source, str(nv.cuda_driver_version),
            nv.cuda_driver_version_source) == ("580.173.02", "proc", "13.0", "derived")
    assert profile.sources["nvidia.cuda_driver_version"].startswith(
        "derived: driver 580.173.02 meets CUDA 13.0's toolkit driver floor (Linux ≥ 580.65.06)")
    assert [str(g.compute_capability) for g in nv.visible_gpus()] == ["8.6"]
    assert profile.sources["nvidia"] == "/proc/driver/nvidia/version"
    assert profile.sources["nvidia.gpus"] == "nvidia-smi --query-gpu"


@pytest.mark.usefixtures("no_nvml")
def test_a_loaded_driver_of_another_root_does_not_speak_for_the_nvidia_smi_that_runs(
        tmp_path: Path) -> None:
    """The 384 module of a mounted image (a probe root) says nothing of the nvidia-smi run on
    this system, so the query asks for compute_cap first, as with no module at all."""
    (tmp_path / "proc/driver/nvidia").mkdir(parents=True)
    (tmp_path / "proc/driver/nvidia/version").write_text(
        data("proc_driver_nvidia_version_proprietary_384.98.txt"))
    marker = tmp_path / "calls.txt"
    query = "0, GeForce GTX 1080, 8192, GPU-00000000-0000-0000-0000-000000000000, 384.98\n"
    smi = fake_smi(tmp_path / "bin", query=query, no_compute_cap=True, marker=marker)
    profile = detect(root=tmp_path, environ={"PATH": f"{smi.parent}:/usr/bin:/bin"})
    nv = profile.nvidia
    assert nv is not None
    assert (str(nv.driver_version), [g.name for g in nv.gpus]) == (
        "384.98", ["GeForce GTX 1080"])
    # this nvidia-smi cannot say; the GPU catalog knows the name
    assert (str(nv.gpus[0].compute_capability), nv.gpus[0].compute_capability_source) == (
        "6.1", "catalog")
    assert not any("compute capability unknown" in w for w in profile.warnings)
    calls = marker.read_text().splitlines()  # the two queries, then the table
    assert len(calls) == 3 and "compute_cap" in calls[0] and "compute_cap" not in calls[1]


@pytest.mark.usefixtures("no_nvml")
def test_proc_only_warns_about_unknown_capability(tmp_path: Path) -> None:
    proc_tree(tmp_path)
    info = tmp_path / "proc/driver/nvidia/gpus/0000:01:00.0"
    info.mkdir(parents=True)
    (info / "information").write_text("Model: \t\t NVIDIA Z9000\nDevice Minor: \t 0\n")
    profile = detect(root=tmp_path, environ={"PATH": ""})
    assert profile.nvidia is not None
    assert str(profile.nvidia.driver_version) == "580.173.02"
    assert [g.name for g in profile.nvidia.gpus] == ["NVIDIA Z9000"]
    assert profile.nvidia.gpus[0].compute_capability is None  # no catalog entry has that name
    assert any("compute capability unknown for GPU 0 (NVIDIA Z9000)" in w
               for w in profile.warnings)


@pytest.mark.usefixtures("no_nvml")
def test_wsl2_driver_from_nvidia_smi(tmp_path: Path) -> None:
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc/version").write_text("Linux version 6.6.87.2-microsoft-standard-WSL2 (x)\n")
    smi = fake_smi(tmp_path / "bin", query=SMI_QUERY.replace("580.173.02", "572.60"),
                   version=data("version_wsl2_smi555.42.03_driver555.85.txt"))
    profile = detect(root=tmp_path, environ={"PATH": f"{smi.parent}:/usr/bin:/bin"})
    assert profile.wsl
    assert profile.nvidia is not None
    assert (str(profile.nvidia.driver_version), profile.nvidia.source) == (
        "572.60", "nvidia-smi")
    assert "nvidia.wsl" in profile.sources


@pytest.mark.usefixtures("no_nvml")
def test_nothing_found_on_empty_tree(tmp_path: Path) -> None:
    profile = detect(root=tmp_path, environ={"PATH": ""})
    assert (profile.nvidia, profile.rocm, profile.xpu) == (None, None, None)
    assert profile.python.executable == sys.executable


@pytest.mark.usefixtures("no_nvml")
def test_a_probe_that_meets_an_io_failure_leaves_the_rest(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*_: object, **__: object) -> None:
        raise PermissionError(13, "Permission denied", "/sys/class/kfd")

    monkeypatch.setattr(_rocm, "probe_rocm", boom)
    proc_tree(tmp_path)
    profile = detect(root=tmp_path, environ={"PATH": ""})
    assert any("ROCm probe failed" in w and "Permission denied" in w for w in profile.warnings)
    assert profile.nvidia is not None
    assert profile.python.version


@pytest.mark.usefixtures("no_nvml")
def test_a_bug_in_a_probe_surfaces_instead_of_becoming_a_warning(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def bug(*_: object, **__: object) -> None:
        raise RuntimeError("kaboom")

    monkeypatch.setattr(_rocm, "probe_rocm", bug)
    with pytest.raises(RuntimeError, match="kaboom"):
        detect(root=tmp_path, environ={"PATH": ""})


@pytest.mark.usefixtures("no_nvml")
def test_a_failed_nvidia_probe_is_recorded_as_evidence(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    def timeout(*_: object, **__: object) -> None:
        raise TimeoutError("NVML call did not return")

    monkeypatch.setattr(detect_mod, "_probe_nvidia", timeout)
    profile = detect(root=tmp_path, environ={"PATH": ""})
    assert profile.nvidia is None
    assert profile.nvidia_evidence == ("the NVIDIA probe failed (TimeoutError)",)


def test_overrides_skip_the_probes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def never(*_: object, **__: object) -> None:
        raise AssertionError("probe ran although its answer was supplied")

    monkeypatch.setattr(_nvml, "probe_nvml_bounded", never)
    monkeypatch.setattr(_rocm, "probe_rocm", never)
    marker = tmp_path / "called"
    smi = fake_smi(tmp_path / "bin", query=SMI_QUERY, marker=marker)
    ov = Overrides(driver="550.54.15", gpus=("8.6",), rocm_archs=("gfx1100",))
    profile = detect(ov, root=tmp_path, environ={"PATH": f"{smi.parent}:/usr/bin:/bin"})
    assert not marker.exists()
    assert profile.nvidia is not None
    assert profile.nvidia.source == "override"
    assert profile.rocm is not None
    assert profile.rocm.gfx_targets == ("gfx1100",)
    profile = detect(Overrides(no_gpu=True), root=tmp_path,
                     environ={"PATH": f"{smi.parent}:/usr/bin:/bin"})
    assert not marker.exists()
    assert not profile.has_gpu


def test_cli_flags_skip_nvidia_smi(tmp_path: Path, cli: Cli) -> None:
    marker = tmp_path / "called"
    smi = fake_smi(tmp_path / "bin", query=SMI_QUERY, marker=marker)
    env = clean_env(PATH=f"{smi.parent}:/usr/bin:/bin")
    doc = detect_json(cli, env, "--driver", "550.54.15", "--gpu", "sm_86", "--gpu", "8.0")
    assert not marker.exists()
    assert [g["compute_capability"] for g in doc["nvidia"]["gpus"]] == ["8.6", "8.0"]
    doc = detect_json(cli, dict(env, TORCHENV_GPUS=""))
    assert not marker.exists()
    assert doc["nvidia"] is None
    detect_json(cli, env)  # without overrides the fake is the probe that answers
    assert marker.exists()


@pytest.mark.parametrize(
    ("args", "env", "named"),
    [([], {"TORCHENV_DRIVER_VERSION": "abc"}, "'abc'"),
     (["--gpu", "8.x"], {}, "'8.x'"),
     ([], {"TORCHENV_PROBE_TIMEOUT": "soon"}, "'soon'"),
     (["--python-exe", "/nonexistent/python"], {}, "/nonexistent/python")],
    ids=["driver-env", "gpu-flag", "timeout-env", "python-exe"],
)
def test_bad_input_exits_2_naming_the_value(
        args: list[str], env: dict[str, str], named: str, cli: Cli) -> None:
    res = cli_exact(cli, ["detect", "--json", *args], clean_env(**env))
    assert res.returncode == 2
    assert named in res.stderr
    doc = json.loads(res.stdout)  # under --json the failure is a JSON document too
    assert doc["exit_code"] == 2 and named in doc["error"]


def test_cli_hang_returns_within_timeout(tmp_path: Path) -> None:
    smi = fake_smi(tmp_path / "bin", hang=True)
    env = clean_env(PATH=f"{smi.parent}:/usr/bin:/bin", TORCHENV_PROBE_TIMEOUT="1")
    start = time.monotonic()
    doc = detect_json(None, env)
    assert time.monotonic() - start < 5
    assert any("did not answer within 1 s" in w for w in doc["warnings"])
    assert doc["interpreter"]["version"]


@pytest.mark.usefixtures("no_nvml")
def test_hung_probes_of_different_vendors_wait_together_not_in_turn(tmp_path: Path) -> None:
    """nvidia-smi, rocm_agent_enumerator and rocminfo all hang: the probes run at the same time
    and ROCm's two tools share one budget, so detection takes about one probe timeout, not
    three, and every hang is still reported."""
    bin_dir = tmp_path / "bin"
    fake_smi(bin_dir, hang=True)
    make_exe(bin_dir, "rocm_agent_enumerator", "exec sleep 30\n")
    make_exe(bin_dir, "rocminfo", "exec sleep 30\n")
    start = time.monotonic()
    profile = detect(root=tmp_path, environ={"PATH": f"{bin_dir}:/usr/bin:/bin"}, timeout=1.0)
    took = time.monotonic() - start
    assert took < 2.5, f"{took:.1f} s: the probes waited one after another"
    assert any("did not answer within 1 s" in w for w in profile.warnings)
    assert any(w.startswith("ROCm:") for w in profile.warnings)
    assert profile.nvidia is None and profile.rocm is None


@pytest.mark.usefixtures("no_nvml")
def test_an_nvidia_smi_printing_forever_is_cut_off(tmp_path: Path) -> None:
    """Bounded in time and memory: the child is stopped at the output cap, not read to the end."""
    import resource

    bin_dir = tmp_path / "bin"
    make_exe(bin_dir, "nvidia-smi", "exec yes 0, NVIDIA GeForce RTX 3090, 8.6\n")
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.monotonic()
    profile = detect(root=tmp_path, environ={"PATH": f"{bin_dir}:/usr/bin:/bin"}, timeout=5.0)
    assert time.monotonic() - start < 5
    assert any("printed more than 16 MiB" in w for w in profile.warnings), profile.warnings
    grown_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert grown_mib < 200


def test_concurrent_probes_merge_in_a_fixed_order(tmp_path: Path) -> None:
    """Warnings come out in the documented probe order whichever thread finished first."""
    bin_dir = tmp_path / "bin"
    fake_smi(bin_dir, error="boom\n", rc=4)
    make_exe(bin_dir, "rocm_agent_enumerator", "echo broken >&2; exit 3\n")
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "TORCHENV_NVML_LIBRARY": "off"}
    orders = {tuple(w.split()[0] for w in detect(root=tmp_path, environ=env).warnings)
              for _ in range(5)}
    assert len(orders) == 1
    [order] = orders
    nvidia_at = next(i for i, w in enumerate(order) if "nvidia-smi" in w)
    assert order.index("ROCm:") > nvidia_at


def test_cli_process_never_imports_torch_or_rich() -> None:
    code = ("import contextlib, io, sys\n"
            "from torchenv.cli import main\n"
            "buf = io.StringIO()\n"
            "with contextlib.redirect_stdout(buf):\n"
            "    assert main(['detect', '--json']) == 0\n"
            "import json; doc = json.loads(buf.getvalue())\n"
            "assert 'torch' not in sys.modules, 'torch was imported'\n"
            "assert 'rich' not in sys.modules, 'rich was imported for --json'\n"
            "print(doc['torch'] and doc['torch']['version'])\n")
    res = subprocess.run([sys.executable, "-c", code], env=clean_env(PATH="/usr/bin:/bin"),
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr


def test_host_file_round_trip(tmp_path: Path, fake_nvml: Callable[..., Path]) -> None:
    env = clean_env(TORCHENV_NVML_LIBRARY=str(fake_nvml() / "libnvidia-ml.so.1"),
                    PATH="/usr/bin:/bin",
                    FAKE_NVML_GPUS="NVIDIA GeForce GTX 1080:6.1:8192;"
                    "NVIDIA GeForce RTX 3090:8.6:24576",
                    CUDA_VISIBLE_DEVICES="1")
    doc = detect_json(None, env)
    host = tmp_path / "host.json"
    host.write_text(json.dumps(doc))
    loaded = HostProfile.from_json(json.loads(host.read_text()))
    assert loaded.to_json() == doc
    assert loaded.nvidia is not None
    assert loaded.nvidia.visible == (1,)
    again = detect_json(None, clean_env(PATH="/usr/bin:/bin"), "--host", str(host))
    assert again == doc


def test_console_summary(fake_nvml: Callable[..., Path]) -> None:
    env = clean_env(TORCHENV_NVML_LIBRARY=str(fake_nvml() / "libnvidia-ml.so.1"),
                    PATH="/usr/bin:/bin",
                    FAKE_NVML_GPUS="NVIDIA H200:9.0:143771", COLUMNS="120")
    res = run_cli(["detect"], env)
    assert res.returncode == 0, res.stderr
    assert "NVIDIA H200" in res.stdout
    assert "580.82.07" in res.stdout
    assert "Python" in res.stdout


def test_probe_timeout_default() -> None:
    assert detect_mod.probe_timeout({}) == 5.0
    assert detect_mod.probe_timeout({"TORCHENV_PROBE_TIMEOUT": "0.5"}) == 0.5


def test_rocm_tool_on_path_cli(tmp_path: Path, cli: Cli) -> None:
    (tmp_path / "agents.txt").write_text(data("rocm_agent_enumerator_8x_gfx942_mi300x.txt"))
    tool = make_exe(tmp_path / "bin", "rocm_agent_enumerator", f'cat "{tmp_path / "agents.txt"}"\n')
    doc = detect_json(cli, clean_env(PATH=f"{tool.parent}:/usr/bin:/bin"))
    if doc["rocm"] is not None and doc["sources"].get("rocm") == "kfd":
        pytest.skip("this machine has a real AMD GPU")
    assert doc["rocm"]["gfx_targets"] == ["gfx942"] * 8
    assert doc["rocm"]["source"] == "rocm_agent_enumerator"
