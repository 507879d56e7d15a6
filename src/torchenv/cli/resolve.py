"""``torchenv resolve``, ``env`` and ``install``: one decision, rendered or carried out."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from torchenv.cli._common import (
    add_json_flag,
    add_target_flags,
    emit_json,
    host_from_args,
    index_base,
)
from torchenv.errors import BadInput

if TYPE_CHECKING:
    from torchenv.detection.profile import HostProfile
    from torchenv.matrix.model import Matrix
    from torchenv.resolver.plan import Plan
    from torchenv.resolver.request import Request

__all__ = ["register"]


def register(sub: Any) -> None:
    p = sub.add_parser(
        "resolve",
        help="the right torch build for this (or a described) machine, with install commands",
        description="Pick the torch build for this machine and explain why. Detection fills in "
        "whatever the target flags leave out. Exit 3 when nothing fits, with the fixes.",
    )
    add_target_flags(p)
    add_json_flag(p)
    p.add_argument(
        "--explain",
        action="store_true",
        help="also list every rejected candidate with its reason, grouped",
    )
    p.set_defaults(func=run_resolve)

    e = sub.add_parser(
        "env",
        help="write the resolved build as environment.yml, requirements, pyproject or pixi.toml",
        description="Render the resolved build as an environment file. Without -o the file "
        "goes to stdout. Files are written atomically and never overwritten without --force.",
    )
    e.add_argument(
        "--format",
        required=True,
        metavar="FMT",
        help="environment.yml, requirements, pyproject or pixi",
    )
    e.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of stdout")
    e.add_argument("--force", action="store_true", help="overwrite an existing FILE")
    e.add_argument(
        "--conda-channel",
        choices=("conda-forge", "pytorch"),
        default="conda-forge",
        help="environment.yml: 'pytorch' uses the frozen pytorch channel (≤ 2.5)",
    )
    add_target_flags(e)
    add_json_flag(e)
    e.set_defaults(func=run_env)

    i = sub.add_parser(
        "install",
        help="run the resolved pip (or uv) command in this (or --python-exe) interpreter",
        description="Resolve, show the command, ask, run it. Replaces a torch of another "
        "variant (a leftover +cpu build is the classic). Afterwards run 'torchenv validate'.",
    )
    i.add_argument("--installer", choices=("pip", "uv"), default="pip")
    i.add_argument("--dry-run", action="store_true", help="print the command, run nothing")
    i.add_argument("-y", "--yes", action="store_true", help="do not ask for confirmation")
    i.add_argument(
        "--python-exe",
        dest="python_exe",
        metavar="PATH",
        help="install into this interpreter (default: the current one)",
    )
    i.add_argument(
        "--timeout",
        type=float,
        default=3600.0,
        metavar="S",
        help="give up after S seconds (default 3600)",
    )
    add_target_flags(i)
    add_json_flag(i)
    i.set_defaults(func=run_install)


def _project_defaults(cwd: Path) -> dict[str, str]:
    """``[tool.torchenv]`` of ./pyproject.toml: torch, python, variant (flags override them)."""
    path = cwd / "pyproject.toml"
    try:
        raw = path.read_bytes()
    except OSError:
        return {}
    if b"torchenv" not in raw:
        return {}  # no [tool.torchenv]: skip the TOML parser
    try:
        if sys.version_info >= (3, 11):
            import tomllib
        else:  # pragma: no cover - Python 3.9/3.10
            import tomli as tomllib  # type: ignore[import-not-found,unused-ignore]
    except ImportError:  # pragma: no cover
        return {}
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (OSError, ValueError) as exc:
        raise BadInput(f"{path}: not valid TOML: {exc}") from exc
    section = data.get("tool", {}).get("torchenv", {})
    if not isinstance(section, dict):
        raise BadInput(f"{path}: [tool.torchenv] must be a table")
    out = {}
    for key in ("torch", "python", "variant"):
        if key in section:
            if not isinstance(section[key], str):
                raise BadInput(
                    f"{path}: [tool.torchenv] {key} must be a string, got {section[key]!r}"
                )
            out[key] = section[key]
    unknown = set(section) - {"torch", "python", "variant"}
    if unknown:
        raise BadInput(
            f"{path}: [tool.torchenv] has unknown key {sorted(unknown)[0]!r}",
            hint="known keys: torch, python, variant",
        )
    return out


def _request(args: argparse.Namespace) -> Request:
    from torchenv.resolver.request import Request

    defaults = _project_defaults(Path.cwd())
    if (
        getattr(args, "target_python", None) is None
        and "python" in defaults
        and not getattr(args, "host", None)
    ):
        from torchenv.detection.overrides import normalize_python

        args.target_python = normalize_python(
            defaults["python"], origin="pyproject.toml [tool.torchenv] python"
        )
    try:
        if defaults:  # a bad value from the file must name the file, not a flag
            Request(torch=None if args.torch else defaults.get("torch"),
                    variant=(None if args.variant else defaults.get("variant")) or "auto")
    except BadInput as exc:
        raise BadInput(f"pyproject.toml [tool.torchenv]: {exc.message}", hint=exc.hint) from exc
    return Request(
        torch=args.torch or defaults.get("torch"),
        variant=args.variant or defaults.get("variant") or "auto",
        cuda=args.cuda,
        with_torchvision=not args.no_torchvision,
        with_torchaudio=not args.no_torchaudio,
        index_base=index_base(args),
    )


def _decide(
    args: argparse.Namespace, python_exe: str | None = None
) -> tuple[Plan, HostProfile, Matrix]:
    from torchenv.matrix.loader import load_matrix
    from torchenv.resolver.resolve import resolve

    request = _request(args)
    host = host_from_args(args, python_executable=python_exe)
    matrix = load_matrix()
    if matrix.overlay_error:
        print(f"torchenv: warning: matrix overlay ignored: {matrix.overlay_error}", file=sys.stderr)
    return resolve(request, host, matrix), host, matrix


def run_resolve(args: argparse.Namespace) -> int:
    from torchenv.resolver.resolve import NoMatch

    try:
        plan, host, _ = _decide(args)
    except NoMatch as exc:
        if args.json:
            emit_json(exc.to_json())
        else:
            from torchenv.resolver.render import render_no_match

            render_no_match(exc, explain=args.explain)
        return exc.exit_code
    from torchenv.installers.render import all_commands

    commands = all_commands(plan)
    if args.json:
        emit_json(plan.to_json(commands))
        return 0
    from torchenv.resolver.render import render_plan

    render_plan(plan, host, commands, explain=args.explain)
    return 0


def run_env(args: argparse.Namespace) -> int:
    from torchenv.installers.render import FORMATS, render_file

    fmt = args.format
    aliases = {
        "conda": "environment.yml",
        "environment": "environment.yml",
        "requirements.txt": "requirements",
        "pyproject.toml": "pyproject",
        "pixi.toml": "pixi",
    }
    fmt = aliases.get(fmt, fmt)
    if fmt not in FORMATS:
        raise BadInput(
            f"--format: {args.format!r} is not a format", hint="use " + ", ".join(FORMATS)
        )
    plan, _, _ = _decide(args)
    text = render_file(plan, fmt, pytorch_channel=args.conda_channel == "pytorch")
    if args.output:
        from torchenv._files import write_atomic

        write_atomic(Path(args.output), text, force=args.force)  # BadInput (exit 2) on failure
        if args.json:
            emit_json({"written": args.output, "format": fmt, "plan": plan.to_json()})
        else:
            print(
                f"wrote {args.output} ({fmt}: torch {plan.torch} {plan.variant})", file=sys.stderr
            )
    elif args.json:
        emit_json({"format": fmt, "content": text, "plan": plan.to_json()})
    else:
        sys.stdout.write(text)
    return 0


def _refuse_other_machines(args: argparse.Namespace) -> None:
    """install acts on this machine: target flags that describe another one are refused."""
    from torchenv.detection._python_env import (
        inspect_current,
        inspect_interpreter,
        python_info_from,
    )
    from torchenv.detection.detect import current_platform
    from torchenv.detection.overrides import normalize_platform, normalize_python

    hint = ("'torchenv resolve' answers for other machines; --python-exe PATH picks the "
            "interpreter to install into")
    if args.host:
        raise BadInput("install: --host describes another machine", hint=hint)
    if args.platform and normalize_platform(args.platform) != current_platform():
        raise BadInput(f"install: --platform {args.platform} is not this machine "
                       f"({current_platform()})", hint=hint)
    if args.target_python:
        wanted = normalize_python(args.target_python)
        facts = (inspect_interpreter(args.python_exe) if args.python_exe
                 else inspect_current())  # the interpreter only, not the whole host
        actual = python_info_from(facts).version
        if wanted != actual:
            raise BadInput(f"install: --python {wanted} does not match the interpreter it "
                           f"installs into (Python {actual})", hint=hint)


def run_install(args: argparse.Namespace) -> int:
    import shlex

    from torchenv._subprocess import run_process
    from torchenv.installers.render import pip_command, uv_command

    python = args.python_exe or sys.executable
    _refuse_other_machines(args)
    plan, host, _ = _decide(args, python_exe=args.python_exe)
    command = (
        pip_command(plan, python=python)
        if args.installer == "pip"
        else uv_command(plan, python=python)
    )
    notes = []
    installed = host.torch
    if installed is not None:
        want = plan.local_tag or plan.variant
        if installed.public_version == plan.torch and (installed.variant or "") in (want, ""):
            notes.append(f"torch {installed.version} is already installed")
        else:
            notes.append(
                f"torch {installed.version}"
                + (f" ({installed.variant})" if installed.variant else "")
                + f" is installed and will be replaced by {plan.torch} {plan.variant}"
            )
            if installed.public_version == plan.torch and plan.local_tag is None:
                # same version, other variant: `torch==X` is already satisfied by `X+cpu`,
                # so the installer must be told to replace it
                # (torchvision/torchaudio too: a leftover +cpu torchvision breaks torchvision::nms)
                if args.installer == "pip":
                    command += " --force-reinstall"
                else:
                    command += "".join(
                        f" --reinstall-package {req.split('==')[0]}"
                        for req in plan.requirements()
                    )
    out = sys.stderr
    for n in notes:
        print(n, file=out)
    if args.dry_run:
        if args.json:
            emit_json({"command": command, "ran": False, "notes": notes, "plan": plan.to_json()})
        else:
            print(command)
        return 0
    print(f"$ {command}", file=out)
    if not args.yes:
        if not sys.stdin.isatty():
            raise BadInput(
                "no terminal to ask for confirmation",
                hint="pass --yes to install without asking, or --dry-run",
            )
        answer = input("Run it? [y/N] ").strip().lower()
        if answer not in ("y", "yes"):
            print("nothing installed", file=out)
            return 1
    result = run_process(shlex.split(command), timeout=args.timeout)
    sys.stderr.write(result.stdout[-4000:] + result.stderr[-4000:])
    if args.json:
        emit_json(
            {
                "command": command,
                "ran": True,
                "returncode": result.returncode,
                "notes": notes,
                "plan": plan.to_json(),
            }
        )
    if not result.ok:
        print(f"torchenv: error: {result.describe_failure()}", file=out)
        return 1
    print("installed; prove it works with: torchenv validate", file=out)
    return 0
