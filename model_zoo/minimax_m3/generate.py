"""``python -m model_zoo.minimax_m3.generate``: greedy generation with MiniMax-M3 (see serving/cli.py)."""
from .serving.cli import main

if __name__ == "__main__":
    main()
