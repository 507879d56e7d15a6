"""The resolve/env/matrix commands as users run them: exit codes and the JSON contract."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.conftest import Cli

CONTRACT_KEYS = {
    "torch",
    "torchvision",
    "torchaudio",
    "variant",
    "index_url",
    "python",
    "platform",
    "commands",
    "warnings",
    "rejected",
    "matrix_version",
}


def test_resolve_json_follows_the_contract(cli: Cli) -> None:
    r = cli(
        [
            "resolve",
            "--json",
            "--driver",
            "570.86.15",
            "--gpu",
            "8.6",
            "--python",
            "3.12",
            "--platform",
            "linux-x86_64",
            "--torch",
            "==2.7.1",
        ]
    )
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert set(doc) >= CONTRACT_KEYS
    assert (doc["torch"], doc["torchvision"], doc["torchaudio"]) == ("2.7.1", "0.22.1", "2.7.1")
    assert doc["index_url"] is None and doc["variant"] == "cu126"
    assert set(doc["commands"]) == {"pip", "uv", "conda", "pixi"}
    assert all({"torch", "variant", "reason", "category", "rule"} <= set(x)
               for x in doc["rejected"])


def test_unsatisfiable_exits_3_with_a_null_torch_and_reasons(cli: Cli) -> None:
    r = cli(["resolve", "--json", "--driver", "390.116", "--gpu", "6.1", "--python", "3.12"])
    assert r.returncode == 3
    doc = json.loads(r.stdout)
    assert doc["torch"] is None and doc["rejected"]
    assert any("--variant cpu" in f for f in doc["fixes"])
    # the failure keys every --json failure has: the nearest fix is the hint
    assert doc["exit_code"] == 3 and doc["hint"] == doc["fixes"][0]


def test_without_candidates_the_text_does_not_offer_to_list_them(cli: Cli) -> None:
    r = cli(["resolve", "--gpu", "8.6"])  # a GPU whose driver cannot be read
    assert r.returncode == 3
    assert "driver version could not be read" in r.stderr
    assert "--explain lists every candidate" not in r.stderr
    r = cli(["resolve", "--driver", "390.116", "--gpu", "6.1", "--python", "3.12"])
    assert "--explain lists every candidate" in r.stderr


def test_unsatisfiable_on_the_terminal_prints_the_fixes(cli: Cli) -> None:
    r = cli(["resolve", "--driver", "390.116", "--gpu", "6.1", "--python", "3.12"])
    assert r.returncode == 3
    assert "upgrade the NVIDIA driver" in r.stderr and "--variant cpu" in r.stderr


@pytest.mark.parametrize(
    ("args", "env", "named"),
    [
        (["--gpu", "8.x"], {}, "'8.x'"),
        (["--driver", "abc"], {}, "'abc'"),
        ([], {"TORCHENV_DRIVER_VERSION": "abc"}, "TORCHENV_DRIVER_VERSION: 'abc'"),
        (["--torch", ">>2"], {}, "'>>2'"),
        (["--variant", "cuda12"], {}, "'cuda12'"),
        (["--platform", "solaris"], {}, "'solaris'"),
        (["--python", "three"], {}, "'three'"),
        (["--gpu", "99.9"], {}, "'99.9'"),
        (["--gpu", "sm_999"], {}, "'sm_999'"),
    ],
    ids=["gpu", "driver", "env-driver", "spec", "variant", "platform", "python", "gpu-99.9",
         "gpu-sm_999"],
)
def test_bad_input_exits_2_naming_the_value(
    args: list[str], env: dict[str, str], named: str, cli: Cli) -> None:
    r = cli(["resolve", "--json", *args], env=env)
    assert r.returncode == 2
    assert named in r.stderr
    doc = json.loads(r.stdout)  # with --json even a failure is one JSON document
    assert doc["exit_code"] == 2 and named in doc["error"]


def test_usage_errors_exit_2_without_a_traceback(cli: Cli) -> None:
    for args in (["resolve", "--bogus"], [], ["nosuchcommand"], ["env"]):
        r = cli(args)
        assert r.returncode == 2, args
        assert "torchenv: error:" in r.stderr and "Traceback" not in r.stderr


def test_env_and_install_report_unsatisfiable_as_json(cli: Cli) -> None:
    for cmd in (["env", "--format", "requirements"], ["install", "--dry-run"]):
        r = cli([*cmd, "--json", "--driver", "390.116", "--gpu", "6.1"])
        assert r.returncode == 3
        doc = json.loads(r.stdout)
        assert doc["torch"] is None and doc["rejected"] and doc["fixes"]


def test_a_saved_host_profile_resolves_elsewhere(tmp_path: Path, cli: Cli) -> None:
    detect = cli(["detect", "--json", "--driver", "550.54.15", "--gpu", "9.0"])
    assert detect.returncode == 0, detect.stderr
    host = tmp_path / "node.json"
    host.write_text(detect.stdout)
    via_file = cli(["resolve", "--json", "--host", str(host)])
    direct = cli(["resolve", "--json", "--driver", "550.54.15", "--gpu", "9.0"])
    assert via_file.returncode == direct.returncode == 0
    assert json.loads(via_file.stdout)["torch"] == json.loads(direct.stdout)["torch"]


def test_a_malformed_host_file_exits_2(tmp_path: Path, cli: Cli) -> None:
    bad = tmp_path / "node.json"
    bad.write_text("{not json")
    r = cli(["resolve", "--host", str(bad)])
    assert r.returncode == 2 and "node.json" in r.stderr


def test_pyproject_defaults_apply_and_flags_override_them(tmp_path: Path, cli: Cli) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.torchenv]\ntorch = "==2.6.*"\npython = "3.10"\nvariant = "cpu"\n'
    )
    r = cli(["resolve", "--json", "--no-gpu"], cwd=str(tmp_path))
    doc = json.loads(r.stdout)
    assert (doc["torch"], doc["python"], doc["variant"]) == ("2.6.0", "3.10", "cpu")
    r = cli(["resolve", "--json", "--no-gpu", "--torch", "==2.5.1"], cwd=str(tmp_path))
    assert json.loads(r.stdout)["torch"] == "2.5.1"


def test_matrix_show_json_lists_every_release_newest_first(cli: Cli) -> None:
    r = cli(["matrix", "show", "--json"])
    doc = json.loads(r.stdout)
    assert doc["schema_version"] == 1 and doc["matrix_version"]
    versions = [x["torch"] for x in doc["releases"]]
    assert versions[0] == "2.15.0" and "2.0.0" in versions
    first = doc["releases"][0]
    assert {
        "torch",
        "torchvision",
        "torchaudio",
        "released",
        "python",
        "pypi_default",
        "variants",
    } <= set(first)


def test_matrix_check_passes(cli: Cli) -> None:
    r = cli(["matrix", "check", "--json"])
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["cache_current"] is True and report["built_current"] is True


def test_matrix_check_rejects_a_broken_overlay(tmp_path: Path, cli: Cli) -> None:
    overlay = tmp_path / "o.yaml"
    overlay.write_text("releases:\n  - torch: nope\n")
    r = cli(["matrix", "check", "--overlay", str(overlay)])
    assert r.returncode == 2
    assert r.stdout.startswith("matrix check failed: the overlay is not usable")
    assert ("error: overlay not usable (every other command ignores it): "
            f"matrix/data/releases.yaml with the overlay {overlay}: ") in r.stderr
    assert "'nope' is not a torch version" in r.stderr
    assert "warning: overlay" not in r.stderr


def test_an_empty_torchenv_gpus_means_no_gpu_even_with_a_driver(cli: Cli) -> None:
    r = cli(["resolve", "--json"],
            env={"TORCHENV_GPUS": "", "TORCHENV_DRIVER_VERSION": "570.86.15"})
    assert r.returncode == 0
    assert json.loads(r.stdout)["variant"] == "cpu"


def test_install_refuses_targets_that_are_not_this_machine(tmp_path: Path, cli: Cli) -> None:
    r = cli(["install", "--dry-run", "--platform", "win-amd64"])
    assert r.returncode == 2 and "is not this machine" in r.stderr
    host = tmp_path / "h.json"
    host.write_text(json.dumps({"platform": "linux-x86_64", "python": "3.12"}))
    r = cli(["install", "--dry-run", "--host", str(host)])
    assert r.returncode == 2 and "--host describes another machine" in r.stderr


def test_a_host_file_is_normalised_once_and_resolves(tmp_path: Path, cli: Cli) -> None:
    host = tmp_path / "node.json"
    host.write_text(json.dumps({
        "platform": "linux", "python": "cp312", "glibc": "2.35",
        "nvidia": {"driver_version": "580.65.06",
                   "gpus": [{"index": 0, "compute_capability": "sm_86"}]}}))
    r = cli(["resolve", "--json", "--host", str(host)])
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert (doc["platform"], doc["python"]) == ("linux-x86_64", "3.12")
    assert any("(8.6)" in reason for reason in doc["reasons"])


@pytest.mark.parametrize(("gpu", "named"), [
    ({"index": 0, "compute_capability": "8.6", "memory_mib": -5}, "memory_mib: -5"),
    ({"index": 0, "compute_capability": "99.9"}, "'99.9'"),
], ids=["negative-memory", "impossible-cc"])
def test_bad_facts_in_a_host_file_exit_2_naming_the_key(tmp_path: Path, gpu: dict[str, object],
                                                         named: str, cli: Cli) -> None:
    host = tmp_path / "node.json"
    host.write_text(json.dumps({"platform": "linux-x86_64", "python": "3.12",
                                "nvidia": {"driver_version": "580.65.06", "gpus": [gpu]}}))
    r = cli(["resolve", "--host", str(host)])
    assert r.returncode == 2
    assert named in r.stderr and "nvidia.gpus[0]" in r.stderr and "Traceback" not in r.stderr


# --------------------------------------------------------------------------- one answer

OLD_DRIVER = ["--driver", "550.54.15", "--gpu", "8.6", "--python", "3.12", "--platform",
              "linux-x86_64", "--glibc", "2.35", "--torch", ">=2.5,<2.9"]
"""A machine whose newest fitting build works only with a warning (minor-version
compatibility), while an older one fits without any."""


def test_resolve_leads_with_the_build_and_its_command(cli: Cli) -> None:
    doc = json.loads(cli(["resolve", *OLD_DRIVER, "--json"]).stdout)
    r = cli(["resolve", *OLD_DRIVER])
    assert r.returncode == 0, r.stderr
    first, command, *rest = r.stdout.splitlines()
    assert first.startswith(f"Install torch {doc['torch']} {doc['variant']} ")
    assert command.strip() == doc["commands"]["pip"]
    assert all(line.split(None, 1)[-1] != doc["commands"]["pip"]  # shown once, not relabelled
               and line.strip() != doc["commands"]["pip"] for line in rest)


def test_warnings_say_what_to_do_and_alternatives_are_labelled(cli: Cli) -> None:
    doc = json.loads(cli(["resolve", *OLD_DRIVER, "--json"]).stdout)
    alt = doc["confirmed_alternative"]
    assert alt is not None and doc["warnings"]
    lines = cli(["resolve", *OLD_DRIVER]).stdout.splitlines()
    assert (f"  → this build works with the warnings above: install it, or take torch "
            f"{alt['torch']} {alt['variant']}, which fits without any") in lines
    header = (f"Alternative, not the answer above: torch {alt['torch']} {alt['variant']} "
              "fits without warnings")
    assert header in lines
    other = json.loads(cli(["resolve", *OLD_DRIVER[:-2], "--torch", f"=={alt['torch']}",
                            "--variant", alt["variant"], "--json"]).stdout)
    assert lines[lines.index(header) + 1] == "  " + other["commands"]["pip"]
