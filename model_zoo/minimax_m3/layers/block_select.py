"""BlockSelector: MsaIndexScore followed by a top-k, giving each index head's KV blocks per token."""
import mindspore as ms
from mindspore import nn, ops

from ms_msa import MsaIndexScore


class BlockSelector(nn.Cell):
    r"""Picks, for every index head and query token, the top_k logical KV blocks by index score.

    Scores come from ms_msa.MsaIndexScore on the paged index-key cache with token-mode forcing: each
    token's own last visible block (and the init blocks) are forced in, which is what prefill and
    chunked prefill need; request mode would force the request's last block for every prompt token,
    a block the early tokens can not see. A block without a visible key scores -inf, so when a
    request has fewer visible blocks than top_k the surplus picks carry -inf and are reported as not
    selected. The score is padded with top_k columns of -inf first, so the top-k is valid for any
    table width, including widths only known at run time.

    Args:
        config (MsaConfig): top_k, init_blocks, local_blocks are read.

    Inputs:
        - **index_query** (Tensor) - [T, index_heads, index_head_dim].
        - **index_cache** (Tensor) - [NP, P, index_head_dim], the query's dtype.
        - **actual_seq_qlen** (Tensor) - [B'+1] int32 (see BatchLayout).
        - **actual_seq_klen** (Tensor) - [B'] int32.
        - **block_table** (Tensor) - [B', MB] int32.

    Outputs:
        Tuple of 2 tensors:

        - **block_ids** - [T, index_heads, top_k] int32, logical block indices, best first.
        - **selected** - [T, index_heads, top_k] bool, False where the pick is not a visible block.

    Supported Platforms:
        ``CPU``

    Examples:
        >>> import numpy as np
        >>> import mindspore as ms
        >>> from model_zoo.minimax_m3.layers.msa_config import tiny
        >>> cache = ms.Tensor(np.random.randn(4, 16, 16).astype(np.float32))
        >>> ids, sel = BlockSelector(tiny())(ms.Tensor(np.random.randn(1, 2, 16).astype(np.float32)), cache,
        ...                                  ms.Tensor([0, 1], ms.int32), ms.Tensor([40], ms.int32),
        ...                                  ms.Tensor([[2, 0, 3]], ms.int32))
        >>> ids.shape, int(sel.asnumpy().sum())
        ((1, 2, 3), 6)
    """

    def __init__(self, config):
        super().__init__()
        self.top_k = config.top_k
        self.score = MsaIndexScore(layout_key="BBND", sparse_mode=3, init_blocks=config.init_blocks,
                                   local_blocks=config.local_blocks, local_window="token")

    def construct(self, index_query, index_cache, actual_seq_qlen, actual_seq_klen, block_table):
        score = self.score(index_query, index_cache, None, block_table, None, None, actual_seq_qlen, actual_seq_klen)
        pad = ops.full((score.shape[0], score.shape[1], self.top_k), float("-inf"), dtype=ms.float32)
        values, block_ids = ops.topk(ops.concat((score, pad), -1), self.top_k)
        selected = values > float("-inf")
        return ops.transpose(ops.cast(block_ids, ms.int32), (1, 0, 2)), ops.transpose(selected, (1, 0, 2))
