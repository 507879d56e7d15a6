"""Files a user names are read with a cap: a device that never ends or a huge file is refused
after one bounded read, with a message naming the path."""

from __future__ import annotations

from pathlib import Path

import pytest

from torchenv._files import MAX_READ_BYTES, read_bytes_capped, read_text_capped
from torchenv.errors import BadInput


def test_a_file_up_to_the_cap_is_read_whole(tmp_path: Path) -> None:
    path = tmp_path / "a.json"
    path.write_bytes(b"x" * 100)
    assert read_bytes_capped(path, limit=100) == b"x" * 100
    with pytest.raises(BadInput, match=r"a\.json is larger than 99 bytes"):
        read_bytes_capped(path, limit=99)


def test_a_device_without_end_is_refused_after_one_bounded_read() -> None:
    with pytest.raises(BadInput, match="--host: /dev/zero is larger than 8 MiB"):
        read_bytes_capped("/dev/zero", what="--host")
    assert MAX_READ_BYTES == 8 * 1024 * 1024


@pytest.mark.parametrize(("make", "message"), [
    (lambda tmp: tmp, "is a directory"),
    (lambda tmp: tmp / "missing.json", "cannot read: No such file"),
], ids=["directory", "missing"])
def test_an_unreadable_path_is_bad_input_naming_it(tmp_path: Path, make: object,
                                                   message: str) -> None:
    assert callable(make)
    path = make(tmp_path)
    with pytest.raises(BadInput, match=message) as info:
        read_text_capped(path, what="--overlay")
    assert info.value.message.startswith(f"--overlay: {path}")


def test_text_that_is_not_utf8_is_bad_input(tmp_path: Path) -> None:
    path = tmp_path / "latin1.json"
    path.write_bytes(b'{"name": "caf\xe9"}')
    with pytest.raises(BadInput, match=r"latin1\.json is not UTF-8 text \(byte 13\)"):
        read_text_capped(path)
    path.write_text('{"name": "café"}', encoding="utf-8")
    assert read_text_capped(path) == '{"name": "café"}'
