"""MsaAttention: one MiniMax-M3 sparse-attention layer, from hidden states to hidden states."""
from mindspore import nn

from .index_branch import MsaIndexer
from .msa_core import MsaCore


class MsaAttention(nn.Cell):
    r"""Projections, index branch and MsaCore: MiniMax-M3's MSA layer over paged caches.

    Main attention: num_heads query heads over num_kv_heads key/value heads (GQA). Index branch:
    index_heads RMS-normalised index queries and one shared index key per token; MsaIndexScore ranks
    the KV blocks and each index head's top_k blocks are what its query heads attend to. No positional
    encoding is applied here (MindFormers applies RoPE before its core attention; see
    mindformers_adapter).

    Args:
        config (MsaConfig): the layer's settings.

    Inputs:
        - **hidden_states** (Tensor) - [T, hidden_size], the config's dtype; the packed tokens of all requests.
        - **batch_valid_length** (Tensor) - [B] int32, each request's KV length after this step.
        - **q_seq_lens** (Tensor) - [B] int32, new tokens of each request in this step.
        - **block_tables** (Tensor) - [B, MB] int32, logical block -> page of the paged caches.
        - **slot_mapping** (Tensor) - [T] int32, cache slot (page * block_size + offset) per token; -1 skips it.
        - **key_cache** (Union[Parameter, Tensor]) - [NP, block_size, num_kv_heads, head_dim], updated in place.
        - **value_cache** (Union[Parameter, Tensor]) - [NP, block_size, num_kv_heads, head_dim], updated in place.
        - **index_cache** (Union[Parameter, Tensor]) - [NP, block_size, index_head_dim], updated in place.
        - **context_lens_tensor** (Tensor, optional) - [B] int32, MindFormers' cached-token count. Accepted for
          interface parity and not read: it must equal batch_valid_length - q_seq_lens, which is what the
          layer uses, so the attention and the block scores share one causal rule.

    Outputs:
        Tensor, [T, hidden_size], the config's dtype. Padding tokens (past sum(q_seq_lens)) give zeros
        before the output projection.

    Supported Platforms:
        ``CPU``

    Examples:
        >>> import numpy as np
        >>> import mindspore as ms
        >>> from model_zoo.minimax_m3.layers.msa_config import tiny
        >>> cfg = tiny()
        >>> layer = MsaAttention(cfg)
        >>> kc = ms.Parameter(ms.Tensor(np.zeros((4, 16, 2, 16), np.float32)), name="k")
        >>> vc = ms.Parameter(ms.Tensor(np.zeros((4, 16, 2, 16), np.float32)), name="v")
        >>> ic = ms.Parameter(ms.Tensor(np.zeros((4, 16, 16), np.float32)), name="i")
        >>> x = ms.Tensor(np.random.randn(20, 32).astype(np.float32))
        >>> out = layer(x, ms.Tensor([20], ms.int32), ms.Tensor([20], ms.int32), ms.Tensor([[3, 1]], ms.int32),
        ...             ms.Tensor(np.r_[48:64, 16:20], ms.int32), kc, vc, ic)
        >>> out.shape
        (20, 32)
    """

    def __init__(self, config):
        super().__init__()
        self.config = config
        dtype = config.ms_dtype
        self.num_heads = config.num_heads
        self.num_kv_heads = config.num_kv_heads
        self.head_dim = config.head_dim
        self.wq = nn.Dense(config.hidden_size, config.num_heads * config.head_dim, has_bias=False, dtype=dtype)
        self.wk = nn.Dense(config.hidden_size, config.num_kv_heads * config.head_dim, has_bias=False, dtype=dtype)
        self.wv = nn.Dense(config.hidden_size, config.num_kv_heads * config.head_dim, has_bias=False, dtype=dtype)
        self.wo = nn.Dense(config.num_heads * config.head_dim, config.hidden_size, has_bias=False, dtype=dtype)
        self.indexer = MsaIndexer(config)
        self.core = MsaCore(config)

    def construct(self, hidden_states, batch_valid_length, q_seq_lens, block_tables, slot_mapping, key_cache,
                  value_cache, index_cache, context_lens_tensor=None):
        query = self.wq(hidden_states).reshape((-1, self.num_heads, self.head_dim))
        key = self.wk(hidden_states).reshape((-1, self.num_kv_heads, self.head_dim))
        value = self.wv(hidden_states).reshape((-1, self.num_kv_heads, self.head_dim))
        index_query, index_key = self.indexer(hidden_states)
        context = self.core(query, key, value, index_query, index_key, slot_mapping, batch_valid_length, q_seq_lens,
                            block_tables, key_cache, value_cache, index_cache)
        return self.wo(context.reshape((-1, self.num_heads * self.head_dim)))
