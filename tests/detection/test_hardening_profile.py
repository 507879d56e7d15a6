"""A host document is checked key by key before it is used: a value of the wrong kind or
absurd nesting is BadInput naming the key, never a crash deeper in resolve or detect."""

from __future__ import annotations

from typing import Any

import pytest

from torchenv.detection.profile import HostProfile
from torchenv.errors import BadInput

BASE: dict[str, Any] = {"platform": "linux-x86_64", "python": "3.12"}


@pytest.mark.parametrize(("extra", "named"), [
    ({"xpu": {"devices": [None]}}, "xpu.devices[0]: expected a string, got None"),
    ({"rocm": {"gfx_targets": "gfx90a"}}, "rocm.gfx_targets: expected a list"),
    ({"nvidia": {"gpus": [{"index": "0"}]}}, "nvidia.gpus[0].index: expected an integer"),
    ({"nvidia": {"gpus": [{"index": True}]}}, "nvidia.gpus[0].index: expected an integer"),
    ({"nvidia": {"visible": [0, "1"]}}, "nvidia.visible[1]: expected an integer"),
    ({"nvidia": {"cuda_driver_version": "[/e]"}}, "nvidia.cuda_driver_version: '[/e]'"),
    ({"nvidia": {"cuda_driver_version": 12.8}}, "nvidia.cuda_driver_version: expected a string"),
    ({"nvidia": "yes"}, "nvidia: expected an object, got 'yes'"),
    ({"torch": {"version": 2.7}}, "torch.version: expected a string"),
    ({"interpreter": {"version": "3.12", "executable": ["/usr/bin/python"]}},
     "interpreter.executable: expected a string"),
    ({"pci": [{"address": 0}]}, "pci[0].address: expected a string"),
    ({"sources": {"nvidia": 1}}, "sources['nvidia']: expected a string"),
    ({"mps": "false"}, "mps: expected true or false, got 'false'"),
    ({"warnings": "x" * 1000}, "warnings: expected a list, got 'xxxxx"),
], ids=["xpu-device-null", "gfx-string", "index-string", "index-bool", "visible-string",
        "cuda-version-markup", "cuda-version-number", "nvidia-string", "torch-version-number",
        "executable-list", "pci-address", "sources-value", "mps-string", "long-value"])
def test_a_value_of_the_wrong_kind_names_its_key(extra: dict[str, Any], named: str) -> None:
    with pytest.raises(BadInput) as info:
        HostProfile.from_json({**BASE, **extra}, origin="node.json")
    assert info.value.message.startswith("node.json: ")
    assert named in info.value.message
    assert len(info.value.message) < 200


def test_absurd_nesting_is_never_walked() -> None:
    """The document is read along its schema only: a key it does not know is never walked (nor
    copied), however deep; where the schema wants a string or an object, a nest is refused."""
    deep: Any = []
    for _ in range(5000):
        deep = [deep]
    profile = HostProfile.from_json({**BASE, "note": deep}, origin="node.json")
    assert profile.python.version == "3.12"
    with pytest.raises(BadInput, match=r"node.json: nvidia.gpus\[0\]: expected an object"):
        HostProfile.from_json({**BASE, "nvidia": {"gpus": deep}}, origin="node.json")
    with pytest.raises(BadInput, match=r"node.json: glibc: expected a string"):
        HostProfile.from_json({**BASE, "glibc": deep}, origin="node.json")


def test_a_full_detect_document_still_loads() -> None:
    doc = {**BASE, "glibc": "2.35", "mps": False, "wsl": False, "warnings": ["w"],
           "sources": {"nvidia": "nvml"}, "nvidia_evidence": ["/dev/nvidia0"],
           "interpreter": {"version": "3.12", "implementation": "cpython",
                           "free_threaded": False, "executable": "/usr/bin/python3",
                           "full_version": "3.12.1", "env_kind": "venv"},
           "nvidia": {"driver_version": "570.86.15", "cuda_driver_version": "12.8",
                      "source": "nvml", "cuda_visible_devices": None, "visible": None,
                      "gpus": [{"index": 0, "name": "NVIDIA GeForce RTX 3090",
                                "compute_capability": "8.6", "memory_mib": 24576,
                                "uuid": "GPU-1", "mig_mode": None}]},
           "rocm": None, "xpu": None, "torch": None,
           "pci": [{"address": "0000:01:00.0", "vendor": "10de", "device": "2204",
                    "class": "0x030000", "driver": "nvidia"}],
           "a_key_from_a_newer_torchenv": {"anything": [1, 2]}}
    host = HostProfile.from_json(doc, origin="node.json")
    assert host.nvidia is not None and str(host.nvidia.cuda_driver_version) == "12.8"
    assert HostProfile.from_json(host.to_json()) == host


@pytest.mark.parametrize(("extra", "kinds", "has_gpu"), [
    ({}, set(), False),
    ({"nvidia": {"driver_version": "550.54.15"}}, {"cuda"}, True),
    ({"nvidia": {"cuda_driver_version": "12.4"}}, {"cuda"}, True),  # the driver's CUDA alone
    ({"rocm": {"version": "6.3", "gfx_targets": ["gfx90a"]}}, {"rocm"}, True),
    ({"xpu": {"devices": ["Arc A770"], "level_zero": True}}, {"xpu"}, True),
    # an Intel display device without Level Zero: no GPU for the resolver, nor the installers
    ({"xpu": {"devices": ["UHD Graphics 770"], "level_zero": False}}, set(), False),
    ({"platform": "macos-arm64", "mps": True}, set(), True),  # Apple's GPU steers no family
], ids=["none", "nvidia-driver", "nvidia-cuda-only", "rocm", "xpu", "igpu", "mps"])
def test_one_rule_says_which_gpus_are_here(extra: dict[str, Any], kinds: set[str],
                                           has_gpu: bool) -> None:
    host = HostProfile.from_json({**BASE, **extra}, origin="node.json")
    assert host.gpu_kinds == kinds
    assert host.has_gpu is has_gpu
