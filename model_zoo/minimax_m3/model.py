"""A small MiniMax-M3-style decoder: embedding, MSA layers with a gated MLP, LM head, paged caches."""
import numpy as np
import mindspore as ms
from mindspore import Parameter, Tensor, nn, ops

from .msa_attention import MsaAttention
from .paged_cache import new_paged_caches
from .rms_norm import RMSNorm


class GatedMLP(nn.Cell):
    r"""SiLU-gated MLP: down(silu(gate(x)) * up(x)).

    Args:
        hidden_size (int): model width. ffn_size (int): inner width. dtype (mindspore.dtype): weight dtype.

    Inputs:
        - **x** (Tensor) - [T, hidden_size].

    Outputs:
        Tensor, [T, hidden_size].

    Supported Platforms:
        ``CPU``

    Examples:
        >>> import numpy as np
        >>> import mindspore as ms
        >>> GatedMLP(8, 16, ms.float32)(ms.Tensor(np.ones((2, 8), np.float32))).shape
        (2, 8)
    """

    def __init__(self, hidden_size, ffn_size, dtype):
        super().__init__()
        self.gate = nn.Dense(hidden_size, ffn_size, has_bias=False, dtype=dtype)
        self.up = nn.Dense(hidden_size, ffn_size, has_bias=False, dtype=dtype)
        self.down = nn.Dense(ffn_size, hidden_size, has_bias=False, dtype=dtype)

    def construct(self, x):
        return self.down(ops.silu(self.gate(x)) * self.up(x))


class MsaDecoderLayer(nn.Cell):
    r"""Pre-norm block: x + MSA(norm(x)), then + MLP(norm(.)). Owns its layer's paged caches.

    Args:
        config (MsaConfig): attention settings. ffn_size (int): MLP width. num_pages (int): cache pages.
        index (int): layer number, names the cache Parameters.

    Inputs:
        - **hidden_states** (Tensor) - [T, hidden_size].
        - **batch_valid_length**, **q_seq_lens**, **block_tables**, **slot_mapping** (Tensor) - as MsaAttention.

    Outputs:
        Tensor, [T, hidden_size].

    Supported Platforms:
        ``CPU``

    Examples:
        >>> from model_zoo.minimax_m3.config import tiny
        >>> layer = MsaDecoderLayer(tiny(), ffn_size=64, num_pages=4, index=0)
        >>> layer.key_cache.shape
        (4, 16, 2, 16)
    """

    def __init__(self, config, ffn_size, num_pages, index):
        super().__init__()
        self.attention_norm = RMSNorm(config.hidden_size, config.rms_norm_eps, config.ms_dtype)
        self.attention = MsaAttention(config)
        self.mlp_norm = RMSNorm(config.hidden_size, config.rms_norm_eps, config.ms_dtype)
        self.mlp = GatedMLP(config.hidden_size, ffn_size, config.ms_dtype)
        self.key_cache, self.value_cache, self.index_cache = new_paged_caches(config, num_pages, f"layers.{index}")

    def construct(self, hidden_states, batch_valid_length, q_seq_lens, block_tables, slot_mapping):
        attended = self.attention(self.attention_norm(hidden_states), batch_valid_length, q_seq_lens, block_tables,
                                  slot_mapping, self.key_cache, self.value_cache, self.index_cache)
        hidden_states = hidden_states + attended
        return hidden_states + self.mlp(self.mlp_norm(hidden_states))


class MsaDecoderLM(nn.Cell):
    r"""Token ids in, next-token logits of each request's last new token out.

    Args:
        config (MsaConfig): attention settings (hidden_size, heads, block_size, top_k, dtype).
        vocab_size (int): vocabulary. num_layers (int): decoder layers. ffn_size (int): MLP width.
        num_pages (int): pages of every layer's paged caches.

    Inputs:
        - **input_ids** (Tensor) - [T] int32, the packed new tokens of all requests (padding allowed at the end).
        - **batch_valid_length**, **q_seq_lens**, **block_tables**, **slot_mapping** (Tensor) - MindFormers'
          metadata, as MsaAttention.

    Outputs:
        Tensor of float32, [B, vocab_size]: logits at each request's last new token (MindFormers gathers
        the same rows before its LM head, so prefill does not pay for T x vocab logits).

    Supported Platforms:
        ``CPU``

    Examples:
        >>> import mindspore as ms
        >>> from model_zoo.minimax_m3.config import tiny
        >>> lm = MsaDecoderLM(tiny(), vocab_size=50, num_layers=1, ffn_size=64, num_pages=2)
        >>> lm(ms.Tensor([3, 4, 5], ms.int32), ms.Tensor([3], ms.int32), ms.Tensor([3], ms.int32),
        ...    ms.Tensor([[1]], ms.int32), ms.Tensor([16, 17, 18], ms.int32)).shape
        (1, 50)
    """

    def __init__(self, config, vocab_size, num_layers, ffn_size, num_pages):
        super().__init__()
        self.config = config
        rng = np.random.default_rng(0)
        table = rng.standard_normal((vocab_size, config.hidden_size)).astype(np.float32)
        self.embedding = Parameter(Tensor(table, config.ms_dtype), name="embedding")
        self.layers = nn.CellList([MsaDecoderLayer(config, ffn_size, num_pages, i) for i in range(num_layers)])
        self.final_norm = RMSNorm(config.hidden_size, config.rms_norm_eps, config.ms_dtype)
        self.lm_head = nn.Dense(config.hidden_size, vocab_size, has_bias=False, dtype=config.ms_dtype)

    def construct(self, input_ids, batch_valid_length, q_seq_lens, block_tables, slot_mapping):
        hidden_states = ops.gather(self.embedding, input_ids, 0)
        for layer in self.layers:
            hidden_states = layer(hidden_states, batch_valid_length, q_seq_lens, block_tables, slot_mapping)
        last = ops.cumsum(q_seq_lens, 0) - 1
        hidden_states = self.final_norm(ops.gather(hidden_states, last, 0))
        return ops.cast(self.lm_head(hidden_states), ms.float32)
