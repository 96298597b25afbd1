"""Prefill's key pages kept in L1 by the Ascend kernel's Cube (docs/ascend.md, "Prefill's key pages read once
per core"), on the CPU model against the reference.

With 16-bit keys and requests of at least two token tiles on average, the tasks are 8 columns wide (one L1
slot per column) and every core runs its share column tile by column tile, so each key page of a request is
copied from GM once per core and the other row tiles of the share multiply it out of L1. The counters show it:
a core's MTE2 bytes are its S reads (as many as the Fixpipe wrote), its query tiles and its key pages, and
the key pages come to each page once on one core. The S-tiles of these calls are NZ, and the last 3 of each 8
pages go through L1 (docs/ascend.md, "Prefill's scores out of L0C by two paths")."""
import numpy as np
import pytest

from ms_msa.testing import ascend_model, cases
from ms_msa.testing.numeric import assert_accepted

PAGE = 128
CACHE_COLS = 8  # kKeyCacheCols


def _geometry(case):
    """(tokens per task, [(request, token tile begin, tokens, visible blocks of its last token)])."""
    fold = case.heads if case.kv_heads == 1 else 1
    per_tile = 128 // fold
    tiles = []
    for b, (q, kv) in enumerate(zip(case.q_lens, case.kv_lens)):
        for begin in range(0, q, per_tile):
            tokens = min(per_tile, q - begin)
            end = min(kv, max(0, kv - q + begin + tokens)) if case.sparse_mode == 3 else kv
            tiles.append((b, begin, tokens, -(-end // PAGE)))
    return fold, tiles


def _query_bytes(case, fold, tiles):
    """The Cube's query tiles: one per task with a computed column (tokens x the folded heads x D, 2 bytes)."""
    groups = case.heads // fold
    total = 0
    for _, _, tokens, visible in tiles:
        tasks = -(-visible // CACHE_COLS)  # column tiles with a visible block
        total += groups * tasks * tokens * fold * case.head_dim * 2
    return total


def _page_bytes(case, b, col):
    return min(PAGE, case.kv_lens[b] - col * PAGE) * case.head_dim * 2


def _run(case, aic_cores):
    return _run_inputs(case, cases.build_inputs(case), aic_cores)


def _run_inputs(case, inputs, aic_cores):
    run = ascend_model.KernelRun()
    out = ascend_model.msa_index_score(*cases.call_args(inputs), **case.attrs(), aic_cores=aic_cores, run=run)
    assert_accepted(out, inputs.run_reference(), case.fill_value, case.name)
    return run


def _key_bytes(run, case, fold, tiles):
    """MTE2's bytes less the S-tiles read back (what the Fixpipe wrote to GM and the Cube's MTE3 copied there
    from L1) and the query tiles."""
    total = {k: sum(c[k] for c in run.counters) for k in ("mte2_bytes", "fix_gm_bytes", "mte3_l1_bytes")}
    return total["mte2_bytes"] - total["fix_gm_bytes"] - total["mte3_l1_bytes"] - _query_bytes(case, fold, tiles)


PREFILL = cases.Case("key-cache-prefill", 4, 128, 16, (320,), (1100,), dtype="bfloat16")
TWO_REQUESTS = cases.Case("key-cache-two-requests", 4, 128, 24, (160, 96), (1100, 700), start_loc=(3, 1))


@pytest.mark.parametrize("case", [PREFILL, TWO_REQUESTS], ids=lambda c: c.name)
def test_one_core_reads_each_key_page_once(case):
    """On one core every visible page of every request comes from GM exactly once (the last one partial),
    though each of its row tiles multiplies it; the row tiles' reads without the cache would be several times
    that."""
    fold, tiles = _geometry(case)
    run = _run(case, aic_cores=1)
    assert run.cores == 1
    pages = {(b, col) for b, _, _, visible in tiles for col in range(visible)}
    once = sum(_page_bytes(case, b, col) for b, col in pages)
    per_task = sum(_page_bytes(case, b, col) for b, _, _, visible in tiles for col in range(visible))
    assert per_task >= 3 * once
    assert _key_bytes(run, case, fold, tiles) == once


def _routed(pages):
    """RoutedPages of the tiling header: the last 3 of 8 pages of an S-tile (rounded) go through L1."""
    return (pages * 3 + 4) // 8


@pytest.mark.parametrize("case", [PREFILL, TWO_REQUESTS], ids=lambda c: c.name)
def test_scores_leave_l0c_by_two_paths(case):
    """With the key cache the Fixpipe writes the last RoutedPages(n) pages of each task's S-tile (n computed
    pages, one S-tile per 8-column task) into L1 and the Cube core's MTE3 copies them to the ring; the others
    go straight to GM. Counted on one core, every page of `rows` rows is rows x 128 fp16 scores: the routed
    ones are what the Fixpipe wrote into L1, read from L1 by MTE3 and read from L0C for L1 (fp32)."""
    fold, tiles = _geometry(case)
    run = _run(case, aic_cores=1)
    total = {k: sum(c[k] for c in run.counters) for k in ascend_model.COUNTER_NAMES}
    routed = direct = 0
    for _, _, tokens, visible in tiles:
        page = tokens * fold * PAGE * 2
        for col in range(0, visible, CACHE_COLS):
            n = min(CACHE_COLS, visible - col)
            routed += _routed(n) * page * (case.heads // fold)
            direct += (n - _routed(n)) * page * (case.heads // fold)
    assert routed > 0
    assert total["fix_l1_bytes"] == total["mte3_l1_bytes"] == routed
    assert total["fix_l1_read_bytes"] == 2 * routed          # fp32 out of L0C
    assert total["fix_gm_bytes"] == direct


def test_decode_routes_nothing_through_l1():
    """Without the key cache (decode: one token a request) every S-tile leaves the Fixpipe for GM row-major."""
    case = cases.Case("key-cache-off-decode", 4, 128, 16, (1, 1), (1100, 700), dtype="bfloat16")
    run = _run(case, aic_cores=3)
    total = {k: sum(c[k] for c in run.counters) for k in ascend_model.COUNTER_NAMES}
    assert total["fix_gm_bytes"] > 0
    assert total["fix_l1_bytes"] == total["mte3_l1_bytes"] == total["fix_l1_read_bytes"] == 0


def test_cores_read_each_page_at_most_once_each():
    """Split over cores, a page is read once by each core whose share needs it: at least once in all, at most
    once per core, and far less than once per row tile."""
    case = PREFILL
    fold, tiles = _geometry(case)
    run = _run(case, aic_cores=3)
    assert run.cores == 3
    pages = {(0, col) for _, _, _, visible in tiles for col in range(visible)}
    once = sum(_page_bytes(case, b, col) for b, col in pages)
    per_task = sum(_page_bytes(case, 0, col) for _, _, _, visible in tiles for col in range(visible))
    key_bytes = _key_bytes(run, case, fold, tiles)
    assert once <= key_bytes <= run.cores * once < per_task


def test_a_page_seen_whole_after_part_of_it_is_copied_again():
    """Two requests on the same three physical pages, the first seeing 44 keys of the last one and the second
    all 128: the second's last page is in the slot with the same offset but fewer keys, so it is copied again
    (the slot's other rows were never loaded), and both requests meet the reference."""
    case = cases.Case("key-cache-shared-pages", 4, 128, 3, (96, 96), (300, 384), start_loc=(2, 2))
    inputs = cases.build_inputs(case)
    table = np.array([[0, 1, 2], [0, 1, 2]], np.int32)
    inputs.set("block_table", table, "int32")
    fold, tiles = _geometry(case)
    run = _run_inputs(case, inputs, aic_cores=1)
    page = PAGE * case.head_dim * 2
    assert _key_bytes(run, case, fold, tiles) == 3 * page + 44 * case.head_dim * 2


@pytest.mark.parametrize("case", [
    cases.Case("key-cache-gqa", 4, 128, 16, (300,), (700,), kv_heads=2, dtype="bfloat16"),
    cases.Case("key-cache-gqa-tnd", 8, 64, 16, (260, 300), (700, 300), kv_heads=4, layout="TND"),
    cases.Case("key-cache-bnbd-sparse0", 4, 96, 12, (100, 90), (900, 90), layout="BNBD", sparse_mode=0,
               local_blocks=0),
], ids=lambda c: c.name)
@pytest.mark.parametrize("aic_cores", [1, 3])
def test_key_cache_across_layouts_and_key_heads(case, aic_cores):
    """The cache keys its slots by the key tensor's offset, which names the key head and, in TND, the request's
    rows: one query head per Cube row group (GQA, several key heads), TND and BNBD, sparse_mode 0 (every token
    sees every key), D 64 and 96, on one core and split over three, meet the reference."""
    fold, tiles = _geometry(case)
    assert len(tiles) >= 2 * len(case.q_lens)  # two token tiles per request on average: the cache is on
    _run(case, aic_cores)
