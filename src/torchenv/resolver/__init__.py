"""The resolver: a pure function from (Request, HostProfile, Matrix) to a Plan."""

from torchenv.resolver.plan import Alternative, NoMatch, Plan, Rejection
from torchenv.resolver.request import Request
from torchenv.resolver.resolve import evaluate, resolve

__all__ = ["Alternative", "NoMatch", "Plan", "Rejection", "Request", "evaluate", "resolve"]
