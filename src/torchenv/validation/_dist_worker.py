"""One rank of the collective checks; launched by ``python -m torch.distributed.run``.

Executed by path in the target interpreter (standard library and torch only, never torchenv).
Usage: ``torchrun ... _dist_worker.py OUTPUT_DIR BACKEND TIMEOUT`` where BACKEND is ``nccl`` (one
GPU per local rank; gloo checks then use a gloo group on CPU tensors) or ``gloo``.

Every rank keeps a journal, ``OUTPUT_DIR/rank<R>.jsonl``, one JSON document a line, written as
things happen: ``{"event": "start", "name": ...}`` before each step (``init_process_group`` and
each check), ``{"event": "result", ...}`` as soon as a check finishes, and ``{"event":
"crash", ...}`` with the rank's own exception when something outside a check raises (NCCL failing
to start, say). A rank that dies later, even by a signal, keeps every result it wrote: the
parent fails only the checks that rank did not finish, and knows which step it died in.

With one rank in the whole job nothing collective can be proven: the process group is
initialised (for NCCL, its communicator) and every check is reported as a skip saying so.

Every rank dies with its parent (``PR_SET_PDEATHSIG`` on Linux), so a killed torchrun leaves no
rank behind. Test seam: functions ``collective_<name>(ctx)`` in the files named by
``TORCHENV_VALIDATE_EXTRA_CHECKS`` run as extra collective checks (``ctx`` is a dict with
``torch``, ``dist``, ``rank``, ``world``, ``device``); a function ``before_init(ctx)`` there runs
just before ``init_process_group`` (``ctx`` without ``dist``), to plant a start-up failure.
"""

from __future__ import annotations

import datetime
import importlib
import importlib.util
import inspect
import json
import os
import sys
import time
import traceback
import warnings
from typing import IO, Any, Callable, Optional

EXTRA_CHECKS_ENV = "TORCHENV_VALIDATE_EXTRA_CHECKS"
HANGS_WITH_DEVICE_ID = {(2, 7, 0): "pytorch/pytorch#153960"}
"""torch releases whose NCCL start-up with ``device_id`` hangs at random, and the report."""


def _probe() -> Any:
    """The probe module beside this file (shared helpers: parent-death signal, versions)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_probe.py")
    spec = importlib.util.spec_from_file_location("torchenv_validation_probe", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    probe = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(probe)
    return probe


def init_arguments(init_process_group: Callable[..., Any], torch_version: str, backend: str,
                   device: Any, release: Callable[[str], tuple[int, int, int]]
                   ) -> tuple[dict[str, Any], str]:
    """Extra keyword arguments for ``init_process_group``, and a note when one was left out.

    ``device_id`` binds the NCCL communicator to this rank's GPU at start-up (so a broken start
    surfaces there, not in the first collective). It is passed only to a torch whose signature
    has it (2.3 and later) and never to a release where it is known to hang.
    """
    if backend != "nccl":
        return {}, ""
    try:
        parameters = inspect.signature(init_process_group).parameters
    except (TypeError, ValueError):
        parameters = {}  # type: ignore[assignment]
    if "device_id" not in parameters:
        return {}, "device_id not passed: this torch's init_process_group has no such argument"
    hang = HANGS_WITH_DEVICE_ID.get(release(torch_version))
    if hang:
        return {}, (f"device_id not passed: with it torch {torch_version} hangs in NCCL at random "
                    f"({hang})")
    return {"device_id": device}, ""


class Journal:
    """This rank's line-per-event record; each line is flushed as it is written."""

    def __init__(self, path: str, rank: int) -> None:
        self.rank = rank
        self.step: Optional[str] = None
        self._file: IO[str] = open(path, "a", encoding="utf-8")  # noqa: SIM115

    def write(self, doc: dict[str, Any]) -> None:
        self._file.write(json.dumps({**doc, "rank": self.rank}) + "\n")
        self._file.flush()

    def start(self, name: str) -> None:
        self.step = name
        self.write({"event": "start", "name": name})

    def result(self, entry: dict[str, Any]) -> None:
        self.write({"event": "result", **entry})
        self.step = None

    def crash(self, exc: BaseException) -> None:
        self.write({"event": "crash", "during": self.step or "start-up",
                    "error": f"{type(exc).__name__}: {exc}".strip(),
                    "traceback": traceback.format_exc(limit=8)})

    def close(self) -> None:
        self._file.close()


def extra_collectives() -> tuple[dict[str, Callable[[dict[str, Any]], str]],
                                 Optional[Callable[[dict[str, Any]], Any]]]:
    found: dict[str, Callable[[dict[str, Any]], str]] = {}
    before_init = None
    for i, path in enumerate(p for p in os.environ.get(EXTRA_CHECKS_ENV, "").split(os.pathsep)
                             if p):
        spec = importlib.util.spec_from_file_location(f"torchenv_extra_collectives_{i}", path)
        if spec is None or spec.loader is None:
            continue
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        for attr, fn in vars(module).items():
            if attr.startswith("collective_") and callable(fn):
                found[attr[len("collective_"):]] = fn
        before_init = getattr(module, "before_init", None) or before_init
    return found, before_init


SWEEP_BYTES = (1 << 20, 8 << 20, 64 << 20, 256 << 20)


def bus_bandwidth_sweep(torch: Any, dist: Any, device: str, local_rank: int, world: int
                        ) -> tuple[str, dict[str, Any]]:
    """all_reduce over a sweep of message sizes, timed as nccl-tests times it.

    For each size the first all_reduce of ones is verified exactly (every element must be the
    world size: exact in float32 for any real world), then ``reps`` are timed. nccl-tests'
    definitions (doc/PERFORMANCE.md): algbw = bytes / time; busbw = algbw * 2(n-1)/n, the
    figure comparable with the hardware's link bandwidth whatever the rank count.
    """
    rows: list[dict[str, Any]] = []
    for nbytes in SWEEP_BYTES:
        n = nbytes // 4
        t = torch.ones(n, device=device)
        dist.all_reduce(t)
        torch.cuda.synchronize(device)
        wrong = int((t != float(world)).sum())
        if wrong:
            raise AssertionError(f"all_reduce of {nbytes >> 20} MiB: {wrong} of {n} elements "
                                 f"differ from {world}")
        reps = 20 if nbytes < (64 << 20) else 5
        dist.barrier(device_ids=[local_rank])
        start = time.perf_counter()
        for _ in range(reps):
            dist.all_reduce(t)  # the values grow (to inf for large worlds): speed does not care
        torch.cuda.synchronize(device)
        seconds = (time.perf_counter() - start) / reps
        algbw = nbytes / seconds / 1e9
        rows.append({"bytes": nbytes, "seconds": seconds, "algbw_gbs": round(algbw, 2),
                     "busbw_gbs": round(algbw * 2 * (world - 1) / world, 2)})
        del t
    top = rows[-1]
    shown = ", ".join(f"{int(r['bytes']) >> 20} MiB {r['busbw_gbs']:.1f}" for r in rows)
    return (f"all_reduce sweep, each size verified; busbw GB/s {shown}; at "
            f"{int(top['bytes']) >> 20} MiB algbw {top['algbw_gbs']:.1f}, busbw "
            f"{top['busbw_gbs']:.1f} GB/s",
            {"sweep": rows, "algbw_gbs": top["algbw_gbs"], "busbw_gbs": top["busbw_gbs"]})


def main() -> int:
    probe = _probe()
    probe.die_with_parent()
    out_dir, backend = sys.argv[1], sys.argv[2]
    timeout = float(sys.argv[3]) if len(sys.argv) > 3 else 60.0
    rank = int(os.environ["RANK"])
    journal = Journal(os.path.join(out_dir, f"rank{rank}.jsonl"), rank)
    try:
        return run(probe, journal, out_dir, backend, timeout)
    except BaseException as exc:
        journal.crash(exc)
        raise
    finally:
        journal.close()


def run(probe: Any, journal: Journal, out_dir: str, backend: str, timeout: float) -> int:
    rank = journal.rank
    extras, before_init = extra_collectives()
    # the names first, even before torch (whose import is slow on a busy node), so that a
    # check whose every rank hangs is still reported (as a failure)
    plan_tmp = os.path.join(out_dir, f".extra.{rank}.tmp")
    with open(plan_tmp, "w", encoding="utf-8") as f:
        json.dump(sorted(extras), f)
    os.replace(plan_tmp, os.path.join(out_dir, "extra.json"))
    warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
    torch: Any = importlib.import_module("torch")
    dist: Any = importlib.import_module("torch.distributed")
    world = int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    device = "cpu"
    journal.start("init_process_group")
    if backend == "nccl":
        torch.cuda.set_device(local_rank)
        device = f"cuda:{local_rank}"
    if before_init is not None:
        before_init({"torch": torch, "rank": rank, "world": world, "device": device})
    kwargs, note = init_arguments(dist.init_process_group, str(torch.__version__), backend,
                                  torch.device(device), probe.torch_release)
    dist.init_process_group(backend=backend, timeout=datetime.timedelta(seconds=timeout),
                            **kwargs)
    gloo_group = dist.new_group(backend="gloo") if backend == "nccl" else None
    journal.write({"event": "started", "name": "init_process_group", "note": note})
    journal.step = None

    alone = (f"world size 1: {'NCCL' if backend == 'nccl' else 'the process group'} "
             f"initialised on {device}; a collective needs at least 2 ranks")

    def check(name: str, dev: str, fn: Callable[[], Any]) -> None:
        """Run one check and journal its result; ``fn`` returns its detail, or (detail,
        metrics)."""
        journal.start(name)
        start = time.monotonic()
        entry: dict[str, Any] = {"name": name, "device": dev}
        if world == 1:
            entry.update(status="skip", reason=alone, seconds=0.0)
            journal.result(entry)
            return
        try:
            out = fn()
            entry["detail"], metrics = out if isinstance(out, tuple) else (out, None)
            if metrics:
                entry["metrics"] = metrics
            entry["status"] = "pass"
        except Exception as exc:
            entry["status"] = "fail"
            entry["error"] = f"{type(exc).__name__}: {exc}"
            entry["traceback"] = traceback.format_exc(limit=4)
        entry["seconds"] = round(time.monotonic() - start, 4)
        journal.result(entry)

    def collectives(dev: str, group: Any) -> dict[str, Callable[[], str]]:
        def all_reduce() -> str:
            t = torch.full((1024,), float(rank + 1), device=dev)
            dist.all_reduce(t, group=group)
            want = world * (world + 1) / 2
            if not bool((t == want).all()):
                raise AssertionError(f"all_reduce sum gave {t[0].item()}, expected {want}")
            return f"sum over {world} ranks = {want:g}"

        def broadcast() -> str:
            t = (torch.arange(1024, device=dev, dtype=torch.float32) * 7 if rank == 0
                 else torch.zeros(1024, device=dev))
            dist.broadcast(t, src=0, group=group)
            if not torch.equal(t.cpu(), torch.arange(1024, dtype=torch.float32) * 7):
                raise AssertionError("broadcast from rank 0 delivered different values")
            return f"rank 0 → {world} ranks"

        def all_gather() -> str:
            parts = [torch.empty(16, device=dev) for _ in range(world)]
            dist.all_gather(parts, torch.full((16,), float(rank), device=dev), group=group)
            got = [p[0].item() for p in parts]
            if got != [float(r) for r in range(world)] or not all(
                    bool((p == r).all()) for r, p in enumerate(parts)):
                raise AssertionError(f"all_gather gave {got}")
            return f"{world} ranks gathered in order"
        return {"allreduce": all_reduce, "broadcast": broadcast, "allgather": all_gather}

    groups = [("gloo", "cpu", gloo_group)]
    if backend == "nccl":
        groups.insert(0, ("nccl", device, None))
    for label, dev, group in groups:
        for op, fn in collectives(dev, group).items():
            check(f"{label}_{op}", dev, fn)

    def ddp_step() -> str:
        ddp_mod: Any = importlib.import_module("torch.nn.parallel")
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(),
                                    torch.nn.Linear(16, 2)).to(device)
        ddp = ddp_mod.DistributedDataParallel(
            model, device_ids=[local_rank] if backend == "nccl" else None)
        opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
        gen = torch.Generator().manual_seed(1000 + rank)  # different data on every rank
        for _ in range(2):
            opt.zero_grad()
            x = torch.randn(4, 8, generator=gen).to(device)
            ddp(x).pow(2).mean().backward()
            opt.step()
        flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
        gathered = [torch.empty_like(flat) for _ in range(world)]
        dist.all_gather(gathered, flat)
        differ = [r for r, g in enumerate(gathered) if not torch.equal(g, gathered[0])]
        if differ:
            raise AssertionError(f"after 2 DDP steps ranks {differ} hold different parameters "
                                 "from rank 0")
        return f"2 steps on {world} ranks ({backend}): parameters identical"

    check("ddp_step", device, ddp_step)

    for name, extra in extras.items():
        check(name, device, lambda extra=extra: extra(  # type: ignore[misc]
            {"torch": torch, "dist": dist, "rank": rank, "world": world, "device": device}))

    if backend == "nccl":
        def bus_bandwidth() -> tuple[str, dict[str, Any]]:
            return bus_bandwidth_sweep(torch, dist, device, local_rank, world)
        check("nccl_bus_bandwidth", device, bus_bandwidth)

    journal.start("destroy_process_group")
    dist.barrier(**({"device_ids": [local_rank]} if backend == "nccl" else {}))
    dist.destroy_process_group()
    journal.write({"event": "done"})
    return 0


if __name__ == "__main__":
    sys.exit(main())
