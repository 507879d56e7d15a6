"""``resolve --with``, ``--allow-build`` and ``[tool.torchenv] with`` as users run them."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import tomllib
from tests.conftest import Cli

AMPERE = ["--driver", "580.65.06", "--gpu", "8.6", "--python", "3.12", "--platform",
          "linux-x86_64", "--glibc", "2.35"]
TURING = ["--driver", "580.65.06", "--gpu", "7.5", "--python", "3.12", "--platform",
          "linux-x86_64", "--glibc", "2.35"]


def test_with_flash_attn_json_carries_companions_held_back_and_the_pins(cli: Cli) -> None:
    r = cli(["resolve", "--json", "--with", "flash-attn", *AMPERE])
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert (doc["torch"], doc["variant"]) == ("2.8.0", "cu128")
    (fa,) = doc["companions"]
    assert {"name", "version", "source", "url", "index", "coupling", "evidence",
            "reasons"} <= set(fa)
    assert (fa["name"], fa["version"], fa["source"], fa["coupling"]) == (
        "flash-attn", "2.8.3", "release-asset", "minor")
    assert fa["url"].endswith("cu12torch2.8cxx11abiTRUE-cp312-cp312-linux_x86_64.whl")
    (held,) = doc["held_back"]
    assert held["package"] == "flash-attn" and held["to"] == {"torch": "2.8.0",
                                                              "variant": "cu128"}
    assert "from source" in held["alternative"]["source_build"]
    assert held["reason"] == ("flash-attn's prebuilt files serve torch 2.4, 2.5, 2.6, 2.7, 2.8, "
                              "not 2.15.0 cu132")
    assert "torch 2.8.0 is the newest release with a prebuilt flash-attn that fits" in \
        doc["reasons"]
    # the commands install it from its file, checked by digest, never from the sdist
    pip = doc["commands"]["pip"]
    assert f"'flash-attn @ {fa['url']}#sha256={fa['sha256']}'" in pip
    assert "--only-binary flash-attn" in pip
    assert "--only-binary flash-attn" in doc["commands"]["uv"]
    lines = doc["constraints"]["text"].splitlines()
    assert "flash-attn==2.8.3" in lines and "torch==2.8.0" in lines
    assert any(line.startswith("triton==3.4.0 ;") for line in lines)
    assert "--only-binary flash-attn" in doc["commands"]["pip"]
    # nothing was written, so no command names the file
    assert doc["constraints"]["written"] is False and "commands" not in doc["constraints"]


def test_plain_resolve_has_empty_companions(cli: Cli) -> None:
    doc = json.loads(cli(["resolve", "--json", *AMPERE]).stdout)
    assert doc["companions"] == [] and doc["held_back"] == []
    assert not any(line.startswith("triton") for line in doc["constraints"]["text"].splitlines())


def test_text_output_names_each_companion_and_what_held_torch_back(cli: Cli) -> None:
    r = cli(["resolve", "--with", "flash-attn", *AMPERE])
    assert r.returncode == 0, r.stderr
    assert "flash-attn 2.8.3: a release asset, minor coupling" in r.stdout
    assert "held back: flash-attn has no prebuilt file for torch 2.15.0" in r.stdout
    assert "--allow-build flash-attn" in r.stdout


def test_allow_build_chooses_the_source_build_in_a_second_command(cli: Cli) -> None:
    doc = json.loads(cli(["resolve", "--json", "--with", "flash-attn", "--allow-build",
                          "flash-attn", *AMPERE]).stdout)
    assert doc["torch"] == "2.15.0" and doc["held_back"] == []
    assert doc["companions"][0]["source"] == "sdist"
    assert doc["commands"]["pip"].endswith(
        "&& pip install flash-attn==2.8.3.post2 --no-build-isolation")


def test_flash_attn_on_turing_exits_3_naming_what_runs_there(cli: Cli) -> None:
    r = cli(["resolve", "--json", "--with", "flash-attn", *TURING])
    assert r.returncode == 3
    doc = json.loads(r.stdout)
    assert doc["torch"] is None and "compute capability 8.0" in doc["error"]
    assert any("torch.nn.functional.scaled_dot_product_attention" in f and "xformers" in f
               for f in doc["fixes"])
    text = cli(["resolve", "--with", "flash-attn", *TURING])
    assert text.returncode == 3 and "scaled_dot_product_attention" in text.stderr + text.stdout


def test_unknown_with_name_is_exit_2_naming_it_and_the_known_ones(cli: Cli) -> None:
    r = cli(["resolve", "--with", "xformers,flash-atn", *AMPERE])
    assert r.returncode == 2
    assert "--with: 'flash-atn' is not a companion package" in r.stderr
    assert "flash-attn, xformers" in r.stderr and "pyg" in r.stderr


def test_allow_build_outside_with_is_exit_2(cli: Cli) -> None:
    r = cli(["resolve", "--with", "xformers", "--allow-build", "flash-attn", *AMPERE])
    assert r.returncode == 2 and "--allow-build: 'flash-attn'" in r.stderr


def test_pyproject_with_list(cli: Cli, tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.torchenv]\nwith = ["vllm"]\n')
    doc = json.loads(cli(["resolve", "--json", *AMPERE], cwd=tmp_path).stdout)
    assert doc["torch"] == "2.13.0" and doc["companions"][0]["name"] == "vllm"
    # a flag overrides the file
    doc = json.loads(cli(["resolve", "--json", "--with", "xformers", *AMPERE],
                         cwd=tmp_path).stdout)
    assert [c["name"] for c in doc["companions"]] == ["xformers"]


def test_pyproject_with_of_the_wrong_type_or_name_is_exit_2(cli: Cli, tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.torchenv]\nwith = "vllm"\n')
    r = cli(["resolve", *AMPERE], cwd=tmp_path)
    assert r.returncode == 2 and "with must be a list" in r.stderr
    (tmp_path / "pyproject.toml").write_text('[tool.torchenv]\nwith = ["nope"]\n')
    r = cli(["resolve", *AMPERE], cwd=tmp_path)
    assert r.returncode == 2
    assert "pyproject.toml [tool.torchenv] with: 'nope'" in r.stderr


def test_every_command_installs_the_companions(cli: Cli, tmp_path: Path) -> None:
    doc = json.loads(cli(["resolve", "--json", "--with", "xformers", "--torch", "<2.10",
                          "--variant", "cu126", *AMPERE]).stdout)
    assert doc["companions"][0]["version"] == "0.0.33.post2"
    commands = doc["commands"]
    # PyPI beside the variant index, since xformers lives there; never its source
    assert "--extra-index-url https://pypi.org/simple --only-binary xformers" in commands["pip"]
    assert "--index-strategy unsafe-best-match --only-binary xformers" in commands["uv"]
    assert commands["conda"].startswith("conda install pip && python -m pip install ")
    assert "xformers==0.0.33.post2" in commands["conda"]
    # pixi.toml holds the companion: the command's own 'torchenv env' writes it there
    write, install = commands["pixi"].split(" && ")
    assert install == "pixi install" and "--with xformers" in write
    r = cli(shlex.split(write)[1:], cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    pixi = tomllib.loads((tmp_path / "pixi.toml").read_text(encoding="utf-8"))
    assert pixi["pypi-dependencies"]["xformers"] == "==0.0.33.post2"
    assert pixi["pypi-dependencies"]["torch"]["version"] == f"=={doc['torch']}+cu126"
    assert "xformers" in pixi["pypi-options"]["no-build"]


def test_env_files_carry_the_companions_or_refuse(cli: Cli) -> None:
    r = cli(["env", "--format", "requirements", "--with", "pyg", *AMPERE])
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert "--find-links https://data.pyg.org/whl/torch-2.12.0+cu130.html" in lines
    assert {"--only-binary torch-scatter", "torch-scatter==2.1.2", "pyg-lib==0.9.0"} <= set(lines)
    r = cli(["env", "--format", "environment.yml", "--with", "pyg", *AMPERE])
    assert r.returncode == 0 and '      - "torch-sparse==0.6.18"' in r.stdout.splitlines()
    page = "https://data.pyg.org/whl/torch-2.12.0+cu130.html"
    r = cli(["env", "--format", "pyproject", "--with", "pyg", *AMPERE])
    assert r.returncode == 0, r.stderr
    uv = tomllib.loads(r.stdout)["tool"]["uv"]
    (flat,) = [i for i in uv["index"] if i["url"] == page]  # the page, a flat index
    assert flat["format"] == "flat" and flat["explicit"] is True
    assert uv["sources"]["torch-scatter"] == [{"index": flat["name"]}]
    assert {"torch-scatter==2.1.2", "pyg-lib==0.9.0"} <= set(uv["constraint-dependencies"])
    assert {"torch-scatter", "torch-sparse", "pyg-lib"} <= set(uv["no-build-package"])
    r = cli(["env", "--format", "pixi", "--with", "pyg", *AMPERE])
    assert r.returncode == 0, r.stderr
    pixi = tomllib.loads(r.stdout)
    assert pixi["pypi-options"]["find-links"] == [{"url": page}]
    assert pixi["pypi-dependencies"]["torch-sparse"] == "==0.6.18"
    assert "torch-sparse" in pixi["pypi-options"]["no-build"]
    r = cli(["env", "--format", "requirements", "--with", "flash-attn", "--allow-build",
             "flash-attn", *AMPERE])
    assert r.returncode == 2 and "flash-attn is a source build" in r.stderr


def test_a_package_without_files_for_the_platform_is_exit_3_at_once(cli: Cli) -> None:
    r = cli(["resolve", "--json", "--with", "xformers", "--platform", "macos-arm64",
             "--python", "3.12", "--no-gpu"])
    assert r.returncode == 3
    doc = json.loads(r.stdout)
    assert "no macos-arm64 file" in doc["error"]
    # one torch pick is enough to know: no older torch brings a macOS file
    assert [(x["torch"], x["category"]) for x in doc["rejected"]] == [("2.15.0", "companion")]
