"""``detect`` for people: the HostProfile as a few labelled lines and a table of GPUs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from torchenv.cli._common import console
from torchenv.detection.catalog import CATALOG, DERIVED
from torchenv.detection.profile import HostProfile

if TYPE_CHECKING:
    from typing import Optional

    from torchenv.values import CudaVersion

__all__ = ["render_profile"]


def render_profile(profile: HostProfile) -> None:
    from rich.markup import escape
    from rich.table import Table

    out = console()

    def e(value: object) -> str:  # every value comes from the machine or a file: never markup
        return escape(str(value))

    py = profile.python
    out.print(f"[bold]Platform[/bold]  {e(profile.platform)}"
              + (f"  glibc {e(profile.glibc)}" if profile.glibc else "")
              + ("  (WSL2)" if profile.wsl else "")
              + (f"  container: {e(profile.container)}" if profile.container else ""))
    out.print(f"[bold]Python[/bold]    {e(py.full_version or py.version)} ({e(py.implementation)}"
              + (", free-threaded" if py.free_threaded else "") + f", {e(py.env_kind)})"
              + (f"  {e(py.executable)}" if py.executable else ""),
              soft_wrap=True)  # a path: never broken, so it can be copied
    nv = profile.nvidia
    if nv is None and profile.nvidia_evidence:
        out.print("[bold]NVIDIA[/bold]    [yellow]a GPU is present but its driver could not be "
                  "read[/yellow]")
        for ev in profile.nvidia_evidence:
            out.print(f"          evidence: {e(ev)}", soft_wrap=True)
    elif nv is None:
        out.print("[bold]NVIDIA[/bold]    no driver found")
    else:
        out.print(f"[bold]NVIDIA[/bold]    driver {e(nv.driver_version or 'unknown')}"
                  + _cuda(nv.cuda_driver_version, nv.cuda_driver_version_source)
                  + f"  (from {e(nv.source)})")
        if nv.gpus:
            t = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
            for col in ("#", "GPU", "capability", "memory", "visible"):
                t.add_column(col)
            visible = {g.index for g in nv.visible_gpus()}
            for g in nv.gpus:
                capability = e(g.compute_capability or "?") + (
                    " (GPU catalog)" if g.compute_capability_source == CATALOG else "")
                t.add_row(e(g.index), e(g.name or "?"), capability,
                          f"{e(g.memory_mib)} MiB" if g.memory_mib else "?",
                          "yes" if g.index in visible else "no")
            out.print(t)
        if nv.cuda_visible_devices is not None:
            out.print(f"          CUDA_VISIBLE_DEVICES={e(repr(nv.cuda_visible_devices))}")
    if profile.rocm:
        out.print(f"[bold]ROCm[/bold]      {e(profile.rocm.version or 'version unknown')}: "
                  + e(", ".join(profile.rocm.gfx_targets) or "no GPU agents")
                  + f"  (from {e(profile.rocm.source)})")
    if profile.xpu:
        out.print(f"[bold]Intel XPU[/bold] {e(', '.join(profile.xpu.devices) or 'present')}"
                  + ("  (Level Zero)" if profile.xpu.level_zero else ""))
    if profile.mps:
        out.print("[bold]Apple[/bold]     MPS available")
    torch = profile.torch
    if torch is None:
        out.print("[bold]torch[/bold]     not installed in this interpreter")
    else:
        out.print(f"[bold]torch[/bold]     {e(torch.version)}"
                  + (f" ({e(torch.variant)})" if torch.variant else "")
                  + (f", torchvision {e(torch.torchvision)}" if torch.torchvision else "")
                  + (f", torchaudio {e(torch.torchaudio)}" if torch.torchaudio else ""))
    for w in profile.warnings:
        out.print(f"[yellow]warning:[/yellow] {e(w)}", soft_wrap=True)


def _cuda(version: Optional[CudaVersion], source: Optional[str]) -> str:
    if version is None:
        return ""
    if source == DERIVED:  # no tool said it: a lower bound from the driver table
        return f", CUDA ≥ {version} (by the driver table)"
    return f", CUDA {version}"
