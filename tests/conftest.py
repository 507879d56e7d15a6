"""Shared fixtures: the embedded matrix, loaded once, and the CLI run in this process
(:func:`cli`) or in a child (:func:`run_cli`).

Also the suite's rules for what runs where:

- A test that uses a fixture of :data:`SLOW_FIXTURES` (a browser, a Slurm cluster, torch in
  child processes, a built virtual environment) is marked ``slow`` here, so the everyday loop
  ``pytest -m "not slow"`` leaves it out without every such test saying so itself.
- Under pytest-xdist (``-n auto``) each test file runs whole on one worker, so what a file
  builds once (its browser, its Slurm cluster) is built once per run.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol

import pytest

sys.path.insert(0, os.path.dirname(__file__))  # importlib mode: make tests/hermetic.py importable

from hermetic import hermetic
from torchenv.matrix.loader import load_matrix
from torchenv.matrix.model import Matrix

SLOW_FIXTURES = {
    "browser": "drives Chromium",
    "slurm_cluster": "runs a Slurm cluster",
    "real_reports": "runs torch in child processes (validate)",
    "cpu_torch_venv": "builds a virtual environment",
    "pip_venv": "builds a virtual environment",
    "uv_venv": "builds a virtual environment",
    "bare_venv": "builds a virtual environment",
    "bare_python": "builds a virtual environment",
    "explorer_tables": "builds the explorer's answer for every machine class (about 30 s)",
}
"""Fixture name → why a test that uses it (directly or through another fixture) is slow."""


FIRST = ("tests/fleet/test_slurm_e2e.py", "tests/validation/test_validate_cli.py",
         "tests/validation/test_bounded.py", "tests/explorer/test_page_browser.py",
         # the longest of the everyday loop (10-35 s each on one worker)
         "tests/cli/test_hardening_cli.py", "tests/installers/test_local_index.py",
         "tests/installers/test_render.py", "tests/test_subprocess.py",
         "tests/cli/test_resolve_cli.py", "tests/matrix/test_update.py",
         "tests/validation/test_health.py", "tests/installers/test_commands_per_shell.py",
         "tests/cli/test_everyday_outputs.py")
"""Files that run longest, longest first: collected first, so that under ``-n`` the workers
start on them and the short files fill in at the end, instead of one long file starting last
and keeping a worker busy after the others are done."""


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: one worker per CPU; for a run that leaves the slow tests out, one more.

    The everyday loop waits on child processes a good part of the time (a timeout running out,
    a hung probe being abandoned), and an extra worker runs tests on the CPU that leaves idle:
    on 2 cores about 2 minutes instead of 2 min 10 s to 2 min 16 s. The slow tests run several
    torch processes at once (gloo ranks, Slurm nodes) and keep every CPU busy themselves; an
    extra worker there only stretches their time limits. ``PYTEST_XDIST_AUTO_NUM_WORKERS``
    still decides when set."""
    given = os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS", "").strip()
    if given.isdigit():
        return int(given)
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    everyday = (config.getoption("markexpr", "") or "").replace(" ", "") == "notslow"
    return (cpus or 1) + (1 if everyday else 0)


@pytest.hookimpl(tryfirst=True)  # before ``-m`` deselects by the marks
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if set(getattr(item, "fixturenames", ())) & SLOW_FIXTURES.keys() \
                and item.get_closest_marker("slow") is None:
            item.add_marker(pytest.mark.slow)

    def rank(item: pytest.Item) -> int:
        path = item.nodeid.split("::", 1)[0]
        return FIRST.index(path) if path in FIRST else len(FIRST)

    items.sort(key=rank)  # stable: within a file, and for every other file, the order stays


def pytest_configure(config: pytest.Config) -> None:
    """``-n`` alone hands out whole test files (``--dist loadfile``; an explicit ``--dist`` is
    kept), in collection order: a file's module fixtures (a browser, a Slurm cluster, rendered
    files) are then built once, on one worker, and the longest files start first.

    A run started in the background of a non-interactive shell inherits SIGINT ignored, and so
    would every child it starts: the children that tests interrupt get it back, as a terminal
    user's process has it."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    explicit = any(arg == "--dist" or arg.startswith("--dist=")
                   for arg in config.invocation_params.args)
    if getattr(config.option, "dist", "no") == "load" and not explicit:
        config.option.dist = "loadfile"
        # hand the files out in collection order (FIRST leads), not largest file first
        config.option.loadscopereorder = False


@pytest.fixture(autouse=True)
def _no_host_gpu_facts(monkeypatch: pytest.MonkeyPatch) -> None:
    """In-process detection in any test sees no NVML, no nvidia-smi and an empty /sys, /proc and
    /dev, whatever driver the machine running the tests has (tests of those probes set their own
    values)."""
    for key, value in hermetic({}).items():
        monkeypatch.setenv(key, value)


@pytest.fixture(scope="session")
def matrix() -> Matrix:
    return load_matrix(overlay=False)


def run_cli(
    args: Sequence[str],
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    timeout: float = 60,
) -> subprocess.CompletedProcess[str]:
    """``python -m torchenv ARGS`` in a child, with no user overlay and no TORCHENV_* leaking in.

    For what only a real process shows: a command that must not hang (a FIFO, a hung probe:
    the child's timeout is the proof), what a run leaves behind (processes, loaded libraries
    such as NVML's stand-in), signals, closed pipes, the interpreter's start and the exit
    status a shell sees. Messages and exit codes are tested in this process (:func:`cli`)."""
    child_env = {k: v for k, v in os.environ.items() if not k.startswith("TORCHENV_")}
    child_env["TORCHENV_NO_OVERLAY"] = "1"
    child_env.update(env or {})
    hermetic(child_env)
    return subprocess.run(
        [sys.executable, "-m", "torchenv", *args],
        capture_output=True,
        text=True,
        env=child_env,
        cwd=cwd,
        timeout=timeout,
        check=False,
    )


class Cli(Protocol):
    """The signature of the :func:`cli` fixture's value."""

    def __call__(self, args: Sequence[str], env: Mapping[str, str] | None = None,
                 cwd: str | Path | None = None, *, whole_env: bool = False
                 ) -> subprocess.CompletedProcess[str]: ...


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Cli:
    """``torchenv ARGS`` run in this process: :func:`torchenv.cli.main` with its exit status
    and what it wrote to stdout and stderr, as :func:`run_cli` returns them from a child.

    The environment is the one :func:`run_cli` gives its child: the test's own with no
    TORCHENV_* leaking in, no user overlay, then ``env``, then the hermetic defaults; with
    ``whole_env``, ``env`` is the whole environment (as ``subprocess.run(env=...)`` takes
    it), with the hermetic defaults where it sets none. It is set
    with ``monkeypatch`` for each call (from the test's environment, not the previous call's)
    and undone after the test, as is ``cwd``. What only a real process shows (signals, a
    closed pipe, the interpreter's start, the exit status the shell sees) stays with
    :func:`run_cli` and ``tests/cli/cli_helpers.run_limited``."""
    from torchenv.cli import main

    base = dict(os.environ)

    def run(args: Sequence[str], env: Mapping[str, str] | None = None,
            cwd: str | Path | None = None, *, whole_env: bool = False
            ) -> subprocess.CompletedProcess[str]:
        if whole_env:
            wanted = dict(env or {})
        else:
            wanted = {k: v for k, v in base.items() if not k.startswith("TORCHENV_")}
            wanted["TORCHENV_NO_OVERLAY"] = "1"
            wanted.update(env or {})
        hermetic(wanted)
        for key in [k for k in os.environ if k not in wanted]:
            monkeypatch.delenv(key)
        for key, value in wanted.items():
            if os.environ.get(key) != value:
                monkeypatch.setenv(key, value)
        monkeypatch.chdir(cwd if cwd is not None else base_cwd)
        capsys.readouterr()  # what the test printed before is not the command's
        status = main(list(args))
        out, err = capsys.readouterr()
        return subprocess.CompletedProcess(["torchenv", *args], status, out, err)

    base_cwd = os.getcwd()
    return run
