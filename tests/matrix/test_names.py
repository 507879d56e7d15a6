"""Variant names and arch entries read without regular expressions, exactly as the patterns."""

from __future__ import annotations

import itertools
import re

from torchenv.matrix.model import arch_parts, cuda_version_of, variant_kind

ARCH_RE = re.compile(r"^(\d{1,2})\.(\d)([af]?)(\+PTX)?$")  # the pattern the data once used
CUDA_RE = re.compile(r"^cu(\d{2,3})$")
ROCM_RE = re.compile(r"^rocm(\d+)\.(\d+)(?:\.(\d+))?$")

ODD = ["", "\n", " ", "٣", "²", "1", "12", "123", "1234", ".", "..", "a", "f", "+PTX", "+ptx",
       "\n\n", "12\n", "x"]
NAMES = ["cpu", "xpu", "cu", "cu1", "cu12", "cu128", "cu1281", "cu128\n", "cu128\n\n", " cu128",
         "cu128 ", "cu١٢٨", "cu12²", "CU128", "rocm", "rocm6", "rocm6.", "rocm6.2", "rocm6.2.4",
         "rocm6.2.4.1", "rocm6..2", "rocm6.2\n", "rocm٦.٢", "rocm6.2a", "rocm.2", "xpu\n",
         "cpu\n"] + ["cu" + a + b for a, b in itertools.product(ODD, repeat=2)] + [
         "rocm" + a + "." + b for a, b in itertools.product(ODD, repeat=2)]
ARCHES = ["8.6", "9.0a", "10.0f", "12.0+PTX", "9.0a+PTX", "8.6+PTXa", "8.6aa", "8.6af", "86",
          "8.", ".6", "8.60", "100.0", "10.0", "٨.٦", "8.6\n", "8.6\n\n", "8.6+PTX\n", "8.6a\n",
          "8.6\n+PTX", " 8.6", "8.6 ", "8.6+ptx", "8.6b", "sm_86", "8,6"] + [
          a + "." + b + c + d for a, b, c, d in itertools.product(
              ["", "1", "12", "123", "٣", "²"], ["", "0", "01", "٣", "²"], ["", "a", "f", "x"],
              ["", "+PTX", "\n", "+PTX\n"])]


def _kind_by_pattern(name: str) -> str | None:
    if name in ("cpu", "xpu"):
        return name
    if CUDA_RE.match(name):
        return "cuda"
    return "rocm" if ROCM_RE.match(name) else None


def test_variant_names_are_read_as_the_patterns_read_them() -> None:
    for name in NAMES:
        assert variant_kind(name) == _kind_by_pattern(name), repr(name)
        m = CUDA_RE.match(name)
        expected = f"{m.group(1)[:-1]}.{m.group(1)[-1]}" if m else None
        assert cuda_version_of(name) == expected, repr(name)


def test_arch_entries_are_read_as_the_pattern_reads_them() -> None:
    for text in ARCHES:
        m = ARCH_RE.match(text)
        expected = (int(m.group(1)), int(m.group(2)), m.group(3), bool(m.group(4))) if m else None
        assert arch_parts(text) == expected, repr(text)


def test_the_cases_include_both_answers() -> None:
    assert {arch_parts(t) is None for t in ARCHES} == {True, False}
    assert {variant_kind(n) for n in NAMES} >= {"cuda", "rocm", None}
