"""The generated pip and uv commands, run for real against a local copy of download.pytorch.org.

The session fixture ``local_index`` (index_server.py) serves tiny stand-in wheels (valid wheel
zips, named like the real ones and tagged for this interpreter so pip and uv accept them here)
over HTTP on 127.0.0.1 as PEP 503 simple indexes laid out like download.pytorch.org
(``/whl/cu128/torch/``, ``/whl/cu126/...``, ``/whl/cpu/...``), plus a second "PyPI" index with
the plain builds at ``/pypi/simple/<name>/``. The commands come from
``torchenv resolve --json --index-base`` (the mirror override air-gapped sites use); only the
program name is rewritten to this venv's pip / uv, and ``--dry-run --report`` is added. The
assertions are on what pip and uv say they would install: exactly the planned files, from the
plan's index, nothing else.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import pytest
from index_server import AUDIO, TORCH, VISION, LocalIndex
from installer_helpers import LINUX_CPU, LINUX_GPU, PY, clean_env, resolve_json, torchenv

from torchenv.installers.render import pip_command
from torchenv.matrix.index import index_url_for

VENV_BIN = Path(sys.executable).parent
UV = VENV_BIN / "uv"


# --------------------------------------------------------------------------- pip and uv


def as_argv(command: str, program: str) -> list[str]:
    """The generated command as argv, checking it is the plain ``<program> install ...`` form."""
    argv = shlex.split(command)
    head = program.split()
    assert argv[: len(head) + 1] == [*head, "install"], command
    return argv[len(head) + 1 :]


def pip_dry_run(
    command: str, tmp_path: Path, *extra: str
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any] | None]:
    """The generated pip command, run by this venv's pip with ``--dry-run --report``."""
    report = tmp_path / "report.json"
    argv = [
        sys.executable,
        "-m",
        "pip",
        "install",
        *as_argv(command, "pip"),
        *extra,
        "--dry-run",
        "--report",
        str(report),
        "--ignore-installed",
        "--no-cache-dir",
        "--isolated",
        "--disable-pip-version-check",
        "--no-input",
        "--timeout",
        "20",
    ]
    proc = subprocess.run(
        argv, env=clean_env(), capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    data = json.loads(report.read_text(encoding="utf-8")) if report.exists() else None
    return proc, data


def uv_dry_run(command: str, tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """The generated uv command, run by this venv's uv with ``--dry-run``."""
    if not UV.exists():  # pragma: no cover - uv is in the test extra
        pytest.skip(f"uv is not installed in {VENV_BIN} (pip install -e '.[test]')")
    argv = [
        str(UV),
        "pip",
        "install",
        *as_argv(command, "uv pip"),
        *extra,
        "--dry-run",
        "--python",
        sys.executable,
        "--no-cache",
        "--no-config",
        "--color",
        "never",
        "--reinstall",
    ]
    return subprocess.run(
        argv, env=clean_env(), capture_output=True, text=True, timeout=120, cwd=tmp_path
    )


def installed_files(report: dict[str, Any]) -> dict[str, tuple[str, str, str]]:
    """name -> (file name, index URL it came from, sha256), from a pip installation report."""
    out = {}
    for item in report["install"]:
        url = item["download_info"]["url"]
        path = urlparse(url).path
        filename = unquote(path.rsplit("/", 1)[1])
        project_page = url.rsplit("/", 1)[0]
        index = project_page.rsplit("/", 1)[0]
        digest = (
            item["download_info"]["archive_info"]["hashes"]["sha256"]
            if "hashes" in item["download_info"]["archive_info"]
            else item["download_info"]["archive_info"]["hash"].split("=", 1)[1]
        )
        out[item["metadata"]["name"]] = (filename, index, digest)
    return out


def uv_would_install(output: str) -> set[str]:
    """``torch==2.7.1+cu128`` lines from uv's "Would install" list."""
    return {m.group(1) for m in re.finditer(r"^ \+ (\S+==\S+)\s*$", output, re.MULTILINE)}


def assert_exactly_planned(
    report: dict[str, Any] | None,
    plan: dict[str, Any],
    index_url: str,
    expected: dict[str, tuple[str, str]],
) -> None:
    assert report is not None, "pip wrote no report"
    got = installed_files(report)
    assert set(got) == {"torch", "torchvision", "torchaudio"}, got
    for name, (filename, index, digest) in got.items():
        want_file, want_digest = expected[name]
        assert filename == want_file, (name, filename, want_file)
        assert unquote(index) == unquote(index_url), (name, index, index_url)
        assert digest == want_digest, (name, "not the served file")
    # the file names carry exactly the plan's pins (local tags included)
    pins = {f"{n}=={f.split('-')[1]}" for n, (f, _, _) in got.items()}
    assert pins == set(plan["requirements"])


# --------------------------------------------------------------------------- the plans

#: (target flags, the planned variant, where its wheels are on the server)
PLANS = [
    pytest.param([*LINUX_GPU, "--variant", "cu128"], "cu128", "whl/cu128", id="cu128"),
    pytest.param([*LINUX_GPU, "--variant", "cu118"], "cu118", "whl/cu118", id="cu118"),
    pytest.param([*LINUX_CPU, "--variant", "cpu"], "cpu", "whl/cpu", id="cpu"),
    pytest.param(LINUX_GPU, "cu126", "pypi", id="pypi-cu126"),
]


def plan_for(flags: list[str], local_index: LocalIndex, cwd: Path) -> dict[str, Any]:
    plan = resolve_json("--torch", f"=={TORCH}", *flags, "--index-base", local_index.base, cwd=cwd)
    assert plan["torch"] == TORCH and plan["torchvision"] == VISION and plan["torchaudio"] == AUDIO
    return plan


@pytest.mark.parametrize(("flags", "variant", "index"), PLANS)
def test_pip_installs_exactly_the_planned_wheels(
    flags: list[str],
    variant: str,
    index: str,
    local_index: LocalIndex,
    cli_cwd: Path,
    tmp_path: Path,
) -> None:
    plan = plan_for(flags, local_index, cli_cwd)
    assert plan["variant"] == variant
    command = plan["commands"]["pip"]
    if index == "pypi":
        # PyPI's own build is the plan: no index flag at all, plain pins
        assert plan["index_url"] is None
        assert "--index-url" not in command and "--extra-index-url" not in command
        assert plan["requirements"] == [
            f"torch=={TORCH}",
            f"torchvision=={VISION}",
            f"torchaudio=={AUDIO}",
        ]
        index_url = local_index.pypi
        extra = ("--index-url", index_url)  # stands in for the default index, pypi.org
    else:
        index_url = f"{local_index.base}/{variant}"
        assert plan["index_url"] == index_url
        assert shlex.split(command)[-2:] == ["--index-url", index_url]
        assert "--extra-index-url" not in command
        extra = ()
    mark = local_index.mark()
    proc, report = pip_dry_run(command, tmp_path, *extra)
    assert proc.returncode == 0, proc.stderr
    assert_exactly_planned(report, plan, index_url, local_index.expected(index))
    # and pip asked no other index on the server for anything
    prefix = urlparse(index_url).path + "/"
    strays = [r for r in local_index.since(mark) if prefix not in r]
    assert not strays, strays


def test_cu126_index_plan_installs_the_cu126_wheels(
    local_index: LocalIndex, cli_cwd: Path, tmp_path: Path
) -> None:
    """A plan for the cu126 *index* (what a mirror of PyPI's build looks like).

    The resolver never emits it for 2.7.1 on linux-x86_64 (PyPI's build is cu126, so the
    simpler PyPI command wins), so the plan is the PyPI plan moved to the cu126 index, rendered by
    the same pip renderer.
    """
    from torchenv.resolver.plan import Plan

    data = plan_for(LINUX_GPU, local_index, cli_cwd)
    plan = Plan(
        torch=data["torch"],
        torchvision=data["torchvision"],
        torchaudio=data["torchaudio"],
        variant="cu126",
        index_url=index_url_for("cu126", local_index.base),
        python=data["python"],
        platform=data["platform"],
        accelerator="cuda",
        level="full",
        matrix_version=data["matrix_version"],
        local_tag="cu126",
        cuda="12.6",
    )
    command = pip_command(plan)
    proc, report = pip_dry_run(command, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert_exactly_planned(
        report,
        {"requirements": plan.requirements()},
        f"{local_index.base}/cu126",
        local_index.expected("whl/cu126"),
    )


def test_index_base_from_environment_variable(
    local_index: LocalIndex, cli_cwd: Path, tmp_path: Path
) -> None:
    """TORCHENV_INDEX_BASE does what --index-base does."""
    plan = resolve_json(
        "--torch",
        f"=={TORCH}",
        *LINUX_GPU,
        "--variant",
        "cu128",
        cwd=cli_cwd,
        env=clean_env(TORCHENV_INDEX_BASE=local_index.base + "/"),
    )
    assert plan["index_url"] == f"{local_index.base}/cu128"
    proc, report = pip_dry_run(plan["commands"]["pip"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert_exactly_planned(
        report, plan, f"{local_index.base}/cu128", local_index.expected("whl/cu128")
    )


def test_install_dry_run_prints_a_runnable_pip_command(
    local_index: LocalIndex, cli_cwd: Path, tmp_path: Path
) -> None:
    """``torchenv install --dry-run`` prints ``<python> -m pip install ...`` for the plan."""
    proc = torchenv(
        "install",
        "--dry-run",
        "--json",
        "--torch",
        f"=={TORCH}",
        *LINUX_GPU,
        "--variant",
        "cu128",
        "--index-base",
        local_index.base,
        "--python-exe",
        sys.executable,
        cwd=cli_cwd,
    )
    out = json.loads(proc.stdout)
    assert out["ran"] is False and out["returncode"] is None
    # the plan is the one resolve prints, commands included
    assert out["plan"]["commands"]["pip"] and out["plan"]["commands"]["uv"]
    argv = shlex.split(out["command"])
    assert argv[:4] == [sys.executable, "-m", "pip", "install"]
    # the same command, with pip's own name: exactly the cu128 files
    proc2, report = pip_dry_run(shlex.join(["pip", *argv[3:]]), tmp_path)
    assert proc2.returncode == 0, proc2.stderr
    assert_exactly_planned(
        report, out["plan"], f"{local_index.base}/cu128", local_index.expected("whl/cu128")
    )


@pytest.mark.parametrize(("flags", "variant", "index"), [PLANS[0], PLANS[2], PLANS[3]])
def test_uv_installs_exactly_the_planned_wheels(
    flags: list[str],
    variant: str,
    index: str,
    local_index: LocalIndex,
    cli_cwd: Path,
    tmp_path: Path,
) -> None:
    plan = plan_for(flags, local_index, cli_cwd)
    command = plan["commands"]["uv"]
    if index == "pypi":
        assert "--index-url" not in command
        index_url = local_index.pypi
        extra: tuple[str, ...] = ("--index-url", index_url)
    else:
        index_url = f"{local_index.base}/{variant}"
        assert shlex.split(command)[-2:] == ["--index-url", index_url]
        extra = ()
    mark = local_index.mark()
    proc = uv_dry_run(command, tmp_path, *extra)
    assert proc.returncode == 0, proc.stderr
    assert uv_would_install(proc.stderr + proc.stdout) == set(plan["requirements"]), proc.stderr
    # every wheel uv touched is one of the planned files on the plan's index
    expected = local_index.expected(index)
    prefix = urlparse(index_url).path
    touched = {r.split(" ", 1)[1] for r in local_index.since(mark) if r.endswith(".whl")}
    assert touched == {f"{prefix}/{n}/{f}" for n, (f, _) in expected.items()}, touched
    assert all(prefix + "/" in r for r in local_index.since(mark)), local_index.since(mark)


# --------------------------------------------------------------------------- negative controls


def test_control_index_without_the_variant_wheel_makes_pip_fail(
    local_index: LocalIndex, cli_cwd: Path, tmp_path: Path
) -> None:
    """A mirror whose cu128 index has only torchaudio+cu126: the pinned command must fail.

    This proves the assertions above can fail, and that the local-tag pins keep another
    variant's wheel out instead of silently taking it.
    """
    plan = resolve_json(
        "--torch",
        f"=={TORCH}",
        *LINUX_GPU,
        "--variant",
        "cu128",
        "--index-base",
        local_index.broken_base,
        cwd=cli_cwd,
    )
    proc, report = pip_dry_run(plan["commands"]["pip"], tmp_path)
    assert proc.returncode != 0
    assert report is None
    assert "torchaudio==2.7.1+cu128" in proc.stderr
    assert "No matching distribution" in proc.stderr
    # uv refuses too
    proc = uv_dry_run(plan["commands"]["uv"], tmp_path)
    assert proc.returncode != 0
    assert "torchaudio" in proc.stderr


def test_control_checker_rejects_the_wrong_files(
    local_index: LocalIndex, cli_cwd: Path, tmp_path: Path
) -> None:
    """assert_exactly_planned is not vacuous: the cpu report does not pass as the cu128 plan."""
    cpu = plan_for([*LINUX_CPU, "--variant", "cpu"], local_index, cli_cwd)
    proc, report = pip_dry_run(cpu["commands"]["pip"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    with pytest.raises(AssertionError):
        assert_exactly_planned(
            report, cpu, f"{local_index.base}/cu128", local_index.expected("whl/cu128")
        )
    with pytest.raises(AssertionError):
        assert_exactly_planned(
            report, cpu, f"{local_index.base}/cpu", local_index.expected("whl/cu126")
        )


def test_control_mixing_indexes_lets_another_variant_sneak_in(
    local_index: LocalIndex, cli_cwd: Path, tmp_path: Path
) -> None:
    """Why the renderers never mix indexes: PyPI + an extra CPU index installs the +cpu build.

    ``2.7.1+cpu`` sorts above ``2.7.1`` and satisfies ``==2.7.1``, so adding
    ``--extra-index-url .../cpu`` to the PyPI plan's command swaps every wheel for the CPU one.
    """
    plan = plan_for(LINUX_GPU, local_index, cli_cwd)
    assert plan["index_url"] is None
    mixed = plan["commands"]["pip"] + f" --extra-index-url {local_index.base}/cpu"
    proc, report = pip_dry_run(mixed, tmp_path, "--index-url", local_index.pypi)
    assert proc.returncode == 0, proc.stderr
    assert report is not None
    got = installed_files(report)
    assert {n: f for n, (f, _, _) in got.items()} == {
        n: f for n, (f, _) in local_index.expected("whl/cpu").items()
    }
    with pytest.raises(AssertionError):
        assert_exactly_planned(report, plan, local_index.pypi, local_index.expected("pypi"))
    # the unmixed command, same indexes otherwise, gets the planned plain wheels
    proc, report = pip_dry_run(plan["commands"]["pip"], tmp_path, "--index-url", local_index.pypi)
    assert proc.returncode == 0, proc.stderr
    assert_exactly_planned(report, plan, local_index.pypi, local_index.expected("pypi"))


def test_plan_pins_survive_a_mixed_index(
    local_index: LocalIndex, cli_cwd: Path, tmp_path: Path
) -> None:
    """The local-tag pins of an index plan hold even if someone adds PyPI as an extra index."""
    plan = plan_for([*LINUX_GPU, "--variant", "cu128"], local_index, cli_cwd)
    mixed = plan["commands"]["pip"] + f" --extra-index-url {local_index.pypi}"
    proc, report = pip_dry_run(mixed, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert_exactly_planned(
        report, plan, f"{local_index.base}/cu128", local_index.expected("whl/cu128")
    )


def test_stand_in_index_is_self_consistent(local_index: LocalIndex) -> None:
    """The fixture itself: real names, this interpreter's tag, hashes on the pages."""
    names = {p.name for idx in local_index.wheels.values() for p in idx.values()}
    assert f"torch-2.7.1+cu128-{local_index.tag}.whl" in names
    assert f"torchvision-0.22.1+cpu-{local_index.tag}.whl" in names
    assert f"torchaudio-2.7.1-{local_index.tag}.whl" in names
    for idx in local_index.wheels.values():
        for p in idx.values():
            with zipfile.ZipFile(p) as zf:
                assert zf.testzip() is None
                meta = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
                assert f"Version: {p.name.split('-')[1]}\n" in zf.read(meta).decode()
            page = (p.parent / "index.html").read_text(encoding="utf-8")
            assert hashlib.sha256(p.read_bytes()).hexdigest() in page


# --------------------------------------------------------------------------- generated files


@pytest.mark.parametrize(("flags", "variant", "index"), [PLANS[0], PLANS[2]])
def test_requirements_file_installs_exactly_the_planned_wheels(
    flags: list[str],
    variant: str,
    index: str,
    local_index: LocalIndex,
    cli_cwd: Path,
    tmp_path: Path,
) -> None:
    """``torchenv env --format requirements -o FILE`` then ``pip install -r FILE``."""
    req = cli_cwd / "requirements.txt"
    out = json.loads(
        torchenv(
            "env",
            "--format",
            "requirements",
            "-o",
            str(req),
            "--json",
            "--torch",
            f"=={TORCH}",
            *flags,
            "--index-base",
            local_index.base,
            cwd=cli_cwd,
        ).stdout
    )
    proc, report = pip_dry_run(shlex.join(["pip", "install", "-r", str(req)]), tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert_exactly_planned(
        report, out["plan"], f"{local_index.base}/{variant}", local_index.expected(index)
    )


def test_command_with_a_space_in_the_index_base_installs_the_plan(
    local_index: LocalIndex, cli_cwd: Path, tmp_path: Path
) -> None:
    """The quoted URL reaches pip as one argument and pip finds the planned files there."""
    plan = resolve_json(
        "--torch",
        f"=={TORCH}",
        *LINUX_GPU,
        "--variant",
        "cu128",
        "--index-base",
        local_index.spaced_base,
        cwd=cli_cwd,
    )
    assert "'" in plan["commands"]["pip"]
    proc, report = pip_dry_run(plan["commands"]["pip"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert_exactly_planned(
        report, plan, f"{local_index.spaced_base}/cu128", local_index.expected("whl/cu128")
    )


def _pip_lines_of_environment_yml(text: str) -> list[str]:
    import yaml

    doc = yaml.safe_load(text)
    (lines,) = [d["pip"] for d in doc["dependencies"] if isinstance(d, dict)]
    return list(lines)


@pytest.mark.parametrize("spaced", [False, True], ids=["plain-base", "space-in-base"])
def test_environment_yml_pip_section_installs_exactly_the_planned_wheels(
    local_index: LocalIndex, cli_cwd: Path, tmp_path: Path, spaced: bool
) -> None:
    """conda hands the ``pip:`` entries to pip as a requirements file; do the same here."""
    base = local_index.spaced_base if spaced else local_index.base
    out = json.loads(
        torchenv(
            "env",
            "--format",
            "environment.yml",
            "--json",
            "--torch",
            f"=={TORCH}",
            "--python",
            PY,
            "--platform",
            "linux-x86_64",
            "--rocm-arch",
            "gfx1100",
            "--index-base",
            base,
            cwd=cli_cwd,
        ).stdout
    )
    plan = out["plan"]
    assert plan["variant"] == "rocm6.3"
    req = tmp_path / "condaenv.requirements.txt"
    req.write_text(
        "\n".join(_pip_lines_of_environment_yml(out["content"])) + "\n", encoding="utf-8"
    )
    proc, report = pip_dry_run(shlex.join(["pip", "install", "-r", str(req)]), tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert_exactly_planned(report, plan, f"{base}/rocm6.3", local_index.expected("whl/rocm6.3"))


def test_requirements_file_with_a_space_in_the_index_base(
    local_index: LocalIndex, cli_cwd: Path, tmp_path: Path
) -> None:
    req = cli_cwd / "requirements.txt"
    out = json.loads(
        torchenv(
            "env",
            "--format",
            "requirements",
            "-o",
            str(req),
            "--json",
            "--torch",
            f"=={TORCH}",
            *LINUX_GPU,
            "--variant",
            "cu128",
            "--index-base",
            local_index.spaced_base,
            cwd=cli_cwd,
        ).stdout
    )
    proc, report = pip_dry_run(shlex.join(["pip", "install", "-r", str(req)]), tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert_exactly_planned(
        report, out["plan"], f"{local_index.spaced_base}/cu128", local_index.expected("whl/cu128")
    )


# --------------------------------------------------------------------------- a leftover +cpu build


@pytest.fixture
def cpu_torch_venv(local_index: LocalIndex, tmp_path: Path) -> Path:
    """A fresh venv holding the stand-in torch 2.7.1+cpu: the classic leftover."""
    if not UV.exists():  # pragma: no cover
        pytest.skip("uv is not installed in the venv")
    venv = tmp_path / "target-venv"
    for argv in (
        [
            str(UV),
            "venv",
            str(venv),
            "--python",
            sys.executable,
            "--no-config",
            "--no-cache",
            "--quiet",
        ],
        [
            str(UV),
            "pip",
            "install",
            "--python",
            str(venv / "bin" / "python"),
            f"torch=={TORCH}+cpu",
            "--index-url",
            f"{local_index.base}/cpu",
            "--no-config",
            "--no-cache",
            "--quiet",
        ],
    ):
        proc = subprocess.run(argv, env=clean_env(), capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
    return venv / "bin" / "python"


def test_install_replaces_a_leftover_cpu_build(
    local_index: LocalIndex, cpu_torch_venv: Path, cli_cwd: Path, tmp_path: Path
) -> None:
    """torch==2.7.1 is already satisfied by 2.7.1+cpu; the command must force the swap."""
    out = json.loads(
        torchenv(
            "install",
            "--dry-run",
            "--json",
            "--torch",
            f"=={TORCH}",
            *LINUX_GPU,
            "--python-exe",
            str(cpu_torch_venv),
            cwd=cli_cwd,
        ).stdout
    )
    assert out["plan"]["index_url"] is None  # PyPI's cu126 build
    assert any("will be replaced" in n for n in out["notes"]), out["notes"]
    argv = shlex.split(out["command"])
    assert argv[:4] == [str(cpu_torch_venv), "-m", "pip", "install"]
    assert "--force-reinstall" in argv

    def dry_run(args: list[str]) -> dict[str, Any]:
        report = tmp_path / "report.json"
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "--python",
                str(cpu_torch_venv),
                "install",
                *args,
                "--index-url",
                local_index.pypi,
                "--dry-run",
                "--report",
                str(report),
                "--no-cache-dir",
                "--isolated",
                "--disable-pip-version-check",
            ],
            env=clean_env(),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 0, proc.stderr
        data: dict[str, Any] = json.loads(report.read_text(encoding="utf-8"))
        return data

    # the command as printed (against the target interpreter, installed packages considered)
    got = installed_files(dry_run(argv[4:]))
    assert {n: f for n, (f, _, _) in got.items()} == {
        n: f for n, (f, _) in local_index.expected("pypi").items()
    }
    # control: without --force-reinstall the +cpu torch stays
    plain = [a for a in argv[4:] if a != "--force-reinstall"]
    assert "torch" not in installed_files(dry_run(plain))


def test_uv_install_replaces_a_leftover_cpu_build(
    local_index: LocalIndex, cpu_torch_venv: Path, cli_cwd: Path, tmp_path: Path
) -> None:
    out = json.loads(
        torchenv(
            "install",
            "--dry-run",
            "--json",
            "--installer",
            "uv",
            "--torch",
            f"=={TORCH}",
            *LINUX_GPU,
            "--python-exe",
            str(cpu_torch_venv),
            cwd=cli_cwd,
        ).stdout
    )
    argv = out["argv"]
    assert shlex.split(out["command"]) == argv  # what is shown is what runs
    # PATH first, then next to the interpreter running torchenv (this venv's uv here)
    assert Path(argv[0]).name == "uv" and Path(argv[0]).is_file()
    assert argv[1:5] == ["pip", "install", "--python", str(cpu_torch_venv)]

    def dry_run(args: list[str]) -> str:
        proc = subprocess.run(
            [
                str(UV),
                "pip",
                "install",
                *args,
                "--index-url",
                local_index.pypi,
                "--dry-run",
                "--no-cache",
                "--no-config",
                "--color",
                "never",
            ],
            env=clean_env(),
            capture_output=True,
            text=True,
            timeout=120,
            cwd=tmp_path,
        )
        assert proc.returncode == 0, proc.stderr
        return proc.stderr + proc.stdout

    output = dry_run(argv[3:])
    assert f"torch=={TORCH}" in uv_would_install(output), output
    assert f" - torch=={TORCH}+cpu" in output
    plain = argv[3:]
    i = plain.index("--reinstall-package")
    del plain[i : i + 2]
    assert f"torch=={TORCH}" not in uv_would_install(dry_run(plain))
