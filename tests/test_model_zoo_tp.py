"""Tensor-parallel MSA simulated on one machine (docs/tensor_parallel.md): ranks that split the block
table select the same blocks as one unsharded selector, and ranks that split the heads sum to the
unsharded layer."""
import math

import numpy as np
import pytest
import mindspore as ms

from model_zoo.minimax_m3 import testing
from model_zoo.minimax_m3.parallel import block_split_layers as bsl, block_split_plan as plan
from model_zoo.minimax_m3.parallel import tensor_parallel as tp
from model_zoo.minimax_m3.testing import reference
from model_zoo.minimax_m3.layers.block_select import BlockSelector
from model_zoo.minimax_m3.layers.msa_config import tiny
from ms_msa import MsaIndexScore

P = 16
# (q_len, kv_len): a prefill chunk after 63 cached tokens, a decode, a speculative decode of 3.
REQUESTS = [(37, 100), (1, 200), (3, 150)]
TABLE_WIDTH = 13                                  # ceil(200 / 16)
PAGES = 48


def _batch(seed):
    rng = np.random.default_rng(seed)
    pages = rng.permutation(PAGES)
    tables, used = np.zeros((len(REQUESTS), TABLE_WIDTH), np.int32), 0
    for b, (_, kv) in enumerate(REQUESTS):
        n = math.ceil(kv / P)
        tables[b, :n] = pages[used:used + n]
        used += n
    q_lens = np.array([q for q, _ in REQUESTS], np.int32)
    kv_lens = np.array([kv for _, kv in REQUESTS], np.int32)
    index_query = rng.standard_normal((int(q_lens.sum()), 2, 16)).astype(np.float32)
    index_cache = rng.standard_normal((PAGES, P, 16)).astype(np.float32)
    return tables, q_lens, kv_lens, index_query, index_cache


def _chosen_sets(block_ids, selected):
    return [[set(block_ids[t, h][selected[t, h]].tolist()) for h in range(block_ids.shape[1])]
            for t in range(block_ids.shape[0])]


SPLITS = [(2, "contiguous"), (3, "contiguous"), (4, "round_robin")]
# Every split is padded to the same shapes (table width, rank pages, candidate count), so each Cell
# compiles once in GRAPH_MODE for all of them.
RANK_WIDTH = max(math.ceil(TABLE_WIDTH / ranks) for ranks, _ in SPLITS)
MAX_RANKS = max(ranks for ranks, _ in SPLITS)


@pytest.mark.parametrize("init_blocks, local_blocks, top_k", [(0, 1, 4), (1, 2, 5)])
def test_sharded_block_table_merges_to_the_unsharded_selection(mode, init_blocks, local_blocks, top_k):
    cfg = tiny(top_k=top_k, init_blocks=init_blocks, local_blocks=local_blocks)
    tables, q_lens, kv_lens, index_query, index_cache = _batch(seed=top_k)
    qlen = np.concatenate([[0], np.cumsum(q_lens)]).astype(np.int32)
    T = ms.Tensor
    # Unsharded: scores with forcing over the whole table, then top-k.
    ids, sel = BlockSelector(cfg)(T(index_query), T(index_cache), T(qlen), T(kv_lens), T(tables))
    expected = _chosen_sets(ids.asnumpy(), sel.asnumpy())
    forced_scores = MsaIndexScore(init_blocks=init_blocks, local_blocks=local_blocks, local_window="token")(
        T(index_query), T(index_cache), None, T(tables), None, None, T(qlen), T(kv_lens)).asnumpy()
    assert reference.selection_margin(forced_scores, top_k) > 1e-3, "ambiguous test data"

    candidates = bsl.ShardCandidates(top_k)
    merge = bsl.MergeCandidates(top_k, init_blocks, local_blocks)
    for ranks, scheme in SPLITS:
        # Each rank scores only its blocks (raw), from a cache holding only its pages, and proposes its
        # top-k with global ids; the proposals of all ranks are merged once.
        values = np.full((2, int(q_lens.sum()), MAX_RANKS * top_k), -np.inf, np.float32)
        global_ids = np.full(values.shape, -1, np.int32)
        for r, owned in enumerate(plan.block_shards(TABLE_WIDTH, ranks, scheme)):
            view = plan.shard_requests(tables, kv_lens, q_lens, owned, RANK_WIDTH)
            rank_cache = np.zeros_like(index_cache)
            rank_cache[:len(view["pages"])] = index_cache[view["pages"]]
            klen = plan.shard_kv_lengths(view["visible_end"], owned, P)
            labels = np.full((len(klen), RANK_WIDTH), -1, np.int32)      # every token's row: the rank's blocks
            labels[:, :len(owned)] = owned
            v, g = candidates(T(index_query), T(rank_cache), T(view["block_table"]), T(view["actual_seq_qlen"]),
                              T(klen), T(labels))
            values[..., r * top_k:(r + 1) * top_k] = v.asnumpy()
            global_ids[..., r * top_k:(r + 1) * top_k] = g.asnumpy()
        visible_blocks = (-(-view["visible_end"] // P)).astype(np.int32)
        merged_ids, merged_sel = merge(T(values), T(global_ids), T(visible_blocks))
        merged = _chosen_sets(merged_ids.asnumpy(), merged_sel.asnumpy())

        assert merged == expected, f"{ranks} ranks, {scheme}"
        # Non-trivial: tokens that see more blocks than top_k select exactly top_k of them.
        counts = [len(s) for row in merged for s in row]
        assert counts == [min(top_k, int(n)) for n in visible_blocks for _ in range(2)]


def test_head_sharded_ranks_sum_to_the_unsharded_layer(pynative):
    # PyNative only: the layer's graph-mode behaviour is covered by test_model_zoo_msa.py; here the
    # question is the sharding plan, and three layers x two step shapes of compiles would double the time.
    cfg = tiny(top_k=2)                               # 8 query, 2 KV, 2 index heads -> 4, 1, 1 per rank
    weights = testing.random_weights(cfg, seed=21)
    rng = np.random.default_rng(22)
    steps = [{"a": rng.standard_normal((60, 32)), "b": rng.standard_normal((20, 32))},
             {"a": rng.standard_normal((1, 32)), "b": rng.standard_normal((3, 32))}]

    whole = testing.LayerDriver(testing.build_layer(cfg, weights), num_pages=16, table_width=6, seed=5)
    rank_cfg = cfg.shard(2)
    shards = [testing.LayerDriver(testing.build_layer(rank_cfg, tp.shard_layer_weights(weights, cfg, 2, r)),
                                  num_pages=16, table_width=6, seed=5) for r in range(2)]
    for i, step in enumerate(steps):
        full = whole.step(step)
        partial = [d.step(step) for d in shards]      # each rank: its heads, its caches, the same metadata
        for rid in step:
            summed = partial[0][rid] + partial[1][rid]
            np.testing.assert_allclose(summed, full[rid], rtol=0, atol=2e-5, err_msg=f"step {i} {rid}")
            ref, _, _ = whole.reference(rid, weights, len(step[rid]))
            np.testing.assert_allclose(summed, ref, rtol=0, atol=2e-5, err_msg=f"step {i} {rid} vs numpy")


@pytest.mark.parametrize("ranks", [2, 3])
def test_block_split_rank_view_of_its_pages_and_merged_selection(pynative, ranks):
    """generate --block-split's rule (page p on rank p % R, local page p // R), as RankBlocks derives it in the
    graph, against the host-side plan; then each rank's candidates from a cache holding only its pages, merged,
    equal the unsharded selection (the AllGather replaced by a concatenation: the msrun tests run the real one)."""
    from model_zoo.minimax_m3.layers.batch_layout import BatchLayout
    init_blocks, local_blocks, top_k = 1, 1, 4
    cfg = tiny(top_k=top_k, init_blocks=init_blocks, local_blocks=local_blocks)
    tables, q_lens, kv_lens, index_query, index_cache = _batch(seed=9)     # shuffled pages: mixed owners per row
    T = ms.Tensor
    num_tokens = int(q_lens.sum())
    qlen = np.concatenate([[0], np.cumsum(q_lens)]).astype(np.int32)
    ids, sel = BlockSelector(cfg)(T(index_query), T(index_cache), T(qlen), T(kv_lens), T(tables))
    expected = _chosen_sets(ids.asnumpy(), sel.asnumpy())
    positions = np.concatenate([np.arange(kv - q, kv) for q, kv in REQUESTS])
    requests = np.repeat(np.arange(len(REQUESTS)), q_lens)
    slots = tables[requests, positions // P] * P + positions % P
    _, _, table, token_request, visible_end = BatchLayout()(T(slots.astype(np.int32)), T(kv_lens), T(q_lens),
                                                            T(tables))
    values, global_ids = [], []
    for r in range(ranks):
        view = bsl.RankBlocks(r, ranks, P)
        pages, labels, rank_qlen, klen = (x.asnumpy() for x in view.scoring_view(table, T(kv_lens), token_request,
                                                                                 visible_end))
        local = view.local_slots(T(slots.astype(np.int32))).asnumpy()
        mine = tables[requests, positions // P] % ranks == r
        np.testing.assert_array_equal(local, np.where(mine, tables[requests, positions // P] // ranks * P
                                                      + positions % P, -1))
        for t, b in enumerate(requests):
            owned = [j for j in range(math.ceil(kv_lens[b] / P)) if tables[b, j] % ranks == r]
            np.testing.assert_array_equal(labels[t, :len(owned)], owned)
            assert (labels[t, len(owned):] == -1).all()
            np.testing.assert_array_equal(pages[t, :len(owned)], tables[b, owned] // ranks)
            assert klen[t] == plan.shard_kv_lengths(np.array([positions[t] + 1]), owned, P)[0]
        np.testing.assert_array_equal(rank_qlen, np.arange(num_tokens + 1))
        rank_cache = np.zeros((math.ceil(PAGES / ranks), P, 16), np.float32)
        rank_cache[np.arange(r, PAGES, ranks) // ranks] = index_cache[r::ranks]
        v, g = bsl.ShardCandidates(top_k)(T(index_query), T(rank_cache), T(pages), T(rank_qlen), T(klen), T(labels))
        values.append(v.asnumpy())
        global_ids.append(g.asnumpy())
    visible_blocks = (-(-visible_end.asnumpy() // P)).astype(np.int32)
    merged_ids, merged_sel = bsl.MergeCandidates(top_k, init_blocks, local_blocks)(
        T(np.concatenate(values, -1)), T(np.concatenate(global_ids, -1)), T(visible_blocks))
    assert _chosen_sets(merged_ids.asnumpy(), merged_sel.asnumpy()) == expected
    owners = {int(tables[b, j]) % ranks for b in range(len(REQUESTS)) for j in range(math.ceil(kv_lens[b] / P))}
    assert owners == set(range(ranks))
