"""``python -m torchenv`` runs the command line."""

from torchenv.cli import entry_point

if __name__ == "__main__":
    entry_point()
