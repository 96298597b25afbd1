"""The fp32 dot path (tasks of at most 4 query rows: decode, where each key is dotted with the rows in registers)
against the reference on every kernel set, in PyNative and GRAPH_MODE: 1 to 4 rows per task, D 128 (its
compile-time length, whose accumulators stay in registers), 100 and 37 (a tail of d % 8 dims), every key dtype
it reads with fp16, bf16 and fp32 queries, key groups cut short at the end of a block (kv lengths leaving 1, 2
and 3 keys after the last group of 4), two key heads in a page, and the same bits for any thread count."""
import math

import numpy as np
import pytest

from ms_msa import MsaIndexScore, _lib
from ms_msa.testing import cases, dtypes, numeric

ALL = _lib.cpu_isas()
# Whole blocks of 128, then last blocks holding 1, 2, 3, 5, 6 and 7 keys (groups of 4 with a tail of 1 to 3).
KV_LENS = (700, 129, 130, 131, 5, 6, 7)
# (query dtype, int8 keys): the key dtypes the dot path reads, int8 with each query dtype.
DTYPES = [("float16", False), ("bfloat16", False), ("float32", False),
          ("float16", True), ("bfloat16", True), ("float32", True)]


def _case(dtype, int8_key, d, heads=1, kv_heads=1, q_lens=(1, 2, 3, 4, 1, 2, 3)):
    """heads 1 and 1 to 4 tokens per request: tasks of 1 to 4 rows."""
    pages = sum(math.ceil(kv / 128) for kv in KV_LENS) + 3
    name = f"dot-{dtype}{'-int8key' if int8_key else ''}-d{d}-n{heads}-n2{kv_heads}"
    return cases.Case(name, heads=heads, kv_heads=kv_heads, head_dim=d, pages=pages, q_lens=q_lens,
                      kv_lens=KV_LENS, block_size=128, dtype=dtype, int8_key=int8_key, local_window="token",
                      local_blocks=0)


def _wide(rng, shape, low, high):
    """Random signs and exponents spread over [2**low, 2**high)."""
    return rng.choice([-1.0, 1.0], shape) * 2.0 ** rng.uniform(low, high, shape)


def _inputs(case, seed):
    """Queries and keys over a wide exponent range of their dtype (fp16: 2**-10..2**10); int8 keys over their
    whole range with scales from 2**-20 to 2**20."""
    inputs = cases.build_inputs(case, seed=seed)
    rng = np.random.default_rng(seed)
    span = 10 if case.dtype == "float16" else 30
    values = {"query": (_wide(rng, inputs.values["query"].shape, -span, span), case.dtype)}
    if case.int8_key:
        values["key"] = (rng.integers(-128, 128, size=inputs.values["key"].shape).astype(np.float64), "int8")
        values["scale"] = (2.0 ** rng.uniform(-20, 20, inputs.values["scale"].shape), "float32")
    else:
        values["key"] = (_wide(rng, inputs.values["key"].shape, -span, span), case.dtype)
    for name, (value, dtype) in values.items():
        inputs.values[name] = value if dtype == "int8" else dtypes.round_to(value, dtype)
        inputs.tensors[name] = dtypes.to_tensor(inputs.values[name], dtype)
    return inputs


def _run(case, inputs):
    out = MsaIndexScore(**case.attrs())(*cases.call_args(inputs)).asnumpy()
    numeric.assert_accepted(out, inputs.run_reference(), case.fill_value, case.name)
    return out


@pytest.mark.parametrize("isa", ALL)
@pytest.mark.parametrize("d", [128, 100, 37])
@pytest.mark.parametrize("dtype,int8_key", DTYPES)
def test_dot_path_against_reference(isa, d, dtype, int8_key, mode, monkeypatch):
    monkeypatch.setenv("MS_MSA_CPU_ISA", isa)
    case = _case(dtype, int8_key, d)
    out = _run(case, _inputs(case, seed=d))
    assert np.isfinite(out).any(axis=-1).all()  # every row scores its blocks


@pytest.mark.parametrize("isa", ALL)
@pytest.mark.parametrize("heads,kv_heads", [(4, 1), (4, 2)])
@pytest.mark.parametrize("dtype,int8_key", [("float16", False), ("float32", True)])
def test_dot_path_m3_decode_and_two_key_heads(isa, heads, kv_heads, dtype, int8_key, mode, monkeypatch):
    """M3's decode (4 heads on one key head, one token: 4 rows per task) and two key heads interleaved in each
    page (a key's rows 2 x D apart), at D 128."""
    monkeypatch.setenv("MS_MSA_CPU_ISA", isa)
    case = _case(dtype, int8_key, 128, heads=heads, kv_heads=kv_heads, q_lens=(1,) * len(KV_LENS))
    _run(case, _inputs(case, seed=heads + kv_heads))


@pytest.mark.parametrize("dtype,int8_key", [("float16", False), ("bfloat16", True)])
def test_dot_path_bit_identical_whatever_the_thread_count(dtype, int8_key, mode, monkeypatch):
    case = _case(dtype, int8_key, 128)
    inputs = _inputs(case, seed=5)
    results = []
    for threads in ("1", "2", "3"):
        monkeypatch.setenv("MS_MSA_NUM_THREADS", threads)
        results.append(_run(case, inputs))
    for r in results[1:]:
        assert np.array_equal(r.view(np.uint32), results[0].view(np.uint32))
