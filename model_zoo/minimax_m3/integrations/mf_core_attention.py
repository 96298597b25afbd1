"""MsaCoreAttention: MSA behind MindFormers' core-attention calling convention (no MindFormers import)."""
import math

import mindspore as ms
from mindspore import Parameter, nn, ops

from ..layers.msa_config import MsaConfig
from ..layers.msa_core import MsaCore


class MsaCoreAttention(nn.Cell):
    r"""MsaCore with the constructor and inputs that MindFormers' inference Attention gives its core
    attention (the FlashAttention slot), plus the index branch's two tensors.

    MindFormers builds the core attention with this rank's head counts (head_num, kv_head_num) and
    passes flattened [T, heads * head_dim] projections. The MSA settings come from the ModuleSpec's
    params. Index heads are split across tensor-parallel ranks like query heads, so this rank's
    count is index_heads * head_num / total_num_heads. GPTModel hands each layer its key and value
    caches but has no slot for a third one, so the index-key cache is a Parameter of this Cell
    ([num_blocks, block_size, index_head_dim], written through the same slot_mapping).

    Args:
        head_num (int): query heads on this rank. head_dim (int): head dim. kv_head_num (int): KV heads
            on this rank.
        scale_value (float, optional): softmax scale; MSA uses 1 / sqrt(head_dim) and rejects others.
        next_tokens, pa_kv_head_num: accepted from MindFormers' FlashAttention convention, not used.
        total_num_heads (int): query heads of the whole layer. Default: ``head_num``.
        index_heads (int): index heads of the whole layer. index_head_dim (int): index head dim.
        top_k, init_blocks, local_blocks (int): the selection settings of MsaConfig.
        block_size (int): cache page size. num_blocks (int): pages of the index-key cache.
        dtype (str): "float32" or "float16" (CPU). rms_norm_eps (float): unused here, accepted so one
            settings dict serves the whole attention.

    Inputs:
        - **query** (Tensor) - [T, head_num * head_dim]. **key**, **value** (Tensor) - [T, kv_head_num * head_dim].
        - **slot_mapping**, **block_tables**, **batch_valid_length**, **q_seq_lens** (Tensor) - as MsaCore.
        - **context_lens_tensor**, **actual_seq_qlen**, **actual_seq_kvlen**, **attn_mask**, **padding_mask**,
          **prefix** - MindFormers' FlashAttention inputs; not read (lengths come from batch_valid_length and
          q_seq_lens, causality from the MSA rule).
        - **key_cache**, **value_cache** (Union[Parameter, Tensor]) - [num_blocks, block_size, kv_head_num,
          head_dim], updated in place.
        - **index_query** (Tensor) - [T, index heads on this rank, index_head_dim].
        - **index_key** (Tensor) - [T, index_head_dim].

    Outputs:
        Tensor, [T, head_num * head_dim].

    Supported Platforms:
        ``CPU``

    Examples:
        >>> import numpy as np
        >>> import mindspore as ms
        >>> core = MsaCoreAttention(4, 16, 1, index_heads=1, index_head_dim=16, top_k=2, block_size=16, num_blocks=4)
        >>> core.index_cache.shape
        (4, 16, 16)
    """

    def __init__(self, head_num, head_dim, kv_head_num, scale_value=None, next_tokens=0, pa_kv_head_num=None, *,
                 total_num_heads=None, index_heads, index_head_dim, top_k=16, init_blocks=0, local_blocks=1,
                 block_size=128, num_blocks=1024, dtype="float32", rms_norm_eps=1e-6):
        super().__init__()
        del next_tokens, pa_kv_head_num, rms_norm_eps
        total_num_heads = total_num_heads or head_num
        if (index_heads * head_num) % total_num_heads:
            raise ValueError(f"MsaCoreAttention: {index_heads} index heads do not split like {total_num_heads} "
                             f"query heads into {total_num_heads // head_num} ranks")
        if scale_value is not None and not math.isclose(scale_value, 1.0 / math.sqrt(head_dim), rel_tol=1e-6):
            raise ValueError(f"MsaCoreAttention: scale_value {scale_value} != 1/sqrt(head_dim); MSA's attention "
                             "uses 1/sqrt(head_dim)")
        self.config = MsaConfig(hidden_size=head_num * head_dim, num_heads=head_num, num_kv_heads=kv_head_num,
                                head_dim=head_dim, index_heads=index_heads * head_num // total_num_heads,
                                index_head_dim=index_head_dim, block_size=block_size, top_k=top_k,
                                init_blocks=init_blocks, local_blocks=local_blocks, dtype=dtype)
        self.head_num = head_num
        self.kv_head_num = kv_head_num
        self.head_dim = head_dim
        # MindFormers toggles these flags on every core attention; MSA runs one path for all phases.
        self.is_prefill = True
        self.is_chunked = False
        self.index_cache = Parameter(ops.zeros((num_blocks, block_size, index_head_dim), self.config.ms_dtype),
                                     name="index_cache", requires_grad=False)
        self.core = MsaCore(self.config)

    def construct(self, query, key, value, slot_mapping=None, block_tables=None, batch_valid_length=None,
                  context_lens_tensor=None, q_seq_lens=None, actual_seq_qlen=None, actual_seq_kvlen=None,
                  attn_mask=None, padding_mask=None, prefix=None, key_cache=None, value_cache=None,
                  index_query=None, index_key=None):
        if index_query is None or index_key is None:
            raise ValueError("MsaCoreAttention needs index_query and index_key: build it through MsaSelfAttention")
        context = self.core(query.reshape((-1, self.head_num, self.head_dim)),
                            key.reshape((-1, self.kv_head_num, self.head_dim)),
                            value.reshape((-1, self.kv_head_num, self.head_dim)),
                            index_query, index_key, slot_mapping, batch_valid_length, q_seq_lens, block_tables,
                            key_cache, value_cache, self.index_cache)
        return context.reshape((-1, self.head_num * self.head_dim))


def rotate_half_rope(x, cos, sin, head_dim):
    """NeoX-style RoPE of x [T, heads * head_dim] with per-token cos/sin [T, head_dim] (cat(f, f) layout,
    MindFormers' "rotate_half" format), composed from ops that have CPU kernels."""
    dtype = x.dtype
    x = ops.cast(x, ms.float32).reshape((x.shape[0], -1, head_dim))
    half = head_dim // 2
    rotated = ops.concat((-x[..., half:], x[..., :half]), -1)
    cos = ops.expand_dims(ops.cast(cos, ms.float32), 1)
    sin = ops.expand_dims(ops.cast(sin, ms.float32), 1)
    return ops.cast((x * cos + rotated * sin).reshape((x.shape[0], -1)), dtype)
