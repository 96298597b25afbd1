"""MiniMax-M3's attention layers: per-head Gemma q/k norms, partial RoPE, paged K/V caches; MSA layers
add the index branch and select blocks with MsaIndexScore, dense layers attend to every visible block."""
from mindspore import Parameter, nn, ops

from .linear import linear
from .msa_config import MsaConfig
from .msa_core import MsaCore
from .paged_cache import PagedCacheWrite
from .rms_norm import GemmaRMSNorm
from .rope import PartialRope
from .sparse_attention import BlockSparseAttention


class M3Indexer(nn.Cell):
    r"""The index branch: index queries (index_heads) and one shared index key per token, each
    Gemma-normalised per head and then rotated with the main q/k's partial RoPE.

    Args:
        config (MiniMaxM3Config): the model's settings.
        dtype (mindspore.dtype): weight and activation dtype.

    Inputs:
        - **hidden_states** (Tensor) - [T, hidden_size], the layer's normalised input.
        - **positions** (Tensor) - [T] int32.

    Outputs:
        Tuple of 2 tensors: **index_query** [T, index_heads, index_head_dim] and **index_key**
        [T, index_head_dim].

    Supported Platforms:
        ``CPU``

    Examples:
        >>> import numpy as np
        >>> import mindspore as ms
        >>> from model_zoo.minimax_m3.model.config import MiniMaxM3Config
        >>> cfg = MiniMaxM3Config(hidden_size=16, index_heads=2, index_head_dim=8, rotary_dim=4, head_dim=8)
        >>> q, k = M3Indexer(cfg, ms.float32)(ms.Tensor(np.ones((3, 16), np.float32)), ms.Tensor([0, 1, 2], ms.int32))
        >>> q.shape, k.shape
        ((3, 2, 8), (3, 8))
    """

    def __init__(self, config, dtype):
        super().__init__()
        self.heads, self.dim = config.index_heads, config.index_head_dim
        self.q_proj = linear(config.hidden_size, self.heads * self.dim, dtype)
        self.k_proj = linear(config.hidden_size, self.dim, dtype)
        self.q_norm = GemmaRMSNorm(self.dim, config.rms_norm_eps, dtype)
        self.k_norm = GemmaRMSNorm(self.dim, config.rms_norm_eps, dtype)
        self.rope = PartialRope(self.dim, config.rotary_dim, config.rope_theta)

    def construct(self, hidden_states, positions):
        query = self.q_norm(self.q_proj(hidden_states).reshape((-1, self.heads, self.dim)))
        key = self.k_norm(self.k_proj(hidden_states).reshape((-1, 1, self.dim)))
        return self.rope(query, positions), self.rope(key, positions).reshape((-1, self.dim))


class M3Attention(nn.Cell):
    r"""One MiniMax-M3 attention layer over its own paged caches (Parameters, written in place).

    q, k: projection, per-head Gemma RMSNorm, partial NeoX RoPE at each token's position; v: projection.
    This step's k, v (and index key) are stored first, then read back through the block table, so
    prefill, chunked prefill, decode and mixed batches are one code path. An MSA layer ("msa") lets
    each index head's top-k blocks (MsaIndexScore, token window: the token's own block forced 1e29,
    vLLM's value; init blocks 1e30) be what its query heads attend to; a dense layer attends to every
    visible block. Softmax scale head_dim ** -0.5, float32 scores.

    Args:
        config (MiniMaxM3Config): the model's settings.
        layer_index (int): which layer (its attention type).
        dtype (str): "float32" or "float16".
        num_pages (int): pages of config.block_size tokens in this layer's caches.

    Inputs:
        - **hidden_states** (Tensor) - [T, hidden_size].
        - **positions** (Tensor) - [T] int32.
        - **slot_mapping**, **batch_valid_length**, **q_seq_lens**, **block_tables** (Tensor) - MindFormers'
          step metadata (see MsaAttention).
        - **table**, **token_request**, **visible_end** (Tensor) - BatchLayout's outputs for the step.

    Outputs:
        Tensor [T, hidden_size]; an MSA layer returns a tuple of it and the [T, index_heads, top_k]
        int32 selected logical blocks (-1 = none).

    Supported Platforms:
        ``CPU``

    Examples:
        >>> from model_zoo.minimax_m3.model.config import MiniMaxM3Config
        >>> cfg = MiniMaxM3Config(hidden_size=32, num_hidden_layers=1, attention_types=("msa",), mlp_types=("moe",),
        ...                       num_attention_heads=4, num_key_value_heads=2, head_dim=16, rotary_dim=8,
        ...                       index_heads=2, index_head_dim=16, block_size=16, top_k=2)
        >>> M3Attention(cfg, 0, "float32", num_pages=4).is_msa
        True
    """

    def __init__(self, config, layer_index, dtype, num_pages):
        super().__init__()
        layer_config = config.msa_config(dtype) if config.attention_types[layer_index] == "msa" else \
            _dense_config(config, dtype)
        ms_dtype = layer_config.ms_dtype
        self.is_msa = config.attention_types[layer_index] == "msa"
        self.heads, self.kv_heads, self.head_dim = config.num_attention_heads, config.num_key_value_heads, \
            config.head_dim
        self.block_size = config.block_size
        self.q_proj = linear(config.hidden_size, self.heads * self.head_dim, ms_dtype)
        self.k_proj = linear(config.hidden_size, self.kv_heads * self.head_dim, ms_dtype)
        self.v_proj = linear(config.hidden_size, self.kv_heads * self.head_dim, ms_dtype)
        self.o_proj = linear(self.heads * self.head_dim, config.hidden_size, ms_dtype)
        self.q_norm = GemmaRMSNorm(self.head_dim, config.rms_norm_eps, ms_dtype)
        self.k_norm = GemmaRMSNorm(self.head_dim, config.rms_norm_eps, ms_dtype)
        self.rope = PartialRope(self.head_dim, config.rotary_dim, config.rope_theta)
        kv_shape = (num_pages, config.block_size, self.kv_heads, self.head_dim)
        self.key_cache = Parameter(ops.zeros(kv_shape, ms_dtype), name="key_cache", requires_grad=False)
        self.value_cache = Parameter(ops.zeros(kv_shape, ms_dtype), name="value_cache", requires_grad=False)
        if self.is_msa:
            self.indexer = M3Indexer(config, ms_dtype)
            self.index_cache = Parameter(ops.zeros((num_pages, config.block_size, config.index_head_dim), ms_dtype),
                                         name="index_cache", requires_grad=False)
            self.core = MsaCore(layer_config, return_selection=True)
        else:
            self.dense_index_heads = layer_config.index_heads
            self.write_cache = PagedCacheWrite()
            self.attend = BlockSparseAttention(layer_config)

    def project(self, hidden_states, positions):
        """query [T, heads, head_dim] and key [T, kv_heads, head_dim] (normalised, rotated), value."""
        query = self.q_norm(self.q_proj(hidden_states).reshape((-1, self.heads, self.head_dim)))
        key = self.k_norm(self.k_proj(hidden_states).reshape((-1, self.kv_heads, self.head_dim)))
        value = self.v_proj(hidden_states).reshape((-1, self.kv_heads, self.head_dim))
        return self.rope(query, positions), self.rope(key, positions), value

    def dense_blocks(self, table, visible_end):
        """A dense layer's (block_ids, selected) for BlockSparseAttention: every block each token can see
        (blocks below ceil(visible_end / P)), [T, KV heads, MB]."""
        blocks = ops.cumsum(ops.ones_like(table[0]), 0) - 1                                # [MB], MB may be dynamic
        visible_blocks = ops.floor_div(visible_end + (self.block_size - 1), self.block_size)
        shape = (visible_end.shape[0], self.dense_index_heads, table.shape[1])
        block_ids = ops.broadcast_to(blocks.reshape((1, 1, -1)), shape)
        return block_ids, block_ids < visible_blocks.reshape((-1, 1, 1))

    def construct(self, hidden_states, positions, slot_mapping, batch_valid_length, q_seq_lens, block_tables, table,
                  token_request, visible_end):
        query, key, value = self.project(hidden_states, positions)
        if self.is_msa:
            index_query, index_key = self.indexer(hidden_states, positions)
            context, selection = self.core(query, key, value, index_query, index_key, slot_mapping,
                                           batch_valid_length, q_seq_lens, block_tables, self.key_cache,
                                           self.value_cache, self.index_cache)
            return self.o_proj(context.reshape((-1, self.heads * self.head_dim))), selection
        key_cache = self.write_cache(self.key_cache, slot_mapping, key)
        value_cache = self.write_cache(self.value_cache, slot_mapping, value)
        # Dense = block-sparse over every block the token can see.
        block_ids, selected = self.dense_blocks(table, visible_end)
        context = self.attend(query, key_cache, value_cache, block_ids, selected, table, token_request, visible_end)
        return self.o_proj(context.reshape((-1, self.heads * self.head_dim)))


def _dense_config(config, dtype):
    """The MsaConfig whose block-sparse attention, given every block, is the dense layer's attention:
    one group per KV head (no index branch), nothing forced."""
    return MsaConfig(hidden_size=config.hidden_size, num_heads=config.num_attention_heads,
                     num_kv_heads=config.num_key_value_heads, head_dim=config.head_dim,
                     index_heads=config.num_key_value_heads, index_head_dim=config.index_head_dim,
                     block_size=config.block_size, top_k=config.top_k, init_blocks=0, local_blocks=0,
                     rms_norm_eps=config.rms_norm_eps, dtype=dtype)
