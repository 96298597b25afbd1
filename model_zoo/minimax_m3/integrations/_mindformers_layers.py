"""MindFormers 2.1.0 pieces of the MSA integration. Imported only by mindformers_adapter, and only
when MindFormers imports: everything here subclasses or calls MindFormers."""
import dataclasses
from typing import Union

import mindspore as ms
from mindspore import ops

from mindformers.models.configuration_utils import PretrainedConfig
from mindformers.parallel_core.inference.base_models.gpt.gpt_layer_specs import get_mlp_module_spec
from mindformers.parallel_core.inference.tensor_parallel.layers import (ColumnParallelLinear, QKVParallelLinear,
                                                                        ReplicatedLinear, RowParallelLinear)
from mindformers.parallel_core.inference.transformer.attention import SelfAttention, SelfAttentionSubmodules
from mindformers.parallel_core.inference.transformer.norm import get_norm_cls
from mindformers.parallel_core.inference.transformer.transformer_layer import (TransformerLayer,
                                                                               TransformerLayerSubmodules)
from mindformers.parallel_core.process_group_config import default_model_comm_pgs
from mindformers.parallel_core.utils.spec_utils import ModuleSpec, build_module

from ..layers.batch_layout import BatchLayout
from .mf_core_attention import MsaCoreAttention, rotate_half_rope
from ..layers.rms_norm import RMSNorm

MSA_DEFAULTS = {"msa_index_heads": 4, "msa_index_head_dim": 128, "msa_top_k": 16, "msa_init_blocks": 0,
                "msa_local_blocks": 1}


class MiniMaxM3MsaConfig(PretrainedConfig):
    """A MindFormers model config carrying MiniMax-M3's MSA keys next to the usual ones.

    Keys (defaults are MiniMax-M3's): msa_index_heads 4, msa_index_head_dim 128, msa_top_k 16,
    msa_init_blocks 0, msa_local_blocks 1; the paged caches use MindFormers' own block_size and
    num_blocks keys (block_size 128 for M3).
    """

    model_type = "minimax_m3_msa"

    def __init__(self, msa_index_heads=4, msa_index_head_dim=128, msa_top_k=16, msa_init_blocks=0,
                 msa_local_blocks=1, num_attention_heads=64, num_key_value_heads=4, head_dim=128, block_size=128,
                 **kwargs):
        self.msa_index_heads = msa_index_heads
        self.msa_index_head_dim = msa_index_head_dim
        self.msa_top_k = msa_top_k
        self.msa_init_blocks = msa_init_blocks
        self.msa_local_blocks = msa_local_blocks
        self.num_attention_heads = num_attention_heads
        self.num_key_value_heads = num_key_value_heads
        self.head_dim = head_dim
        self.block_size = block_size
        super().__init__(**kwargs)


@dataclasses.dataclass
class MsaSelfAttentionSubmodules(SelfAttentionSubmodules):
    """SelfAttention's submodules plus the index branch's projections."""

    linear_index_q: Union[ModuleSpec, type] = None
    linear_index_k: Union[ModuleSpec, type] = None


class MsaSelfAttention(SelfAttention):
    r"""MindFormers' inference SelfAttention with MiniMax-M3's index branch, feeding MsaCoreAttention.

    MindFormers' Attention hands its core attention only q, k and v; MSA's index projections read the
    layer's input, so this subclass computes them and passes them on. The index query projection is
    column parallel (index heads split across TP ranks like the query heads); the index key has one
    head that every index head shares, so its projection is replicated. RoPE, when GPTModel supplies
    it, is applied at each token's position (its cached context plus its offset), read from the
    rotary module's cos/sin tables with CPU-available ops, to the main q and k only.

    Args:
        config (TransformerConfig), submodules (MsaSelfAttentionSubmodules), layer_number (int),
        attn_mask_type, cp_comm_type, delay_allreduce, model_comm_pgs, quant_config, prefix: as SelfAttention.
        index_heads (int): index heads of the whole layer. index_head_dim (int): their dim.
        rms_norm_eps (float): epsilon of the index RMSNorms.

    Inputs:
        As MindFormers' Attention.construct: hidden_states [T, H], attention_mask, rotary_pos_cos/sin,
        batch_valid_length, block_tables, slot_mapping, q_seq_lens, context_lens_tensor, key_cache, value_cache...

    Outputs:
        Tensor, [T, H].

    Supported Platforms:
        ``CPU``

    Examples:
        >>> spec = get_msa_layer_spec(transformer_config)                     # doctest: +SKIP
        >>> gpt = GPTModel(transformer_config, spec, vocab_size, max_len)     # doctest: +SKIP
    """

    def __init__(self, config, submodules, layer_number, attn_mask_type=None, cp_comm_type=None,
                 delay_allreduce=False, model_comm_pgs=default_model_comm_pgs, quant_config=None, prefix="", *,
                 index_heads=4, index_head_dim=128, rms_norm_eps=1e-6):
        super().__init__(config, submodules, layer_number, attn_mask_type=attn_mask_type, cp_comm_type=cp_comm_type,
                         delay_allreduce=delay_allreduce, model_comm_pgs=model_comm_pgs, quant_config=quant_config,
                         prefix=prefix)
        self.index_heads_per_partition = index_heads // self.tp_group_size
        self.index_head_dim = index_head_dim
        self.linear_index_q = build_module(submodules.linear_index_q, config.hidden_size, index_heads * index_head_dim,
                                           config=config, bias=False, gather_output=False, transpose_b=True,
                                           compute_dtype=self.compute_dtype, tp_group=self.tp,
                                           prefix=f"{prefix}.linear_index_q")
        self.linear_index_k = build_module(submodules.linear_index_k, config.hidden_size, index_head_dim,
                                           config=config, bias=False, transpose_b=True,
                                           compute_dtype=self.compute_dtype, prefix=f"{prefix}.linear_index_k")
        self.index_q_norm = RMSNorm(index_head_dim, rms_norm_eps, self.compute_dtype)
        self.index_k_norm = RMSNorm(index_head_dim, rms_norm_eps, self.compute_dtype)
        self.layout = BatchLayout()

    def construct(self, hidden_states, attention_mask, key_value_states=None, rotary_pos_cos=None,
                  rotary_pos_sin=None, position_ids=None, batch_valid_length=None, block_tables=None,
                  slot_mapping=None, q_seq_lens=None, actual_seq_qlen=None, actual_seq_kvlen=None,
                  context_lens_tensor=None, key_cache=None, value_cache=None, q_seq_lens_cpu=None,
                  batch_valid_length_cpu=None, context_lens_tensor_cpu=None):
        ori_dtype = hidden_states.dtype
        query, key, value = self.get_query_key_value_tensors(hidden_states)
        if rotary_pos_cos is not None and rotary_pos_sin is not None:
            visible_end = self.layout(slot_mapping, batch_valid_length, q_seq_lens, block_tables)[4]
            positions = ops.clamp(visible_end - 1, 0, None)          # a token sees itself: end = position + 1
            cos = ops.gather(self.rotary_emb.cos_cache, positions, 0)
            sin = ops.gather(self.rotary_emb.sin_cache, positions, 0)
            query = rotate_half_rope(query, cos, sin, self.hidden_size_per_attention_head)
            key = rotate_half_rope(key, cos, sin, self.hidden_size_per_attention_head)
        index_query = self.linear_index_q(hidden_states).reshape((-1, self.index_heads_per_partition,
                                                                  self.index_head_dim))
        index_query = self.index_q_norm(index_query)
        index_key = self.index_k_norm(self.linear_index_k(hidden_states))
        context = self.core_attention(query=query, key=key, value=value, slot_mapping=slot_mapping,
                                      block_tables=block_tables, batch_valid_length=batch_valid_length,
                                      context_lens_tensor=context_lens_tensor, q_seq_lens=q_seq_lens,
                                      key_cache=key_cache, value_cache=value_cache, index_query=index_query,
                                      index_key=index_key)
        return self.cast(self.linear_proj(context), ori_dtype)


def _dtype_name(dtype):
    return {ms.float32: "float32", ms.float16: "float16", ms.bfloat16: "bfloat16"}.get(dtype, str(dtype))


def msa_settings(config):
    """The MSA keys of a config object or dict, defaults filled in (MiniMax-M3's)."""
    get = config.get if isinstance(config, dict) else lambda k, d: getattr(config, k, d)
    return {key: get(key, default) for key, default in MSA_DEFAULTS.items()}


def get_msa_layer_spec(config, msa=None, normalization=None):
    """A TransformerLayer ModuleSpec for GPTModel whose self-attention is MSA.

    Args:
        config (TransformerConfig): the model's config (heads, block_size, num_blocks, dtypes, MLP form).
        msa (dict, optional): MSA keys (MSA_DEFAULTS names); default: read from `config`, then defaults.
        normalization (str, optional): "RMSNorm" or "LayerNorm"; default config.normalization.

    Returns:
        ModuleSpec of a TransformerLayer: input norm, MsaSelfAttention (QKVParallelLinear,
        MsaCoreAttention, RowParallelLinear, index projections), pre-MLP norm, dense MLP.
    """
    keys = msa_settings(msa if msa is not None else config)
    core = ModuleSpec(module=MsaCoreAttention, params=dict(
        total_num_heads=config.num_attention_heads, index_heads=keys["msa_index_heads"],
        index_head_dim=keys["msa_index_head_dim"], top_k=keys["msa_top_k"], init_blocks=keys["msa_init_blocks"],
        local_blocks=keys["msa_local_blocks"], block_size=config.block_size, num_blocks=config.num_blocks,
        dtype=_dtype_name(config.compute_dtype)))
    attention = ModuleSpec(
        module=MsaSelfAttention,
        params=dict(index_heads=keys["msa_index_heads"], index_head_dim=keys["msa_index_head_dim"],
                    rms_norm_eps=config.layernorm_epsilon),
        submodules=MsaSelfAttentionSubmodules(linear_qkv=QKVParallelLinear, core_attention=core,
                                              linear_proj=RowParallelLinear, linear_index_q=ColumnParallelLinear,
                                              linear_index_k=ReplicatedLinear))
    norm = get_norm_cls(normalization or config.normalization)
    return ModuleSpec(module=TransformerLayer, submodules=TransformerLayerSubmodules(
        input_layernorm=norm, self_attention=attention, pre_mlp_layernorm=norm,
        mlp=get_mlp_module_spec(num_experts=None, gated_linear_unit=config.gated_linear_unit, moe_grouped_gemm=False)))
