"""MiniMax-M3's layers on one tensor-parallel rank, with mindspore.communication collectives.

Head parallel attention (column-parallel q/k/v and index q, the shared index key replicated, row-parallel o),
column/row-parallel dense MLP and shared expert, routed experts split by contiguous ranges, embedding / norms /
router / lm_head replicated. Every layer ends its attention and its MLP with one AllReduce (sum) of
[T, hidden]: the only collectives of a step (counted in the graph: collectives.CountedCollective). Which slice
of a checkpoint tensor a rank holds is ``shard_rules``.
"""
import dataclasses

from mindspore import nn, ops

from ..layers.m3_attention import M3Attention
from ..layers.mlp import SwigluOaiMLP
from ..layers.moe import MiniMaxM3MoE, RoutedExperts
from ..layers.msa_config import CPU_DTYPES
from ..layers.rms_norm import GemmaRMSNorm
from ..model.causal_lm import MiniMaxM3DecoderLayer
from .collectives import CountedCollective, ParallelCausalLM

# (config field, what it counts, whether the model uses it): every used count must divide by the TP size; the rule
# is checked before any process starts (launch.py) and again by every rank.
SPLIT_FIELDS = (
    ("num_attention_heads", "query heads", lambda c: True),
    ("num_key_value_heads", "KV heads", lambda c: True),
    ("index_heads", "index heads", lambda c: bool(c.msa_layers)),
    ("dense_intermediate_size", "dense MLP width", lambda c: "dense" in c.mlp_types),
    ("shared_intermediate_size", "shared expert width", lambda c: "moe" in c.mlp_types),
    ("num_experts", "routed experts", lambda c: "moe" in c.mlp_types),
)


def check_tp_size(config, tp_size):
    """Raises ValueError naming every count of `config` that `tp_size` does not divide (the rule: head parallel
    splits query, KV and index heads, the MLP widths and the experts evenly, whole heads per rank)."""
    if isinstance(tp_size, bool) or not isinstance(tp_size, int) or tp_size < 1:
        raise ValueError(f"tp_size must be a positive int, got {tp_size!r}")
    bad = [f"{label} {getattr(config, field)} ({field})" for field, label, used in SPLIT_FIELDS
           if used(config) and getattr(config, field) % tp_size]
    if bad:
        raise ValueError(f"--tp {tp_size}: tensor parallelism splits every head count, MLP width and the experts "
                         f"evenly over the ranks, and {tp_size} does not divide " + ", ".join(bad))


def local_config(config, tp_size):
    """The config one rank's attention and MLP Cells are built from: its heads and widths (experts stay global:
    the router is replicated)."""
    check_tp_size(config, tp_size)
    return dataclasses.replace(
        config, num_attention_heads=config.num_attention_heads // tp_size,
        num_key_value_heads=config.num_key_value_heads // tp_size, index_heads=max(1, config.index_heads // tp_size),
        dense_intermediate_size=max(1, config.dense_intermediate_size // tp_size),
        shared_intermediate_size=max(1, config.shared_intermediate_size // tp_size))


class LocalExperts(RoutedExperts):
    r"""This rank's contiguous range of routed experts, [rank * E/R, (rank + 1) * E/R).

    (token, choice) pairs routed elsewhere take the id E/R, which RoutedExperts' grouped dispatch sorts to the
    end as rows of no group: they are not multiplied (their output is zero, and their weight is set to 0 as
    well, which is what keeps them out on Ascend, where MindSpore's GroupedMatmul computes them with the last
    expert). So the rank's output is its experts' share of the routed sum, the AllReduce adds the shares, and
    each rank multiplies only the pairs of its own experts: this splits the routed FLOPs and the expert memory.
    Shapes stay those of all T * k pairs (graph mode: no data-dependent shapes).

    Args:
        config (MiniMaxM3Config): the global config. rank (int), tp_size (int): this rank and the TP size.
        dtype (mindspore.dtype): weight dtype.

    Inputs:
        - **x** (Tensor) - [T, hidden_size]. **expert_ids** (Tensor) - [T, k] int32, global ids.
        - **weights** (Tensor) - [T, k] float32.

    Outputs:
        Tensor [T, hidden_size] float32: the sum over the pairs routed to this rank's experts.

    Supported Platforms:
        ``CPU``

    Examples:
        >>> import numpy as np
        >>> import mindspore as ms
        >>> from model_zoo.minimax_m3.model.config import MiniMaxM3Config
        >>> cfg = MiniMaxM3Config(hidden_size=8, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=4)
        >>> LocalExperts(cfg, 1, 2, ms.float32).gate_up_proj.shape
        (2, 8, 8)
    """

    def __init__(self, config, rank, tp_size, dtype):
        self.num_local = config.num_experts // tp_size
        super().__init__(dataclasses.replace(config, num_experts=self.num_local,
                                             num_experts_per_tok=min(config.num_experts_per_tok, self.num_local)),
                         dtype)
        self.first = rank * self.num_local

    def construct(self, x, expert_ids, weights):
        local = expert_ids - self.first
        mine = ops.logical_and(local >= 0, local < self.num_local)
        local = ops.select(mine, local, ops.zeros_like(local) + self.num_local)     # another rank's: no group here
        weights = weights * ops.cast(mine, weights.dtype)
        return super().construct(x, local, weights)


def tp_moe(config, rank, tp_size, dtype):
    """MiniMaxM3MoE on one rank: the replicated router, this rank's experts, its column/row slice of the
    shared expert. Its output is the rank's partial sum (the decoder layer all-reduces it)."""
    shared = SwigluOaiMLP(config.hidden_size, config.shared_intermediate_size // tp_size, config.swiglu_alpha,
                          config.swiglu_limit, config.swiglu_beta, dtype)
    return MiniMaxM3MoE(config, dtype, experts=LocalExperts(config, rank, tp_size, dtype), shared_experts=shared)


class TPDecoderLayer(MiniMaxM3DecoderLayer):
    r"""A decoder layer on one rank: the rank's heads and MLP slice, each branch closed by an AllReduce (sum).

    Args:
        config (MiniMaxM3Config): the global config. layer_index (int). dtype (str): "float32"/"float16".
        num_pages (int): cache pages. rank (int), tp_size (int): keyword-only.

    Inputs:
        As MiniMaxM3DecoderLayer.

    Outputs:
        As MiniMaxM3DecoderLayer; the same values on every rank.

    Supported Platforms:
        ``CPU`` ``Ascend`` (AllReduce over HCCL; not run here)

    Examples:
        >>> # needs mindspore.communication.init() under msrun: see parallel/worker.py
    """

    def __init__(self, config, layer_index, dtype, num_pages, *, rank, tp_size):
        nn.Cell.__init__(self)        # the parent's __init__ would build full-size Cells first
        ms_dtype = CPU_DTYPES[dtype]
        self.is_msa = config.attention_types[layer_index] == "msa"
        self.input_layernorm = GemmaRMSNorm(config.hidden_size, config.rms_norm_eps, ms_dtype)
        self.post_attention_layernorm = GemmaRMSNorm(config.hidden_size, config.rms_norm_eps, ms_dtype)
        part = local_config(config, tp_size)
        # The rank's heads as an M3Attention of H/R query, KV/R KV and I/R index heads: head groups are contiguous
        # (BlockSparseAttention), so the rank's query heads use only its own index heads' selections.
        self.self_attn = M3Attention(part, layer_index, dtype, num_pages)
        if config.mlp_types[layer_index] == "moe":
            self.mlp = tp_moe(config, rank, tp_size, ms_dtype)
        else:
            self.mlp = SwigluOaiMLP(config.hidden_size, part.dense_intermediate_size, config.swiglu_alpha,
                                    config.swiglu_limit, config.swiglu_beta, ms_dtype)
        # Sum over the world group (CPU supports sum only, fp32/fp16); one Cell for both calls, counting both.
        self.all_reduce = CountedCollective(ops.AllReduce(), ms_dtype)

    def branch_sum(self, x):
        """The rank's part of a branch, summed over the ranks (MiniMaxM3DecoderLayer.construct calls it)."""
        return self.all_reduce(x)


def build_tp_model(config, dtype, cache_tokens, rank, tp_size):
    """MiniMaxM3ForCausalLM (a ParallelCausalLM) with this rank's TPDecoderLayers (embedding, final norm and
    lm_head replicated)."""
    check_tp_size(config, tp_size)
    if not 0 <= rank < tp_size:
        raise ValueError(f"rank must be in [0, {tp_size}), got {rank}")

    def make_layer(cfg, i, dt, num_pages):
        return TPDecoderLayer(cfg, i, dt, num_pages, rank=rank, tp_size=tp_size)
    return ParallelCausalLM(config, dtype, cache_tokens=cache_tokens, layer_factory=make_layer)


def step_collective_bytes(config, dtype, tokens):
    """Bytes each rank sends into AllReduce in a step of `tokens` tokens: two [T, hidden] sums per layer."""
    return 2 * config.num_hidden_layers * tokens * config.hidden_size * (4 if dtype == "float32" else 2)


def shard_rules(config, rank, tp_size):
    """How rank `rank` slices each full checkpoint tensor. Returns a callable mapping a weight name (MiniMaxM3ForCausalLM.weights()) to one of
    ("full",), ("axis", axis, start, stop) or ("gate_up", half, start, stop) (a fused [2I, H] gate-then-up
    weight: rows start:stop of each half).
    """
    def chunk(n):
        return rank * (n // tp_size), (rank + 1) * (n // tp_size)

    def rule(param):
        if not param.startswith("layers."):
            return ("full",)
        layer, rest = param.split(".", 2)[1:]
        layer = int(layer)
        hd = config.head_dim
        if rest in ("self_attn.q_proj.weight",):
            return ("axis", 0) + tuple(x * hd for x in chunk(config.num_attention_heads))
        if rest in ("self_attn.k_proj.weight", "self_attn.v_proj.weight"):
            return ("axis", 0) + tuple(x * hd for x in chunk(config.num_key_value_heads))
        if rest == "self_attn.o_proj.weight":
            return ("axis", 1) + tuple(x * hd for x in chunk(config.num_attention_heads))
        if rest == "self_attn.indexer.q_proj.weight":
            return ("axis", 0) + tuple(x * config.index_head_dim for x in chunk(config.index_heads))
        if rest in ("mlp.experts.gate_up_proj", "mlp.experts.down_proj"):
            return ("axis", 0) + chunk(config.num_experts)
        width = config.shared_intermediate_size if config.mlp_types[layer] == "moe" else \
            config.dense_intermediate_size
        if rest in ("mlp.gate_up_proj.weight", "mlp.shared_experts.gate_up_proj.weight"):
            return ("gate_up", width) + chunk(width)
        if rest in ("mlp.down_proj.weight", "mlp.shared_experts.down_proj.weight"):
            return ("axis", 1) + chunk(width)
        return ("full",)        # norms, the router, the shared index key projection
    return rule


def full_shape(local_shape, rule, tp_size):
    """The checkpoint (unsharded) shape of a weight from its rank-local shape and rule."""
    shape = list(local_shape)
    if rule[0] == "axis":
        shape[rule[1]] *= tp_size
    elif rule[0] == "gate_up":
        shape[0] = 2 * rule[1]
    return tuple(shape)


__all__ = ["check_tp_size", "local_config", "LocalExperts", "tp_moe", "TPDecoderLayer", "build_tp_model",
           "step_collective_bytes", "shard_rules", "full_shape"]
