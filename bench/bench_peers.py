"""torchenv's detection and ``resolve`` side by side with light-the-torch, uv and torchruntime.

Usage: python bench/bench_peers.py [-n RUNS] [--only PATH ...] [--hung-runs N] [--hang-limit S]
                                   [--probe-timeout S] [--peers-dir DIR] [--upgrade-peers]
                                   [--no-pyc] [--cwd DIR]

The peers come from PyPI (pip) into a private virtual environment made from this interpreter,
by default ``<tmp>/torchenv-bench-peers/py3XY`` (reused by later runs); a peer that cannot be
installed is skipped with a message. Every row is one whole process, timed from spawn to exit
(process to process: interpreter start and imports count for every tool alike). The rows of a
path run round-robin in one loop (A B C A B C ...); the first round is not counted, and its
output fills the "answer" column (what each tool concluded).

Rows
  torchenv detect     ``python -m torchenv detect --json``
  torchenv resolve    ``python -m torchenv resolve --json`` (detection included)
  light-the-torch     ``python -c``: ``detect_compatible_computation_backends()`` of
                      ``light_the_torch._cb``, the detection its patched pip calls (it has no
                      public detection API): one
                      ``nvidia-smi --query-gpu=driver_version --format=csv``, without a timeout
  uv                  ``uv pip install --dry-run --offline --torch-backend auto torch`` into the
                      private environment, with a private empty cache. uv has no command that only
                      detects; this one reads the driver (/sys/module/nvidia/version, then
                      /proc/driver/nvidia/version, then ``nvidia-smi --query-gpu=driver_version
                      --format=csv,noheader``, no timeout) and then fails at once, offline, to
                      find torch (exit 1, expected): detection plus uv's start-up and an empty
                      resolution
  torchruntime        ``python -c``: ``torchruntime.device_db.get_gpus()``, its GPU discovery:
                      ``lspci -nn`` matched against its PCI-id database; it runs neither
                      nvidia-smi nor NVML
  baseline            ``python -c "import packaging.version, yaml"`` (torchenv's interpreter)

Paths (every tool of a path sees the same fake hardware; PATH holds only the fake tools)
  nvidia-smi: PROFILE a stand-in ``nvidia-smi`` (and ``lspci`` for torchruntime) per profile.
                      torchenv is pointed at it with TORCHENV_NVIDIA_SMI and
                      TORCHENV_NVML_LIBRARY=off, the peers find it on PATH. The plain table and
                      ``--version`` answers are captured output (tests/detection/data; sources in
                      its README). No capture of these exact ``--query-gpu`` forms exists, so a
                      query is answered in nvidia-smi's CSV shape from the facts the captured table
                      shows (names, memory, driver, bus ids), compute capability from NVIDIA's
                      list for the model; on the 440 driver every ``compute_cap`` query gets the
                      captured 'not a valid field' error (exit 2), as nvidia-smi up to the 470
                      branch does. torchenv leaves the field out at once when the loaded kernel
                      module (/proc/driver/nvidia/version) is of such a branch and nvidia-smi is
                      the driver's own (/usr/bin); these stand-in hosts have neither, so it
                      asks, is refused, and asks again.
                      The ``lspci -nn`` lines are real lspci lines for these models at the bus ids
                      of the table. Arguments with no recorded answer are listed after the run.
  nvml                the stand-in libnvidia-ml.so.1 (tests/detection/fake_nvml.c, built with cc)
                      through TORCHENV_NVML_LIBRARY and FAKE_NVML_GPUS: the H100 x8 host of the
                      nvidia-smi path. No peer reads NVML: their rows say n/a.
  no-gpu              no nvidia-smi, no lspci, no NVML library.
  hung                an ``nvidia-smi`` that never answers. Each run is killed at --hang-limit
                      (default 10 s) and shown as ">= limit"; torchenv gives up after its probe
                      timeout (TORCHENV_PROBE_TIMEOUT, at most and by default 5 s).

Columns: median and min seconds over RUNS rounds; "resolve/tool" and "detect/tool" are paired
ratios: the median over rounds of torchenv's time divided by that tool's time in the same round.

Targets
  * nvidia-smi path, every profile: ``resolve --json`` <= 2x light-the-torch's detection alone
    (paired).
  * nvml path, 8 GPUs: ``detect --json`` <= 2x ``python -c "import packaging.version, yaml"``
    (paired).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _timing import (
    PYTHON,
    REPO,
    Outcome,
    build_fake_nvml,
    clean_env,
    describe,
    median,
    paired_ratio,
    print_grid,
    run_bounded,
    set_options,
)

DATA = REPO / "tests" / "detection" / "data"
BASELINE_SRC = "import packaging.version, yaml"
RESOLVE_TARGET = 2.0  # x light-the-torch's detection alone, nvidia-smi path
NVML_TARGET = 2.0  # x baseline, nvml path with 8 GPUs
PATHS = ("nvidia-smi", "nvml", "no-gpu", "hung")
NORMAL_LIMIT_S = 60.0  # a run that is not meant to hang, killed only if something is wrong

LTT_SRC = """\
from light_the_torch._cb import detect_compatible_computation_backends as detect
cuda = sorted((b for b in detect() if str(b).startswith("cu")), key=lambda b: (b.major, b.minor))
print(cuda[-1] if cuda else "cpu")
"""
TORCHRUNTIME_SRC = """\
from torchruntime.device_db import get_gpus
from torchruntime.platform_detection import get_torch_platform
gpus = get_gpus()
print(len(gpus), get_torch_platform(gpus))
"""


# --- fake hardware ---------------------------------------------------------------------------


@dataclass(frozen=True)
class SmiGpu:
    name: str
    compute_cap: str
    memory_mib: int
    bus: str  # as the captured table prints it, e.g. "18:00.0"
    lspci: str  # the lspci -nn text after the bus id, for this model


@dataclass(frozen=True)
class SmiProfile:
    key: str
    driver: str
    table: str  # captured plain `nvidia-smi` output in tests/detection/data
    gpus: tuple[SmiGpu, ...]
    version: Optional[str] = None  # captured `nvidia-smi --version`, where one exists
    has_compute_cap: bool = True


H100_LSPCI = "3D controller [0302]: NVIDIA Corporation GH100 [H100 SXM5 80GB] [10de:2330] (rev a1)"
PROFILES = (
    SmiProfile(
        "rtx4080s-595", "595.71.05", "table_single_rtx4080super_595.71.05_fedora44.txt",
        (SmiGpu("NVIDIA GeForce RTX 4080 SUPER", "8.9", 16376, "01:00.0",
                "VGA compatible controller [0300]: NVIDIA Corporation AD103 "
                "[GeForce RTX 4080 SUPER] [10de:2702] (rev a1)"),)),
    SmiProfile(
        "h100x8-565", "565.57.01", "table_8x_h100_sxm_565.57.01.txt",
        tuple(SmiGpu("NVIDIA H100 80GB HBM3", "9.0", 81559, f"{bus}:00.0", H100_LSPCI)
              for bus in ("18", "2a", "3a", "5d", "9a", "ab", "ba", "db"))),
    SmiProfile(
        "rtx2080s-610", "610.57.04", "table_kmd_umd_header_rtx2080super_610.57.04.txt",
        (SmiGpu("NVIDIA GeForce RTX 2080 SUPER", "7.5", 8192, "0c:00.0",
                "VGA compatible controller [0300]: NVIDIA Corporation TU104 "
                "[GeForce RTX 2080 SUPER] [10de:1e81] (rev a1)"),),
        version="version_610.57.04_kmd.txt"),
    SmiProfile(
        # the capture truncates the name ("GeForce RTX 207..."); the query answer spells it out
        "rtx2070m-440-no-cc", "440.100", "table_old_440.100_rtx2070_laptop.txt",
        (SmiGpu("GeForce RTX 2070", "7.5", 7973, "01:00.0",
                "VGA compatible controller [0300]: NVIDIA Corporation TU106M "
                "[GeForce RTX 2070 Mobile] [10de:1f10] (rev a1)"),),
        has_compute_cap=False),
)
NO_CC_ERROR = "error_compute_cap_not_a_valid_field_smi470.txt"
NVML_GPUS = ";".join(["NVIDIA H100 80GB HBM3:9.0:81559:0"] * 8)  # the h100x8-565 host
NVML_DRIVER = ("565.57.01", "12070")  # driver, CUDA 12.7 as NVML's int (from the same table)


def _query_forms() -> list[tuple[tuple[str, ...], str]]:
    """Every --query-gpu form the tools here use, in the four --format spellings."""
    from torchenv.detection._nvidia_smi import QUERY_FIELDS, QUERY_FIELDS_NO_CC

    field_sets = [QUERY_FIELDS, QUERY_FIELDS_NO_CC, ("driver_version",)]
    formats = ["csv", "csv,noheader", "csv,nounits", "csv,noheader,nounits"]
    return [(f, fmt) for f in field_sets for fmt in formats]


def _query_answer(profile: SmiProfile, fields: tuple[str, ...], fmt: str) -> str:
    units = "nounits" not in fmt
    lines = []
    if "noheader" not in fmt:
        lines.append(", ".join(f + (" [MiB]" if f.startswith("memory.") else "")
                               for f in fields))
    for i, gpu in enumerate(profile.gpus):
        values = {"index": str(i), "name": gpu.name, "compute_cap": gpu.compute_cap,
                  "memory.total": f"{gpu.memory_mib}" + (" MiB" if units else ""),
                  "uuid": f"GPU-{i:08x}-0000-0000-0000-{i:012x}",
                  "driver_version": profile.driver}
        lines.append(", ".join(values[f] for f in fields))
    return "\n".join(lines) + "\n"


def _tool(path: Path, body: str) -> None:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)


def write_smi_profile(profile: SmiProfile, root: Path) -> Path:
    """A folder with the stand-in ``nvidia-smi`` and ``lspci`` for ``profile``; returns it."""
    folder = root / profile.key
    (folder / "answers").mkdir(parents=True)
    cat = shutil.which("cat") or "/bin/cat"
    answers: list[tuple[str, str, int]] = []  # ("$*", answer file, exit status)

    def answer(args: str, name: str, text: str, status: int = 0) -> None:
        (folder / "answers" / name).write_text(text)
        answers.append((args, name, status))

    answer("", "table.txt", (DATA / profile.table).read_text())
    if profile.version:
        answer("--version", "version.txt", (DATA / profile.version).read_text())
    no_cc = (DATA / NO_CC_ERROR).read_text()
    for n, (fields, fmt) in enumerate(_query_forms()):
        args = f"--query-gpu={','.join(fields)} --format={fmt}"
        if "compute_cap" in fields and not profile.has_compute_cap:
            answer(args, f"query{n}.txt", no_cc, 2)
        else:
            answer(args, f"query{n}.txt", _query_answer(profile, fields, fmt))
    d = shlex.quote(str(folder))
    cases = "".join(
        f"{shlex.quote(args)}) " + (f"exec {cat} {d}/answers/{name}" if status == 0 else
                                    f"{cat} {d}/answers/{name}; exit {status}") + " ;;\n"
        for args, name, status in answers)
    _tool(folder / "nvidia-smi",
          f"# stand-in nvidia-smi ({profile.key}), written by bench/bench_peers.py\n"
          f"case \"$*\" in\n{cases}esac\n"
          f"printf '%s\\n' \"$*\" >> {d}/unanswered.log\n"
          "echo 'stand-in nvidia-smi: no recorded answer for these arguments' >&2\nexit 2\n")
    lspci = "".join(f"{g.bus} {g.lspci}\n" for g in profile.gpus)
    answer("-nn", "lspci.txt", lspci)
    _tool(folder / "lspci",
          f"case \"$*\" in\n'-nn') exec {cat} {d}/answers/lspci.txt ;;\nesac\n"
          f"printf 'lspci %s\\n' \"$*\" >> {d}/unanswered.log\nexit 1\n")
    return folder


def write_hung_smi(root: Path) -> Path:
    folder = root / "hung"
    folder.mkdir()
    sleep = shutil.which("sleep") or "/bin/sleep"
    # exec: the sleeping process is the nvidia-smi the tool waits on, and dies with its group
    _tool(folder / "nvidia-smi", f"exec {sleep} 3600\n")
    return folder


def unanswered(folder: Path) -> list[str]:
    log = folder / "unanswered.log"
    return sorted(set(log.read_text().splitlines())) if log.exists() else []


def real_driver_files() -> list[str]:
    """This machine's own driver files, which uv reads before nvidia-smi (and torchenv reads
    before nvidia-smi too): where they exist, those tools see the real driver."""
    return [p for p in ("/sys/module/nvidia/version", "/proc/driver/nvidia/version")
            if os.path.exists(p)]


def real_nvml_library() -> bool:
    dirs = [d for d in os.environ.get("LD_LIBRARY_PATH", "").split(":") if d]
    dirs += ["/lib", "/usr/lib", "/lib64", "/usr/lib64", "/usr/lib/x86_64-linux-gnu",
             "/usr/lib/aarch64-linux-gnu", "/usr/lib/wsl/lib"]
    if any(os.path.exists(os.path.join(d, "libnvidia-ml.so.1")) for d in dirs):
        return True
    try:
        with open("/etc/ld.so.cache", "rb") as cache:
            return b"libnvidia-ml.so.1" in cache.read()
    except OSError:
        return False


# --- peers -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Peers:
    python: str
    uv: Optional[str]
    versions: dict[str, str]  # distribution -> version, for those installed


PEER_DISTS = ("light-the-torch", "uv", "torchruntime")


def _bin(venv: Path, name: str) -> Path:
    return venv / ("Scripts" if os.name == "nt" else "bin") / (
        name + (".exe" if os.name == "nt" else ""))


def install_peers(peers_dir: Path, upgrade: bool) -> Optional[Peers]:
    venv = peers_dir / f"py{sys.version_info[0]}{sys.version_info[1]}"
    py = _bin(venv, "python")
    if not py.exists():
        venv.parent.mkdir(parents=True, exist_ok=True)
        made = subprocess.run([sys.executable, "-m", "venv", str(venv)], capture_output=True,
                              text=True)
        if made.returncode != 0:
            print(f"peers skipped: could not create a virtual environment at {venv}: "
                  f"{(made.stderr.strip().splitlines() or ['?'])[-1]}")
            return None
    versions: dict[str, str] = {}
    for dist in PEER_DISTS:
        version = _installed(py, dist)
        if version is None or upgrade:
            cmd = [str(py), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
            got = subprocess.run([*cmd, *(["--upgrade"] if upgrade else []), dist],
                                 capture_output=True, text=True)
            version = _installed(py, dist)
            if got.returncode != 0 or version is None:
                tail = (got.stderr.strip().splitlines() or ["no message"])[-1]
                print(f"{dist} skipped: pip could not install it from PyPI ({tail})")
                continue
        versions[dist] = version
    uv = _bin(venv, "uv")
    return Peers(str(py), str(uv) if "uv" in versions and uv.exists() else None, versions)


def _installed(py: Path, dist: str) -> Optional[str]:
    got = subprocess.run([str(py), "-c", "import importlib.metadata as m, sys; "
                          "print(m.version(sys.argv[1]))", dist], capture_output=True, text=True)
    return got.stdout.strip() if got.returncode == 0 else None


# --- cases -----------------------------------------------------------------------------------


@dataclass
class Case:
    """One row: the timed command, the command of the first (answer) round, accepted exits."""

    tool: str
    argv: list[str]
    answer_argv: list[str]
    ok: frozenset[int]
    answer: Callable[[Outcome], str]
    limit: float = NORMAL_LIMIT_S
    times: list[float] = field(default_factory=list)
    killed: int = 0
    said: str = ""
    error: str = ""


def _first_line(text: str, width: int = 70) -> str:
    line = next((s.strip() for s in text.splitlines() if s.strip()), "")
    return line if len(line) <= width else line[:width - 3] + "..."


def _detect_answer(o: Outcome) -> str:
    doc = json.loads(o.stdout)
    nv = doc.get("nvidia")
    if not nv:
        warnings = doc.get("warnings") or []
        # a warning names the stand-in by its temporary path: keep only the file name
        return "no NVIDIA facts" + (
            "; " + _first_line(re.sub(r"/\S*/", "", warnings[0]), 52) if warnings else "")
    caps = sorted({g.get("compute_capability") or "?" for g in nv.get("gpus", [])})
    return (f"driver {nv.get('driver_version')} via {nv.get('source')}, "
            f"{len(nv.get('gpus', []))} GPU(s) cc {'/'.join(caps)}")


def _resolve_answer(o: Outcome) -> str:
    doc = json.loads(o.stdout)
    if doc.get("error"):
        return f"exit {o.returncode}: " + _first_line(doc["error"], 60)
    return f"torch {doc.get('torch')} {doc.get('variant')}"


def _uv_answer(o: Outcome) -> str:
    m = re.search(r"Detected CUDA driver version from `([^`]+)`: (\S+)", o.stderr)
    if m:
        return f"driver {m.group(2)} from {m.group(1)}"
    failed = re.search(r"Failed to query `nvidia-smi`[^\n]*", o.stderr)
    return _first_line(failed.group(0)) if failed else "no driver found (CPU index)"


def _stdout_answer(o: Outcome) -> str:
    return _first_line(o.stdout)


def torchenv_cases() -> list[Case]:
    detect = [PYTHON, "-m", "torchenv", "detect", "--json"]
    resolve = [PYTHON, "-m", "torchenv", "resolve", "--json"]
    ok = frozenset({0, 3})  # 3: nothing satisfies the request, a result like any other
    return [Case("torchenv detect --json", detect, detect, ok, _detect_answer),
            Case("torchenv resolve --json", resolve, resolve, ok, _resolve_answer)]


def peer_cases(peers: Optional[Peers], *, why_not: Optional[str] = None,
               pci: bool = True) -> list[tuple[str, Optional[Case]]]:
    """(tool, case) for each peer; the case is None, and the row says n/a with ``why_not``,
    where the peer is not installed or does not read this path's fake hardware."""
    versions = peers.versions if peers else {}
    rows: list[tuple[str, Optional[Case]]] = []

    def add(dist: str, make: Callable[[Peers], Case], reads: bool = True) -> None:
        tool = f"{dist} {versions.get(dist, '')}".strip()
        if peers is None or dist not in versions:
            rows.append((f"{tool} (n/a: not installed)", None))
        elif why_not is not None or not reads:
            rows.append((f"{tool} (n/a: {why_not or 'reads no nvidia-smi'})", None))
        else:
            case = make(peers)
            case.tool = tool
            rows.append((tool, case))

    def ltt(pp: Peers) -> Case:
        argv = [pp.python, "-c", LTT_SRC]
        return Case("", argv, argv, frozenset({0}), _stdout_answer)

    def uv(pp: Peers) -> Case:
        assert pp.uv is not None
        argv = [pp.uv, "pip", "install", "--no-config", "--dry-run", "--offline",
                "--torch-backend", "auto", "--python", pp.python, "torch"]
        return Case("", argv, [*argv, "-v"], frozenset({0, 1}), _uv_answer)

    def torchruntime(pp: Peers) -> Case:
        argv = [pp.python, "-c", TORCHRUNTIME_SRC]
        return Case("", argv, argv, frozenset({0}), _stdout_answer)

    add("light-the-torch", ltt)
    add("uv", uv)
    add("torchruntime", torchruntime, reads=pci)
    return rows


def baseline_case() -> Case:
    argv = [PYTHON, "-c", BASELINE_SRC]
    return Case("baseline: import packaging.version, yaml", argv, argv, frozenset({0}),
                lambda o: "-")


# --- running ---------------------------------------------------------------------------------


@dataclass
class PathResult:
    name: str
    rows: list[tuple[str, Optional[Case]]]
    notes: list[str] = field(default_factory=list)


def run_path(name: str, rows: list[tuple[str, Optional[Case]]], env: Mapping[str, str],
             runs: int) -> PathResult:
    cases = [c for _, c in rows if c is not None]
    print(f"  {name}: {len(cases)} tools x {runs} rounds (+1 answer round)", flush=True)
    for case in cases:  # the answer round, not counted: fills caches, records each answer
        o = run_bounded(case.answer_argv, env, timeout=case.limit, capture=True)
        if o.timed_out:
            case.said = f"killed at {case.limit:g} s"
        elif o.returncode not in case.ok:
            case.error = f"exit {o.returncode}: {_first_line(o.stderr or o.stdout)}"
        else:
            try:
                case.said = case.answer(o)
            except (ValueError, KeyError, TypeError) as exc:
                case.said = f"(unreadable answer: {exc})"
    live = [c for c in cases if not c.error]
    for _ in range(runs):
        for case in live:
            o = run_bounded(case.argv, env, timeout=case.limit)
            if o.timed_out:
                case.killed += 1
            elif o.returncode not in case.ok:
                case.error = f"exit {o.returncode}: {_first_line(o.stderr)}"
            case.times.append(o.ms)
    return PathResult(name, rows)


def _seconds(xs: Sequence[float], killed: int, pick: Callable[[Sequence[float]], float]) -> str:
    text = f"{pick(xs) / 1000.0:.3f}"
    return (">=" + text) if killed else text


def _ratio(num: Optional[Case], den: Case) -> str:
    if num is None or not num.times or not den.times or num.error or den.error:
        return "-"
    r = paired_ratio(num.times, den.times)
    if r is None:
        return "-"
    # a killed run's time is a lower bound: the ratio is an upper bound
    return ("<=" if den.killed and not num.killed else "") + f"{r:.2f}x"


def table_rows(result: PathResult) -> list[list[str]]:
    by_tool = dict(result.rows)
    detect = by_tool.get("torchenv detect --json")
    resolve = by_tool.get("torchenv resolve --json")
    out = []
    for tool, case in result.rows:
        if case is None:
            out.append([result.name, tool, "-", "n/a", "n/a", "-", "-", "-"])
            continue
        own = case in (detect, resolve)
        times = case.times
        out.append([
            result.name, tool, str(len(times)),
            _seconds(times, case.killed, median) if times else "-",
            _seconds(times, case.killed, min) if times else "-",
            "-" if own else _ratio(resolve, case),
            "-" if own else _ratio(detect, case),
            case.error or case.said,
        ])
    return out


def verdicts(results: Sequence[PathResult]) -> list[list[str]]:
    lines = []
    for result in results:
        cases = {tool.split()[0] if tool.startswith("light-the-torch") else tool: case
                 for tool, case in result.rows}
        if result.name.startswith("nvidia-smi"):
            num, den = cases.get("torchenv resolve --json"), cases.get("light-the-torch")
            what, bound = "resolve --json / light-the-torch detection", RESOLVE_TARGET
        elif result.name.startswith("nvml"):
            num = cases.get("torchenv detect --json")
            den = cases.get("baseline: import packaging.version, yaml")
            what, bound = "detect --json / import packaging.version, yaml", NVML_TARGET
        else:
            continue
        r = (paired_ratio(num.times, den.times)
             if num and den and num.times and den.times and not (num.error or den.error)
             else None)
        if r is None:
            lines.append([result.name, what, f"<= {bound}x", "-", "n/a (a row is missing)"])
        else:
            lines.append([result.name, what, f"<= {bound}x", f"{r:.2f}x",
                          "PASS" if r <= bound else "FAIL"])
    return lines


def main(argv: Optional[Sequence[str]] = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("-n", "--runs", type=int, default=20,
                   help="measured rounds per path (default 20); one extra answer round")
    p.add_argument("--no-pyc", action="store_true",
                   help="do not give children a bytecode cache (keeps PYTHONDONTWRITEBYTECODE)")
    p.add_argument("--cwd", default=None,
                   help="directory children run in (default: a fresh empty temp dir)")
    p.add_argument("--only", action="append", choices=PATHS,
                   help="run only this path (repeatable)")
    p.add_argument("--hung-runs", type=int, default=2,
                   help="measured rounds on the hung path (default 2; each takes ~2 x limit)")
    p.add_argument("--hang-limit", type=float, default=10.0,
                   help="seconds after which a run on the hung path is killed (default 10)")
    p.add_argument("--probe-timeout", type=float,
                   help="TORCHENV_PROBE_TIMEOUT for the hung path (default: unset, 5 s)")
    p.add_argument("--peers-dir", type=Path,
                   default=Path(tempfile.gettempdir()) / "torchenv-bench-peers",
                   help="where the peers' virtual environment lives (default: %(default)s)")
    p.add_argument("--upgrade-peers", action="store_true",
                   help="pip install --upgrade the peers before measuring")
    args = p.parse_args(argv)
    set_options(pyc=not args.no_pyc, cwd=args.cwd)
    only = set(args.only or PATHS)

    peers = install_peers(args.peers_dir, args.upgrade_peers)
    print(describe())
    print("peers: " + (", ".join(f"{d} {v}" for d, v in peers.versions.items())
                       if peers and peers.versions else "none installed")
          + (f" (in {Path(peers.python).parent.parent})" if peers else ""))
    print(f"rounds per path: {args.runs} (hung path: {args.hung_runs}), alternating")
    for found in real_driver_files():
        print(f"note: {found} exists on this machine; uv and torchenv read it before "
              "nvidia-smi, so their nvidia-smi rows describe this machine's driver")

    results: list[PathResult] = []
    with tempfile.TemporaryDirectory(prefix="torchenv-bench-peers-") as tmp:
        root = Path(tmp)
        empty = root / "empty-bin"
        empty.mkdir()
        uv_cache = root / "uv-cache"
        # the `hung` and `nvidia-smi` folders hold nothing but the stand-ins: PATH is only them
        if "nvidia-smi" in only:
            for profile in PROFILES:
                folder = write_smi_profile(profile, root)
                env = clean_env(PATH=str(folder), TORCHENV_NVIDIA_SMI=str(folder / "nvidia-smi"),
                                TORCHENV_NVML_LIBRARY="off", UV_CACHE_DIR=str(uv_cache))
                rows = [(c.tool, c) for c in torchenv_cases()] + peer_cases(peers)
                result = run_path(f"nvidia-smi: {profile.key}", rows, env, args.runs)
                result.notes = [f"{profile.key}: no recorded answer for: {a!r}"
                                for a in unanswered(folder)]
                results.append(result)
        if "nvml" in only:
            lib = build_fake_nvml(root)
            if lib is None:
                print("nvml path skipped: no C compiler to build tests/detection/fake_nvml.c")
            else:
                env = clean_env(PATH=str(empty), TORCHENV_NVML_LIBRARY=str(lib),
                                FAKE_NVML_GPUS=NVML_GPUS, FAKE_NVML_DRIVER=NVML_DRIVER[0],
                                FAKE_NVML_CUDA=NVML_DRIVER[1], UV_CACHE_DIR=str(uv_cache))
                rows = ([(c.tool, c) for c in torchenv_cases()]
                        + peer_cases(peers, why_not="reads no NVML")
                        + [(baseline_case().tool, baseline_case())])
                results.append(run_path("nvml: 8x H100 (stand-in)", rows, env, args.runs))
        if "no-gpu" in only:
            extra = {"TORCHENV_NVML_LIBRARY": "off"} if real_nvml_library() else {}
            if extra:
                print("note: this machine has a libnvidia-ml.so.1; the no-gpu path turns "
                      "torchenv's NVML probe off (TORCHENV_NVML_LIBRARY=off)")
            env = clean_env(PATH=str(empty), UV_CACHE_DIR=str(uv_cache), **extra)
            rows = ([(c.tool, c) for c in torchenv_cases()] + peer_cases(peers)
                    + [(baseline_case().tool, baseline_case())])
            results.append(run_path("no-gpu", rows, env, args.runs))
        if "hung" in only:
            folder = write_hung_smi(root)
            extra = ({"TORCHENV_PROBE_TIMEOUT": f"{args.probe_timeout:g}"}
                     if args.probe_timeout else {})
            env = clean_env(PATH=str(folder), TORCHENV_NVIDIA_SMI=str(folder / "nvidia-smi"),
                            TORCHENV_NVML_LIBRARY="off", UV_CACHE_DIR=str(uv_cache), **extra)
            rows = [(c.tool, c) for c in torchenv_cases()] + peer_cases(peers, pci=False)
            for _, case in rows:
                if case is not None:
                    case.limit = args.hang_limit
            results.append(run_path("hung nvidia-smi", rows, env, args.hung_runs))

    header = ("path", "tool", "runs", "median s", "min s", "resolve/tool", "detect/tool",
              "answer")
    print_grid(header, [r for res in results for r in table_rows(res)],
               "Detection side by side (one process per run; ratios: torchenv / tool, paired "
               "per round)", left=(0, 1, 7))
    notes = [n for res in results for n in res.notes]
    for note in notes:
        print(f"note: {note}")
    lines = verdicts(results)
    if lines:
        print_grid(("path", "target", "bound", "paired", "verdict"), lines, "Targets",
                   left=(0, 1, 4))
    return 1 if any(line[-1] == "FAIL" for line in lines) else 0


if __name__ == "__main__":
    sys.exit(main())
