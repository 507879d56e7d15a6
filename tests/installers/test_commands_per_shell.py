"""Commands quoted for the shell of their target, and the pixi line that repeats the decision.

Commands are argument lists; only their display is quoted: POSIX quoting for Linux and macOS,
PowerShell quoting for a Windows target (the two disagree on ``'``, ``$`` and on how a program
path with a space is called).
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from installer_helpers import clean_env, resolve_json, torchenv
from powershell_words import NotPlain, powershell_commands

from torchenv.installers.commands import chain_commands, quote_command

T = ["--torch", "==2.7.1", "--python", "3.11"]
LINUX = ["--platform", "linux-x86_64"]
WINDOWS = ["--platform", "win-amd64"]

# --------------------------------------------------------------------------- the quoting rules

QUOTING = [
    pytest.param(["pip", "install", "torch==2.7.1+cu128"],
                 "pip install torch==2.7.1+cu128", "pip install torch==2.7.1+cu128", id="plain"),
    pytest.param(["torchenv", "--torch", "==2.7.1"],
                 "torchenv --torch '==2.7.1'", "torchenv --torch '==2.7.1'",
                 id="leading-equals"),  # zsh expands =word; PowerShell too is safer quoted
    pytest.param(["pip", "--index-url", "http://h/my mirror/whl"],
                 "pip --index-url 'http://h/my mirror/whl'",
                 "pip --index-url 'http://h/my mirror/whl'", id="space"),
    pytest.param(["pip", "--index-url", "http://h/$HOME/a'b"],
                 "pip --index-url 'http://h/$HOME/a'\"'\"'b'",
                 "pip --index-url 'http://h/$HOME/a''b'", id="dollar-and-quote"),
    pytest.param(["pip", "x\u2019y"], "pip 'x\u2019y'", "pip 'x\u2019\u2019y'",
                 id="typographic-quote"),
    pytest.param([r"C:\Program Files\Python312\python.exe", "-m", "pip"],
                 "'C:\\Program Files\\Python312\\python.exe' -m pip",
                 "& 'C:\\Program Files\\Python312\\python.exe' -m pip", id="program-with-space"),
    pytest.param([r"C:\Python312\python.exe", "-m", "pip"],
                 "'C:\\Python312\\python.exe' -m pip", r"C:\Python312\python.exe -m pip",
                 id="windows-path"),
    pytest.param(["torchenv", "--python", "3.12", "--gpu", "12.0", "-1", ".5", "1kb"],
                 "torchenv --python 3.12 --gpu 12.0 -1 .5 1kb",
                 "torchenv --python '3.12' --gpu '12.0' '-1' '.5' '1kb'",
                 id="powershell-numbers"),  # PowerShell would pass 12.0 on as a number
    pytest.param(["pip", "a,b", "@x", "`id`", "$(id)", "a;b", ""],
                 "pip a,b @x '`id`' '$(id)' 'a;b' ''",
                 "pip 'a,b' '@x' '`id`' '$(id)' 'a;b' ''", id="powershell-operators"),
]


@pytest.mark.parametrize(("argv", "posix", "powershell"), QUOTING)
def test_quote_command_per_shell(argv: list[str], posix: str, powershell: str) -> None:
    assert quote_command(argv, "posix") == posix
    assert quote_command(argv, "powershell") == powershell
    assert shlex.split(posix) == argv
    assert powershell_commands(powershell) == [argv]


def test_chain_runs_the_next_command_only_after_success() -> None:
    a, b, c = ["conda", "install", "pip"], ["python", "-m", "pip"], ["pixi", "install"]
    posix = chain_commands([a, b, c], "posix")
    assert posix == "conda install pip && python -m pip && pixi install"
    line = chain_commands([a, b, c], "powershell")
    # Windows PowerShell 5.1 has no && at all
    assert line == "conda install pip; if ($?) { python -m pip; if ($?) { pixi install } }"
    assert powershell_commands(line) == [a, b, c]


_WORDS = st.lists(st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=12),
                  min_size=1, max_size=5)


@settings(max_examples=300, deadline=None)
@given(_WORDS)
def test_every_word_reaches_the_program_intact(argv: list[str]) -> None:
    assert shlex.split(quote_command(argv, "posix")) == argv
    assert powershell_commands(quote_command(argv, "powershell")) == [argv]


def test_the_powershell_reader_is_not_vacuous() -> None:
    """POSIX quoting of a quote, a comma or a program path is not what PowerShell reads."""
    for argv in (["pip", "a'b"], ["pip", "a,b"], ["C:\\My Python\\python.exe"]):
        posix = quote_command(argv, "posix")
        with pytest.raises((NotPlain, AssertionError)):
            assert powershell_commands(posix) == [argv]
    with pytest.raises(NotPlain):
        powershell_commands("conda install pip && pixi install")


def test_posix_commands_survive_a_real_shell() -> None:
    argv = ["printf", "%s\\n", "==2.7.1", "a'b", "$HOME", "`id`", "x y", "~/z", "*"]
    proc = subprocess.run(["sh", "-c", quote_command(argv)], capture_output=True, text=True,
                          timeout=30, env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                                           "HOME": "/should-not-appear"}, check=True)
    assert proc.stdout.splitlines() == argv[2:]


# --------------------------------------------------------------------------- Windows targets

_NASTY_BASES = [
    "http://127.0.0.1:8080/my mirror/whl",
    "http://127.0.0.1:8080/$HOME/whl",
    "http://127.0.0.1:8080/a'b\"c/`id`/$(id)/whl",
    "http://127.0.0.1:8080/a,b;c@d/whl",
]


@pytest.mark.parametrize("base", _NASTY_BASES)
def test_commands_for_a_windows_target_are_quoted_for_powershell(base: str,
                                                                 cli_cwd: Path) -> None:
    plan = resolve_json(*T, *WINDOWS, "--driver", "572.16", "--gpu", "8.9", "--variant",
                        "cu128", "--index-base", base, cwd=cli_cwd)
    assert plan["platform"] == "win-amd64" and plan["index_url"] == f"{base}/cu128"
    for tool, line in plan["commands"].items():
        for argv in powershell_commands(line):
            if "--index-url" in argv:  # the URL arrives as one argument, byte for byte
                assert argv[argv.index("--index-url") + 1] == plan["index_url"], (tool, line)
            if "--index-base" in argv:
                assert argv[argv.index("--index-base") + 1] == base, (tool, line)
    assert "&&" not in json.dumps(plan["commands"])


def test_conda_fallback_for_windows_chains_the_powershell_way(cli_cwd: Path) -> None:
    """A release conda-forge does not have: conda's pip installs the exact wheel."""
    plan = resolve_json("--torch", "==2.14.1", "--python", "3.12", *WINDOWS, "--no-gpu",
                        "--variant", "cpu", cwd=cli_cwd)
    (conda, pip) = powershell_commands(plan["commands"]["conda"])
    assert conda == ["conda", "install", "pip"]
    assert pip[:4] == ["python", "-m", "pip", "install"]
    assert pip[4:4 + len(plan["requirements"])] == plan["requirements"]


def test_commands_for_linux_stay_posix(cli_cwd: Path) -> None:
    plan = resolve_json(*T, *LINUX, "--no-gpu", "--variant", "cpu", "--index-base",
                        _NASTY_BASES[2], cwd=cli_cwd)
    pip = plan["commands"]["pip"]
    assert shlex.split(pip)[-2:] == ["--index-url", plan["index_url"]]
    assert "'\"'\"'" in pip  # POSIX's way to put a quote inside quotes


# --------------------------------------------------------------------------- the pixi line


def _pixi_parts(plan: dict[str, Any]) -> tuple[list[str], list[str]]:
    """The two commands of the pixi line: write pixi.toml, then ``pixi install``."""
    line = plan["commands"]["pixi"]
    if plan["platform"].startswith("win"):
        write, install = powershell_commands(line)
    else:
        tokens = shlex.split(line)
        cut = tokens.index("&&")
        write, install = tokens[:cut], tokens[cut + 1:]
    assert install == ["pixi", "install"]
    assert write[:6] == ["torchenv", "env", "--format", "pixi", "-o", "pixi.toml"]
    return write, install


#: a machine unlike any target below, and a project whose [tool.torchenv] asks for other things
_ELSEWHERE = {"TORCHENV_DRIVER_VERSION": "470.57.02", "TORCHENV_GPUS": "6.1",
              "TORCHENV_PYTHON": "3.10"}
_OTHER_PROJECT = '[tool.torchenv]\ntorch = "==2.5.1"\nvariant = "cpu"\npython = "3.10"\n'

PIXI_TARGETS = {
    "cu128": [*T, *LINUX, "--driver", "570.86.15", "--gpu", "8.6", "--variant", "cu128"],
    "pypi-cu126": [*T, *LINUX, "--driver", "570.86.15", "--gpu", "8.6", "--gpu", "8.9"],
    "cpu": [*T, *LINUX, "--no-gpu", "--variant", "cpu"],
    "rocm": [*T, *LINUX, "--rocm-arch", "gfx1100"],
    "cu128-no-gpu": [*T, *LINUX, "--no-gpu", "--variant", "cu128"],
    "mirror": [*T, *LINUX, "--no-gpu", "--variant", "cpu", "--no-torchaudio",
               "--index-base", "http://127.0.0.1:8080/my mirror/whl"],
    "win-cu128": [*T, *WINDOWS, "--driver", "572.16", "--gpu", "8.9"],
    "macos-arm64": [*T, "--platform", "macos-arm64", "--no-gpu"],
}


@pytest.mark.parametrize("target", list(PIXI_TARGETS))
def test_pixi_line_repeats_the_same_decision_anywhere(target: str, cli_cwd: Path,
                                                      tmp_path: Path) -> None:
    """The pixi line, run on another machine in another project, writes the same pixi.toml."""
    flags = PIXI_TARGETS[target]
    reference = json.loads(torchenv("env", "--format", "pixi", "--json", *flags,
                                    cwd=cli_cwd).stdout)
    plan = resolve_json(*flags, cwd=cli_cwd)
    write, _ = _pixi_parts(plan)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "pyproject.toml").write_text(_OTHER_PROJECT, encoding="utf-8")
    torchenv(*write[1:], cwd=elsewhere, env=clean_env(**_ELSEWHERE))
    written = (elsewhere / "pixi.toml").read_text(encoding="utf-8")
    assert written == reference["content"]
    assert reference["plan"]["torch"] == plan["torch"] == "2.7.1"


def test_pixi_line_control_without_the_decision_differs(cli_cwd: Path, tmp_path: Path) -> None:
    """The same check fails for a line that leaves the decision out: it is not vacuous."""
    flags = PIXI_TARGETS["cu128"]
    reference = json.loads(torchenv("env", "--format", "pixi", "--json", *flags,
                                    cwd=cli_cwd).stdout)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "pyproject.toml").write_text(_OTHER_PROJECT, encoding="utf-8")
    torchenv("env", "--format", "pixi", "-o", "pixi.toml", cwd=elsewhere,
             env=clean_env(**_ELSEWHERE))
    assert (elsewhere / "pixi.toml").read_text(encoding="utf-8") != reference["content"]
