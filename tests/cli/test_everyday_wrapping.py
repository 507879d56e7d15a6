"""Output that is copied or read by programs is never broken across lines.

Piped, redirected or in CI logs, no line is wrapped whatever ``COLUMNS`` says. On an 80-column
terminal, commands and paths are still single lines (the terminal folds them visually, and a copy
gives the whole command back), and table cells wrap between words, never inside one.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest
from tests.conftest import Cli

pytestmark = pytest.mark.slow

NARROW = {"COLUMNS": "80"}
WIN = ["--torch", "==2.5.1", "--driver", "550.54.15", "--gpu", "12.0", "--python", "3.12",
       "--platform", "win-amd64"]
#: a mirror with a long path, so every command is far wider than 80 columns
LONG_BASE = ("https://artifacts.example.internal/repository/pytorch-wheels-mirror/"
             "a-very-long-path-segment/whl")


def _long_dir(tmp_path: Path) -> Path:
    d = tmp_path / "a-project-directory-with-a-rather-long-name" / "and another level in it"
    d.mkdir(parents=True)
    return d


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An interpreter without torch, deep in a long path."""
    root = _long_dir(tmp_path_factory.mktemp("wrap"))
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root / "venv")],
                   check=True, timeout=120)
    return root / "venv" / "bin" / "python"


# --------------------------------------------------------------------------- not a terminal


def test_resolve_output_is_never_wrapped_when_piped(cli: Cli) -> None:
    r = cli(["resolve", *WIN, "--index-base", LONG_BASE, "--explain"], env=NARROW)
    assert r.returncode == 0, r.stderr
    doc = json.loads(cli(["resolve", *WIN, "--index-base", LONG_BASE, "--json"]).stdout)
    lines = r.stdout.splitlines()
    for tool, command in doc["commands"].items():
        assert any(command in (line.strip(), line.split(None, 1)[-1]) for line in lines), (
            tool, r.stdout)
    for text in (*doc["reasons"], *doc["warnings"]):
        assert any(line.endswith(text) for line in lines), (text, r.stdout)
    assert max(len(line) for line in lines) > 80  # the output did need more than 80 columns


def test_doctor_fix_commands_are_never_wrapped_when_piped(bare_python: Path, cli: Cli) -> None:
    r = cli(["doctor", "--python", str(bare_python)], env=NARROW)
    doc = json.loads(cli(["doctor", "--json", "--python", str(bare_python)]).stdout)
    fixes = [f["fix"] for f in doc["findings"] if f["fix"]]
    titles = [f["title"] for f in doc["findings"]]
    assert fixes and any(str(bare_python) in fix for fix in fixes), doc
    lines = r.stdout.splitlines()
    for fix in fixes:
        assert f"  fix: {fix}" in lines, (fix, r.stdout)
    for title in titles:
        assert any(line.endswith(title) for line in lines), (title, r.stdout)


def test_matrix_show_rows_are_never_wrapped_when_piped(cli: Cli) -> None:
    r = cli(["matrix", "show"], env=NARROW)
    assert r.returncode == 0, r.stderr
    doc = json.loads(cli(["matrix", "show", "--json"]).stdout)
    rows = [line for line in r.stdout.splitlines() if line.startswith("│")]
    assert len(rows) == len(doc["releases"])  # one line per release
    for line, release in zip(rows, doc["releases"]):
        cells = [c.strip() for c in line.strip("│").split("│")]
        assert cells[0] == release["torch"] and cells[1] == release["released"]
        names = [v["name"] for v in release["variants"]]
        assert [v.rstrip("?") for v in cells[6].split()] == names


def test_detect_paths_are_never_wrapped_when_piped(tmp_path: Path, cli: Cli) -> None:
    python = str(_long_dir(tmp_path) / "venv" / "bin" / "python3.12")
    host = {"platform": "linux-x86_64", "python": "3.12", "glibc": "2.35", "nvidia": None,
            "rocm": None, "xpu": None, "mps": False, "torch": None,
            "interpreter": {"version": "3.12", "executable": python},
            "warnings": [f"could not read {python}.so: a warning about a long path"]}
    (tmp_path / "host.json").write_text(json.dumps(host))
    r = cli(["detect", "--host", str(tmp_path / "host.json")], env=NARROW)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert any(line.endswith(python) for line in lines), r.stdout
    assert any(line.endswith(host["warnings"][0]) for line in lines), r.stdout


# --------------------------------------------------------------------------- an 80-column terminal


def _on_a_terminal(args: Sequence[str], columns: int = 80,
                   env: Mapping[str, str] | None = None) -> str:
    """What ``torchenv ARGS`` writes to a terminal ``columns`` wide, without colour codes."""
    import fcntl
    import pty
    import struct
    import termios

    from hermetic import hermetic

    primary, secondary = pty.openpty()
    fcntl.ioctl(secondary, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    child_env = {k: v for k, v in os.environ.items()
                 if not k.startswith("TORCHENV_") and k != "COLUMNS"}
    child_env.update(TORCHENV_NO_OVERLAY="1", **(env or {}))
    hermetic(child_env)
    try:
        proc = subprocess.Popen([sys.executable, "-m", "torchenv", *args], stdin=secondary,
                                stdout=secondary, stderr=secondary, env=child_env)
    finally:
        os.close(secondary)
    chunks = []
    try:
        while True:
            try:
                data = os.read(primary, 65536)
            except OSError:  # the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
    finally:
        os.close(primary)
        proc.wait(timeout=60)
    text = b"".join(chunks).decode("utf-8", "replace").replace("\r\n", "\n")
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\]8;[^\x1b]*\x1b\\", "", text)


def test_doctor_fix_is_one_line_on_an_80_column_terminal(bare_python: Path, cli: Cli) -> None:
    doc = json.loads(cli(["doctor", "--json", "--python", str(bare_python)]).stdout)
    fix = next(f["fix"] for f in doc["findings"] if f["fix"] and str(bare_python) in f["fix"])
    assert len(fix) > 80
    out = _on_a_terminal(["doctor", "--python", str(bare_python)])
    assert f"fix: {fix}\n" in out, out


#: an old Windows driver: the pick (2.5.1 cu118) is older than builds whose arch list is not
#: known, and the reason naming one of them gives the flags that take it
# a Volta card held to CUDA 12.9: 2.8.0 cu129, with the newer cu129 builds whose lists are not
# known named in a reason that carries the flags to take them
VOLTA_CU129 = ["--driver", "580.65.06", "--gpu", "7.0", "--cuda", "12.9", "--python", "3.12",
               "--platform", "linux-x86_64"]


def test_resolve_commands_and_flags_are_one_line_on_an_80_column_terminal(cli: Cli) -> None:
    flags = [*VOLTA_CU129, "--index-base", LONG_BASE]
    doc = json.loads(cli(["resolve", *flags, "--json"]).stdout)
    out = _on_a_terminal(["resolve", *flags])
    for command in doc["commands"].values():
        assert f"{command}\n" in out, (command, out)
    suggestions = [r for r in doc["reasons"] if "--torch ==" in r]
    assert suggestions, doc["reasons"]
    for reason in suggestions:
        assert f"{reason}\n" in out, (reason, out)


def test_matrix_cells_never_break_inside_a_word_on_an_80_column_terminal(cli: Cli) -> None:
    doc = json.loads(cli(["matrix", "show", "--json", "--torch", "2.7.1"]).stdout)
    [release] = doc["releases"]
    out = _on_a_terminal(["matrix", "show", "--torch", "2.7.1"])
    words = re.findall(r"[^\s│┃]+", out)
    for name in (release["released"], *(v["name"] for v in release["variants"])):
        assert name in words or f"{name}?" in words, (name, out)
    assert "conda-forge" in words
    assert "'torchenv matrix show --release X'" in out  # the hint names a command: one line
