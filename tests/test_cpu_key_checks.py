"""bf16 keys checked once per call for subnormal elements (score_kernel.cc, CheckKeyBlocks), in PyNative and
GRAPH_MODE. The pair instruction (kernel set "avx512-bf16") and the AMX tiles ("avx512-amx") read a subnormal as
zero, so a tile of keys with one takes fp32 multiply-adds. A request whose tokens span several tasks (prefill) has
its blocks checked before the tasks, per key head, and a task skips the check of a block found clean. Here one key
element in a few blocks of such a request is subnormal, its query partner huge: the product (1/16 .. 1/8) decides
those blocks' scores, and is lost if a block with it is taken for clean. Each planted block is on another key head
and another logical block of the request, in every key layout, beside a request of one task (checked tile by tile as
before), so a flag looked up for the wrong request, head or block fails here."""
import numpy as np
import mindspore as ms
import pytest

from ms_msa import _lib
from ms_msa.testing import cases, checks

CHECKING_ISAS = [isa for isa in _lib.cpu_isas() if isa.endswith("bf16") or isa.endswith("amx")]
pytestmark = pytest.mark.skipif(not CHECKING_ISAS, reason="this CPU has neither AVX512-BF16 nor AMX-BF16")

SUBNORMAL = 2.0 ** -130   # a bf16 subnormal (below 2**-126)
HUGE = 2.0 ** 127         # SUBNORMAL * HUGE = 1/8
ELEMENT = 5               # the element that carries the planted product

# Request 0: 70 tokens, several tasks on both paths (tiles: 32 tokens of 4 heads a task; pairs: 16), 6 blocks;
# request 1: 3 tokens, one task. Two key heads, 4 query heads each, D 128 (the tiles' D). 13 pages: the scrambled
# table (SPEC §7) then gives each block a page of its own (with 12, blocks 1 and 5 of a request share one).
CASES = [cases.Case(f"key-checks-{layout.lower()}", heads=8, kv_heads=2, head_dim=128, pages=13, q_lens=(70, 3),
                    kv_lens=(700, 200), block_size=128, dtype="bfloat16", layout=layout, local_window="token",
                    local_blocks=0)
         for layout in ("BBND", "BNBD", "TND")]
# (request, key head, logical block, key in the block) of each planted subnormal
# (block 5's key 59, the request's last, is seen by its last token alone)
PLANTED = ((0, 1, 3, 50), (0, 0, 1, 0), (0, 1, 5, 59), (1, 0, 1, 60))


def _key_index(case, values, b, g, beta, n):
    """The index into the key array of key n of logical block beta, key head g, request b."""
    if case.layout == "TND":
        return (int(values["actual_seq_klen"][b]) + beta * case.block_size + n, g, ELEMENT)
    page = int(values["block_table"][b, beta])
    return (page, n, g, ELEMENT) if case.layout == "BBND" else (page, g, n, ELEMENT)


@pytest.mark.parametrize("isa", CHECKING_ISAS)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_subnormal_keys_in_some_blocks_of_a_prefill_count(isa, case, mode, monkeypatch):
    monkeypatch.setenv("MS_MSA_CPU_ISA", isa)
    inputs = cases.build_inputs(case, seed=3)
    rng = np.random.default_rng(3)
    query = rng.standard_normal(inputs.values["query"].shape) * 1e-3
    key = rng.standard_normal(inputs.values["key"].shape) * 1e-3
    key[..., ELEMENT] = 0.0
    for b, g, beta, n in PLANTED:
        key[_key_index(case, inputs.values, b, g, beta, n)] = SUBNORMAL
    query[..., ELEMENT] = HUGE * rng.uniform(0.5, 1.0, query.shape[:2])  # a partner of its own per row
    inputs.set("query", query, "bfloat16")
    inputs.set("key", key, "bfloat16")
    for name in ("query", "key"):  # the subnormals reach the kernel as they are
        back = inputs.tensors[name].astype(ms.float32).asnumpy().astype(np.float64)
        assert np.array_equal(back, inputs.values[name]), name
    ref = inputs.run_reference()
    checks.run_accepted(case, inputs)
    group = case.heads // case.kv_heads
    q_begin = np.cumsum((0,) + case.q_lens)
    for b, g, beta, n in PLANTED:  # the planted product decides the block for every token that sees it
        q_len, kv_len = case.q_lens[b], case.kv_lens[b]
        seen_from = beta * case.block_size + n - (kv_len - q_len)  # the first token (causal) that sees the key
        decided = ref[g * group:(g + 1) * group, q_begin[b] + max(seen_from, 0):q_begin[b + 1], beta]
        assert decided.size and (decided > 1 / 20).all(), (b, g, beta)
    # and only there: every other block's score is the small terms' (~1e-5)
    unplanted = np.ones(ref.shape, bool)
    for b, g, beta, _ in PLANTED:
        unplanted[g * group:(g + 1) * group, q_begin[b]:q_begin[b + 1], beta] = False
    finite = np.isfinite(ref) & unplanted
    assert finite.sum() > 100 and (np.abs(ref[finite]) < 1e-3).all()
