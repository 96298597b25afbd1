"""Hypothesis strategies for valid MsaIndexScore problems, shared by the property and fuzz tests
(hypothesis is a test dependency: import this module only from tests)."""
import math

import numpy as np
from hypothesis import HealthCheck
from hypothesis import strategies as st

from . import dtypes

FLOATS = ["float16", "bfloat16", "float32", "float8_e4m3fn", "float8_e5m2"]


ASCEND_BLOCK_SIZE = 128


@st.composite
def problems(draw, ascend=False):
    """A valid problem: (numpy values, attributes, query dtype, key dtype). ascend=True keeps to what
    the Ascend kernel takes: fp16/bf16 queries, block size 128, D a multiple of 16 up to 128, and
    query-head counts that fold into its Cube rows in every way (odd ones too)."""
    layout = draw(st.sampled_from(["BBND", "BNBD", "TND"]))
    dtype = draw(st.sampled_from(["float16", "bfloat16"] if ascend else FLOATS))
    int8_key = dtype in ("float16", "bfloat16", "float32") and draw(st.booleans())
    if ascend:
        n2 = draw(st.sampled_from([1, 1, 2, 4]))
        n1 = n2 * draw(st.sampled_from([1, 2, 3, 5, 8, 17, 40] if n2 == 1 else [1, 2, 3]))
        d = 16 * draw(st.integers(1, 8))
        p = ASCEND_BLOCK_SIZE
    else:
        n2 = draw(st.sampled_from([1, 2]))
        n1 = n2 * draw(st.sampled_from([1, 2, 4]))
        d = draw(st.integers(1, 72))
        p = draw(st.sampled_from([16, 32, 64]))
    batch = draw(st.integers(1, 3 if ascend else 4))
    q_lens = draw(st.lists(st.integers(0, 9), min_size=batch, max_size=batch))
    kv_lens = draw(st.lists(st.integers(0, 3 * p + 7 if ascend else 5 * p), min_size=batch, max_size=batch))
    attrs = dict(
        layout_key=layout, sparse_mode=draw(st.sampled_from([0, 3])), block_size=p,
        local_window=draw(st.sampled_from(["request", "token"])),
        init_blocks=draw(st.integers(0, 3)), local_blocks=draw(st.integers(0, 3)),
        fill_value=draw(st.sampled_from([float("-inf"), -1e4, 0.0, 7.5])),
    )
    seed = draw(st.integers(0, 2 ** 31 - 1))
    rng = np.random.default_rng(seed)
    blocks = [math.ceil(kv / p) for kv in kv_lens]
    # start_loc may point past the request's blocks (forcing is then clipped) on CPU.
    start = [int(rng.integers(0, b + 1)) if ascend else int(rng.integers(-1, b + 2)) for b in blocks]
    # Query magnitudes up to 2**12: scores then leave fp16's range (the Ascend kernel's S workspace).
    magnitude = draw(st.sampled_from([1.0, 1.0, 2.0 ** 6, 2.0 ** 12]))
    values = {"query": dtypes.round_to(rng.standard_normal((sum(q_lens), n1, d)) * magnitude, dtype),
              "actual_seq_qlen": np.cumsum([0] + q_lens).astype(np.int32),
              "start_loc": np.array(start, np.int32),
              "block_table": None, "scale": None, "atten_mask": None}
    key_dtype = "int8" if int8_key else dtype

    def keys(shape):
        if int8_key:
            return rng.integers(-128, 128, shape).astype(np.float64)
        return dtypes.round_to(rng.standard_normal(shape), dtype)

    if layout == "TND":
        t2 = sum(kv_lens) + draw(st.integers(0, 5))
        values["key"] = keys((t2, n2, d))
        values["actual_seq_klen"] = np.cumsum([0] + kv_lens).astype(np.int32)
        if int8_key:
            values["scale"] = rng.uniform(1e-3, 1e-1, (t2, n2) if n2 > 1 or rng.random() < .5 else (t2,)).astype(np.float32)
        max_blocks = draw(st.one_of(st.none(), st.integers(max(blocks), max(blocks) + 20)))
        attrs["max_kv_blocks"] = max_blocks
        width_blocks = max_blocks if max_blocks is not None else math.ceil(t2 / p)
    else:
        pages = draw(st.integers(1, 12))
        width = max(blocks) + draw(st.integers(0, 20)) or 1
        table = rng.integers(0, pages, (batch, width)).astype(np.int32)
        table[np.arange(width)[None, :] >= np.array(blocks)[:, None]] = -5  # never read: may hold anything
        values["block_table"] = table
        values["actual_seq_klen"] = np.array(kv_lens, np.int32)
        shape = (pages, p, n2, d) if layout == "BBND" else (pages, n2, p, d)
        values["key"] = keys(shape)
        if int8_key:
            values["scale"] = rng.uniform(1e-3, 1e-1, (pages, n2, p)).astype(np.float32)
        width_blocks = width
    out_width = max(-(-width_blocks // 16) * 16, 16)
    attrs["init_blocks"] = min(attrs["init_blocks"], out_width)
    attrs["local_blocks"] = min(attrs["local_blocks"], out_width)
    return values, attrs, dtype, key_dtype


def tensors(values, dtype, key_dtype):
    conv = {"query": dtype, "key": key_dtype, "scale": "float32", "block_table": "int32",
            "actual_seq_qlen": "int32", "actual_seq_klen": "int32", "start_loc": "int32"}
    return {k: (None if v is None else dtypes.to_tensor(v, conv[k])) for k, v in values.items() if k != "atten_mask"}


# Deterministic runs (the same examples in CI every time), no per-example deadline: graph compiles vary.
SETTINGS = dict(deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                       HealthCheck.filter_too_much, HealthCheck.data_too_large])
