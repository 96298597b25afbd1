"""The numpy golden of MsaIndexScore, written to be read side by side with SPEC.md §1-§4.

Clarity over speed: float64 throughout, one request / token / key head at a time. Inputs are numpy
arrays holding the values of the (already rounded) tensors; fp8/bf16 values as float arrays, an int8
key as integers. No argument checking here: the kernels' rules do that.
"""
import math

import numpy as np

INIT_FORCE_VALUE = 1e30
LOCAL_FORCE_VALUE = 1e29
OUT_WIDTH_ALIGN = 16


def round_up(x, align):
    return (x + align - 1) // align * align


def output_width(layout_key, block_table, key_rows, block_size, max_kv_blocks):
    """SPEC §4 Output: W = RoundUp(MB, 16) paged, RoundUp(max_kv_blocks or ceil(T2/P), 16) TND, >= 16."""
    if layout_key == "TND":
        blocks = max_kv_blocks if max_kv_blocks is not None else math.ceil(key_rows / block_size)
    else:
        blocks = block_table.shape[1]
    return max(round_up(blocks, OUT_WIDTH_ALIGN), OUT_WIDTH_ALIGN)


class _Keys:
    """k~[j, h_kv] of request b: the dequantised key of the request's j-th token (SPEC §1, §4 addressing)."""

    def __init__(self, key, scale, layout_key, block_table, block_size, klen, scale_bbn):
        self.key = np.asarray(key, np.float64)
        self.scale = None if scale is None else np.asarray(scale, np.float64)
        if scale_bbn:  # [NP, P, N2] -> [NP, N2, P]
            self.scale = self.scale.transpose(0, 2, 1)
        self.layout = layout_key
        self.block_table = block_table
        self.P = block_size
        self.klen = klen
        if layout_key == "BBND" and self.key.ndim == 3:  # [NP, P, D] means N2 = 1
            self.key = self.key[:, :, None, :]
        if layout_key == "TND" and self.scale is not None and self.scale.ndim == 1:  # [T2] means N2 = 1
            self.scale = self.scale[:, None]

    @property
    def n2(self):
        return self.key.shape[1] if self.layout in ("BNBD", "TND") else self.key.shape[2]

    def matrix(self, b, g, count):
        """Rows j = 0..count-1 of request b for key head g, as a [count, D] float64 matrix."""
        rows = []
        for j in range(count):
            beta, n = divmod(j, self.P)
            if self.layout == "TND":
                row = self.klen[b] + j
                vec = self.key[row, g]
                s = None if self.scale is None else self.scale[row, g]
            else:
                page = self.block_table[b, beta]  # only visible blocks are looked up
                vec = self.key[page, n, g] if self.layout == "BBND" else self.key[page, g, n]
                s = None if self.scale is None else self.scale[page, g, n]
            rows.append(vec if s is None else vec * s)
        return np.array(rows, np.float64).reshape(count, self.key.shape[-1])


def _scale_is_bbn(key, scale, layout_key, scale_layout):
    """Whether a paged scale is [NP, P, N2] (SPEC §2: [NP, N2, P] or CANN's [NP, P, N2])."""
    key_shape = np.shape(key)
    if layout_key == "BBND":
        P, N2 = key_shape[1], (1 if len(key_shape) == 3 else key_shape[2])
    else:
        N2, P = key_shape[1], key_shape[2]
    order = scale_layout.upper()
    if order == "AUTO":
        if N2 == P:
            raise ValueError("scale is ambiguous when N2 == P: pass scale_layout 'BNB' or 'BBN'")
        return tuple(np.shape(scale)[1:]) == (P, N2)
    return order == "BBN"


def msa_index_score(query, key, start_loc=None, block_table=None, scale=None, atten_mask=None,
                    actual_seq_qlen=None, actual_seq_klen=None, *, layout_key="BBND", sparse_mode=3,
                    init_blocks=0, local_blocks=1, local_window="request", fill_value=float("-inf"),
                    block_size=128, max_kv_blocks=None, scale_layout="auto"):
    """Returns the [N1, T1, W] float64 scores of SPEC §4. atten_mask is never read (as in the operator).

    scale_layout ("auto", "BNB", "BBN") tells the order of a paged int8 scale as the Cell's attribute does.
    """
    layout_key = layout_key.upper()
    local_window = local_window.lower()
    q = np.asarray(query, np.float64)
    T1, N1, D = q.shape
    qlen = np.asarray(actual_seq_qlen, np.int64)
    klen = np.asarray(actual_seq_klen, np.int64)
    B = len(qlen) - 1
    paged = layout_key != "TND"
    keys = _Keys(key, scale, layout_key, block_table, block_size, klen,
                 paged and scale is not None and _scale_is_bbn(key, scale, layout_key, scale_layout))
    if paged:
        P = keys.key.shape[1] if layout_key == "BBND" else keys.key.shape[2]
        keys.P = P
    else:
        P = block_size
    N2 = keys.n2
    group = N1 // N2  # h_kv = h // (N1 / N2)
    W = output_width(layout_key, block_table, keys.key.shape[0], P, max_kv_blocks)

    out = np.full((N1, T1, W), fill_value, np.float64)
    for b in range(B):
        q_len = qlen[b + 1] - qlen[b]
        kv_len = klen[b] if paged else klen[b + 1] - klen[b]
        if q_len == 0:
            continue
        per_head_keys = [keys.matrix(b, g, kv_len) for g in range(N2)]
        for t_off in range(q_len):
            t = qlen[b] + t_off
            # Visible end (exclusive).
            if sparse_mode == 3:
                vis_end = min(max(kv_len - q_len + t_off + 1, 0), kv_len)
            else:
                vis_end = kv_len
            n_vis = math.ceil(vis_end / P)
            for h in range(N1):
                g = h // group
                dots = per_head_keys[g][:vis_end] @ q[t, h]  # DOT (dequant already in k~), fp64
                for beta in range(n_vis):  # MASK: only keys < vis_end; MAX per block
                    out[h, t, beta] = np.max(dots[beta * P:min(beta * P + P, vis_end)])
            # Forcing REPLACES the value; local wins over init (so it is written last).
            if local_window == "request":
                n_req = math.ceil(kv_len / P)
                init_set = range(0, min(init_blocks, n_req))
                if local_blocks > 0:
                    s = int(start_loc[b])
                    local_set = range(max(0, s + 1 - local_blocks), min(s, n_req - 1) + 1)
                else:
                    local_set = range(0)
            else:
                init_set = range(0, min(init_blocks, n_vis))
                local_set = range(max(0, n_vis - local_blocks), n_vis)
            for beta in init_set:
                out[:, t, beta] = INIT_FORCE_VALUE
            for beta in local_set:
                out[:, t, beta] = LOCAL_FORCE_VALUE
    return out
