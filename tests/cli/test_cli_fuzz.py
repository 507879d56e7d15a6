"""Generated input for the real CLI, in child processes under a memory limit.

Flag values, TORCHENV_* variables, host files and overlays are drawn from what users type
(valid values, near misses, markup, control characters, huge and deeply nested documents,
YAML alias bombs); whatever the input, the run keeps the contract of CLI.md: an exit code it
defines, no traceback, with --json exactly one JSON document on stdout, finished in time, and no
process of its session left running.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.cli.cli_helpers import assert_clean_exit, run_limited, session_processes

# argv and environ cannot hold NUL or lone surrogates; everything else is fair game
_TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
                max_size=12)
_NEAR = ["", " ", "-", "--json", "[/a]", "[bold]x", "\n", "\t", "é", "9" * 30, "-1", "0", "1e9",
         "nan", "x" * 300]


def _values(*valid: str) -> st.SearchStrategy[str]:
    return st.one_of(st.sampled_from(valid), st.sampled_from(_NEAR), _TEXT)


_TARGET = {
    "--torch": _values("==2.7.*", ">=2.5,<2.9", "2.7.1", "2.7", ">>2", "==99"),
    "--variant": _values("auto", "cpu", "cu126", "cu128", "rocm6.3", "xpu", "cu999", "cuda12"),
    "--cuda": _values("12.8", "11.8", "99.9", "12", "12.8.1"),
    "--python": _values("3.12", "3.13t", "cp311", "3.8", "2.7", "banana", "/no/such/python"),
    "--platform": _values("linux-x86_64", "win-amd64", "macos-arm64", "linux", "solaris"),
    "--driver": _values("570.86.15", "550.54.15", "390.116", "abc", "999.99.99"),
    "--gpu": _values("8.6", "sm_90a", "9.0", "99.9", "sm_999", "8.x"),
    "--rocm-arch": _values("gfx90a", "gfx1100", "gfx0", "GFX942:sramecc+"),
    "--glibc": _values("2.17", "2.35", "3.0", "2.x"),
    "--index-base": _values("https://mirror.example/whl", "http://mirror.example/whl",
                            "file:///srv/whl", "javascript:alert(1)", "https://a\nb"),
}
_HOST_ONLY = ("--python", "--platform", "--driver", "--gpu", "--rocm-arch", "--glibc")
_CI = {
    "--torch": _TARGET["--torch"],
    "--python": _values(">=3.10", "3.11,3.12,3.13t", "3.x", ">=banana"),
    "--variants": _values("cpu,cu126", "rocm6.3", "cu999", ",,"),
    "--accelerators": _values("cpu,cuda", "rocm,xpu", "tpu"),
    "--platforms": _values("linux-x86_64", "ubuntu-latest", "macos", "solaris"),
    "--runner": _values("linux-x86_64=gpu", "win-amd64=", "solaris=x", "=x"),
    "--strategy": _values("all", "latest-patch", "edges", "random"),
    "--max-rows": _values("1", "5", "0", "-3", "many"),
    "--format": _values("github", "gitlab", "json", "xml"),
    "--index-base": _TARGET["--index-base"],
}
_ENV = {
    "TORCHENV_DRIVER_VERSION": _values("570.86.15", "abc"),
    "TORCHENV_GPUS": _values("8.6", "8.6,9.0", ",,,", "8.6,,9.0"),
    "TORCHENV_PLATFORM": _values("linux-x86_64", "win-amd64", "solaris"),
    "TORCHENV_PYTHON": _values("3.12", "3.13t", "banana", "/no/such/python"),
    "TORCHENV_INDEX_BASE": _TARGET["--index-base"],
    "TORCHENV_NO_OVERLAY": _values("0", "1", "true", "off", "banana"),
    "TORCHENV_PROBE_TIMEOUT": _values("1", "0", "5", "-1", "1e9"),
    "TORCHENV_NVML_LIBRARY": _values("/nonexistent/libnvidia-ml.so.1", "/", "/dev/null",
                                     "/etc/passwd"),
    "TORCHENV_NVIDIA_SMI": _values("/nonexistent/nvidia-smi", "/", "/bin/true", "/bin/false",
                                   "/dev/null"),
}

_JSON_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70),
                          st.floats(allow_nan=True), _TEXT,
                          st.sampled_from(["8.6", "570.86.15", "3.12", "linux-x86_64", "12.8",
                                           "gfx90a", "[/a]"]))
_JSON = st.recursive(_JSON_SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(_TEXT, inner, max_size=3)), max_leaves=8)


def _maybe(**keys: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({}, optional=keys)


_GPU = _maybe(index=_JSON, name=_JSON, compute_capability=st.one_of(_TARGET["--gpu"], _JSON),
              memory_mib=_JSON, uuid=_JSON, mig_mode=_JSON)
_HOST_DOC = st.fixed_dictionaries(
    {"platform": st.one_of(_TARGET["--platform"], _JSON),
     "python": st.one_of(_TARGET["--python"], _JSON)},
    optional={
        "glibc": st.one_of(_TARGET["--glibc"], _JSON), "mps": _JSON, "wsl": _JSON,
        "warnings": _JSON, "sources": _JSON, "container": _JSON,
        "nvidia": st.one_of(_JSON, _maybe(
            driver_version=st.one_of(_TARGET["--driver"], _JSON),
            cuda_driver_version=st.one_of(_TARGET["--cuda"], _JSON), source=_JSON,
            gpus=st.one_of(_JSON, st.lists(_GPU, max_size=3)), visible=_JSON,
            cuda_visible_devices=_JSON)),
        "rocm": st.one_of(_JSON, _maybe(version=_JSON, source=_JSON,
                                        gfx_targets=st.lists(_TARGET["--rocm-arch"],
                                                             max_size=2))),
        "xpu": st.one_of(_JSON, _maybe(devices=_JSON, level_zero=_JSON)),
        "torch": st.one_of(_JSON, _maybe(version=_JSON, variant=_JSON, torchvision=_JSON)),
        "interpreter": st.one_of(_JSON, _maybe(version=_TARGET["--python"], executable=_JSON,
                                               full_version=_JSON, implementation=_JSON)),
    })
_HOST_FILE = st.one_of(
    _HOST_DOC.map(json.dumps),
    st.just("[" * 50_000 + "]" * 50_000),
    st.just('{"platform": "linux-x86_64", "python": "3.12", "x": ' + "[" * 900 + "]" * 900
            + "}"),
    st.binary(max_size=64).map(lambda b: b.decode("latin-1")),
    _TEXT,
)


def _alias_bomb(levels: int) -> str:
    lines = ["note:", "  - &a0 [" + ", ".join(["lol"] * 9) + "]"]
    lines += [f"  - &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, levels)]
    return "\n".join([*lines, "variant_sets:", f"  - releases: *a{levels - 1}", ""])


_OVERLAY = st.one_of(
    st.integers(3, 10).map(_alias_bomb),
    st.sampled_from([
        "variant_sets:\n  - releases: &a [*a]\n",
        "releases:\n  - &r {torch: '9.9.9', x: [*r]}\n",
        "&a [*a]\n",
        "note: " + "[" * 20_000 + "]" * 20_000 + "\n",
        "releases: 3\n",
        "releases:\n  - torch: '[/a]'\n",
        "sources:\n  - {id: x, title: '[/a]', url: 'https://example.com/[/b]'}\n",
        ": : :\n",
    ]),
    _JSON.map(json.dumps),
    _TEXT,
)


@st.composite
def _invocation(draw: st.DrawFn) -> tuple[list[str], dict[str, str], str | None, str | None]:
    command = draw(st.sampled_from(["resolve", "detect", "env", "matrix show", "matrix ci"]))
    args = command.split()
    if command == "env":
        args += ["--format", draw(_values("environment.yml", "requirements", "pyproject",
                                          "pixi", "toml"))]
    if command == "matrix show":
        flags = {"--torch": _TARGET["--torch"],
                 "--release": _values("2.7.1", "2.15.0", "9.9.9", "[/a]")}
    elif command == "matrix ci":
        flags = _CI
    elif command == "detect":
        flags = {k: _TARGET[k] for k in _HOST_ONLY}
    else:  # resolve and env describe a target the same way
        flags = _TARGET
    for flag in draw(st.lists(st.sampled_from(sorted(flags)), max_size=4, unique=True)):
        value = draw(flags[flag])
        # both spellings: `--flag=VALUE` keeps a value that starts with '-' a value
        args += [f"{flag}={value}"] if draw(st.booleans()) else [flag, value]
    if command != "matrix show" and draw(st.booleans()):
        args.append("--no-gpu")
    host = (draw(st.one_of(st.none(), _HOST_FILE)) if command in ("resolve", "detect", "env")
            else None)
    if draw(st.booleans()):
        args.append("--json")
    env = {name: draw(_ENV[name])
           for name in draw(st.lists(st.sampled_from(sorted(_ENV)), max_size=3, unique=True))}
    overlay = draw(st.one_of(st.none(), _OVERLAY))
    return args, env, host, overlay


@pytest.mark.slow  # 40 CLI runs: over 10 s
@settings(max_examples=40, deadline=None, database=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(_invocation())
def test_any_input_keeps_the_cli_contract(
    case: tuple[list[str], dict[str, str], str | None, str | None],
) -> None:
    args, env, host, overlay = case
    with tempfile.TemporaryDirectory() as tmp:
        if host is not None:
            (Path(tmp) / "host.json").write_text(host, encoding="utf-8", errors="replace")
            args = [*args, "--host", str(Path(tmp) / "host.json")]
        if overlay is not None:
            (Path(tmp) / "overlay.yaml").write_text(overlay, encoding="utf-8")
            env = {**env, "TORCHENV_MATRIX_OVERLAY": str(Path(tmp) / "overlay.yaml")}
        leftovers: list[int] = []
        r = run_limited(args, env=env, cwd=tmp, timeout=30, leftovers=leftovers)
        assert_clean_exit(r, as_json="--json" in args)
        assert leftovers == [], f"processes left running: {leftovers}"
        assert sorted(p.name for p in Path(tmp).iterdir()) == sorted(
            name for name, given in (("host.json", host), ("overlay.yaml", overlay))
            if given is not None)


def test_the_leftover_check_finds_a_process_its_child_left_behind() -> None:
    with subprocess.Popen(["sh", "-c", "sleep 30 & exit 0"], start_new_session=True) as child:
        child.wait(timeout=10)
    left = session_processes(child.pid)
    try:
        assert len(left) == 1
        # the shell's fork may not have become ``sleep`` yet on a busy machine
        deadline = time.monotonic() + 10
        while not Path(f"/proc/{left[0]}/cmdline").read_bytes().startswith(b"sleep") \
                and time.monotonic() < deadline:
            time.sleep(0.01)
        assert Path(f"/proc/{left[0]}/cmdline").read_bytes().startswith(b"sleep")
    finally:
        for pid in left:
            os.kill(pid, signal.SIGKILL)
