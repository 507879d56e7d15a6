"""Pieces every command shares: target flags, host loading, JSON output, the console."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from torchenv.cli._fields import FIELDS, given, sources
from torchenv.errors import BadInput

if TYPE_CHECKING:
    import argparse

    from rich.console import Console

    from torchenv.cli import Parser
    from torchenv.detection.overrides import Overrides
    from torchenv.detection.profile import HostProfile
    from torchenv.matrix.model import Matrix
    from torchenv.values import CudaVersion, VariantName

    Subcommands = argparse._SubParsersAction[Parser]
    """What ``add_subparsers`` returns: each command module's ``register`` adds its commands."""

__all__ = [
    "add_json_flag",
    "add_target_flags",
    "console",
    "emit_json",
    "host_from_args",
    "index_base",
    "index_base_warning",
    "is_interpreter_path",
    "known_cuda_versions",
    "known_variants",
    "load_matrix_reported",
    "overrides_from_args",
    "target_python",
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
        help="compute capability of a GPU (8.6 or sm_86); repeat, or separate with commas, "
        "for several",
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
    """``--index-base``, else a non-empty ``TORCHENV_INDEX_BASE``, else None (the default host),
    checked by :func:`torchenv.matrix.index.check_index_base`.

    The only place the variable is read: the library takes the value as an argument.
    """
    from torchenv.matrix.index import check_index_base

    flag = getattr(args, "index_base", None)
    if flag is not None:
        given(args, "index_base", "flag")
        return check_index_base(flag)
    env = os.environ.get("TORCHENV_INDEX_BASE", "").strip()
    if not env:
        return None
    given(args, "index_base", "variable")
    return check_index_base(env)


def index_base_warning(base: str | None) -> str | None:
    """A warning for a plain-HTTP index base that is not on this machine (downloads are not
    encrypted, and ``matrix update`` refuses such a mirror without ``--allow-http``)."""
    if base is None or not base.lower().startswith("http://"):
        return None
    from urllib.parse import urlsplit

    from torchenv.matrix.live.http import LOCAL_HOSTS

    host = (urlsplit(base).hostname or "").lower()
    if host in LOCAL_HOSTS:
        return None
    return (f"index base {base} is plain HTTP: wheels would be downloaded unencrypted, and "
            "'torchenv matrix update' refuses it without --allow-http; use https:// if the "
            "mirror offers it")


def target_python(args: argparse.Namespace,
                  environ: Mapping[str, str] | None = None) -> tuple[str | None, str]:
    """The target Python asked for and the words naming where it came from: ``--python``, else
    a non-empty ``TORCHENV_PYTHON``. Either may be a version (``3.12``) or the path of an
    interpreter."""
    flag = getattr(args, "target_python", None)
    field = FIELDS["python"]
    if flag:
        if "python" not in sources(args):
            given(args, "python", "flag")
        return flag, field.name(sources(args)["python"])
    env = (os.environ if environ is None else environ).get("TORCHENV_PYTHON", "").strip()
    if env:
        given(args, "python", "variable")
        return env, field.name("variable")
    return None, field.flag


def is_interpreter_path(value: str) -> bool:
    """True when a ``--python``/``TORCHENV_PYTHON`` value names an interpreter, not a version."""
    return os.sep in value or "/" in value or os.path.isfile(value)


def overrides_from_args(
    args: argparse.Namespace, environ: Mapping[str, str] | None = None
) -> Overrides:
    """The target flags, else their ``TORCHENV_*`` variables, as detection overrides: the one
    place that decides which of them gives each value (the flag wins; a blank variable is
    unset), recorded for the error boundary (:func:`~torchenv.cli._fields.given`).

    "No accelerator" (``--no-gpu``, or an empty ``TORCHENV_GPUS``) beside a described one: both
    flags is a contradiction; a flag wins over a variable; among variables the empty
    ``TORCHENV_GPUS`` wins.
    """
    from torchenv.detection.overrides import Overrides

    environ = os.environ if environ is None else environ
    values: dict[str, Any] = {}
    for field, attribute in (("driver", "driver"), ("gpus", "gpu"), ("platform", "platform"),
                             ("python", "target_python"), ("rocm_archs", "rocm_arch"),
                             ("glibc", "glibc")):
        flag = getattr(args, attribute, None)
        variable = FIELDS[field].variable
        if flag:
            if field not in sources(args):  # else given already ([tool.torchenv]'s Python)
                given(args, field, "flag")
            values[field] = flag
        elif variable is not None and environ.get(variable, "").strip():
            given(args, field, "variable")
            values[field] = [environ[variable]] if field == "gpus" else environ[variable]
    no_gpu = bool(getattr(args, "no_gpu", False))
    described = [(FIELDS[f].flag, values[f]) for f in ("driver", "gpus", "rocm_archs")
                 if f in values and sources(args).get(f) == "flag"]
    if no_gpu and described:
        flag, value = described[0]
        shown = value if isinstance(value, str) else value[0].split(",")[0].strip()
        raise BadInput(f"--no-gpu conflicts with {flag} {shown}: one says there is no "
                       "accelerator, the other describes one",
                       hint=f"drop {flag}, or drop --no-gpu")
    gpus_variable = FIELDS["gpus"].variable
    if (not no_gpu and "gpus" not in values and gpus_variable in environ
            and not described):
        # CLI.md: an empty TORCHENV_GPUS means "no GPU" (as --no-gpu), unless a flag describes
        # one
        given(args, "gpus", "variable")
        no_gpu = True
    return Overrides.from_sources(no_gpu=no_gpu, **values)


def host_from_args(
    args: argparse.Namespace, *, python_executable: str | None = None,
    matrix: Matrix | None = None, python_facts: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
) -> HostProfile:
    """The HostProfile for a command: ``--host FILE`` or detection, then the overrides.
    ``matrix``: the one the command has loaded, for what detection completes from it;
    ``python_facts``: what ``python_executable`` already reported (no second child);
    ``environ``: the variables the overrides are read from (default: this process's)."""
    from torchenv.detection.detect import apply_overrides, detect

    environ = os.environ if environ is None else environ
    wanted, _ = target_python(args, environ)
    if wanted and is_interpreter_path(wanted):
        # `--python PATH` (or TORCHENV_PYTHON=PATH) names an interpreter to inspect rather than
        # a version to target; the variable is consumed here, so it is not read as a version
        if python_executable is None:
            python_executable = wanted
            given(args, "interpreter", sources(args).get("python", "flag"))
        args.target_python = None
        environ = {k: v for k, v in environ.items() if k != "TORCHENV_PYTHON"}
    overrides = overrides_from_args(args, environ)
    host_file = getattr(args, "host", None)
    if host_file:
        from torchenv._files import read_text_capped
        from torchenv.detection.profile import HostProfile

        hint = "create it with 'torchenv detect --json > host.json'"
        text = read_text_capped(host_file, what="--host")
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise BadInput(f"--host: {host_file} is not JSON: {exc}", hint=hint) from exc
        except RecursionError as exc:  # the C decoder's own guard against deep nesting
            raise BadInput(f"--host: {host_file} is nested too deeply to be a host profile",
                           hint=hint) from exc
        return apply_overrides(HostProfile.from_json(data, origin=host_file), overrides)
    return detect(overrides, python=python_executable, matrix=matrix, python_facts=python_facts)


def load_matrix_reported() -> Matrix:
    """The matrix with the user overlay; a broken overlay is reported on stderr and ignored."""
    from torchenv.matrix.loader import load_matrix

    matrix = load_matrix()
    if matrix.overlay_error:
        print(f"torchenv: warning: matrix overlay ignored: {matrix.overlay_error}", file=sys.stderr)
    return matrix


def known_variants(matrix: Matrix) -> list[VariantName]:
    """Every variant some release in ``matrix`` has: cpu, then CUDA, ROCm, XPU, each by version."""
    names = {v.name for r in matrix.releases for v in r.variants}
    names |= {n for r in matrix.releases for n in r.pypi_default.values()}
    return sorted(names)


def known_cuda_versions(matrix: Matrix) -> list[CudaVersion]:
    """Every CUDA version (``12.8``) some release in ``matrix`` is built for, oldest first."""
    return sorted({v.cuda_version for r in matrix.releases for v in r.variants if v.cuda_version})


def emit_json(document: Any) -> None:
    sys.stdout.write(json.dumps(document, indent=2) + "\n")
    sys.stdout.flush()


_UNWRAPPED_WIDTH = 10_000
"""The width a table is laid out for when the output is not a terminal: as wide as it needs."""


def console(stderr: bool = False) -> Console:
    """The console every command prints through (stdout, or stderr with ``stderr=True``).

    On a terminal, text wraps at its width, except what a renderer prints with
    ``soft_wrap=True`` (commands to copy and paste, paths), which the terminal wraps visually
    without a line break in the text. Anywhere else (a pipe, a file, CI logs) nothing is
    wrapped at all, whatever ``COLUMNS`` says: each line is one line, and tables take the width
    they need.
    """
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    try:
        terminal = stream is not None and stream.isatty()
    except ValueError:  # a closed stream
        terminal = False
    if terminal:
        return Console(stderr=stderr, highlight=False)
    return Console(stderr=stderr, highlight=False, soft_wrap=True, width=_UNWRAPPED_WIDTH)
