"""Nodes of a GPU fleet, derived from the real reports of this machine by editing their JSON."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

DRIVER = "550.54.15"
TORCH = "2.13.0+cu128"
NCCL = "2.27.3"
ARCH = "sm_80 sm_86 sm_90 sm_100 sm_120 compute_120"
H100 = "NVIDIA H100 80GB HBM3"


def gpu_detect(real: dict[str, Any], *, driver: str = DRIVER, gpus: int = 8,
               name: str = H100) -> dict[str, Any]:
    """This machine's detect document with an NVIDIA driver and ``gpus`` GPUs."""
    doc = copy.deepcopy(real)
    doc["nvidia"] = {
        "driver_version": driver, "cuda_driver_version": "12.8", "source": "nvml",
        "gpus": [{"index": i, "name": name, "compute_capability": "9.0", "memory_mib": 81559,
                  "uuid": f"GPU-{i:08x}", "mig_mode": False} for i in range(gpus)],
        "cuda_visible_devices": None, "visible": None}
    if doc.get("torch"):
        doc["torch"]["version"] = TORCH
        doc["torch"]["variant"] = "cu128"
    return doc


def gpu_checks(gpus: int) -> list[dict[str, Any]]:
    """The per-GPU checks a CUDA build passes on ``gpus`` GPUs (as validate names them)."""
    return [{"name": "roundtrip" if i == 0 else f"roundtrip[cuda:{i}]", "status": "pass",
             "seconds": 0.2, "device": f"cuda:{i}", "required": True, "level": "quick",
             "detail": "host to device and back"} for i in range(gpus)]


def gpu_validate(real: dict[str, Any], *, nccl: str = NCCL, arch: str = ARCH,
                 torch: str = TORCH, gpus: int = 8) -> dict[str, Any]:
    """This machine's validate document as a CUDA build reports it on ``gpus`` GPUs."""
    doc = copy.deepcopy(real)
    doc["torch"] = torch
    for check in doc["checks"]:
        if check["name"] == "build":
            check["detail"] = (f"torch {torch}, CUDA 12.8, cuDNN 91002, NCCL {nccl}, "
                               f"arch {arch}")
    doc["checks"] += gpu_checks(gpus)
    return doc


def failed(doc: dict[str, Any], name: str, error: str, *, required: bool = True
           ) -> dict[str, Any]:
    """``doc`` with the check ``name`` failed (added when absent), and ``ok`` to match."""
    doc = copy.deepcopy(doc)
    entry = {"name": name, "status": "fail", "seconds": 1.5, "device": "cuda",
             "required": required, "level": "full", "error": error,
             "hint": "check the network interfaces"}
    names = [c["name"] for c in doc["checks"]]
    if name in names:
        doc["checks"][names.index(name)] = entry
    else:
        doc["checks"].append(entry)
    doc["ok"] = not any(c["status"] == "fail" and c.get("required", True)
                        for c in doc["checks"])
    return doc


def write_node(folder: Path, node: str, *, detect: Any = None, validate: Any = None,
               junit: str | None = None, exit_status: int | None = None) -> None:
    """The files one node writes (only those given; a str is written as it is)."""
    for kind, doc in (("detect.json", detect), ("validate.json", validate)):
        if doc is not None:
            (folder / f"{node}.{kind}").write_text(
                doc if isinstance(doc, str) else json.dumps(doc, indent=2), "utf-8")
    if junit is not None:
        (folder / f"{node}.junit.xml").write_text(junit, "utf-8")
    if exit_status is not None:
        (folder / f"{node}.exit").write_text(f"{exit_status}\n", "utf-8")


def gpu_junit(real_junit: str, real_validate: dict[str, Any], *, torch: str = TORCH,
              gpus: int = 8) -> str:
    """This machine's validate JUnit report as a CUDA build writes it on ``gpus`` GPUs."""
    build = next(c for c in real_validate["checks"] if c["name"] == "build")
    cuda_detail = f"torch {torch}, CUDA 12.8, cuDNN 91002, NCCL {NCCL}, arch {ARCH}"
    text = real_junit.replace(f"<system-out>{build['detail']}</system-out>",
                              f"<system-out>{cuda_detail}</system-out>")
    assert text != real_junit, "the build check's detail is in the JUnit report"
    cases = "".join(f'<testcase classname="torchenv.validate.{c["device"]}" name="{c["name"]}" '
                    'time="0.200" />' for c in gpu_checks(gpus))
    text = text.replace("</testsuite>", cases + "</testsuite>")
    return text.replace(f'name="torch" value="{real_validate["torch"]}"',
                        f'name="torch" value="{torch}"')
