"""Weights kept as MXFP8 bytes and dequantized at run time (``--weights fp8``): about half of bf16's resident bytes.

A kept weight is two uint8 Parameters: the fp8 e4m3fn bytes in the weight's own shape, and its e8m0 scale bytes,
one per 32 input columns, under the weight's name + ``_scale_inv`` (``causal_lm.FP8_SCALE_SUFFIX``, by which
``MiniMaxM3ForCausalLM.fp8_scales`` pairs them). Each call dequantizes them exactly as the loader does
(checkpoint/mxfp8.py: the product exact in float32, rounded once to the model's dtype; here a lookup in the table
of all 256 x 256 products), so a model with kept weights computes what the same model loaded in its dtype
computes. The transient is one weight (for the MoE: the experts the step chose) in the model's dtype, with the
bytes' int32 cast and the int32 lookup index: 8.4-9.6 bytes per dequantized value measured on CPU (model_zoo README,
*Memory, by parameter count*).
"""
import numpy as np
import mindspore as ms
from mindspore import Parameter, Tensor, nn, ops
from mindspore.common.initializer import initializer

from ..checkpoint import mxfp8
from .moe import RoutedExperts


_PRODUCTS = {}


def _products(dtype):
    """Every e8m0 scale times every fp8 value, [256 * 256] in `dtype`, at index scale * 256 + fp8 byte: computed
    once by numpy (exact in float32, subnormals included, then rounded once), shared by every Mxfp8Dequantize of
    that dtype. A lookup instead of a multiply in the graph: MindSpore's fused CPU kernels may flush a subnormal
    float32 product to zero."""
    if dtype not in _PRODUCTS:
        with np.errstate(over="ignore"):
            table = (mxfp8.E8M0_VALUES[:, None] * mxfp8.E4M3_VALUES[None, :]).reshape(-1)
            _PRODUCTS[dtype] = Tensor(table.astype(ms.dtype_to_nptype(dtype)))
    return _PRODUCTS[dtype]


class Mxfp8Dequantize(nn.Cell):
    r"""fp8 e4m3fn bytes and their e8m0 scale bytes -> the weight in `dtype`.

    Args:
        dtype (mindspore.dtype): the model's dtype.

    Inputs:
        - **q** (Tensor) - uint8 [..., out, in], in a multiple of 32.
        - **s** (Tensor) - uint8 [..., out, in / 32].

    Outputs:
        Tensor [..., out, in] of `dtype`: e4m3(q) * 2^(s - 127), exact in float32, then rounded once (a lookup in
        the table of all 65,536 products).

    Supported Platforms:
        ``CPU``

    Examples:
        >>> import numpy as np
        >>> import mindspore as ms
        >>> q = ms.Tensor(np.full((1, 32), 0x38, np.uint8))        # e4m3 1.0
        >>> s = ms.Tensor(np.array([[128]], np.uint8))              # 2^1
        >>> float(Mxfp8Dequantize(ms.float32)(q, s)[0, 0])
        2.0
    """

    def __init__(self, dtype):
        super().__init__()
        self.products = _products(dtype)

    def construct(self, q, s):
        # index = scale * 256 | byte (= scale * 256 + byte), the scales' part broadcast over their 32 columns: the
        # full-size temporaries are the bytes' int32 cast and the index. A bitwise_or, not an add: MindSpore 2.10's
        # CPU int32 Add with a broadcast operand took about 6 full-size int32 buffers (measured; README, *Memory*).
        shape = q.shape
        blocks = shape[:-1] + (shape[-1] // mxfp8.BLOCK, mxfp8.BLOCK)
        index = ops.bitwise_or(ops.cast(q.reshape(blocks), ms.int32), ops.expand_dims(ops.cast(s, ms.int32) * 256, -1))
        return ops.gather(self.products, index, 0).reshape(shape)


def _fp8_parameter(shape, name):
    return Parameter(initializer("zeros", shape, ms.uint8), name=name, requires_grad=False)


class Mxfp8Dense(nn.Cell):
    r"""``nn.Dense(in_channels, out_channels, has_bias=False)`` whose weight stays MXFP8 bytes.

    Args:
        in_channels (int): a multiple of 32. out_channels (int).
        dtype (mindspore.dtype): the model's dtype (of the dequantized weight and of the output).

    Inputs:
        - **x** (Tensor) - [T, in_channels].

    Outputs:
        Tensor [T, out_channels]: x @ W^T with W dequantized.

    Supported Platforms:
        ``CPU``

    Examples:
        >>> import numpy as np
        >>> import mindspore as ms
        >>> dense = Mxfp8Dense(32, 4, ms.float32)
        >>> dense(ms.Tensor(np.ones((2, 32), np.float32))).shape
        (2, 4)
    """

    def __init__(self, in_channels, out_channels, dtype):
        super().__init__()
        self.weight = _fp8_parameter((out_channels, in_channels), "weight")
        self.weight_scale_inv = _fp8_parameter(mxfp8.scale_shape((out_channels, in_channels)), "weight_scale_inv")
        self.dequantize = Mxfp8Dequantize(dtype)
        self.matmul = ops.MatMul(transpose_b=True)

    def construct(self, x):
        return self.matmul(x, self.dequantize(self.weight, self.weight_scale_inv))


class Mxfp8RoutedExperts(RoutedExperts):
    r"""RoutedExperts whose gate_up_proj [E, 2I, H] and down_proj [E, H, I] stay MXFP8 bytes; each call
    dequantizes only the experts the step's pairs chose (the run-time cost of halving the resident bytes:
    decode dequantizes top-k experts, a long prefill at most all of them).

    Args:
        config (MiniMaxM3Config): as RoutedExperts. dtype (mindspore.dtype): the model's dtype.

    Inputs:
        As RoutedExperts.

    Outputs:
        As RoutedExperts.

    Supported Platforms:
        ``CPU``

    Examples:
        >>> import numpy as np
        >>> import mindspore as ms
        >>> from model_zoo.minimax_m3.model.config import MiniMaxM3Config
        >>> cfg = MiniMaxM3Config(hidden_size=32, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32)
        >>> experts = Mxfp8RoutedExperts(cfg, ms.float32)
        >>> experts.gate_up_proj.dtype, experts.gate_up_proj_scale_inv.shape
        (mindspore.uint8, (4, 64, 1))
    """

    def __init__(self, config, dtype):
        super().__init__(config, dtype)
        e, h, i = config.num_experts, config.hidden_size, config.moe_intermediate_size
        self.gate_up_proj = _fp8_parameter((e, 2 * i, h), "gate_up_proj")
        self.gate_up_proj_scale_inv = _fp8_parameter(mxfp8.scale_shape((e, 2 * i, h)), "gate_up_proj_scale_inv")
        self.down_proj = _fp8_parameter((e, h, i), "down_proj")
        self.down_proj_scale_inv = _fp8_parameter(mxfp8.scale_shape((e, h, i)), "down_proj_scale_inv")
        self.dequantize = Mxfp8Dequantize(dtype)
        self.expert_index = Tensor(np.arange(e, dtype=np.int32))

    def expert_weights(self, group_sizes):
        # The chosen experts in ascending id, the order the pairs were sorted in; the others own no rows.
        chosen = group_sizes[:self.num_experts] > 0
        ids = ops.masked_select(self.expert_index, chosen)
        sizes = ops.concat((ops.masked_select(group_sizes[:self.num_experts], chosen),
                            group_sizes[self.num_experts:]))
        gate_up = self.dequantize(ops.gather(self.gate_up_proj, ids, 0),
                                  ops.gather(self.gate_up_proj_scale_inv, ids, 0))
        down = self.dequantize(ops.gather(self.down_proj, ids, 0), ops.gather(self.down_proj_scale_inv, ids, 0))
        return gate_up, down, sizes


def keep_fp8(model, params):
    """Makes `model` keep the weights named in `params` (names of ``model.weights()``) as MXFP8 bytes: each
    nn.Dense holding one becomes an Mxfp8Dense, each RoutedExperts an Mxfp8RoutedExperts (both of its weights
    must be listed). Call before loading and before the first run. Returns the model.

    Raises:
        ValueError: a named weight is not a bias-free nn.Dense's weight or a routed-expert weight, an expert cell
            with only one of its two weights listed, or an input width that is not a multiple of 32.
    """
    cells = dict(model.cells_and_names())
    owners = {}
    for param in params:
        owner, _, attr = param.rpartition(".")
        owners.setdefault(owner, set()).add(attr)
    for owner, attrs in sorted(owners.items()):
        cell = cells.get(owner)
        if isinstance(cell, nn.Dense) and attrs == {"weight"} and cell.bias is None:
            out_channels, in_channels = cell.weight.shape
            _need_blocks(owner, in_channels)
            new = Mxfp8Dense(in_channels, out_channels, cell.weight.dtype)
        elif type(cell) is RoutedExperts and attrs == {"gate_up_proj", "down_proj"}:
            _need_blocks(owner, cell.hidden)
            _need_blocks(owner, cell.intermediate)
            new = Mxfp8RoutedExperts(model.config, cell.gate_up_proj.dtype)
        else:
            raise ValueError(f"--weights fp8: {owner}.{'/'.join(sorted(attrs))} can not be kept as MXFP8 "
                             f"(not a linear layer's weight or a layer's routed experts)")
        parent, _, name = owner.rpartition(".")
        setattr(cells[parent] if parent else model, name, new)
    return model


def _need_blocks(owner, width):
    if width % mxfp8.BLOCK:
        raise ValueError(f"--weights fp8: {owner} has input width {width}, not a multiple of {mxfp8.BLOCK}")
