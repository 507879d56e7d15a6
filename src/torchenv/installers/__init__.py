"""Installers: pure renderers of a Plan as pip, uv, conda and pixi commands and files."""

from torchenv.installers.commands import index_url_for, pip_install_command, quote_command
from torchenv.installers.render import FORMATS, all_commands, render_file

__all__ = [
    "FORMATS",
    "all_commands",
    "index_url_for",
    "pip_install_command",
    "quote_command",
    "render_file",
]
