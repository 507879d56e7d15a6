"""``torchenv matrix ci``: CI matrices for GitHub Actions, GitLab and plain JSON."""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["register"]


def register(msub: Any) -> None:
    p = msub.add_parser("ci", help="generate a CI test matrix (GitHub, GitLab, JSON)")
    p.add_argument("--json", action="store_true", help="same as --format json")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    raise NotImplementedError("matrix ci")
