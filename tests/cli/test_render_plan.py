"""What a plan's warnings mean for the user: install it, or take the build that avoids them."""

from __future__ import annotations

import pytest

from torchenv.cli.render_plan import advice
from torchenv.resolver.plan import Build, BuildEvidence, EvidenceAlternative, Plan


def _plan(index: str = "confirmed", arch: str = "confirmed", level: str = "compat",
          alternative: Build | None = None,
          found: EvidenceAlternative | None = None) -> Plan:
    return Plan(torch="2.15.0", torchvision=None, torchaudio=None, variant="cu130",
                index_url="https://download.pytorch.org/whl/cu130", python="3.12",
                platform="linux-x86_64", accelerator="cuda", level=level,  # type: ignore[arg-type]
                matrix_version="2026-01-01", warnings=("a warning",),
                evidence=BuildEvidence(arch, None, (), index, ()),
                confirmed_alternative=alternative, evidence_alternative=found)


@pytest.mark.parametrize(("plan", "expected"), [
    (_plan(index="unknown", alternative=Build("2.14.1", "cu130")),
     ["this build's entry on the PyTorch index is not yet confirmed: install it (the installer "
      "stops with an error if the wheel is not there), or take torch 2.14.1 cu130, which is "
      "confirmed"]),
    # an entry a rule infers is named among the reasons (with its rule), as an inferred arch
    # list is: nothing to advise
    (_plan(index="inferred"), []),
    (_plan(arch="unknown", found=EvidenceAlternative("2.9.1", "cu128", "inferred", "r")),
     ["nothing proves this build runs on your GPU: install it and run 'torchenv validate', or "
      "take torch 2.9.1 cu128, whose support is inferred"]),
    (_plan(alternative=Build("2.6.0", "cu124")),
     ["this build works with the warnings above: install it, or take torch 2.6.0 cu124, "
      "which fits without any"]),
    (_plan(level="full"), []),
], ids=["index-unknown", "index-inferred", "arch-unknown", "compat", "full"])
def test_advice_names_the_choice_and_the_way_out(plan: Plan, expected: list[str]) -> None:
    assert advice(plan) == expected
