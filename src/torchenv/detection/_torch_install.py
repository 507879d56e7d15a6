"""The torch installed in an interpreter, read from package metadata and ``torch/version.py``.

Nothing here imports torch: the variant comes from the version's local tag (``2.7.1+cu128``) or,
for builds without one (the PyPI wheel, conda packages), from ``torch/version.py``.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional

__all__ = ["parse_torch_version_py", "variant_from"]

# "cuda: Optional[str] = '12.8'" (torch >= 2.1 annotates) or "cuda = '12.8'" or "= None"
_ASSIGN_RE = re.compile(
    r"""^(?P<name>[A-Za-z_]\w*)\s*(?::[^=]+)?=\s*(?:(?P<q>['"])(?P<value>[^'"]*)(?P=q)|None)\s*$""",
    re.MULTILINE,
)


def parse_torch_version_py(text: str) -> dict[str, Optional[str]]:
    """The string assignments of ``torch/version.py`` (``None`` kept as None).

    Sample::

        __version__ = '2.13.0+cpu'
        debug = False
        cuda: Optional[str] = None
        git_version = 'cf30153c4c131c8164ee7798e5022d810682e2cb'
        hip: Optional[str] = None
    """
    values: dict[str, Optional[str]] = {}
    for m in _ASSIGN_RE.finditer(text):
        values[m.group("name")] = m.group("value") if m.group("q") else None
    return values


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
    if re.match(r"^cu\d{2,3}$", local):
        return local
    if local == "cpu" or local.startswith(("cpu.", "cpu_", "cpu-")):
        return "cpu"
    m = re.match(r"^(rocm\d+\.\d+(?:\.\d+)?)$", local)
    if m:
        return m.group(1)
    if local == "xpu" or local.startswith("xpu."):
        return "xpu"
    if hip:
        hm = re.match(r"^(\d+)\.(\d+)", hip)
        if hm:
            return f"rocm{hm.group(1)}.{hm.group(2)}"
    if cuda:
        cm = re.match(r"^(\d+)\.(\d+)", cuda)
        if cm:
            return f"cu{cm.group(1)}{cm.group(2)}"
    if xpu:
        return "xpu"
    return "cpu"
