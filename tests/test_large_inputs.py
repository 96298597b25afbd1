"""Large inputs: 64-bit offsets in the kernel's index arithmetic (a C++ unit test), an output of more
than 2^31 elements and a key cache of more than 2^31 bytes (each checked against the reference where
the large offsets land), and a clear refusal where a size cannot be served."""
import gc
import os
import subprocess

import numpy as np
import mindspore as ms
import pytest

from ms_msa import MsaIndexScore, reference
from ms_msa._build import CSRC_DIR
from ms_msa.testing import dtypes, numeric

HERE = os.path.dirname(os.path.abspath(__file__))


def test_index_arithmetic_past_2_31(tmp_path):
    exe = tmp_path / "key_addressing_test"
    subprocess.run(["g++", "-std=c++17", "-O1", "-I", CSRC_DIR, os.path.join(HERE, "cpp", "key_addressing_test.cc"),
                    "-o", str(exe)], check=True, capture_output=True, text=True)
    res = subprocess.run([str(exe)], capture_output=True, text=True)
    assert res.returncode == 0 and res.stdout.strip().endswith("0 failures"), res.stdout + res.stderr


def test_output_over_2_31_elements(pynative):
    """[1, T1, 272] with T1 * 272 > 2^31: the tokens at the end are scored into the right place."""
    T1, D, P, MB = 1 << 23, 16, 16, 257
    assert T1 * 16 * ((MB + 15) // 16) > 2 ** 31
    rng = np.random.default_rng(5)
    kv = 40
    tail = 3  # only the last 40 tokens see keys (q_len > kv_len); the last 3 have non-zero queries
    q = np.zeros((T1, 1, D), np.float16)
    q[-tail:] = rng.standard_normal((tail, 1, D))
    key = dtypes.round_to(rng.standard_normal((4, P, 1, D)), "float16")
    table = np.zeros((1, MB), np.int32)
    table[0, :3] = [2, 0, 3]
    args = dict(key=ms.Tensor(key.astype(np.float16)), block_table=ms.Tensor(table),
                actual_seq_qlen=ms.Tensor(np.array([0, T1], np.int32)), actual_seq_klen=ms.Tensor(np.array([kv], np.int32)))
    out = MsaIndexScore(local_window="token")(ms.Tensor(q), **args)
    assert out.shape == (1, T1, 272)
    last = out[:, -tail - 1:, :].asnumpy()
    head = out[:, :2, :].asnumpy()
    del out
    gc.collect()
    # The same tokens as the tail of a short request see exactly the same keys (vis_end depends on
    # kv_len - q_len + t_off only).
    ref = reference.msa_index_score(q[-tail - 1:].astype(np.float64), key, block_table=table,
                                    actual_seq_qlen=np.array([0, tail + 1]), actual_seq_klen=np.array([kv]),
                                    local_window="token")
    numeric.assert_accepted(last, ref, float("-inf"), "tail rows past 2^31 elements")
    assert np.isfinite(last[0, -1, :2]).all()
    assert (head == -np.inf).all()


@pytest.mark.parametrize("layout", ["BBND", "BNBD"])
def test_key_cache_over_2_31_bytes(layout, mode):
    """Pages beyond byte 2^31 of a 2.1 GB cache are read from the right place."""
    P, D, NP = 128, 1024, 8200
    assert NP * P * D * 2 > 2 ** 31
    rng = np.random.default_rng(6)
    cache = np.zeros((NP, P, 1, D) if layout == "BBND" else (NP, 1, P, D), np.float16)
    far = [NP - 1, NP - 3]
    for page in far:
        cache[page] = rng.standard_normal(cache.shape[1:]).astype(np.float16)
    q = rng.standard_normal((2, 4, D)).astype(np.float16)
    table = np.array([[far[0], far[1]]], np.int32)
    lens = dict(actual_seq_qlen=np.array([0, 2], np.int32), actual_seq_klen=np.array([200], np.int32))
    out = MsaIndexScore(layout_key=layout, local_blocks=0)(
        ms.Tensor(q), ms.Tensor(cache), block_table=ms.Tensor(table),
        **{k: ms.Tensor(v) for k, v in lens.items()}).asnumpy()
    small = cache[far]  # the two pages, renumbered 0 and 1
    ref = reference.msa_index_score(q.astype(np.float64), small.astype(np.float64), block_table=np.array([[0, 1]]),
                                    layout_key=layout, local_blocks=0, **lens)
    del cache
    gc.collect()
    numeric.assert_accepted(out, ref, float("-inf"), f"{layout} pages past byte 2^31")


def test_unservable_size_is_refused(pynative):
    """An output MindSpore cannot allocate fails with an error, not an overflow or a crash."""
    q = ms.Tensor(np.zeros((1, 1, 16), np.float16))
    with pytest.raises((ValueError, RuntimeError, MemoryError)):
        MsaIndexScore(layout_key="TND", block_size=16, max_kv_blocks=2 ** 40, local_blocks=0)(
            q, ms.Tensor(np.zeros((16, 1, 16), np.float16)), actual_seq_qlen=ms.Tensor(np.array([0, 1], np.int32)),
            actual_seq_klen=ms.Tensor(np.array([0, 16], np.int32))).asnumpy()
