"""Driving the explorer page in Chromium, and the checks its browser tests make.

Each ``check_*`` function opens the page afresh, does what a user does, and raises
AssertionError when the page is wrong. ``test_page_browser.py`` runs every check on the page
``torchenv matrix html`` writes; ``test_page_mutations.py`` runs each on a copy of the page with
one planted one-line breakage and requires the check to fail, so a check that cannot catch what
it is about is itself a failing test.
"""

from __future__ import annotations

import json
import shlex
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import urlencode

from explorer_hosts import Machine, expected

from torchenv.explorer.classes import TOKENS, GpuChoice
from torchenv.explorer.lookup import grid_cells
from torchenv.explorer.tables import Tables
from torchenv.matrix.model import Matrix
from torchenv.values import TorchVersion

__all__ = ["CHECKS", "Ctx", "assert_shows", "choose", "console_errors", "describe", "open_page",
           "read", "type_text"]

DESKTOP = (1280, 1000)
PHONE = (390, 844)
NARROW = 320


class Ctx(NamedTuple):
    """What a check needs: the browser, the page's file, the matrix and the page's tables."""

    driver: Any
    page: Path
    matrix: Matrix
    tables: Tables


# --- driving the page ------------------------------------------------------------------------

def open_page(driver: Any, page: Path, fragment: str = "") -> None:
    """Load the page afresh (``fragment``: the link's part after ``#``) and wait for it."""
    driver.get("about:blank")
    driver.get(page.as_uri() + (f"#{fragment}" if fragment else ""))
    deadline = time.monotonic() + 30
    while not driver.execute_script("return document.body && document.body.dataset.ready"):
        assert time.monotonic() < deadline, "the page did not finish loading its tables"
        time.sleep(0.05)


def console_errors(driver: Any) -> list[str]:
    return [entry["message"] for entry in driver.get_log("browser")
            if entry["level"] in ("SEVERE", "ERROR")]


def choose(driver: Any, select_id: str, value: str) -> None:
    """Pick an option of a <select> by clicking it, as a user would."""
    from selenium.webdriver.common.by import By

    if driver.execute_script(f"return document.getElementById('{select_id}').value") == value:
        return
    driver.find_element(By.CSS_SELECTOR, f"#{select_id} option[value='{value}']").click()


def type_text(driver: Any, field_id: str, text: str) -> None:
    """Replace the text of a field with ``text`` typed through Chromium's input pipeline."""
    driver.execute_script(f"const e = document.getElementById('{field_id}'); e.focus(); "
                          "e.select();")
    if text:
        driver.execute_cdp_cmd("Input.insertText", {"text": text})
    else:
        for kind in ("keyDown", "keyUp"):
            driver.execute_cdp_cmd("Input.dispatchKeyEvent", {
                "type": kind, "key": "Delete", "code": "Delete", "windowsVirtualKeyCode": 46})


def gpu_text(matrix: Matrix, machine: Machine) -> str:
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


def describe(driver: Any, matrix: Matrix, machine: Machine, gpu: str | None = None) -> None:
    """Describe the machine through the controls (``gpu``: the text to type for its GPU)."""
    before = driver.execute_script("return document.body.dataset.renders")
    choose(driver, "platform", machine.platform)
    choose(driver, "python", machine.python)
    type_text(driver, "gpu", gpu_text(matrix, machine) if gpu is None else gpu)
    type_text(driver, "driver", machine.gpu.driver or "")
    type_text(driver, "torch", machine.spec or "")
    assert driver.execute_script("return document.body.dataset.renders") != before


READ = """
const body = document.getElementById('decision-body');
const text = (id) => { const e = document.getElementById(id);
  return e ? (e.dataset.null === 'true' ? null : e.textContent) : undefined; };
const items = (id) => [...document.querySelectorAll('#' + id + ' li')].map((e) => e.textContent);
const chosen = document.querySelector('.cell.chosen');
const badge = document.querySelector('#decision-body .badge');
return {
  state: body.dataset.state, torch: text('d-torch'), torchvision: text('d-torchvision'),
  torchaudio: text('d-torchaudio'), variant: text('d-variant'), level: text('d-level'),
  warnings: items('d-warnings'), reasons: items('d-reasons'), error: text('d-error'),
  fixes: items('d-fixes'), alternative: text('d-evidence-alternative'),
  commands: Object.fromEntries(['pip', 'uv', 'conda', 'pixi'].map((n) => [n, text('cmd-' + n)])),
  chosen: chosen ? [chosen.dataset.torch, chosen.dataset.variant] : null,
  cli: document.getElementById('cli-command').textContent,
  badge: badge ? badge.textContent : null,
  fields: Object.fromEntries(['platform', 'python', 'gpu', 'driver', 'torch'].map(
    (n) => [n, document.getElementById(n).value])),
  hash: location.hash,
};
"""


def read(driver: Any) -> dict[str, Any]:
    """What the page shows (the decision, the command line, the fields, the link)."""
    shown: dict[str, Any] = driver.execute_script(READ)
    return shown


def assert_shows(shown: dict[str, Any], answer: dict[str, Any]) -> None:
    """The page shows ``answer`` (a ``resolve --json`` document)."""
    if answer["torch"] is None:
        assert shown["state"] == "nomatch", shown["state"]
        assert shown["error"] == answer["error"]
        assert shown["fixes"] == answer["fixes"]
        return
    assert shown["state"] == "ok", shown["state"]
    for key in ("torch", "torchvision", "torchaudio", "variant", "level", "warnings",
                "reasons", "commands"):
        assert shown[key] == answer[key], key
    assert shown["chosen"] == [answer["torch"], answer["variant"]]
    alternative = answer.get("evidence_alternative")
    if alternative:
        assert f"torch {alternative['torch']} {alternative['variant']}" in shown["alternative"]


def cli_line(machine: Machine) -> str:
    """The command line the page should print for the machine."""
    words = ["torchenv", "resolve", "--platform", machine.platform, "--python", machine.python]
    gpu = machine.gpu
    if gpu.kind == "nvidia":
        assert gpu.cc is not None
        words += (["--driver", gpu.driver] if gpu.driver else []) + ["--gpu", gpu.cc]
    elif gpu.kind == "amd":
        assert gpu.gfx is not None
        words += ["--rocm-arch", gpu.gfx]
    else:
        words.append("--no-gpu")
    line = " ".join(words)
    return line + (f" --torch {shlex.quote(machine.spec)}" if machine.spec else "")


def _emulate(driver: Any, width: int | None, height: int = 844,
             scheme: str | None = None) -> None:
    """Emulate a screen ``width`` wide (None: the window's own) and a colour scheme."""
    if width is None:
        driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    else:
        driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
            "width": width, "height": height, "deviceScaleFactor": 1, "mobile": True})
    driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {
        "features": [{"name": "prefers-color-scheme", "value": scheme or ""}]})


def _series_with_releases(ctx: Ctx, platform: str, python: str) -> tuple[str, list[str]]:
    """A series the page was made for with several releases for the window, and those."""
    window = ctx.tables.windows[f"{platform}|{python}"]
    for minor in ctx.tables.specifiers:
        releases = window["sets"].get(minor, [])
        if len(releases) > 1:
            return minor, releases
    raise AssertionError(f"no series of {ctx.tables.specifiers} has two releases here")


# --- the checks ------------------------------------------------------------------------------

_MACHINE = Machine("linux-x86_64", "3.12", GpuChoice("nvidia", cc="8.6", driver="550.54.15"))


def check_default_example(ctx: Ctx) -> None:
    """Opened without a link, the page shows a machine whose answer is a full fit with
    torchvision, and that answer is resolve's for the machine it shows."""
    open_page(ctx.driver, ctx.page)
    shown = read(ctx.driver)
    assert shown["state"] == "ok", shown["state"]
    assert shown["level"] == "full" and shown["badge"] == "fully compatible", shown["level"]
    assert shown["torchvision"] is not None
    fields = shown["fields"]
    gpu = ctx.driver.execute_script(
        "return window.torchenvExplorer.readGpu(arguments[0])", fields["gpu"])
    machine = Machine(fields["platform"], fields["python"],
                      GpuChoice("nvidia", cc=gpu["cc"], driver=fields["driver"] or None))
    assert gpu["kind"] == "nvidia"
    assert_shows(shown, expected(ctx.matrix, machine))


def check_grid_colours(ctx: Ctx) -> None:
    """Every cell has the verdict the tables hold, shown by its class, its mark and a colour
    that only its verdict has (the legend's colour for it)."""
    open_page(ctx.driver, ctx.page)
    describe(ctx.driver, ctx.matrix, _MACHINE, gpu="8.6")
    cells = grid_cells(ctx.tables, TOKENS, _MACHINE.platform, _MACHINE.python, _MACHINE.gpu)
    shown = ctx.driver.execute_script("""
        return [...document.querySelectorAll('.cell')].map((c) => [c.dataset.torch,
          c.dataset.variant, c.className, c.textContent, getComputedStyle(c).backgroundColor]);
    """)
    legend = ctx.driver.execute_script("""
        return Object.fromEntries(['ok', 'warn', 'no'].map((s) => [s,
          getComputedStyle(document.querySelector('.legend .swatch.' + s)).backgroundColor]));
    """)
    marks = ctx.driver.execute_script("""
        return Object.fromEntries(['ok', 'warn', 'no'].map((s) => [s,
          document.querySelector('.legend .swatch.' + s).textContent]));
    """)
    assert len(set(legend.values())) == 3, legend
    assert len(set(marks.values())) == 3 and all(marks.values()), marks
    seen = set()
    for torch, variant, classes, text, colour in shown:
        verdict = cells[(torch, variant)]
        if verdict is None:
            continue
        status, evidence, _ = verdict
        seen.add(status)
        assert status in classes.split(), (torch, variant, classes, status)
        assert text == marks[status] + evidence[0].upper(), (torch, variant, text)
        assert colour == legend[status], (torch, variant, colour, status)
    assert seen == {"ok", "warn", "no"}, seen


def check_command_line(ctx: Ctx) -> None:
    """The printed command line is the machine's question, and the CLI given exactly that
    line answers what the page shows."""
    from tests.conftest import run_cli

    open_page(ctx.driver, ctx.page)
    machines = [_MACHINE, Machine("win-amd64", "3.11", GpuChoice("nvidia", cc="12.0")),
                Machine("linux-x86_64", "3.10", GpuChoice("amd", gfx="gfx90a")),
                Machine("macos-arm64", "3.12", GpuChoice("none"), ">=2.5,<2.9")]
    for n, machine in enumerate(machines):
        describe(ctx.driver, ctx.matrix, machine, gpu=gpu_text(ctx.matrix, machine))
        shown = read(ctx.driver)
        assert shown["cli"] == cli_line(machine), shown["cli"]
        if n < 2:
            words = shlex.split(shown["cli"])
            assert words[:2] == ["torchenv", "resolve"]
            result = run_cli([*words[1:], "--json"])
            answer = json.loads(result.stdout)
            answer.pop("rejected", None)
            assert_shows(shown, answer)


def _machine_link(machine: Machine, gpu: str) -> str:
    return urlencode({"platform": machine.platform, "python": machine.python, "gpu": gpu,
                      "driver": machine.gpu.driver or "", "torch": machine.spec or ""})


def check_link_written(ctx: Ctx) -> None:
    """The page's address names the machine described, field by field."""
    from urllib.parse import parse_qs

    open_page(ctx.driver, ctx.page)
    machine = Machine("win-amd64", "3.11", GpuChoice("nvidia", cc="8.9", driver="566.03"),
                      "==2.7.*")
    describe(ctx.driver, ctx.matrix, machine, gpu="RTX 4090")
    shown = read(ctx.driver)
    given = {k: v[0] for k, v in parse_qs(shown["hash"][1:], keep_blank_values=True).items()}
    assert given == {"platform": "win-amd64", "python": "3.11", "gpu": "RTX 4090",
                     "driver": "566.03", "torch": "==2.7.*"}, given


def check_link_loaded(ctx: Ctx) -> None:
    """A link opened in a new tab shows its machine and that machine's answer."""
    machine = Machine("linux-aarch64", "3.11", GpuChoice("nvidia", cc="9.0", driver="560.35.03"))
    open_page(ctx.driver, ctx.page, _machine_link(machine, "9.0"))
    shown = read(ctx.driver)
    assert shown["fields"] == {"platform": "linux-aarch64", "python": "3.11", "gpu": "9.0",
                               "driver": "560.35.03", "torch": ""}, shown["fields"]
    assert_shows(shown, expected(ctx.matrix, machine))


def check_hash_change(ctx: Ctx) -> None:
    """A link opened in a tab that already shows the page: the new machine, without a reload."""
    open_page(ctx.driver, ctx.page)
    ctx.driver.execute_script("window.stillHere = true;")
    machine = Machine("win-amd64", "3.10", GpuChoice("nvidia", cc="7.5", driver="452.39"))
    before = ctx.driver.execute_script("return document.body.dataset.renders")
    ctx.driver.execute_script("location.hash = arguments[0];", _machine_link(machine, "7.5"))
    deadline = time.monotonic() + 5
    while ctx.driver.execute_script("return document.body.dataset.renders") == before:
        assert time.monotonic() < deadline, "the page did not react to the new link"
        time.sleep(0.05)
    assert ctx.driver.execute_script("return window.stillHere === true")
    shown = read(ctx.driver)
    assert shown["fields"]["platform"] == "win-amd64" and shown["fields"]["gpu"] == "7.5"
    assert_shows(shown, expected(ctx.matrix, machine))


def check_exact_specifier(ctx: Ctx) -> None:
    """``==X.Y`` is release X.Y.0 and ``X.Y`` the series, as the CLI reads them; the page
    answers each as resolve does."""
    from torchenv.values import TorchSpec

    open_page(ctx.driver, ctx.page)
    minor, releases = _series_with_releases(ctx, "linux-x86_64", "3.12")
    first = min(releases, key=TorchVersion)
    short = first[:-2] if first.endswith(".0") else first
    for spec in (f"=={short}", minor, f"=={minor}.*", f"~={minor}.0", max(releases)):
        machine = _MACHINE._replace(spec=spec)
        describe(ctx.driver, ctx.matrix, machine, gpu="8.6")
        answer = expected(ctx.matrix, machine)
        assert_shows(read(ctx.driver), answer)
    # the specifier as the page reads it is the CLI's: the releases each admits
    specs = ["==2.7", "2.7", "2.7.1", "==2.*", "!=2.7.*", ">=2.5,<2.9", "~=2.7.0", "~=2.7",
             ">2.7", "<=2.7.0", "==2.7.0.*", "== 2.7.*", ">=2.5, !=2.6.0", "2", "==02.07",
             "<2.14,>=2.14.0", "!=2.14", ">=1.13.0,<=1.13.1"]
    got = ctx.driver.execute_script(
        "return arguments[0].map((s) => window.torchenvExplorer.admits(s));", specs)
    for spec, admitted in zip(specs, got):
        want = [str(r.torch) for r in ctx.matrix.releases if TorchSpec(spec).contains(r.torch)]
        assert admitted == want, (spec, admitted, want)


def check_nothing_fits(ctx: Ctx) -> None:
    """A specifier that admits no release with a wheel for the machine is answered: nothing
    fits, with resolve's message and fixes (its exit 3), whatever series the page was made for."""
    open_page(ctx.driver, ctx.page)
    window = ctx.tables.windows["win-amd64|3.9"]
    gone = next(r for r in ctx.tables.releases if r not in window["releases"])
    for spec in (f"=={gone}", "==9.9", ">=99"):
        machine = Machine("win-amd64", "3.9", GpuChoice("nvidia", cc="8.6", driver="551.61"),
                          spec)
        describe(ctx.driver, ctx.matrix, machine, gpu="8.6")
        answer = expected(ctx.matrix, machine)
        assert answer["torch"] is None
        assert_shows(read(ctx.driver), answer)


def check_fresh_explanation(ctx: Ctx) -> None:
    """The reason shown for a cell is the cell's reason for the machine now described."""
    from selenium.webdriver.common.by import By

    open_page(ctx.driver, ctx.page)
    old = Machine("linux-x86_64", "3.12", GpuChoice("nvidia", cc="8.6", driver="450.80.02"))
    new = old._replace(gpu=GpuChoice("nvidia", cc="8.6", driver="580.65.06"))
    describe(ctx.driver, ctx.matrix, old, gpu="8.6")
    before = grid_cells(ctx.tables, TOKENS, old.platform, old.python, old.gpu)
    after = grid_cells(ctx.tables, TOKENS, new.platform, new.python, new.gpu)
    cell = next(c for c in before if before[c] and after[c] and before[c] != after[c])
    span = ctx.driver.find_element(
        By.CSS_SELECTOR, f".cell[data-torch='{cell[0]}'][data-variant='{cell[1]}']")
    ctx.driver.execute_script("arguments[0].focus();", span)
    detail = ctx.driver.find_element(By.ID, "cell-detail")
    assert before[cell][2] in detail.text
    type_text(ctx.driver, "driver", "580.65.06")
    assert detail.text == span.get_attribute("title"), detail.text
    assert after[cell][2] in detail.text and before[cell][2] not in detail.text


def check_gpu_names(ctx: Ctx) -> None:
    """GPU names as people type them are read as the catalog's models; a name that can mean
    models of different capabilities lists them."""
    open_page(ctx.driver, ctx.page)

    def models(*words: str) -> list[Any]:
        """The catalog's models whose name has every one of ``words``."""
        return [g for g in [*ctx.matrix.nvidia_gpus, *ctx.matrix.amd_gpus]
                if {w.lower() for w in words} <= set(g.name.lower().replace("-", " ").split())]

    for text, words in (("A100", ("A100",)), ("H100", ("H100",)), ("RTX 4090", ("RTX", "4090")),
                        ("4090", ("4090",)), ("MI300X", ("MI300X",)), ("rtx 5090", ("5090",))):
        found = models(*words)
        assert found, text
        keys = {str(getattr(g, "compute_capability", "")) or getattr(g, "gfx", "")
                for g in found}
        assert len(keys) == 1, (text, keys)
        got = ctx.driver.execute_script(
            "return window.torchenvExplorer.readGpu(arguments[0])", text)
        assert got["kind"] in ("nvidia", "amd"), (text, got)
        assert (got.get("cc") or got.get("gfx")) == keys.pop(), (text, got)
    # every name and alias of the catalog is its own model, as the catalog's lookup reads it
    names = [n for g in [*ctx.matrix.nvidia_gpus, *ctx.matrix.amd_gpus]
             for n in (g.name, *g.aliases)]
    got_all = ctx.driver.execute_script(
        "return arguments[0].map((n) => window.torchenvExplorer.readGpu(n));", names)
    for name, got in zip(names, got_all):
        nvidia, amd = ctx.matrix.nvidia_gpu(name), ctx.matrix.amd_gpu(name)
        want = str(nvidia.compute_capability) if nvidia else amd.gfx if amd else None
        assert want is not None and (got.get("cc") or got.get("gfx")) == want, (name, got)
    ambiguous = ctx.driver.execute_script(
        "return window.torchenvExplorer.readGpu('RTX')")
    assert ambiguous["kind"] == "ambiguous" and len(ambiguous["names"]) > 2, ambiguous
    # typed into the field, the name is the machine's GPU
    machine = Machine("linux-x86_64", "3.12", GpuChoice("nvidia", cc="8.0", driver="550.54.15"))
    describe(ctx.driver, ctx.matrix, machine, gpu="A100")
    assert_shows(read(ctx.driver), expected(ctx.matrix, machine))
    type_text(ctx.driver, "gpu", "RTX")
    assert read(ctx.driver)["state"] == "input"
    text = ctx.driver.execute_script("return document.getElementById('gpu-read').textContent")
    assert "RTX 4090" in text or "…" in text, text


_CONTRAST = """
function rgb(text) { return text.match(/[\\d.]+/g).slice(0, 3).map(Number); }
function lum(c) { const [r, g, b] = c.map((v) => { v /= 255;
  return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; });
  return 0.2126 * r + 0.7152 * g + 0.0722 * b; }
function ratio(a, b) { const [x, y] = [lum(rgb(a)), lum(rgb(b))].sort((p, q) => q - p);
  return (x + 0.05) / (y + 0.05); }
const out = {};
for (const s of ['ok', 'warn', 'no']) {
  const c = document.querySelector('.cell.' + s);
  if (!c) continue;
  const style = getComputedStyle(c);
  out[s] = ratio(style.color, style.backgroundColor);
}
return out;
"""


def check_verdict_marks(ctx: Ctx) -> None:
    """Verdicts differ by mark as well as colour, and each verdict's text is at least 4.5:1
    against its cell, in the light and the dark colour scheme."""
    open_page(ctx.driver, ctx.page)
    describe(ctx.driver, ctx.matrix, _MACHINE, gpu="8.6")
    try:
        for scheme in ("light", "dark"):
            _emulate(ctx.driver, None, scheme=scheme)
            marks = ctx.driver.execute_script("""
                const out = {};
                for (const c of document.querySelectorAll('.cell[data-status]')) {
                  (out[c.dataset.status] ||= new Set()).add(c.textContent.slice(0, -1)); }
                return Object.fromEntries(Object.entries(out).map(([k, v]) => [k, [...v]]));""")
            assert sorted(marks) == ["no", "ok", "warn"], marks
            assert all(len(v) == 1 and v[0] for v in marks.values()), marks
            assert len({v[0] for v in marks.values()}) == 3, marks
            ratios = ctx.driver.execute_script(_CONTRAST)
            assert sorted(ratios) == ["no", "ok", "warn"], ratios
            for status, value in ratios.items():
                assert value >= 4.5, (scheme, status, value)
    finally:
        _emulate(ctx.driver, None)


def check_focus_ring(ctx: Ctx) -> None:
    """The focused cell's ring is not the decision's outline, also on the decision itself."""
    open_page(ctx.driver, ctx.page)
    describe(ctx.driver, ctx.matrix, _MACHINE, gpu="8.6")
    outline = "const s = getComputedStyle(arguments[0]); return [s.outlineStyle, s.outlineColor];"
    chosen = ctx.driver.execute_script("return document.querySelector('.cell.chosen')")
    other = ctx.driver.execute_script(
        "return document.querySelector('.cell[data-status]:not(.chosen)')")
    plain = ctx.driver.execute_script(outline, chosen)
    assert plain[0] != "none"
    for cell in (chosen, other):
        ctx.driver.execute_script("arguments[0].focus();", cell)
        ring = ctx.driver.execute_script(outline, cell)
        assert ring[0] != "none" and ring != plain, (ring, plain)


def check_phone_layout(ctx: Ctx) -> None:
    """On a phone the answer comes first and starts on the first screen; at 320 px the page
    does not scroll sideways, even with every section of data open."""
    open_page(ctx.driver, ctx.page)
    try:
        _emulate(ctx.driver, PHONE[0], PHONE[1])
        top = ctx.driver.execute_script("""
            const at = (id) => document.getElementById(id).getBoundingClientRect().top;
            return [at('decision'), at('picker')];""")
        assert top[0] < top[1], top
        assert top[0] < PHONE[1] / 2, top
        _emulate(ctx.driver, NARROW, 640)
        ctx.driver.execute_script(
            "document.querySelectorAll('details').forEach((d) => { d.open = true; });")
        time.sleep(0.2)
        overflow = ctx.driver.execute_script(
            "return document.documentElement.scrollWidth - document.documentElement.clientWidth")
        assert overflow <= 0, f"the page scrolls {overflow} px sideways at {NARROW} px"
    finally:
        _emulate(ctx.driver, None)


CHECKS: dict[str, Callable[[Ctx], None]] = {
    "default_example": check_default_example,
    "grid_colours": check_grid_colours,
    "command_line": check_command_line,
    "link_written": check_link_written,
    "link_loaded": check_link_loaded,
    "hash_change": check_hash_change,
    "exact_specifier": check_exact_specifier,
    "nothing_fits": check_nothing_fits,
    "fresh_explanation": check_fresh_explanation,
    "gpu_names": check_gpu_names,
    "verdict_marks": check_verdict_marks,
    "focus_ring": check_focus_ring,
    "phone_layout": check_phone_layout,
}
