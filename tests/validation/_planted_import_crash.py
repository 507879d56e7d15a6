"""A file of extra collective checks that fails as it loads, loaded by the collective worker
through TORCHENV_VALIDATE_EXTRA_CHECKS: every rank dies before it can list its extra checks."""

raise RuntimeError("planted: this file of extra checks cannot load")
