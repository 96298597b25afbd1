"""The reference case matrix of SPEC §7 (names from the CANN operator's acceptance tests) and the
extension cases ms_msa adds, with one input builder for the tests, the demo and the benchmarks."""
import dataclasses
import math
from typing import Optional, Tuple

import numpy as np
import mindspore as ms

from . import dtypes


@dataclasses.dataclass(frozen=True)
class Case:
    name: str
    heads: int                       # N1
    head_dim: int                    # D
    pages: int                       # NP (paged) - ignored for TND
    q_lens: Tuple[int, ...]
    kv_lens: Tuple[int, ...]
    start_loc: Optional[Tuple[int, ...]] = None  # None: each request's last block
    dtype: str = "float16"
    int8_key: bool = False
    layout: str = "BBND"
    kv_heads: int = 1                # N2
    block_size: int = 128
    table_width: Optional[int] = None  # MB; None: the blocks the longest request needs (>= 1)
    sparse_mode: int = 3
    init_blocks: int = 0
    local_blocks: int = 1
    local_window: str = "request"
    fill_value: float = float("-inf")
    max_kv_blocks: Optional[int] = None
    key_rank3: bool = False          # BBND key as [NP, P, D] (N2 = 1)
    scale_order: str = "BNB"         # paged int8 scale built as [NP, N2, P] ("BNB") or [NP, P, N2] ("BBN")
    scale_layout: str = "auto"       # the Cell attribute
    query_scale: float = 1.0         # the query's standard deviation (large: scores beyond fp16's range)
    query_outlier: float = 1.0       # element 0 of every query row times this (2^-30: rows the Ascend
                                     # kernel's widened int8-key decode cannot hold in half)

    def attrs(self):
        return dict(layout_key=self.layout, sparse_mode=self.sparse_mode, init_blocks=self.init_blocks,
                    local_blocks=self.local_blocks, local_window=self.local_window, fill_value=self.fill_value,
                    block_size=self.block_size, max_kv_blocks=self.max_kv_blocks, scale_layout=self.scale_layout)


def _c(name, heads, d, pages, q, kv, start=None, **kw):
    return Case(name, heads, d, pages, tuple(q), tuple(kv), None if start is None else tuple(start), **kw)


UNALIGNED = dict(heads=8, d=128, pages=8, q=(32, 17), kv=(300, 130), start=(2, 0))
TINY = dict(heads=2, d=16, pages=2, q=(2,), kv=(5,), start=(16,))
PREFILL = dict(heads=8, d=128, pages=8, q=(32,), kv=(256,), start=(1,))
Q4 = dict(heads=4, d=128, pages=4, q=(4,), kv=(4,), start=(16,))

SPEC_CASES = [
    _c("L0-debug-trace", **TINY),
    _c("L0-int8-dequant-trace", **TINY, int8_key=True),
    _c("L0-prefill-aligned", **PREFILL),
    _c("L1-prefill-unaligned", **UNALIGNED),
    _c("L1-bf16", **UNALIGNED, dtype="bfloat16"),
    _c("L1-head-dim-64", **{**UNALIGNED, "d": 64}),
    _c("L1-int8-dequant", **UNALIGNED, int8_key=True),
    _c("L1-bnbd", **UNALIGNED, layout="BNBD"),
    _c("L1-bnbd-int8", **UNALIGNED, layout="BNBD", int8_key=True),
    _c("L1-tnd-unaligned", **UNALIGNED, layout="TND"),
    _c("L1-tnd-int8", **UNALIGNED, layout="TND", int8_key=True),
    _c("L1-prefill-multi-mtile", 8, 128, 16, (64, 48), (700, 520), (4, 3)),
    _c("L1-decode-lq1", 8, 128, 16, (1,) * 6, (900, 512, 128, 129, 1, 4096), (7, 3, 0, 1, 0, 31)),
    _c("L1-decode-speculative", 8, 128, 16, (4, 2), (1024, 260), (7, 2)),
    _c("L1-long-seq-multi-stile", 8, 128, 40, (8,), (4096,), (31,)),
    _c("L1-heads-16", 16, 128, 8, (13,), (300,), (2,)),
    _c("L2-tiny-kv", 8, 128, 4, (1, 1), (1, 3), (0, 0)),
    _c("L0-tnd-tiny", **TINY, layout="TND"),
    # empty work
    _c("L1-pad-q0", 8, 128, 8, (0, 32), (256, 256)),
    _c("L1-pad-kv0", 8, 128, 8, (32, 32), (0, 256)),
    _c("L1-pad-q0-kv0", 8, 128, 8, (0, 32), (0, 256)),
    _c("L1-pad-mid-q0", 8, 128, 8, (16, 0, 16), (200, 0, 200)),
    _c("L1-tnd-pad-q0-kv0", 8, 128, 8, (0, 32), (0, 256), layout="TND"),
    _c("L0-all-q0", 8, 128, 8, (0,), (256,)),
    _c("L0-all-kv0", 8, 128, 8, (32,), (0,)),
    _c("L0-all-q0-kv0", 8, 128, 8, (0,), (0,)),
    _c("L1-all-q0", 8, 128, 8, (0, 0), (256, 256)),
    _c("L0-tnd-all-q0", 8, 128, 8, (0,), (256,), layout="TND"),
    _c("L0-tnd-all-kv0", 8, 128, 8, (32,), (0,), layout="TND"),
    _c("L0-tnd-all-q0-kv0", 8, 128, 8, (0,), (0,), layout="TND"),
    # wide tables
    _c("L0-wide-table-257", 2, 16, 2, (2,), (5,), table_width=257),
    _c("L1-wide-table-257-bf16", 8, 128, 8, (32,), (256,), dtype="bfloat16", table_width=257),
    _c("L0-decode-q4-kv4-table275", **Q4, table_width=275),
    # short decode
    _c("L0-decode-q4-kv4", **Q4),
    _c("L0-decode-q4-kv4-b2", 4, 128, 4, (4, 4), (4, 8), (16, 16)),
    _c("L0-decode-q4-kv275", 4, 128, 275, (4,), (35200,), (274,)),
]
# fp8: e4m3fn and e5m2 versions of the tiny, prefill and q4 decode cases
for _fp8, _tag in (("float8_e4m3fn", "e4m3fn"), ("float8_e5m2", "e5m2")):
    SPEC_CASES += [
        _c(f"L0-debug-trace-{_tag}", **TINY, dtype=_fp8),
        _c(f"L0-prefill-aligned-{_tag}", **PREFILL, dtype=_fp8),
        _c(f"L0-decode-q4-kv4-{_tag}", **Q4, dtype=_fp8),
    ]

EXTENSION_CASES = [
    _c("X-gqa-n2-2", **UNALIGNED, kv_heads=2),
    _c("X-gqa-n2-4-bnbd", **UNALIGNED, kv_heads=4, layout="BNBD"),
    _c("X-gqa-n2-4-tnd-int8", **UNALIGNED, kv_heads=4, layout="TND", int8_key=True),
    _c("X-gqa-n2-2-bnbd-int8", **UNALIGNED, kv_heads=2, layout="BNBD", int8_key=True),
    _c("X-token-window-prefill", 8, 128, 8, (300,), (300,), local_window="token", local_blocks=2),
    _c("X-token-window-chunked-prefill", 8, 128, 8, (64, 17), (600, 130), local_window="token", local_blocks=1,
       init_blocks=1),
    _c("X-token-window-tnd", **UNALIGNED, layout="TND", local_window="token", local_blocks=2, init_blocks=1),
    _c("X-init-blocks", 8, 128, 16, (64, 48), (700, 520), (4, 3), init_blocks=2, local_blocks=2),
    _c("X-raw-score", 8, 128, 16, (4, 2), (1024, 260), (7, 2), local_blocks=0),
    # Scores far beyond fp16's 65504 (the Ascend kernel's S workspace; it recomputes such pages in fp32).
    _c("X-fp16-scores-overflow", **UNALIGNED, query_scale=2.0 ** 12),
    _c("X-bf16-scores-overflow", 8, 128, 16, (4, 2), (1024, 260), (7, 2), dtype="bfloat16", query_scale=2.0 ** 20),
    # int8 keys: the Cube's scores q . (k p), p the power of two of each scale, beyond fp16's range.
    _c("X-bf16-int8-scores-overflow", **UNALIGNED, dtype="bfloat16", int8_key=True, query_scale=2.0 ** 16),
    # int8-key decode (at most 4 query rows per task): the Ascend kernel's Cube widens the keys itself and takes
    # the query as half scaled by a power of two (M3's 4 heads on one key head; GQA; one head per key head; a
    # query half cannot hold, recomputed in fp32; D 48, not a multiple of int8's fractal width, staged as before).
    _c("X-int8-decode-m3", 4, 128, 16, (1,) * 4, (700, 129, 1, 300), dtype="bfloat16", int8_key=True),
    _c("X-int8-decode-m3-fp16-tnd", 4, 128, 0, (1,) * 3, (900, 128, 5), layout="TND", int8_key=True),
    _c("X-int8-decode-gqa-n2-2-bnbd", 4, 64, 12, (1, 1), (700, 40), kv_heads=2, layout="BNBD", int8_key=True),
    _c("X-int8-decode-mha-n2-2", 2, 128, 8, (1, 1), (300, 129), kv_heads=2, dtype="bfloat16", int8_key=True),
    _c("X-int8-decode-query-inexact", 4, 128, 16, (1,) * 4, (700, 129, 1, 300), dtype="bfloat16", int8_key=True,
       query_outlier=2.0 ** -30),
    _c("X-int8-decode-head-dim-48", 4, 48, 8, (1, 1), (300, 129), int8_key=True),
    _c("X-fill-value", **UNALIGNED, fill_value=-1e4),
    _c("X-fill-value-zero-tnd", **UNALIGNED, fill_value=0.0, layout="TND"),
    _c("X-fp32", **UNALIGNED, dtype="float32"),
    _c("X-fp32-int8", **UNALIGNED, dtype="float32", int8_key=True),
    _c("X-bf16-int8", **UNALIGNED, dtype="bfloat16", int8_key=True),
    _c("X-block-64", 8, 128, 16, (32, 17), (300, 130), (4, 2), block_size=64),
    _c("X-block-256-bnbd", 8, 128, 4, (32, 17), (300, 130), (1, 0), block_size=256, layout="BNBD"),
    _c("X-block-64-tnd", **UNALIGNED, layout="TND", block_size=64),
    _c("X-block-16-tnd", 4, 32, 0, (5, 3), (40, 19), (2, 1), layout="TND", block_size=16),
    _c("X-block-1024", 4, 64, 2, (3,), (1500,), (1,), block_size=1024),
    _c("X-head-dim-96", **{**UNALIGNED, "d": 96}),
    _c("X-head-dim-192", **{**UNALIGNED, "d": 192}),
    _c("X-head-dim-8", **{**TINY, "d": 8}),
    _c("X-sparse-mode-0", **UNALIGNED, sparse_mode=0),
    _c("X-sparse-mode-0-tnd-token", **UNALIGNED, sparse_mode=0, layout="TND", local_window="token"),
    _c("X-key-rank3", **UNALIGNED, key_rank3=True),
    _c("X-tnd-max-kv-blocks", **UNALIGNED, layout="TND", max_kv_blocks=40),
    _c("X-q-longer-than-kv", 4, 64, 4, (20,), (7,), (0,)),
    _c("X-m3-decode-int8", 4, 128, 64, (1, 1, 1), (4000, 129, 1), layout="BBND", int8_key=True),
    _c("X-fp8-e4m3fn-gqa-tnd", **UNALIGNED, dtype="float8_e4m3fn", kv_heads=2, layout="TND"),
    # decode shapes with <= 4 query rows per key head take the kernel's register-dot path
    _c("X-m3-decode-bf16-d100", 4, 100, 40, (1, 1, 1), (4001, 129, 7), dtype="bfloat16", local_window="token"),
    _c("X-m3-decode-bf16-int8-d100", 4, 100, 80, (1, 1, 1), (8001, 129, 7), dtype="bfloat16", int8_key=True,
       local_window="token"),
    _c("X-gqa-decode-fp16", 4, 64, 20, (1, 2), (777, 300), kv_heads=2),
    _c("X-decode-fp32-int8-tnd", 4, 40, 0, (1, 1), (333, 65), dtype="float32", int8_key=True, layout="TND"),
    # int8 scales in CANN's [NP, P, N2] ("BBN") order: told apart by shape, or named when N2 == P
    _c("X-int8-scale-bbn", **UNALIGNED, int8_key=True, scale_order="BBN"),
    _c("X-gqa-int8-scale-bbn-bnbd", **UNALIGNED, kv_heads=4, layout="BNBD", int8_key=True, scale_order="BBN",
       scale_layout="BBN"),
    _c("X-bf16-int8-scale-bbn-gqa", **UNALIGNED, dtype="bfloat16", kv_heads=2, int8_key=True, scale_order="BBN"),
    _c("X-int8-scale-bbn-n2-eq-p", 16, 32, 6, (9, 4), (40, 70), (2, 4), int8_key=True, kv_heads=16, block_size=16,
       scale_order="BBN", scale_layout="BBN"),
    _c("X-int8-scale-bbn-n2-eq-p-128", 128, 16, 3, (3, 2), (200, 100), (1, 0), int8_key=True, kv_heads=128,
       scale_order="BBN", scale_layout="BBN"),
    _c("X-int8-scale-bnb-n2-eq-p", 16, 32, 6, (9, 4), (40, 70), (2, 4), int8_key=True, kv_heads=16, block_size=16,
       layout="BNBD", scale_layout="BNB"),
]

ALL_CASES = SPEC_CASES + EXTENSION_CASES
CASES_BY_NAME = {c.name: c for c in ALL_CASES}


def scrambled_table(batch, width, pages):
    """SPEC §7: entry (7b + 3k + 1) % pages."""
    b = np.arange(batch)[:, None]
    k = np.arange(width)[None, :]
    return ((7 * b + 3 * k + 1) % max(pages, 1)).astype(np.int32)


@dataclasses.dataclass
class Inputs:
    """Numpy values (for the reference) and MindSpore tensors (for the Cell) of one case."""
    values: dict
    tensors: dict
    attrs: dict

    def set(self, name, value, dtype):
        """Replace input `name` by `value` held as `dtype` (a name of dtypes.MS_DTYPES). A float dtype's value is
        rounded to its grid first, so that the reference sees exactly what the tensor holds."""
        value = np.asarray(value)
        if dtype in dtypes.FLOAT_DTYPES:
            value = dtypes.round_to(value, dtype)
        self.values[name] = value
        self.tensors[name] = dtypes.to_tensor(value, dtype)

    def run_reference(self):
        from ..reference import msa_index_score
        return msa_index_score(**self.values, **self.attrs)


def build_inputs(case, seed=0):
    rng = np.random.default_rng(seed)
    B = len(case.q_lens)
    N1, N2, D, P = case.heads, case.kv_heads, case.head_dim, case.block_size
    T1 = sum(case.q_lens)
    qlen = np.concatenate([[0], np.cumsum(case.q_lens)]).astype(np.int32)
    blocks_needed = [math.ceil(kv / P) for kv in case.kv_lens]
    start = case.start_loc if case.start_loc is not None else tuple(max(n - 1, 0) for n in blocks_needed)
    key_dtype = "int8" if case.int8_key else case.dtype

    query = rng.standard_normal((T1, N1, D)) * case.query_scale
    query[..., 0] *= case.query_outlier
    query = dtypes.round_to(query, case.dtype)

    def key_values(shape):
        if case.int8_key:
            return rng.integers(-127, 128, size=shape).astype(np.float64)
        return dtypes.round_to(rng.standard_normal(shape), case.dtype)

    values = {"query": query, "start_loc": np.array(start, np.int32), "actual_seq_qlen": qlen}
    tensors = {}
    if case.layout == "TND":
        klen = np.concatenate([[0], np.cumsum(case.kv_lens)]).astype(np.int32)
        T2 = int(klen[-1])
        values["key"] = key_values((T2, N2, D))
        values["actual_seq_klen"] = klen
        values["block_table"] = None
        if case.int8_key:
            values["scale"] = rng.uniform(1e-3, 2e-2, (T2, N2)).astype(np.float32).astype(np.float64)
    else:
        width = case.table_width or max(max(blocks_needed), 1)
        values["block_table"] = scrambled_table(B, width, case.pages)
        values["actual_seq_klen"] = np.array(case.kv_lens, np.int32)
        shape = (case.pages, P, N2, D) if case.layout == "BBND" else (case.pages, N2, P, D)
        key = key_values(shape)
        if case.key_rank3:
            key = key[:, :, 0, :]
        values["key"] = key
        if case.int8_key:
            scale = rng.uniform(1e-3, 2e-2, (case.pages, N2, P)).astype(np.float32).astype(np.float64)
            values["scale"] = scale.transpose(0, 2, 1).copy() if case.scale_order == "BBN" else scale
    values.setdefault("scale", None)
    values["atten_mask"] = None

    tensors["query"] = dtypes.to_tensor(values["query"], case.dtype)
    tensors["key"] = dtypes.to_tensor(values["key"], key_dtype)
    tensors["start_loc"] = dtypes.to_tensor(values["start_loc"], "int32")
    tensors["block_table"] = None if values["block_table"] is None else dtypes.to_tensor(values["block_table"], "int32")
    tensors["scale"] = None if values["scale"] is None else dtypes.to_tensor(values["scale"], "float32")
    tensors["atten_mask"] = None
    tensors["actual_seq_qlen"] = dtypes.to_tensor(values["actual_seq_qlen"], "int32")
    tensors["actual_seq_klen"] = dtypes.to_tensor(values["actual_seq_klen"], "int32")
    return Inputs(values, tensors, case.attrs())


def wide_range(rng, shape, low, high):
    """Random signs and exponents spread over [2**low, 2**high)."""
    return rng.choice([-1.0, 1.0], shape) * 2.0 ** rng.uniform(low, high, shape)


def build_wide_inputs(case, seed=0):
    """build_inputs with the query and keys over a wide exponent range of their dtype (fp16: 2**-10..2**10,
    else 2**-30..2**30), int8 keys over their whole range (-128 included) with scales from 2**-20 to 2**20."""
    inputs = build_inputs(case, seed=seed)
    rng = np.random.default_rng(seed)
    span = 10 if case.dtype == "float16" else 30
    values = {"query": (wide_range(rng, inputs.values["query"].shape, -span, span), case.dtype)}
    if case.int8_key:
        values["key"] = (rng.integers(-128, 128, size=inputs.values["key"].shape).astype(np.float64), "int8")
        values["scale"] = (2.0 ** rng.uniform(-20, 20, inputs.values["scale"].shape), "float32")
    else:
        values["key"] = (wide_range(rng, inputs.values["key"].shape, -span, span), case.dtype)
    for name, (value, dtype) in values.items():
        inputs.set(name, value, dtype)
    return inputs


def set_scale_classes(inputs, classes, seed):
    """The int8 scales of physical page j (first axis) drawn from class classes[j % len(classes)]: (label,
    exponent e) gives random mantissas in [1, 2) times 2**e; label "zero" gives 0, "subnormal" float32
    subnormals (e None for both); random signs; rounded to float32."""
    rng = np.random.default_rng(seed)
    scale = inputs.values["scale"].copy()
    for page in range(scale.shape[0]):
        label, e = classes[page % len(classes)]
        shape = scale[page].shape
        if label == "zero":
            value = np.zeros(shape)
        elif label == "subnormal":
            value = rng.uniform(1e-44, 1e-39, shape)
        else:
            value = rng.uniform(1.0, 2.0, shape) * 2.0 ** e
        scale[page] = value * rng.choice([-1.0, 1.0], shape)
    inputs.set("scale", scale, "float32")


CALL_ORDER = ("query", "key", "start_loc", "block_table", "scale", "atten_mask", "actual_seq_qlen",
              "actual_seq_klen")


def call_args(inputs):
    """The tensors in MsaIndexScore.construct's positional order."""
    return [inputs.tensors[k] for k in CALL_ORDER]


def dynamic_like(args):
    """Placeholders for Cell.set_inputs: every dim of every tensor unknown (None stays None)."""
    return [None if a is None else ms.Tensor(shape=[None] * a.ndim, dtype=a.dtype) for a in args]
