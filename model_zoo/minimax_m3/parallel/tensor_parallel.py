"""Head shards of the stand-alone MSA layer's weights (docs/tensor_parallel.md), for the one-process check
that ranks splitting the heads sum to the unsharded layer. The whole model's head parallel is tp_layers.py;
the block-table split is block_split_plan.py / block_split_layers.py.
"""


# ---- head sharding: the layer's weights on rank `rank` of `tp_size` -------------------------------

def shard_layer_weights(weights, config, tp_size, rank):
    """Reference-layout weights ([out, in]) of one rank: its query, KV and index heads (column
    parallel), its slice of the output projection's input (row parallel, so the ranks' outputs are
    summed), and a full copy of the shared index-key projection and the norms."""
    def rows(w, heads, dim):
        per_rank = heads // tp_size
        return w.reshape(heads, dim, -1)[rank * per_rank:(rank + 1) * per_rank].reshape(per_rank * dim, -1)

    c = config
    q_cols = c.num_heads // tp_size * c.head_dim
    return {
        "wq": rows(weights["wq"], c.num_heads, c.head_dim),
        "wk": rows(weights["wk"], c.num_kv_heads, c.head_dim),
        "wv": rows(weights["wv"], c.num_kv_heads, c.head_dim),
        "wo": weights["wo"][:, rank * q_cols:(rank + 1) * q_cols],
        "index_wq": rows(weights["index_wq"], c.index_heads, c.index_head_dim),
        "index_wk": weights["index_wk"],
        "index_q_norm": weights["index_q_norm"],
        "index_k_norm": weights["index_k_norm"],
    }
