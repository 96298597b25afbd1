"""The peers MsaIndexScore is measured against, each computing the same scores from the same inputs.

Every peer returns scores laid out as [N1, T1, W] so that the benchmark checks each one against the
reference before timing it (a fast wrong peer would prove nothing). Each `make_*` returns a
zero-argument callable that runs the peer once and a function that turns its result into numpy.
"""
import numpy as np
import mindspore as ms
from mindspore import nn, ops

import ms_msa
from ms_msa.testing import cases as case_lib

LOCAL_FORCE = 1e29


def _padded_query_index(q_lens, t1):
    """[B, Lq] rows of the packed query for each request, padding rows pointing at a valid row."""
    lq = max(max(q_lens), 1)
    starts = np.concatenate([[0], np.cumsum(q_lens)])[:-1]
    idx = starts[:, None] + np.arange(lq)[None, :]
    return np.minimum(idx, max(t1 - 1, 0)).astype(np.int32), lq


def _unpad(scores_b_lq_n_w, q_lens, width):
    """[B, Lq, N1, MB] -> [N1, T1, W] with -inf padding columns, as the operator lays it out."""
    rows = [scores_b_lq_n_w[b, :q] for b, q in enumerate(q_lens)]
    packed = np.concatenate(rows, axis=0)                      # [T1, N1, MB]
    out = np.full((packed.shape[1], packed.shape[0], width), -np.inf, np.float32)
    out[:, :, :packed.shape[2]] = packed.transpose(1, 0, 2)
    return out


def fused_calls(case, *input_sets):
    """One ms_msa fused Cell (GRAPH_MODE) for the case, and a zero-argument call of it on each input set (a serving
    loop calls one compiled graph on each layer's cache)."""
    cell = ms_msa.MsaIndexScore(**case.attrs())
    return [(lambda args=case_lib.call_args(inputs): cell(*args)) for inputs in input_sets]


def to_numpy(out):
    """A MindSpore result on the host."""
    return out.asnumpy()


def make_fused(inputs, case):
    """ms_msa's fused kernel in GRAPH_MODE."""
    run, = fused_calls(case, inputs)
    return run, to_numpy


class SmallOpIndexScore(nn.Cell):
    """MsaIndexScore composed from MindSpore's own ops: gather pages, matmul, mask, reshape, max, force.

    MindSpore 2.10's CPU Gather has no bfloat16 kernel, so query and cache are cast to float32 first
    (what anyone composing this on CPU has to do).
    """

    def __init__(self, block_size, int8_key):
        super().__init__()
        self.block_size = block_size
        self.int8_key = int8_key

    def construct(self, query, key_cache, scale, block_table, q_index, q_len, kv_len):
        P = self.block_size
        B, lq = q_index.shape
        n1, d = query.shape[1], query.shape[2]
        mb = block_table.shape[1]
        q = ops.gather(query.astype(ms.float32), q_index, 0)                  # [B, Lq, N1, D]
        k = ops.gather(key_cache.astype(ms.float32), block_table, 0)          # [B, MB, P, 1, D]
        if self.int8_key:
            s = ops.gather(scale, block_table, 0)                             # [B, MB, 1, P]
            k = k * s.transpose(0, 1, 3, 2).reshape(B, mb, P, 1, 1)
        k = k.reshape(B, mb * P, d)
        scores = ops.bmm(q.reshape(B, lq * n1, d), k.transpose(0, 2, 1)).reshape(B, lq, n1, mb * P)
        t = ops.arange(lq, dtype=ms.int32).reshape(1, lq)
        vis_end = ops.minimum(ops.maximum(kv_len.reshape(B, 1) - q_len.reshape(B, 1) + t + 1, 0), kv_len.reshape(B, 1))
        key_pos = ops.arange(mb * P, dtype=ms.int32).reshape(1, 1, 1, mb * P)
        visible = key_pos < vis_end.reshape(B, lq, 1, 1)
        scores = ops.select(visible, scores, ops.full_like(scores, float("-inf")))
        scores = scores.reshape(B, lq, n1, mb, P).max(axis=-1)
        n_vis = (vis_end + P - 1) // P
        block = ops.arange(mb, dtype=ms.int32).reshape(1, 1, 1, mb)
        local = ops.logical_and(block == (n_vis - 1).reshape(B, lq, 1, 1), n_vis.reshape(B, lq, 1, 1) > 0)
        return ops.select(local, ops.full_like(scores, LOCAL_FORCE), scores)


def make_ms_small_ops(inputs, case):
    """The same operator from MindSpore's small ops, in GRAPH_MODE."""
    v, t = inputs.values, inputs.tensors
    q_index, _ = _padded_query_index(case.q_lens, sum(case.q_lens))
    cell = SmallOpIndexScore(case.block_size, case.int8_key)
    args = (t["query"], t["key"], t["scale"], t["block_table"], ms.Tensor(q_index),
            ms.Tensor(np.diff(v["actual_seq_qlen"]).astype(np.int32)), t["actual_seq_klen"])
    width = max(-(-v["block_table"].shape[1] // 16) * 16, 16)
    return (lambda: cell(*args)), (lambda out: _unpad(out.asnumpy(), case.q_lens, width))


def _numpy_scores(q, key, scale, table, q_lens, kv_lens, P, width):
    """One request at a time in numpy float32: gather pages, matmul, mask, block max, force."""
    n1 = q.shape[1]
    out = np.full((n1, q.shape[0], width), -np.inf, np.float32)
    start = 0
    for b, (ql, kv) in enumerate(zip(q_lens, kv_lens)):
        nb = -(-kv // P)
        if ql == 0:
            continue
        k = key[table[b, :nb]].reshape(nb * P, -1)                            # gather pages
        if scale is not None:
            k = k * scale[table[b, :nb]].reshape(nb * P, 1)
        s = q[start:start + ql].reshape(ql * n1, -1) @ k.T                     # [ql*N1, nb*P]
        vis_end = np.clip(kv - ql + np.arange(ql) + 1, 0, kv)
        s = s.reshape(ql, n1, nb * P)
        s[np.broadcast_to(np.arange(nb * P)[None, None, :] >= vis_end[:, None, None], s.shape)] = -np.inf
        s = s.reshape(ql, n1, nb, P).max(axis=-1)
        n_vis = -(-vis_end // P)
        for i in range(ql):
            if n_vis[i] > 0:
                s[i, :, n_vis[i] - 1] = LOCAL_FORCE
        out[:, start:start + ql, :nb] = s.transpose(1, 0, 2)
        start += ql
    return out


def make_numpy(inputs, case):
    """A numpy float32 composition (numpy has no bf16: it gets the float32 values of the inputs)."""
    v = inputs.values
    q = v["query"].astype(np.float32)
    key = v["key"].astype(np.float32)[:, :, 0, :]                             # [NP, P, D]
    scale = None if v["scale"] is None else v["scale"].astype(np.float32)[:, 0, :]
    width = max(-(-v["block_table"].shape[1] // 16) * 16, 16)
    args = (q, key, scale, v["block_table"], case.q_lens, case.kv_lens, case.block_size, width)
    return (lambda: _numpy_scores(*args)), (lambda out: out)


def make_torch(inputs, case):
    """A torch CPU composition (gather pages in the cache dtype, fp32 matmul, mask, amax), if importable."""
    import torch  # pylint: disable=import-outside-toplevel
    v = inputs.values
    tdt = {"bfloat16": torch.bfloat16, "float16": torch.float16}.get(case.dtype, torch.float32)
    q = torch.tensor(v["query"], dtype=torch.float32)
    key = torch.tensor(v["key"][:, :, 0, :], dtype=torch.int8 if case.int8_key else tdt)
    scale = None if v["scale"] is None else torch.tensor(v["scale"][:, 0, :], dtype=torch.float32)
    table = torch.tensor(v["block_table"], dtype=torch.long)
    P = case.block_size
    width = max(-(-v["block_table"].shape[1] // 16) * 16, 16)

    def run():
        n1 = q.shape[1]
        out = torch.full((n1, q.shape[0], width), float("-inf"))
        start = 0
        for b, (ql, kv) in enumerate(zip(case.q_lens, case.kv_lens)):
            nb = -(-kv // P)
            k = key.index_select(0, table[b, :nb]).reshape(nb * P, -1).float()
            if scale is not None:
                k = k * scale.index_select(0, table[b, :nb]).reshape(nb * P, 1)
            s = (q[start:start + ql].reshape(ql * n1, -1) @ k.T).reshape(ql, n1, nb * P)
            vis_end = torch.clamp(kv - ql + torch.arange(ql) + 1, 0, kv)
            s = s.masked_fill(torch.arange(nb * P)[None, None, :] >= vis_end[:, None, None], float("-inf"))
            s = s.reshape(ql, n1, nb, P).amax(dim=-1)
            n_vis = (vis_end + P - 1) // P
            rows = torch.nonzero(n_vis > 0).flatten()
            s[rows, :, n_vis[rows] - 1] = LOCAL_FORCE
            out[:, start:start + ql, :nb] = s.permute(1, 0, 2)
            start += ql
        return out

    return run, (lambda out: out.numpy())


def torch_available():
    try:
        import torch  # noqa: F401  pylint: disable=import-outside-toplevel,unused-import
        return True
    except ImportError:
        return False
