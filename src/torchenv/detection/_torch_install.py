"""The torch installed in an interpreter, read from package metadata and ``torch/version.py``.

Nothing here imports torch: the variant comes from the version's local tag (``2.7.1+cu128``) or,
for builds without one (the PyPI wheel, conda packages), from ``torch/version.py``.
"""

from __future__ import annotations

from torchenv.detection._text import digits_end

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional

__all__ = ["parse_torch_version_py", "variant_from"]

_NAME_START = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_"


def _space_end(text: str, start: int) -> int:
    """Where the run of whitespace (``str.isspace``, newlines included) at ``start`` ends."""
    end = start
    while end < len(text) and text[end].isspace():
        end += 1
    return end




def _assignment(text: str, start: int) -> Optional[tuple[str, Optional[str], int]]:
    """(name, value, end) of the assignment at ``start`` (a line start), or None.

    The shape is ``name [: annotation] = 'value'`` (or ``"value"`` or ``None``) and nothing but
    whitespace after it. Whitespace may span lines, the annotation runs to the first ``=`` and
    the value to the first quote of either kind, so either may span lines too. ``end`` is the
    end of the text when only whitespace follows, else the last newline of the whitespace after
    the value.
    """
    if start >= len(text) or text[start] not in _NAME_START:
        return None
    pos = start + 1
    while pos < len(text) and (text[pos].isalnum() or text[pos] == "_"):
        pos += 1
    name = text[start:pos]
    pos = _space_end(text, pos)
    if text.startswith(":", pos):
        equals = text.find("=", pos + 1)
        if equals <= pos + 1:  # no "=", or no annotation before it
            return None
        pos = equals
    if not text.startswith("=", pos):
        return None
    pos = _space_end(text, pos + 1)
    value: Optional[str]
    if text.startswith(("'", '"'), pos):
        close = min((i for i in (text.find("'", pos + 1), text.find('"', pos + 1)) if i >= 0),
                    default=-1)
        if close < 0 or text[close] != text[pos]:
            return None
        value, pos = text[pos + 1:close], close + 1
    elif text.startswith("None", pos):
        value, pos = None, pos + 4
    else:
        return None
    end = _space_end(text, pos)
    if end < len(text):
        end = text.rfind("\n", pos, end)
        if end < 0:
            return None
    return name, value, end


def _major_minor(text: str) -> Optional[tuple[str, str]]:
    """The digits of ``major.minor`` that ``text`` starts with: ``"6.3.42131-fa1d"`` ->
    ``("6", "3")``; None when it does not start so."""
    dot = digits_end(text, 0)
    if dot == 0 or not text.startswith(".", dot):
        return None
    end = digits_end(text, dot + 1)
    if end == dot + 1:
        return None
    return text[:dot], text[dot + 1:end]


def _is_cuda_tag(local: str) -> bool:
    """``cu`` and two or three decimal digits (a newline may end it): ``cu128``."""
    digits = local.removesuffix("\n")[2:]
    return local.startswith("cu") and len(digits) in (2, 3) and digits.isdecimal()


def _rocm_tag(local: str) -> Optional[str]:
    """``rocm6.3`` or ``rocm6.2.4`` (a newline may end it, and is dropped); None otherwise."""
    tag = local.removesuffix("\n")
    if not tag.startswith("rocm"):
        return None
    parts = tag[4:].split(".")
    if len(parts) not in (2, 3) or not all(p.isdecimal() for p in parts):
        return None
    return tag


def parse_torch_version_py(text: str) -> dict[str, Optional[str]]:
    """The string assignments of ``torch/version.py`` (``None`` kept as None).

    Sample::

        __version__ = '2.13.0+cpu'
        debug = False
        cuda: Optional[str] = None
        git_version = 'cf30153c4c131c8164ee7798e5022d810682e2cb'
        hip: Optional[str] = None
    """
    values: dict[str, Optional[str]] = {}
    start = 0
    while start < len(text):
        found = _assignment(text, start) if start == 0 or text[start - 1] == "\n" else None
        if found is not None:
            name, value, start = found
            values[name] = value
            continue
        newline = text.find("\n", start)
        if newline < 0:
            break
        start = newline + 1
    return values


def variant_from(version: str, cuda: Optional[str] = None, hip: Optional[str] = None,
                 xpu: Optional[str] = None) -> str:
    """The build variant of an installed torch.

    The local tag decides when present: ``+cu128`` -> ``cu128``, ``+cpu`` / ``+cpu.cxx11.abi`` ->
    ``cpu``, ``+rocm6.3`` -> ``rocm6.3``, ``+xpu`` -> ``xpu``. Without one (the PyPI build, conda)
    ``torch/version.py`` decides: ``cuda = '12.8'`` -> ``cu128``, ``hip = '6.3.42131-fa1d09cbd'``
    -> ``rocm6.3``; neither -> ``cpu``.
    """
    _, _, local = version.partition("+")
    local = local.lower()
    if _is_cuda_tag(local):
        return local
    if local == "cpu" or local.startswith(("cpu.", "cpu_", "cpu-")):
        return "cpu"
    rocm = _rocm_tag(local)
    if rocm:
        return rocm
    if local == "xpu" or local.startswith("xpu."):
        return "xpu"
    if hip:
        hip_version = _major_minor(hip)
        if hip_version:
            return f"rocm{hip_version[0]}.{hip_version[1]}"
    if cuda:
        cuda_version = _major_minor(cuda)
        if cuda_version:
            return f"cu{cuda_version[0]}{cuda_version[1]}"
    if xpu:
        return "xpu"
    return "cpu"
