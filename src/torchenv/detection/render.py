"""Console rendering of a HostProfile (rich is imported only here)."""

from __future__ import annotations

from torchenv.detection.profile import HostProfile

__all__ = ["render_profile"]


def render_profile(profile: HostProfile) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    out = Console(highlight=False)
    py = profile.python
    out.print(f"[bold]Platform[/bold]  {profile.platform}"
              + (f"  glibc {profile.glibc}" if profile.glibc else "")
              + ("  (WSL2)" if profile.wsl else "")
              + (f"  container: {escape(profile.container)}" if profile.container else ""))
    out.print(f"[bold]Python[/bold]    {py.full_version or py.version} ({py.implementation}"
              + (", free-threaded" if py.free_threaded else "") + f", {py.env_kind})"
              + (f"  {escape(py.executable)}" if py.executable else ""))
    nv = profile.nvidia
    if nv is None and profile.nvidia_evidence:
        out.print("[bold]NVIDIA[/bold]    [yellow]a GPU is present but its driver could not be "
                  "read[/yellow]")
        for e in profile.nvidia_evidence:
            out.print(f"          evidence: {escape(e)}", soft_wrap=True)
    elif nv is None:
        out.print("[bold]NVIDIA[/bold]    no driver found")
    else:
        out.print(f"[bold]NVIDIA[/bold]    driver {nv.driver_version or 'unknown'}"
                  + (f", CUDA {nv.cuda_driver_version}" if nv.cuda_driver_version else "")
                  + f"  (from {nv.source})")
        if nv.gpus:
            t = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
            for col in ("#", "GPU", "capability", "memory", "visible"):
                t.add_column(col)
            visible = {g.index for g in nv.visible_gpus()}
            for g in nv.gpus:
                t.add_row(str(g.index), escape(g.name or "?"), g.compute_capability or "?",
                          f"{g.memory_mib} MiB" if g.memory_mib else "?",
                          "yes" if g.index in visible else "no")
            out.print(t)
        if nv.cuda_visible_devices is not None:
            out.print(f"          CUDA_VISIBLE_DEVICES={escape(repr(nv.cuda_visible_devices))}")
    if profile.rocm:
        out.print(f"[bold]ROCm[/bold]      {profile.rocm.version or 'version unknown'}: "
                  + (", ".join(profile.rocm.gfx_targets) or "no GPU agents")
                  + f"  (from {profile.rocm.source})")
    if profile.xpu:
        out.print(f"[bold]Intel XPU[/bold] {', '.join(profile.xpu.devices) or 'present'}"
                  + ("  (Level Zero)" if profile.xpu.level_zero else ""))
    if profile.mps:
        out.print("[bold]Apple[/bold]     MPS available")
    torch = profile.torch
    if torch is None:
        out.print("[bold]torch[/bold]     not installed in this interpreter")
    else:
        out.print(f"[bold]torch[/bold]     {escape(torch.version)}"
                  + (f" ({torch.variant})" if torch.variant else "")
                  + (f", torchvision {torch.torchvision}" if torch.torchvision else "")
                  + (f", torchaudio {torch.torchaudio}" if torch.torchaudio else ""))
    for w in profile.warnings:
        out.print(f"[yellow]warning:[/yellow] {escape(w)}")
