"""CI test matrices from the compatibility matrix (``torchenv matrix ci``).

``request`` parses the user's filters, ``rows`` enumerates the combinations that exist, and
``formats`` renders them for GitHub Actions, GitLab CI or as JSON. All pure functions.
"""

from __future__ import annotations

from torchenv.ci.formats import FORMATS, render
from torchenv.ci.request import CiRequest
from torchenv.ci.rows import CiRow, generate_rows

__all__ = ["FORMATS", "CiRequest", "CiRow", "generate_rows", "render"]
