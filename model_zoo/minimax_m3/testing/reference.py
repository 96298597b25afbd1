"""The numpy golden of one MSA layer, written from the math for one request at a time.

Everything is float64 and unbatched: a request is the full list of its tokens' hidden states
x[0..L-1], and the layer's output is asked for its last `num_new` tokens (positions L-num_new..L-1),
which is what a prefill, a chunk or a decode step of that request computes. There are no caches,
pages or slots here: those are the layer's business, and the tests check that the layer, fed the
same tokens through any sequence of steps, matches this.

Notation: P block size, Nq query heads, Nkv KV heads, Ni index heads, G = max(Nkv, Ni) head groups.
Query head h is in group c = h // (Nq / G); group c reads KV head c // (G / Nkv) and the blocks that
index head c // (G / Ni) selected. Token p (0-based position) sees keys j <= p.
"""
import math

import numpy as np

INIT_FORCE = 1e30   # SPEC §4: forced scores replace the computed ones
LOCAL_FORCE = 1e29


def rms_norm(x, weight, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * weight


def project(x, w, cfg):
    """q [L, Nq, D], k and v [L, Nkv, D], index q [L, Ni, Di], index k [L, Di] from x [L, H].

    `w` holds the layer's weights as float64 arrays in MindSpore's Dense layout [out, in].
    """
    L = x.shape[0]
    q = (x @ w["wq"].T).reshape(L, cfg.num_heads, cfg.head_dim)
    k = (x @ w["wk"].T).reshape(L, cfg.num_kv_heads, cfg.head_dim)
    v = (x @ w["wv"].T).reshape(L, cfg.num_kv_heads, cfg.head_dim)
    iq = rms_norm((x @ w["index_wq"].T).reshape(L, cfg.index_heads, cfg.index_head_dim), w["index_q_norm"],
                  cfg.rms_norm_eps)
    ik = rms_norm(x @ w["index_wk"].T, w["index_k_norm"], cfg.rms_norm_eps)
    return q, k, v, iq, ik


def rope(x, base):
    """NeoX ("rotate half") rotary embedding of x [L, heads, D] at positions 0..L-1: pairs (i, i + D/2)
    rotate by the angle p / base^(2i / D)."""
    L, _, D = x.shape
    angle = np.arange(L)[:, None] / base ** (np.arange(0, D, 2) / D)[None, :]      # [L, D/2]
    cos, sin = np.cos(angle)[:, None, :], np.sin(angle)[:, None, :]
    first, second = x[..., :D // 2], x[..., D // 2:]
    return np.concatenate([first * cos - second * sin, second * cos + first * sin], axis=-1)


def block_scores(iq, ik, positions, cfg):
    """score[h, i, beta] for query tokens at `positions`: the max of <iq[p, h], ik[j]> over the keys
    j <= p of block beta, -inf for blocks with no such key, then token-mode forcing: with
    n = ceil((p + 1) / P) visible blocks, blocks [0, min(init, n)) -> 1e30 and [max(0, n - local), n)
    -> 1e29 (local written last, so it wins)."""
    P = cfg.block_size
    n_blocks = math.ceil(ik.shape[0] / P)
    out = np.full((cfg.index_heads, len(positions), n_blocks), -np.inf)
    for i, p in enumerate(positions):
        n_vis = math.ceil((p + 1) / P)
        dots = iq[p] @ ik[:p + 1].T                                   # [Ni, p + 1]
        for beta in range(n_vis):
            out[:, i, beta] = dots[:, beta * P:(beta + 1) * P].max(axis=1)
        out[:, i, :min(cfg.init_blocks, n_vis)] = INIT_FORCE
        out[:, i, max(0, n_vis - cfg.local_blocks):n_vis] = LOCAL_FORCE
    return out


def select_blocks(scores, top_k):
    """chosen[h, i, beta]: beta is among the top_k finite scores of (h, i). Fewer than top_k finite
    scores means every visible block is chosen and the rest of the top_k picks are nothing."""
    chosen = np.zeros(scores.shape, bool)
    for h in range(scores.shape[0]):
        for i in range(scores.shape[1]):
            order = np.argsort(-scores[h, i], kind="stable")[:top_k]
            order = order[np.isfinite(scores[h, i, order])]
            chosen[h, i, order] = True
    return chosen


def selection_margin(scores, top_k):
    """The smallest gap between the k-th and (k+1)-th finite score over all (h, i) that have more than
    top_k visible blocks (inf if none): a float32 kernel picks the same blocks when this is well above
    its rounding error."""
    margin = np.inf
    for row in scores.reshape(-1, scores.shape[-1]):
        finite = np.sort(row[np.isfinite(row)])[::-1]
        if len(finite) > top_k:
            margin = min(margin, finite[top_k - 1] - finite[top_k])
    return margin


def sparse_attention(q, k, v, chosen, positions, cfg):
    """Per query token p and head h: softmax over the keys j <= p whose block index head c // (G/Ni)
    chose, of <q, k_j> / sqrt(D), applied to v. Output [len(positions), Nq, D]."""
    P, G = cfg.block_size, cfg.groups
    heads_per_group = cfg.num_heads // G
    out = np.zeros((len(positions), cfg.num_heads, cfg.head_dim))
    for i, p in enumerate(positions):
        for h in range(cfg.num_heads):
            c = h // heads_per_group
            kv_head, index_head = c // (G // cfg.num_kv_heads), c // (G // cfg.index_heads)
            keys = [j for j in range(p + 1) if chosen[index_head, i, j // P]]
            if not keys:
                continue
            logits = k[keys, kv_head] @ q[p, h] / math.sqrt(cfg.head_dim)
            weights = np.exp(logits - logits.max())
            out[i, h] = (weights / weights.sum()) @ v[keys, kv_head]
    return out


def msa_layer(x, w, cfg, num_new, rope_base=None):
    """The layer's output [num_new, H] for the last num_new tokens of the request x [L, H], and the
    chosen-block mask [Ni, num_new, ceil(L / P)] and scores behind it. rope_base: rotate the main q
    and k (not the index branch) as MindFormers' RoPE does."""
    q, k, v, iq, ik = project(x, w, cfg)
    if rope_base is not None:
        q, k = rope(q, rope_base), rope(k, rope_base)
    positions = list(range(x.shape[0] - num_new, x.shape[0]))
    scores = block_scores(iq, ik, positions, cfg)
    chosen = select_blocks(scores, cfg.top_k)
    context = sparse_attention(q, k, v, chosen, positions, cfg)
    return context.reshape(num_new, -1) @ w["wo"].T, chosen, scores


def dense_causal_layer(x, w, cfg, num_new):
    """Plain causal GQA attention with the same projections, no index branch: what MSA must equal when
    top_k covers every block."""
    q, k, v, _, _ = project(x, w, cfg)
    L = x.shape[0]
    group = cfg.num_heads // cfg.num_kv_heads
    out = np.zeros((num_new, cfg.num_heads, cfg.head_dim))
    for i, p in enumerate(range(L - num_new, L)):
        for h in range(cfg.num_heads):
            logits = k[:p + 1, h // group] @ q[p, h] / math.sqrt(cfg.head_dim)
            weights = np.exp(logits - logits.max())
            out[i, h] = (weights / weights.sum()) @ v[:p + 1, h // group]
    return out.reshape(num_new, -1) @ w["wo"].T
