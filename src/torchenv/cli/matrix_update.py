"""``torchenv matrix update``: refresh the user overlay from the live PyTorch index."""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["register"]


def register(msub: Any) -> None:
    p = msub.add_parser("update", help="read the live PyTorch index and update the overlay")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    raise NotImplementedError("matrix update")
