"""The compatibility matrix: data files, typed model, loader and validation."""

from torchenv.matrix.loader import load_matrix
from torchenv.matrix.model import PLATFORMS, Matrix, Release, Variant

__all__ = ["PLATFORMS", "Matrix", "Release", "Variant", "load_matrix"]
