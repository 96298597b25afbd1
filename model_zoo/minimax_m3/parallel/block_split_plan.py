"""The block-table split's plan on the host (docs/tensor_parallel.md §2): which rank owns which cache page, what
a rank's caches hold, the bytes its collectives send per step, and the one-process view of a rank's blocks that
tests/test_model_zoo_tp.py simulates the split with.

Ownership is a property of the page: global page p lives on rank p % R, at the rank's local page p // R. A page
of a request is one of its logical blocks, so the allocator decides how a request's blocks spread over the
ranks; the serving loop's PagedBatcher hands a request pages in order, so logical block j of a single request
lands on rank j % R (round robin: every rank gets every R-th block, so a decode step's selected blocks and the
scoring work spread evenly, and a long request grows on all ranks at once instead of filling one rank first).
The rule needs no state and no host-side translation: every rank derives its view from the global step
metadata inside the graph (block_split_layers.RankBlocks).
"""
import math

import numpy as np


def check_block_split(size):
    """Raises ValueError unless `size` is a positive int: any rank count splits the pages (R = 1 is the
    unsharded model; more ranks than pages leave some ranks nothing to attend, which the combine handles)."""
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ValueError(f"--block-split must be a positive int, got {size!r}")


def local_pages(num_pages, size):
    """Pages of each rank's caches: pages p with p % size == rank, at local page p // size."""
    return math.ceil(num_pages / size)


def cache_bytes(config, dtype, num_pages, size):
    """Bytes of one rank's cache Parameters: K and V of every layer, the index keys of every MSA layer, for
    local_pages(num_pages, size) pages."""
    per_token = config.num_hidden_layers * 2 * config.num_key_value_heads * config.head_dim + \
        len(config.msa_layers) * config.index_head_dim
    return local_pages(num_pages, size) * config.block_size * per_token * (4 if dtype == "float32" else 2)


def step_collective_bytes(config, tokens):
    """Bytes one rank sends into AllGather in a step of `tokens` tokens: per layer the attention partials
    [T, heads, head_dim + 2] float32 (output, row max, row sum), per MSA layer the candidates' values
    (float32) and global ids (int32), [index_heads, T, top_k] each."""
    attention = config.num_hidden_layers * tokens * config.num_attention_heads * (config.head_dim + 2) * 4
    candidates = len(config.msa_layers) * config.index_heads * tokens * config.top_k * 8
    return attention + candidates


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
    again a prefix: full blocks, then at most one partial block. (RankBlocks builds the same view in the
    graph for the page-ownership rule.)

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


__all__ = ["check_block_split", "local_pages", "cache_bytes", "step_collective_bytes", "block_shards",
           "shard_requests", "shard_kv_lengths"]
