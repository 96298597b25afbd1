"""RMSNorm over the last axis, computed in float32 whatever the activation dtype."""
import mindspore as ms
from mindspore import Parameter, nn, ops
from mindspore.common.initializer import initializer


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
        # float32 statistics: a float16 mean of squares overflows for activations above ~256.
        x32 = ops.cast(x, ms.float32)
        scale = ops.rsqrt(ops.mean(x32 * x32, -1, keep_dims=True) + self.eps)
        return ops.cast(x32 * scale, self.dtype) * self.weight
