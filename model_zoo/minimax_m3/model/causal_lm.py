"""MiniMaxM3ForCausalLM: MiniMax-M3's text model as one MindSpore Cell over paged caches."""
import math

import mindspore as ms
from mindspore import Parameter, nn, ops
from mindspore.common.initializer import initializer

from ..checkpoint.loader import inspect_checkpoint, load_checkpoint
from ..layers.batch_layout import BatchLayout
from ..layers.fp8_weights import keep_fp8
from ..layers.linear import linear
from ..layers.m3_attention import M3Attention
from ..layers.mlp import SwigluOaiMLP
from ..layers.moe import MiniMaxM3MoE
from ..layers.msa_config import CPU_DTYPES
from ..layers.rms_norm import GemmaRMSNorm
from .config import MiniMaxM3Config

WEIGHT_MODES = ("dequantize", "fp8")
# The e8m0 scales of a weight kept as MXFP8 bytes: the weight's name + this (layers/fp8_weights.py).
FP8_SCALE_SUFFIX = "_scale_inv"


class MiniMaxM3DecoderLayer(nn.Cell):
    r"""x + attention(input_layernorm(x)), then + mlp(post_attention_layernorm(.)); Gemma norms.

    Args:
        config (MiniMaxM3Config): the model's settings.
        layer_index (int): which layer: its attention ("dense"/"msa") and MLP ("dense"/"moe") type.
        dtype (str): "float32" or "float16".
        num_pages (int): cache pages of this layer.

    Inputs:
        - **hidden_states** (Tensor) - [T, hidden_size].
        - the step metadata and layout, as M3Attention.

    Outputs:
        Tensor [T, hidden_size]; an MSA layer returns a tuple of it and its block selection.

    Supported Platforms:
        ``CPU``

    Examples:
        >>> from model_zoo.minimax_m3.model.config import MiniMaxM3Config
        >>> cfg = MiniMaxM3Config(hidden_size=32, num_hidden_layers=1, attention_types=("dense",), mlp_types=("dense",),
        ...                       num_attention_heads=4, num_key_value_heads=2, head_dim=16, rotary_dim=8,
        ...                       dense_intermediate_size=64, block_size=16)
        >>> MiniMaxM3DecoderLayer(cfg, 0, "float32", num_pages=4).is_msa
        False
    """

    def __init__(self, config, layer_index, dtype, num_pages):
        super().__init__()
        ms_dtype = CPU_DTYPES[dtype]
        self.is_msa = config.attention_types[layer_index] == "msa"
        self.input_layernorm = GemmaRMSNorm(config.hidden_size, config.rms_norm_eps, ms_dtype)
        self.post_attention_layernorm = GemmaRMSNorm(config.hidden_size, config.rms_norm_eps, ms_dtype)
        self.self_attn = M3Attention(config, layer_index, dtype, num_pages)
        if config.mlp_types[layer_index] == "moe":
            self.mlp = MiniMaxM3MoE(config, ms_dtype)
        else:
            self.mlp = SwigluOaiMLP(config.hidden_size, config.dense_intermediate_size, config.swiglu_alpha,
                                    config.swiglu_limit, config.swiglu_beta, ms_dtype)

    def construct(self, hidden_states, positions, slot_mapping, batch_valid_length, q_seq_lens, block_tables, table,
                  token_request, visible_end):
        attended = self.self_attn(self.input_layernorm(hidden_states), positions, slot_mapping, batch_valid_length,
                                  q_seq_lens, block_tables, table, token_request, visible_end)
        if self.is_msa:
            attended, selection = attended
        hidden_states = hidden_states + self.branch_sum(attended)
        hidden_states = hidden_states + self.branch_sum(self.mlp(self.post_attention_layernorm(hidden_states)))
        if self.is_msa:
            return hidden_states, selection
        return hidden_states

    def branch_sum(self, x):
        """A branch's output (attention, MLP) as the residual adds it: here itself; the tensor-parallel layer
        (parallel/tp_layers.py) sums the ranks' parts."""
        return x


class MiniMaxM3ForCausalLM(nn.Cell):
    r"""MiniMax-M3's text model: embedding, the config's layer plan (dense / MSA attention, dense MLP /
    MoE), final Gemma RMSNorm, LM head (tied to the embedding when the config says so).

    Every layer owns paged K/V caches (and MSA layers an index-key cache) of ``cache_tokens`` tokens in
    pages of ``config.block_size``, written in place: drive it with MindFormers-style step metadata
    (``serving.paging.PagedBatcher``). One call serves prefill, chunked prefill, decode, speculative
    and mixed batches; in GRAPH_MODE, :meth:`use_dynamic_shapes` makes one compiled graph serve them all.

    Args:
        config (MiniMaxM3Config): the model's settings.
        dtype (str): parameter, activation and cache dtype, "float32" or "float16" (MindSpore 2.10 has no
            CPU bfloat16 MatMul/Gather/Exp: bf16 checkpoints are cast). Default: ``"float32"``.
        cache_tokens (int): capacity of each layer's caches, in tokens (rounded up to whole pages).
            Default: ``4096``.
        layer_factory (callable, optional): builds decoder layer i as ``layer_factory(config, i, dtype,
            num_pages)``; the tensor-parallel model (``parallel/``) passes its rank's layers. Default: ``None``
            (MiniMaxM3DecoderLayer).

    Inputs:
        - **input_ids** (Tensor) - [T] int32, the step's tokens packed request after request.
        - **batch_valid_length** (Tensor) - [B] int32, KV length of each request after the step.
        - **q_seq_lens** (Tensor) - [B] int32, new tokens per request.
        - **block_tables** (Tensor) - [B, MB] int32, logical block -> cache page.
        - **slot_mapping** (Tensor) - [T] int32, page * block_size + offset per token (-1: do not store).

    Outputs:
        Tuple: **logits** [T, vocab_size] float32 for every token, then one [T, index_heads, top_k]
        int32 selection per MSA layer (ascending layer order, best block first, -1 = not selected).

    Raises:
        TypeError: `config` is not a MiniMaxM3Config, or `dtype` is not "float32"/"float16".
        ValueError: `cache_tokens` is not a positive int.

    Supported Platforms:
        ``CPU``

    Examples:
        >>> from model_zoo.minimax_m3.model.config import MiniMaxM3Config
        >>> cfg = MiniMaxM3Config(vocab_size=64, hidden_size=32, num_hidden_layers=2, attention_types=("dense", "msa"),
        ...                       mlp_types=("dense", "moe"), num_attention_heads=4, num_key_value_heads=2,
        ...                       head_dim=16, rotary_dim=8, dense_intermediate_size=64, moe_intermediate_size=16,
        ...                       shared_intermediate_size=16, num_experts=4, num_experts_per_tok=2,
        ...                       index_heads=2, index_head_dim=16, block_size=16, top_k=2)
        >>> model = MiniMaxM3ForCausalLM(cfg, cache_tokens=64)
        >>> model.num_pages
        4
    """

    def __init__(self, config, dtype="float32", *, cache_tokens=4096, layer_factory=None):
        super().__init__()
        if not isinstance(config, MiniMaxM3Config):
            raise TypeError(f"config must be a MiniMaxM3Config, got {type(config).__name__}")
        if dtype not in CPU_DTYPES:
            raise TypeError(f"dtype must be one of {sorted(CPU_DTYPES)}, got {dtype!r}")
        if isinstance(cache_tokens, bool) or not isinstance(cache_tokens, int) or cache_tokens <= 0:
            raise ValueError(f"cache_tokens must be a positive int, got {cache_tokens!r}")
        self.config = config
        self.dtype = dtype
        self.num_pages = math.ceil(cache_tokens / config.block_size)
        ms_dtype = CPU_DTYPES[dtype]
        self.embed_tokens = Parameter(initializer("zeros", (config.vocab_size, config.hidden_size), ms_dtype),
                                      name="embed_tokens")
        make_layer = layer_factory or MiniMaxM3DecoderLayer
        self.layers = nn.CellList([make_layer(config, i, dtype, self.num_pages)
                                   for i in range(config.num_hidden_layers)])
        self.msa_flags = tuple(kind == "msa" for kind in config.attention_types)
        self.norm = GemmaRMSNorm(config.hidden_size, config.rms_norm_eps, ms_dtype)
        self.tied = config.tie_word_embeddings
        if not self.tied:
            self.lm_head = linear(config.hidden_size, config.vocab_size, ms_dtype)
        self.layout = BatchLayout()

    @classmethod
    def from_pretrained(cls, checkpoint_dir, dtype="float32", *, weights="dequantize", progress=True, **kwargs):
        """Builds the model from ``checkpoint_dir/config.json`` and loads its safetensors
        (:func:`model_zoo.minimax_m3.checkpoint.load_checkpoint`). kwargs go to the constructor.

        `weights` says what becomes of an MXFP8 checkpoint's quantized weights: ``"dequantize"`` (default) loads
        them in `dtype`; ``"fp8"`` keeps every weight stored wholly in FP8 as its bytes and scales and
        dequantizes it at run time (``layers/fp8_weights.py``), about half of bf16's resident bytes. A float
        checkpoint loads the same either way."""
        if weights not in WEIGHT_MODES:
            raise ValueError(f"weights must be one of {WEIGHT_MODES}, got {weights!r}")
        if weights == "fp8" and cls is not MiniMaxM3ForCausalLM:
            raise ValueError("--weights fp8 runs on the single-process model (not with --tp / --block-split)")
        model = cls(MiniMaxM3Config.from_pretrained(checkpoint_dir), dtype, **kwargs)
        if weights == "fp8":
            plan = inspect_checkpoint(model, checkpoint_dir)[0]
            stored_float = {p.param for p in plan if p.scale is None}
            keep_fp8(model, sorted({p.param for p in plan if p.scale is not None} - stored_float))
        load_checkpoint(model, checkpoint_dir, progress=progress)
        return model

    def weights(self):
        """{name: Parameter} of the model's weights (caches and MXFP8 scales excluded), transformers' text-model
        names without the leading ``model.`` (``layers.3.mlp.experts.gate_up_proj``, ``lm_head.weight``, ...)."""
        return {name: p for name, p in self.parameters_and_names()
                if not name.endswith(("_cache", FP8_SCALE_SUFFIX))}

    def fp8_scales(self):
        """{weight name: its e8m0 scale Parameter} of the weights kept as MXFP8 bytes (empty unless
        ``from_pretrained(..., weights="fp8")``)."""
        return {name[:-len(FP8_SCALE_SUFFIX)]: p for name, p in self.parameters_and_names()
                if name.endswith(FP8_SCALE_SUFFIX)}

    def use_dynamic_shapes(self):
        """Marks every input dynamic, so GRAPH_MODE compiles one graph for prefill, decode and any mix."""
        dyn = lambda rank: ms.Tensor(shape=[None] * rank, dtype=ms.int32)  # noqa: E731
        self.set_inputs(dyn(1), dyn(1), dyn(1), dyn(2), dyn(1))

    def construct(self, input_ids, batch_valid_length, q_seq_lens, block_tables, slot_mapping):
        hidden_states = ops.gather(self.embed_tokens, input_ids, 0)
        _, _, table, token_request, visible_end = self.layout(slot_mapping, batch_valid_length, q_seq_lens,
                                                              block_tables)
        # A token's position is its causal horizon - 1 (padding tokens: 0, they attend to nothing).
        positions = ops.maximum(visible_end - 1, ops.zeros_like(visible_end))
        selections = ()
        for layer in self.layers:
            out = layer(hidden_states, positions, slot_mapping, batch_valid_length, q_seq_lens, block_tables, table,
                        token_request, visible_end)
            if isinstance(out, tuple):
                hidden_states, selection = out
                selections = selections + (selection,)
            else:
                hidden_states = out
        hidden_states = self.norm(hidden_states)
        if self.tied:
            logits = ops.matmul(hidden_states, self.embed_tokens.T)
        else:
            logits = self.lm_head(hidden_states)
        return (ops.cast(logits, ms.float32),) + selections
