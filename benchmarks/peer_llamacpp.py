"""llama.cpp's MiniMax-M3 index-score chain as a peer: the same ggml ops, through the `ggml-python` package.

What llama.cpp does (src/models/minimax-m3.cpp at ggml-org/llama.cpp 1ded4cd, the sparse-layer branch of
`graph::graph`; the index-key cache from `llama_kv_cache`'s constructor):
* the index keys live in their own cache, `cache_k_idx_l<il>`, always GGML_TYPE_F32 ([D, kv_size, n_stream]),
  whatever `-ctk` says; llama.cpp has no int8 or quantised index keys;
* scores are one `ggml_mul_mat(keys [D, n_kv], queries [D, Hd * tokens])`, precision F32, over all n_kv cells
  of the stream's window (n_kv is a multiple of the 128-key block: future and empty cells are computed too);
* `ggml_add_inplace` of the attention mask cast to F32 (0 or -inf per key: causal, padding);
* `ggml_pool_2d(MAX, k0 = s0 = 128, k1 = s1 = 1)`: the block max (single-threaded in ggml-cpu; a block with
  no visible key pools to -FLT_MAX, not -inf);
* local forcing is an added bias (+1e30 on the block of the token's position, host-computed per ubatch); no
  init blocks;
* decode (one token per stream) batches all streams in one mul_mat over ne[3] and ends in `ggml_top_k`;
  multi-token batches loop over the streams and hand the pooled scores to a CPU custom op (partial_sort top-k).

How this peer maps our cases onto it:
* llama.cpp's cache is contiguous per sequence: each request's pages are gathered from the scrambled block table
  into a contiguous [n_kv, D] cache in setup (not timed), n_kv = the longest request rounded up to 256 (the
  flash-attention KV padding), the cells past a request's kv_len zero and masked;
* key types: the cache is F32 for every case, as llama.cpp allocates it (bf16 / fp16 keys are exact in F32; int8
  keys are dequantised, key * scale, in setup: what llama.cpp's F32 index cache would hold). With
  MS_MSA_LLAMACPP_CACHE=key the bf16 / fp16 cases keep their type in a BF16 / F16 cache instead (ggml's mul_mat
  takes both): a llama.cpp that does not exist, but the faster one where ggml's 16-bit dot wins (AVX512-BF16
  prefill), slower in decode here;
* the mask is built on the host in setup in F32 (llama.cpp builds it per ubatch in F16 and casts it once per
  graph for all sparse layers); queries are F32 as in llama.cpp;
* the chain is timed up to the forced scores, which must match MsaIndexScore (SPEC §4, checked against the
  reference like every peer): forcing REPLACES the value, so instead of llama.cpp's one bias add it is a
  `ggml_mul` by a 0/1 keep tensor and a `ggml_add` of 1e29 (local) / 1e30 (init) / -inf (blocks with no visible
  key, which turns the pool's -FLT_MAX into the fill value) on the pooled [nblk, Hd, tokens] scores;
* with M3's token-window forcing (local_blocks 1) the only partly visible block of a token is its forced local
  block, so the mask add cannot change these rows' output (a chain without it still passes); it is kept because
  llama.cpp pays for it, and it shows on shapes without forcing;
* "+ top_k" adds `ggml_top_k` (k = 16, M3's index top-k) on the forced scores to the same graph (llama.cpp's
  multi-token branch uses its own partial_sort custom op instead; ggml_top_k stands in for it);
* threads: MS_MSA_NUM_THREADS, else os.cpu_count(), as the fused kernel; one ggml graph plan and work buffer
  made in setup, each run() is one `ggml_graph_compute`.
"""
import ctypes
import os
import weakref

import numpy as np

from benchmarks import peers

TOP_K = 16
N_KV_PAD = 256
INIT_FORCE = 1e30


def available():
    try:
        import ggml  # noqa: F401  pylint: disable=import-outside-toplevel,unused-import
        return True
    except ImportError:
        return False


def n_threads():
    return int(os.environ.get("MS_MSA_NUM_THREADS") or os.cpu_count() or 1)


def cache_mode():
    """The cache type rule from MS_MSA_LLAMACPP_CACHE: "f32" (llama.cpp's, the default) or "key" (the key's)."""
    mode = os.environ.get("MS_MSA_LLAMACPP_CACHE", "f32")
    if mode not in ("f32", "key"):
        raise ValueError(f"MS_MSA_LLAMACPP_CACHE must be 'f32' or 'key', got {mode!r}")
    return mode


def _check_case(case):
    if case.layout != "BBND" or case.kv_heads != 1:
        raise ValueError(f"case: the llama.cpp peer takes a BBND key with N2 = 1 (M3's index cache), got "
                         f"layout {case.layout}, N2 {case.kv_heads}")
    if case.sparse_mode not in (0, 3) or case.local_window not in ("token", "request"):
        raise ValueError(f"case: sparse_mode {case.sparse_mode} / local_window {case.local_window!r} unsupported")
    if not np.isneginf(case.fill_value):
        # the pool gives -FLT_MAX for an empty block; only adding -inf turns it into the fill value exactly
        raise ValueError(f"case: the llama.cpp peer writes fill_value -inf only, got {case.fill_value}")


def _contiguous_keys(v, case, b, n_kv):
    """Request b's keys gathered from its pages into a contiguous [n_kv, D] float32 cache (int8: dequantised)."""
    P, kv = case.block_size, case.kv_lens[b]
    nb = -(-kv // P)
    pages = v["block_table"][b, :nb]
    key = v["key"].reshape(v["key"].shape[0], P, -1)                         # [NP, P, D] (N2 = 1)
    k = key[pages].reshape(nb * P, key.shape[2])[:kv]
    if case.int8_key:
        scale = v["scale"].reshape(v["scale"].shape[0], P)                   # [NP, 1, P] or [NP, P, 1]
        k = k * scale[pages].reshape(nb * P, 1)[:kv]
    out = np.zeros((n_kv, k.shape[1]), np.float32)
    out[:kv] = k
    return out


def _visible_and_forcing(v, case, b, n_kv):
    """Per query token of request b: the additive key mask [ql, n_kv] and the keep / add tensors [ql, nblk]."""
    P, ql, kv = case.block_size, case.q_lens[b], case.kv_lens[b]
    nblk = n_kv // P
    t = np.arange(ql)
    vis_end = np.clip(kv - ql + t + 1, 0, kv) if case.sparse_mode == 3 else np.full(ql, kv)
    mask = np.where(np.arange(n_kv)[None, :] < vis_end[:, None], 0.0, -np.inf).astype(np.float32)
    n_vis = -(-vis_end // P)
    blocks = np.arange(nblk)[None, :]
    if case.local_window == "token":
        init = blocks < np.minimum(case.init_blocks, n_vis)[:, None]
        local = (blocks >= (n_vis - case.local_blocks)[:, None]) & (blocks < n_vis[:, None])
    else:
        s, n_blocks = int(v["start_loc"][b]), -(-kv // P)
        init = np.broadcast_to((blocks < case.init_blocks) & (blocks < n_blocks), (ql, nblk))
        local = np.broadcast_to((blocks >= s + 1 - case.local_blocks) & (blocks <= s) & (blocks < n_blocks),
                                (ql, nblk))
    forced = init | local
    keep = np.where(forced, 0.0, 1.0).astype(np.float32)
    add = np.where(blocks >= n_vis[:, None], -np.inf, 0.0)
    add = np.where(init, INIT_FORCE, add)
    add = np.where(local, peers.LOCAL_FORCE, add).astype(np.float32)
    return mask, keep, add


class _Chain:
    """One ggml context holding the caches, inputs and graph of one case; freed with the peer's closures."""

    def __init__(self, ggml, mem_bytes, graph_nodes):
        self.g = ggml
        ggml.ggml_cpu_init()
        params = ggml.ggml_init_params(mem_size=mem_bytes, mem_buffer=None, no_alloc=False)
        self.ctx = ggml.ggml_init(params)
        if not self.ctx:
            raise MemoryError(f"ggml_init could not allocate {mem_bytes} bytes")
        self.graph = ggml.ggml_new_graph_custom(self.ctx, graph_nodes, False)
        weakref.finalize(self, ggml.ggml_free, self.ctx)

    def tensor(self, gtype, arr):
        """A new ggml tensor with numpy `arr`'s data; ggml's ne is arr.shape reversed (ne0 innermost)."""
        ne = tuple(reversed(arr.shape)) + (1,) * (4 - arr.ndim)
        t = self.g.ggml_new_tensor_4d(self.ctx, gtype, *ne)
        data = np.ascontiguousarray(arr)
        ctypes.memmove(self.g.ggml_get_data(t), data.ctypes.data, data.nbytes)
        return t

    def view_f32(self, t, shape):
        n = int(np.prod(shape))
        return np.ctypeslib.as_array((ctypes.c_float * n).from_address(self.g.ggml_get_data(t))).reshape(shape)

    def plan(self, threads):
        self.cplan = self.g.ggml_graph_plan(self.graph, threads, None)
        self.work = (ctypes.c_uint8 * max(self.cplan.work_size, 1))()
        self.cplan.work_data = ctypes.cast(self.work, ctypes.POINTER(ctypes.c_uint8))

    def compute(self):
        status = self.g.ggml_graph_compute(self.graph, ctypes.byref(self.cplan))
        if status != 0:
            raise RuntimeError(f"ggml_graph_compute returned status {status}")


def _cache_array(keys_f32, gtype, ggml):
    """The cache values in the ggml type's storage: BF16 as the top 16 bits of the (bf16-exact) float32."""
    if gtype == ggml.GGML_TYPE_F16:
        return keys_f32.astype(np.float16)
    if gtype == ggml.GGML_TYPE_BF16:
        return (keys_f32.view(np.uint32) >> 16).astype(np.uint16)
    return keys_f32


def _forced(chain, pooled, keep, add):
    g = chain.g
    return g.ggml_add(chain.ctx, g.ggml_mul(chain.ctx, pooled, keep), add)


def _build_decode(chain, v, case, q, gtype, n_kv, starts, streams):
    """llama.cpp's decode branch: all streams in one mul_mat over ne[3], one mask add, one pool."""
    g, P = chain.g, case.block_size
    caches = np.stack([_cache_array(_contiguous_keys(v, case, b, n_kv), gtype, g) for b in streams])
    parts = [_visible_and_forcing(v, case, b, n_kv) for b in streams]
    k4 = chain.tensor(gtype, caches[:, None])                                   # ne [D, n_kv, 1, ns]
    q4 = chain.tensor(g.GGML_TYPE_F32, q[starts[streams]][:, None])            # ne [D, Hd, 1, ns]
    m4 = chain.tensor(g.GGML_TYPE_F32, np.stack([p[0] for p in parts])[:, None])    # ne [n_kv, 1, 1, ns]
    keep = chain.tensor(g.GGML_TYPE_F32, np.stack([p[1] for p in parts])[:, None])  # ne [nblk, 1, 1, ns]
    add = chain.tensor(g.GGML_TYPE_F32, np.stack([p[2] for p in parts])[:, None])
    sc = g.ggml_mul_mat(chain.ctx, k4, q4)                                      # [n_kv, Hd, 1, ns]
    sc = g.ggml_add_inplace(chain.ctx, sc, m4)
    pooled = g.ggml_pool_2d(chain.ctx, sc, g.GGML_OP_POOL_MAX, P, 1, P, 1, 0.0, 0.0)
    return [(streams, _forced(chain, pooled, keep, add))]


def _build_batch(chain, v, case, q, gtype, n_kv, starts, streams):
    """llama.cpp's multi-token branch: one mul_mat, mask add and pool per stream."""
    g, P, n1, d = chain.g, case.block_size, case.heads, q.shape[2]
    outputs = []
    for b in streams:
        ql = case.q_lens[b]
        mask, keep_np, add_np = _visible_and_forcing(v, case, b, n_kv)
        kc = chain.tensor(gtype, _cache_array(_contiguous_keys(v, case, b, n_kv), gtype, g))  # ne [D, n_kv]
        qs = chain.tensor(g.GGML_TYPE_F32, q[starts[b]:starts[b] + ql].reshape(ql * n1, d))   # ne [D, Hd*S]
        mf = chain.tensor(g.GGML_TYPE_F32, mask[:, None])                       # ne [n_kv, 1, S]
        keep = chain.tensor(g.GGML_TYPE_F32, keep_np[:, None])                  # ne [nblk, 1, S]
        add = chain.tensor(g.GGML_TYPE_F32, add_np[:, None])
        sc = g.ggml_mul_mat(chain.ctx, kc, qs)                                  # [n_kv, Hd*S]
        sc = g.ggml_reshape_3d(chain.ctx, sc, n_kv, n1, ql)
        sc = g.ggml_add_inplace(chain.ctx, sc, mf)
        pooled = g.ggml_pool_2d(chain.ctx, sc, g.GGML_OP_POOL_MAX, P, 1, P, 1, 0.0, 0.0)
        outputs.append(([b], _forced(chain, pooled, keep, add)))
    return outputs


def _make(inputs, case, with_top_k):
    import ggml.ggml as ggml  # pylint: disable=import-outside-toplevel
    _check_case(case)
    v = inputs.values
    P, n1 = case.block_size, case.heads
    q = v["query"].astype(np.float32)                                          # [T1, N1, D]
    d = q.shape[2]
    gtype = ggml.GGML_TYPE_F32
    if cache_mode() == "key" and not case.int8_key:
        gtype = {"bfloat16": ggml.GGML_TYPE_BF16, "float16": ggml.GGML_TYPE_F16}.get(case.dtype, gtype)
    key_item = 4 if gtype == ggml.GGML_TYPE_F32 else 2
    n_kv = max(-(-max(max(case.kv_lens), 1) // N_KV_PAD) * N_KV_PAD, P)
    nblk = n_kv // P
    starts = np.concatenate([[0], np.cumsum(case.q_lens)]).astype(int)
    decode = all(ql == 1 for ql in case.q_lens)
    streams = [b for b, ql in enumerate(case.q_lens) if ql > 0]
    t1 = int(starts[-1])

    # bytes of every tensor the graph allocates (caches, queries, masks, scores, keep/add, pooled and after,
    # top-k), plus per-object overhead and slack
    mem = (len(streams) * n_kv * d * key_item + t1 * n1 * d * 4 + t1 * n_kv * 4
           + t1 * n1 * n_kv * 4 + t1 * nblk * 8 + 3 * t1 * n1 * nblk * 4 + t1 * n1 * TOP_K * 4)
    mem += 64 * (len(streams) + 4) * (ggml.ggml_tensor_overhead() + 64) + ggml.ggml_graph_overhead() + (8 << 20)
    chain = _Chain(ggml, int(mem), 64 * (len(streams) + 4))

    outputs = _build_decode(chain, v, case, q, gtype, n_kv, starts, streams) if decode and streams else \
        _build_batch(chain, v, case, q, gtype, n_kv, starts, streams)
    for _, t in outputs:
        ggml.ggml_build_forward_expand(chain.graph, t)
        if with_top_k:
            ggml.ggml_build_forward_expand(chain.graph, ggml.ggml_top_k(chain.ctx, t, min(TOP_K, nblk)))
    chain.plan(n_threads())

    width = max(-(-v["block_table"].shape[1] // 16) * 16, 16)
    views = []
    for reqs, t in outputs:
        rows = sum(case.q_lens[b] for b in reqs)
        views.append((reqs, chain.view_f32(t, (rows, n1, nblk))))              # token-major: [tokens, Hd, nblk]

    def run():
        chain.compute()
        return views

    def to_numpy(out_views):
        out = np.full((n1, t1, width), -np.inf, np.float32)
        cols = min(nblk, width)
        for reqs, arr in out_views:
            row = 0
            for b in reqs:
                ql = case.q_lens[b]
                out[:, starts[b]:starts[b] + ql, :cols] = arr[row:row + ql, :, :cols].transpose(1, 0, 2)
                row += ql
        return out

    run.chain = chain  # the closures keep the ggml context alive; it is freed when they are dropped
    return run, to_numpy


def make_llamacpp(inputs, case):
    """llama.cpp's index chain in ggml up to the forced block scores."""
    return _make(inputs, case, with_top_k=False)


def make_llamacpp_top_k(inputs, case):
    """The same chain with ggml_top_k (k = 16) on the forced scores, as llama.cpp ends its decode branch."""
    return _make(inputs, case, with_top_k=True)
