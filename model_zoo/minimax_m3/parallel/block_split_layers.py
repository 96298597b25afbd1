"""MiniMax-M3 with its caches split by blocks over ranks (``generate --block-split R``, docs/tensor_parallel.md §2).

Weights are replicated and every rank computes every token's projections; the K/V and index-key caches are
split by page (block_split_plan: page p on rank p % R, local page p // R). Per layer a rank

1. writes only the keys of its own pages (the other tokens' slots become -1: not stored);
2. (MSA) scores its own blocks with raw scores (MsaIndexScore, init/local 0), each query token as a request of
   its own against the rank's visible blocks in ascending order, and keeps its top-k with global block ids
   (``ShardCandidates``); AllGather of values (fp32) and ids (int32); ``MergeCandidates`` applies the forcing by
   global id and picks the final top-k, identical on every rank;
3. attends over the selected (dense layer: visible) blocks it owns, keeping the softmax statistics
   (BlockSparseAttention.partial), and ``PartialSoftmaxCombine`` all-gathers them and combines exactly
   (log-sum-exp);

then o_proj, the MLP / MoE and the norms run replicated: no other collective.
"""
import numpy as np
import mindspore as ms
from mindspore import Tensor, nn, ops

from ms_msa import MsaIndexScore

from ..layers.m3_attention import M3Attention
from ..model.causal_lm import MiniMaxM3DecoderLayer
from .block_split_plan import check_block_split, local_pages
from .collectives import CountedCollective, ParallelCausalLM

NEG_INF = float("-inf")


class RankBlocks(nn.Cell):
    r"""One rank's view of a step's blocks, derived in the graph from the global step metadata.

    Args:
        rank (int): this rank. size (int): the ranks. block_size (int): tokens per page.

    Raises:
        ValueError: `size` is not a positive int, or `rank` is not in [0, size).

    Supported Platforms:
        ``CPU``

    Examples:
        >>> import mindspore as ms
        >>> RankBlocks(1, 2, 16).local_slots(ms.Tensor([3, 17, 40, -1], ms.int32))
        Tensor(shape=[4], dtype=Int32, value= [-1,  1, -1, -1])
    """

    def __init__(self, rank, size, block_size):
        super().__init__()
        check_block_split(size)
        if isinstance(rank, bool) or not isinstance(rank, int) or not 0 <= rank < size:
            raise ValueError(f"rank must be an int in [0, {size}), got {rank!r}")
        self.rank, self.size, self.block_size = rank, size, block_size

    def owned(self, pages):
        return ops.floor_mod(pages, self.size) == self.rank

    def local_table(self, table):
        """Global pages -> this rank's local pages (meaningful where owned)."""
        return ops.floor_div(table, self.size)

    def local_slots(self, slot_mapping):
        """[T] slots in this rank's caches; -1 (not stored) for tokens of other ranks' pages and padding."""
        page = ops.floor_div(slot_mapping, self.block_size)
        local = ops.floor_div(page, self.size) * self.block_size + (slot_mapping - page * self.block_size)
        mine = ops.logical_and(slot_mapping >= 0, self.owned(page))
        return ops.select(mine, local, ops.full_like(slot_mapping, -1))

    def owned_selection(self, block_ids, selected, table, token_request):
        """selected, restricted to the blocks whose page this rank holds ([T, heads, K] bool)."""
        safe = ops.select(selected, block_ids, ops.zeros_like(block_ids))
        index = token_request.reshape((-1, 1, 1)) * table.shape[1] + safe
        pages = ops.gather(table.reshape((-1,)), index.reshape((-1,)), 0).reshape(safe.shape)
        return ops.logical_and(selected, self.owned(pages))

    def scoring_view(self, table, batch_valid_length, token_request, visible_end):
        """MsaIndexScore's arguments for this rank's blocks, every query token its own request.

        Returns (block_table [T, MB] local pages of the token's request's owned blocks, ascending global
        order first; labels [T, MB] their global block ids, -1 past them; actual_seq_qlen [T+1] = 0..T;
        actual_seq_klen [T] the keys of those blocks the token sees). Visibility is a global prefix, so what a
        token sees of the ascending owned blocks is again a prefix (full blocks, then at most a partial one):
        the kernel's causal masking on the klen is exact.
        """
        width = table.shape[1]
        columns = ops.cumsum(ops.ones_like(table[0]), 0) - 1                       # [MB], MB dynamic
        klen = ops.concat((batch_valid_length, ops.zeros((1,), ms.int32)))        # the layout's padding row: 0
        blocks = ops.floor_div(klen + (self.block_size - 1), self.block_size)
        valid = ops.logical_and(columns.reshape((1, -1)) < blocks.reshape((-1, 1)), self.owned(table))
        columns = ops.broadcast_to(columns.reshape((1, -1)), table.shape)
        # Owned allocated blocks first, in ascending order (the keys are distinct: a stable order is not needed).
        key, order = ops.sort(ops.cast(ops.select(valid, columns, columns + width), ms.float32), -1)
        order = ops.cast(order, ms.int32)
        pages = ops.gather_elements(self.local_table(table), 1, order)
        labels = ops.select(key < width, order, ops.full_like(order, -1))
        pages, labels = ops.gather(pages, token_request, 0), ops.gather(labels, token_request, 0)
        seen = ops.clamp(visible_end.reshape((-1, 1)) - labels * self.block_size, 0, self.block_size)
        seen = ops.select(labels >= 0, seen, ops.zeros_like(seen))
        klen = ops.cast(ops.reduce_sum(seen, 1), ms.int32)         # graph mode sums int32 into int64
        qlen = ops.concat((ops.zeros((1,), ms.int32), ops.cumsum(ops.ones_like(visible_end), 0)))
        return pages, labels, qlen, klen


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
        - **block_table** (Tensor) - [T, width] int32, each token a request (RankBlocks.scoring_view).
        - **actual_seq_qlen** (Tensor) - [T+1] int32. **actual_seq_klen** (Tensor) - [T] int32.
        - **labels** (Tensor) - [T, width] int32, the global id of each token's local columns (any value
          past the token's blocks: those columns only hold -inf).

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
        ...               ms.Tensor([[4, 6]], ms.int32))
        >>> sorted(ids.asnumpy()[0, 0].tolist())
        [4, 6]
    """

    def __init__(self, top_k):
        super().__init__()
        self.top_k = top_k
        self.score = MsaIndexScore(layout_key="BBND", sparse_mode=3, init_blocks=0, local_blocks=0,
                                   local_window="token")

    def construct(self, index_query, index_cache, block_table, actual_seq_qlen, actual_seq_klen, labels):
        raw = self.score(index_query, index_cache, None, block_table, None, None, actual_seq_qlen, actual_seq_klen)
        pad = ops.full((raw.shape[0], raw.shape[1], self.top_k), NEG_INF, dtype=ms.float32)
        values, local = ops.topk(ops.concat((raw, pad), -1), self.top_k)
        tokens, width = labels.shape
        labels = ops.concat((labels, ops.full((tokens, raw.shape[2] + self.top_k - width), -1, dtype=ms.int32)), 1)
        labels = ops.broadcast_to(ops.expand_dims(labels, 0), (raw.shape[0],) + labels.shape)
        global_ids = ops.gather_elements(labels, 2, ops.cast(local, ms.int32))
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


class GatheredCandidates(nn.Cell):
    r"""AllGather of every rank's candidates: [heads, T, k] per rank -> [heads, T, R * k] on every rank.

    Args:
        size (int): the ranks.

    Inputs:
        - **values** (Tensor) - [heads, T, k] float32. **block_ids** (Tensor) - [heads, T, k] int32.

    Outputs:
        Tuple of values [heads, T, size * k] float32 and block_ids [heads, T, size * k] int32.

    Supported Platforms:
        ``CPU`` ``Ascend`` (HCCL; not run here)

    Examples:
        >>> # needs mindspore.communication.init() under msrun (generate --block-split R)
    """

    def __init__(self, size):
        super().__init__()
        self.size = size
        self.gather_values = CountedCollective(ops.AllGather(), ms.float32)
        self.gather_ids = CountedCollective(ops.AllGather(), ms.int32)

    def construct(self, values, block_ids):
        return self._rows(self.gather_values(values), values), self._rows(self.gather_ids(block_ids), block_ids)

    def _rows(self, every, mine):
        heads, k = mine.shape[0], mine.shape[2]
        # AllGather concatenates on axis 0: [R * heads, T, k] -> [heads, T, R * k], rank-major per row.
        every = ops.transpose(every.reshape((self.size, heads, -1, k)), (1, 2, 0, 3))
        return every.reshape((heads, -1, self.size * k))


class PartialSoftmaxCombine(nn.Cell):
    r"""Exact softmax attention from every rank's attention over its own keys (log-sum-exp combine).

    Each rank sends, per (row, head), its normalised output o_r, row max m_r and row sum l_r (AllGather, one
    float32 [N, h, D + 2] tensor); then M = max_r m_r over the ranks that saw a key, w_r = l_r * exp(m_r - M),
    out = sum_r w_r o_r / sum_r w_r. A rank without a visible key (l_r = 0) weighs 0, a row no rank saw
    (padding) is 0: no NaN.

    Args:
        size (int): the ranks.

    Inputs:
        - **out** (Tensor) - [N, h, D] float32. **peak** (Tensor) - [N, h, 1] float32. **total** (Tensor) -
          [N, h, 1] float32 (BlockSparseAttention.partial's outputs).

    Outputs:
        Tensor [N, h, D] float32, the same on every rank.

    Supported Platforms:
        ``CPU`` ``Ascend`` (AllGather over HCCL; not run here)

    Examples:
        >>> # BlockSplitAttention runs it on BlockSparseAttention.partial's outputs, under msrun (init())
    """

    def __init__(self, size):
        super().__init__()
        self.size = size
        self.gather = CountedCollective(ops.AllGather(), ms.float32)
        self.ranks_max = ops.ReduceMax(keep_dims=False)
        self.ranks_sum = ops.ReduceSum(keep_dims=False)

    def construct(self, out, peak, total):
        dim = out.shape[2]
        every = self.gather(ops.concat((out, peak, total), -1))
        every = every.reshape((self.size, -1, out.shape[1], dim + 2))
        outs, peaks, totals = every[..., :dim], every[..., dim:dim + 1], every[..., dim + 1:]
        peaks = ops.select(totals > 0, peaks, ops.full_like(peaks, NEG_INF))
        top = self.ranks_max(peaks, 0)
        top = ops.select(top > NEG_INF, top, ops.zeros_like(top))
        weights = totals * ops.exp(peaks - top)
        weight_sum = self.ranks_sum(weights, 0)
        return self.ranks_sum(weights * outs, 0) / ops.select(weight_sum > 0, weight_sum, ops.ones_like(weight_sum))


class BlockSplitAttention(M3Attention):
    r"""M3Attention on one rank of the block-table split: the same weights (replicated), caches of the rank's
    pages only, the selection merged from every rank's candidates and the attention combined from every
    rank's partial softmax.

    Args:
        config (MiniMaxM3Config): the model's settings. layer_index (int). dtype (str): "float32"/"float16".
        num_pages (int): the global cache pages (the rank holds local_pages(num_pages, size) of them).
        rank (int), size (int): keyword-only.

    Inputs:
        As M3Attention (the global step metadata: every rank gets the same).

    Outputs:
        As M3Attention; the same values on every rank.

    Raises:
        ValueError: `size` is not a positive int, or `rank` is not in [0, size).

    Supported Platforms:
        ``CPU`` ``Ascend`` (AllGather over HCCL; not run here)

    Examples:
        >>> # needs mindspore.communication.init() under msrun (generate --block-split R)
    """

    def __init__(self, config, layer_index, dtype, num_pages, *, rank, size):
        view = RankBlocks(rank, size, config.block_size)
        super().__init__(config, layer_index, dtype, local_pages(num_pages, size))
        self.view = view
        self.combine = PartialSoftmaxCombine(size)
        if self.is_msa:
            self.candidates = ShardCandidates(config.top_k)
            self.exchange = GatheredCandidates(size)
            self.merge = MergeCandidates(config.top_k, config.init_blocks, config.local_blocks)

    def construct(self, hidden_states, positions, slot_mapping, batch_valid_length, q_seq_lens, block_tables, table,
                  token_request, visible_end):
        query, key, value = self.project(hidden_states, positions)
        slots = self.view.local_slots(slot_mapping)
        if self.is_msa:
            write, attend = self.core.write_cache, self.core.attend
        else:
            write, attend = self.write_cache, self.attend
        key_cache = write(self.key_cache, slots, key)
        value_cache = write(self.value_cache, slots, value)
        if self.is_msa:
            index_query, index_key = self.indexer(hidden_states, positions)
            index_cache = write(self.index_cache, slots, index_key)
            pages, labels, qlen, klen = self.view.scoring_view(table, batch_valid_length, token_request, visible_end)
            values, ids = self.exchange(*self.candidates(index_query, index_cache, pages, qlen, klen, labels))
            visible_blocks = ops.floor_div(visible_end + (self.block_size - 1), self.block_size)
            block_ids, selected = self.merge(values, ids, visible_blocks)
        else:
            block_ids, selected = self.dense_blocks(table, visible_end)
        mine = self.view.owned_selection(block_ids, selected, table, token_request)
        out, peak, total = attend.partial(query, key_cache, value_cache, block_ids, mine,
                                          self.view.local_table(table), token_request, visible_end)
        context = ops.cast(self.combine(out, peak, total), query.dtype)
        output = self.o_proj(context.reshape((-1, self.heads * self.head_dim)))
        if self.is_msa:
            return output, ops.select(selected, block_ids, ops.full_like(block_ids, -1))
        return output


def build_block_split_model(config, dtype, cache_tokens, rank, size):
    """MiniMaxM3ForCausalLM (a ParallelCausalLM) whose attention layers are this rank's BlockSplitAttention;
    everything else is the unsharded model's, replicated (load the whole checkpoint on every rank)."""
    check_block_split(size)

    def make_layer(cfg, i, dt, num_pages):
        # The decoder layer is built with the rank's page count, so the M3Attention it makes first (and drops
        # here) holds no more cache than the rank's own.
        layer = MiniMaxM3DecoderLayer(cfg, i, dt, local_pages(num_pages, size))
        layer.self_attn = BlockSplitAttention(cfg, i, dt, num_pages, rank=rank, size=size)
        return layer
    return ParallelCausalLM(config, dtype, cache_tokens=cache_tokens, layer_factory=make_layer)


__all__ = ["RankBlocks", "ShardCandidates", "MergeCandidates", "GatheredCandidates", "PartialSoftmaxCombine",
           "BlockSplitAttention", "build_block_split_model"]
