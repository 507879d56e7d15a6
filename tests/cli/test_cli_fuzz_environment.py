"""Generated environments for the CLI, in-process: the stream's encoding (a Windows code page,
ASCII, Latin-1, UTF-8), a standard output that is closed, a host file whose GPU name holds any
character, and a generated file written with ``-o`` and read back by its format's parser.

Whatever is drawn, the run keeps the contract: an exit code CLI.md defines, no exception out
of ``main``, what is printed fits the stream's encoding, ``--json`` is one JSON document, a
closed stdout is exit 1 saying so (unless nothing was to be printed there), and a written file
parses.
"""

from __future__ import annotations

import io
import json
import os
import sys
import tempfile
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from torchenv.cli import main

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

_ENCODINGS = ("utf-8", "ascii", "latin-1", "cp1252", "cp437")
# any code point a JSON host file can carry, lone surrogates and controls included
_NAME = st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF), max_size=16).map(
    lambda t: "GPU " + t)
_COMMANDS = (
    ["detect"], ["resolve"], ["resolve", "--explain"], ["matrix", "show", "--torch", "2.7.1"],
    ["env", "--format", "requirements"], ["env", "--format", "environment.yml"],
    ["env", "--format", "pyproject"], ["env", "--format", "pixi"],
    ["matrix", "ci", "--torch", "2.7.1", "--python", "3.12", "--format", "github"],
    ["matrix", "ci", "--torch", "2.7.1", "--python", "3.12", "--format", "gitlab"],
)
_TAKES_HOST = {"detect", "resolve", "env"}
_PARSERS = {"requirements": lambda t: t.splitlines(), "environment.yml": yaml.safe_load,
            "pyproject": tomllib.loads, "pixi": tomllib.loads, "github": json.loads,
            "gitlab": yaml.safe_load}


def _host(folder: Path, name: str) -> Path:
    path = folder / "host.json"
    path.write_text(json.dumps({
        "platform": "linux-x86_64", "python": "3.12", "glibc": "2.35",
        "nvidia": {"driver_version": "580.65.06", "cuda_driver_version": "13.0",
                   "source": "nvml", "gpus": [{"index": 0, "name": name,
                                               "compute_capability": "9.0"}]}}))
    return path


@st.composite
def _case(draw: st.DrawFn) -> tuple[list[str], str, bool, bool, str]:
    command = list(draw(st.sampled_from(_COMMANDS)))
    as_json = command[0] != "env" and "--format" not in command and draw(st.booleans())
    to_file = command[0] in ("env", "matrix") and command[1:2] != ["show"] and \
        draw(st.booleans())
    return (command + (["--json"] if as_json else []), draw(st.sampled_from(_ENCODINGS)),
            draw(st.booleans()), to_file, draw(_NAME))


@settings(max_examples=60, deadline=None, database=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(case=_case())
def test_any_stream_and_any_gpu_name_keep_the_contract(
        case: tuple[list[str], str, bool, bool, str], monkeypatch: pytest.MonkeyPatch) -> None:
    args, encoding, stdout_closed, to_file, name = case
    for key in [k for k in os.environ if k.startswith("TORCHENV_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("TORCHENV_NO_OVERLAY", "1")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        if args[0] in _TAKES_HOST:
            args = [*args, "--host", str(_host(folder, name))]
        if args[0] == "env":
            args += ["--torch", "2.11.0", "--variant", "cu129"]  # its warning names the GPU
        out_file = folder / "out"
        if to_file:
            args += ["-o", str(out_file)]
        raw = io.BytesIO()
        stream = io.TextIOWrapper(raw, encoding=encoding, newline="\n")
        err = io.StringIO()
        monkeypatch.setattr(sys, "stdout", None if stdout_closed else stream)
        monkeypatch.setattr(sys, "stderr", err)
        status = main(args)
        stream.flush()
        monkeypatch.undo()
        printed = raw.getvalue().decode(encoding)  # what was printed fits the stream
        if stdout_closed and not to_file:  # it had something to print, and nobody to read it
            assert status == 1, (args, status, err.getvalue())
            assert "the output was not delivered" in err.getvalue()
            return
        assert status == 0, (args, status, err.getvalue())
        if to_file:
            fmt = args[args.index("--format") + 1]
            _PARSERS[fmt](out_file.read_text(encoding="utf-8"))
        else:
            assert printed.strip(), args
        if "--json" in args:
            json.loads(printed)
