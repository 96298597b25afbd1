"""The fp32 path's decode-ahead kernel (16-row tasks at D 128 with AVX-512: each tile's keys are decoded to fp32
while the tile before computes, between its multiply-adds) against the reference on every kernel set, in
PyNative and GRAPH_MODE: 12 and 16 rows per task (8 rows, and the sets without AVX-512, decode a chunk first:
the same cases on that path), every key dtype it reads, blocks whose visible keys end inside the first tile, on a
tile boundary and inside a later tile, and the same bits for any thread count. Requests of several blocks also
check the hand-over between blocks (a block's last tile decodes the next block's first: the wrong half of the
buffer, a hand-over kept from the task before, or the next block's keys read from this block each fail these
tests)."""
import math

import numpy as np
import pytest

from ms_msa import _lib
from ms_msa.testing import cases, checks

ALL = _lib.cpu_isas()
# The keys each request's blocks hold: whole blocks of 128; then 1, 16 (one whole tile), 20 (a tile and a tail of
# 4) and 5 (inside the first tile) in the last block.
KV_LENS = (700, 300, 129, 144, 20, 5)
# Speculative decode's tokens per request: x 4 heads per key head = 8, 12 (a 16-row group, 4 rows of it
# padding) and 16 query rows per task.
TOKENS = (2, 3, 4)


def _case(dtype, tokens, int8_key=False, kv_heads=1, block_size=128):
    pages = sum(math.ceil(kv / block_size) for kv in KV_LENS) + 3
    name = f"decode-ahead-{dtype}{'-int8key' if int8_key else ''}-t{tokens}-n2{kv_heads}-p{block_size}"
    return cases.Case(name, heads=4 * kv_heads, kv_heads=kv_heads, head_dim=128, pages=pages,
                      q_lens=(tokens,) * len(KV_LENS), kv_lens=KV_LENS, block_size=block_size, dtype=dtype,
                      int8_key=int8_key, local_window="token", local_blocks=0)


@pytest.mark.parametrize("isa", ALL)
@pytest.mark.parametrize("tokens", TOKENS)
@pytest.mark.parametrize("dtype,int8_key", [("float16", False), ("float32", False), ("bfloat16", False),
                                            ("float16", True), ("float32", True)])
def test_decode_ahead_against_reference(isa, tokens, dtype, int8_key, mode, monkeypatch):
    monkeypatch.setenv("MS_MSA_CPU_ISA", isa)
    case = _case(dtype, tokens, int8_key)
    out = checks.run_accepted(case, cases.build_wide_inputs(case, seed=tokens))
    assert np.isfinite(out).any(axis=-1).all()  # every row scores its blocks


@pytest.mark.parametrize("isa", ALL)
@pytest.mark.parametrize("kv_heads,block_size", [(2, 128), (1, 16), (1, 64)])
def test_decode_ahead_gqa_and_small_blocks(isa, kv_heads, block_size, mode, monkeypatch):
    """Two key heads interleaved in each page (a block's keys 2 x D apart), and blocks of 16 and 64 keys (one
    tile, or whole tiles and no tail, per block)."""
    monkeypatch.setenv("MS_MSA_CPU_ISA", isa)
    case = _case("float16", 4, kv_heads=kv_heads, block_size=block_size)
    checks.run_accepted(case, cases.build_wide_inputs(case, seed=11))


@pytest.mark.parametrize("dtype,int8_key", [("float16", False), ("float32", True)])
def test_decode_ahead_bit_identical_whatever_the_thread_count(dtype, int8_key, mode):
    case = _case(dtype, 4, int8_key)
    inputs = cases.build_wide_inputs(case, seed=12)
    checks.assert_same_bits_for_thread_counts(case, inputs)
