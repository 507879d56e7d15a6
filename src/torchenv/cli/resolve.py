"""``torchenv resolve``, ``env`` and ``install``: one decision, rendered or carried out."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

from torchenv._files import current_folder
from torchenv.cli._common import (
    add_json_flag,
    add_target_flags,
    emit_json,
    host_from_args,
    index_base,
)
from torchenv.cli._fields import FIELDS, given, sources, spell
from torchenv.errors import BadInput, TorchenvError

if TYPE_CHECKING:
    import argparse

    from torchenv.cli._common import Subcommands
    from torchenv.cli.render_plan import Choice
    from torchenv.detection.profile import HostProfile
    from torchenv.detection.target import Target
    from torchenv.matrix.model import Matrix
    from torchenv.resolver.plan import Plan
    from torchenv.resolver.request import Request

__all__ = ["register"]

_DEFAULT_TIMEOUT = 3600.0
_MAX_TIMEOUT = 86400.0
_TAIL = 4000
"""Characters of the installer's output kept for the JSON document and the error report."""


def _add_with_flags(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("companions (extensions resolved with torch)")
    g.add_argument("--with", dest="with_", action="append", metavar="NAME[,NAME]",
                   help="also choose these packages for the torch build: flash-attn, "
                   "xformers, pyg (pyg-lib, torch-scatter, torch-sparse), torchao, vllm")
    g.add_argument("--allow-build", dest="allow_build", action="append", metavar="NAME",
                   help="a source build may be chosen for NAME when no prebuilt file fits "
                   "the newest torch (default: an older torch with a prebuilt one)")


def register(sub: Subcommands) -> None:
    from torchenv.installers.render import INSTALLERS

    p = sub.add_parser(
        "resolve",
        help="the right torch build for this (or a described) machine, with install commands",
        description="Pick the torch build for this machine and explain why. Detection fills in "
        "whatever the target flags leave out. Exit 3 when nothing fits, with the fixes.",
    )
    add_target_flags(p)
    _add_with_flags(p)
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
    e.add_argument("-o", "--output", metavar="FILE",
                   help="write to FILE instead of stdout ('-' is stdout)")
    e.add_argument("--force", action="store_true", help="overwrite an existing FILE")
    e.add_argument(
        "--conda-channel",
        choices=("conda-forge", "pytorch"),
        default="conda-forge",
        help="environment.yml: 'pytorch' uses the frozen pytorch channel (≤ 2.5)",
    )
    add_target_flags(e)
    _add_with_flags(e)
    add_json_flag(e)
    e.set_defaults(func=run_env)

    i = sub.add_parser(
        "install",
        help="run the resolved pip (or uv) command in this (or --python-exe) interpreter",
        description="Resolve, show the command, ask, run it. Replaces a torch of another "
        "variant (a leftover +cpu build is the classic). Afterwards run 'torchenv validate'.",
    )
    i.add_argument("--installer", choices=INSTALLERS, default="pip",
                   help="uv is looked for on PATH, then next to this interpreter and the one "
                   "it installs into")
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
        default=None,
        metavar="S",
        help=f"stop the installer after S seconds (at most {_MAX_TIMEOUT:g}; default "
        f"{_DEFAULT_TIMEOUT:g})",
    )
    add_target_flags(i)
    _add_with_flags(i)
    add_json_flag(i)
    i.set_defaults(func=run_install)


def _project_defaults(cwd: str | None) -> dict[str, str]:
    """``[tool.torchenv]`` of ./pyproject.toml: torch, python, variant, with (flags override
    them; ``with`` is a list of names, kept comma-joined); none when there is no current folder
    (it was deleted: it holds no file)."""
    from torchenv._files import read_bytes_capped

    if cwd is None:
        return {}
    path = os.path.join(cwd, "pyproject.toml")
    if not os.path.isfile(path):
        return {}
    raw = read_bytes_capped(path)
    if b"torchenv" not in raw:
        return {}  # no [tool.torchenv]: skip the TOML parser
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.9/3.10: tomli is a dependency there
        import tomli as tomllib  # type: ignore[import-not-found,unused-ignore]
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError) as exc:  # RecursionError: arrays nested absurdly deep
        raise BadInput(f"{path}: not valid TOML: {exc}") from exc
    tool = data.get("tool", {})
    section = tool.get("torchenv", {}) if isinstance(tool, dict) else {}
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
    if "with" in section:
        names = section["with"]
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise BadInput(f"{path}: [tool.torchenv] with must be a list of package names, "
                           f"got {names!r}", hint='e.g. with = ["flash-attn"]')
        out["with"] = ",".join(names)
    unknown = set(section) - {"torch", "python", "variant", "with"}
    if unknown:
        raise BadInput(
            f"{path}: [tool.torchenv] has unknown key {sorted(unknown)[0]!r}",
            hint="known keys: torch, python, variant, with",
        )
    return out


def _from_project(args: argparse.Namespace, field: str, flag: str | None,
                  defaults: dict[str, str]) -> str | None:
    """The flag's value, else the ``[tool.torchenv]`` one; which of them gave it is recorded."""
    if flag:
        given(args, field, "flag")
        return flag
    if field in defaults:
        given(args, field, "pyproject")
    return defaults.get(field)


def _request(args: argparse.Namespace, defaults: dict[str, str]) -> Request:
    from torchenv.cli._common import target_python
    from torchenv.resolver.request import Request

    if (
        target_python(args)[0] is None  # --python, then TORCHENV_PYTHON, then the file
        and "python" in defaults
        and not getattr(args, "host", None)
    ):
        from torchenv.detection.overrides import normalize_python

        given(args, "python", "pyproject")
        args.target_python = normalize_python(defaults["python"])
    return Request.from_text(
        torch=_from_project(args, "torch", args.torch, defaults),
        variant=_from_project(args, "variant", args.variant, defaults),
        cuda=args.cuda,
        with_torchvision=not args.no_torchvision,
        with_torchaudio=not args.no_torchaudio,
        index_base=index_base(args),
    )


def _check_known(request: Request, matrix: Matrix) -> None:
    """A variant or CUDA version no release has is a typo, not an unsatisfiable request."""
    from torchenv.cli._common import known_cuda_versions, known_variants

    if request.explicit_variant:
        variants = known_variants(matrix)
        if request.variant not in variants:
            raise BadInput(f"no release in the matrix has the variant "
                           f"{str(request.variant)!r}",
                           hint="known variants: " + ", ".join(map(str, variants)),
                           field="variant", value=str(request.variant))
    if request.cuda is not None:
        versions = known_cuda_versions(matrix)
        if request.cuda not in versions:
            raise BadInput(f"no release in the matrix is built for CUDA {request.cuda}",
                           hint="known CUDA versions: " + ", ".join(map(str, versions)),
                           field="cuda", value=str(request.cuda))


def _decide(
    args: argparse.Namespace,
    python_exe: str | None = None,
    defaults: dict[str, str] | None = None,
) -> tuple[Plan, HostProfile, Matrix, Request, Target]:
    """The plan for the command's request and target host, with the profile it was read from,
    the matrix, the request and the target (read once, here, before anything is judged)."""
    from torchenv.cli._common import index_base_warning, load_matrix_reported
    from torchenv.detection.target import read_target
    from torchenv.resolver.resolve import resolve

    defaults_used = _project_defaults(current_folder()) if defaults is None else defaults
    request = _request(args, defaults_used)
    matrix = load_matrix_reported()
    host = host_from_args(args, python_executable=python_exe, matrix=matrix)
    _check_known(request, matrix)
    target = read_target(host, matrix)
    names, allowed = _companions_wanted(args, defaults_used)
    if names or allowed:
        plan = _resolve_stack(request, target, matrix, names, allowed)
    else:
        plan = resolve(request, target, matrix)
    warning = index_base_warning(request.index_base)
    if warning:
        print(f"torchenv: warning: {warning}", file=sys.stderr)
        if args.json:  # the JSON document carries it too
            from dataclasses import replace

            plan = replace(plan, warnings=(*plan.warnings, warning))
    return plan, host, matrix, request, target


def _companions_wanted(args: argparse.Namespace,
                       defaults: dict[str, str]) -> tuple[list[str], list[str]]:
    """The ``--with`` values (else ``[tool.torchenv] with``) and the ``--allow-build`` ones,
    as given; read against the companion data by :func:`_resolve_stack`."""
    values = list(getattr(args, "with_", None) or [])
    if values:
        given(args, "with", "flag")
    elif "with" in defaults:
        given(args, "with", "pyproject")
        values = [defaults["with"]] if defaults["with"] else []
    return values, list(getattr(args, "allow_build", None) or [])


def _resolve_stack(request: Request, target: Target, matrix: Matrix, values: list[str],
                   allow: list[str]) -> Plan:
    """torch with its companions (docs/companions.md); the data is loaded only here."""
    from torchenv.matrix.companions import load_companions
    from torchenv.resolver.stack import read_with, resolve_stack

    data = load_companions()
    names = read_with(values, data)
    allowed = read_with(allow, data) if allow else ()
    outside = [n for n in allowed if n not in names]
    if outside:
        raise BadInput(f"{outside[0]!r} is not among the --with packages "
                       f"({', '.join(names) or 'none'})",
                       hint=f"add it: --with {','.join((*names, outside[0]))}",
                       field="allow_build", value=outside[0])
    return resolve_stack(request, target, matrix, data, names, allowed)


def run_resolve(args: argparse.Namespace) -> int:
    from torchenv.resolver.resolve import NoMatch

    try:
        plan, host, matrix, request, target = _decide(args)
    except NoMatch as exc:
        if args.json:
            emit_json(exc.to_json(spell))
        else:
            from torchenv.cli.render_plan import render_no_match

            render_no_match(exc, explain=args.explain)
        return exc.exit_code
    commands = _commands(args, plan, host)
    if args.json:
        emit_json(_plan_json(plan, commands))
        return 0
    from torchenv.cli.render_plan import render_plan

    render_plan(plan, host, commands, explain=args.explain,
                alternatives=_alternatives(plan, request, target, matrix))
    return 0


def _plan_json(plan: Plan, commands: dict[str, str],
               constraints_path: str | None = None) -> dict[str, Any]:
    """The plan's document with its constraints file (``constraints``: name, text, whether it
    was ``written``; once written, the variables and the commands that use it, by its absolute
    path). A file nobody wrote gets no command that names it: the command would fail."""
    from torchenv.installers.render import CONSTRAINTS_FILE, constraints

    if constraints_path is None:
        kept = constraints(plan, CONSTRAINTS_FILE)
        kept = {k: v for k, v in kept.items() if k not in ("environment", "commands")}
        return {**plan.to_json(commands), "constraints": {**kept, "written": False}}
    return {**plan.to_json(commands),
            "constraints": {**constraints(plan, os.path.abspath(constraints_path)),
                            "written": True}}


def _commands(args: argparse.Namespace, plan: Plan, host: HostProfile) -> dict[str, str]:
    """Every installer's command. The pixi command repeats the decision with the target's
    facts; for a described platform, glibc is one only when it was given: this machine's
    glibc says nothing about another machine."""
    from dataclasses import replace

    from torchenv.installers.render import all_commands

    given_here = sources(args)
    if "platform" in given_here and "glibc" not in given_here and not args.host:
        host = replace(host, glibc=None)
    return all_commands(plan, host, spell=spell)


def _alternatives(plan: Plan, request: Request, target: Target,
                  matrix: Matrix) -> list[Choice]:
    """The builds the plan names beside its choice (one that fits without warnings, one whose
    support for the GPUs is known), each with the pip command that installs it."""
    from dataclasses import replace

    from torchenv.cli.render_plan import Choice
    from torchenv.installers.render import pip_command
    from torchenv.resolver.resolve import resolve
    from torchenv.values import TorchSpec, VariantName

    named: list[tuple[str, str, str]] = []
    if plan.confirmed_alternative is not None:
        alt = plan.confirmed_alternative
        named.append(("fits without warnings", alt.torch, alt.variant))
    if plan.evidence_alternative is not None:
        found = plan.evidence_alternative
        named.append((f"has {found.evidence} support for your GPU", found.torch, found.variant))
    out: list[Choice] = []
    for label, torch, variant in named:
        if any((c.torch, c.variant) == (torch, variant) for c in out):
            continue
        # the variant names its CUDA: a --cuda of the request must not contradict it
        other = resolve(replace(request, torch=TorchSpec(f"=={torch}"),
                                variant=VariantName(variant), cuda=None), target, matrix)
        out.append(Choice(label, torch, variant, pip_command(other)))
    return out


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
    plan, host, *_ = _decide(args)
    from torchenv.matrix.index import strip_credentials

    text = render_file(plan, fmt, pytorch_channel=args.conda_channel == "pytorch")
    text, had_credentials = strip_credentials(text)  # a file never holds a password
    if had_credentials:
        print("torchenv: warning: the file leaves out the index URL's user name and password; "
              "give them to pip or uv through a keyring, ~/.netrc or PIP_INDEX_URL / "
              "UV_INDEX_URL", file=sys.stderr)
    if args.output and args.output != "-":  # `-o -` is stdout, as without -o
        from pathlib import Path

        from torchenv._files import read_bytes_capped, write_atomic
        from torchenv.installers.render import CONSTRAINTS_FILE, render_constraints

        # the constraints file beside it, written under the same rule (--force to replace)
        beside = Path(args.output).parent / CONSTRAINTS_FILE
        keep = render_constraints(plan)
        same = beside.is_file() and read_bytes_capped(
            beside, what="-o", regular_only=True).decode("utf-8", "replace") == keep
        if beside.exists() and not same and not args.force:  # before anything is written
            raise BadInput(f"-o: {beside} (the constraints file written beside {args.output}) "
                           "exists and pins another build",
                           hint="pass --force to replace it, or write into another folder")
        write_atomic(Path(args.output), text, force=args.force)  # BadInput (exit 2) on failure
        if not same:
            write_atomic(beside, keep, force=True)
        if args.json:
            emit_json({"written": args.output, "format": fmt, "constraints_written": str(beside),
                       "plan": _plan_json(plan, _commands(args, plan, host), str(beside))})
        else:
            print(
                f"wrote {args.output} ({fmt}: torch {plan.torch} {plan.variant}) and {beside} "
                f"(export PIP_CONSTRAINT and UV_CONSTRAINT as its absolute path, so that no "
                "later install replaces this build)", file=sys.stderr
            )
    elif args.json:
        emit_json({"format": fmt, "content": text,
                   "plan": _plan_json(plan, _commands(args, plan, host))})
    else:
        sys.stdout.write(text)
    return 0


def _refuse_other_machines(args: argparse.Namespace, defaults: dict[str, str]) -> None:
    """install acts on this machine: a target that describes another one is refused, whether
    it comes from a flag, a ``TORCHENV_*`` variable or ``[tool.torchenv]``."""
    from torchenv.cli._common import is_interpreter_path, target_python
    from torchenv.detection._python_env import (
        inspect_current,
        inspect_interpreter,
        python_info_from,
    )
    from torchenv.detection.detect import current_platform
    from torchenv.detection.overrides import normalize_python, read_platform

    hint = ("'torchenv resolve' answers for other machines; --python-exe PATH picks the "
            "interpreter to install into")
    if args.host:
        raise BadInput("install: --host describes another machine", hint=hint)
    platform = args.platform
    given(args, "platform", "flag")
    if not platform:
        platform = os.environ.get("TORCHENV_PLATFORM", "").strip()
        given(args, "platform", "variable")
    origin = FIELDS["platform"].name(sources(args)["platform"])
    if platform and read_platform(platform) != current_platform():
        raise BadInput(f"install: {origin} {platform} is not this machine "
                       f"({current_platform()})", hint=hint)
    wanted, origin = target_python(args)
    from_project = wanted is None and "python" in defaults
    if from_project:
        wanted, origin = defaults["python"], FIELDS["python"].name("pyproject")
        given(args, "python", "pyproject")
    if wanted is None:
        return
    target = args.python_exe or sys.executable
    if is_interpreter_path(wanted):
        if not _same_file(wanted, target):
            raise BadInput(f"install: {origin} {wanted} is not the interpreter it installs "
                           f"into ({target})", hint=hint)
        return
    version = normalize_python(wanted)
    facts = (inspect_interpreter(args.python_exe) if args.python_exe
             else inspect_current())  # the interpreter only, not the whole host
    actual = python_info_from(facts).version
    if version == actual:
        return
    if from_project:
        raise BadInput(f"install: {origin} is {version}, but the interpreter it installs into "
                       f"is Python {actual}",
                       hint=f"pass --python-exe PATH of a Python {version} interpreter, or "
                       f"--python {actual} to resolve for this one")
    raise BadInput(f"install: {origin} {version} does not match the interpreter it installs "
                   f"into (Python {actual})", hint=hint)


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _install_timeout(raw: str | None) -> float:
    """``--timeout``: a finite number of seconds above 0 and at most a day."""
    import math

    if raw is None:
        return _DEFAULT_TIMEOUT
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and 0 < value <= _MAX_TIMEOUT):
        raise BadInput(f"--timeout: {raw!r} is not a number of seconds above 0 and at most "
                       f"{_MAX_TIMEOUT:g}", hint=f"e.g. --timeout {_DEFAULT_TIMEOUT:g}")
    return value


def _find_uv(python: str) -> str:
    """The uv to run: on PATH, else next to the interpreter running torchenv (a venv that is not
    activated, pipx), else next to the one it installs into."""
    import shutil
    import sysconfig

    places = [sysconfig.get_path("scripts"), os.path.dirname(sys.executable),
              os.path.dirname(python)]
    for path in (None, *dict.fromkeys(p for p in places if p)):  # None: PATH
        found = shutil.which("uv", path=path)
        if found:
            return found
    raise BadInput("--installer uv: uv is not on PATH, nor next to " + " or ".join(
        dict.fromkeys((sys.executable, python))),
        hint="get it with 'pip install uv' or the official installer "
        "(https://docs.astral.sh/uv/getting-started/installation/), or use --installer pip")


def _uv_for(python: str, *, dry_run: bool) -> str:
    """The uv to run; a dry run runs nothing, so without uv it shows the command with plain
    ``uv`` and says so."""
    try:
        return _find_uv(python)
    except BadInput as exc:
        if not dry_run:
            raise
        print(f"torchenv: warning: {exc.message}; the command shows plain 'uv'",
              file=sys.stderr)
        return "uv"


class _Echo:
    """Shows an installer's output as it arrives and keeps its last ``_TAIL`` characters.

    The child's stdout goes to ours, its stderr to ours; with ``--json`` both go to stderr, so
    stdout stays one JSON document. Called from the reader threads of the subprocess funnel.
    """

    def __init__(self, *, to_stderr_only: bool) -> None:
        import codecs
        import threading

        self._lock = threading.Lock()
        self._decoders = {name: codecs.getincrementaldecoder("utf-8")(errors="replace")
                          for name in ("stdout", "stderr")}
        self._to_stderr_only = to_stderr_only
        self._tail = ""
        self._shown = True

    def __call__(self, stream: str, chunk: bytes) -> None:
        text = self._decoders[stream].decode(chunk)
        with self._lock:
            self._tail = (self._tail + text)[-_TAIL:]
            if not self._shown:
                return
            out = sys.stderr if self._to_stderr_only or stream == "stderr" else sys.stdout
            try:
                out.write(text)
                out.flush()
            except (OSError, ValueError):  # the terminal went away: keep installing, stop echoing
                self._shown = False

    @property
    def tail(self) -> str:
        with self._lock:
            return self._tail


def _describe_installed(host: HostProfile, plan: Plan) -> tuple[list[str], bool]:
    """Notes on the torch already there, and whether the installer must replace what already
    satisfies the pins (same version, another variant: ``torch==X`` is satisfied by ``X+cpu``,
    and a leftover +cpu torchvision breaks ``torchvision::nms``)."""
    installed = host.torch
    if installed is None:
        return [], False
    want = plan.local_tag or plan.variant
    if installed.public_version == plan.torch and (installed.variant or "") in (want, ""):
        return [f"torch {installed.version} is already installed"], False
    note = (f"torch {installed.version}"
            + (f" ({installed.variant})" if installed.variant else "")
            + f" is installed and will be replaced by {plan.torch} {plan.variant}")
    return [note], installed.public_version == plan.torch and plan.local_tag is None


def run_install(args: argparse.Namespace) -> int:
    from torchenv._subprocess import run_process
    from torchenv.installers.commands import quote_command, shell_for
    from torchenv.installers.render import install_argv

    timeout = _install_timeout(args.timeout)  # before anything is detected or started
    if args.python_exe:
        given(args, "interpreter", "alias")
    python = args.python_exe or sys.executable
    uv = _uv_for(python, dry_run=args.dry_run) if args.installer == "uv" else None
    defaults = _project_defaults(current_folder())
    _refuse_other_machines(args, defaults)
    plan, host, *_ = _decide(args, python_exe=args.python_exe, defaults=defaults)
    built = [c.name for c in plan.companions if not c.prebuilt]
    if built:  # install runs one installer command; a source build needs torch there first
        raise BadInput(f"install: {built[0]} would be a source build, which install does not "
                       "run yet", hint="run the two commands 'torchenv resolve --with ... "
                       "--allow-build ...' prints, or leave out --allow-build",
                       field="allow_build", value=built[0])
    notes, replace = _describe_installed(host, plan)
    argv = install_argv(plan, args.installer, python=python, program=uv, replace=replace)
    command = quote_command(argv, shell_for(plan.platform))  # shown, never parsed back
    out = sys.stderr
    for n in notes:
        print(n, file=out)
    for w in plan.warnings:  # before the question, so the answer can take them into account
        print(f"torchenv: warning: {w}", file=out)
    for w in plan.host_warnings:
        print(f"torchenv: warning: detection could not read everything: {w}", file=out)
    # the keys of the --json document; returncode, timed_out and output_tail are null until
    # the installer runs
    document: dict[str, object] = {
        "command": command, "argv": argv, "ran": False, "returncode": None, "timed_out": None,
        "output_tail": None, "notes": notes, "plan": _plan_json(plan, _commands(args, plan, host))}
    if args.dry_run:
        if args.json:
            emit_json(document)
        else:
            print(command)
        return 0
    print(f"$ {command}", file=out)
    if not args.yes:
        if not _stdin_is_a_terminal():
            raise BadInput(
                "no terminal to ask for confirmation",
                hint="pass --yes to install without asking, or --dry-run",
            )
        print("Run it? [y/N] ", end="", file=out, flush=True)  # stdout is for --json alone
        try:
            answer = input().strip().lower()
        except EOFError as exc:  # the terminal closed, or Ctrl-D: no is the only safe answer
            print(file=out)
            raise TorchenvError("no answer at the prompt; nothing installed",
                                hint="answer y to install, or pass --yes to install without "
                                "asking") from exc
        if answer not in ("y", "yes"):
            print("nothing installed", file=out)
            if args.json:
                emit_json(document)
            return 1
    echo = _Echo(to_stderr_only=args.json)
    result = run_process(argv, timeout=timeout, on_output=echo)
    kept = _keep_constraints(plan, host, python) if result.ok else None
    if args.json:
        emit_json({**document, "ran": True, "returncode": result.returncode,
                   "timed_out": result.timed_out, "output_tail": echo.tail,
                   "constraints_written": kept})
    if not result.ok:
        print(f"torchenv: error: {result.describe_failure()}", file=out)
        if result.timed_out:
            longer = min(timeout * 2, _MAX_TIMEOUT)
            print(f"  hint: a slow download needs more time, e.g. --timeout {longer:g}",
                  file=out)
        elif args.installer == "pip" and "No module named pip" in result.stderr:
            print(f"  hint: {python} has no pip (uv makes venvs without it): use "
                  "--installer uv, or add pip with 'python -m ensurepip'", file=out)
        return 1
    if kept is not None:
        from torchenv.installers.commands import quote_command

        export = quote_command(["export", f"PIP_CONSTRAINT={kept}", f"UV_CONSTRAINT={kept}"])
        print(f"wrote {kept}: {export} so that no later install replaces this build", file=out)
    print("installed; prove it works with: torchenv validate", file=out)
    return 0


def _keep_constraints(plan: Plan, host: HostProfile, python: str) -> str | None:
    """Write the plan's constraints file into the environment just installed into (a venv,
    conda or pixi environment: ``<prefix>/torch-constraints.txt``); its path, or None for a
    system interpreter, whose prefix is not torchenv's to write to."""
    from pathlib import Path

    from torchenv._files import write_atomic
    from torchenv.installers.render import CONSTRAINTS_FILE, render_constraints

    if host.python.env_kind in ("system", "unknown"):
        return None
    folder = Path(os.path.abspath(python)).parent
    prefix = folder.parent if folder.name in ("bin", "Scripts") else folder
    path = prefix / CONSTRAINTS_FILE
    try:
        write_atomic(path, render_constraints(plan), force=True)
    except TorchenvError:
        return None  # installed all the same; the plan's JSON still carries the text
    return str(path)


def _stdin_is_a_terminal() -> bool:
    """False also when there is no stdin at all (started with it closed)."""
    try:
        return sys.stdin is not None and sys.stdin.isatty()
    except ValueError:  # a closed file object
        return False
