"""BlockSparseAttention: softmax attention over exactly the selected, visible keys of the paged cache."""
import math

import numpy as np
import mindspore as ms
from mindspore import Tensor, nn, ops


class BlockSparseAttention(nn.Cell):
    r"""GQA attention of each query token over the KV blocks its index head selected.

    Query heads form G = max(num_kv_heads, index_heads) contiguous groups; group c reads KV head
    c // (G / num_kv_heads) and the blocks of index head c // (G / index_heads). A key is attended iff
    its block was selected and the key is causally visible (position < visible_end), which also
    makes the token's own block causal inside. The softmax runs over those keys only; a token with no
    visible key (padding) outputs zeros. Scores and softmax are float32.

    The selected blocks are gathered from the paged cache per token, O(T * G * top_k * P * D) memory:
    the decode-sized work that block sparsity buys; for long prefills a fused kernel should replace it.

    Args:
        config (MsaConfig): head counts, head_dim, block_size and top_k are read.

    Inputs:
        - **query** (Tensor) - [T, num_heads, head_dim].
        - **key_cache** (Tensor) - [NP, P, num_kv_heads, head_dim].
        - **value_cache** (Tensor) - [NP, P, num_kv_heads, head_dim].
        - **block_ids** (Tensor) - [T, index_heads, top_k] int32 logical blocks (BlockSelector).
        - **selected** (Tensor) - [T, index_heads, top_k] bool.
        - **block_table** (Tensor) - [B', MB] int32, logical -> physical page per request.
        - **token_request** (Tensor) - [T] int32, row of `block_table` for each token.
        - **visible_end** (Tensor) - [T] int32, keys [0, visible_end) of the request are visible.

    Outputs:
        Tensor of the query's dtype, [T, num_heads, head_dim].

    Supported Platforms:
        ``CPU``

    Examples:
        >>> import numpy as np
        >>> import mindspore as ms
        >>> from model_zoo.minimax_m3.layers.msa_config import tiny
        >>> cfg = tiny()
        >>> attn = BlockSparseAttention(cfg)
        >>> kv = ms.Tensor(np.random.randn(2, 16, 2, 16).astype(np.float32))
        >>> out = attn(ms.Tensor(np.random.randn(1, 8, 16).astype(np.float32)), kv, kv,
        ...            ms.Tensor(np.zeros((1, 2, 3), np.int32)), ms.Tensor(np.array([[[True, False, False]] * 2])),
        ...            ms.Tensor([[1]], ms.int32), ms.Tensor([0], ms.int32), ms.Tensor([5], ms.int32))
        >>> out.shape
        (1, 8, 16)
    """

    def __init__(self, config):
        super().__init__()
        groups = config.groups
        self.groups = groups
        self.heads_per_group = config.num_heads // groups
        self.num_kv_heads = config.num_kv_heads
        self.head_dim = config.head_dim
        self.block_size = config.block_size
        self.top_k = config.top_k
        self.scale = 1.0 / math.sqrt(config.head_dim)
        self.group_index_head = Tensor(np.arange(groups) // (groups // config.index_heads), ms.int32)
        self.group_kv_head = Tensor((np.arange(groups) // (groups // config.num_kv_heads)).reshape(1, groups, 1, 1),
                                    ms.int32)
        self.key_offset = Tensor(np.arange(config.block_size).reshape(1, 1, 1, -1), ms.int32)
        self.matmul_qk = ops.BatchMatMul(transpose_b=True)
        self.matmul_pv = ops.BatchMatMul()
        self.row_max = ops.ReduceMax(keep_dims=True)
        self.row_sum = ops.ReduceSum(keep_dims=True)

    def construct(self, query, key_cache, value_cache, block_ids, selected, block_table, token_request,
                  visible_end):
        out, _, _ = self.partial(query, key_cache, value_cache, block_ids, selected, block_table, token_request,
                                 visible_end)
        return ops.cast(out.reshape((query.shape[0], -1, self.head_dim)), query.dtype)

    def partial(self, query, key_cache, value_cache, block_ids, selected, block_table, token_request, visible_end):
        """The attention with its softmax statistics, for combining partial results over key subsets (the
        block-table split: each rank attends over its own blocks). Returns float32 tensors of
        [T * G, heads_per_group, .]: the normalised output [.., D], the row max of the scores [.., 1] (0 for a row
        with no visible key) and the row sum of exp(score - max) [.., 1] (0 for such a row)."""
        num_tokens = query.shape[0]
        block_ids = ops.gather(block_ids, self.group_index_head, 1)                      # [T, G, K]
        selected = ops.gather(ops.cast(selected, ms.int32), self.group_index_head, 1) > 0
        block_ids = ops.select(selected, block_ids, ops.zeros_like(block_ids))            # keep lookups in range

        width = block_table.shape[1]
        table_index = token_request.reshape((-1, 1, 1)) * width + block_ids
        pages = ops.gather(block_table.reshape((-1,)), table_index.reshape((-1,)), 0).reshape(block_ids.shape)

        positions = block_ids.reshape(block_ids.shape + (1,)) * self.block_size + self.key_offset  # [T, G, K, P]
        visible = ops.logical_and(selected.reshape(selected.shape + (1,)),
                                  positions < visible_end.reshape((-1, 1, 1, 1)))
        visible = visible.reshape((num_tokens * self.groups, 1, -1))

        slots = pages.reshape(pages.shape + (1,)) * self.block_size + self.key_offset
        rows = (slots * self.num_kv_heads + self.group_kv_head).reshape((-1,))
        keys = self._gather_rows(key_cache, rows, num_tokens)
        values = self._gather_rows(value_cache, rows, num_tokens)

        q = ops.cast(query, ms.float32).reshape((num_tokens * self.groups, self.heads_per_group, self.head_dim))
        scores = self.matmul_qk(q, keys) * self.scale                                     # [T*G, h, K*P]
        scores = ops.select(visible.broadcast_to(scores.shape), scores, ops.full_like(scores, float("-inf")))
        peak = self.row_max(scores, -1)
        # A row without a visible key (padding) would give -inf - -inf = NaN: shift it by 0 instead, so
        # its weights are exp(-inf) = 0 and its output is 0.
        peak = ops.select(peak > float("-inf"), peak, ops.zeros_like(peak))
        weights = ops.exp(scores - peak)
        total = self.row_sum(weights, -1)
        weights = weights / ops.select(total > 0, total, ops.ones_like(total))
        return self.matmul_pv(weights, values), peak, total

    def _gather_rows(self, cache, rows, num_tokens):
        flat = cache.reshape((-1, self.head_dim))
        picked = ops.gather(flat, rows, 0)
        # -1: the block count comes from block_ids, so dense attention (every block) uses this Cell too.
        return ops.cast(picked, ms.float32).reshape((num_tokens * self.groups, -1, self.head_dim))
