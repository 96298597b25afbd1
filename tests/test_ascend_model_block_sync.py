"""Synchronisation between blocks through GM on the CPU model (ascendc/cpu_model/sync_block.h): IBSet / IBWait,
InitDetermineComputeWorkspace / WaitPreBlock / NotifyNextBlock, DataSyncBarrier with WriteGmByPassDCache /
ReadGmByPassDCache, GroupBarrier with InitOutput, and the Mutex API, which Atlas A2/A3 does not have.

Each scenario kernel computes a result that depends on the order the API gives (blocks folding their data into
one accumulator in sequence, a flag published after its data, waiters summing what the arrivers stored); numpy
computes the documented result. Each synchronisation call is then dropped (ASCEND_MODEL_SKIP_SYNC_SITE) or
moved before the data it covers, and the run must stop with a message naming the buffer or the API: never a
hang, never a pass. The documented preconditions each stop a run with the rule.

Documents (asc-devkit docs/zh/api/SIMD-API/基础API/): 同步控制/核间同步/IBSet.md, IBWait.md,
InitDetermineComputeWorkspace.md, WaitPreBlock.md, NotifyNextBlock.md; 同步控制/核内同步/DataSyncBarrier(ISASI).md,
Mutex(ISASI).md, Lock.md, Unlock.md, AllocMutexID-(ISASI).md, ReleaseMutexID-(ISASI).md;
标量计算/WriteGmByPassDCache(ISASI).md; Cube分组管理（ISASI）/GroupBarrier/*.md.
Kernels: tests/cpp/ascend_model_block_sync_test.cc."""
import os
import shutil

import numpy as np
import pytest

from _cpu_debug_programs import build, run as _run, stopped as _stops, values as _values

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TEST_SRC = os.path.join(REPO, "tests", "cpp", "ascend_model_block_sync_test.cc")
CXX = os.environ.get("CXX", "g++")
N, BLOCKS, ROUNDS = 64, 4, 2

pytestmark = pytest.mark.skipif(shutil.which(CXX) is None, reason=f"no C++ compiler '{CXX}'")


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    """The scenario program, built with the one command of ascendc/cpu_model/README.md (auto-sync on, CANN's
    default for a <<<>>> launch)."""
    return build(tmp_path_factory, TEST_SRC, "block_sync")

def _site(program, *args, api):
    """The call site ("file:line:api") of `api` the scenario runs."""
    path = os.path.join(program["dir"], "sites.txt")
    _run(program, *args, ASCEND_MODEL_SYNC_SITES_OUT=path)
    with open(path) as f:
        sites = [s for s in f.read().split() if s.endswith(":" + api)]
    assert len(sites) == 1, sites
    return sites[0]


def _x(count):
    i = np.arange(count)
    return (((i * 7) % 13).astype(np.float32) * np.float32(0.25) - np.float32(1.0)).astype(np.float32)


def _horner(parts):
    acc = np.zeros(N, np.float32)
    for part in parts:
        acc = (acc * np.float32(2) + part).astype(np.float32)
    return acc


TURNS = [{}, {"ASCEND_MODEL_TURNS": "reverse"}]


# --- IBSet / IBWait (同步控制/核间同步/IBSet.md, IBWait.md) --------------------------------------------------------

@pytest.mark.parametrize("turns", TURNS, ids=["forward", "reverse"])
def test_ib_set_wait_chain_folds_blocks_in_order(program, turns):
    """Block b waits (IBWait, flag b) for block b - 1's IBSet, then acc = acc * 2 + x_b through UB and back to GM:
    the result is the Horner sum of the blocks in order 0, 1, 2, 3 only."""
    x = _x(BLOCKS * N).reshape(BLOCKS, N)
    np.testing.assert_array_equal(_values(_run(program, "ib", **turns).stdout, "acc"), _horner(x))


def test_ib_set_wait_each_call_is_needed(program):
    """Without the IBWait block b reads acc unordered with block b - 1's store (a hazard on the GM buffer); without
    the IBSet the IBWaits wait for ever (a hang naming IBWait); an IBSet before the store publishes too early."""
    wait = _site(program, "ib", api="IBWait")
    _stops(program, "ib", pattern=r"hazard: (RAW|WAR) on GM:GmAlloc #1 .*DataCopy", ASCEND_MODEL_SKIP_SYNC_SITE=wait)
    setter = _site(program, "ib", api="IBSet")
    _stops(program, "ib", pattern=r"hang: .*IBWait\(blockIdx 1, eventID 0\)", ASCEND_MODEL_SKIP_SYNC_SITE=setter)
    for turns in TURNS:
        _stops(program, "ib", "early", pattern=r"hazard: (RAW|WAR) on GM:GmAlloc #1 .*DataCopy", **turns)


@pytest.mark.parametrize("variant,pattern", [
    ("range", r"IBSet at .*: blockIdx = 4 outside \[0, core count - 1 = 3\]"),
    ("small", r"IBSet at .*: gmWorkspace must hold core count \* 32 \* eventID \+ blockIdx \* 32 \+ 32 .* = 128 bytes"),
    ("unpaired", r"IBSet\(blockIdx 1, eventID 0\) at .* was never consumed by an IBWait"),
    ("nonzero", r"IBWait at .*: .*holds 1 at its first use: IBSet's gmWorkspace must be initialised to 0"),
])
def test_ib_set_wait_rules(program, variant, pattern):
    """The documented constraints: blockIdx in [0, core count - 1]; gmWorkspace of core count * 32 * eventID_max +
    blockIdx_max * 32 + 32 bytes, initialised to 0; IBSet and IBWait in pairs."""
    _stops(program, "ib_rules", variant, pattern=pattern)


# --- InitDetermineComputeWorkspace / WaitPreBlock / NotifyNextBlock -----------------------------------------------

@pytest.mark.parametrize("turns", TURNS, ids=["forward", "reverse"])
def test_ordered_blocks_run_in_block_order_every_round(program, turns):
    """WaitPreBlock.md: the AIVs run strictly in ascending blockIdx order, round after round. Two rounds of
    acc = acc * 2 + x[round][block] give the Horner sum in (round, block) order; the workspace is not zeroed first
    (InitDetermineComputeWorkspace.md: it need not be)."""
    x = _x(ROUNDS * BLOCKS * N).reshape(ROUNDS * BLOCKS, N)
    np.testing.assert_array_equal(_values(_run(program, "ordered", **turns).stdout, "acc"), _horner(x))


def test_ordered_blocks_each_call_is_needed(program):
    init = _site(program, "ordered", api="InitDetermineComputeWorkspace")
    _stops(program, "ordered", pattern=r"WaitPreBlock at .*before InitDetermineComputeWorkspace",
           ASCEND_MODEL_SKIP_SYNC_SITE=init)
    wait = _site(program, "ordered", api="WaitPreBlock")
    _stops(program, "ordered", pattern=r"NotifyNextBlock at .*without a WaitPreBlock before it",
           ASCEND_MODEL_SKIP_SYNC_SITE=wait)
    notify = _site(program, "ordered", api="NotifyNextBlock")
    _stops(program, "ordered", pattern=r"hazard: |hang: .*WaitPreBlock", ASCEND_MODEL_SKIP_SYNC_SITE=notify)
    for turns in TURNS:
        _stops(program, "ordered", "early", pattern=r"hazard: (RAW|WAR) on GM:GmAlloc #1 .*DataCopy", **turns)


@pytest.mark.parametrize("variant,pattern", [
    ("no_init", r"WaitPreBlock at .*before InitDetermineComputeWorkspace"),
    ("small_ub", r"InitDetermineComputeWorkspace at .*ubWorkspace must be UB of at least 160 bytes; it has 128"),
    ("mix", r"InitDetermineComputeWorkspace at .*vector-only launch \(AIV_MODE\)"),
])
def test_ordered_blocks_rules(program, variant, pattern):
    """ubWorkspace of GetBlockNum() * 32 + 32 bytes; InitDetermineComputeWorkspace first; AIV cores in
    GetBlockIdx() order over GetBlockNum() slots."""
    _stops(program, "ordered", variant, pattern=pattern)


# --- DataSyncBarrier, WriteGmByPassDCache / ReadGmByPassDCache ----------------------------------------------------

@pytest.mark.parametrize("turns", TURNS, ids=["forward", "reverse"])
def test_data_sync_barrier_publishes_the_data_before_the_flag(program, turns):
    """DataSyncBarrier(ISASI).md's pattern: block 0 writes the data, DataSyncBarrier<DDR>, then the flag; block 1
    polls the flag (a spin loop: in reverse turns it polls before block 0 ran) and stores 2 * data."""
    assert _run(program, "dsb", **turns).stdout.split() == ["dst", "14"]
    assert _run(program, "dsb", "dma", **turns).stdout.split() == ["dst", "7"]


@pytest.mark.parametrize("turns", TURNS)
def test_a_poll_orders_the_flag_it_read_before_the_pollers_own_write(program, turns):
    """Per-location coherence: block 1 clears the flag it has read (a handshake CANN's own examples use); the
    write comes after the one it read. Cleared without reading it, the two writes are unordered: a WAW hazard."""
    assert _run(program, "dsb", "reset", **turns).stdout.split() == ["dst", "14"]
    _stops(program, "dsb", "blind_reset", pattern=r"hazard: WAW on GM:GmAlloc #0 .*WriteGmByPassDCache", **turns)


def test_data_sync_barrier_is_needed_and_a_dead_poll_stops(program):
    """Without the barrier (or with it after the flag) the data write may become visible after the flag: block 1's
    read of the data stops the run naming DataSyncBarrier; a flag that never comes ends as a hang naming ReadGmByPassDCache; a DMA store is
    published only once the scalar unit waited for it (MTE3 -> S)."""
    dsb = _site(program, "dsb", api="DataSyncBarrier")
    for turns in TURNS:
        _stops(program, "dsb", pattern=r"hazard: RAW on GM:GmAlloc #0 .*ReadGmByPassDCache.*missing DataSyncBarrier",
               ASCEND_MODEL_SKIP_SYNC_SITE=dsb, **turns)
        _stops(program, "dsb", "late", pattern=r"hazard: RAW on GM:GmAlloc #0 .*missing DataSyncBarrier", **turns)
        _stops(program, "dsb", "never", pattern=r"hang: ReadGmByPassDCache at .* polls GM:GmAlloc #0", **turns)
        _stops(program, "dsb", "dma_no_mte3_s", pattern=r"hazard: RAW on GM:GmAlloc #0 .*DataCopy", **turns)


# --- GroupBarrier, InitOutput (Cube分组管理（ISASI）/GroupBarrier/*.md) ----------------------------------------------

@pytest.mark.parametrize("turns", TURNS, ids=["forward", "reverse"])
def test_group_barrier_waiters_see_what_the_arrivers_stored(program, turns):
    """2 arrivers fill their part with InitOutput ((round + 1) * 10 + arriver) and Arrive; 3 waiters Wait and sum
    both parts, for two rounds (Arrive of round 2 after every Wait of round 1)."""
    out = _values(_run(program, "group", **turns).stdout, "out").reshape(2, 3, 8)
    want = np.array([[[sum((r + 1) * 10 + a for a in range(2))] * 8] * 3 for r in range(2)])
    np.testing.assert_array_equal(out, want)


def test_group_barrier_each_call_is_needed_and_its_rules(program):
    arrive = _site(program, "group", api="GroupBarrier::Arrive")
    _stops(program, "group", pattern=r"hang: .*GroupBarrier::Wait \(round 1", ASCEND_MODEL_SKIP_SYNC_SITE=arrive)
    wait = _site(program, "group", api="GroupBarrier::Wait")
    _stops(program, "group", pattern=r"hazard: RAW on GM:GmAlloc #1 .*InitOutput", ASCEND_MODEL_SKIP_SYNC_SITE=wait)
    for turns in TURNS:  # an Arrive before the store it should publish
        _stops(program, "group", "early", pattern=r"hazard: (RAW|WAR) on GM:GmAlloc #1 .*InitOutput", **turns)
    _stops(program, "group", "dirty", pattern=r"GroupBarrier at .*must be zeroed by the user")
    _stops(program, "group", "index", pattern=r"GroupBarrier::Wait at .*waitIndex = 2 outside \[0, waitSize - 1 = 1\]")
    _stops(program, "group_scalar_mode", pattern=r"GroupBarrier at .*only PipeMode::MTE3_MODE")


# --- Mutex: not on Atlas A2/A3 ----------------------------------------------------------------------------------

def test_mutex_is_not_available_on_a2_a3(program):
    """Lock.md / AllocMutexID-(ISASI).md list Atlas A2/A3 as unsupported: the first call stops the run."""
    _stops(program, "mutex", pattern=r"AllocMutexID at .*not supported on Atlas A2/A3")
