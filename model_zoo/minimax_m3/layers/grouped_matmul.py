"""Grouped matmul of the routed experts: rows grouped by expert, each group against its own expert's weight.

On CPU the C++ kernel of ms_msa's library (ms_msa/csrc/cpu/grouped_matmul_*.cc) through
ops.Custom(func_type="aot"); on Ascend MindSpore's GroupedMatmul (aclnnGroupedMatmul), which was NOT run for
this project (no NPU here): it is written from MindSpore 2.10's API documentation only.
"""
import re

import mindspore as ms
from mindspore import nn, ops
from mindspore.common.api import _pynative_executor
from mindspore.ops import CustomRegOp

from ms_msa import _lib

KERNEL_SYMBOL = "MsaGroupedMatmul"
_AOT_FAILURE = re.compile(r"function\(\S*" + KERNEL_SYMBOL + r"\) is (\d+)")
_KERNEL_ERRORS = {1: TypeError, 2: ValueError}
_FLOATS = ("float32", "float16")


def _dtype_name(dtype):
    if hasattr(dtype, "element_type"):
        dtype = dtype.element_type()
    return str(dtype).lower()


def _out_dtype(x_dtype, w_dtype, sizes_dtype):
    """Infers the output dtype (x's) and raises TypeError for dtypes the CPU kernel does not take."""
    x, w, sizes = _dtype_name(x_dtype), _dtype_name(w_dtype), _dtype_name(sizes_dtype)
    if x not in _FLOATS or w != x:
        raise TypeError(f"GroupedMatmul: x and w must both be float32 or both float16, got x {x}, w {w}")
    if sizes != "int32":
        raise TypeError(f"GroupedMatmul: group_sizes must be int32, got {sizes}")
    return x_dtype


class GroupedMatmul(nn.Cell):
    r"""y[r] = x[r] @ w[g]^T for the rows r of group g; rows grouped contiguously in group order.

    Group g owns the next group_sizes[g] rows of x. group_sizes may carry one more entry than w has groups:
    it counts trailing rows that belong to no group, whose output rows are zero (the pairs a tensor-parallel
    rank leaves to other ranks). Groups of size 0 are skipped, so only the selected groups' weights are read,
    each once per call, straight from the full w (no copy); the work and the memory are O(rows * (K + N) +
    selected groups' weights). Accumulation in float32 for both dtypes.

    CPU: the C++ kernel (AVX2+FMA+F16C where the CPU has them, else portable code; MS_MSA_CPU_ISA=generic
    forces the portable one), on MS_MSA_NUM_THREADS threads (default: every core). It checks every shape,
    dtype and group size before reading anything. Ascend: MindSpore's GroupedMatmul (split_item 3, group_type
    0, transposed weight, group_list the cumulative sizes; trailing rows of no group are given to the last
    group, so their output is not zero there: callers weight them by 0) -- not run on an NPU.

    Inputs:
        - **x** (Tensor) - [P, K], float32 or float16.
        - **w** (Tensor) - [G, N, K], the dtype of `x`.
        - **group_sizes** (Tensor) - [G] or [G + 1] int32, non-negative, summing to P.

    Outputs:
        Tensor, [P, N], the dtype of `x`.

    Raises:
        TypeError: `x`/`w` not both float32 or both float16, `group_sizes` not int32 (while inferring).
        ValueError: wrong ranks (by `construct`; while compiling in GRAPH_MODE). On CPU the kernel fails the
            launch for a K mismatch, a group_sizes length other than G or G + 1, a negative size or sizes not
            summing to P: `grouped_matmul` raises that as ValueError with the kernel's message, a Cell call
            gives MindSpore's RuntimeError (the message is then in `last_error()` and on stderr).

    Supported Platforms:
        ``CPU`` ``Ascend`` (Ascend: MindSpore's GroupedMatmul, not run here)

    Examples:
        >>> import numpy as np
        >>> import mindspore as ms
        >>> x = ms.Tensor(np.ones((3, 4), np.float32))
        >>> w = ms.Tensor(np.ones((2, 5, 4), np.float32))
        >>> GroupedMatmul()(x, w, ms.Tensor([1, 2], ms.int32)).shape
        (3, 5)
    """

    def __init__(self):
        super().__init__()
        self.on_ascend = ms.get_context("device_target") == "Ascend"
        if self.on_ascend:
            from mindspore.ops.auto_generate import GroupedMatmul as AscendGroupedMatmul
            # split_item 3: one x, one [G, N, K] weight, one output; group_type 0: groups along the rows.
            self.ascend_gmm = AscendGroupedMatmul(split_item=3, group_type=0, transpose_b=True)
        else:
            # out_shape None: MindSpore calls the library's MsaGroupedMatmulInferShape (dynamic shapes); the
            # reg_info names the op, which that C++ infer path reads.
            self.cpu_gmm = ops.Custom(f"{_lib.library_path()}:{KERNEL_SYMBOL}", out_shape=None,
                                      out_dtype=_out_dtype, func_type="aot", bprop=None,
                                      reg_info=CustomRegOp(KERNEL_SYMBOL).target("CPU").get_op_info())

    def construct(self, x, w, group_sizes):
        if x.ndim != 2 or w.ndim != 3 or group_sizes.ndim != 1:
            raise ValueError("GroupedMatmul: expected x [P, K], w [G, N, K] and group_sizes [G] or [G + 1]")
        if self.on_ascend:
            return self._ascend(x, w, group_sizes)
        return self.cpu_gmm(x, w, group_sizes)

    def _ascend(self, x, w, group_sizes):
        # Cumulative sizes of the G groups, int64, the last one P (trailing rows join the last group).
        ends = ops.cumsum(ops.cast(group_sizes, ms.int64), 0)
        num_groups = w.shape[0]
        ends = ops.concat((ends[:num_groups - 1], ends[-1:]))
        return self.ascend_gmm([x], [w], None, None, None, None, None, ends)[0]


def last_error():
    """The CPU kernel's message for its last failed launch ("" if none)."""
    return _lib.last_kernel_error()


def translate_kernel_error(err):
    """The kernel's TypeError/ValueError for MindSpore's RuntimeError of a failed launch, else `err`."""
    match = _AOT_FAILURE.search(str(err))
    if match is None:
        return err
    return _KERNEL_ERRORS.get(int(match.group(1)), RuntimeError)(last_error() or str(err))


_CELL = []


def grouped_matmul(x, w, group_sizes):
    """GroupedMatmul called eagerly (PyNative), waiting for the kernel so that a failed rule is raised here as
    the kernel's TypeError/ValueError. Inside a Cell, build a GroupedMatmul in `__init__` instead."""
    if not _CELL:
        _CELL.append(GroupedMatmul())
    try:
        out = _CELL[0](x, w, group_sizes)
        _pynative_executor.sync()
        return out
    except RuntimeError as err:
        translated = translate_kernel_error(err)
        if translated is err:
            raise
        raise translated from err
