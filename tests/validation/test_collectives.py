"""The collective checks' pure parts: launches, what NCCL needs, the ranks' journals, NCCL's logs,
and the worker's ``init_process_group`` arguments. Journals and logs are planted as files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

import pytest

from torchenv.validation import _dist_worker, _probe
from torchenv.validation.collectives import (
    NO_CUDA,
    RankJournal,
    collective_launches,
    merge_rank_results,
    nccl_transports,
    nccl_unavailable,
    nccl_warnings,
    read_journal,
    read_journals,
)
from torchenv.validation.host import gpu_slices

GLOO = ["gloo_allreduce", "gloo_broadcast", "gloo_allgather", "ddp_step"]


def _journal(path: Path, *events: dict[str, Any]) -> Path:
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    return path


def _passed(name: str, rank: int) -> list[dict[str, Any]]:
    return [{"event": "start", "name": name, "rank": rank},
            {"event": "result", "name": name, "status": "pass", "device": "cpu",
             "detail": "fine", "seconds": 0.1, "rank": rank}]


def _started(rank: int) -> list[dict[str, Any]]:
    return [{"event": "start", "name": "init_process_group", "rank": rank},
            {"event": "started", "name": "init_process_group", "note": "", "rank": rank}]


def test_a_late_crash_fails_only_the_checks_it_hit(tmp_path: Path) -> None:
    """Rank 1 dies (a signal: no exception recorded) in the fifth check; rank 0 is stopped
    waiting for it there. The four checks before stay passes; the one after was never reached."""
    for rank in (0, 1):
        events = _started(rank) + [e for name in GLOO for e in _passed(name, rank)]
        events.append({"event": "start", "name": "planted_crash", "rank": rank})
        _journal(tmp_path / f"rank{rank}.jsonl", *events)
    merged = merge_rank_results(read_journals(tmp_path), [*GLOO, "planted_crash", "after"],
                                expected_ranks=2)
    assert [merged[n].status for n in GLOO] == ["pass"] * 4
    crash = merged["planted_crash"]
    assert crash.status == "fail"
    assert crash.error == ("2 of 2 local ranks reported no result: rank 0 died during this "
                           "check; rank 1 died during this check")
    assert merged["after"].status == "fail"
    assert "rank 1 never got here: it died during planted_crash" in (merged["after"].error or "")


def test_a_start_up_crash_names_the_ranks_own_exception(tmp_path: Path) -> None:
    _journal(tmp_path / "rank0.jsonl", {"event": "start", "name": "init_process_group"})
    _journal(tmp_path / "rank1.jsonl", {"event": "start", "name": "init_process_group"},
             {"event": "crash", "during": "init_process_group", "rank": 1,
              "error": "DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled "
                       "cuda error", "traceback": "Traceback ...\nDistBackendError: NCCL error"})
    merged = merge_rank_results(read_journals(tmp_path), GLOO, expected_ranks=2)
    for name in GLOO:
        error = merged[name].error or ""
        assert merged[name].status == "fail"
        assert "rank 1 raised DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970" in error
        assert "during init_process_group" in error
        assert "rank 0 never got here: it died during init_process_group" in error
        assert "DistBackendError: NCCL error" in (merged[name].log or "")


def test_a_rank_that_wrote_nothing_is_counted(tmp_path: Path) -> None:
    _journal(tmp_path / "rank0.jsonl", *_started(0), *_passed("gloo_allreduce", 0))
    [result] = merge_rank_results(read_journals(tmp_path), ["gloo_allreduce"],
                                  expected_ranks=2).values()
    assert result.status == "fail"
    assert result.error == ("1 of 2 local ranks reported no result: 1 rank wrote nothing "
                            "(died before starting)")


def test_a_line_cut_short_by_death_is_passed_over(tmp_path: Path) -> None:
    path = _journal(tmp_path / "rank3.jsonl", *_started(3), *_passed("gloo_allreduce", 3))
    with open(path, "a") as f:
        f.write('{"event": "result", "name": "gloo_broad')
    journal = read_journal(path)
    assert journal.rank == 3 and [r["name"] for r in journal.results] == ["gloo_allreduce"]
    assert journal.step is None and journal.crash is None


def test_one_rank_failing_fails_the_check_and_names_the_rank() -> None:
    ok = {"name": "gloo_allreduce", "status": "pass", "seconds": 0.1, "device": "cpu",
          "detail": "sum", "rank": 0}
    bad = {**ok, "status": "fail", "error": "wrong sum", "rank": 1}
    merged = merge_rank_results([RankJournal(0, (ok,)), RankJournal(1, (bad,))], [],
                                expected_ranks=2)
    assert merged["gloo_allreduce"].status == "fail"
    assert merged["gloo_allreduce"].error == "rank 1: wrong sum"


def test_a_world_of_one_is_a_skip() -> None:
    skip = {"name": "nccl_allreduce", "status": "skip", "rank": 0, "device": "cuda:0",
            "reason": "world size 1: NCCL initialised on cuda:0; a collective needs at least 2 "
                      "ranks", "seconds": 0.0}
    merged = merge_rank_results([RankJournal(0, (skip,), done=True)], [], expected_ranks=1)
    assert merged["nccl_allreduce"].status == "skip"
    assert "world size 1" in (merged["nccl_allreduce"].reason or "")


def test_collective_launches_never_run_a_single_rank_alone() -> None:
    def plan(**kw: Any) -> list[tuple[str, int, int]]:
        args: dict[str, Any] = {"cuda_devices": 0, "nccl_usable": True, "nnodes": 1,
                                "nproc_per_node": None}
        args.update(kw)
        return [(la.backend, la.nproc, la.nnodes) for la in collective_launches(**args)]

    assert plan() == [("gloo", 2, 1)]
    assert plan(cuda_devices=8) == [("nccl", 8, 1)]
    # one GPU: NCCL is initialised alone (its checks skip) and gloo gets two ranks of its own
    assert plan(cuda_devices=1) == [("nccl", 1, 1), ("gloo", 2, 1)]
    assert plan(cuda_devices=1, nnodes=2) == [("nccl", 1, 2)]
    # no NCCL (Windows builds) or GPU slices: gloo alone
    assert plan(cuda_devices=2, nccl_usable=False) == [("gloo", 2, 1)]


@pytest.mark.parametrize(("cuda", "nccl", "slices", "reason"), [
    (0, True, (), NO_CUDA),
    (2, False, (), "this torch build has no NCCL"),
    (2, True, ("cuda:0 is a MIG instance (NVIDIA A100-SXM4-40GB MIG 1g.5gb)",),
     "NCCL does not run on GPU slices: cuda:0 is a MIG instance"),
    (2, True, (), None),
], ids=["no-gpu", "no-nccl", "mig", "whole-gpus"])
def test_what_nccl_needs(cuda: int, nccl: bool, slices: tuple[str, ...],
                         reason: Optional[str]) -> None:
    got = nccl_unavailable(cuda_devices=cuda, nccl_available=nccl, slices=slices)
    if reason is None:
        assert got is None
    else:
        assert got is not None and got.startswith(reason)


def test_gpu_slices_are_mig_instances_by_name_and_vgpus_by_nvml() -> None:
    names = ["NVIDIA A100-SXM4-40GB MIG 1g.5gb", "NVIDIA A100-SXM4-40GB", "NVIDIA MIGHTY 9000"]
    assert gpu_slices(names) == ["cuda:0 is a MIG instance (NVIDIA A100-SXM4-40GB MIG 1g.5gb)"]
    assert gpu_slices(["NVIDIA H100 80GB HBM3"], ["GPU 0 (...) is a vGPU"]) == [
        "GPU 0 (...) is a vGPU"]


def test_nccl_transports_and_warnings_are_read_from_its_debug_logs(tmp_path: Path) -> None:
    (tmp_path / "nccl.node1.4001.log").write_text(
        "node1:4001:4100 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read\n"
        "node1:4001:4100 [0] NCCL INFO Channel 01/0 : 0[0] -> 1[1] via SHM/direct/direct\n")
    (tmp_path / "nccl.node1.4002.log").write_text(
        "node1:4002:4101 [1] NCCL INFO Channel 00/0 : 1[1] -> 2[0] [send] via NET/IB/0\n"
        "node1:4002:4101 [1] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to "
        "10.0.0.2<45711> failed : Software caused connection abort\n"
        "node1:4002:4101 [1] NCCL INFO misc/socket.cc:565 -> 6\n")
    (tmp_path / "other.log").write_text("via NET/Socket/0\nNCCL WARN not a rank's log\n")
    assert nccl_transports(tmp_path) == ["NET/IB", "P2P/CUMEM", "SHM"]
    assert nccl_transports(tmp_path / "missing") == []
    [warning] = nccl_warnings(tmp_path)
    assert "NCCL WARN socketStartConnect: Connect to 10.0.0.2<45711> failed" in warning


def _init_process_group_2_2(backend: Optional[str] = None, init_method: Optional[str] = None,
                            timeout: Any = None, world_size: int = -1, rank: int = -1,
                            store: Any = None, group_name: str = "",
                            pg_options: Any = None) -> None:
    """The signature of torch 2.2's ``init_process_group``: no ``device_id``."""


def _init_process_group_2_7(backend: Optional[str] = None, init_method: Optional[str] = None,
                            timeout: Any = None, world_size: int = -1, rank: int = -1,
                            store: Any = None, group_name: str = "", pg_options: Any = None,
                            device_id: Any = None) -> None:
    """The signature of torch 2.7's ``init_process_group``."""


@pytest.mark.parametrize(("fn", "version", "backend", "passed", "note"), [
    (_init_process_group_2_2, "2.2.2+cu121", "nccl", False, "has no such argument"),
    (_init_process_group_2_7, "2.7.0+cu126", "nccl", False, "pytorch/pytorch#153960"),
    (_init_process_group_2_7, "2.7.1+cu126", "nccl", True, ""),
    (_init_process_group_2_7, "2.7.0+cu126", "gloo", False, ""),
], ids=["torch-2.2", "torch-2.7.0-hangs", "torch-2.7.1", "gloo"])
def test_device_id_follows_the_installed_signature_and_known_hangs(
        fn: Any, version: str, backend: str, passed: bool, note: str) -> None:
    kwargs, said = _dist_worker.init_arguments(fn, version, backend, "cuda:0",
                                               _probe.torch_release)
    assert ("device_id" in kwargs) is passed
    assert note in said and bool(said) is bool(note)


def test_the_installed_torch_takes_device_id() -> None:
    """The real signature is read, not assumed: the torch here (2.13) has ``device_id``."""
    import torch.distributed as dist

    kwargs, _ = _dist_worker.init_arguments(dist.init_process_group, "2.13.0+cpu", "nccl",
                                            "cuda:0", _probe.torch_release)
    assert kwargs == {"device_id": "cuda:0"}
