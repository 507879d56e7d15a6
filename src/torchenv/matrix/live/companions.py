"""Keeping companions.yaml current: the triton pin of a torch release, read from its wheel.

A torch wheel's core metadata names the triton release it needs (``Requires-Dist:
triton==3.4.0; platform_system == "Linux" and …``, in older files ``triton (==3.2.0) ; …``).
:func:`triton_pin` reads it through the same :data:`~torchenv.matrix.live.pypi.Reader` as
``matrix update`` (the PEP 658 ``.metadata`` file first, the wheel's ``METADATA`` member by
range requests second) and writes the ``triton`` entry of companions.yaml; :func:`triton_drift`
says where the data and the wheels disagree. Nothing here opens a connection: the caller passes
the reader.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement

from torchenv.matrix.companions import Companions
from torchenv.matrix.live.pypi import Reader, UnexpectedMetadata, wheel_requires_dist
from torchenv.values import TorchVersion

__all__ = ["triton_drift", "triton_pin", "triton_source"]


def _wheel_name(url: str) -> str:
    return url.rsplit("/", 1)[-1]


def triton_source(torch: str, wheel_url: str) -> dict[str, str]:
    """The source entry a pin read from ``wheel_url`` cites."""
    return {"id": f"pypi-torch-{torch}-metadata",
            "title": f"torch {torch}: METADATA of {_wheel_name(wheel_url)} on PyPI",
            "url": f"{wheel_url}.metadata"}


def triton_pin(read: Reader, torch: str, wheel_url: str) -> dict[str, Any]:
    """The ``triton`` entry for ``torch`` read from the wheel at ``wheel_url``:
    ``requirement`` (``triton==3.4.0``, or None when the wheel requires no triton) and its
    ``marker`` as the metadata writes them, the wheel, and the source it cites.

    Raises :class:`UnexpectedMetadata` for a wheel of another release, an unreadable
    requirement, or two triton requirements."""
    name = _wheel_name(wheel_url)
    if not name.startswith(f"torch-{torch}-") or not name.endswith(".whl"):
        raise UnexpectedMetadata(f"{wheel_url}: not a wheel of torch {torch}")
    found = []
    for line in wheel_requires_dist(read, wheel_url):
        try:
            req = Requirement(line)
        except InvalidRequirement:
            raise UnexpectedMetadata(f"{wheel_url}: Requires-Dist {line!r} is not a "
                                     "requirement") from None
        if req.name == "triton":
            found.append(req)
    if len(found) > 1:
        raise UnexpectedMetadata(f"{wheel_url}: requires triton {len(found)} times")
    entry: dict[str, Any] = {"torch": torch}
    if found:
        req = found[0]
        entry["requirement"] = f"triton{req.specifier}"
        entry["marker"] = None if req.marker is None else str(req.marker)
    else:
        entry["requirement"] = None
    entry["wheel"] = name
    entry["sources"] = [triton_source(torch, wheel_url)["id"]]
    return entry


def triton_drift(data: Companions, entries: Iterable[Mapping[str, Any]]) -> list[str]:
    """Where the pins read from the wheels (``entries``, as :func:`triton_pin` writes them)
    differ from the data: a release the data lacks, or another requirement or marker."""
    drift = []
    for entry in entries:
        torch = str(entry["torch"])
        pin = data.triton_pin(TorchVersion(torch))
        read = (entry.get("requirement"), entry.get("marker"))
        if pin is None:
            drift.append(f"torch {torch}: not in companions.yaml; its wheel requires "
                         f"{read[0] or 'no triton'}")
        elif (pin.requirement, pin.marker) != read:
            drift.append(f"torch {torch}: companions.yaml says {pin.requirement or 'no triton'}"
                         f"{'; ' + pin.marker if pin.marker else ''}, its wheel "
                         f"{read[0] or 'no triton'}{'; ' + read[1] if read[1] else ''}")
    return drift
