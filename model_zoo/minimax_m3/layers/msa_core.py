"""MsaCore: MSA after the projections: cache writes, block selection, block-sparse attention."""
from mindspore import nn, ops

from .batch_layout import BatchLayout
from .block_select import BlockSelector
from .paged_cache import PagedCacheWrite
from .sparse_attention import BlockSparseAttention


class MsaCore(nn.Cell):
    r"""Stores this step's keys in the paged caches, then attends over the blocks the index picks.

    One call serves prefill, chunked prefill, decode, speculative decode and any mix of them: every
    request contributes q_seq_lens[b] packed tokens that see the first batch_valid_length[b] -
    q_seq_lens[b] cached tokens plus their causal prefix among the new ones. New keys are written
    before anything is read, so every read goes through the paged caches and the three code paths
    (prefill, decode, mixed) are one.

    Args:
        config (MsaConfig): the layer's settings.
        return_selection (bool): also return each token's selected blocks. Default: ``False``.

    Inputs:
        - **query** (Tensor) - [T, num_heads, head_dim].
        - **key** (Tensor) - [T, num_kv_heads, head_dim].
        - **value** (Tensor) - [T, num_kv_heads, head_dim].
        - **index_query** (Tensor) - [T, index_heads, index_head_dim].
        - **index_key** (Tensor) - [T, index_head_dim].
        - **slot_mapping** (Tensor) - [T] int32, page * P + offset per token, -1 = do not store.
        - **batch_valid_length** (Tensor) - [B] int32, KV length of each request after this step.
        - **q_seq_lens** (Tensor) - [B] int32, new tokens per request; tokens past their sum are padding.
        - **block_tables** (Tensor) - [B, MB] int32, logical block -> page.
        - **key_cache** (Union[Parameter, Tensor]) - [NP, P, num_kv_heads, head_dim], updated in place.
        - **value_cache** (Union[Parameter, Tensor]) - [NP, P, num_kv_heads, head_dim], updated in place.
        - **index_cache** (Union[Parameter, Tensor]) - [NP, P, index_head_dim], updated in place.

    Outputs:
        Tensor of the query's dtype, [T, num_heads, head_dim]; with `return_selection`, a tuple of it
        and the [T, index_heads, top_k] int32 logical blocks each index head selected, best first, -1
        where fewer blocks than top_k are visible.

    Supported Platforms:
        ``CPU``

    Examples:
        >>> import numpy as np
        >>> import mindspore as ms
        >>> from model_zoo.minimax_m3.layers.msa_config import tiny
        >>> cfg = tiny()
        >>> core = MsaCore(cfg)
        >>> kc = ms.Parameter(ms.Tensor(np.zeros((4, 16, 2, 16), np.float32)), name="k")
        >>> vc = ms.Parameter(ms.Tensor(np.zeros((4, 16, 2, 16), np.float32)), name="v")
        >>> ic = ms.Parameter(ms.Tensor(np.zeros((4, 16, 16), np.float32)), name="i")
        >>> r = lambda *s: ms.Tensor(np.random.randn(*s).astype(np.float32))
        >>> out = core(r(5, 8, 16), r(5, 2, 16), r(5, 2, 16), r(5, 2, 16), r(5, 16),
        ...            ms.Tensor(np.arange(16, 21), ms.int32), ms.Tensor([5], ms.int32), ms.Tensor([5], ms.int32),
        ...            ms.Tensor([[1, 2]], ms.int32), kc, vc, ic)
        >>> out.shape
        (5, 8, 16)
    """

    def __init__(self, config, return_selection=False):
        super().__init__()
        self.return_selection = return_selection
        self.layout = BatchLayout()
        self.write_cache = PagedCacheWrite()
        self.select = BlockSelector(config)
        self.attend = BlockSparseAttention(config)

    def construct(self, query, key, value, index_query, index_key, slot_mapping, batch_valid_length, q_seq_lens,
                  block_tables, key_cache, value_cache, index_cache):
        key_cache = self.write_cache(key_cache, slot_mapping, key)
        value_cache = self.write_cache(value_cache, slot_mapping, value)
        index_cache = self.write_cache(index_cache, slot_mapping, index_key)
        qlen, klen, table, token_request, visible_end = self.layout(slot_mapping, batch_valid_length, q_seq_lens,
                                                                    block_tables)
        block_ids, selected = self.select(index_query, index_cache, qlen, klen, table)
        context = self.attend(query, key_cache, value_cache, block_ids, selected, table, token_request, visible_end)
        if self.return_selection:
            return context, ops.select(selected, block_ids, ops.full_like(block_ids, -1))
        return context
