"""``torchenv resolve``, ``env`` and ``install``."""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["register"]


def register(sub: Any) -> None:
    p = sub.add_parser("resolve", help="the right torch build here, with install commands")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=run_resolve)


def run_resolve(args: argparse.Namespace) -> int:
    raise NotImplementedError("resolve")
