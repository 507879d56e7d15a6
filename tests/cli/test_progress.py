"""Long work is never silent: a bar on a terminal, one line per step on stderr elsewhere, and
with ``--json`` stdout stays one document."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from rich.console import Console
from tests.matrix.test_update import Server, _matrix_filenames

from torchenv.cli import main
from torchenv.cli import validate as validate_cli
from torchenv.cli._progress import Steps
from torchenv.validation.report import CheckResult


@pytest.fixture
def server() -> Server:  # type: ignore[misc]
    s = Server()
    yield s
    s.close()


def test_matrix_update_prints_a_line_per_request(
        server: Server, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path) -> None:
    monkeypatch.setenv("TORCHENV_MATRIX_OVERLAY", str(tmp_path / "overlay.yaml"))
    server.serve_index(_matrix_filenames())
    code = main(["matrix", "update", "--check", "--json", "--index-base", f"{server.base}/whl",
                 "--pypi-base", server.base])
    out, err = capsys.readouterr()
    assert code == 0, err
    json.loads(out)  # one document, nothing else
    lines = [line for line in err.splitlines() if line.startswith("torchenv matrix update: ")]
    assert any(re.fullmatch(r"torchenv matrix update: torch index 1/4 \(\d+\.\d s\)", line)
               for line in lines), err
    assert "torchenv matrix update: PyPI torch 4/4" in "\n".join(lines), err


def test_matrix_update_quiet_prints_no_progress(
        server: Server, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path) -> None:
    monkeypatch.setenv("TORCHENV_MATRIX_OVERLAY", str(tmp_path / "overlay.yaml"))
    server.serve_index(_matrix_filenames())
    main(["matrix", "update", "--check", "--quiet", "--index-base", f"{server.base}/whl",
          "--pypi-base", server.base])
    assert "torchenv matrix update: " not in capsys.readouterr().err


def _events() -> list[validate_cli.ProgressEvent]:
    return [("plan", ["import_torch", "matmul"]),
            ("result", CheckResult("import_torch", "pass", seconds=1.5)),
            ("start", "matmul"),
            ("result", CheckResult("matmul", "fail", seconds=0.25))]


def test_validate_without_a_terminal_prints_each_check_started_and_ended(
        capsys: pytest.CaptureFixture[str]) -> None:
    with validate_cli._Progress("/usr/bin/python3") as progress:
        for event in _events():
            progress.update(event)
    assert capsys.readouterr().err.splitlines() == [
        "torchenv validate: starting the validation child (/usr/bin/python3)",
        "torchenv validate: import_torch pass in 1.50 s (1/2)",
        "torchenv validate: matmul started",
        "torchenv validate: matmul fail in 0.25 s (2/2)",
    ]


def test_validate_bar_on_a_terminal_never_reads_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("torchenv.cli._progress.stderr_is_a_terminal", lambda: True)
    screen = Console(file=io.StringIO(), width=100, force_terminal=False)

    def shown(progress: validate_cli._Progress) -> str:
        with screen.capture() as capture:
            screen.print(progress._progress.make_tasks_table(progress._progress.tasks))
        return capture.get()

    with validate_cli._Progress("python") as progress:
        seen = [shown(progress)]
        for event in _events():
            progress.update(event)
            seen.append(shown(progress))
    assert "starting the validation child" in seen[0]
    assert all("None" not in text for text in seen), seen
    assert "1/2" in seen[2] and "2/2" in seen[-1]


def test_steps_drop_fast_lines_but_never_the_last(capsys: pytest.CaptureFixture[str]) -> None:
    steps = Steps("matrix html", throttle=3600)
    for done in range(1, 11):
        steps("decisions", done, 10)
    assert [line.split(" (")[0] for line in capsys.readouterr().err.splitlines()] == [
        "torchenv matrix html: decisions 10/10"]
