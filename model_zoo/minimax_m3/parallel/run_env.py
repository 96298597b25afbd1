"""What the --tp / --block-split launcher (launch.py) and its ranks (rank.py) share: the environment variables
that make a process a rank and tell it where to report, and the run's plan. A leaf module, so that the launcher
imports the ranks' code and never the other way round."""

RUN_DIR_ENV = "MS_MSA_TP_RUN_DIR"      # set for the ranks: where they report; its presence makes a process a rank
LAUNCHER_ENV = "MS_MSA_TP_LAUNCHER"    # "launcher pid:msrun process group": a rank ends the run when the launcher is gone


def plan(args):
    """(flag, ranks) of the run's parallel plan: ("--tp", R) or ("--block-split", R); R = 1 is no plan."""
    if getattr(args, "block_split", 1) > 1:
        return "--block-split", args.block_split
    return "--tp", args.tp
