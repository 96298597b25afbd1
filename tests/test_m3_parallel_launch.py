"""The --tp / --block-split launcher's watch (model_zoo/minimax_m3/parallel/launch.py), on plain sleeping
processes standing in for ranks: which rank it names when ranks die one after another.

When a rank dies, its peers' collectives break and they can die too, milliseconds later. The launcher must name
the rank that died first, whatever its rank number (a CI run once named rank 0, which died after rank 1).
"""
import os
import subprocess
import sys
import threading
import time

import pytest

from model_zoo.minimax_m3.parallel import launch

SLEEPER = [sys.executable, "-c", "import time; time.sleep(120)"]


class _Msrun:
    """Stands in for the msrun process: still running."""
    returncode = None

    @staticmethod
    def poll():
        return None


@pytest.fixture()
def ranks(tmp_path):
    procs = [subprocess.Popen(SLEEPER) for _ in range(3)]
    for r, p in enumerate(procs):
        (tmp_path / f"rank{r}.pid").write_text(str(p.pid))
    yield str(tmp_path), procs
    for p in procs:
        p.kill()
        p.wait()


def _kill_in_order(procs, order, gap):
    for i, r in enumerate(order):
        if i:
            time.sleep(gap)
        procs[r].kill()


@pytest.mark.parametrize("order", [(2, 0), (1, 0, 2), (0, 2)])
def test_exits_are_listed_in_the_order_the_ranks_died(ranks, order):
    run_dir, procs = ranks
    exits = launch._Exits(run_dir, len(procs))
    try:
        assert exits.dead() == []                           # all alive, and watched from here on
        killer = threading.Thread(target=_kill_in_order, args=(procs, order, 0.3))
        killer.start()
        deadline = time.monotonic() + 30
        while len(exits.dead()) < len(order) and time.monotonic() < deadline:
            exits.wait(launch.POLL_SECONDS)
        killer.join()
        assert exits.dead() == list(order)
        assert exits.pids == {r: p.pid for r, p in enumerate(procs)}
    finally:
        exits.close()


def test_without_pidfds_the_dead_are_found_by_polling(ranks, monkeypatch):
    monkeypatch.delattr(os, "pidfd_open", raising=False)
    run_dir, procs = ranks
    exits = launch._Exits(run_dir, len(procs))
    try:
        assert exits.dead() == []
        procs[1].kill()
        procs[1].wait()
        assert exits.dead() == [1]
        assert exits.polled == {0, 1, 2}
    finally:
        exits.close()


@pytest.mark.skipif(not hasattr(os, "pidfd_open"), reason="exit order needs os.pidfd_open (Linux)")
@pytest.mark.parametrize("start", [1.0, 1.05, 1.1, 1.15])
def test_the_rank_that_died_first_is_named_when_a_lower_rank_dies_right_after(ranks, start):
    # rank 2 dies, rank 0 follows 100 ms later: within the launcher's 200 ms poll and status grace, so a check
    # in rank order would see both dead and name rank 0. The start times put rank 2's death at different points
    # of a 200 ms poll. (The launcher must wake within the 100 ms: pidfds wake it at once.)
    run_dir, procs = ranks
    killer = threading.Thread(target=_kill_in_order, args=(procs, (2, 0), 0.1))
    timer = threading.Timer(start, killer.start)
    timer.start()
    failure = launch._watch(_Msrun(), run_dir, len(procs), time.monotonic() + 30, 30, "--tp 3")
    timer.join()
    killer.join()
    assert failure.startswith(f"--tp 3: rank 2 (pid {procs[2].pid}) exited without finishing"), failure


def test_a_rank_that_wrote_its_status_before_exiting_is_not_named_dead(ranks):
    run_dir, procs = ranks
    with open(os.path.join(run_dir, "rank1.status"), "w", encoding="utf-8") as f:
        f.write("ok")
    timer = threading.Timer(0.5, lambda: _kill_in_order(procs, (1, 0), 0.05))
    timer.start()
    failure = launch._watch(_Msrun(), run_dir, len(procs), time.monotonic() + 30, 30, "--tp 3")
    timer.join()
    assert failure.startswith(f"--tp 3: rank 0 (pid {procs[0].pid}) exited without finishing"), failure


def test_the_deadline_names_no_rank_when_all_are_alive_and_at_the_same_step(ranks):
    run_dir, procs = ranks
    start = time.monotonic()
    failure = launch._watch(_Msrun(), run_dir, len(procs), start + 0.5, 0.5, "--tp 3")
    assert failure == "--tp 3: timed out after 0.5 s (--timeout)"
    assert all(p.poll() is None for p in procs)
