"""MiniMax-M3's MoE block: sigmoid router with a selection-only bias, routed SwiGLU-OAI experts, a shared expert."""
import mindspore as ms
from mindspore import Parameter, nn, ops
from mindspore.common.initializer import initializer

from .grouped_matmul import GroupedMatmul
from .mlp import SwigluOaiMLP, swiglu_oai


class TopKRouter(nn.Cell):
    r"""Picks num_experts_per_tok experts per token and their mixing weights.

    scores = sigmoid(x W^T) in float32; experts are chosen by scores + e_score_correction_bias (the
    bias balances load and only affects the choice); the chosen experts' scores, renormalised to sum
    to 1 and times routed_scaling_factor, weight their outputs. The router weight is float32 in
    every model dtype, as vLLM keeps it.

    Args:
        config (MiniMaxM3Config): hidden_size, num_experts, num_experts_per_tok, routed_scaling_factor,
            use_routing_bias.

    Inputs:
        - **x** (Tensor) - [T, hidden_size].

    Outputs:
        Tuple of 2 tensors:

        - **expert_ids** - [T, num_experts_per_tok] int32.
        - **weights** - [T, num_experts_per_tok] float32, each row sums to routed_scaling_factor.

    Supported Platforms:
        ``CPU``

    Examples:
        >>> import numpy as np
        >>> import mindspore as ms
        >>> from model_zoo.minimax_m3.model.config import MiniMaxM3Config
        >>> cfg = MiniMaxM3Config(hidden_size=8, num_experts=4, num_experts_per_tok=2)
        >>> ids, w = TopKRouter(cfg)(ms.Tensor(np.ones((3, 8), np.float32)))
        >>> ids.shape, float(w.asnumpy().sum(-1)[0])
        ((3, 2), 2.0)
    """

    def __init__(self, config):
        super().__init__()
        self.top_k = config.num_experts_per_tok
        self.scale = config.routed_scaling_factor
        self.use_bias = config.use_routing_bias
        self.weight = Parameter(initializer("zeros", (config.num_experts, config.hidden_size), ms.float32),
                                name="weight")
        if self.use_bias:
            self.e_score_correction_bias = Parameter(initializer("zeros", (config.num_experts,), ms.float32),
                                                     name="e_score_correction_bias")

    def construct(self, x):
        scores = ops.sigmoid(ops.matmul(ops.cast(x, ms.float32), self.weight.T))
        choice = scores + self.e_score_correction_bias if self.use_bias else scores
        _, expert_ids = ops.topk(choice, self.top_k)
        expert_ids = ops.cast(expert_ids, ms.int32)
        weights = ops.gather_elements(scores, 1, expert_ids)
        weights = weights / ops.sum(weights, -1, keepdim=True) * self.scale
        return expert_ids, weights


class RoutedExperts(nn.Cell):
    r"""The routed experts, stored as transformers stores them: gate_up_proj [E, 2I, H] (gate rows
    first, not interleaved) and down_proj [E, H, I].

    Dispatch, grouped by expert: the T * k (token, choice) pairs are sorted by expert (stable), the
    tokens' rows gathered into that order, and each projection is one grouped matmul
    (layers/grouped_matmul.py) that reads every selected expert's weights once, straight from the
    [E, ...] parameter, for all of that expert's rows; experts nobody chose are not read. Each pair's
    output is then put back in pair order, weighted and summed over k in float32, as before. The
    step's memory is O(T * k * (H + 2I)) activations plus nothing per expert: no per-pair weight
    copy, no capacity, no token dropping, no per-token Python loop, and shapes stay static in the
    number of pairs (one dynamic-shape graph serves every T). The weights are read through
    `expert_weights`, which a subclass keeping other storage (e.g. FP8 bytes) overrides.

    Args:
        config (MiniMaxM3Config): hidden_size, num_experts, moe_intermediate_size, swiglu settings.
        dtype (mindspore.dtype): weight and activation dtype.

    Inputs:
        - **x** (Tensor) - [T, hidden_size].
        - **expert_ids** (Tensor) - [T, k] int32, in [0, num_experts]; the id num_experts marks a pair
          that no expert of this Cell takes (its output is zero; LocalExperts uses it).
        - **weights** (Tensor) - [T, k] float32.

    Outputs:
        Tensor, [T, hidden_size] float32: sum over k of weights * expert(x).

    Supported Platforms:
        ``CPU`` ``Ascend`` (Ascend: MindSpore's GroupedMatmul behind layers/grouped_matmul.py, not run here)

    Examples:
        >>> import numpy as np
        >>> import mindspore as ms
        >>> from model_zoo.minimax_m3.model.config import MiniMaxM3Config
        >>> cfg = MiniMaxM3Config(hidden_size=8, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=4)
        >>> experts = RoutedExperts(cfg, ms.float32)
        >>> out = experts(ms.Tensor(np.ones((3, 8), np.float32)), ms.Tensor([[0, 1]] * 3, ms.int32),
        ...               ms.Tensor(np.ones((3, 2), np.float32)))
        >>> out.shape
        (3, 8)
    """

    def __init__(self, config, dtype):
        super().__init__()
        e, h, i = config.num_experts, config.hidden_size, config.moe_intermediate_size
        self.num_experts = e
        self.hidden, self.intermediate = h, i
        self.alpha, self.limit, self.beta = config.swiglu_alpha, config.swiglu_limit, config.swiglu_beta
        self.gate_up_proj = Parameter(initializer("zeros", (e, 2 * i, h), dtype), name="gate_up_proj")
        self.down_proj = Parameter(initializer("zeros", (e, h, i), dtype), name="down_proj")
        self.grouped_matmul = GroupedMatmul()

    def expert_weights(self, group_sizes):
        """The groups the grouped matmuls run: (gate_up [G, 2I, H], down [G, H, I] in the activation dtype,
        group_sizes [G + 1]) for the pairs' group_sizes [E + 1] (rows per expert, then rows of no expert). Here
        every expert, straight from the parameters; the one place the experts' weights are read, for subclasses
        that store them otherwise (layers/fp8_weights.py)."""
        return self.gate_up_proj, self.down_proj, group_sizes

    def construct(self, x, expert_ids, weights):
        top_k = expert_ids.shape[1]
        flat_ids = expert_ids.reshape((-1,))
        # Pairs in expert order; `inverse` puts them back. (ops.sort is stable on CPU; the grouped matmul's rows
        # do not depend on their neighbours, so the order inside a group does not change any value.)
        _, order = ops.sort(flat_ids)
        _, inverse = ops.sort(order)
        rows = ops.gather(x, ops.floor_div(order, top_k), 0)                                # [T*k, H]
        # Rows per expert, and a last count of pairs with id num_experts (rows of no group, at the end).
        group_sizes = ops.unsorted_segment_sum(ops.ones_like(flat_ids), flat_ids, self.num_experts + 1)
        gate_up_w, down_w, group_sizes = self.expert_weights(group_sizes)
        gate_up = self.grouped_matmul(rows, gate_up_w, group_sizes)                        # [T*k, 2I]
        act = swiglu_oai(gate_up[:, :self.intermediate], gate_up[:, self.intermediate:], self.alpha, self.limit,
                         self.beta)
        out = self.grouped_matmul(act, down_w, group_sizes)                                # [T*k, H]
        out = ops.cast(ops.gather(out, inverse, 0), ms.float32).reshape((-1, top_k, self.hidden))
        return ops.sum(out * ops.expand_dims(weights, -1), 1)


class MiniMaxM3MoE(nn.Cell):
    r"""routed_scaling_factor * (renormalised routed experts) + shared expert, per token.

    Args:
        config (MiniMaxM3Config): the model's settings.
        dtype (mindspore.dtype): weight and activation dtype (the router stays float32).
        experts (nn.Cell, optional): the routed experts, called as RoutedExperts is; default: all of them.
        shared_experts (nn.Cell, optional): the shared expert; default: the whole SwiGLU-OAI MLP. A
            tensor-parallel rank passes its slices of both (parallel/tp_layers.py).

    Inputs:
        - **x** (Tensor) - [T, hidden_size].

    Outputs:
        Tensor, [T, hidden_size], the dtype of `x`.

    Supported Platforms:
        ``CPU``

    Examples:
        >>> import numpy as np
        >>> import mindspore as ms
        >>> from model_zoo.minimax_m3.model.config import MiniMaxM3Config
        >>> cfg = MiniMaxM3Config(hidden_size=8, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=4,
        ...                       shared_intermediate_size=4)
        >>> MiniMaxM3MoE(cfg, ms.float32)(ms.Tensor(np.ones((3, 8), np.float32))).shape
        (3, 8)
    """

    def __init__(self, config, dtype, experts=None, shared_experts=None):
        super().__init__()
        self.gate = TopKRouter(config)
        self.experts = RoutedExperts(config, dtype) if experts is None else experts
        self.shared_experts = shared_experts if shared_experts is not None else SwigluOaiMLP(
            config.hidden_size, config.shared_intermediate_size, config.swiglu_alpha, config.swiglu_limit,
            config.swiglu_beta, dtype)

    def construct(self, x):
        expert_ids, weights = self.gate(x)
        routed = self.experts(x, expert_ids, weights)
        return ops.cast(routed, x.dtype) + self.shared_experts(x)
