"""The explorer's lookup tables agree with the resolver for generated machines.

The tables are looked up the way the page does it (:mod:`torchenv.explorer.lookup` reads the same
JSON as ``page.js``) and compared with ``resolve()`` / ``evaluate()`` run for the very values a
user typed, not the class representatives the tables were built from.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from explorer_hosts import Machine, answerable, expected, machines
from hypothesis import HealthCheck, given, settings

from torchenv.explorer.classes import (
    TOKENS,
    Classes,
    DriverClasses,
    GpuChoice,
    facts_of,
    page_host,
    window_candidates,
)
from torchenv.explorer.lookup import Unanswered, decision, fill, grid_cells
from torchenv.explorer.page import MAX_PAGE_BYTES, page_data, render_page
from torchenv.explorer.tables import Job, Tables, cell_verdicts, gfx_names, python_tags
from torchenv.matrix.model import PLATFORMS, Matrix
from torchenv.resolver.request import Request
from torchenv.resolver.resolve import evaluate
from torchenv.values import DriverVersion

SETTINGS = settings(max_examples=400, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def _canonical(doc: dict[str, Any]) -> str:
    return json.dumps(doc, sort_keys=True, ensure_ascii=False)


def test_decisions_agree_with_resolve(matrix: Matrix, explorer_tables: Tables) -> None:
    @SETTINGS
    @given(machines(matrix, explorer_tables))
    def check(machine: Machine) -> None:
        try:
            got = decision(explorer_tables, TOKENS, machine.platform, machine.python,
                           machine.gpu, machine.spec)
        except Unanswered:
            assert not answerable(matrix, explorer_tables, machine)
            return
        assert _canonical(got) == _canonical(expected(matrix, machine))

    check()


def test_grid_agrees_with_evaluate(matrix: Matrix, explorer_tables: Tables) -> None:
    @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(machines(matrix, explorer_tables))
    def check(machine: Machine) -> None:
        host = page_host(machine.platform, machine.python, machine.gpu)
        cells = grid_cells(explorer_tables, TOKENS, machine.platform, machine.python,
                           machine.gpu)
        job = Job(machine.platform, machine.python, machine.gpu, column="*")
        verdicts = cell_verdicts(matrix, job)
        _, rejected = evaluate(Request(), host, matrix)
        rule1 = {(r.torch, r.variant): r.reason for r in rejected}
        assert set(verdicts) <= set(cells)
        for cell, verdict in verdicts.items():
            shown = cells[cell]
            assert shown is not None, cell
            if verdict is None:  # rule 1: the page shows the reason for the tag
                assert (shown[0], shown[2]) == ("no", rule1[cell]), cell
            else:
                assert shown == tuple(fill(list(verdict), machine.gpu, TOKENS)), cell

    check()


def _floors_of(matrix: Matrix, platform: str, python: str) -> list[DriverVersion]:
    classes = Classes.of(matrix, facts_of(matrix, platform, window_candidates(
        matrix, platform, python)), gfx_names(matrix))
    return list(classes.drivers.floors)


@pytest.mark.parametrize(("platform", "python"),
                         [("linux-x86_64", "3.12"), ("win-amd64", "3.10"),
                          ("linux-aarch64", "3.13")])
def test_every_driver_floor_is_a_boundary(matrix: Matrix, explorer_tables: Tables,
                                          platform: str, python: str) -> None:
    """At each floor of the window, just below it and just above it, for GPUs old and new."""
    for floor in _floors_of(matrix, platform, python):
        parts = floor.parts if len(floor.parts) > 1 else (*floor.parts, 0)  # 580 is 580.0
        below = ".".join(map(str, (*parts[:-1], parts[-1] - 1))) if parts[-1] else \
            f"{parts[0] - 1}.99"
        at = str(floor) if len(floor.parts) > 1 else f"{floor}.00"
        for driver in (below, at, f"{at}.1" if len(parts) < 3 else at):
            for cc in ("6.1", "8.6", "9.0", "12.0"):
                machine = Machine(platform, python, GpuChoice("nvidia", cc=cc, driver=driver))
                got = decision(explorer_tables, TOKENS, platform, python, machine.gpu)
                assert _canonical(got) == _canonical(expected(matrix, machine)), (driver, cc)


def test_each_representative_is_in_its_own_class(matrix: Matrix) -> None:
    """The spelling of a representative (``8.6a``, ``0550.54.14``) reads as a member of the
    class it stands for, and the unknown driver and the gfx targets of no list have theirs."""
    found = window_candidates(matrix, "linux-x86_64", "3.12")
    classes = Classes.of(matrix, facts_of(matrix, "linux-x86_64", found), gfx_names(matrix))
    for slot, gpu in enumerate(classes.slots()):
        assert classes.slot_of(gpu) == slot, gpu
    assert classes.capabilities.index("6.1") != classes.capabilities.index("12.0")
    assert classes.gfx.index("gfx0000") == 0
    assert classes.drivers.index(None) == DriverClasses.UNKNOWN


def test_a_specifier_the_page_did_not_precompute_is_not_answered(
        explorer_tables: Tables) -> None:
    window = explorer_tables.windows["linux-x86_64|3.12"]
    missing = next(r for r in window["releases"]
                   if r.rsplit(".", 1)[0] not in explorer_tables.specifiers)
    for spec in (missing, f"=={missing.rsplit('.', 1)[0]}.*", f">={missing}"):
        with pytest.raises(Unanswered):
            decision(explorer_tables, TOKENS, "linux-x86_64", "3.12", GpuChoice("none"), spec)


def test_nothing_fits_is_answered_whatever_the_page_was_made_for(
        matrix: Matrix, explorer_tables: Tables) -> None:
    """A specifier that admits no release with a wheel for the machine is answered: nothing fits,
    with the message and fixes of exit 3, for releases that exist and releases that do not."""
    window = explorer_tables.windows["win-amd64|3.9"]
    gone = next(r for r in explorer_tables.releases if r not in window["releases"])
    for spec in (f"=={gone}", "==9.9", ">=99"):
        machine = Machine("win-amd64", "3.9", GpuChoice("nvidia", cc="8.6", driver="550.54.15"),
                          spec)
        got = decision(explorer_tables, TOKENS, machine.platform, machine.python, machine.gpu,
                       spec)
        assert got["torch"] is None and repr(spec) in got["error"]
        assert _canonical(got) == _canonical(expected(matrix, machine))


def test_every_window_is_in_the_tables(matrix: Matrix, explorer_tables: Tables) -> None:
    for platform in PLATFORMS:
        for python in python_tags(matrix, platform):
            window = explorer_tables.windows[f"{platform}|{python}"]
            assert all(pid >= 0 for pid in window["any"])
            for minor, ids in window["specs"].items():
                assert all(pid >= 0 for pid in ids), (platform, python, minor)


def test_answers_hold_placeholders_only_for_what_the_user_types(
        explorer_tables: Tables) -> None:
    text = json.dumps([explorer_tables.plans, explorer_tables.verdicts])
    assert set(re.findall(r"\{\{\w+\}\}", text)) <= set(TOKENS.values())
    # no representative spelling escaped the templating
    assert not re.search(r"\b\d{1,2}\.\da\b|sm_\d{2,3}a\b|\b0\d{3}\.\d", text)


def test_the_page_is_one_small_self_contained_file(matrix: Matrix,
                                                   explorer_tables: Tables) -> None:
    html = render_page(matrix, explorer_tables)
    assert len(html.encode("utf-8")) <= MAX_PAGE_BYTES
    assert html == render_page(matrix, explorer_tables)  # deterministic
    assert not re.search(r"<script[^>]+src=|<link[^>]+href=\"(?!data:)|@import|url\(", html)
    assert "fetch(" not in html and "XMLHttpRequest" not in html
    data = page_data(matrix, explorer_tables)
    assert data["matrix_version"] == matrix.matrix_version
    assert f"Matrix <span id=\"matrix-version\">{matrix.matrix_version}</span>" in html


def test_render_refuses_a_page_over_the_limit(matrix: Matrix, explorer_tables: Tables,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    import torchenv.explorer.page as page

    monkeypatch.setattr(page, "MAX_PAGE_BYTES", 1000)
    with pytest.raises(ValueError, match="over 1000"):
        page.render_page(matrix, explorer_tables)
