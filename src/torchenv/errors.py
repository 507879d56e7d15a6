"""Exceptions torchenv raises, each mapped to an exit code by the CLI's error boundary."""

from __future__ import annotations

__all__ = [
    "BadInput",
    "MatrixError",
    "NetworkError",
    "TorchenvError",
    "Unsatisfiable",
]


class TorchenvError(Exception):
    """Base class; ``hint`` says what to do next, ``exit_code`` is the CLI's status.

    ``field`` names the request's field the error is about in the library's own terms
    (``"variant"``, ``"driver"``, ``"gpus"``), never a flag: the command line knows whether the
    value came from a flag, an environment variable or ``[tool.torchenv]`` and says which.
    ``value`` is the text that was refused.
    """

    exit_code = 1

    def __init__(self, message: str, hint: str | None = None, *, field: str | None = None,
                 value: object = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.field = field
        self.value = value


class BadInput(TorchenvError, ValueError):
    """Raised when a flag, variable or file holds a value torchenv cannot use (exit 2)."""

    exit_code = 2


class MatrixError(BadInput):
    """Raised when matrix data fails validation; the message names the file and key path."""


class NetworkError(TorchenvError):
    """Raised when an index or API cannot be read (offline, timeout, malformed page): exit 4,
    never confused with 1 (``matrix update --check`` found drift)."""

    exit_code = 4


class Unsatisfiable(TorchenvError):
    """Raised when no candidate satisfies a request (exit 3)."""

    exit_code = 3
