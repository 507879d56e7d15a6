"""The explorer: one self-contained HTML page that answers ``torchenv resolve`` for any machine.

:mod:`~torchenv.explorer.classes` works out the equivalence classes of machines the resolver
cannot tell apart, :mod:`~torchenv.explorer.tables` runs the resolver once per class,
:mod:`~torchenv.explorer.page` writes the page (``torchenv matrix html``), and
:mod:`~torchenv.explorer.lookup` reads the tables back as the page does.
"""

from torchenv.explorer.page import build_page, render_page
from torchenv.explorer.tables import Tables, build_tables

__all__ = ["Tables", "build_page", "build_tables", "render_page"]
