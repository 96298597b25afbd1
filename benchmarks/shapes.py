"""The benchmark shapes: MiniMax-M3's index branch (N1 4, N2 1, D 128, block 128, paged BBND cache
with a scrambled block table), token-window forcing as in prefill."""
from ms_msa.testing.cases import Case

M3 = dict(heads=4, head_dim=128, kv_heads=1, block_size=128, layout="BBND", local_window="token")


def _pages(kv_lens):
    return sum(-(-kv // 128) for kv in kv_lens) + 7


def m3_case(name, q_lens, kv_lens, dtype, int8_key=False):
    return Case(f"{name}-{dtype}{'-int8key' if int8_key else ''}", pages=_pages(kv_lens), q_lens=tuple(q_lens),
                kv_lens=tuple(kv_lens), dtype=dtype, int8_key=int8_key, **M3)


# float32 rows: llama.cpp's index-key cache is F32, so these are the rows where it runs as it does in use.
DTYPES = ("bfloat16", "float16", "float32")


def benchmark_cases(dtypes=DTYPES):
    cases = []
    for dtype in dtypes:
        cases += [
            ("prefill", m3_case("prefill-4096", [4096], [4096], dtype)),
            ("prefill", m3_case("chunked-prefill-2048+14336", [2048], [16384], dtype)),
            ("decode", m3_case("decode-8x1@32768", [1] * 8, [32768] * 8, dtype)),
            ("decode", m3_case("spec-decode-4x4@65536", [4] * 4, [65536] * 4, dtype)),
            ("decode", m3_case("decode-8x1@32768", [1] * 8, [32768] * 8, dtype, int8_key=True)),
        ]
    return cases


def visible_pairs(case):
    """(query token, key) pairs the causal rule lets through, summed over requests."""
    total = 0
    for q, kv in zip(case.q_lens, case.kv_lens):
        for t in range(q):
            total += min(max(kv - q + t + 1, 0), kv)
    return total


def flops(case):
    """2 * D * N1 * visible pairs: the multiply-adds a fused kernel must do."""
    return 2 * case.head_dim * case.heads * visible_pairs(case)


def key_bytes(case):
    """Bytes of keys (and int8 scales) the visible blocks hold: what decode must read."""
    item = 1 if case.int8_key else (4 if case.dtype == "float32" else 2)
    per_key = case.head_dim * case.kv_heads * item + (4 * case.kv_heads if case.int8_key else 0)
    return sum(case.kv_lens) * per_key
