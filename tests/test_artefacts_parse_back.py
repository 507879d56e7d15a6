"""Every file torchenv generates is read back by its own format's parser, with hostile values
from each source that reaches it: characters outside the Basic Multilingual Plane, lone
surrogates, control and bidirectional characters, line breaks and quotes.

A value from outside may change what a file *says* (shown as ``?`` where the format cannot
hold it), never what the file *is*: the parsed document equals the one a benign value gives,
apart from that value itself. The sources: a GPU name in a host file reaches the environment
files through the plan's warnings; a check's error, a file name in a report folder reach the
JUnit files; paths and image names reach the sbatch script and the Kubernetes manifests;
runner labels reach the CI files.
"""

from __future__ import annotations

import base64
import gzip
import json
import os
import shlex
import subprocess
import sys
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
import yaml

from torchenv.cli import main
from torchenv.fleet.kubernetes import KubernetesJob, pod_script, render_yaml
from torchenv.fleet.node import NodeRun
from torchenv.validation.report import CheckResult, Report, write_junit

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

HOSTILE = {
    "line-break": "RTX\n--index-url https://evil.example/simple\n[tool.x]\nkey: 1",
    "carriage-return": "RTX\r--extra-index-url https://evil.example/",
    "line-separator": "RTX\u2028--index-url https://evil.example/\u2029",
    "control": "RTX\x00\x01\x07\x1b[2J\x1b]0;owned\x07\x7f",
    "c1": "RTX\x85\x9b31m",
    "bidi": "RTX \u202egnp.exe\u202c \u2066x\u2069",
    "non-bmp": "RTX \U0001F600 \U00020000 \U0010FFFD",
    "lone-surrogate": "RTX \udcff \ud800",
    "quotes": "RTX \"q\" 'a' `b` $(touch pwned) ${HOME} # x: [y]",
    "non-characters": "RTX \ufeff\ufffe\uffff",
}
BENIGN = "RTX 4090"
NOT_IN_A_FILE = set("\x00\x01\x07\x1b\x7f\x85\x9b\u2028\u2029\u202a\u202b\u202c\u202d\u202e"
                    "\u2066\u2067\u2068\u2069\ud800\udcff\ufffe\uffff")
"""What none of the formats may carry from a value: the parsed text never holds these."""


@pytest.fixture(autouse=True)
def _hermetic(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [k for k in os.environ if k.startswith("TORCHENV_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("TORCHENV_NO_OVERLAY", "1")


# ----------------------------------------------------------------------------- environment files

def _host(tmp_path: Path, gpu_name: str) -> Path:
    """A host whose GPU the plan's warning names: its build's arch list is not known."""
    path = tmp_path / f"host-{abs(hash(gpu_name))}.json"
    path.write_text(json.dumps({
        "platform": "linux-x86_64", "python": "3.12", "glibc": "2.35",
        "nvidia": {"driver_version": "580.65.06", "cuda_driver_version": "13.0",
                   "source": "nvml", "gpus": [{"index": 0, "name": gpu_name,
                                               "compute_capability": "9.0"}]}}))
    return path


def _env_file(tmp_path: Path, fmt: str, gpu_name: str,
              capsys: pytest.CaptureFixture[str]) -> tuple[str, str]:
    """The file ``env --format FMT -o`` writes, and the constraints file written beside it."""
    folder = tmp_path / f"{fmt}-{abs(hash(gpu_name))}"  # each with its constraints file
    folder.mkdir()
    out = folder / "out"
    status = main(["env", "--format", fmt, "--host", str(_host(tmp_path, gpu_name)),
                   "--torch", "2.11.0", "--variant", "cu129", "-o", str(out)])
    assert status == 0, capsys.readouterr().err
    return (out.read_text(encoding="utf-8"),
            (folder / "torch-constraints.txt").read_text(encoding="utf-8"))


def _requirements(text: str) -> list[list[str]]:
    """The entries of a requirements file as pip reads them: every line that is not a
    comment, split into words."""
    return [shlex.split(line) for line in text.splitlines()
            if line.strip() and not line.lstrip().startswith("#")]


PARSERS: dict[str, Any] = {
    "requirements": _requirements,
    "environment.yml": yaml.safe_load,
    "pyproject": tomllib.loads,
    "pixi": tomllib.loads,
}


@pytest.mark.parametrize("fmt", list(PARSERS))
@pytest.mark.parametrize("kind", list(HOSTILE))
def test_an_environment_file_reads_back_as_the_benign_one(
        fmt: str, kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    benign, benign_pins = _env_file(tmp_path, fmt, BENIGN, capsys)
    hostile, hostile_pins = _env_file(tmp_path, fmt, HOSTILE[kind], capsys)
    assert "RTX" in hostile  # the value is there: the warning names the GPU
    assert PARSERS[fmt](hostile) == PARSERS[fmt](benign)
    assert len(hostile.splitlines()) == len(benign.splitlines())
    assert not NOT_IN_A_FILE & set(hostile)
    assert _requirements(hostile_pins) == _requirements(benign_pins)  # pip reads it so
    assert not NOT_IN_A_FILE & set(hostile_pins)


# ----------------------------------------------------------------------------- JUnit

def _junit_report(value: str) -> Report:
    return Report(python=f"/opt/{value}/python", torch=f"2.7.1+{value}", level="quick",
                  checks=(CheckResult(name=f"matmul {value}", status="fail", error=value,
                                      hint=value, detail=value),
                          CheckResult(name="amp", status="skip", reason=value)))


@pytest.mark.parametrize("kind", list(HOSTILE))
def test_a_validate_junit_file_reads_back(kind: str, tmp_path: Path) -> None:
    value = HOSTILE[kind]
    write_junit(_junit_report(value), tmp_path / "report.xml")
    root = ET.parse(tmp_path / "report.xml").getroot()
    suite = root.find("testsuite")
    assert suite is not None
    failure = suite.find("testcase/failure")
    skipped = suite.find("testcase/skipped")
    assert failure is not None and skipped is not None
    shown = [failure.get("message") or "", skipped.get("message") or "", failure.text or ""]
    for text in shown:
        assert text.startswith("RTX") and not NOT_IN_A_FILE & set(text)
    if kind in ("non-bmp", "quotes"):
        assert failure.get("message") == value  # what XML can hold is kept whole


@pytest.mark.parametrize("kind", ["control", "c1", "bidi", "non-bmp", "quotes",
                                  "lone-surrogate"])
def test_a_fleet_junit_file_reads_back(kind: str, tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    """A node's check error and a file name in the report folder reach the fleet's file."""
    folder = tmp_path / "reports"
    folder.mkdir()
    (folder / "node-1.validate.json").write_text(json.dumps(
        _junit_report(HOSTILE[kind]).to_json()))
    strange = HOSTILE[kind].replace("/", "_").replace("\x00", "").encode("utf-8",
                                                                           "surrogatepass")
    with open(os.path.join(os.fsencode(folder), strange + b".log"), "w") as fh:
        fh.write("not a log of reports\n")
    main(["fleet", "report", str(folder), "--junit", str(tmp_path / "fleet.xml")])
    capsys.readouterr()
    root = ET.parse(tmp_path / "fleet.xml").getroot()
    texts = [v for e in root.iter() for v in (e.text or "", *e.attrib.values())]
    assert any("RTX" in t for t in texts)
    assert not NOT_IN_A_FILE & set("".join(texts))


# ----------------------------------------------------------------------------- sbatch

SHELL_SAFE = ["bidi", "non-bmp", "quotes", "c1", "non-characters"]
"""Values a folder name may hold that the command line accepts (it refuses C0 controls)."""


@pytest.mark.parametrize("kind", SHELL_SAFE)
def test_an_sbatch_script_reads_back_with_the_value_whole(
        kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    output_dir = str(tmp_path / HOSTILE[kind].replace("/", "_"))
    script = tmp_path / "job.sbatch"
    status = main(["fleet", "slurm", "--nodes", "2", "--gpus-per-node", "8",
                   "--output-dir", output_dir, "-o", str(script)])
    assert status == 0, capsys.readouterr().err
    text = script.read_text(encoding="utf-8")
    syntax = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True,
                            check=False)
    assert syntax.returncode == 0, syntax.stderr
    head = text.split("# What every node runs.", 1)[0]
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "scontrol").write_text("#!/bin/sh\necho node-a\n")
    (bin_dir / "scontrol").chmod(0o755)
    proc = subprocess.run(["bash", "-c", head + 'printf "%s" "$FLEET_REPORT_DIR"'],
                          capture_output=True, cwd=tmp_path, check=False,
                          env={"PATH": f"{bin_dir}:/usr/bin:/bin", "SLURM_JOB_ID": "7",
                               "SLURM_JOB_NODELIST": "node-a"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.decode("utf-8") == f"{output_dir}/7"
    assert not list(tmp_path.glob("pwned*"))


@pytest.mark.parametrize("kind", ["line-break", "control", "lone-surrogate"])
def test_an_sbatch_script_is_not_written_for_a_value_it_cannot_carry(
        kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "job.sbatch"
    status = main(["fleet", "slurm", "--nodes", "2", "--gpus-per-node", "8",
                   "--output-dir", str(tmp_path / HOSTILE[kind].replace("/", "_")),
                   "-o", str(script)])
    assert status == 2
    assert "Traceback" not in capsys.readouterr().err
    assert not script.exists() and os.listdir(tmp_path) == []


# ----------------------------------------------------------------------------- Kubernetes

@pytest.mark.parametrize("kind", list(HOSTILE))
def test_kubernetes_manifests_read_back_with_the_values(kind: str, tmp_path: Path) -> None:
    value = HOSTILE[kind]
    job = KubernetesJob(nodes=2, gpus_per_node=8, image=f"registry.example/{value}:1",
                        run=NodeRun(python=f"/opt/{value}/bin/python"))
    text = render_yaml(job)
    docs = [d for d in yaml.safe_load_all(text) if d]
    assert docs
    images = [c["image"] for d in docs if d.get("kind") == "Job"
              for c in d["spec"]["template"]["spec"]["containers"]]
    assert images == [job.image]
    script = tmp_path / "pod.sh"
    script.write_text("#!/bin/bash\n" + pod_script(job), encoding="utf-8",
                      errors="surrogateescape")
    syntax = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True,
                            check=False)
    assert syntax.returncode == 0, syntax.stderr


# ----------------------------------------------------------------------------- CI files

@pytest.mark.parametrize("fmt", ["github", "gitlab"])
@pytest.mark.parametrize("kind", ["line-break", "control", "c1", "bidi", "non-bmp",
                                  "quotes", "line-separator", "non-characters"])
def test_ci_files_read_back_with_the_runner_label(fmt: str, kind: str, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    label = HOSTILE[kind]
    out = tmp_path / "ci.yml"
    status = main(["matrix", "ci", "--format", fmt, "--torch", "2.7.1", "--python", "3.12",
                   "--runner", f"linux-x86_64={label}", "-o", str(out)])
    assert status == 0, capsys.readouterr().err
    text = out.read_text(encoding="utf-8")
    doc = json.loads(text) if fmt == "github" else yaml.safe_load(text)  # GitHub reads JSON
    if fmt == "github":
        labels = {row["os"] for row in doc["include"] if row["platform"] == "linux-x86_64"}
    else:
        labels = {v["RUNNER"] for job in doc.values() if isinstance(job, dict)
                  for entry in job.get("parallel", {}).get("matrix", [])
                  for v in [entry] if v.get("PLATFORM") == "linux-x86_64"}
    assert labels == {label.strip()}  # the flag's value, trimmed as every value is


# ----------------------------------------------------------------------------- the explorer page

class _Elements(HTMLParser):
    """The start tags of a page and the text of each ``<script>``, as a browser tokenises it."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.scripts: list[tuple[dict[str, str | None], str]] = []
        self._in_script: dict[str, str | None] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        if tag == "script":
            self._in_script = dict(attrs)
            self.scripts.append((self._in_script, ""))

    def handle_data(self, data: str) -> None:
        if self._in_script is not None:
            attrs, text = self.scripts[-1]
            self.scripts[-1] = (attrs, text + data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._in_script = None


@pytest.mark.parametrize("kind", [k for k in HOSTILE if k not in ("lone-surrogate",
                                                                  "non-characters")])
def test_the_explorer_page_reads_back_with_an_overlay_sources_title(kind: str,
                                                                    tmp_path: Path) -> None:
    """A source's title from an overlay reaches the page's data, never its markup (YAML itself
    refuses lone surrogates and the non-characters)."""
    from torchenv.explorer.page import render_page
    from torchenv.explorer.tables import Tables
    from torchenv.matrix.loader import load_matrix

    title = HOSTILE[kind].replace("\x00", "") + " </script><script>alert(1)</script>"
    overlay = tmp_path / "overlay.yaml"
    overlay.write_text(yaml.safe_dump({"sources": [{"id": "hostile-source", "title": title,
                                                    "url": "https://example.org/x"}]}))
    matrix = load_matrix(overlay=overlay)
    assert matrix.overlay_error is None, matrix.overlay_error
    page = render_page(matrix, Tables(plans=[], windows={}, grid={}, verdicts=[],
                                      specifiers=[], releases=[]))
    parsed = _Elements()
    parsed.feed(page)
    assert [a.get("id") for a, _ in parsed.scripts] == ["data", None]  # no script of its own
    data = json.loads(gzip.decompress(base64.b64decode(parsed.scripts[0][1])))
    assert data["matrix"]["sources"]["hostile-source"]["title"] == title
