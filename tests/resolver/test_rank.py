"""The ranking's order, sentence by sentence (docs/resolution.md, "Ranking"), on candidates of
the embedded matrix whose verdicts are set one field at a time."""

from __future__ import annotations

from dataclasses import replace

from torchenv.detection.profile import Gpu, HostProfile, NvidiaInfo, PythonInfo
from torchenv.matrix.model import Evidence, Matrix
from torchenv.resolver import Request
from torchenv.resolver.candidate import Candidate
from torchenv.resolver.rank import rank_key, ranked
from torchenv.values import ComputeCapability, DriverVersion, Platform


def _pair(matrix: Matrix) -> tuple[Candidate, Candidate]:
    """(older, newer): two CUDA candidates of different releases, as the resolver made them."""
    host = HostProfile(platform=Platform("linux-x86_64"), python=PythonInfo("3.12"),
                       glibc="2.39", nvidia=NvidiaInfo(DriverVersion("580.65.06"), None, "test",
                                                       (Gpu(0, None, ComputeCapability("8.6")),)))
    compatible, _ = ranked(Request(), host, matrix)
    cuda = [c for c in compatible if c.variant.kind == "cuda"]
    newer = cuda[0]
    older = next(c for c in cuda if c.release.torch < newer.release.torch)
    return older, newer


def _sorted(*candidates: Candidate) -> list[Candidate]:
    return sorted(candidates, key=lambda c: rank_key(c, True))


def test_evidence_before_recency(matrix: Matrix) -> None:
    older, newer = _pair(matrix)
    known = replace(older, arch_evidence=Evidence.INFERRED)
    unknown = replace(newer, arch_evidence=Evidence.UNKNOWN, neighbours=True)
    assert _sorted(unknown, known) == [known, unknown]


def test_unknown_builds_whose_neighbours_run_the_gpu_first(matrix: Matrix) -> None:
    older, newer = _pair(matrix)
    hinted = replace(older, arch_evidence=Evidence.UNKNOWN, neighbours=True)
    silent = replace(newer, arch_evidence=Evidence.UNKNOWN, neighbours=None)
    against = replace(newer, arch_evidence=Evidence.UNKNOWN, neighbours=False)
    assert _sorted(against, silent, hinted) == [hinted, silent, against]
    # with the same hint, the newer release first
    assert _sorted(hinted, replace(silent, neighbours=True))[0].release is newer.release


def test_ptx_across_majors_after_native_support(matrix: Matrix) -> None:
    older, newer = _pair(matrix)
    native = replace(older, arch_evidence=Evidence.INFERRED)
    far = replace(newer, arch_evidence=Evidence.CONFIRMED, ptx_jit_only=True,
                  ptx_jit_distant=True)
    near = replace(far, ptx_jit_distant=False)
    assert _sorted(far, native) == [native, far]
    # PTX of the previous major (or the same) is no demotion across releases
    assert _sorted(native, near) == [near, native]
    # and far PTX with known support still ranks above a build whose support is unknown
    unknown = replace(older, arch_evidence=Evidence.UNKNOWN, neighbours=True)
    assert _sorted(unknown, far) == [far, unknown]
