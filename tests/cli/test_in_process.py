"""The ``cli`` fixture: the command line run in this process, each call in the environment the
test gives it, as a child would get it."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from tests.conftest import Cli


def test_each_call_starts_from_the_tests_environment_not_the_previous_calls(cli: Cli) -> None:
    given = cli(["resolve", "--json", "--no-gpu"], env={"TORCHENV_PYTHON": "3.11"})
    plain = cli(["resolve", "--json", "--no-gpu"])
    assert json.loads(given.stdout)["python"] == "3.11"
    assert json.loads(plain.stdout)["python"] == "{}.{}".format(*sys.version_info[:2])


def test_a_whole_environment_leaves_out_what_it_does_not_name(cli: Cli) -> None:
    whole = {"PATH": os.environ["PATH"], "TORCHENV_PLATFORM": "linux-aarch64",
             "TORCHENV_NO_OVERLAY": "1"}
    r = cli(["resolve", "--json", "--no-gpu", "--python", "3.12"], whole, whole_env=True)
    assert json.loads(r.stdout)["platform"] == "linux-aarch64", r.stderr
    assert set(os.environ) - set(whole) <= {"TORCHENV_NVML_LIBRARY", "TORCHENV_PROBE_ROOT",
                                            "TORCHENV_CACHE_DIR", "TORCHENV_NVIDIA_SMI"}


def test_the_exit_status_and_both_streams_are_the_commands(cli: Cli, tmp_path: Path) -> None:
    print("printed by the test before the command")
    r = cli(["resolve", "--gpu", "8.x"], cwd=tmp_path)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.startswith("torchenv: error:") and "'8.x'" in r.stderr
    assert Path.cwd() == tmp_path
