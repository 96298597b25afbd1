"""The numpy reference against hand-computed answers (so the golden itself is checked against SPEC,
not only against the kernel), and the kernel on the same hand cases."""
import math

import numpy as np
import pytest

from ms_msa import MsaIndexScore, reference
from ms_msa.testing import dtypes

NEG = float("-inf")
P = 16


def _paged(keys_1d, q_lens, kv_lens, n1=1):
    """D = 1, query = 1 everywhere: a block's score is simply the max key value it shows the token."""
    pages = math.ceil(len(keys_1d) / P)
    key = np.zeros((pages, P, 1, 1))
    key.reshape(-1)[:len(keys_1d)] = keys_1d
    return dict(query=np.ones((sum(q_lens), n1, 1)), key=key,
                block_table=np.arange(pages, dtype=np.int32)[None, :].repeat(len(q_lens), 0),
                actual_seq_qlen=np.cumsum([0] + list(q_lens)), actual_seq_klen=np.array(kv_lens))


def test_causal_block_max_by_hand():
    keys = np.arange(40, dtype=np.float64)  # key j has value j
    args = _paged(keys, [3], [40])
    out = reference.msa_index_score(**args, block_size=P, local_blocks=0)
    # Tokens see keys [0, 38), [0, 39), [0, 40): block maxima are the last visible key of each block.
    assert out[0, 0, :3].tolist() == [15, 31, 37]
    assert out[0, 2, :3].tolist() == [15, 31, 39]
    assert (out[0, :, 3:] == NEG).all()


def test_sparse_mode_0_sees_every_key():
    args = _paged(np.arange(40.0), [3], [40])
    out = reference.msa_index_score(**args, block_size=P, local_blocks=0, sparse_mode=0)
    assert (out[0, :, 2] == 39).all()


def test_tokens_before_the_kv_start_see_nothing():
    args = _paged(np.arange(20.0), [5], [3])  # q_len > kv_len: tokens 0, 1 see no key
    out = reference.msa_index_score(**args, block_size=P, local_blocks=0, fill_value=-7.0)
    assert out[0, :, 0].tolist() == [-7.0, -7.0, 0.0, 1.0, 2.0]


def test_request_forcing_replaces_and_local_wins():
    args = _paged(np.arange(80.0), [1], [80])  # 5 blocks
    out = reference.msa_index_score(**args, start_loc=np.array([1]), block_size=P, init_blocks=2, local_blocks=2)
    assert out[0, 0, :5].tolist() == [1e29, 1e29, 47, 63, 79]  # local [0, 1] wins over init [0, 2)
    out = reference.msa_index_score(**args, start_loc=np.array([9]), block_size=P, init_blocks=1, local_blocks=2)
    assert out[0, 0, :5].tolist() == [1e30, 31, 47, 63, 79]  # local [8, 9] is past the 5 blocks: dropped


def test_token_forcing_follows_each_token():
    args = _paged(np.arange(40.0), [20], [40])  # tokens see 21..40 keys: 2 or 3 blocks
    out = reference.msa_index_score(**args, block_size=P, local_window="token", local_blocks=1, init_blocks=1)
    assert out[0, 0, :3].tolist() == [1e30, 1e29, NEG]      # sees 21 keys -> 2 blocks
    assert out[0, 19, :3].tolist() == [1e30, 31, 1e29]      # sees 40 keys -> 3 blocks


def test_int8_scale_applies_before_the_max():
    key = np.zeros((1, P, 1, 1))
    key[0, :2, 0, 0] = [10, 1]
    scale = np.ones((1, 1, P))
    scale[0, 0, :2] = [0.01, 1.0]
    args = dict(query=np.ones((1, 1, 1)), key=key, scale=scale, block_table=np.zeros((1, 1), np.int32),
                actual_seq_qlen=np.array([0, 1]), actual_seq_klen=np.array([2]))
    out = reference.msa_index_score(**args, block_size=P, local_blocks=0)
    assert out[0, 0, 0] == 1.0  # max(10 * 0.01, 1 * 1.0); scaling the max would give 0.1


def test_gqa_head_mapping():
    # N1 = 4, N2 = 2: heads 0, 1 read key head 0; heads 2, 3 read key head 1.
    key = np.zeros((1, P, 2, 1))
    key[0, 0, :, 0] = [3.0, -5.0]
    args = dict(query=np.ones((1, 4, 1)), key=key, block_table=np.zeros((1, 1), np.int32),
                actual_seq_qlen=np.array([0, 1]), actual_seq_klen=np.array([1]))
    out = reference.msa_index_score(**args, block_size=P, local_blocks=0)
    assert out[:, 0, 0].tolist() == [3.0, 3.0, -5.0, -5.0]


def test_tnd_addressing_uses_the_klen_prefix():
    key = np.arange(30.0).reshape(30, 1, 1)
    args = dict(query=np.ones((2, 1, 1)), key=key, actual_seq_qlen=np.array([0, 1, 2]),
                actual_seq_klen=np.array([0, 10, 30]))
    out = reference.msa_index_score(**args, layout_key="TND", block_size=P, local_blocks=0)
    assert out[0, :, :2].tolist() == [[9.0, NEG], [25.0, 29.0]]  # request 1 reads rows 10..29


@pytest.mark.parametrize("mode_name", ["pynative", "graph"])
def test_kernel_on_the_hand_cases(mode_name, tmp_path, monkeypatch):
    import mindspore as ms
    monkeypatch.chdir(tmp_path)
    ms.set_context(mode=ms.PYNATIVE_MODE if mode_name == "pynative" else ms.GRAPH_MODE, device_target="CPU")
    try:
        args = _paged(np.arange(40.0), [20], [40], n1=2)
        attrs = dict(block_size=P, local_window="token", local_blocks=1, init_blocks=1)
        out = MsaIndexScore(**attrs)(
            dtypes.to_tensor(args["query"], "float32"), dtypes.to_tensor(args["key"], "float32"), None,
            dtypes.to_tensor(args["block_table"], "int32"), None, None,
            dtypes.to_tensor(args["actual_seq_qlen"], "int32"), dtypes.to_tensor(args["actual_seq_klen"], "int32"))
        assert out.asnumpy()[1, 19, :3].tolist() == np.array([1e30, 31.0, 1e29], np.float32).tolist()
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
