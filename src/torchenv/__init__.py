"""torchenv: pick, install and prove the right PyTorch build for a machine."""

__all__ = ["__version__"]

__version__ = "0.1.0"
