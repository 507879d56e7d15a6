"""Every decision of ``resolve()`` over a sweep of hosts, as one JSON document per host, recorded
and compared: the proof that a restructuring of the resolver changed no decision.

Usage: python bench/decisions.py record FILE    # write the decisions of this tree
       python bench/decisions.py compare FILE   # exit 1, listing them, where any differs

The hosts: the resolver's profile table (tests/resolver/test_profiles_table.py), then GPUs x
drivers x platforms x Pythons x torch specifiers, then hosts as a host file describes them
(GPUs named or on the PCI bus without a compute capability, a driver that did not answer, a
container without the GPU passed in). Each document is what ``torchenv resolve --json`` prints:
the plan with its commands, or the unsatisfiable request with its fixes.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

GPUS: list[list[str]] = [[], ["3.7"], ["5.0"], ["6.1"], ["7.0"], ["7.5"], ["8.6"], ["9.0"],
                         ["12.0"], ["6.1", "8.6"]]
DRIVERS = ["470.82.01", "525.60.13", "550.54.15", "580.65.06"]
PLATFORMS = ["linux-x86_64", "linux-aarch64", "win-amd64", "macos-arm64"]
PYTHONS = ["3.9", "3.12", "3.13t"]
SPECS: list[dict[str, str]] = [{}, {"torch": "==2.8.*"}, {"torch": "<2.5"}]
ROCM = [["gfx1100"], ["gfx90a"], ["gfx803"]]


def _profile_file_hosts() -> Iterator[tuple[str, dict[str, Any]]]:
    """Hosts as ``detect --json`` writes them, with what detection could not read."""
    base = {"platform": "linux-x86_64", "python": "3.12", "glibc": "2.35"}
    pascal_pci = {"address": "0000:01:00.0", "vendor": "10de", "device": "1b80",
                  "class": "0x030000", "driver": "nvidia"}
    unknown_pci = {**pascal_pci, "device": "ffff"}
    yield "named gpu", {**base, "nvidia": {
        "driver_version": "550.54.15", "source": "proc",
        "gpus": [{"index": 0, "name": "NVIDIA GeForce GTX 1080"}]}}
    yield "pci gpu", {**base, "pci": [pascal_pci], "nvidia": {
        "driver_version": "550.54.15", "source": "proc", "gpus": [{"index": 0}]}}
    yield "unknown pci gpu", {**base, "pci": [unknown_pci], "nvidia": {
        "driver_version": "550.54.15", "source": "proc", "gpus": [{"index": 0}]}}
    yield "driver silent", {**base, "pci": [pascal_pci],
                            "nvidia_evidence": ["PCI 10de:1b80 at 0000:01:00.0"]}
    yield "container without gpu", {**base, "pci": [pascal_pci], "container": "docker",
                                    "nvidia_evidence": ["PCI 10de:1b80 at 0000:01:00.0"]}
    yield "gpus hidden", {**base, "nvidia": {
        "driver_version": "580.65.06", "source": "nvml", "cuda_visible_devices": "",
        "visible": [], "gpus": [{"index": 0, "compute_capability": "8.6"}]}}
    yield "driver without gpus", {**base, "nvidia": {
        "driver_version": "580.65.06", "source": "nvml", "gpus": []}}
    yield "musl", {**base, "glibc": None, "musl": "1.2.4"}
    yield "old glibc", {**base, "glibc": "2.12"}
    yield "wsl", {**base, "wsl": True, "nvidia": {
        "driver_version": "560.94", "source": "nvml",
        "gpus": [{"index": 0, "compute_capability": "8.9"}]}}
    yield "xpu", {**base, "xpu": {"devices": ["8086:56a0"], "level_zero": True,
                                  "source": "sysfs"}}
    yield "cuda reported", {**base, "nvidia": {
        "driver_version": None, "cuda_driver_version": "12.4", "source": "nvml",
        "gpus": [{"index": 0, "compute_capability": "9.0"}]}}


def cases() -> Iterator[tuple[str, Any, dict[str, str]]]:
    """(id, host, request keyword arguments) for every decision recorded."""
    from tests.resolver.test_profiles_table import BASE, TABLE

    from torchenv.detection.detect import apply_overrides
    from torchenv.detection.overrides import Overrides
    from torchenv.detection.profile import HostProfile

    for name, spec, request, _, _ in TABLE:
        yield f"table: {name}", apply_overrides(BASE, Overrides.from_sources(**spec)), request
    for platform in PLATFORMS:
        glibc = "2.35" if platform.startswith("linux") else None
        hardware: list[tuple[str, dict[str, Any]]] = [("no gpu", {"no_gpu": True})]
        hardware += [(f"gpus {','.join(g) or 'none'} driver {d}", {"driver": d, "gpus": g})
                     for g in GPUS for d in DRIVERS]
        hardware += [(f"rocm {','.join(r)}", {"rocm_archs": r}) for r in ROCM]
        for py in PYTHONS:
            for label, spec in hardware:
                host = apply_overrides(BASE, Overrides.from_sources(
                    platform=platform, python=py, glibc=glibc, **spec))
                for request in SPECS:
                    yield f"{platform} py{py} {label} {request}", host, request
    for name, document in _profile_file_hosts():
        host = HostProfile.from_json(document, origin=name)
        for request in [*SPECS, {"variant": "cpu"}, {"variant": "cu126"}]:
            yield f"file: {name} {request}", host, request


def decisions() -> dict[str, Any]:
    """Each case's document, as ``resolve --json`` prints it."""
    from torchenv.cli._fields import spell
    from torchenv.installers.render import all_commands
    from torchenv.matrix.loader import load_matrix
    from torchenv.resolver import NoMatch, Request, resolve

    matrix = load_matrix()
    out: dict[str, Any] = {}
    for name, host, request_args in cases():
        request = Request.from_text(**request_args)
        try:
            plan = resolve(request, host, matrix)
        except NoMatch as exc:
            out[name] = exc.to_json(spell)
            continue
        out[name] = plan.to_json(all_commands(plan, host, spell=spell))
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in ("record", "compare"):
        print(__doc__, file=sys.stderr)
        return 2
    path = Path(argv[1])
    found = decisions()
    if argv[0] == "record":
        path.write_text(json.dumps(found, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        print(f"{len(found)} decisions written to {path}")
        return 0
    recorded = json.loads(path.read_text(encoding="utf-8"))
    differ = [k for k in recorded.keys() | found.keys() if recorded.get(k) != found.get(k)]
    for key in sorted(differ)[:20]:
        print(f"differs: {key}\n  was: {json.dumps(recorded.get(key))[:600]}\n  now: "
              f"{json.dumps(found.get(key))[:600]}")
    print(f"{len(found)} decisions, {len(differ)} differ")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
