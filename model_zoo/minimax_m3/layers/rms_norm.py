"""RMSNorm over the last axis, computed in float32 whatever the activation dtype."""
import mindspore as ms
from mindspore import Parameter, nn, ops
from mindspore.common.initializer import initializer


def _normalized_fp32(x, eps):
    # float32 statistics: a float16 mean of squares overflows for activations above ~256.
    x32 = ops.cast(x, ms.float32)
    return x32 * ops.rsqrt(ops.mean(x32 * x32, -1, keep_dims=True) + eps)


class RMSNorm(nn.Cell):
    r"""y = x / sqrt(mean(x^2) + eps) * weight, over the last axis.

    Args:
        dim (int): size of the last axis.
        eps (float): added to the mean square. Default: ``1e-6``.
        dtype (mindspore.dtype): weight and output dtype. Default: ``mindspore.float32``.

    Inputs:
        - **x** (Tensor) - [..., dim].

    Outputs:
        Tensor of `dtype`, the shape of `x`.

    Supported Platforms:
        ``CPU``

    Examples:
        >>> import numpy as np
        >>> import mindspore as ms
        >>> RMSNorm(4)(ms.Tensor(np.full((2, 4), 3.0, np.float32))).asnumpy()[0].round(4)
        array([1., 1., 1., 1.], dtype=float32)
    """

    def __init__(self, dim, eps=1e-6, dtype=ms.float32):
        super().__init__()
        self.eps = eps
        self.dtype = dtype
        self.weight = Parameter(initializer("ones", (dim,), dtype), name="weight")

    def construct(self, x):
        return ops.cast(_normalized_fp32(x, self.eps), self.dtype) * self.weight


class GemmaRMSNorm(nn.Cell):
    r"""Gemma's RMSNorm, as MiniMax-M3 uses it everywhere: y = x / sqrt(mean(x^2) + eps) * (1 + weight).

    Statistics, the scale and the product are float32 (transformers casts back only at the end, so a
    float16 model rounds once); the weight is stored as the offset from 1 and starts at zero.

    Args:
        dim (int): size of the last axis.
        eps (float): added to the mean square. Default: ``1e-6``.
        dtype (mindspore.dtype): weight and output dtype. Default: ``mindspore.float32``.

    Inputs:
        - **x** (Tensor) - [..., dim].

    Outputs:
        Tensor of `dtype`, the shape of `x`.

    Supported Platforms:
        ``CPU``

    Examples:
        >>> import numpy as np
        >>> import mindspore as ms
        >>> GemmaRMSNorm(4)(ms.Tensor(np.full((2, 4), 3.0, np.float32))).asnumpy()[0].round(4)
        array([1., 1., 1., 1.], dtype=float32)
    """

    def __init__(self, dim, eps=1e-6, dtype=ms.float32):
        super().__init__()
        self.eps = eps
        self.dtype = dtype
        self.weight = Parameter(initializer("zeros", (dim,), dtype), name="weight")

    def construct(self, x):
        return ops.cast(_normalized_fp32(x, self.eps) * (1.0 + ops.cast(self.weight, ms.float32)), self.dtype)
