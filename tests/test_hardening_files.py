"""Files a user names are read with a cap: a device that never ends or a huge file is refused
after one bounded read, with a message naming the path."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tests.conftest import run_cli
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


def test_a_fifo_without_a_writer_reads_as_empty_at_once(tmp_path: Path) -> None:
    """Opening a FIFO for reading waits for a writer; the reader of named files does not."""
    fifo = tmp_path / "host.json"
    os.mkfifo(fifo)
    assert read_bytes_capped(fifo) == b""


def test_a_pipe_that_stays_silent_is_refused_after_its_wait(tmp_path: Path) -> None:
    fifo = tmp_path / "silent"
    os.mkfifo(fifo)
    writer = os.open(fifo, os.O_RDWR)  # a writer that never writes
    try:
        with pytest.raises(BadInput, match=r"gave no data for 0\.2 s"):
            read_bytes_capped(fifo, wait=0.2)
    finally:
        os.close(writer)


def test_a_pipe_is_read_as_its_data_comes() -> None:
    """``--host <(ssh node torchenv detect --json)``: the shell passes ``/dev/fd/N``, a pipe
    whose data arrives in pieces, then ends."""
    import threading

    read_end, write_end = os.pipe()

    def write_slowly() -> None:
        for piece in (b'{"platform": ', b'"linux-x86_64"}'):
            time.sleep(0.05)
            os.write(write_end, piece)
        os.close(write_end)

    thread = threading.Thread(target=write_slowly)
    thread.start()
    try:
        assert read_bytes_capped(f"/dev/fd/{read_end}", wait=5) == b'{"platform": "linux-x86_64"}'
    finally:
        thread.join(timeout=10)
        os.close(read_end)


def test_the_cli_refuses_a_fifo_host_file_without_hanging(tmp_path: Path) -> None:
    fifo = tmp_path / "node.json"
    os.mkfifo(fifo)
    proc = run_cli(["resolve", "--host", str(fifo)], timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert "node.json" in proc.stderr
