"""The shipped built matrix (built.json): what the YAML builds, constructed without a check, and
never used once it is stale."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from tests.conftest import Cli

from torchenv.matrix import built, loader
from torchenv.matrix.built import (
    BUILT_FILE,
    build_document,
    fingerprint,
    from_document,
    to_document,
)
from torchenv.matrix.loader import DATA_DIR, DATA_FILES, build_embedded, load_built, load_matrix
from torchenv.matrix.model import Matrix


@pytest.fixture(scope="module")
def from_yaml() -> Matrix:
    return build_embedded()


def test_the_shipped_matrix_is_the_one_the_yaml_and_the_rules_build(from_yaml: Matrix) -> None:
    shipped = load_built()
    assert shipped is not None, "run 'torchenv matrix check --write-cache'"
    assert shipped == from_yaml, "run 'torchenv matrix check --write-cache'"
    assert load_matrix(overlay=False) == from_yaml


def test_the_file_is_the_document_of_the_built_matrix(from_yaml: Matrix) -> None:
    """Byte for byte what ``matrix check --write-cache`` writes: a merge that took both sides'
    YAML and one side's built.json shows here."""
    doc = build_document(from_yaml, fingerprint(DATA_DIR, DATA_FILES))
    assert BUILT_FILE.read_text() == json.dumps(doc, separators=(",", ":"), sort_keys=True) + "\n"


def test_a_matrix_written_and_read_back_is_equal_to_itself(from_yaml: Matrix) -> None:
    doc = json.loads(json.dumps(to_document(from_yaml)))
    assert from_document(doc) == from_yaml
    # a fact met more than once (a confirmed list in its neighbours' Neighbours) is written
    # once, and named by its position
    shared = [r for r in doc["records"] if r["@"] == "ArchFact"]
    assert len(shared) > 10 and '{"@r": ' in json.dumps(doc["matrix"])


def test_every_field_of_every_record_is_written(from_yaml: Matrix) -> None:
    """The document follows the model's fields, not a list kept here: a field the model gains
    is written (and read back, positionally) without a change to the writer."""
    import dataclasses

    from torchenv.matrix import model

    doc = to_document(from_yaml)
    written: dict[str, set[int]] = {}

    def walk(value: object) -> None:
        if isinstance(value, list):
            for v in value:
                walk(v)
        elif isinstance(value, dict):
            if "@" in value:
                written.setdefault(value["@"], set()).add(len(value["f"]))
            for v in value.values():
                walk(v)

    walk(doc)
    assert {"Matrix", "Release", "Variant", "ArchFact", "Neighbours", "Source"} <= written.keys()
    for name, lengths in written.items():
        kind = getattr(model, name)
        count = (len(dataclasses.fields(kind)) if dataclasses.is_dataclass(kind)
                 else len(kind._fields))
        assert lengths == {count}, name


def test_what_the_model_cannot_hold_is_refused_when_written(from_yaml: Matrix) -> None:
    import dataclasses

    odd = dataclasses.replace(from_yaml, matrix_version=object())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="cannot hold a object"):
        to_document(odd)


def _copy_data(tmp_path: Path) -> Path:
    shutil.copytree(DATA_DIR, tmp_path / "data")
    return tmp_path / "data"


def test_an_edited_yaml_file_is_built_not_served_stale(tmp_path: Path) -> None:
    data = _copy_data(tmp_path)
    assert load_built(data) is not None
    releases = yaml.safe_load((data / "releases.yaml").read_text())
    releases["releases"][0]["note"] = "edited"
    (data / "releases.yaml").write_text(yaml.safe_dump(releases))
    assert load_built(data) is None
    assert load_matrix(overlay=False, data_dir=data).releases[0].note == "edited"


def test_an_edited_rule_is_a_new_fingerprint() -> None:
    """The fingerprint covers the code that builds the matrix, not the YAML alone."""
    here = fingerprint(DATA_DIR, DATA_FILES)
    assert "inference.py:" in here and "validate.py:" in here and "values.py:" in here


@pytest.mark.parametrize("spoil", ["missing", "not-json", "other-format", "other-fingerprint",
                                   "yaml-gone"])
def test_a_built_file_that_cannot_be_used_is_a_miss_not_an_error(
        spoil: str, tmp_path: Path, matrix: Matrix) -> None:
    data = _copy_data(tmp_path)
    path = data / BUILT_FILE.name
    doc = json.loads(path.read_text())
    if spoil == "missing":
        path.unlink()
    elif spoil == "not-json":
        path.write_bytes(path.read_bytes()[:1000])
    elif spoil == "yaml-gone":  # what it was made from cannot be fingerprinted: not used
        assert load_built(data) is not None
        (data / "rocm.yaml").rename(data / "rocm.yaml.moved")
        assert load_built(data) is None
        return
    else:
        doc["format" if spoil == "other-format" else "fingerprint"] = "x"
        path.write_text(json.dumps(doc))
    assert load_built(data) is None
    assert load_matrix(overlay=False, data_dir=data).releases == matrix.releases


def test_matrix_check_fails_on_a_stale_built_file_until_it_is_written(
        tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    data = _copy_data(tmp_path)
    monkeypatch.setattr(loader, "DATA_DIR", data)
    monkeypatch.setattr(loader, "CACHE_FILE", data / "cache.json")
    monkeypatch.setattr(built, "BUILT_FILE", data / "built.json")
    assert cli(["matrix", "check"]).returncode == 0
    # the fingerprint still matches, the content is another one: what a bad merge leaves
    doc = json.loads((data / "built.json").read_text())
    doc["matrix"]["matrix"]["f"][1] = "not what the YAML says"  # Matrix.matrix_version
    (data / "built.json").write_text(json.dumps(doc))
    stale = cli(["matrix", "check", "--json"])
    assert stale.returncode == 2
    report = json.loads(stale.stdout)
    assert report["built_current"] is False and report["cache_current"] is True
    assert [p.split(" does not")[0] for p in report["problems"]] == ["built.json"]
    assert cli(["matrix", "check", "--write-cache"]).returncode == 0
    assert cli(["matrix", "check"]).returncode == 0
    assert load_built(data) == build_embedded(data)
