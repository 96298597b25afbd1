"""MiniMax-M3's dense MLP and its SwiGLU-OAI activation (also the shared and routed experts')."""
from mindspore import nn, ops

from .linear import linear


def swiglu_oai(gate, up, alpha, limit, beta):
    """(clamp(up, -limit, limit) + beta) * g * sigmoid(alpha * g), g = min(gate, limit)."""
    gate = ops.minimum(gate, limit)
    up = ops.clamp(up, -limit, limit)
    return (up + beta) * (gate * ops.sigmoid(gate * alpha))


class SwigluOaiMLP(nn.Cell):
    r"""down(swiglu_oai(gate, up)) with gate and up from one fused projection, gate rows first.

    The dense layers' MLP and the MoE's shared expert. The fused [2 * intermediate, hidden] weight is
    transformers' ``gate_up_proj`` (the release stores ``gate_proj`` and ``up_proj``: stacked by the
    loader), and vLLM's MergedColumnParallelLinear.

    Args:
        hidden_size (int): model width.
        intermediate_size (int): inner width.
        alpha (float): sigmoid gain. limit (float): clamp bound. beta (float): offset added to up.
        dtype (mindspore.dtype): weight and activation dtype.

    Inputs:
        - **x** (Tensor) - [T, hidden_size].

    Outputs:
        Tensor, [T, hidden_size].

    Supported Platforms:
        ``CPU``

    Examples:
        >>> import numpy as np
        >>> import mindspore as ms
        >>> mlp = SwigluOaiMLP(8, 16, 1.702, 7.0, 1.0, ms.float32)
        >>> mlp(ms.Tensor(np.ones((2, 8), np.float32))).shape
        (2, 8)
    """

    def __init__(self, hidden_size, intermediate_size, alpha, limit, beta, dtype):
        super().__init__()
        self.intermediate = intermediate_size
        self.alpha, self.limit, self.beta = alpha, limit, beta
        self.gate_up_proj = linear(hidden_size, 2 * intermediate_size, dtype)
        self.down_proj = linear(intermediate_size, hidden_size, dtype)

    def construct(self, x):
        gate_up = self.gate_up_proj(x)
        act = swiglu_oai(gate_up[:, :self.intermediate], gate_up[:, self.intermediate:], self.alpha, self.limit,
                         self.beta)
        return self.down_proj(act)
