"""``torchenv validate``: run real PyTorch checks in the target interpreter."""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["register", "run"]


def register(sub: Any) -> None:
    p = sub.add_parser("validate", help="prove the installed torch works on this hardware")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    raise NotImplementedError("validate")
