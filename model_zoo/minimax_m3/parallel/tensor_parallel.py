"""Sharding MSA across ranks (docs/tensor_parallel.md): head shards of the layer's weights, and the
block-table split with raw-score candidates, a candidate exchange and forcing applied globally.

Host-side pieces (weight slices, per-rank block tables) are numpy, like the scheduler's metadata;
the per-rank scoring and the merge are Cells, the ops a rank would run around its all-gather.
"""
import numpy as np
import mindspore as ms
from mindspore import Tensor, nn, ops

from ms_msa import MsaIndexScore

NEG_INF = float("-inf")


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


# ---- block-table sharding: which logical blocks a rank owns, and its per-token requests ----------

def block_shards(table_width, num_ranks, scheme="contiguous"):
    """The logical block ids each rank owns, ascending: "contiguous" ranges or "round_robin"."""
    blocks = np.arange(table_width)
    if scheme == "contiguous":
        return list(np.array_split(blocks, num_ranks))
    if scheme == "round_robin":
        return [blocks[r::num_ranks] for r in range(num_ranks)]
    raise ValueError(f"block_shards: unknown scheme {scheme!r}")


def shard_requests(block_tables, batch_valid_length, q_seq_lens, owned, width):
    """One rank's view of a batch, as MsaIndexScore arguments in which every query token is a request.

    A rank holds only some blocks of a request, so the kernel's causal rule (right-aligned on the
    request's KV length) can not describe a multi-token query against them. A single-token request
    can: its KV length is exactly what the token sees. Visibility is a global prefix of the request
    and the owned blocks are kept in ascending order, so what a token sees of the rank's blocks is
    again a prefix: full blocks, then at most one partial block.

    Args:
        block_tables (ndarray): [B, MB] global pages per logical block. batch_valid_length,
            q_seq_lens (ndarray): [B]. owned (ndarray): the rank's logical block ids, ascending.
            width (int): column count of the rank's tables (the same for every rank: a static shape).

    Returns:
        dict of numpy int32 arrays: pages [NP_rank] (the global pages the rank stores, its cache
        order), block_table [T, width] (indices into `pages`, 0 past the rank's blocks),
        actual_seq_qlen [T+1] = 0..T, and visible_end [T] (global: shard_kv_lengths turns it into the
        rank's actual_seq_klen, and the merge's forcing counts blocks from it).
    """
    owned = np.asarray(owned, np.int64)
    pages = np.unique(np.asarray(block_tables)[:, owned]).astype(np.int32)
    tables, visible = [], []
    for b in range(len(q_seq_lens)):
        row = np.zeros(width, np.int32)
        row[:len(owned)] = np.searchsorted(pages, np.asarray(block_tables)[b, owned])
        for t_off in range(int(q_seq_lens[b])):
            visible.append(int(batch_valid_length[b]) - int(q_seq_lens[b]) + t_off + 1)
            tables.append(row)
    T = len(visible)
    return {"pages": pages, "block_table": np.array(tables, np.int32).reshape(T, width),
            "actual_seq_qlen": np.arange(T + 1, dtype=np.int32), "visible_end": np.array(visible, np.int32)}


def shard_kv_lengths(visible_end, owned, block_size):
    """Keys of the rank's blocks each token sees: sum over owned blocks of clamp(V - beta*P, 0, P)."""
    starts = np.asarray(owned)[None, :] * block_size
    return np.clip(visible_end[:, None] - starts, 0, block_size).sum(axis=1).astype(np.int32)


class ShardCandidates(nn.Cell):
    r"""One rank's top-k candidates: raw scores of its blocks (no forcing), labelled with global ids.

    Forcing is off (init_blocks = local_blocks = 0, SPEC §4's raw score): forced blocks are defined in
    the global block numbering and MergeCandidates applies them there, and raw scores from different
    ranks are comparable with each other.

    Args:
        top_k (int): candidates per rank, index head and token (the global top_k).

    Inputs:
        - **index_query** (Tensor) - [T, index_heads, D_idx].
        - **index_cache** (Tensor) - [NP_rank, P, D_idx], the rank's pages.
        - **block_table** (Tensor) - [T, width] int32, from shard_requests.
        - **actual_seq_qlen** (Tensor) - [T+1] int32. **actual_seq_klen** (Tensor) - [T] int32.
        - **owned** (Tensor) - [width] int32, the global id of each local column (any value past the
          rank's blocks: those columns only hold -inf).

    Outputs:
        Tuple of values [index_heads, T, top_k] float32 (-inf = no candidate) and global block ids
        [index_heads, T, top_k] int32.

    Supported Platforms:
        ``CPU``

    Examples:
        >>> import numpy as np
        >>> import mindspore as ms
        >>> cand = ShardCandidates(2)
        >>> v, ids = cand(ms.Tensor(np.ones((1, 1, 16), np.float32)), ms.Tensor(np.ones((2, 16, 16), np.float32)),
        ...               ms.Tensor([[0, 1]], ms.int32), ms.Tensor([0, 1], ms.int32), ms.Tensor([20], ms.int32),
        ...               ms.Tensor([4, 6], ms.int32))
        >>> sorted(ids.asnumpy()[0, 0].tolist())
        [4, 6]
    """

    def __init__(self, top_k):
        super().__init__()
        self.top_k = top_k
        self.score = MsaIndexScore(layout_key="BBND", sparse_mode=3, init_blocks=0, local_blocks=0,
                                   local_window="token")

    def construct(self, index_query, index_cache, block_table, actual_seq_qlen, actual_seq_klen, owned):
        raw = self.score(index_query, index_cache, None, block_table, None, None, actual_seq_qlen, actual_seq_klen)
        pad = ops.full((raw.shape[0], raw.shape[1], self.top_k), NEG_INF, dtype=ms.float32)
        values, local = ops.topk(ops.concat((raw, pad), -1), self.top_k)
        width = owned.shape[0]
        labels = ops.concat((owned, ops.full((raw.shape[2] + self.top_k - width,), -1, dtype=ms.int32)))
        global_ids = ops.gather(labels, ops.cast(local, ms.int32).reshape((-1,)), 0).reshape(local.shape)
        return values, ops.select(values > NEG_INF, global_ids, ops.full_like(global_ids, -1))


class MergeCandidates(nn.Cell):
    r"""The global selection from all ranks' candidates: forcing by global id, then one top-k.

    The forced blocks of a token are [0, min(init, n)) and [max(0, n - local), n) with n = its visible
    block count, ranked above every raw score (local above init, as in MsaIndexScore). They are added
    as candidates of their own and removed from the raw candidates, so no block is picked twice. The
    raw blocks that make the global top-k are in their rank's local top-k: a block beaten by k others
    on its own rank is beaten by k others globally.

    Args:
        top_k (int): blocks selected. init_blocks (int), local_blocks (int): forcing, as MsaConfig.

    Inputs:
        - **values** (Tensor) - [index_heads, T, C] float32, all ranks' candidates concatenated.
        - **block_ids** (Tensor) - [index_heads, T, C] int32 global ids, -1 = none.
        - **visible_blocks** (Tensor) - [T] int32, ceil(visible_end / P) of each token.

    Outputs:
        Tuple of block ids [T, index_heads, top_k] int32 and selected [T, index_heads, top_k] bool, as
        BlockSelector returns them.

    Supported Platforms:
        ``CPU``

    Examples:
        >>> import mindspore as ms
        >>> merge = MergeCandidates(top_k=2, init_blocks=0, local_blocks=1)
        >>> ids, sel = merge(ms.Tensor([[[5.0, 1.0]]]), ms.Tensor([[[0, 3]]], ms.int32), ms.Tensor([4], ms.int32))
        >>> sorted(ids.asnumpy()[0, 0].tolist())
        [0, 3]
    """

    def __init__(self, top_k, init_blocks, local_blocks):
        super().__init__()
        self.top_k = top_k
        self.num_forced = init_blocks + local_blocks
        self.local_blocks = local_blocks
        # Forced candidate j: an init block (absolute id j) or a local block (id n + offset, offset < 0).
        is_init = np.arange(self.num_forced) < init_blocks
        offsets = np.where(is_init, np.arange(self.num_forced), np.arange(self.num_forced) - self.num_forced)
        self.forced_is_init = Tensor(is_init.reshape(1, -1))
        self.forced_offset = Tensor(offsets.astype(np.int32).reshape(1, -1))
        self.forced_value = Tensor(np.where(is_init, 1e30, 1e29).astype(np.float32).reshape(1, -1))
        self.init_blocks = init_blocks

    def construct(self, values, block_ids, visible_blocks):
        n = visible_blocks.reshape((-1, 1))
        if self.num_forced > 0:
            forced_ids = ops.select(ops.broadcast_to(self.forced_is_init, (n.shape[0], self.num_forced)),
                                    ops.broadcast_to(self.forced_offset, (n.shape[0], self.num_forced)),
                                    n + self.forced_offset)
            # An init block inside the local window is the local one's (local wins, as in the kernel).
            forced_ok = ops.select(ops.broadcast_to(self.forced_is_init, forced_ids.shape),
                                   forced_ids < n - self.local_blocks, forced_ids >= 0)
            forced_values = ops.select(forced_ok, ops.broadcast_to(self.forced_value, forced_ids.shape),
                                       ops.full(forced_ids.shape, NEG_INF, dtype=ms.float32))
            is_forced = ops.logical_or(block_ids < ops.minimum(n, self.init_blocks),
                                       ops.logical_and(block_ids >= n - self.local_blocks, block_ids < n))
            values = ops.select(is_forced, ops.full_like(values, NEG_INF), values)
            heads = values.shape[0]
            values = ops.concat((ops.broadcast_to(ops.expand_dims(forced_values, 0), (heads,) + forced_ids.shape),
                                 values), -1)
            block_ids = ops.concat((ops.broadcast_to(ops.expand_dims(forced_ids, 0), (heads,) + forced_ids.shape),
                                    block_ids), -1)
        pad_shape = (values.shape[0], values.shape[1], self.top_k)
        best, order = ops.topk(ops.concat((values, ops.full(pad_shape, NEG_INF, dtype=ms.float32)), -1), self.top_k)
        block_ids = ops.concat((block_ids, ops.full(pad_shape, -1, dtype=ms.int32)), -1)
        picked = ops.gather_elements(block_ids, 2, ops.cast(order, ms.int32))
        return ops.transpose(picked, (1, 0, 2)), ops.transpose(best > NEG_INF, (1, 0, 2))
