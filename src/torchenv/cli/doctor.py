"""``torchenv doctor``: diagnose an existing environment and print the fixes."""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["register", "run"]


def register(sub: Any) -> None:
    p = sub.add_parser("doctor", help="diagnose a broken install and print the fix")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    raise NotImplementedError("doctor")
