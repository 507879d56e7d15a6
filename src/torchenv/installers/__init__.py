"""Installers: pure renderers of a Plan as pip, uv, conda and pixi commands and files."""

from torchenv.installers.commands import (
    chain_commands,
    pip_install_command,
    quote_command,
    shell_for,
)
from torchenv.installers.render import FORMATS, INSTALLERS, all_commands, install_argv, render_file

__all__ = [
    "FORMATS",
    "INSTALLERS",
    "all_commands",
    "chain_commands",
    "install_argv",
    "pip_install_command",
    "quote_command",
    "render_file",
    "shell_for",
]
