"""The torch installed in an interpreter, read from package metadata and ``torch/version.py``.

Nothing here imports torch: the variant comes from the version's local tag (``2.7.1+cu128``) or,
for builds without one (the PyPI wheel, conda packages), from ``torch/version.py``.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Optional

__all__ = ["parse_torch_version_py", "variant_from"]

# one assignment of torch/version.py: name [: annotation] = 'value' (or "value", or None)
_ASSIGNMENT = re.compile(
    r"^(?P<name>[A-Za-z_]\w*)\s*(?::[^=]+)?=\s*"
    r"""(?:(?P<q>['"])(?P<value>[^'"]*)(?P=q)|None)\s*$""",
    re.ASCII | re.MULTILINE,
)
_CUDA_TAG = re.compile(r"cu[0-9]{2,3}")  # cu128
_ROCM_TAG = re.compile(r"rocm[0-9]+\.[0-9]+(?:\.[0-9]+)?")  # rocm6.3, rocm6.2.4
_MAJOR_MINOR = re.compile(r"([0-9]+)\.([0-9]+)")  # 6.3 of 6.3.42131-fa1d09cbd


def parse_torch_version_py(text: str) -> dict[str, Optional[str]]:
    """The string assignments of ``torch/version.py`` (``None`` kept as None).

    Sample::

        __version__ = '2.13.0+cpu'
        debug = False
        cuda: Optional[str] = None
        git_version = 'cf30153c4c131c8164ee7798e5022d810682e2cb'
        hip: Optional[str] = None
    """
    return {m["name"]: m["value"] if m["q"] else None for m in _ASSIGNMENT.finditer(text)}


def variant_from(version: str, cuda: Optional[str] = None, hip: Optional[str] = None,
                 xpu: Optional[str] = None) -> str:
    """The build variant of an installed torch.

    The local tag decides when present: ``+cu128`` -> ``cu128``, ``+cpu`` / ``+cpu.cxx11.abi`` ->
    ``cpu``, ``+rocm6.3`` -> ``rocm6.3``, ``+xpu`` -> ``xpu``. Without one (the PyPI build, conda)
    ``torch/version.py`` decides: ``cuda = '12.8'`` -> ``cu128``, ``hip = '6.3.42131-fa1d09cbd'``
    -> ``rocm6.3``; neither -> ``cpu``.
    """
    _, _, local = version.partition("+")
    local = local.lower()
    if _CUDA_TAG.fullmatch(local) or _ROCM_TAG.fullmatch(local):
        return local
    if local == "cpu" or local.startswith(("cpu.", "cpu_", "cpu-")):
        return "cpu"
    if local == "xpu" or local.startswith("xpu."):
        return "xpu"
    hip_version = _MAJOR_MINOR.match(hip) if hip else None
    if hip_version:
        return f"rocm{hip_version[1]}.{hip_version[2]}"
    cuda_version = _MAJOR_MINOR.match(cuda) if cuda else None
    if cuda_version:
        return f"cu{cuda_version[1]}{cuda_version[2]}"
    if xpu:
        return "xpu"
    return "cpu"
