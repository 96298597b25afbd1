"""The fp32 dot path (tasks of at most 4 query rows: decode, where each key is dotted with the rows in registers)
against the reference on every kernel set, in PyNative and GRAPH_MODE: 1 to 4 rows per task, D 128 (its
compile-time length, whose accumulators stay in registers), 100 and 37 (a tail of d % 8 dims), every key dtype
it reads with fp16, bf16 and fp32 queries, key groups cut short at the end of a block (kv lengths leaving 1, 2
and 3 keys after the last group of 4), two key heads in a page, and the same bits for any thread count."""
import math

import numpy as np
import pytest

from ms_msa import _lib
from ms_msa.testing import cases, checks

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


@pytest.mark.parametrize("isa", ALL)
@pytest.mark.parametrize("d", [128, 100, 37])
@pytest.mark.parametrize("dtype,int8_key", DTYPES)
def test_dot_path_against_reference(isa, d, dtype, int8_key, mode, monkeypatch):
    monkeypatch.setenv("MS_MSA_CPU_ISA", isa)
    case = _case(dtype, int8_key, d)
    out = checks.run_accepted(case, cases.build_wide_inputs(case, seed=d))
    assert np.isfinite(out).any(axis=-1).all()  # every row scores its blocks


@pytest.mark.parametrize("isa", ALL)
@pytest.mark.parametrize("heads,kv_heads", [(4, 1), (4, 2)])
@pytest.mark.parametrize("dtype,int8_key", [("float16", False), ("float32", True)])
def test_dot_path_m3_decode_and_two_key_heads(isa, heads, kv_heads, dtype, int8_key, mode, monkeypatch):
    """M3's decode (4 heads on one key head, one token: 4 rows per task) and two key heads interleaved in each
    page (a key's rows 2 x D apart), at D 128."""
    monkeypatch.setenv("MS_MSA_CPU_ISA", isa)
    case = _case(dtype, int8_key, 128, heads=heads, kv_heads=kv_heads, q_lens=(1,) * len(KV_LENS))
    checks.run_accepted(case, cases.build_wide_inputs(case, seed=heads + kv_heads))


@pytest.mark.parametrize("dtype,int8_key", [("float16", False), ("bfloat16", True)])
def test_dot_path_bit_identical_whatever_the_thread_count(dtype, int8_key, mode):
    case = _case(dtype, int8_key, 128)
    inputs = cases.build_wide_inputs(case, seed=5)
    checks.assert_same_bits_for_thread_counts(case, inputs)
