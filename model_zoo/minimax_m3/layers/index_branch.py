"""MsaIndexer: the light projections whose dot products rank KV blocks (MSA's index branch)."""
from mindspore import nn

from .rms_norm import RMSNorm


class MsaIndexer(nn.Cell):
    r"""Index queries (several heads) and the one index key per token, each RMS-normalised.

    The index key has a single head that every index head shares, so the index-key cache holds one
    D_idx vector per token: 1/(2 * num_kv_heads * head_dim / index_head_dim) of the main KV cache.
    Normalising both sides bounds the dot products the block max runs over, independent of the
    hidden-state scale of a given layer.

    Args:
        config (MsaConfig): the layer's settings (index_heads, index_head_dim, hidden_size, dtype).

    Inputs:
        - **hidden_states** (Tensor) - [T, hidden_size].

    Outputs:
        Tuple of 2 tensors of the config's dtype:

        - **index_query** - [T, index_heads, index_head_dim].
        - **index_key** - [T, index_head_dim].

    Supported Platforms:
        ``CPU``

    Examples:
        >>> import numpy as np
        >>> import mindspore as ms
        >>> from model_zoo.minimax_m3.layers.msa_config import tiny
        >>> q, k = MsaIndexer(tiny())(ms.Tensor(np.ones((3, 32), np.float32)))
        >>> q.shape, k.shape
        ((3, 2, 16), (3, 16))
    """

    def __init__(self, config):
        super().__init__()
        self.index_heads = config.index_heads
        self.index_head_dim = config.index_head_dim
        self.wq = nn.Dense(config.hidden_size, config.index_heads * config.index_head_dim, has_bias=False,
                           dtype=config.ms_dtype)
        self.wk = nn.Dense(config.hidden_size, config.index_head_dim, has_bias=False, dtype=config.ms_dtype)
        self.q_norm = RMSNorm(config.index_head_dim, config.rms_norm_eps, config.ms_dtype)
        self.k_norm = RMSNorm(config.index_head_dim, config.rms_norm_eps, config.ms_dtype)

    def construct(self, hidden_states):
        query = self.wq(hidden_states).reshape((-1, self.index_heads, self.index_head_dim))
        return self.q_norm(query), self.k_norm(self.wk(hidden_states))
