"""One rank of the collective checks; launched by ``python -m torch.distributed.run``.

Executed by path in the target interpreter (standard library and torch only, never torchenv).
Usage: ``torchrun ... _dist_worker.py OUTPUT_DIR BACKEND`` where BACKEND is ``nccl`` (one GPU per
local rank; gloo checks then use a gloo group on CPU tensors) or ``gloo``. Every rank writes
``OUTPUT_DIR/rank<R>.json``: a list of results ``{name, status, seconds, device, detail|error}``.

With one rank in the whole job nothing collective can be proven: the process group is
initialised (for NCCL, its communicator) and every check is reported as a skip saying so.

Every rank dies with its parent (``PR_SET_PDEATHSIG`` on Linux), so a killed torchrun leaves no
rank behind. Test seam: functions ``collective_<name>(ctx)`` in the files named by
``TORCHENV_VALIDATE_EXTRA_CHECKS`` run as extra collective checks (``ctx`` is a dict with
``torch``, ``dist``, ``rank``, ``world``, ``device``).
"""

from __future__ import annotations

import datetime
import importlib
import importlib.util
import json
import os
import sys
import time
import traceback
import warnings
from typing import Any, Callable

EXTRA_CHECKS_ENV = "TORCHENV_VALIDATE_EXTRA_CHECKS"


def die_with_parent() -> None:
    """The probe's ``die_with_parent``, loaded from the file beside this one."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_probe.py")
    spec = importlib.util.spec_from_file_location("torchenv_validation_probe", path)
    if spec is None or spec.loader is None:
        return
    probe = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(probe)
    probe.die_with_parent()


def extra_collectives() -> dict[str, Callable[[dict[str, Any]], str]]:
    found: dict[str, Callable[[dict[str, Any]], str]] = {}
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
    return found


def main() -> int:
    die_with_parent()
    out_dir, backend = sys.argv[1], sys.argv[2]
    timeout = float(sys.argv[3]) if len(sys.argv) > 3 else 60.0
    warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
    torch: Any = importlib.import_module("torch")
    dist: Any = importlib.import_module("torch.distributed")
    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    results: list[dict[str, Any]] = []
    device = "cpu"
    if backend == "nccl":
        torch.cuda.set_device(local_rank)
        device = f"cuda:{local_rank}"
    extras = extra_collectives()
    # the names first, so that a check whose every rank hangs is still reported (as a failure)
    plan_tmp = os.path.join(out_dir, f".extra.{rank}.tmp")
    with open(plan_tmp, "w", encoding="utf-8") as f:
        json.dump(sorted(extras), f)
    os.replace(plan_tmp, os.path.join(out_dir, "extra.json"))
    dist.init_process_group(backend=backend, timeout=datetime.timedelta(seconds=timeout),
                            **({"device_id": torch.device(device)} if backend == "nccl" else {}))
    gloo_group = dist.new_group(backend="gloo") if backend == "nccl" else None

    alone = (f"world size 1: {'NCCL' if backend == 'nccl' else 'the process group'} "
             f"initialised on {device}; a collective needs at least 2 ranks")

    def run(name: str, dev: str, fn: Callable[[], str]) -> None:
        start = time.monotonic()
        entry: dict[str, Any] = {"name": name, "device": dev, "rank": rank}
        if world == 1:
            entry.update(status="skip", reason=alone, seconds=0.0)
            results.append(entry)
            return
        try:
            entry["detail"] = fn()
            entry["status"] = "pass"
        except Exception as exc:
            entry["status"] = "fail"
            entry["error"] = f"{type(exc).__name__}: {exc}"
            entry["traceback"] = traceback.format_exc(limit=4)
        entry["seconds"] = round(time.monotonic() - start, 4)
        results.append(entry)

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
            run(f"{label}_{op}", dev, fn)

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

    run("ddp_step", device, ddp_step)

    for name, extra in extras.items():
        run(name, device, lambda extra=extra: extra(  # type: ignore[misc]
            {"torch": torch, "dist": dist, "rank": rank, "world": world, "device": device}))

    if backend == "nccl":
        def bus_bandwidth() -> str:
            n = 64 << 20  # 256 MiB of float32
            t = torch.ones(n, device=device)
            dist.all_reduce(t)
            torch.cuda.synchronize(device)
            reps = 5
            dist.barrier()
            start = time.perf_counter()
            for _ in range(reps):
                dist.all_reduce(t)
            torch.cuda.synchronize(device)
            seconds = (time.perf_counter() - start) / reps
            # every element is world ** (reps + 1), exact in float32 for any real world size:
            # a large message must arrive whole, not only fast
            want = float(world) ** (reps + 1)
            wrong = int((t != want).sum())
            if wrong:
                raise AssertionError(f"all_reduce of 256 MiB: {wrong} of {n} elements differ "
                                     f"from {want:g}")
            algbw = n * 4 / seconds / 1e9
            busbw = algbw * 2 * (world - 1) / world
            return (f"all_reduce 256 MiB, result verified: algbw {algbw:.1f} GB/s, "
                    f"busbw {busbw:.1f} GB/s")
        run("nccl_bus_bandwidth", device, bus_bandwidth)

    # results first: what happens during teardown must not lose them
    tmp = os.path.join(out_dir, f".rank{rank}.json.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(results, f)
    os.replace(tmp, os.path.join(out_dir, f"rank{rank}.json"))
    dist.barrier()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    status = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # gloo's background threads can abort the process in C++ static destructors at interpreter
    # exit ("terminate called without an active exception"), which torchrun reports as a failed
    # rank; every result is on disk by now, so leave without running them
    os._exit(status)
