"""The live matrix update: the PyTorch wheel index and PyPI, read under strict network rules.

``http`` is the one network funnel, ``wheels`` parses pages and file names, ``derive`` turns
them into a diff and an overlay, ``update`` runs the whole thing. ``requests`` is imported only
when a fetch happens, so importing this package stays cheap.
"""

from __future__ import annotations

__all__: list[str] = []
