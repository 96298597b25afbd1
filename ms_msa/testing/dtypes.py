"""Values on a dtype's grid, in numpy, and the MindSpore tensors that hold them exactly.

Tests draw inputs that are already representable in the target dtype, so the tensor holds exactly the
values the float64 reference sees (SPEC §6: "from the same, already rounded, inputs").
"""
import numpy as np
import mindspore as ms

FLOAT_DTYPES = ("float16", "bfloat16", "float32", "float8_e4m3fn", "float8_e5m2")

MS_DTYPES = {
    "float16": ms.float16, "bfloat16": ms.bfloat16, "float32": ms.float32,
    "float8_e4m3fn": ms.float8_e4m3fn, "float8_e5m2": ms.float8_e5m2, "int8": ms.int8, "int32": ms.int32,
}


def _fp8_grid(exp_bits, man_bits, bias, ieee_special):
    """Every finite value of a float8 format, sorted (no NaN, no inf)."""
    values = []
    for code in range(128):
        e, m = code >> man_bits, code & ((1 << man_bits) - 1)
        if ieee_special and e == (1 << exp_bits) - 1:
            continue  # e5m2: inf / NaN
        if not ieee_special and e == (1 << exp_bits) - 1 and m == (1 << man_bits) - 1:
            continue  # e4m3fn: the one NaN code
        if e == 0:
            v = m / (1 << man_bits) * 2.0 ** (1 - bias)
        else:
            v = (1 + m / (1 << man_bits)) * 2.0 ** (e - bias)
        values.append(v)
    pos = np.array(sorted(set(values)))
    return np.concatenate([-pos[::-1], pos])


_FP8_GRIDS = {
    "float8_e4m3fn": _fp8_grid(4, 3, 7, ieee_special=False),
    "float8_e5m2": _fp8_grid(5, 2, 15, ieee_special=True),
}


def _round_bf16(x):
    """Round-to-nearest-even of float32 values to bfloat16, returned as float32."""
    bits = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return rounded.astype(np.uint32).view(np.float32)


def round_to(x, dtype):
    """The nearest values of `dtype` (a name of FLOAT_DTYPES), as float64 (fp8: clamped to the finite range)."""
    x = np.asarray(x, np.float64)
    if dtype == "float16":
        return x.astype(np.float16).astype(np.float64)
    if dtype == "bfloat16":
        return _round_bf16(x.astype(np.float32)).astype(np.float64)
    if dtype == "float32":
        return x.astype(np.float32).astype(np.float64)
    grid = _FP8_GRIDS[dtype]
    idx = np.clip(np.searchsorted(grid, x), 1, len(grid) - 1)
    lower, upper = grid[idx - 1], grid[idx]
    return np.where(np.abs(x - lower) <= np.abs(upper - x), lower, upper)


def to_tensor(values, dtype):
    """A MindSpore tensor of `dtype` holding `values` exactly (values must already be on the grid)."""
    values = np.asarray(values)
    if dtype == "float16":
        return ms.Tensor(values.astype(np.float16))
    if dtype == "int8":
        return ms.Tensor(values.astype(np.int8))
    if dtype == "int32":
        return ms.Tensor(values.astype(np.int32))
    if dtype == "float32":
        return ms.Tensor(values.astype(np.float32))
    return ms.Tensor(values.astype(np.float32), dtype=MS_DTYPES[dtype])
