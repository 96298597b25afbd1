"""MsaAttention (model_zoo/minimax_m3) against the numpy golden of model_zoo/minimax_m3/testing/reference.py,
in PyNative and GRAPH_MODE (the `mode` fixture of conftest.py): dense equivalence, block-sparse
selection, decode after prefill, mixed chunked-prefill + decode batches, and slot_mapping -1."""
import numpy as np
import pytest
import mindspore as ms

from model_zoo.minimax_m3 import testing
from model_zoo.minimax_m3.testing import reference
from model_zoo.minimax_m3.layers.msa_config import MsaConfig, tiny
from model_zoo.minimax_m3.layers.paged_cache import PagedCacheWrite
from ms_msa import _lib

HIDDEN = 32  # tiny()'s hidden_size
ATOL = {"float32": 2e-5, "float16": 3e-2}
# The kernel scores in float32: a reference ranking whose k-th and (k+1)-th scores are this far apart
# can only be reproduced if the layer selects the same blocks.
MIN_MARGIN = 1e-3
# Dynamic shapes need ms_msa's C++ infer-shape (MindSpore does not call a Python infer for them).
HAS_CPP_INFER = hasattr(_lib.library(), "MsaIndexScoreInferShape")


def _hidden(rng, n):
    return rng.standard_normal((n, HIDDEN))


def _assert_matches_reference(driver, weights, outputs, label):
    """Each request's outputs equal the golden for its last len(output) tokens; returns the goldens."""
    cfg = driver.config
    for rid, out in outputs.items():
        if rid is None:
            continue
        ref, _, scores = driver.reference(rid, weights, len(out))
        assert reference.selection_margin(scores, cfg.top_k) > MIN_MARGIN, f"{label}/{rid}: ambiguous test data"
        np.testing.assert_allclose(out, ref, rtol=0, atol=ATOL[cfg.dtype], err_msg=f"{label}: request {rid}")


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_top_k_covering_every_block_is_dense_causal_attention(mode, dtype):
    cfg = tiny(top_k=8, dtype=dtype)                        # 90 tokens = 6 blocks of 16 <= 8
    weights = testing.random_weights(cfg, seed=1)
    driver = testing.LayerDriver(testing.build_layer(cfg, weights), num_pages=16, table_width=8)
    rng = np.random.default_rng(2)
    out = driver.step({"a": _hidden(rng, 90), "b": _hidden(rng, 37)})
    for rid in ("a", "b"):
        x = driver.history[rid]
        dense = reference.dense_causal_layer(x, weights, cfg, len(x))
        np.testing.assert_allclose(out[rid], dense, rtol=0, atol=ATOL[dtype], err_msg=rid)


@pytest.mark.parametrize("init_blocks, local_blocks, top_k", [(0, 1, 2), (1, 1, 3), (1, 2, 4)])
def test_small_top_k_is_block_sparse_attention_over_the_reference_picks(mode, init_blocks, local_blocks, top_k):
    cfg = tiny(top_k=top_k, init_blocks=init_blocks, local_blocks=local_blocks)
    weights = testing.random_weights(cfg, seed=3)
    driver = testing.LayerDriver(testing.build_layer(cfg, weights), num_pages=24, table_width=12, seed=7)
    rng = np.random.default_rng(4)
    out = driver.step({"a": _hidden(rng, 150), "b": _hidden(rng, 61)})
    _assert_matches_reference(driver, weights, out, "prefill")
    # The selection must matter: the same layer with every block selected gives a different answer.
    dense = reference.dense_causal_layer(driver.history["a"], weights, cfg, 150)
    assert np.abs(out["a"] - dense).max() > 0.05


def test_decoding_after_prefill_equals_one_prefill_of_the_whole_sequence(mode):
    cfg = tiny(top_k=2)
    weights = testing.random_weights(cfg, seed=5)
    rng = np.random.default_rng(6)
    sequence = _hidden(rng, 52)                             # decode crosses the block boundary at 48

    whole = testing.LayerDriver(testing.build_layer(cfg, weights), num_pages=8, table_width=6, seed=1)
    one_shot = whole.step({"r": sequence})["r"]
    _assert_matches_reference(whole, weights, {"r": one_shot}, "one-shot prefill")

    stepped = testing.LayerDriver(testing.build_layer(cfg, weights), num_pages=8, table_width=6, seed=2)
    outputs = [stepped.step({"r": sequence[:40]})["r"]]
    for t in range(40, 52):
        outputs.append(stepped.step({"r": sequence[t:t + 1]})["r"])
    np.testing.assert_allclose(np.concatenate(outputs), one_shot, rtol=0, atol=ATOL["float32"])


def test_mixed_chunked_prefill_decode_and_speculative_batches(mode):
    cfg = tiny(top_k=2)
    weights = testing.random_weights(cfg, seed=8)
    driver = testing.LayerDriver(testing.build_layer(cfg, weights), num_pages=24, table_width=8, seed=9)
    rng = np.random.default_rng(10)
    steps = [
        {"a": 30, "b": 50, "c": 20},     # a's first prefill chunk, b and c whole prompts
        {"a": 25, "b": 1, "c": 3},       # a's second chunk, b decodes, c verifies 3 speculative tokens
        {"b": 4, "a": 1, "c": 1},        # another packing order: speculative b, decodes a and c
    ]
    for i, step in enumerate(steps):
        out = driver.step({rid: _hidden(rng, n) for rid, n in step.items()})
        _assert_matches_reference(driver, weights, out, f"step {i}")


def test_padding_tokens_with_slot_minus_one_are_not_stored_and_do_not_change_real_tokens(mode):
    cfg = tiny(top_k=2)
    weights = testing.random_weights(cfg, seed=11)
    rng = np.random.default_rng(12)
    hidden = {"a": _hidden(rng, 37), "b": _hidden(rng, 9)}
    padded = testing.LayerDriver(testing.build_layer(cfg, weights), num_pages=8, table_width=4, seed=3)
    out = padded.step(hidden, pad_to=64)
    _assert_matches_reference(padded, weights, out, "padded batch")
    assert np.array_equal(out[None], np.zeros((64 - 46, HIDDEN))), "padding tokens attend to nothing"

    slots = padded.last_metadata.slot_mapping
    stored = np.zeros(8 * cfg.block_size, bool)
    stored[slots[slots >= 0]] = True
    for cache in padded.caches:
        rows = np.abs(cache.asnumpy()).reshape(8 * cfg.block_size, -1).sum(axis=1)
        assert np.all(rows[stored] > 0) and np.all(rows[~stored] == 0), cache.name


@pytest.mark.parametrize("slots", [[17, -1, 3, -1], [-1, -1, -1, -1], [40, 2, 63, 0]])
def test_paged_cache_write_skips_minus_one(mode, slots):
    rng = np.random.default_rng(13)
    before = rng.standard_normal((4, 16, 2, 3)).astype(np.float32)
    rows = rng.standard_normal((4, 2, 3)).astype(np.float32)
    cache = ms.Parameter(ms.Tensor(before), name="cache")
    PagedCacheWrite()(cache, ms.Tensor(slots, ms.int32), ms.Tensor(rows))
    expected = before.copy()
    for t, slot in enumerate(slots):
        if slot >= 0:
            expected[slot // 16, slot % 16] = rows[t]
    assert np.array_equal(cache.asnumpy(), expected)


def test_a_minus_one_slot_inside_a_request_keeps_the_cached_row(mode):
    cfg = tiny(top_k=2)
    weights = testing.random_weights(cfg, seed=14)
    driver = testing.LayerDriver(testing.build_layer(cfg, weights), num_pages=8, table_width=4)
    rng = np.random.default_rng(15)
    driver.step({"a": _hidden(rng, 20)})
    key_before = driver.caches[0].asnumpy().copy()
    meta = driver.batcher.step({"a": 5})
    meta.slot_mapping[[1, 3]] = -1                          # e.g. tokens whose KV another rank stores
    t = meta.tensors()
    driver.layer(ms.Tensor(_hidden(rng, 5), ms.float32), t["batch_valid_length"], t["q_seq_lens"],
                 t["block_tables"], t["slot_mapping"], *driver.caches)
    key_after = driver.caches[0].asnumpy().reshape(-1, cfg.num_kv_heads, cfg.head_dim)
    key_before = key_before.reshape(key_after.shape)
    written = meta.slot_mapping[meta.slot_mapping >= 0]
    page, first = driver.batcher.pages["a"][1], 20 - 16
    skipped = [page * 16 + first + 1, page * 16 + first + 3]
    assert np.array_equal(key_after[skipped], key_before[skipped])
    assert not np.any(np.isclose(key_after[written], key_before[written]).all(axis=(1, 2)))


@pytest.mark.skipif(not HAS_CPP_INFER, reason="ms_msa's CPU library has no C++ infer-shape (MsaIndexScoreInferShape)")
def test_one_dynamic_shape_graph_serves_prefill_decode_and_mixed_steps(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    ms.set_context(mode=ms.GRAPH_MODE, device_target="CPU")
    try:
        cfg = tiny(top_k=2)
        weights = testing.random_weights(cfg, seed=16)
        driver = testing.LayerDriver(testing.build_layer(cfg, weights), num_pages=24, table_width=8, seed=17)
        # MindFormers passes its caches as plain tensors, every input with unknown dims.
        driver.use_dynamic_shapes()
        rng = np.random.default_rng(18)
        for i, step in enumerate(({"a": 40, "b": 9}, {"a": 1, "b": 1}, {"b": 3, "a": 1, "c": 17})):
            out = driver.step({rid: _hidden(rng, n) for rid, n in step.items()}, pad_to=None if i else 56)
            _assert_matches_reference(driver, weights, out, f"dynamic step {i}")
        assert len(driver.layer.compile_cache) == 1, "every step must reuse the one dynamic graph"
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)


def test_config_rejects_unsupported_settings():
    with pytest.raises(TypeError, match="dtype"):
        tiny(dtype="bfloat16")
    with pytest.raises(ValueError, match="top_k"):
        tiny(top_k=2, init_blocks=2, local_blocks=1)
    with pytest.raises(ValueError, match="num_heads"):
        tiny(num_heads=5)
    with pytest.raises(ValueError, match="block_size"):
        tiny(block_size=24)
    m3 = MsaConfig()
    assert (m3.num_heads, m3.num_kv_heads, m3.head_dim, m3.index_heads, m3.top_k, m3.block_size) == \
        (64, 4, 128, 4, 16, 128)
    assert m3.shard(4) == MsaConfig(num_heads=16, num_kv_heads=1, index_heads=1)
