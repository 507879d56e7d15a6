"""Detection's default paths parse without :mod:`re`, and exactly as their regexes did.

Each parser rewritten with string methods is compared with the regex it replaced (kept here only
as the reference) over a table of awkward inputs and over generated text. Then the default paths
run with ``re`` traced, to show that no detection module reaches for it there.
"""

from __future__ import annotations

import importlib.util
import itertools
import os
import re
import sys
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Optional

import pytest
from detection_helpers import DATA, data, fake_smi
from hypothesis import given, settings
from hypothesis import strategies as st

from torchenv.detection import (
    _cuda_visible,
    _nvidia_proc,
    _nvidia_smi,
    _pci,
    _platform,
    _rocm,
    _torch_install,
    _xpu,
    overrides,
)
from torchenv.detection.detect import detect
from torchenv.detection.overrides import Overrides
from torchenv.detection.profile import Gpu

MODULES = (_nvidia_smi, _torch_install, _platform, _nvidia_proc, _rocm, overrides,
           _cuda_visible, _xpu, _pci)

# --- the regexes replaced, as they were -----------------------------------------------------

OLD_VERSION_RE = re.compile(r"\d+(?:\.\d+){1,2}")
OLD_CC_RE = re.compile(r"^\d{1,2}\.\d$")
OLD_NA = {"", "[n/a]", "n/a", "[not supported]", "not supported", "[unknown error]"}
OLD_ASSIGN_RE = re.compile(
    r"""^(?P<name>[A-Za-z_]\w*)\s*(?::[^=]+)?=\s*(?:(?P<q>['"])(?P<value>[^'"]*)(?P=q)|None)\s*$""",
    re.MULTILINE,
)


def old_value(text: str) -> Optional[str]:
    text = text.strip()
    return None if text.lower() in OLD_NA else text


def old_parse_query_csv(text: str, fields: tuple[str, ...] = _nvidia_smi.QUERY_FIELDS
                        ) -> tuple[tuple[Gpu, ...], Optional[str]]:
    gpus: list[Gpu] = []
    driver: Optional[str] = None
    name_at = fields.index("name") if "name" in fields else -1
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        parts = [p.strip() for p in line.split(",")]
        if len(parts) > len(fields) and name_at >= 0:
            extra = len(parts) - len(fields)
            parts[name_at:name_at + extra + 1] = [", ".join(parts[name_at:name_at + extra + 1])]
        if len(parts) != len(fields):
            raise ValueError(f"nvidia-smi printed {line!r}, expected {len(fields)} "
                             f"comma-separated fields ({','.join(fields)})")
        row = dict(zip(fields, parts))
        if row.get("index", "").lower() == "index":
            continue
        index_text = row.get("index", str(len(gpus)))
        if not index_text.isdigit():
            raise ValueError(f"nvidia-smi printed {line!r}: index {index_text!r} is not a number")
        cc = old_value(row.get("compute_cap", ""))
        mem = old_value(row.get("memory.total", ""))
        mem_num = re.match(r"^(\d+)", mem) if mem else None
        drv = OLD_VERSION_RE.search(row.get("driver_version", ""))
        if drv and driver is None:
            driver = drv.group(0)
        gpus.append(Gpu(
            index=int(index_text),
            name=old_value(row.get("name", "")),
            compute_capability=cc if cc and OLD_CC_RE.match(cc) else None,
            memory_mib=int(mem_num.group(1)) if mem_num else None,
            uuid=old_value(row.get("uuid", "")),
        ))
    return tuple(gpus), driver


def old_parse_torch_version_py(text: str) -> dict[str, Optional[str]]:
    values: dict[str, Optional[str]] = {}
    for m in OLD_ASSIGN_RE.finditer(text):
        values[m.group("name")] = m.group("value") if m.group("q") else None
    return values


def old_variant_from(version: str, cuda: Optional[str] = None, hip: Optional[str] = None,
                     xpu: Optional[str] = None) -> str:
    _, _, local = version.partition("+")
    local = local.lower()
    if re.match(r"^cu\d{2,3}$", local):
        return local
    if local == "cpu" or local.startswith(("cpu.", "cpu_", "cpu-")):
        return "cpu"
    m = re.match(r"^(rocm\d+\.\d+(?:\.\d+)?)$", local)
    if m:
        return m.group(1)
    if local == "xpu" or local.startswith("xpu."):
        return "xpu"
    if hip:
        hm = re.match(r"^(\d+)\.(\d+)", hip)
        if hm:
            return f"rocm{hm.group(1)}.{hm.group(2)}"
    if cuda:
        cm = re.match(r"^(\d+)\.(\d+)", cuda)
        if cm:
            return f"cu{cm.group(1)}{cm.group(2)}"
    if xpu:
        return "xpu"
    return "cpu"


def old_parse_glibc_confstr(text: Optional[str]) -> Optional[str]:
    if not text:
        return None
    m = re.match(r"^glibc\s+(\d+\.\d+)", text.strip())
    return m.group(1) if m else None


def old_parse_musl_version(text: str) -> Optional[str]:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines or not lines[0].startswith("musl"):
        return None
    for line in lines[1:]:
        m = re.match(r"^Version\s+(\d+\.\d+(?:\.\d+)?)", line)
        if m:
            return m.group(1)
    return None


def old_parse_rocm_version(text: str) -> Optional[str]:
    m = re.match(r"^\s*(\d+\.\d+(?:\.\d+)?)", text)
    return m.group(1) if m else None


# --- inputs --------------------------------------------------------------------------------

# digits beyond ASCII: Arabic-Indic and fullwidth (decimal, so \d matches them), superscript and
# circled (digits to str.isdigit, but not decimal: \d does not match them)
ODD_DIGITS = ("\u0663", "\u0661\u0662", "\uff11", "\U0001d7cf", "\u00b2", "\u2460")
# whitespace that is not a newline: \s matches it, and so does str.isspace
ODD_SPACE = ("\xa0", "\u2028", "\x1c", "\x0b", "\x0c", "\r", "\x85", "\u3000")

TRICKY = (
    "", " ", "\n", "\t\n", "\n\n", "x", "-", ".", "..", ",",
    "9.0", "9.0\n", "9.0\n\n", " 9.0", "9.0 ", "9.0\r", "12.0", "123.0", "9.", ".0", "9..0",
    "9.0.1", "9.0a", "sm_90", "\u0669.\u0660", "\u00b2.0", "9.\u00b2", "\u2460", "\uff19.\uff10",
    "[N/A]", "N/A", "[Not Supported]", "143771", "143771 MiB", "143771MiB", " 143771",
    "\u0661\u0662\u0663 MiB", "\u00b9\u00b2\u00b3", "0x10", "-5",
    "580.82.07", "580.82", "580", "580.82.07.1", "r580.82.07", "v1.2", "1.x2.3", "1..2.3",
    "a12x3.4", "Driver 580.82.07 ", "580.82.07\n", "580.\u0668\u0662", "580 .82", "580. 82",
    "cu128", "cu128\n", "cu128\n\n", "cu128 ", "cu12", "cu1", "cu1234", "cu\u0661\u0662\u0668",
    "cu\u00b9\u00b2", "CU128", "cuda", "cu12.8", "cpu", "cpu.cxx11.abi", "cpu_x", "cpux",
    "rocm6.3", "rocm6.3\n", "rocm6.3.4", "rocm6.3.4.5", "rocm6", "rocm.6.3", "rocm6..3",
    "rocm6.3\n\n", "rocm6.3 ", "rocm\u0666.\u0663", "rocm6.\u00b3", "ROCm6.3", "xpu", "xpu.1",
    "6.3.42131-fa1d09cbd", "12.8", "12", "12.", ".8", "012.08", "1\u0662.8", "\u00b9.8",
    "glibc 2.36", "glibc  2.36", "glibc\t2.36", "glibc\n2.36", "glibc2.36", "glibc 2",
    "glibc 2.", "glibc 2.36.1", " glibc 2.36 \n", "GLIBC 2.36", "glibc 2.\u0663\u0666",
    "glibc\xa02.36", "glibc\u20282.36", "glibc 2.3\u00b2", "glibc .36", "musl",
    "Version 1.2.4", "Version 1.2", "Version\t1.2.4.5", "Version 1", "version 1.2",
    "Version1.2", "Version 1.2.", "Version 1.\u0662", "Version\xa01.2",
    "musl libc (x86_64)\nVersion 1.2.4\nDynamic Program Loader\n",
    "musl libc\n\n  Version   1.2.3-r4\n", "musl\nVersion\n1.2\n", "  musl\nVersion 1.2",
    "7.0.1", "7.0.1\n", "6.3.4-1234\n", "\n 7.0", "\u2028 7.0", "7", "7.", "7.0.", "7.0.1.2",
    "\u0667.0", "v7.0",
)

_TOKENS = (
    "0", "1", "9", "12", "580", ".", " ", "  ", "\t", "\n", ",", "x", "-", "a", "MiB",
    "[N/A]", "glibc", "Version", "musl", "cu", "rocm", "cpu", "xpu", "+",
    *ODD_DIGITS, *ODD_SPACE,
)
texts = st.lists(st.sampled_from(_TOKENS), max_size=14).map("".join)
any_text = st.one_of(texts, st.text(max_size=20))


def outcome(fn: Callable[..., Any], *args: Any) -> tuple[Any, ...]:
    """What ``fn(*args)`` gives: ("ok", value), or ("raised", type, message)."""
    try:
        return ("ok", fn(*args))
    except Exception as exc:
        return ("raised", type(exc), str(exc))


# --- the building blocks: what \d, \s and \w match -------------------------------------------

def test_regex_classes_are_the_str_predicates() -> None:
    """\\d is str.isdecimal (Unicode category Nd, not isdigit), \\s is str.isspace and \\w is
    str.isalnum or "_", for every code point: the rewrites rely on it."""
    every = "".join(map(chr, range(sys.maxunicode + 1)))
    assert set(re.findall(r"\d", every)) == {c for c in every if c.isdecimal()}
    assert set(re.findall(r"\s", every)) == {c for c in every if c.isspace()}
    assert set(re.findall(r"\w", every)) == {c for c in every if c.isalnum() or c == "_"}
    assert "\u00b2".isdigit() and not re.match(r"\d", "\u00b2")
    assert re.match(r"\d", "\u0663") and int("\u0663") == 3


# --- nvidia-smi --query-gpu ------------------------------------------------------------------

def test_query_pieces_match_their_regexes() -> None:
    for text in TRICKY:
        drv = OLD_VERSION_RE.search(text)
        assert _nvidia_smi._find_version(text) == (drv.group(0) if drv else None), text
        assert _nvidia_smi._is_compute_capability(text) == bool(OLD_CC_RE.match(text)), text
        mem = re.match(r"^(\d+)", text)
        assert _nvidia_smi._leading_number(text) == (int(mem.group(1)) if mem else None), text


@settings(max_examples=400, deadline=None)
@given(any_text)
def test_query_pieces_match_their_regexes_generated(text: str) -> None:
    drv = OLD_VERSION_RE.search(text)
    assert _nvidia_smi._find_version(text) == (drv.group(0) if drv else None)
    assert _nvidia_smi._is_compute_capability(text) == bool(OLD_CC_RE.match(text))
    mem = re.match(r"^(\d+)", text)
    assert _nvidia_smi._leading_number(text) == (int(mem.group(1)) if mem else None)


FIELD_SETS = (
    _nvidia_smi.QUERY_FIELDS,
    _nvidia_smi.QUERY_FIELDS_NO_CC,
    ("compute_cap", "compute_mode", "driver_version", "name", "index"),
    ("driver_version",),
    ("memory.total",),
)


def _query_lines() -> Iterator[str]:
    """Query output lines: real shapes with each field replaced by the tricky values."""
    good = ["0", "NVIDIA H200", "9.0", "143771", "GPU-00000000-0000-0000-0000-000000000000",
            "580.82.07"]
    yield ", ".join(good)
    yield ", ".join(_nvidia_smi.QUERY_FIELDS)
    yield "index, name, compute_cap, memory.total [MiB], uuid, driver_version"
    for at, value in itertools.product(range(len(good)), TRICKY):
        row = list(good)
        row[at] = value
        yield ", ".join(row)


def test_query_csv_matches_the_regex_version() -> None:
    captures = [data(p.name) for p in sorted(DATA.iterdir()) if p.suffix in (".txt", ".csv")]
    lines = list(_query_lines())
    inputs = [*captures, *lines, "\n".join(lines[:3]) + "\n", "\r\n".join(lines[:3]), *TRICKY]
    for fields in FIELD_SETS:
        for text in inputs:
            assert outcome(_nvidia_smi.parse_query_csv, text, fields) == outcome(
                old_parse_query_csv, text, fields), (fields, text)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(any_text, min_size=1, max_size=7).map(", ".join), max_size=4)
       .map("\n".join), st.sampled_from(FIELD_SETS))
def test_query_csv_matches_the_regex_version_generated(text: str,
                                                        fields: tuple[str, ...]) -> None:
    assert outcome(_nvidia_smi.parse_query_csv, text, fields) == outcome(
        old_parse_query_csv, text, fields)


# --- torch/version.py and the variant --------------------------------------------------------

VERSION_PY_NEW = (
    "from typing import Optional\n\n"
    "__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip', 'rocm', 'xpu']\n"
    "__version__ = '2.13.0+cpu'\ndebug = False\ncuda: Optional[str] = None\n"
    "git_version = 'cf30153c4c131c8164ee7798e5022d810682e2cb'\nhip: Optional[str] = None\n"
    "rocm: Optional[str] = None\nxpu: Optional[str] = None\n"
)
VERSION_PY_TRICKY = (
    VERSION_PY_NEW, VERSION_PY_NEW.replace("\n", "\r\n"), VERSION_PY_NEW.rstrip("\n"),
    "__version__ = '2.2.2'\ndebug = False\ncuda = '12.1'\ngit_version = 'abc'\nhip = None\n",
    "cuda = \"12.8\"\n", "x\n= 'a'\n", "cuda: Optional[str]\n= None\n", "a = '1\n2'\n",
    "a = 'x'   \n\n\nb = None", "a = 'x' # c\n", "a = \"x'\n", "a = 'x\"\n", "a: = 'x'\n",
    "a:= 'x'\n", "a : int = 'x'\n", "a = None\r\n", "a = Nonex\n", "a = None x\n",
    "\u00e9 = 'x'\n", "a\u00e9 = 'x'\n", "a\u0663 = 'x'\n", "a\u00b2 = 'x'\n", "_a1 = 'x'\n",
    "1a = 'x'\n", "  a = 'x'\n", "a = 'x'\n  b = 'y'\n", "a='x'", "a =  \n 'x'\n", "a = ''\n",
    'a = ""\n', "a: x\ny = 'z'\n", "a: x\ny = 'z' w\nb = 'c'\n", "a = 'x'\x0b\n", "a = 'x'\x1c",
    "a = 'x'\u2028b = 'y'\n", "a = 'x'\u2028\nb = 'y'\n", "a = 'x'\n\nb = 'y'\n\n", "a = 'x'\n\n",
    "a = 'x' \n \nb", "a = 'x'\r", "a\t=\t'x'\t\n", "a = 'x'y'\n", "a = 'x' 'y'\n", "a = x\n",
    "a = \n", "a =\n", "a\n", "=\n'x'\n", "a: 'b' = 'c'\n", "a: b == 'c'\n", "a: b=\n'c'\n",
    "a = None\nb", "None = None\n", "a = 'x'\nb = 'y'\na = None\n", "", "\n", " ", "a",
)


def _real_version_py() -> Optional[str]:
    spec = importlib.util.find_spec("torch")  # finds the package without importing it
    if spec is None or not spec.submodule_search_locations:
        return None
    path = os.path.join(next(iter(spec.submodule_search_locations)), "version.py")
    return Path(path).read_text(encoding="utf-8") if os.path.isfile(path) else None


def test_version_py_matches_the_regex_version() -> None:
    real = _real_version_py()
    for text in (*VERSION_PY_TRICKY, *([real] if real else []), *TRICKY):
        new = _torch_install.parse_torch_version_py(text)
        old = old_parse_torch_version_py(text)
        assert (new, list(new)) == (old, list(old)), text


_PY_TOKENS = ("a", "cuda", "_", "x1", "\u00e9", "\u00b2", "1", " ", "\t", "\n", "\r", "\x0b",
              "\u2028", "\xa0", ":", "=", "'", '"', "None", "Optional[str]", "#", "\\", "12.8")


@settings(max_examples=600, deadline=None)
@given(st.one_of(st.lists(st.sampled_from(_PY_TOKENS), max_size=24).map("".join),
                 st.text(max_size=30)))
def test_version_py_matches_the_regex_version_generated(text: str) -> None:
    new = _torch_install.parse_torch_version_py(text)
    old = old_parse_torch_version_py(text)
    assert (new, list(new)) == (old, list(old))


def test_variant_matches_the_regex_version() -> None:
    locals_ = [t for t in TRICKY if "+" not in t]
    versions = ["2.7.1", *(f"2.7.1+{t}" for t in locals_), "2.7.1+cu128+x", "+rocm6.3"]
    extras: list[Optional[str]] = [None, "", "12.8", "6.3.42131-fa1d09cbd", "12", "x12.8",
                                   "\u0661.\u0662", "\u00b9.2", "1.\u00b2", "12.8\n", " 12.8"]
    for version, cuda, hip in itertools.product(versions, extras, extras):
        for xpu in (None, "", "1"):
            assert _torch_install.variant_from(version, cuda, hip, xpu) == old_variant_from(
                version, cuda, hip, xpu), (version, cuda, hip, xpu)


@settings(max_examples=400, deadline=None)
@given(any_text, st.one_of(st.none(), any_text), st.one_of(st.none(), any_text))
def test_variant_matches_the_regex_version_generated(local: str, cuda: Optional[str],
                                                     hip: Optional[str]) -> None:
    version = "2.7.1+" + local
    assert _torch_install.variant_from(version, cuda, hip) == old_variant_from(version, cuda, hip)


# --- glibc, musl, ROCm ---------------------------------------------------------------------

WORDED = [f"{head}{space}{tail}" for head in ("glibc", "Version", "GLIBC", "glibcx")
          for space in ("", " ", "  ", "\t", "\n", *ODD_SPACE)
          for tail in ("2.36", "2.36.1", "1.2.4.5", "2", "2.", ".36", "2.\u0663\u0666",
                       "\u0662.36", "2.\u00b3", "2.36-r1", "")]


def test_platform_parsers_match_the_regex_versions() -> None:
    for text in (*TRICKY, *WORDED):
        assert _platform.parse_glibc_confstr(text) == old_parse_glibc_confstr(text), text
        for musl in (text, f"musl libc (x86_64)\n{text}\n", f"musl\n{text}\nVersion 9.9\n"):
            assert _platform.parse_musl_version(musl) == old_parse_musl_version(musl), musl
    assert _platform.parse_glibc_confstr(None) is None


@settings(max_examples=400, deadline=None)
@given(any_text)
def test_platform_parsers_match_the_regex_versions_generated(text: str) -> None:
    assert _platform.parse_glibc_confstr(text) == old_parse_glibc_confstr(text)
    assert _platform.parse_glibc_confstr("glibc" + text) == old_parse_glibc_confstr(
        "glibc" + text)
    musl = "musl libc\nVersion" + text
    assert _platform.parse_musl_version(musl) == old_parse_musl_version(musl)
    assert _platform.parse_musl_version(text) == old_parse_musl_version(text)


def test_rocm_version_matches_the_regex_version() -> None:
    for text in (*TRICKY, *WORDED, data("opt_rocm_info_version_7.0.1.txt")):
        for variant in (text, text.partition(" ")[2], " \n" + text):
            assert _rocm.parse_rocm_version(variant) == old_parse_rocm_version(variant), variant


@settings(max_examples=400, deadline=None)
@given(any_text)
def test_rocm_version_matches_the_regex_version_generated(text: str) -> None:
    assert _rocm.parse_rocm_version(text) == old_parse_rocm_version(text)


# --- no re on the default paths --------------------------------------------------------------

class _TracedRe(types.ModuleType):
    """Stands in for ``re`` in sys.modules: hands out the real one's attributes and notes
    which file asked for each."""

    def __init__(self, real: types.ModuleType, asked: list[tuple[str, str]]) -> None:
        super().__init__("re")
        self._real = real
        self._asked = asked

    def __getattr__(self, name: str) -> Any:
        self._asked.append((sys._getframe(1).f_code.co_filename, name))
        return getattr(self._real, name)


def test_the_modules_hold_no_regex() -> None:
    """No module of detection's parsers imports re or compiles a pattern when imported."""
    for module in MODULES:
        assert "re" not in vars(module), module.__name__
        assert not [k for k, v in vars(module).items() if isinstance(v, re.Pattern)], (
            module.__name__)


def test_default_paths_do_not_use_re(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[tuple[str, str]] = []
    ours = {os.path.realpath(str(m.__file__)) for m in MODULES}
    smi = fake_smi(tmp_path / "smi", query=(
        "0, NVIDIA H200, 9.0, 143771, GPU-00000000-0000-0000-0000-000000000000, 580.82.07\n"
        "1, NVIDIA A100, [N/A], 40960 MiB, [N/A], 580.82.07\n"))
    old_smi = fake_smi(tmp_path / "old", no_compute_cap=True, query=(
        "0, NVIDIA GeForce GTX 1080, 8192, GPU-00000000-0000-0000-0000-0000000, 440.100\n"))
    root = tmp_path / "root"
    (root / "opt/rocm/.info").mkdir(parents=True)
    (root / "opt/rocm/.info/version").write_text("7.0.1-38\n", encoding="utf-8")
    (root / "proc").mkdir()
    (root / "proc/version").write_text(
        "Linux version 6.6.87.2-microsoft-standard-WSL2 (root@439a258ad544) (gcc (GCC) 11.2.0",
        encoding="utf-8")
    version_py = _real_version_py() or VERSION_PY_NEW
    monkeypatch.setitem(sys.modules, "re", _TracedRe(re, asked))

    res = _nvidia_smi.probe_nvidia_smi(str(smi))
    assert res.ok and res.driver_version == "580.82.07"
    assert [(g.compute_capability, g.memory_mib) for g in res.gpus] == [
        ("9.0", 143771), (None, 40960)]
    res = _nvidia_smi.probe_nvidia_smi(str(old_smi))
    assert res.ok and res.driver_version == "440.100" and len(res.calls) == 2
    for name, fields in (("query_csv_header_2gpu_mixed_570.86.15.csv", FIELD_SETS[2]),
                         ("query_csv_noheader_driver_version_wsl2_2gpu.txt", FIELD_SETS[3])):
        assert _nvidia_smi.parse_query_csv(data(name), fields)[1] is not None
    values = _torch_install.parse_torch_version_py(version_py)
    assert values.get("__version__")
    _torch_install.variant_from(str(values["__version__"]), values.get("cuda"),
                                values.get("hip"), values.get("xpu"))
    assert _torch_install.variant_from("2.7.1", "12.8") == "cu128"
    assert _platform.parse_glibc_confstr("glibc 2.36") == "2.36"
    facts = _platform.probe_platform(str(root), {}, system="Linux", machine="x86_64",
                                     confstr=lambda: "glibc 2.36")
    assert (facts.glibc, facts.wsl_version) == ("2.36", 2)
    assert Overrides.from_sources(environ={}) == Overrides()
    profile = detect(root=str(root), environ={
        "PATH": "/usr/bin:/bin", "TORCHENV_NVIDIA_SMI": str(smi),
        "TORCHENV_NVML_LIBRARY": "off"})
    assert profile.nvidia is not None and profile.nvidia.driver_version == "580.82.07"
    assert profile.rocm is None

    monkeypatch.setitem(sys.modules, "re", re)
    from_ours = [(os.path.basename(f), name) for f, name in asked
                 if os.path.realpath(f) in ours]
    assert from_ours == []


def test_the_trace_sees_a_lazy_import(monkeypatch: pytest.MonkeyPatch) -> None:
    """The trace above would see a function that imports re when called."""
    asked: list[tuple[str, str]] = []
    monkeypatch.setitem(sys.modules, "re", _TracedRe(re, asked))
    assert overrides.normalize_python("cp312") == "3.12"
    assert _nvidia_smi.parse_smi_versions("CUDA Version: 13.2") == (None, "13.2")
    monkeypatch.setitem(sys.modules, "re", re)
    files = {os.path.basename(f) for f, _ in asked}
    assert {"overrides.py", "_nvidia_smi.py"} <= files
