"""Pieces every command shares: target flags, host loading, JSON output, the console."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from torchenv.errors import BadInput

if TYPE_CHECKING:
    from rich.console import Console

    from torchenv.detection.overrides import Overrides
    from torchenv.detection.profile import HostProfile

__all__ = [
    "add_json_flag",
    "add_target_flags",
    "console",
    "emit_json",
    "host_from_args",
    "index_base",
    "overrides_from_args",
]


def add_json_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--json",
        action="store_true",
        help="print one JSON document on stdout (progress and logs go to stderr)",
    )


def add_target_flags(parser: argparse.ArgumentParser, *, host_only: bool = False) -> None:
    """The target flags of CLI.md; ``host_only`` leaves out those that only steer a decision."""
    g = parser.add_argument_group(
        "target (describe a machine other than this one)"
        if host_only
        else "target (resolve for a machine other than this one)"
    )
    if not host_only:
        g.add_argument(
            "--torch", metavar="SPEC", help="PEP 440 specifier for torch, e.g. '==2.7.*'"
        )
        g.add_argument(
            "--variant",
            metavar="V",
            default=None,
            help="force a variant: cpu, cu126, rocm6.3, xpu; 'auto' (default) decides",
        )
        g.add_argument("--cuda", metavar="X.Y", help="only CUDA builds of this version, e.g. 12.8")
    g.add_argument(
        "--python",
        dest="target_python",
        metavar="X.Y",
        help="target interpreter version; 3.13t means free-threaded",
    )
    g.add_argument(
        "--platform",
        metavar="P",
        help="linux-x86_64, linux-aarch64, win-amd64, macos-arm64, macos-x86_64",
    )
    g.add_argument(
        "--driver",
        metavar="VER",
        help="NVIDIA driver version, e.g. 550.54.15 (implies an NVIDIA GPU)",
    )
    g.add_argument(
        "--gpu",
        metavar="CC",
        action="append",
        help="compute capability of a GPU (8.6 or sm_86); repeat for several",
    )
    g.add_argument(
        "--rocm-arch",
        metavar="GFX",
        action="append",
        help="AMD GPU target, e.g. gfx1100; repeatable",
    )
    g.add_argument("--glibc", metavar="VER", help="the target's glibc version, e.g. 2.17")
    g.add_argument(
        "--host",
        metavar="FILE",
        help="a HostProfile saved by 'torchenv detect --json' on another machine",
    )
    g.add_argument(
        "--no-gpu", action="store_true", help="resolve as if the machine had no accelerator"
    )
    if host_only:
        return
    g.add_argument("--no-torchvision", action="store_true", help="leave torchvision out")
    g.add_argument("--no-torchaudio", action="store_true", help="leave torchaudio out")
    g.add_argument(
        "--index-base",
        metavar="URL",
        help="base URL of a PyTorch wheel index mirror (default: "
        "https://download.pytorch.org/whl; env TORCHENV_INDEX_BASE)",
    )


def index_base(args: argparse.Namespace) -> str | None:
    """``--index-base``, else a non-empty ``TORCHENV_INDEX_BASE``, else None (the default host).

    The only place the variable is read: the library takes the value as an argument.
    """
    flag = getattr(args, "index_base", None)
    return flag or os.environ.get("TORCHENV_INDEX_BASE", "").strip() or None


def overrides_from_args(args: argparse.Namespace) -> Overrides:
    from torchenv.detection.overrides import Overrides

    return Overrides.from_sources(
        driver=getattr(args, "driver", None),
        gpus=getattr(args, "gpu", None),
        rocm_archs=getattr(args, "rocm_arch", None),
        platform=getattr(args, "platform", None),
        python=getattr(args, "target_python", None),
        glibc=getattr(args, "glibc", None),
        no_gpu=bool(getattr(args, "no_gpu", False)),
        environ=os.environ,
    )


def host_from_args(
    args: argparse.Namespace, *, python_executable: str | None = None
) -> HostProfile:
    """The HostProfile for a command: ``--host FILE`` or detection, then the overrides."""
    from torchenv.detection.detect import apply_overrides, detect

    target_python = getattr(args, "target_python", None)
    if target_python and (
        os.sep in target_python or "/" in target_python or Path(target_python).is_file()
    ):
        # `--python PATH` names an interpreter to inspect rather than a version to target
        python_executable = python_executable or target_python
        args.target_python = None
    overrides = overrides_from_args(args)
    host_file = getattr(args, "host", None)
    if host_file:
        from torchenv.detection.profile import HostProfile

        path = Path(host_file)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise BadInput(f"--host: cannot read {host_file}: {exc.strerror or exc}") from exc
        except ValueError as exc:
            raise BadInput(
                f"--host: {host_file} is not JSON: {exc}",
                hint="create it with 'torchenv detect --json > host.json'",
            ) from exc
        return apply_overrides(HostProfile.from_json(data, origin=host_file), overrides)
    return detect(overrides, python=python_executable)


def emit_json(document: Any) -> None:
    sys.stdout.write(json.dumps(document, indent=2, sort_keys=False) + "\n")
    sys.stdout.flush()


def console(stderr: bool = False) -> Console:
    from rich.console import Console

    return Console(stderr=stderr, highlight=False, soft_wrap=False)
