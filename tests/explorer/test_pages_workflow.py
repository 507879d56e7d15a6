"""The example workflow that publishes the explorer: valid, in order, with flags the CLI takes."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import yaml

from torchenv.cli import build_parser

WORKFLOW = Path(__file__).parents[2] / "docs" / "examples" / "explorer-pages.yml"


def _load() -> dict[str, Any]:
    doc = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    assert isinstance(doc, dict)
    return doc


def _commands(doc: dict[str, Any]) -> list[list[str]]:
    out = []
    for step in doc["jobs"]["build"]["steps"]:
        for line in str(step.get("run", "")).splitlines():
            if line.strip().startswith("torchenv "):
                out.append(shlex.split(line)[1:])
    return out


def test_runs_on_a_schedule_and_publishes_with_pages() -> None:
    doc = _load()
    triggers = doc.get("on", doc.get(True))  # YAML 1.1 reads a bare `on` as true
    assert triggers["schedule"][0]["cron"]
    deploy = doc["jobs"]["deploy"]
    assert deploy["needs"] == "build"
    assert deploy["permissions"] == {"pages": "write", "id-token": "write"}
    assert any(str(s.get("uses", "")).startswith("actions/deploy-pages@")
               for s in deploy["steps"])
    assert any(str(s.get("uses", "")).startswith("actions/upload-pages-artifact@")
               for s in doc["jobs"]["build"]["steps"])


def test_updates_the_matrix_then_writes_the_page_with_flags_the_cli_takes() -> None:
    commands = _commands(_load())
    assert [c[:2] for c in commands] == [["matrix", "update"], ["matrix", "html"]]
    parser = build_parser()
    for argv in commands:
        parser.parse_args(argv)  # raises (exit 2) on a flag the CLI does not take
