"""Doctor: explain what is wrong with an existing environment and print the fix.

``diagnose(host, env, matrix, installs)`` is pure; ``gather_installs(python, env)`` is the edge
that asks the target interpreter what it has installed.
"""

from torchenv.doctor.findings import (
    CondaRecord,
    Distribution,
    Finding,
    Installs,
    Severity,
    diagnose,
    summarize,
)
from torchenv.doctor.gather import gather_installs

__all__ = [
    "CondaRecord",
    "Distribution",
    "Finding",
    "Installs",
    "Severity",
    "diagnose",
    "gather_installs",
    "summarize",
]
