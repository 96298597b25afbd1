"""PartialRope: MiniMax-M3's rotary embedding, NeoX split-half on the leading rotary_dim channels."""
import numpy as np
import mindspore as ms
from mindspore import Tensor, nn, ops


class PartialRope(nn.Cell):
    r"""Rotates channels [0, rotary_dim) of every head by the token's position; the rest pass through.

    Channel i < rotary_dim / 2 pairs with i + rotary_dim / 2 (NeoX / "rotate half" layout) at frequency
    theta^(-2i / rotary_dim). The angles are position * frequency in float32, as transformers and
    vLLM compute them, so positions up to the context length rotate identically.

    Args:
        head_dim (int): channels per head.
        rotary_dim (int): rotated channels, even, at most head_dim.
        theta (float): RoPE base.

    Inputs:
        - **x** (Tensor) - [T, N, head_dim].
        - **positions** (Tensor) - [T] int32, each token's absolute position in its sequence.

    Outputs:
        Tensor, the dtype and shape of `x`.

    Supported Platforms:
        ``CPU``

    Examples:
        >>> import numpy as np
        >>> import mindspore as ms
        >>> rope = PartialRope(8, 4, 10000.0)
        >>> x = ms.Tensor(np.ones((2, 1, 8), np.float32))
        >>> rope(x, ms.Tensor([0, 1], ms.int32)).asnumpy()[0, 0]
        array([1., 1., 1., 1., 1., 1., 1., 1.], dtype=float32)
    """

    def __init__(self, head_dim, rotary_dim, theta):
        super().__init__()
        self.half = rotary_dim // 2
        self.rotary_dim = rotary_dim
        self.partial = rotary_dim < head_dim
        # float64 then rounded once: the float32 value transformers' torch.pow gives for these exponents.
        exponents = np.arange(0, rotary_dim, 2, dtype=np.float32).astype(np.float64) / rotary_dim
        self.inv_freq = Tensor((1.0 / theta ** exponents).astype(np.float32).reshape(1, -1), ms.float32)

    def construct(self, x, positions):
        freqs = ops.cast(positions, ms.float32).reshape((-1, 1)) * self.inv_freq      # [T, R/2]
        angles = ops.concat((freqs, freqs), -1).reshape((-1, 1, self.rotary_dim))
        cos = ops.cast(ops.cos(angles), x.dtype)
        sin = ops.cast(ops.sin(angles), x.dtype)
        rot = x[..., :self.rotary_dim]
        rotated = ops.concat((-rot[..., self.half:], rot[..., :self.half]), -1)
        out = rot * cos + rotated * sin
        if self.partial:
            out = ops.concat((out, x[..., self.rotary_dim:]), -1)
        return out
