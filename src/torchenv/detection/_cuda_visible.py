"""``CUDA_VISIBLE_DEVICES``: which of the driver's GPUs torch will actually see.

CUDA reads the list left to right and stops at the first entry it cannot use: an index that is
out of range or negative (``-1``), a UUID prefix that matches no GPU or several, a duplicate. The
entries before it stay visible. An empty value hides every GPU.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from torchenv.detection.profile import Gpu

if TYPE_CHECKING:
    from typing import Optional

__all__ = ["parse_cuda_visible_devices"]

_INDEX = re.compile(r"-?[0-9]+")


def _by_uuid(prefix: str, gpus: Sequence[Gpu]) -> list[Gpu]:
    want = prefix.lower()
    return [g for g in gpus if g.uuid and g.uuid.lower().startswith(want)]


def parse_cuda_visible_devices(
    value: Optional[str],
    gpus: Sequence[Gpu],
    environ: Optional[Mapping[str, str]] = None,
) -> tuple[Optional[tuple[int, ...]], tuple[str, ...]]:
    """(visible NVML indices in CUDA's order, notes) for ``CUDA_VISIBLE_DEVICES=value``.

    None for an unset variable (every GPU is visible). ``gpus`` is what the driver reported; when
    it is empty (no probe could list the GPUs) indices are taken at their word.

    Samples: ``0,1`` · ``GPU-8932f937`` (a UUID prefix) · ``MIG-GPU-<uuid>/1/0`` ·
    ``MIG-<uuid>`` · ``""`` (no GPU) · ``-1`` (no GPU) · ``1,foo,0`` (only GPU 1).
    """
    if value is None:
        return None, ()
    notes: list[str] = []
    tokens = [t.strip() for t in value.split(",")]
    if tokens == [""]:
        return (), ("CUDA_VISIBLE_DEVICES is empty: torch will see no GPU",)
    known = {g.index for g in gpus}
    visible: list[int] = []
    used_index = False
    for pos, token in enumerate(tokens):
        chosen: Optional[int] = None
        problem: Optional[str] = None
        if _INDEX.fullmatch(token):
            n = int(token)
            used_index = True
            if n < 0:
                problem = f"{token!r} is negative"
            elif gpus and n not in known:
                problem = f"there is no GPU {n}"
            else:
                chosen = n
        elif token.upper().startswith("MIG-"):
            rest = token[4:]
            if rest.upper().startswith("GPU-"):
                parent = _by_uuid(rest.split("/")[0], gpus)
                if len(parent) == 1:
                    chosen = parent[0].index
                else:
                    problem = f"{token!r} names no known GPU"
            else:
                mig = [g for g in gpus if g.mig_mode]
                if len(mig) == 1:
                    chosen = mig[0].index
                elif not gpus:
                    problem = f"{token!r} cannot be checked (the GPUs are unknown)"
                elif not mig and all(g.mig_mode is False for g in gpus):
                    problem = f"{token!r} names a MIG instance, but no GPU has MIG enabled"
                else:
                    notes.append(f"CUDA_VISIBLE_DEVICES entry {token!r} is a MIG instance that "
                                 "cannot be mapped to its GPU here; assuming every GPU that may "
                                 "have MIG enabled")
                    for g in mig or [g for g in gpus if g.mig_mode is None]:
                        if g.index not in visible:
                            visible.append(g.index)
                    continue
        elif token.upper().startswith("GPU-"):
            match = _by_uuid(token, gpus)
            if len(match) == 1:
                chosen = match[0].index
            elif match:
                problem = f"{token!r} matches several GPUs"
            else:
                problem = f"{token!r} matches no GPU UUID"
        else:
            problem = f"{token!r} is neither an index nor a GPU/MIG UUID"
        if chosen is not None and chosen in visible:
            problem = f"GPU {chosen} is listed twice"
            chosen = None
        if problem is not None:
            ignored = tokens[pos:]
            notes.append(f"CUDA_VISIBLE_DEVICES={value!r}: {problem}; CUDA stops there, so "
                         f"{', '.join(repr(t) for t in ignored)} "
                         + ("is" if len(ignored) == 1 else "are") + " ignored"
                         + ("" if visible else " and torch will see no GPU"))
            break
        assert chosen is not None
        visible.append(chosen)
    env = environ or {}
    distinct = {(g.name, g.compute_capability) for g in gpus}
    if used_index and visible and len(distinct) > 1 and \
            env.get("CUDA_DEVICE_ORDER") != "PCI_BUS_ID":
        notes.append("CUDA_VISIBLE_DEVICES uses indices on a machine with different GPU models: "
                     "CUDA numbers GPUs fastest first unless CUDA_DEVICE_ORDER=PCI_BUS_ID, while "
                     "these indices are nvidia-smi's PCI order — set CUDA_DEVICE_ORDER=PCI_BUS_ID")
    return tuple(visible), tuple(notes)
