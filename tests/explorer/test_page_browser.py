"""The explorer page in a real browser: Chromium, headless, driven by Selenium, from file://.

Machines are picked through the page's own controls (option clicks, text typed into the fields
through Chromium's input pipeline), the answer is read from the DOM and compared with
``resolve()`` in this process for every machine, and with ``python -m torchenv resolve --json``
for a sample; every check of :mod:`page_checks` runs on the page; an axe-core scan finds no
violation in either colour scheme. One browser serves the whole run (``conftest.browser``);
skipped, with the reason, where Chromium, chromedriver or Selenium is missing.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from explorer_hosts import Machine, answerable, boundary_drivers, cli_args, expected, machines
from hypothesis import HealthCheck, given, settings
from page_checks import (
    CHECKS,
    DESKTOP,
    PHONE,
    READ,
    Ctx,
    assert_shows,
    choose,
    console_errors,
    describe,
    open_page,
    type_text,
)
from tests.conftest import run_cli

from torchenv.detection.overrides import (
    normalize_rocm_arch,
    read_compute_capability,
    read_driver_version,
)
from torchenv.errors import BadInput
from torchenv.explorer.classes import GpuChoice
from torchenv.explorer.tables import Tables
from torchenv.matrix.model import Matrix

MACHINES = 60  # through the controls, one at a time; the 1,000 of the slow test go in batches
CLI_EVERY = 20  # every 20th answered machine is also asked of the real CLI
AGREEMENT_MACHINES = 1000


@pytest.fixture
def ctx(browser: Any, page: Path, matrix: Matrix, explorer_tables: Tables) -> Ctx:
    return Ctx(browser, page, matrix, explorer_tables)


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_page_check(ctx: Ctx, name: str) -> None:
    CHECKS[name](ctx)
    assert console_errors(ctx.driver) == []


def test_the_page_answers_as_the_resolver_does(browser: Any, page: Path, matrix: Matrix,
                                               explorer_tables: Tables,
                                               tmp_path: Path) -> None:
    """Machines described through the controls, one at a time; a specifier the page was not
    made for is refused, saying so, and only such a one."""
    seen, answered = [0], [0]
    open_page(browser, page)

    @settings(max_examples=MACHINES, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow])
    @given(machines(matrix, explorer_tables))
    def check(machine: Machine) -> None:
        describe(browser, matrix, machine)
        shown = browser.execute_script(READ)
        seen[0] += 1
        if not answerable(matrix, explorer_tables, machine):
            assert shown["state"] == "unanswered", machine
            return
        answer = expected(matrix, machine)
        assert_shows(shown, answer)
        answered[0] += 1
        if answered[0] % CLI_EVERY == 1:
            result = run_cli(cli_args(machine, tmp_path / "host.json"))
            assert result.returncode == (0 if answer["torch"] is not None else 3), result.stderr
            cli = json.loads(result.stdout)
            cli.pop("rejected", None)
            # the page keeps no constraints file; the CLI's pins the same torch
            kept = cli.pop("constraints", None)
            if answer["torch"] is not None:
                assert f"torch=={answer['torch']}" in kept["text"], kept
            assert cli == answer
            assert shown["cli"].startswith(f"torchenv resolve --platform {machine.platform} "
                                           f"--python {machine.python}")

    check()
    assert seen[0] >= MACHINES and answered[0] >= MACHINES // 2, (seen, answered)
    assert console_errors(browser) == []


@pytest.mark.parametrize(("platform", "python"), [("linux-x86_64", "3.12"),
                                                  ("win-amd64", "3.10")])
def test_the_page_places_each_driver_floor_as_the_resolver_does(
        browser: Any, page: Path, matrix: Matrix, explorer_tables: Tables, platform: str,
        python: str) -> None:
    """Every floor of the window typed exactly, and just below it, for an old and a new GPU."""
    open_page(browser, page)
    floors = explorer_tables.windows[f"{platform}|{python}"]["drivers"]
    choose(browser, "platform", platform)
    choose(browser, "python", python)
    type_text(browser, "torch", "")
    for cc in ("6.1", "12.0"):
        type_text(browser, "gpu", cc)
        for driver in boundary_drivers(floors):
            type_text(browser, "driver", driver)
            machine = Machine(platform, python, GpuChoice("nvidia", cc=cc, driver=driver))
            assert_shows(browser.execute_script(READ), expected(matrix, machine))


def test_the_page_reads_typed_values_as_the_cli_does(browser: Any, page: Path) -> None:
    open_page(browser, page)
    samples = ["550.54.15", " 580.65.06 ", "580", "5.5.5", "1234.1.1", "12345.1", "550.54.1234",
               "8.6", "sm_86", "86", "sm90a", "compute_90", "9.0f", "20.0", "0.5", "12.10",
               "gfx90a", "GFX1100", "gfx1100:xnack-", "gfx11", "gfx12345", "gfx90g", "", "x"]
    got = browser.execute_script(
        "const x = window.torchenvExplorer; return arguments[0].map((s) => "
        "[x.normalizeDriver(s), x.normalizeCc(s), x.normalizeGfx(s)]);", samples)

    def python(normalize: Any, text: str) -> str | None:
        try:
            return str(normalize(text))
        except BadInput:
            return None

    for text, (driver, cc, gfx) in zip(samples, got):
        assert driver == python(read_driver_version, text), text
        assert cc == python(read_compute_capability, text), text
        assert gfx == python(normalize_rocm_arch, text), text


@pytest.mark.parametrize("spec", [">=2.5,<2.9", "==2.7.0rc1", "any", "2.7.1+cpu"])
def test_a_specifier_the_page_cannot_answer_is_not_guessed(browser: Any, page: Path,
                                                            spec: str) -> None:
    """Several series, a pre-release, a word, a local version: the page says it cannot answer
    exactly and prints the command that does."""
    open_page(browser, page)
    choose(browser, "platform", "linux-x86_64")
    choose(browser, "python", "3.12")
    type_text(browser, "gpu", "8.6")
    type_text(browser, "driver", "550.54.15")
    type_text(browser, "torch", spec)
    shown = browser.execute_script(READ)
    assert shown["state"] == "unanswered" and shown["torch"] is None
    message = browser.execute_script("return document.getElementById('d-unanswered').textContent")
    assert "cannot answer exactly" in message and spec in message
    assert f"--torch '{spec}'" in shown["cli"]


def test_every_control_has_a_label_and_tab_reaches_it(browser: Any, page: Path) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    open_page(browser, page)
    unlabelled = browser.execute_script("""
        return [...document.querySelectorAll('input, select, textarea')]
          .filter((e) => e.type !== 'hidden')
          .filter((e) => !(document.querySelector(`label[for='${e.id}']`)?.textContent.trim()))
          .map((e) => e.id || e.outerHTML);""")
    assert unlabelled == []
    buttons = browser.execute_script(
        "return [...document.querySelectorAll('button')].filter((b) => "
        "!(b.getAttribute('aria-label') || b.textContent.trim())).length")
    assert buttons == 0

    browser.find_element(By.TAG_NAME, "body").click()
    browser.execute_script("document.activeElement.blur(); window.scrollTo(0, 0);")
    reached: list[str] = []
    body = browser.find_element(By.TAG_NAME, "body")
    for _ in range(40):
        body = browser.switch_to.active_element
        body.send_keys(Keys.TAB)
        reached.append(browser.execute_script(
            "const e = document.activeElement; return e.id || e.className || e.tagName;"))
    for control in ("platform", "python", "gpu", "driver", "torch"):
        assert control in reached, reached
    assert any(r.startswith("cell") for r in reached), reached
    assert sum(r == "copy" for r in reached) >= 5, reached  # the CLI line and four installers
    assert reached.count("SUMMARY") >= 4, reached

    # the grid: arrow keys move between cells, and the focused cell's reason is shown
    cell = browser.find_element(By.CSS_SELECTOR, ".cell[tabindex='0']")
    cell.send_keys(Keys.ARROW_DOWN)
    moved = browser.switch_to.active_element
    assert moved.get_attribute("class").startswith("cell") and moved != cell
    detail = browser.find_element(By.ID, "cell-detail").text
    assert detail == moved.get_attribute("title") and detail.startswith("torch ")
    assert console_errors(browser) == []


def _screenshot(browser: Any, size: tuple[int, int], path: Path) -> None:
    browser.set_window_size(*size)
    height = browser.execute_script("return document.documentElement.scrollHeight")
    shot = browser.execute_cdp_cmd("Page.captureScreenshot", {
        "format": "png", "captureBeyondViewport": True,
        "clip": {"x": 0, "y": 0, "width": size[0], "height": min(height, 6000), "scale": 1}})
    path.write_bytes(base64.b64decode(shot["data"]))


def test_screenshots_at_desktop_and_phone_widths(browser: Any, page: Path,
                                                 artifacts: Path) -> None:
    open_page(browser, page)
    for name, size in (("desktop", DESKTOP), ("phone", PHONE)):
        path = artifacts / f"explorer-{name}.png"
        _screenshot(browser, size, path)
        assert path.stat().st_size > 10_000
        overflow = browser.execute_script(
            "return document.documentElement.scrollWidth - document.documentElement.clientWidth")
        assert overflow <= 1, f"the page scrolls sideways at {name} width"
    browser.set_window_size(*DESKTOP)
    assert console_errors(browser) == []


_BATCH = """
const [machines] = arguments;
const read = function () {
""" + READ + """
};
const set = (id, value, event) => {
  const e = document.getElementById(id);
  e.value = value;
  if (event) e.dispatchEvent(new Event(event));
};
return machines.map((m) => {
  set('platform', m.platform, 'change');
  set('python', m.python);
  set('gpu', m.gpu);
  set('driver', m.driver);
  set('torch', m.torch, 'input');
  return read();
});
"""


@pytest.mark.slow
def test_the_page_agrees_with_resolve_on_a_thousand_machines(
        browser: Any, page: Path, matrix: Matrix, explorer_tables: Tables) -> None:
    """At least 99.9 % of 1,000 generated machines (every one the page should answer) get
    resolve's answer; the machines go to the page in batches, in one browser session."""
    from page_checks import gpu_text

    found: list[Machine] = []

    @settings(max_examples=AGREEMENT_MACHINES * 2, deadline=None, database=None,
              derandomize=True, suppress_health_check=list(HealthCheck))
    @given(machines(matrix, explorer_tables))
    def collect(machine: Machine) -> None:
        if len(found) < AGREEMENT_MACHINES and answerable(matrix, explorer_tables, machine):
            found.append(machine)

    collect()
    assert len(found) == AGREEMENT_MACHINES
    open_page(browser, page)
    shown: list[dict[str, Any]] = []
    for start in range(0, len(found), 100):
        batch = [{"platform": m.platform, "python": m.python, "gpu": gpu_text(matrix, m),
                  "driver": m.gpu.driver or "", "torch": m.spec or ""}
                 for m in found[start:start + 100]]
        shown += browser.execute_script(_BATCH, batch)
    disagree = []
    for machine, got in zip(found, shown):
        try:
            assert_shows(got, expected(matrix, machine))
        except AssertionError as exc:
            disagree.append((machine, str(exc)))
    print(f"the page agrees with resolve on {len(found) - len(disagree)} of {len(found)} "
          "machines")
    assert len(disagree) <= AGREEMENT_MACHINES // 1000, disagree[:5]
    assert console_errors(browser) == []


@pytest.fixture(scope="session")
def axe_source(tmp_path_factory: pytest.TempPathFactory) -> str:
    """axe-core's script: ``TORCHENV_AXE_JS`` names the file, else npm installs it into this
    run's temp dir; skipped, with the reason, where neither gives it."""
    given = os.environ.get("TORCHENV_AXE_JS")
    if given:
        return Path(given).read_text(encoding="utf-8")
    folder = tmp_path_factory.mktemp("axe")
    try:
        result = subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--prefix",
                                 str(folder), "axe-core@4"], capture_output=True, text=True,
                                timeout=180, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        pytest.skip(f"axe-core could not be installed with npm: {exc}")
    script = folder / "node_modules" / "axe-core" / "axe.min.js"
    if result.returncode != 0 or not script.is_file():
        pytest.skip("axe-core could not be installed with npm (set TORCHENV_AXE_JS to "
                    f"axe.min.js): {result.stderr.strip()[-300:]}")
    return script.read_text(encoding="utf-8")


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_axe_finds_no_violation(browser: Any, page: Path, axe_source: str,
                                scheme: str) -> None:
    """axe-core's WCAG 2 A and AA rules (contrast included) over the whole page, every
    section of data open, in the light and the dark colour scheme."""
    open_page(browser, page)
    browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {
        "features": [{"name": "prefers-color-scheme", "value": scheme}]})
    try:
        browser.execute_script(
            "document.querySelectorAll('details').forEach((d) => { d.open = true; });")
        browser.execute_script(axe_source)
        violations = browser.execute_async_script("""
            const done = arguments[arguments.length - 1];
            axe.run(document, {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a',
                                                                'wcag21aa']}})
              .then((r) => done(r.violations.map((v) => [v.id, v.help,
                v.nodes.slice(0, 3).map((n) => n.target.join(' ') + ': ' + n.failureSummary)])))
              .catch((e) => done([['error', String(e), []]]));""")
    finally:
        browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})
    assert violations == [], json.dumps(violations, indent=1)
