"""doctor's check of a distribution's RECORD reads only the regular files the wheel wrote into
its folder, so a RECORD naming a device, a FIFO or a path elsewhere can neither hang it nor make
it read outside the install."""

from __future__ import annotations

import base64
import hashlib
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

from torchenv.doctor import probe
from torchenv.doctor.probe import check_record
from torchenv.doctor.seen import SeenDistribution

T = TypeVar("T")

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs (POSIX)")


def digest(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(
        b"=").decode()


def within(seconds: float, call: Callable[[], T]) -> T:
    """``call()``'s result, failing the test when it has not returned after ``seconds``."""
    result: list[T] = []
    worker = threading.Thread(target=lambda: result.append(call()), daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), f"still running after {seconds} s"
    return result[0]


def planted(tmp_path: Path, rows: list[tuple[str, str, str]]) -> SeenDistribution:
    site = tmp_path / "site-packages"
    meta = site / "torch-2.13.0+cpu.dist-info"
    meta.mkdir(parents=True)
    (meta / "RECORD").write_text("".join(f"{n},{d},{s}\n" for n, d, s in rows))
    return SeenDistribution("torch", "2.13.0+cpu", str(site), str(meta), has_record=True)


def test_a_record_naming_a_device_and_a_fifo_is_checked_without_hanging(tmp_path: Path) -> None:
    good = b"x = 1\n"
    dist = planted(tmp_path, [
        ("torch/good.py", digest(good), str(len(good))),
        ("/dev/zero", digest(b""), ""),            # no size: only a read could judge it
        ("torch/pipe", digest(b""), ""),
    ])
    (Path(dist.location) / "torch").mkdir()
    (Path(dist.location) / "torch" / "good.py").write_bytes(good)
    os.mkfifo(Path(dist.location) / "torch" / "pipe")
    problem = within(10.0, lambda: check_record(dist))
    assert problem is not None
    assert sorted(problem.changed) == ["/dev/zero", "torch/pipe"]
    assert problem.missing == ()


def test_an_entry_outside_the_distribution_folder_is_compared_by_size_only(
        tmp_path: Path) -> None:
    recorded, there = b"#!/bin/sh\nexec torch\n", b"#!/bin/sh\nexec other\n"
    assert len(recorded) == len(there)
    dist = planted(tmp_path, [("../torchrun", digest(recorded), str(len(recorded)))])
    (tmp_path / "torchrun").write_bytes(there)
    assert check_record(dist) is None  # the same size, and never opened to hash
    (tmp_path / "torchrun").write_bytes(there + b"# grown\n")
    problem = check_record(dist)
    assert problem is not None and problem.changed == ("../torchrun",)


def test_hashing_refuses_a_fifo_at_once_and_reads_no_more_than_the_cap(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    assert within(10.0, lambda: probe._hash_matches(str(fifo), digest(b""))) is False
    monkeypatch.setattr(probe, "HASH_CAP", 8)
    exact, longer = tmp_path / "exact", tmp_path / "longer"
    exact.write_bytes(b"12345678")
    longer.write_bytes(b"123456789")
    assert probe._hash_matches(str(exact), digest(b"12345678"))
    assert not probe._hash_matches(str(longer), digest(b"123456789"))
