"""The script msrun starts on every rank (``generate --tp R`` / ``--block-split R``): the generate CLI, with the same
arguments.

msrun runs a script, not a module: the repository root is put on sys.path, then the CLI sees the launcher's
environment variable and runs as a rank (parallel/rank.py).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))

from model_zoo.minimax_m3.serving.cli import main  # noqa: E402

if __name__ == "__main__":
    main(sys.argv[1:])
