"""``resolve`` for people: a Plan, or an unsatisfiable request with what would fix it."""

from __future__ import annotations

import sys
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from torchenv.cli._common import console
from torchenv.cli._fields import fix_text
from torchenv.detection.profile import HostProfile
from torchenv.resolver.plan import NoMatch, Plan, Rejection

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["Choice", "advice", "compact", "group_rejections", "render_no_match", "render_plan",
           "same_reason"]


def escape(text: str) -> str:
    """``text`` safe to print through rich: a ``[...]`` in a value is never read as markup."""
    from rich.markup import escape as rich_escape

    return rich_escape(text)


_TITLES = {
    "python": "Python / platform",
    "platform": "Python / platform",
    "glibc": "glibc",
    "driver": "driver",
    "arch": "GPU architecture",
    "no-gpu": "no matching GPU",
    "cpu-on-gpu-host": "CPU builds on a GPU host",
    "companion": "companion (--with)",
}


def group_rejections(rejected: tuple[Rejection, ...]) -> dict[str, list[str]]:
    """Reasons grouped by kind, each line ``torch variant: reason``."""
    groups: dict[str, list[str]] = defaultdict(list)
    for r in rejected:
        groups[_title(r)].append(f"{r.torch} {r.variant}: {r.reason}")
    return dict(groups)


def _title(r: Rejection) -> str:
    return _TITLES.get(r.category, "other")


@dataclass(frozen=True)
class Choice:
    """A build offered beside the answer: why it is offered, and its command."""

    label: str  # "fits without warnings"
    torch: str
    variant: str
    command: str


def advice(plan: Plan) -> list[str]:
    """What the plan's warnings mean for the user, as what to do: install the answer anyway, or
    take the named build that does not have the problem."""
    out = []
    evidence, alt = plan.evidence, plan.confirmed_alternative
    other = f", or take torch {alt.torch} {alt.variant}" if alt is not None else ""
    if evidence is not None and evidence.index == "unknown":
        out.append("this build's entry on the PyTorch index is not yet confirmed: install it (the "
                   "installer stops with an error if the wheel is not there)"
                   + (f"{other}, which is confirmed" if alt is not None else ""))
        alt = None  # named once
    if evidence is not None and evidence.arch == "unknown":
        found = plan.evidence_alternative
        out.append("nothing proves this build runs on your GPU: install it and run "
                   "'torchenv validate'"
                   + (f", or take torch {found.torch} {found.variant}, whose support is "
                      f"{found.evidence}" if found is not None else ""))
    elif plan.level == "compat" and alt is not None:
        out.append(f"this build works with the warnings above: install it{other}, "
                   "which fits without any")
    return out


def render_plan(
    plan: Plan,
    host: HostProfile,
    commands: Mapping[str, str],
    *,
    explain: bool = False,
    alternatives: Sequence[Choice] = (),
) -> None:
    """The plan on stdout: the build to install and its command first, then what the warnings
    mean for the user, why, the other installers, and clearly labelled alternatives. Commands
    and flag suggestions are never broken across lines."""
    out = console()
    extras = ", ".join(
        f"{n} {v}"
        for n, v in (("torchvision", plan.torchvision), ("torchaudio", plan.torchaudio))
        if v
    )
    first, *others = commands.items()
    out.print(
        f"[bold]Install[/bold] [bold green]torch {escape(plan.torch)}[/bold green] "
        f"[bold]{escape(plan.variant)}[/bold]"
        + (f" ({escape(extras)})" if extras else "")
        + f" for {escape(plan.platform)}, Python {escape(plan.python)}:"
    )
    out.print(f"  {escape(first[1])}", soft_wrap=True)
    out.print("  then prove it works: [bold]torchenv validate[/bold]")
    _render_companions(out, plan)
    _render_constraints(out, plan)
    if plan.warnings:
        out.print("[bold yellow]Warnings[/bold yellow]")
        for w in plan.warnings:
            out.print(f"  ! {escape(w)}", soft_wrap=True)
        for a in advice(plan):
            out.print(f"  [bold]→[/bold] {escape(a)}", soft_wrap=True)
    _render_host_warnings(out, plan.host_warnings)
    out.print("[bold]Why this build[/bold]")
    for r in plan.reasons:  # they may name flags to copy (--torch ==2.11.0 --variant cu128)
        out.print(f"  • {escape(r)}", soft_wrap=True)
    if others:
        out.print("[bold]The same build with another installer[/bold]")
        width = max(len(k) for k, _ in others)
        for name, cmd in others:
            out.print(f"  {escape(name):<{width}}  {escape(cmd)}", soft_wrap=True)
    for choice in alternatives:
        out.print(f"[bold]Alternative, not the answer above:[/bold] torch {escape(choice.torch)} "
                  f"{escape(choice.variant)} {escape(choice.label)}")
        out.print(f"  {escape(choice.command)}", soft_wrap=True)
    if explain:
        _render_rejections(out, plan.rejected)
    elif plan.rejected:
        out.print(
            f"[dim]{len(plan.rejected)} other candidates rejected; --explain lists them[/dim]"
        )


def _render_constraints(out: Console, plan: Plan) -> None:
    """How to keep this build: the constraints file's lines and the variables that use it."""
    from torchenv.installers.render import CONSTRAINTS_FILE

    out.print(f"  keep it: save as {CONSTRAINTS_FILE} and export PIP_CONSTRAINT and "
              "UV_CONSTRAINT as its absolute path, so no later install replaces this build:",
              soft_wrap=True)
    pins = [*plan.requirements(), *(c.constraint() for c in plan.companions),
            *plan.extra_constraints]
    for requirement in pins:
        out.print(f"    {escape(requirement)}", soft_wrap=True)


def _render_companions(out: Console, plan: Plan) -> None:
    """Each companion chosen with torch, where it comes from and why; what held torch back."""
    if not plan.companions:
        return
    out.print("[bold]With[/bold]")
    for c in plan.companions:
        where = {"sdist": "a source build (allowed)", "find-links": f"find-links {c.url}",
                 "release-asset": "a release asset"}.get(c.source, f"{c.source} wheel")
        out.print(f"  [bold]{escape(c.name)} {escape(c.version)}[/bold]: {escape(where)}, "
                  f"{escape(c.coupling)} coupling to torch, evidence {escape(c.evidence)}",
                  soft_wrap=True)
        out.print(f"    {escape(c.reasons[0])}", soft_wrap=True)
    for h in plan.held_back:
        out.print(f"  [bold yellow]held back[/bold yellow]: {escape(h.package)} has no prebuilt "
                  f"file for torch {escape(h.from_torch)} {escape(h.from_variant)}, so torch "
                  f"is {escape(h.to_torch)} {escape(h.to_variant)}", soft_wrap=True)
        if h.source_build:
            out.print(f"    the newer pair needs {escape(h.source_build)}; pass "
                      f"--allow-build {escape(h.package)} to choose it", soft_wrap=True)


def _render_host_warnings(out: Console, warnings: tuple[str, ...]) -> None:
    """What detection could not read: printed with every decision, so it is never lost."""
    if warnings:
        out.print("[bold yellow]Detection could not read everything[/bold yellow]")
        for w in warnings:
            out.print(f"  ? {escape(w)}", soft_wrap=True)


def _render_rejections(out: Console, rejected: tuple[Rejection, ...]) -> None:
    """Grouped by kind, and within a kind by reason: candidates rejected for the same reason
    are one line with a compact list of them (``2.15.0: cu130, cu132 · 2.14.1: cu126``)."""
    if not rejected:
        return
    out.print("[bold]Rejected[/bold]")
    for title, lines in group_rejections(rejected).items():
        out.print(f"  [bold]{escape(title)}[/bold] ({len(lines)})")
        for reason, builds in same_reason(r for r in rejected if _title(r) == title).items():
            if len(builds) == 1:
                torch, variant = builds[0]
                out.print(f"    {escape(f'{torch} {variant}: {reason}')}", soft_wrap=True)
                continue
            out.print(f"    {escape(f'{len(builds)} candidates: {reason}')}", soft_wrap=True)
            out.print(f"      {escape(compact(builds))}", soft_wrap=True)


def same_reason(rejected: Iterable[Rejection]) -> dict[str, list[tuple[str, str]]]:
    """reason → the (torch, variant) candidates rejected for it, in their order."""
    out: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for r in rejected:
        out[r.reason].append((r.torch, r.variant))
    return dict(out)


def compact(builds: Sequence[tuple[str, str]]) -> str:
    """``2.15.0: cu130, cu132 · 2.14.1: cu126``: each release once, with its variants."""
    by_torch: dict[str, list[str]] = defaultdict(list)
    for torch, variant in builds:
        by_torch[torch].append(variant)
    return " · ".join(f"{torch}: {', '.join(variants)}" for torch, variants in by_torch.items())


def render_no_match(exc: NoMatch, *, explain: bool) -> None:
    err = console(stderr=True)
    err.print(f"[bold red]torchenv: {escape(exc.message)}[/bold red]")
    _render_host_warnings(err, exc.host_warnings)
    if exc.fixes:
        err.print("[bold]What would fix it[/bold]")
        for f in exc.fixes:
            err.print(f"  • {escape(fix_text(f))}", soft_wrap=True)
    groups = group_rejections(exc.rejected)
    if explain:
        _render_rejections(err, exc.rejected)
    else:
        for title, lines in groups.items():
            err.print(f"  {escape(title)}: {len(lines)} candidates, e.g. {escape(lines[0])}",
                      soft_wrap=True)
        if exc.rejected:
            err.print("  (--explain lists every candidate)")
    sys.stderr.flush()
