"""The explorer page in a real browser: Chromium, headless, driven by Selenium, from file://.

Machines are picked through the page's own controls (option clicks, text typed into the fields
through Chromium's input pipeline), the answer is read from the DOM and compared with
``resolve()`` in this process for every machine, and with ``python -m torchenv resolve --json``
for a sample. Skipped, with the reason, where Chromium, chromedriver or Selenium is missing.
"""

from __future__ import annotations

import base64
import json
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from explorer_hosts import Machine, boundary_drivers, cli_args, expected, machines
from hypothesis import HealthCheck, given, settings
from tests.conftest import run_cli

from torchenv.detection.overrides import (
    normalize_rocm_arch,
    read_compute_capability,
    read_driver_version,
)
from torchenv.errors import BadInput
from torchenv.explorer.classes import GpuChoice
from torchenv.explorer.page import render_page
from torchenv.explorer.tables import Tables
from torchenv.matrix.model import Matrix

webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed "
                                "(pip install -e '.[test]')")

_CHROMIUM = next(filter(None, map(shutil.which, ("chromium", "chromium-browser",
                                                 "google-chrome"))), None)
_DRIVER = shutil.which("chromedriver")
pytestmark = pytest.mark.skipif(
    _CHROMIUM is None or _DRIVER is None,
    reason="Chromium and chromedriver are not installed "
    "(Debian: apt-get install -y chromium chromium-driver)")

DESKTOP = (1280, 1000)
PHONE = (390, 844)
MACHINES = 200
CLI_EVERY = 25  # every 25th machine is also asked of the real CLI


@pytest.fixture(scope="module")
def page(matrix: Matrix, explorer_tables: Tables,
         tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("explorer") / "explorer.html"
    path.write_text(render_page(matrix, explorer_tables), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def browser(page: Path) -> Iterator[Any]:
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                f"--window-size={DESKTOP[0]},{DESKTOP[1]}"):
        options.add_argument(arg)
    assert _CHROMIUM is not None and _DRIVER is not None
    options.binary_location = _CHROMIUM
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(_DRIVER), options=options)
    try:
        _open(driver, page)
        yield driver
    finally:
        driver.quit()


def _open(driver: Any, page: Path) -> None:
    driver.get(page.as_uri())
    deadline = time.monotonic() + 20
    while not driver.execute_script("return document.body.dataset.ready"):
        assert time.monotonic() < deadline, "the page did not finish loading its tables"
        time.sleep(0.05)


def _console_errors(driver: Any) -> list[str]:
    return [entry["message"] for entry in driver.get_log("browser")
            if entry["level"] in ("SEVERE", "ERROR")]


# --- driving the controls -------------------------------------------------------------------

def _choose(driver: Any, select_id: str, value: str) -> None:
    """Pick an option of a <select> by clicking it, as a user would."""
    from selenium.webdriver.common.by import By

    if driver.execute_script(f"return document.getElementById('{select_id}').value") == value:
        return
    driver.find_element(By.CSS_SELECTOR, f"#{select_id} option[value='{value}']").click()


def _type(driver: Any, field_id: str, text: str) -> None:
    """Replace the text of a field with ``text`` typed through Chromium's input pipeline."""
    driver.execute_script(f"const e = document.getElementById('{field_id}'); e.focus(); "
                          "e.select();")
    if text:
        driver.execute_cdp_cmd("Input.insertText", {"text": text})
    else:
        for kind in ("keyDown", "keyUp"):
            driver.execute_cdp_cmd("Input.dispatchKeyEvent", {
                "type": kind, "key": "Delete", "code": "Delete", "windowsVirtualKeyCode": 46})


def _gpu_text(matrix: Matrix, machine: Machine) -> str:
    """What to type for the GPU: a catalog name when one has exactly this capability or
    target (half of the time), else the capability or target itself."""
    gpu = machine.gpu
    if gpu.kind == "nvidia":
        assert gpu.cc is not None
        named = [g.name for g in matrix.nvidia_gpus if str(g.compute_capability) == gpu.cc]
        return named[len(gpu.cc) % len(named)] if named and int(gpu.cc[-1]) % 2 else gpu.cc
    if gpu.kind == "amd":
        assert gpu.gfx is not None
        named = [g.name for g in matrix.amd_gpus if g.gfx == gpu.gfx]
        return named[0] if named and len(gpu.gfx) % 2 else gpu.gfx
    return ""


def _describe(driver: Any, matrix: Matrix, machine: Machine) -> None:
    before = driver.execute_script("return document.body.dataset.renders")
    _choose(driver, "platform", machine.platform)
    _choose(driver, "python", machine.python)
    _type(driver, "gpu", _gpu_text(matrix, machine))
    _type(driver, "driver", machine.gpu.driver or "")
    _type(driver, "torch", machine.spec or "")
    assert driver.execute_script("return document.body.dataset.renders") != before


_READ = """
const body = document.getElementById('decision-body');
const text = (id) => { const e = document.getElementById(id);
  return e ? (e.dataset.null === 'true' ? null : e.textContent) : undefined; };
const items = (id) => [...document.querySelectorAll('#' + id + ' li')].map((e) => e.textContent);
const chosen = document.querySelector('.cell.chosen');
return {
  state: body.dataset.state, torch: text('d-torch'), torchvision: text('d-torchvision'),
  torchaudio: text('d-torchaudio'), variant: text('d-variant'), level: text('d-level'),
  warnings: items('d-warnings'), reasons: items('d-reasons'), error: text('d-error'),
  fixes: items('d-fixes'), alternative: text('d-evidence-alternative'),
  commands: Object.fromEntries(['pip', 'uv', 'conda', 'pixi'].map((n) => [n, text('cmd-' + n)])),
  chosen: chosen ? [chosen.dataset.torch, chosen.dataset.variant] : null,
  cli: document.getElementById('cli-command').textContent,
};
"""


def _assert_shows(shown: dict[str, Any], answer: dict[str, Any]) -> None:
    if answer["torch"] is None:
        assert shown["state"] == "nomatch"
        assert shown["error"] == answer["error"]
        assert shown["fixes"] == answer["fixes"]
        return
    assert shown["state"] == "ok"
    for key in ("torch", "torchvision", "torchaudio", "variant", "level", "warnings",
                "reasons", "commands"):
        assert shown[key] == answer[key], key
    assert shown["chosen"] == [answer["torch"], answer["variant"]]
    alternative = answer.get("evidence_alternative")
    if alternative:
        assert f"torch {alternative['torch']} {alternative['variant']}" in shown["alternative"]


def test_the_page_answers_as_the_resolver_does(browser: Any, matrix: Matrix,
                                               explorer_tables: Tables,
                                               tmp_path: Path) -> None:
    seen = [0]

    @settings(max_examples=MACHINES, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow])
    @given(machines(matrix, explorer_tables))
    def check(machine: Machine) -> None:
        _describe(browser, matrix, machine)
        shown = browser.execute_script(_READ)
        answer = expected(matrix, machine)
        _assert_shows(shown, answer)
        seen[0] += 1
        if seen[0] % CLI_EVERY == 1:
            result = run_cli(cli_args(machine, tmp_path / "host.json"))
            assert result.returncode == (0 if answer["torch"] is not None else 3), result.stderr
            cli = json.loads(result.stdout)
            cli.pop("rejected", None)
            assert cli == answer
            assert shown["cli"].startswith(f"torchenv resolve --platform {machine.platform} "
                                           f"--python {machine.python}")

    check()
    assert seen[0] >= MACHINES
    assert _console_errors(browser) == []


@pytest.mark.parametrize(("platform", "python"), [("linux-x86_64", "3.12"),
                                                  ("win-amd64", "3.10")])
def test_the_page_places_each_driver_floor_as_the_resolver_does(
        browser: Any, matrix: Matrix, explorer_tables: Tables, platform: str,
        python: str) -> None:
    """Every floor of the window typed exactly, and just below it, for an old and a new GPU."""
    floors = explorer_tables.windows[f"{platform}|{python}"]["drivers"]
    _choose(browser, "platform", platform)
    _choose(browser, "python", python)
    _type(browser, "torch", "")
    for cc in ("6.1", "12.0"):
        _type(browser, "gpu", cc)
        for driver in boundary_drivers(floors):
            _type(browser, "driver", driver)
            machine = Machine(platform, python, GpuChoice("nvidia", cc=cc, driver=driver))
            _assert_shows(browser.execute_script(_READ), expected(matrix, machine))


def test_the_page_reads_typed_values_as_the_cli_does(browser: Any) -> None:
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


def test_a_specifier_outside_the_list_is_not_guessed(browser: Any) -> None:
    _choose(browser, "platform", "linux-x86_64")
    _choose(browser, "python", "3.12")
    _type(browser, "gpu", "8.6")
    _type(browser, "driver", "550.54.15")
    _type(browser, "torch", ">=2.5,<2.9")
    shown = browser.execute_script(_READ)
    assert shown["state"] == "unanswered" and shown["torch"] is None
    message = browser.execute_script("return document.getElementById('d-unanswered').textContent")
    assert "cannot answer exactly" in message and ">=2.5,<2.9" in message
    assert "--torch '>=2.5,<2.9'" in shown["cli"]
    _type(browser, "torch", "")


def test_every_control_has_a_label_and_tab_reaches_it(browser: Any, page: Path) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    _open(browser, page)
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
    assert _console_errors(browser) == []


def _screenshot(browser: Any, size: tuple[int, int], path: Path) -> None:
    browser.set_window_size(*size)
    height = browser.execute_script("return document.documentElement.scrollHeight")
    shot = browser.execute_cdp_cmd("Page.captureScreenshot", {
        "format": "png", "captureBeyondViewport": True,
        "clip": {"x": 0, "y": 0, "width": size[0], "height": min(height, 6000), "scale": 1}})
    path.write_bytes(base64.b64decode(shot["data"]))


def test_screenshots_at_desktop_and_phone_widths(browser: Any, page: Path,
                                                 artifacts: Path) -> None:
    _open(browser, page)
    for name, size in (("desktop", DESKTOP), ("phone", PHONE)):
        path = artifacts / f"explorer-{name}.png"
        _screenshot(browser, size, path)
        assert path.stat().st_size > 10_000
        overflow = browser.execute_script(
            "return document.documentElement.scrollWidth - document.documentElement.clientWidth")
        assert overflow <= 1, f"the page scrolls sideways at {name} width"
    browser.set_window_size(*DESKTOP)
    assert _console_errors(browser) == []
