"""``torchenv detect``: print the HostProfile."""

from __future__ import annotations

from typing import TYPE_CHECKING

from torchenv.cli._common import add_json_flag, add_target_flags, emit_json, host_from_args
from torchenv.cli._fields import given

if TYPE_CHECKING:
    import argparse

    from torchenv.cli._common import Subcommands

__all__ = ["register", "run"]


def register(sub: Subcommands) -> None:
    p = sub.add_parser(
        "detect",
        help="show what this machine has: driver, GPUs, platform, Python, installed torch",
        description="Detect the NVIDIA driver and GPUs (NVML, /proc, nvidia-smi), AMD ROCm, "
        "Intel XPU, Apple MPS, the platform, glibc, the Python interpreter and the torch "
        "installed in it. Save the JSON to resolve for this machine elsewhere: "
        "'torchenv detect --json > host.json', then 'torchenv resolve --host host.json'.",
    )
    add_json_flag(p)
    p.add_argument("--python-exe", dest="python_exe", metavar="PATH",
                   help="inspect this interpreter (and the torch installed in it) instead of "
                   "the current one")
    add_target_flags(p, host_only=True)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.python_exe:
        given(args, "interpreter", "alias")
    profile = host_from_args(args, python_executable=args.python_exe)
    if args.json:
        emit_json(profile.to_json())
        return 0
    from torchenv.cli.render_host import render_profile

    render_profile(profile)
    return 0
