"""The bf16 pair path of the CPU kernel (kernel set "avx512-bf16": vdpbf16ps multiplies bf16 pairs exactly and
adds them in fp32, at twice the fp32 FMA rate) against the reference on values that stress it, in PyNative and
GRAPH_MODE: exponents over the whole bf16 range, and subnormal elements next to huge partners (the instruction
reads a subnormal as zero, so the kernel must take its fp32 path for such a query tile or key block). Both users
of the instruction: the pair path of several query rows and the decode dot path of at most four."""
import numpy as np
import mindspore as ms
import pytest

from ms_msa import MsaIndexScore, _lib
from ms_msa.testing import cases, numeric

PAIR_ISAS = [isa for isa in _lib.cpu_isas() if isa.endswith("bf16")]
ALL = _lib.cpu_isas()
pytestmark = pytest.mark.skipif(not PAIR_ISAS, reason="this CPU has no bf16 pair instruction (AVX512-BF16)")

# Several query rows per task (the pair path), causal, odd and even D; and decode (one token: <= 4 rows per task
# take the dot path, on vdpbf16ps too), with a D that leaves a masked tail of 5 elements and M3's D 128.
CASES = [
    cases.Case("dot-pairs-decode-gqa-d37", heads=8, kv_heads=2, head_dim=37, pages=30, q_lens=(1,) * 5,
               kv_lens=(150, 70, 33, 96, 1), block_size=16, dtype="bfloat16", local_window="token"),
    cases.Case("dot-pairs-decode-m3-d128", heads=4, head_dim=128, pages=16, q_lens=(1,) * 4,
               kv_lens=(700, 300, 129, 128), block_size=128, dtype="bfloat16", local_window="token", local_blocks=0),
    cases.Case("pairs-gqa-d37", heads=8, kv_heads=2, head_dim=37, pages=24, q_lens=(21, 6), kv_lens=(150, 70),
               block_size=16, dtype="bfloat16", local_window="token"),
    cases.Case("pairs-m3-d128", heads=4, head_dim=128, pages=12, q_lens=(40, 4), kv_lens=(600, 300),
               block_size=128, dtype="bfloat16", local_window="token", local_blocks=0),
    # D 128 with two key heads interleaved in each BBND page: the keys of a block are 2 x D apart, so the
    # path compiled for keys D apart must not be taken.
    cases.Case("pairs-bbnd-kv2-d128", heads=8, kv_heads=2, head_dim=128, pages=10, q_lens=(24, 5),
               kv_lens=(400, 130), block_size=128, dtype="bfloat16", local_window="token", local_blocks=0),
]
SUBNORMAL = 2.0 ** -130   # a bf16 subnormal (below 2**-126)
HUGE = 2.0 ** 127     # SUBNORMAL * HUGE = 1/8


def _with_values(case, query, key):
    inputs = cases.build_inputs(case, seed=5)
    inputs.set("query", query, "bfloat16")
    inputs.set("key", key, "bfloat16")
    for name in ("query", "key"):  # the subnormals reach the kernel as they are
        back = inputs.tensors[name].astype(ms.float32).asnumpy().astype(np.float64)
        assert np.array_equal(back, inputs.values[name]), name
    return inputs


def _run(inputs, case, isa, monkeypatch):
    monkeypatch.setenv("MS_MSA_CPU_ISA", isa)
    out = MsaIndexScore(**case.attrs())(*cases.call_args(inputs)).asnumpy()
    ref = inputs.run_reference()
    numeric.assert_accepted(out, ref, case.fill_value, case.name)
    return out, ref


def _shapes(case):
    key_shape = (case.pages, case.block_size, case.kv_heads, case.head_dim)
    return (sum(case.q_lens), case.heads, case.head_dim), key_shape


@pytest.mark.parametrize("isa", PAIR_ISAS)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_wide_exponent_range(isa, case, mode, monkeypatch):
    rng = np.random.default_rng(1)
    q_shape, k_shape = _shapes(case)
    # |q . k| stays inside fp32's range; terms range over ~2**-60 .. 2**60, so sums cancel and differ widely.
    query, key = cases.wide_range(rng, q_shape, -30, 30), cases.wide_range(rng, k_shape, -30, 30)
    _run(_with_values(case, query, key), case, isa, monkeypatch)


@pytest.mark.parametrize("isa", ALL)
@pytest.mark.parametrize("where", ["query", "key"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_subnormal_next_to_a_huge_partner_counts(isa, where, case, mode, monkeypatch):
    rng = np.random.default_rng(2)
    q_shape, k_shape = _shapes(case)
    query, key = rng.standard_normal(q_shape) * 1e-3, rng.standard_normal(k_shape) * 1e-3
    # One element of one query row (or of key 7 of every page) is subnormal and its partner huge: that
    # product, 1/8, decides the block maxima it enters (the other terms are ~1e-6). Read as zero it is lost.
    if where == "query":
        query[3, 1, 5] = SUBNORMAL
        key[..., 5] = HUGE
        decided = lambda ref: ref[1, 3]                                        # head 1, token 3
    else:
        key[..., 5] = 0.0
        key[:, 7, :, 5] = SUBNORMAL
        query[..., 5] = HUGE
        decided = lambda ref: ref
    _, ref = _run(_with_values(case, query, key), case, isa, monkeypatch)
    scores = decided(ref)[np.isfinite(decided(ref)) & (decided(ref) < 1e29)]
    assert scores.size and (scores > 0.1).mean() > 0.5


INT8_DECODE = cases.Case("dot-pairs-decode-int8-d100", heads=4, head_dim=100, pages=40, q_lens=(1, 1, 1),
                         kv_lens=(4001, 129, 7), block_size=128, dtype="bfloat16", int8_key=True, local_window="token",
                         local_blocks=0)


@pytest.mark.parametrize("isa", ALL)
def test_int8_key_decode_subnormal_query_counts(isa, mode, monkeypatch):
    """bf16 queries against int8 keys on the dot path: a query row whose only non-zero element is subnormal,
    with a huge dequant scale, scores k * 2**-130 * 2**126 = k / 16 (read as zero it would score 0)."""
    case = INT8_DECODE
    inputs = cases.build_inputs(case, seed=3)
    rng = np.random.default_rng(3)
    query = rng.standard_normal(inputs.values["query"].shape) * 2.0 ** -120  # normal, small: scores ~1e4
    query[0, 2, :] = 0.0
    query[0, 2, 7] = SUBNORMAL
    inputs.set("query", query, "bfloat16")
    back = inputs.tensors["query"].astype(ms.float32).asnumpy().astype(np.float64)
    assert np.array_equal(back, inputs.values["query"]) and back[0, 2, 7] == SUBNORMAL
    inputs.set("scale", np.full(inputs.values["scale"].shape, 2.0 ** 126), "float32")
    _, ref = _run(inputs, case, isa, monkeypatch)
    row = ref[2, 0][np.isfinite(ref[2, 0])]
    assert row.size > 20 and (np.abs(row) >= 1 / 16).mean() > 0.9  # the subnormal term decides every block


@pytest.mark.parametrize("isa", ALL)
@pytest.mark.parametrize("head_dim", [100, 128])  # 100: a 64-element step, then a tail of 36 (32 + 4)
@pytest.mark.parametrize("tokens", [1, 2])        # 4 rows per task: the dot path; 8: the pair path
def test_int8_keys_every_value_in_every_position(isa, head_dim, tokens, mode, monkeypatch):
    """Every int8 value, -128 included (the byte table's shared entry), at every element position, dotted alone:
    each request's first token sees one key, so its score is one dot product and no max hides a wrong element
    (a second token sees that key twice over)."""
    constant_rows = (-128, 127, -127, 0, 1, -1, 64, -64)  # each in every position of one key
    requests = 64 + len(constant_rows)
    case = cases.Case(f"int8-every-value-d{head_dim}", heads=4, head_dim=head_dim, pages=requests,
                      q_lens=(tokens,) * requests, kv_lens=(tokens,) * requests, block_size=128, dtype="bfloat16",
                      int8_key=True, local_window="token", local_blocks=0)
    inputs = cases.build_inputs(case, seed=5)
    key = np.zeros(inputs.values["key"].shape)
    page, element = np.meshgrid(np.arange(64), np.arange(head_dim), indexing="ij")
    key[:64, 0, 0, :] = (page * 37 + element * 11) % 256 - 128
    assert set(np.unique(key[:64, 0, 0, :])) == set(range(-128, 128))
    key[64:, 0, 0, :] = np.array(constant_rows)[:, None]
    key[:, 1:tokens] = key[:, :1]
    inputs.set("key", key, "int8")
    assert np.array_equal(inputs.tensors["key"].asnumpy(), key.astype(np.int8))
    out, ref = _run(inputs, case, isa, monkeypatch)
    first_tokens = ref[:, ::tokens, 0]
    assert np.isfinite(first_tokens).all() and np.abs(first_tokens).max() > 1.0


# bf16 queries against int8 keys with more than 4 rows per task: the pair path, on the keys widened to bf16.
INT8_PAIR_CASES = [
    cases.Case("pairs-int8-m3-d128", heads=4, head_dim=128, pages=12, q_lens=(40, 4), kv_lens=(600, 300),
               block_size=128, dtype="bfloat16", int8_key=True, local_window="token", local_blocks=0),
    cases.Case("pairs-int8-gqa-d37", heads=8, kv_heads=2, head_dim=37, pages=30, q_lens=(9, 3), kv_lens=(500, 129),
               block_size=16, dtype="bfloat16", int8_key=True, local_window="token"),
]


@pytest.mark.parametrize("isa", ALL)
@pytest.mark.parametrize("case", INT8_PAIR_CASES, ids=lambda c: c.name)
def test_int8_keys_on_the_pair_path(isa, case, mode, monkeypatch):
    """Queries over bf16's exponent range, int8 keys over their whole range, scales from 2**-20 to 2**20."""
    inputs = cases.build_inputs(case, seed=6)
    rng = np.random.default_rng(6)
    query = cases.wide_range(rng, inputs.values["query"].shape, -30, 30)
    key = rng.integers(-128, 128, size=inputs.values["key"].shape).astype(np.float64)
    scale = 2.0 ** rng.uniform(-20, 20, inputs.values["scale"].shape)
    for name, value, dtype in (("query", query, "bfloat16"), ("key", key, "int8"), ("scale", scale, "float32")):
        inputs.set(name, value, dtype)
    assert inputs.tensors["key"].asnumpy().min() == -128
    _run(inputs, case, isa, monkeypatch)


@pytest.mark.parametrize("isa", ALL)
def test_int8_keys_pair_path_subnormal_query_counts(isa, mode, monkeypatch):
    """A query tile with a subnormal element leaves the pair path (the instruction would read it as zero): one
    head's only non-zero element is subnormal, and with a 2**126 scale it decides that head's blocks."""
    case = INT8_PAIR_CASES[0]
    inputs = cases.build_inputs(case, seed=7)
    query = np.random.default_rng(7).standard_normal(inputs.values["query"].shape) * 2.0 ** -120
    query[:, 2, :] = 0.0
    query[:, 2, 7] = SUBNORMAL
    inputs.set("query", query, "bfloat16")
    inputs.set("scale", np.full(inputs.values["scale"].shape, 2.0 ** 126), "float32")
    _, ref = _run(inputs, case, isa, monkeypatch)
    head = ref[2][np.isfinite(ref[2])]
    assert head.size > 100 and (np.abs(head) >= 1 / 16).mean() > 0.9
