"""A YAML document is checked on its parse events before anything is built: a self-referencing
alias, an alias bomb or absurd nesting is a MatrixError at once, and a broken overlay is
reported and ignored while the embedded matrix is used."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from torchenv.errors import BadInput, MatrixError
from torchenv.matrix.loader import (
    MAX_YAML_DEPTH,
    MAX_YAML_NODES,
    load_matrix,
    overlay_disabled,
    read_yaml,
)


def _bomb(levels: int = 9, width: int = 9) -> str:
    lines = ["note:", "  - &a0 [" + ", ".join(["lol"] * width) + "]"]
    lines += [f"  - &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]"
              for i in range(1, levels + 1)]
    return "\n".join([*lines, "variant_sets:", f"  - releases: *a{levels}", ""])


@pytest.mark.parametrize("text", [
    "&a [*a]\n",
    "variant_sets:\n  - releases: &a [*a]\n",
    "releases:\n  - &r {torch: '9.9.9', notes: [1, {again: *r}]}\n",
    "a: &outer\n  b: &inner [1, *outer]\n",
], ids=["top-level", "list-in-list", "mapping-deep-inside", "outer-anchor"])
def test_an_alias_inside_the_node_it_names_is_refused(text: str) -> None:
    with pytest.raises(MatrixError, match="self-referencing alias"):
        read_yaml(Path("overlay.yaml"), text)


def test_an_alias_bomb_is_refused_quickly() -> None:
    started = time.monotonic()
    with pytest.raises(MatrixError, match=f"more than {MAX_YAML_NODES:,} YAML nodes"):
        read_yaml(Path("overlay.yaml"), _bomb())
    assert time.monotonic() - started < 2


def test_aliases_within_the_bounds_still_load() -> None:
    # what a YAML dumper writes for a list shared by two platforms
    text = ("python:\n  linux-x86_64: &py ['3.10', '3.11']\n  win-amd64: *py\n" + _bomb(3, 3))
    doc = read_yaml(Path("overlay.yaml"), text)
    assert doc["python"]["win-amd64"] == ["3.10", "3.11"]
    assert len(doc["variant_sets"][0]["releases"]) == 3


def test_nesting_deeper_than_the_bound_is_refused() -> None:
    lines = ["note:"] + ["  " * (i + 1) + "-" for i in range(MAX_YAML_DEPTH + 5)]
    with pytest.raises(MatrixError, match=f"nested more than {MAX_YAML_DEPTH} levels"):
        read_yaml(Path("overlay.yaml"), "\n".join(lines) + "\n")
    with pytest.raises(MatrixError, match=r"overlay\.yaml"):
        read_yaml(Path("overlay.yaml"), "note: " + "[" * 100_000 + "]" * 100_000 + "\n")


@pytest.mark.parametrize(("make", "message"), [
    (lambda tmp: (tmp / "o.yaml", "variant_sets:\n  - releases: &a [*a]\n"),
     "self-referencing alias"),
    (lambda tmp: (tmp / "o.yaml", _bomb()), "YAML nodes"),
    (lambda tmp: (Path("/dev/zero"), None), "/dev/zero is larger than 8 MiB"),
    (lambda tmp: (tmp, None), "is a directory"),
], ids=["self-alias", "bomb", "dev-zero", "directory"])
def test_a_broken_overlay_is_recorded_and_the_embedded_matrix_used(
    tmp_path: Path, make: object, message: str
) -> None:
    assert callable(make)
    path, text = make(tmp_path)
    if text is not None:
        path.write_text(text)
    matrix = load_matrix(overlay=path)
    assert matrix.overlay_error is not None and message in matrix.overlay_error
    assert matrix.releases and matrix.overlay == str(path)


def test_an_overlay_variable_naming_a_directory_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TORCHENV_NO_OVERLAY", raising=False)
    monkeypatch.setenv("TORCHENV_MATRIX_OVERLAY", str(tmp_path))
    assert "is a directory" in (load_matrix().overlay_error or "")
    monkeypatch.setenv("TORCHENV_MATRIX_OVERLAY", str(tmp_path / "absent.yaml"))
    assert load_matrix().overlay_error is None


@pytest.mark.parametrize(("value", "disabled"), [
    (None, False), ("", False), ("0", False), ("false", False), ("No", False), ("off", False),
    ("1", True), ("true", True), ("YES", True), (" on ", True),
])
def test_no_overlay_takes_yes_or_no(value: str | None, disabled: bool) -> None:
    env = {} if value is None else {"TORCHENV_NO_OVERLAY": value}
    assert overlay_disabled(env) is disabled


def test_no_overlay_with_another_value_is_bad_input() -> None:
    with pytest.raises(BadInput, match="TORCHENV_NO_OVERLAY: 'banana'"):
        overlay_disabled({"TORCHENV_NO_OVERLAY": "banana"})
