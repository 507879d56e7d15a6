"""Validation: prove that the installed torch works on this hardware.

``validate(ValidationOptions(python=...))`` runs the checks in a child process of the target
interpreter (the calling process never imports torch) and returns a :class:`Report`.
"""

from torchenv.validation.options import Level, ValidationOptions
from torchenv.validation.report import CheckResult, Report, write_junit
from torchenv.validation.runner import EXTRA_CHECKS_ENV, GPU_HOST_ENV, validate

__all__ = [
    "EXTRA_CHECKS_ENV",
    "GPU_HOST_ENV",
    "CheckResult",
    "Level",
    "Report",
    "ValidationOptions",
    "validate",
    "write_junit",
]
