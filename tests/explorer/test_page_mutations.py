"""Each browser check catches the breakage it is about.

A copy of the page with one planted one-line breakage (a string replaced in its script or its
style sheet) is opened, and the check of :mod:`page_checks` that covers the broken feature must
fail on it: a check that cannot fail is no check.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from page_checks import CHECKS, Ctx

from torchenv.explorer.tables import Tables
from torchenv.matrix.model import Matrix

# (what breaks, the text of the page, its replacement, the check that must catch it)
MUTATIONS = [
    ("grid colour in the script", "span.className = `cell ${status}",
     "span.className = `cell ${status === \"no\" ? \"ok\" : status}", "grid_colours"),
    ("grid colour in the style sheet", ".cell.no { background: var(--no-bg)",
     ".cell.no { background: var(--ok-bg)", "grid_colours"),
    ("the printed command line", 'if (s.driver) parts.push("--driver", s.driver);',
     "", "command_line"),
    ("the link on write", 'driver: $("driver").value.trim(), torch: spec',
     'driver: "", torch: spec', "link_written"),
    ("the link on load", '$("driver").value = pick("driver");',
     '$("driver").value = DEFAULTS.driver;', "link_loaded"),
    ("reacting to a new link", 'window.addEventListener("hashchange"',
     'window.addEventListener("hashchanged"', "hash_change"),
    ("==X.Y as the series", 'case "==": return c.star ? startsWith(c.release, v) : order === 0;',
     'case "==": return startsWith(c.release, v);', "exact_specifier"),
    ("nothing fits refused",
     'if (!inside.length) return admitted.length ? "outside" : "none";',
     "if (!inside.length) return null;", "nothing_fits"),
    ("a stale explanation", "if (shownCell && shownCell.isConnected) showCell(shownCell);",
     "if (false) showCell(shownCell);", "fresh_explanation"),
    ("GPU names as people say them", "if (found.length) return fromEntries(found, t);",
     "", "gpu_names"),
    ("verdicts by colour alone", "span.textContent = MARKS[status] +",
     'span.textContent = "" +', "verdict_marks"),
    ("low contrast, light scheme", "--no: #9b1c1c;", "--no: #e07a7a;", "verdict_marks"),
    ("low contrast, dark scheme", "--no: #ff9b9b;", "--no: #8a3030;", "verdict_marks"),
    ("the focus ring is the decision's outline",
     ".cell:focus, .cell:focus-visible { outline: 3px dashed var(--focus); outline-offset: 2px; }",
     ".cell:focus, .cell:focus-visible { outline: 3px solid var(--accent); outline-offset: -1px; }",
     "focus_ring"),
    ("the answer last on a phone", "#decision { order: -1; }", "", "phone_layout"),
    ("sideways scroll at 320 px", "details > div { overflow-x: auto; }", "", "phone_layout"),
    ("a default example with warnings", 'driver: "570.86.10"', 'driver: "550.54.15"',
     "default_example"),
]


@pytest.mark.slow  # about two seconds each: the checks themselves run in the everyday loop
@pytest.mark.parametrize(("what", "old", "new", "check"), MUTATIONS,
                         ids=[m[0].replace(" ", "-") for m in MUTATIONS])
def test_the_check_catches_the_breakage(browser: Any, page: Path, matrix: Matrix,
                                        explorer_tables: Tables, tmp_path: Path, what: str,
                                        old: str, new: str, check: str) -> None:
    html = page.read_text(encoding="utf-8")
    assert html.count(old) == 1, f"{what}: the page no longer holds {old!r}"
    broken = tmp_path / "broken.html"
    broken.write_text(html.replace(old, new), encoding="utf-8")
    with pytest.raises(AssertionError):
        CHECKS[check](Ctx(browser, broken, matrix, explorer_tables))
    browser.get_log("browser")  # a broken page may log errors; they are not this test's
