"""The AMX tile path of the CPU kernel (kernel set "avx512-amx": TDPBF16PS multiplies bf16 pairs exactly and sums
them in fp32, 16 keys x 16 query rows an instruction) against the reference, in PyNative and GRAPH_MODE: bf16
queries and keys at D 128 in tasks of 1 to 128 rows (decode, speculative decode, GQA, prefill), every key layout (keys D,
2 x D apart, packed TND), blocks whose keys end inside a tile of 16, exponents over the whole bf16 range, NaN and
infinite keys, and subnormal elements next to huge partners (the tiles read a subnormal as zero, so the kernel
must take fp32 multiply-adds for such a query or tile of keys). And fp16 queries against fp16 keys on the same tiles,
each value split exactly into two bf16 (tasks of 5 rows or more): scores exact where fp32 holds them, over the whole
fp16 range, subnormals included. Skipped on CPUs without AMX-BF16."""
import dataclasses

import numpy as np
import mindspore as ms
import pytest

from ms_msa import _lib
from ms_msa.testing import cases, checks, dtypes

ALL = _lib.cpu_isas()
TILE_ISAS = [isa for isa in ALL if isa.endswith("amx")]
pytestmark = pytest.mark.skipif(not TILE_ISAS, reason="this CPU has no AMX-BF16 tiles (or the OS did not grant them)")

SUBNORMAL = 2.0 ** -130   # a bf16 subnormal (below 2**-126)
HUGE = 2.0 ** 127         # SUBNORMAL * HUGE = 1/8


def _case(name, heads=4, kv_heads=1, q_lens=(1, 4, 3, 2, 1), kv_lens=(700, 300, 129, 77, 5), layout="BBND",
          block_size=128, dtype="bfloat16"):
    """bf16, D 128; each request's tokens x the heads of a key head are a task's rows (up to 64: 1 to 4 groups of 16).
    The kv lengths leave 1 to 15 keys in a request's last tile of 16 (a tile gathered and padded with zeros)."""
    pages = sum(-(-kv // block_size) for kv in kv_lens) + 3
    return cases.Case(name, heads=heads, kv_heads=kv_heads, head_dim=128, pages=pages, q_lens=q_lens,
                      kv_lens=kv_lens, block_size=block_size, dtype=dtype, layout=layout, local_window="token",
                      local_blocks=0)


CASES = [
    _case("tiles-m3-decode-and-spec"),                                     # 4, 16, 12, 8 and 4 rows
    _case("tiles-gqa-kv2-bbnd", heads=8, kv_heads=2, q_lens=(4, 1, 2), kv_lens=(400, 130, 21)),  # keys 2 x D apart
    _case("tiles-gqa-kv2-bnbd", heads=8, kv_heads=2, q_lens=(4, 1, 2), kv_lens=(400, 130, 21), layout="BNBD"),
    _case("tiles-tnd", q_lens=(4, 1, 3), kv_lens=(300, 129, 50), layout="TND"),
    _case("tiles-block-48", q_lens=(4, 2), kv_lens=(500, 97), block_size=48),  # 3 tiles a block
    _case("tiles-16-heads-decode", heads=16, q_lens=(1, 1), kv_lens=(900, 40)),  # 16 rows of one token
    # prefill and chunked prefill: tasks of 128 rows (8 groups of 16: the keys multiply groups 0-3, then 4-7), and
    # tails of 32, 48, 32 and 20 rows
    _case("tiles-prefill-groups", q_lens=(40, 12, 8, 5), kv_lens=(600, 12, 300, 133)),
    _case("tiles-prefill-5-to-7-groups", q_lens=(20, 24, 28, 17), kv_lens=(700, 300, 28, 17)),  # 80, 96, 112, 68 rows
    _case("tiles-prefill-gqa-kv2-tnd", heads=8, kv_heads=2, q_lens=(37, 6), kv_lens=(500, 140), layout="TND"),
]
# The same shapes in fp16 (the split tiles: tasks of 5 rows or more; decode's 4-row tasks stay on the dot path).
FP16_CASES = [dataclasses.replace(c, name=c.name.replace("tiles-", "split-tiles-"), dtype="float16") for c in CASES]


def _with_values(case, query, key, seed):
    inputs = cases.build_inputs(case, seed=seed)
    for name, value in (("query", query), ("key", key)):
        inputs.set(name, value, case.dtype)
        back = inputs.tensors[name].astype(ms.float32).asnumpy().astype(np.float64)
        assert np.array_equal(back, inputs.values[name], equal_nan=True), name  # reaches the kernel as it is
    return inputs


@pytest.mark.parametrize("isa", TILE_ISAS)
@pytest.mark.parametrize("case", CASES + FP16_CASES, ids=lambda c: c.name)
def test_tiles_against_reference_over_the_dtype_range(isa, case, mode, monkeypatch):
    monkeypatch.setenv("MS_MSA_CPU_ISA", isa)
    out = checks.run_accepted(case, cases.build_wide_inputs(case, seed=21))
    assert np.isfinite(out).any(axis=-1).all()  # every row scores its blocks


@pytest.mark.parametrize("isa", TILE_ISAS)
@pytest.mark.parametrize("where", ["query", "key"])
@pytest.mark.parametrize("case", [CASES[0], CASES[6]], ids=lambda c: c.name)  # decode and spec; prefill's groups
def test_subnormal_next_to_a_huge_partner_counts(isa, where, case, mode, monkeypatch):
    """One query element (or element 5 of key 7 of every page) is subnormal and its partner huge: that product,
    1/8 (1/16 to 1/8, a value per query row), decides the block maxima it enters (the other terms are ~1e-6). Read as zero, as the tiles read it, it is
    lost; the kernel must dot that query's task, or that tile of keys, with fp32 multiply-adds."""
    monkeypatch.setenv("MS_MSA_CPU_ISA", isa)
    rng = np.random.default_rng(2)
    q_shape = (sum(case.q_lens), case.heads, case.head_dim)
    k_shape = (case.pages, case.block_size, case.kv_heads, case.head_dim)
    query, key = rng.standard_normal(q_shape) * 1e-3, rng.standard_normal(k_shape) * 1e-3
    if where == "query":
        query[2, 1, 5] = SUBNORMAL  # token 2 (of the second request in decode and spec: a 16-row task), head 1
        key[..., 5] = HUGE
        decided = lambda ref: ref[1, 2]
    else:
        key[..., 5] = 0.0
        key[:, 7, :, 5] = SUBNORMAL
        query[..., 5] = HUGE * rng.uniform(0.5, 1.0, q_shape[:2])  # a partner of its own per row: 1/16 .. 1/8
        decided = lambda ref: ref
    inputs = _with_values(case, query, key, seed=2)
    ref = inputs.run_reference()
    checks.run_accepted(case, inputs)
    scores = decided(ref)[np.isfinite(decided(ref)) & (decided(ref) < 1e29)]
    assert scores.size and (scores > 1 / 20).mean() > 0.5


@pytest.mark.parametrize("isa", TILE_ISAS)
@pytest.mark.parametrize("case", [CASES[0], FP16_CASES[0], FP16_CASES[6]], ids=lambda c: c.name)
def test_nan_and_infinite_keys_propagate(isa, case, mode, monkeypatch):
    """A NaN key element makes its block NaN for every row that sees the key; an infinite one +-inf (or NaN against
    a zero query element). Keys placed at the start, middle and end of a tile of 16 and in a request's last tile.
    (Split, a tile of keys with such an element takes fp32: inf x a partner's zero lo part would be NaN.)"""
    monkeypatch.setenv("MS_MSA_CPU_ISA", isa)
    rng = np.random.default_rng(4)
    q_shape = (sum(case.q_lens), case.heads, case.head_dim)
    k_shape = (case.pages, case.block_size, case.kv_heads, case.head_dim)
    query, key = rng.standard_normal(q_shape), rng.standard_normal(k_shape)
    pages = cases.scrambled_table(1, 4, case.pages)[0]  # request 0's first four blocks
    key[pages[0], 0, 0, 3] = np.nan
    key[pages[1], 15, 0, 100] = np.inf
    key[pages[2], 37, 0, 64] = -np.inf
    key[pages[3], 127, 0, 0] = np.nan
    inputs = _with_values(case, query, key, seed=4)
    out = checks.run_accepted(case, inputs)
    assert np.isnan(out).any() and np.isposinf(out).any()


@pytest.mark.parametrize("isa", TILE_ISAS)
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_a_nan_at_every_place_of_a_tile_propagates(isa, dtype, mode, monkeypatch):
    """One NaN key element per page, at each of the 16 places of a tile of keys in turn (and in every tile of a
    block), for tasks of one group of rows (decode, speculative decode) and of four (prefill): the tile a row sees
    whole folds by a tree of max instructions, which may drop the NaN operand; the flag must not."""
    monkeypatch.setenv("MS_MSA_CPU_ISA", isa)
    case = _case("tiles-nan-every-place", q_lens=(1, 4, 40), kv_lens=(2048, 1100, 2048), dtype=dtype)
    rng = np.random.default_rng(9)
    key = rng.standard_normal((case.pages, case.block_size, case.kv_heads, case.head_dim))
    for page in range(case.pages):
        key[page, (16 * (page % 8) + page % 16) % case.block_size, 0, page % case.head_dim] = np.nan
    inputs = _with_values(case, rng.standard_normal((sum(case.q_lens), case.heads, case.head_dim)), key, seed=9)
    out = checks.run_accepted(case, inputs)  # NaN exactly where the reference has it
    assert np.isnan(out).sum() > 100


@pytest.mark.parametrize("isa", TILE_ISAS)
@pytest.mark.parametrize("case", [CASES[0], FP16_CASES[0], FP16_CASES[6]], ids=lambda c: c.name)
def test_tiles_bit_identical_whatever_the_thread_count(isa, case, mode, monkeypatch):
    monkeypatch.setenv("MS_MSA_CPU_ISA", isa)
    checks.assert_same_bits_for_thread_counts(case, cases.build_wide_inputs(case, seed=22))


def test_tile_path_runs_where_it_is_offered(mode, monkeypatch):
    """The tile set's bf16 decode and prefill, and its fp16 speculative decode and prefill, are the tiles' arithmetic,
    not the avx512 set's: within SPEC §6 of the reference, their bits differ (another summation order), while their
    int8-key decode and fp16 decode (the dot path in both sets) are the same bits."""
    int8 = cases.Case("tiles-not-for-int8-keys", heads=4, head_dim=128, pages=12, q_lens=(1, 4), kv_lens=(700, 300),
                      dtype="bfloat16", int8_key=True, local_window="token", local_blocks=0)
    fp16_decode = _case("split-tiles-not-for-fp16-decode", q_lens=(1, 1, 1), kv_lens=(700, 300, 129), dtype="float16")
    fp16_spec = _case("split-tiles-fp16-spec", q_lens=(4, 2), kv_lens=(700, 300), dtype="float16")  # 16 and 8 rows
    on_tiles = (CASES[0], CASES[6], fp16_spec, FP16_CASES[6])
    results = {}
    for case in on_tiles + (int8, fp16_decode):
        inputs = cases.build_inputs(case, seed=23)
        for isa in (TILE_ISAS[0], "avx512"):
            monkeypatch.setenv("MS_MSA_CPU_ISA", isa)
            results[case.name, isa] = checks.run_accepted(case, inputs).view(np.uint32)
    for case in on_tiles:
        assert not np.array_equal(results[case.name, TILE_ISAS[0]], results[case.name, "avx512"]), case.name
    for case in (int8, fp16_decode):
        assert np.array_equal(results[case.name, TILE_ISAS[0]], results[case.name, "avx512"]), case.name


def _fp16_grid(rng, shape):
    """fp16 values over the whole finite range: random signs, subnormals (2^-24 .. 2^-15) to 65504, every fraction."""
    bits = rng.integers(0, 0x7C00, size=shape).astype(np.uint16)  # every finite non-negative code
    return bits.view(np.float16).astype(np.float64) * rng.choice([-1.0, 1.0], shape)


@pytest.mark.parametrize("isa", TILE_ISAS)
@pytest.mark.parametrize("case", [FP16_CASES[0], FP16_CASES[6], FP16_CASES[7]], ids=lambda c: c.name)
def test_split_tiles_exact_over_the_fp16_range(isa, case, mode, monkeypatch):
    """One non-zero element per query row (at a place that varies by row), so every score is one product of two fp16
    values: at most 22 significant bits, held exactly by fp32. The kernel must give exactly the reference's block
    maxima, over every fp16 code, subnormals and 65504 included; a split that lost a part (lo . lo, or a value
    rounded to bf16), or a tile that flushed a small product, would not."""
    monkeypatch.setenv("MS_MSA_CPU_ISA", isa)
    rng = np.random.default_rng(31)
    q_shape = (sum(case.q_lens), case.heads, case.head_dim)
    k_shape = (case.pages, case.block_size, case.kv_heads, case.head_dim)
    query = np.zeros(q_shape)
    place = rng.integers(0, case.head_dim, size=q_shape[:2])
    np.put_along_axis(query, place[..., None], _fp16_grid(rng, q_shape[:2] + (1,)), axis=-1)
    inputs = _with_values(case, query, _fp16_grid(rng, k_shape), seed=31)
    ref = inputs.run_reference()
    out = checks.run_accepted(case, inputs)
    assert np.array_equal(out, ref.astype(np.float32), equal_nan=True)
    # the test has teeth: some scores rest on the bits a bf16 rounding of the inputs would drop
    q32, k32 = (dtypes.round_to(inputs.values[n], "bfloat16") for n in ("query", "key"))
    rounded = cases.Inputs(dict(inputs.values, query=q32, key=k32), inputs.tensors, inputs.attrs).run_reference()
    assert not np.array_equal(rounded.astype(np.float32), ref.astype(np.float32))



@pytest.mark.parametrize("isa", TILE_ISAS)
@pytest.mark.parametrize("value", [np.inf, -np.inf, np.nan])
def test_split_tiles_query_infinite_or_nan_takes_fp32(isa, value, mode, monkeypatch):
    """An infinite query element, split, would multiply the lo part of every key (0 for about one key in eight) into
    NaN where the product is +-inf: its task (speculative decode's 16 rows, a prefill task) must take fp32 and give the
    reference's +-inf; a NaN element makes its row's blocks NaN either way."""
    monkeypatch.setenv("MS_MSA_CPU_ISA", isa)
    case = _case("split-tiles-query-inf", q_lens=(4, 40), kv_lens=(700, 900), dtype="float16")
    rng = np.random.default_rng(12)
    query = rng.standard_normal((sum(case.q_lens), case.heads, case.head_dim))
    key = rng.standard_normal((case.pages, case.block_size, case.kv_heads, case.head_dim))
    query[1, 2, 17] = value   # request 0 (a 16-row task), token 1, head 2
    query[30, 0, 100] = value  # request 1 (prefill), token 26, head 0
    inputs = _with_values(case, query, key, seed=12)
    ref = inputs.run_reference()
    out = checks.run_accepted(case, inputs)
    for head, token in ((2, 1), (0, 30)):
        seen = ref[head, token][ref[head, token] > -np.inf] if value == value else ref[head, token]
        assert (np.isinf(seen) if value == value else np.isnan(seen)).any()
    assert np.isfinite(out[1, 1]).any()  # the other rows of those tasks keep finite scores
