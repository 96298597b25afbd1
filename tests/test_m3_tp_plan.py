"""The tensor-parallel plan without processes: which counts must divide by R (refused with the rule), and the
per-rank slices of every weight, which put back together across the ranks must give the full tensor."""
import numpy as np
import pytest

from model_zoo.minimax_m3.model.causal_lm import MiniMaxM3ForCausalLM
from model_zoo.minimax_m3.model.config import MiniMaxM3Config, tiny_config
from model_zoo.minimax_m3.parallel.shard_loader import slice_full
from model_zoo.minimax_m3.parallel.tp_layers import (build_tp_model, check_tp_size, full_shape, local_config,
                                                     shard_rules)


def test_minimax_m3_splits_over_1_2_4_ranks_and_tp8_is_refused_naming_the_heads():
    m3 = MiniMaxM3Config()
    for r in (1, 2, 4):
        check_tp_size(m3, r)
        part = local_config(m3, r)
        assert (part.num_attention_heads, part.num_key_value_heads, part.index_heads) == (64 // r, 4 // r, 4 // r)
    with pytest.raises(ValueError) as err:
        check_tp_size(m3, 8)
    text = str(err.value)
    assert "--tp 8" in text and "KV heads 4" in text and "index heads 4" in text and "query heads" not in text
    with pytest.raises(ValueError, match="query heads 64"):
        check_tp_size(m3, 3)
    for bad in (0, -1, True, 2.0):
        with pytest.raises(ValueError, match="tp_size"):
            check_tp_size(m3, bad)


def test_unused_counts_do_not_constrain_the_split():
    dense_only = MiniMaxM3Config(vocab_size=64, hidden_size=32, num_hidden_layers=1, attention_types=("dense",),
                                 mlp_types=("dense",), num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                                 rotary_dim=8, dense_intermediate_size=64, num_experts=3, num_experts_per_tok=1, index_heads=3,
                                 shared_intermediate_size=5, block_size=16)
    check_tp_size(dense_only, 2)      # experts, shared width and index heads are not used by this model
    with pytest.raises(ValueError, match="rank must be in"):
        build_tp_model(dense_only, "float32", 32, 2, 2)


@pytest.mark.parametrize("tp", [2, 4])
def test_rank_slices_reassemble_every_weight(tp):
    config = tiny_config(num_key_value_heads=4, index_heads=4) if tp == 4 else tiny_config()
    full = MiniMaxM3ForCausalLM(config, cache_tokens=32).weights()
    rng = np.random.default_rng(0)
    arrays = {n: rng.standard_normal(p.shape).astype(np.float32) for n, p in full.items()}
    pieces = {n: [] for n in arrays}
    for rank in range(tp):
        rule = shard_rules(config, rank, tp)
        local = build_tp_model(config, "float32", 32, rank, tp).weights()
        assert set(local) == set(full)
        for name, param in local.items():
            piece = slice_full(arrays[name], rule(name))
            assert piece.shape == tuple(param.shape), name
            assert full_shape(param.shape, rule(name), tp) == tuple(full[name].shape), name
            pieces[name].append((rule(name), piece))
    for name, parts in pieces.items():
        kind = parts[0][0][0]
        if kind == "full":
            got = parts[0][1]
            assert all(np.array_equal(p, got) for _, p in parts)     # replicated: the same on every rank
        elif kind == "axis":
            got = np.concatenate([p for _, p in parts], axis=parts[0][0][1])
        else:                                                       # fused gate-then-up: halves per rank
            halves = [np.split(p, 2, axis=0) for _, p in parts]
            got = np.concatenate([h[0] for h in halves] + [h[1] for h in halves], 0)
        np.testing.assert_array_equal(got, arrays[name], err_msg=name)
    sharded = [n for n, parts in pieces.items() if parts[0][0][0] != "full"]
    assert any("experts.gate_up_proj" in n for n in sharded) and any("o_proj" in n for n in sharded)
    assert not any("indexer.k_proj" in n or "gate.weight" in n for n in sharded)   # shared index key, router


def test_block_split_model_replicates_every_weight_and_holds_only_its_pages():
    from model_zoo.minimax_m3.parallel.block_split_layers import build_block_split_model
    from model_zoo.minimax_m3.parallel.block_split_plan import check_block_split
    config = tiny_config()
    whole = MiniMaxM3ForCausalLM(config, cache_tokens=100)          # ceil(100 / 16) = 7 pages of 16 tokens
    caches = {n: tuple(p.shape) for n, p in whole.parameters_and_names() if n.endswith("_cache")}
    for rank in (0, 1):
        model = build_block_split_model(config, "float32", 100, rank, 2)
        assert {n: tuple(p.shape) for n, p in model.weights().items()} == \
            {n: tuple(p.shape) for n, p in whole.weights().items()}
        local = {n: tuple(p.shape) for n, p in model.parameters_and_names() if n.endswith("_cache")}
        assert local == {n: (4,) + shape[1:] for n, shape in caches.items()}    # pages rank, rank + 2, ...
        assert model.num_pages == 7 and model.collective_bytes() == 0          # the batcher still sees 7
    for bad in (0, -1, True, 2.0):
        with pytest.raises(ValueError, match="--block-split"):
            check_block_split(bad)
    with pytest.raises(ValueError, match="rank must be"):
        build_block_split_model(config, "float32", 100, 2, 2)
