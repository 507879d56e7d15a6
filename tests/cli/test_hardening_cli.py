"""Bad input from every source (flags, variables, host files, overlays, pyproject.toml, the
prompt) ends in one line naming the value and what to do: exit 2, no traceback, nothing half
written, and with --json one error document on stdout."""

from __future__ import annotations

import json
import os
import platform
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.cli.cli_helpers import assert_clean_exit, json_documents, run_limited
from tests.conftest import Cli

from hermetic import hermetic

THIS_PYTHON = f"{sys.version_info.major}.{sys.version_info.minor}"
GPU_HOST = ["--driver", "570.86.15", "--gpu", "8.6", "--platform", "linux-x86_64",
            "--python", "3.12"]


def _error(r: subprocess.CompletedProcess[str], *named: str) -> dict[str, object]:
    """Exit 2 with the named values on the error line and in the one JSON document."""
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert_clean_exit(r, as_json=True)
    (doc,) = json_documents(r.stdout)
    for text in named:
        assert text in r.stderr and text in str(doc["error"]) + str(doc["hint"]), (text, r.stderr)
    return doc


# --------------------------------------------------------------------------- flags and variables


@pytest.mark.parametrize(("args", "named"), [
    (["--variant", "cu999"], ("'cu999'", "known variants: cpu, ", "cu128")),
    (["--cuda", "99.9"], ("CUDA 99.9", "known CUDA versions: ", "12.8")),
], ids=["variant", "cuda"])
def test_a_variant_or_cuda_no_release_has_is_bad_input_listing_the_known_ones(
    args: list[str], named: tuple[str, ...], cli: Cli) -> None:
    _error(cli(["resolve", "--json", *GPU_HOST, *args]), *named)


def test_a_variant_from_pyproject_that_no_release_has_names_the_file(
        tmp_path: Path, cli: Cli) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.torchenv]\nvariant = "cu999"\n')
    r = cli(["resolve", "--json", "--no-gpu"], cwd=tmp_path)
    _error(r, "pyproject.toml [tool.torchenv] variant", "'cu999'")


def test_a_bad_variant_from_pyproject_names_the_key_not_the_flag(tmp_path: Path, cli: Cli) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.torchenv]\nvariant = "bogus"\n')
    r = cli(["resolve", "--json", "--no-gpu"], cwd=tmp_path)
    doc = _error(r, "[tool.torchenv] variant: 'bogus' is not a variant")
    assert "--variant" not in str(doc["error"]) and "--variant" not in r.stderr
    flag = cli(["resolve", "--json", "--no-gpu", "--variant", "bogus"], cwd=tmp_path)
    assert _error(flag, "--variant: 'bogus' is not a variant")["error"] == (
        "--variant: 'bogus' is not a variant")  # the flag wins over the file, and is named


@pytest.mark.parametrize(("args", "env", "project", "named"), [
    (["--python", "banana"], {}, "", "--python: 'banana'"),
    ([], {"TORCHENV_PYTHON": "banana"}, "", "TORCHENV_PYTHON: 'banana'"),
    ([], {}, 'python = "banana"', "pyproject.toml [tool.torchenv] python: 'banana'"),
    ([], {"TORCHENV_PLATFORM": "bogus"}, "", "TORCHENV_PLATFORM: 'bogus' is not a platform"),
    (["--platform", "bogus"], {}, "", "--platform: 'bogus' is not a platform"),
    ([], {"TORCHENV_DRIVER_VERSION": "x"}, "", "TORCHENV_DRIVER_VERSION: 'x' is not an NVIDIA"),
    ([], {"TORCHENV_INDEX_BASE": "ftp://x"}, "", "TORCHENV_INDEX_BASE: 'ftp://x' is not an"),
    (["--index-base", "ftp://x"], {}, "", "--index-base: 'ftp://x' is not an"),
], ids=["python-flag", "python-variable", "python-pyproject", "platform-variable",
        "platform-flag", "driver-variable", "index-base-variable", "index-base-flag"])
@pytest.mark.parametrize("command", [["resolve"], ["install", "--dry-run"]],
                         ids=["resolve", "install"])
def test_a_bad_value_names_the_flag_variable_or_key_that_gave_it(
        args: list[str], env: dict[str, str], project: str, named: str, tmp_path: Path,
        cli: Cli, command: list[str]) -> None:
    (tmp_path / "pyproject.toml").write_text(f"[tool.torchenv]\n{project}\n")
    r = cli([*command, "--json", *args], env=env, cwd=tmp_path)
    error = str(_error(r, named)["error"])
    assert error.startswith(named)
    origin = named.split(": ")[0]
    assert error.count(origin) == 1, error  # named once, by the command line


@pytest.mark.parametrize(("env", "named"), [
    ({"TORCHENV_GPUS": ",,,"}, ("TORCHENV_GPUS", "',,,'")),
    ({"TORCHENV_GPUS": "8.6,,9.0"}, ("TORCHENV_GPUS", "'8.6,,9.0'")),
    ({"TORCHENV_NO_OVERLAY": "banana"}, ("TORCHENV_NO_OVERLAY", "'banana'")),
    ({"TORCHENV_INDEX_BASE": "javascript:alert(1)"}, ("TORCHENV_INDEX_BASE",)),
    ({"TORCHENV_PYTHON": "banana"}, ("TORCHENV_PYTHON", "'banana'")),
], ids=["gpus-commas", "gpus-empty-entry", "no-overlay", "index-base", "python"])
def test_a_bad_variable_is_bad_input_naming_it(env: dict[str, str],
                                               named: tuple[str, ...], cli: Cli) -> None:
    _error(cli(["resolve", "--json"], env=env), *named)


@pytest.mark.parametrize("described", [
    ["--rocm-arch", "gfx1100"], ["--gpu", "8.6"], ["--driver", "570.86.15"],
], ids=["rocm-arch", "gpu", "driver"])
def test_no_gpu_with_a_flag_that_describes_one_is_a_contradiction(
        described: list[str], cli: Cli) -> None:
    _error(cli(["resolve", "--json", "--no-gpu", *described]),
           "--no-gpu conflicts with", described[0])


def test_an_empty_variable_means_unset(cli: Cli) -> None:
    plain = cli(["resolve", "--json"])
    names = ("TORCHENV_INDEX_BASE", "TORCHENV_DRIVER_VERSION", "TORCHENV_PLATFORM",
             "TORCHENV_PYTHON", "TORCHENV_NO_OVERLAY", "TORCHENV_PROBE_TIMEOUT",
             "TORCHENV_MATRIX_OVERLAY")
    empty = cli(["resolve", "--json"], env=dict.fromkeys(names, ""))
    assert plain.returncode == empty.returncode == 0, empty.stderr
    keys = ("torch", "variant", "index_url", "python", "platform")
    first, second = json.loads(plain.stdout), json.loads(empty.stdout)
    assert [first[k] for k in keys] == [second[k] for k in keys]


@pytest.mark.parametrize(("value", "read"), [
    ("0", True), ("false", True), ("off", True), ("", True), ("1", False), ("yes", False),
    ("ON", False),
])
def test_only_a_yes_value_of_no_overlay_ignores_the_overlay(tmp_path: Path, value: str,
                                                            read: bool, cli: Cli) -> None:
    overlay = tmp_path / "overlay.yaml"
    overlay.write_text("releases: 3\n")  # broken, so reading it shows on stderr
    r = cli(["resolve", "--json"], env={"TORCHENV_MATRIX_OVERLAY": str(overlay),
                                        "TORCHENV_NO_OVERLAY": value})
    assert r.returncode == 0, r.stderr
    assert ("matrix overlay ignored" in r.stderr) is read


def test_torchenv_python_may_name_an_interpreter_as_the_flag_may(cli: Cli) -> None:
    via_env = cli(["resolve", "--json", "--no-gpu"],
                  env={"TORCHENV_PYTHON": sys.executable})
    via_flag = cli(["resolve", "--json", "--no-gpu", "--python", sys.executable])
    assert via_env.returncode == via_flag.returncode == 0, via_env.stderr
    assert json.loads(via_env.stdout)["python"] == json.loads(via_flag.stdout)["python"] \
        == THIS_PYTHON


# --------------------------------------------------------------------------- index bases


@pytest.mark.parametrize("base", [
    "javascript:alert(1)", "https://mirror.example/whl\nhttps://evil.example",
    "https://mirror.example/\twhl", " https://mirror.example/whl", "https://", "file://",
    "ftp://mirror.example/whl", "http://[::1/whl",
], ids=["javascript", "newline", "tab", "leading-space", "no-host", "no-path", "ftp", "ipv6"])
@pytest.mark.parametrize("command", [["resolve", "--json", "--no-gpu"],
                                     ["matrix", "ci", "--json", "--max-rows", "1"]],
                         ids=["resolve", "matrix-ci"])
def test_an_index_base_that_is_not_a_usable_url_is_bad_input(base: str,
                                                             command: list[str], cli: Cli) -> None:
    _error(cli([*command, "--index-base", base]), "--index-base", repr(base))


def test_a_plain_http_index_base_is_used_with_a_warning(cli: Cli) -> None:
    base = "http://mirror.example/whl"
    r = cli(["resolve", "--json", "--no-gpu", "--index-base", base])
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["index_url"].startswith(base)
    assert any("plain HTTP" in w and base in w for w in doc["warnings"])
    assert "torchenv: warning:" in r.stderr and "plain HTTP" in r.stderr
    ci = cli(["matrix", "ci", "--max-rows", "1", "--index-base", base])
    assert ci.returncode == 0 and "plain HTTP" in ci.stderr
    local = cli(["resolve", "--json", "--no-gpu", "--index-base",
                     "http://127.0.0.1:8080/my mirror/whl"])
    assert local.returncode == 0 and "plain HTTP" not in local.stderr + local.stdout


# --------------------------------------------------------------------------- output files


def test_matrix_ci_does_not_overwrite_a_file_without_force(tmp_path: Path, cli: Cli) -> None:
    target = tmp_path / "matrix.json"
    target.write_text("keep")
    r = cli(["matrix", "ci", "--max-rows", "2", "-o", str(target)])
    assert r.returncode == 2 and "already exists" in r.stderr and "--force" in r.stderr
    assert target.read_text() == "keep"
    r = cli(["matrix", "ci", "--max-rows", "2", "-o", str(target), "--force"])
    assert r.returncode == 0, r.stderr
    assert len(json.loads(target.read_text())["include"]) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["matrix.json"]


def test_matrix_ci_json_to_a_file_says_on_stdout_what_it_wrote(tmp_path: Path, cli: Cli) -> None:
    """As ``env -o FILE --json`` does: the rows go to the file, one document to stdout."""
    target = tmp_path / "rows.json"
    r = cli(["matrix", "ci", "--max-rows", "3", "--json", "-o", str(target)])
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == {"written": str(target), "format": "json", "rows": 3}
    assert len(json.loads(target.read_text())) == 3
    assert "wrote" not in r.stderr


@pytest.mark.parametrize("command", [["env", "--format", "requirements", "--no-gpu"],
                                     ["matrix", "ci", "--max-rows", "1"]],
                         ids=["env", "matrix-ci"])
def test_dash_as_the_output_file_is_stdout(tmp_path: Path, command: list[str], cli: Cli) -> None:
    r = cli([*command, "-o", "-"], cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "torch==" in r.stdout
    assert list(tmp_path.iterdir()) == []


# --------------------------------------------------------------------------- files


def _deeply_nested(tmp_path: Path) -> Path:
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    return path


def _nested_in_a_profile(tmp_path: Path) -> Path:
    path = tmp_path / "nested.json"
    path.write_text('{"platform": "linux-x86_64", "python": "3.12", "glibc": '
                    + "[" * 900 + "]" * 900 + "}")
    return path


@pytest.mark.parametrize(("make", "named"), [
    (lambda tmp: Path("/dev/zero"), "larger than"),
    (lambda tmp: tmp, "is a directory"),
    (_deeply_nested, "nested too deeply"),
    (_nested_in_a_profile, "glibc: expected a string"),
], ids=["dev-zero", "directory", "100000-nested-lists", "900-nested-lists-in-a-profile"])
@pytest.mark.parametrize("command", ["resolve", "detect"])
def test_a_host_file_that_is_not_a_profile_is_bad_input(tmp_path: Path, make: object,
                                                        named: str, command: str) -> None:
    assert callable(make)
    path = make(tmp_path)
    r = run_limited([command, "--json", "--host", str(path)], timeout=30)
    _error(r, str(path), named)


@pytest.mark.parametrize(("nvidia", "named"), [
    ({"driver_version": "570.86.15", "cuda_driver_version": "[/e]"},
     "nvidia.cuda_driver_version: '[/e]'"),
    ({"driver_version": "570.86.15", "gpus": [{"index": 0, "name": None,
                                               "compute_capability": 8.6}]},
     "nvidia.gpus[0].compute_capability: expected a string, got 8.6"),
    ({"driver_version": "570.86.15", "gpus": "8.6"}, "nvidia.gpus: expected a list"),
    ({"source": ["nvml"]}, "nvidia.source: expected a string"),
], ids=["cuda-version", "cc-number", "gpus-string", "source-list"])
def test_a_host_file_fact_of_the_wrong_kind_is_bad_input_naming_the_key(
    tmp_path: Path, nvidia: dict[str, object], named: str, cli: Cli) -> None:
    host = tmp_path / "node.json"
    host.write_text(json.dumps({"platform": "linux-x86_64", "python": "3.12",
                                "nvidia": nvidia}))
    for command in ("resolve", "detect"):
        _error(cli([command, "--json", "--host", str(host)]), named)


def test_a_host_file_python_that_is_not_a_version_is_bad_input(tmp_path: Path, cli: Cli) -> None:
    host = tmp_path / "node.json"
    host.write_text(json.dumps({"platform": "linux-x86_64", "python": "banana"}))
    _error(cli(["resolve", "--json", "--host", str(host)]), "python: 'banana'")


def test_markup_in_printed_values_is_printed_as_text(tmp_path: Path, cli: Cli) -> None:
    host = tmp_path / "node.json"
    host.write_text(json.dumps({
        "platform": "linux-x86_64", "python": "3.12", "container": "[bold]pod",
        "interpreter": {"version": "3.12", "implementation": "[/b]",
                        "executable": "/opt/[/a]/bin/python", "full_version": "3.12.1[/c]",
                        "env_kind": "[/d]"},
        "nvidia": {"driver_version": "570.86.15", "source": "[/f]",
                   "gpus": [{"index": 0, "name": "[/g] GPU", "compute_capability": "8.6"}],
                   "cuda_visible_devices": "[/h]"},
        "rocm": {"version": "[/i]", "gfx_targets": ["gfx90a"], "source": "[/j]"},
        "xpu": {"devices": ["[/k]"]},
        "torch": {"version": "2.7.1", "variant": "[/l]", "torchvision": "[/m]"},
        "warnings": ["[/o] could not be read"]}))
    r = cli(["detect", "--host", str(host)])
    assert r.returncode == 0, r.stderr
    for text in ("[bold]pod", "/opt/[/a]/bin/python", "3.12.1[/c]", "([/b], [/d])", "(from [/f])",
                 "[/g] GPU", "[/i]", "[/k]", "([/l])", "torchvision [/m]", "[/o] could not"):
        assert text in r.stdout, (text, r.stdout)


def test_a_pyproject_without_a_tool_table_is_ignored(tmp_path: Path, cli: Cli) -> None:
    (tmp_path / "pyproject.toml").write_text('tool = "torchenv"\n')
    r = cli(["resolve", "--json", "--no-gpu"], cwd=tmp_path)
    assert r.returncode == 0, r.stderr


# --------------------------------------------------------------------------- overlays


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def _alias_bomb(tmp_path: Path) -> Path:
    lines = ["note:", '  - &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"  - &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 10)]
    return _write(tmp_path / "bomb.yaml", "\n".join([*lines, "variant_sets:",
                                                     "  - releases: *a9", ""]))


@pytest.mark.parametrize(("make", "named"), [
    (lambda tmp: _write(tmp / "self.yaml", "variant_sets:\n  - releases: &a [*a]\n"),
     "self-referencing alias"),
    (lambda tmp: _write(tmp / "self.yaml", "releases:\n  - &r {torch: '9.9.9', x: [*r]}\n"),
     "self-referencing alias"),
    (_alias_bomb, "500,000 YAML nodes"),
    (lambda tmp: _write(tmp / "deep.yaml", "note: " + "[" * 100_000 + "]" * 100_000 + "\n"),
     "deep.yaml"),
    (lambda tmp: Path("/dev/zero"), "larger than 8 MiB"),
    (lambda tmp: tmp, "is a directory"),
], ids=["self-alias-list", "self-alias-mapping", "alias-bomb", "deep", "dev-zero", "directory"])
def test_an_overlay_that_cannot_be_built_safely_is_reported_and_ignored(
    tmp_path: Path, make: object, named: str
) -> None:
    assert callable(make)
    overlay = make(tmp_path)
    started = time.monotonic()
    r = run_limited(["resolve", "--json", *GPU_HOST], env={"TORCHENV_MATRIX_OVERLAY": str(overlay)},
                    timeout=30)
    assert time.monotonic() - started < 20
    assert r.returncode == 0, r.stderr[-2000:]
    assert_clean_exit(r, as_json=True)
    assert "matrix overlay ignored" in r.stderr and named in r.stderr, r.stderr
    assert json.loads(r.stdout)["torch"]
    check = run_limited(["matrix", "check", "--overlay", str(overlay)], timeout=30)
    assert check.returncode == 2 and named in check.stderr and "Traceback" not in check.stderr


# --------------------------------------------------------------------------- install


def test_install_refuses_a_pyproject_python_other_than_its_interpreter(
        tmp_path: Path, cli: Cli) -> None:
    other = "3.8" if THIS_PYTHON != "3.8" else "3.9"
    (tmp_path / "pyproject.toml").write_text(f'[tool.torchenv]\npython = "{other}"\n')
    r = cli(["install", "--dry-run", "--json"], cwd=tmp_path)
    _error(r, "pyproject.toml [tool.torchenv] python", other, f"Python {THIS_PYTHON}")
    ok = cli(["install", "--dry-run", "--json", "--python", THIS_PYTHON], cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["plan"]["python"] == THIS_PYTHON


@pytest.mark.parametrize(("env", "named"), [
    ({"TORCHENV_PYTHON": "3.8" if THIS_PYTHON != "3.8" else "3.9"}, "TORCHENV_PYTHON"),
    ({"TORCHENV_PLATFORM": "win-amd64" if platform.system() != "Windows" else "linux"},
     "TORCHENV_PLATFORM"),
    ({"TORCHENV_PYTHON": "/usr/bin/no-such-python"}, "TORCHENV_PYTHON"),
], ids=["python", "platform", "python-path"])
def test_install_refuses_a_variable_that_describes_another_machine(env: dict[str, str],
                                                                   named: str, cli: Cli) -> None:
    _error(cli(["install", "--dry-run", "--json"], env=env), f"install: {named}")


def _install_at_a_terminal(extra: list[str], keys: bytes) -> tuple[int, str, str]:
    """``torchenv install`` with a terminal as stdin; ``keys`` are typed once it asks."""
    master, slave = pty.openpty()
    env = {"TORCHENV_NO_OVERLAY": "1"}
    with subprocess.Popen([sys.executable, "-m", "torchenv", "install", "--no-gpu", *extra],
                          stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          env=_child_env(env)) as proc:
        os.close(slave)
        try:
            deadline = time.monotonic() + 60
            assert proc.stderr is not None
            seen = b""
            while b"[y/N]" not in seen and time.monotonic() < deadline:
                ready, _, _ = select.select([proc.stderr], [], [], 1)
                if ready:
                    chunk = os.read(proc.stderr.fileno(), 4096)
                    if not chunk:
                        break
                    seen += chunk
            os.write(master, keys)
            out, err = proc.communicate(timeout=60)
        finally:
            os.close(master)
    return proc.returncode, out.decode(), (seen + err).decode()


def _child_env(extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCHENV_")}
    env.update(extra)
    return dict(hermetic(env))


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")
def test_end_of_input_at_the_prompt_installs_nothing() -> None:
    code, out, err = _install_at_a_terminal([], b"\x04")  # Ctrl-D
    assert code == 1 and "no answer at the prompt; nothing installed" in err
    assert "Traceback" not in err and out == ""
    code, out, err = _install_at_a_terminal(["--json"], b"\x04")
    assert code == 1 and "Traceback" not in err
    (doc,) = json_documents(out)
    assert doc["exit_code"] == 1 and "nothing installed" in doc["error"]
    code, out, err = _install_at_a_terminal(["--json"], b"n\n")  # the prompt is on stderr
    assert code == 1 and "nothing installed" in err
    (doc,) = json_documents(out)
    assert doc["ran"] is False and doc["plan"]["torch"]


def test_install_with_stdin_closed_asks_for_yes() -> None:
    r = run_limited(["install", "--no-gpu", "--json"], stdin=subprocess.DEVNULL)
    _error(r, "no terminal", "--yes")
    closed = subprocess.run(
        [sys.executable, "-c", "import os, subprocess, sys; os.close(0); "
         "sys.exit(subprocess.run([sys.executable, '-m', 'torchenv', 'install', '--no-gpu'], "
         "stdin=None).returncode)"],
        capture_output=True, text=True, env=_child_env({"TORCHENV_NO_OVERLAY": "1"}),
        timeout=60, check=False)
    assert closed.returncode == 2, closed.stderr
    assert "no terminal" in closed.stderr and "Traceback" not in closed.stderr


# --------------------------------------------------------------------------- usage errors


@pytest.mark.parametrize(("args", "prog"), [
    (["resolve", "--bogus"], "torchenv resolve"),
    (["detect", "--bogus"], "torchenv detect"),
    (["env"], "torchenv env"),
    (["matrix"], "torchenv matrix"),
    (["matrix", "ci", "--bogus"], "torchenv matrix ci"),
    (["matrix", "show", "--torch"], "torchenv matrix show"),
    (["nosuchcommand"], "torchenv"),
], ids=["resolve", "detect", "env-missing-format", "matrix-missing-action", "matrix-ci",
        "matrix-show-missing-value", "unknown-command"])
def test_a_usage_error_points_at_the_commands_own_help(
        args: list[str], prog: str, cli: Cli) -> None:
    r = cli([*args, "--json"])
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert f"hint: see '{prog} --help'" in r.stderr, r.stderr


HUGE = "2." + "9" * 5000


@pytest.mark.parametrize(("args", "env", "pyproject"), [
    (["resolve", "--no-gpu", "--torch", f"=={HUGE}"], {}, None),
    (["resolve", "--no-gpu", "--python", HUGE], {}, None),
    (["matrix", "update", "--check", "--since", HUGE], {}, None),
    (["resolve", "--no-gpu"], {"TORCHENV_DRIVER_VERSION": HUGE}, None),
    (["resolve", "--no-gpu"], {}, f'[tool.torchenv]\ntorch = "=={HUGE}"\n'),
], ids=["--torch", "--python", "--since", "variable", "pyproject"])
def test_a_five_thousand_digit_version_is_bad_input_shown_clipped(
        tmp_path: Path, args: list[str], env: dict[str, str], pyproject: str | None) -> None:
    if pyproject is not None:
        (tmp_path / "pyproject.toml").write_text(pyproject, encoding="utf-8")
    r = run_limited([*args, "--json"], env=env, cwd=str(tmp_path), timeout=30)
    assert r.returncode == 2, (r.returncode, r.stderr[-400:])
    assert_clean_exit(r, as_json=True)
    (doc,) = json_documents(r.stdout)
    for text in (r.stderr, str(doc["error"])):
        assert "2.9999999999" in text, text[:300]  # the value is named, and shown clipped
        assert "more characters]" in text or "...'" in text, text[:300]
        assert len(text) < 1000, len(text)
