"""The script msrun starts on every rank (``generate --tp R`` / ``--block-split R``): the generate CLI, with the same
arguments.

msrun runs a script, not a module: the repository root is put on sys.path, then the CLI sees the launcher's
environment variable and runs as a rank (parallel/rank.py).
"""
import os
import signal
import sys


def _killed_with_msrun():
    """SIGKILL from the kernel when msrun, this rank's parent, dies (Linux prctl PR_SET_PDEATHSIG), set before the
    slow imports; a parent already gone by then ends this rank too. rank.py's watchdog thread stays as the
    second line (it needs the GIL)."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes
    parent = os.getppid()
    ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # 1 = PR_SET_PDEATHSIG
    if os.getppid() != parent:
        os._exit(18)


if __name__ == "__main__":
    _killed_with_msrun()

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))

from model_zoo.minimax_m3.serving.cli import main  # noqa: E402

if __name__ == "__main__":
    main(sys.argv[1:])
