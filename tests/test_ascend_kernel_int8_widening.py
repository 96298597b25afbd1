"""int8-key decode on the Ascend kernel with the keys widened on the Cube (docs/ascend.md, "int8 keys widened on
the Cube"), on the CPU model against the reference.

A task of at most 4 query rows with int8 keys and D a multiple of 32 (at most 128) sends the Cube the keys as they
are: the identity times each 32-wide slice of a page gives them as int32 in L0C, the Fixpipe writes them into L1 as
half (exact), and one fp16 Mmad with the query (each row as half, scaled by 2^(1 - E) so that max |q'| < 2) gives
scores that cannot leave fp16's range, written to the S workspace as fp16 like every other page. A row half does not
hold exactly, and a page whose scales times 2^(E - 1) reach 8 (where a Fixpipe that flushed fp16 subnormals would
break SPEC §6), are recomputed in fp32. These tests show which tasks take the path (by the counters: fp16 scores,
the widened keys through L1, nothing staged), that every class of scale and of query magnitude meets the reference
on it, and that the recompute runs exactly when a row or a page needs it."""
import numpy as np
import pytest

from ms_msa.testing import ascend_model, cases
from ms_msa.testing.numeric import assert_accepted

PAGE = 128


def _run(case, inputs):
    run = ascend_model.KernelRun()
    out = ascend_model.msa_index_score(*cases.call_args(inputs), **case.attrs(), run=run)
    return out, run


def _total(run, counter):
    return sum(c.get(counter, 0) for c in run.counters)


def _recomputed(run):
    """Vector sums of the fp32 recompute (ScoreRange::ExactScores); the path itself has none."""
    return sum(c.get("vector_ops", {}).get("WholeReduceSum/4", 0) for c in run.counters)


def _pages(case):
    return sum(-(-kv // case.block_size) for kv in case.kv_lens)


@pytest.mark.parametrize("name", ["X-int8-decode-m3", "X-int8-decode-m3-fp16-tnd", "X-int8-decode-gqa-n2-2-bnbd",
                                  "X-int8-decode-mha-n2-2"])
def test_int8_decode_widens_its_keys_on_the_cube(name):
    """Every page's scores leave the Cube as fp16 (2 bytes a score, the task's query rows only), every page's keys
    go through L1 once as half, and no key is staged: the Vector cores write only the query rows, the identity
    and the output rows."""
    case = cases.CASES_BY_NAME[name]
    inputs = cases.build_inputs(case)
    out, run = _run(case, inputs)
    assert_accepted(out, inputs.run_reference(), case.fill_value, name)
    # One key head: a task holds a token's heads; more: one query head each (the tiling's foldHeads), so a page
    # is multiplied (and widened) once per query head.
    rows = case.heads if case.kv_heads == 1 else 1
    pages = (1 if case.kv_heads == 1 else case.heads) * _pages(case)
    assert _total(run, "fix_gm_bytes") == pages * rows * PAGE * 2
    assert _total(run, "fix_l1_bytes") == pages * PAGE * case.head_dim * 2
    assert _total(run, "fix_l1_read_bytes") == pages * PAGE * case.head_dim * 4  # the int32 keys out of L0C
    assert _total(run, "mte3_bytes") < PAGE * case.head_dim * 2  # query rows, identity and scores only
    assert _recomputed(run) == 0


@pytest.mark.parametrize("name", ["X-int8-decode-head-dim-48", "L1-int8-dequant"])
def test_other_int8_tasks_stage_their_keys(name):
    """D 48 (not a multiple of int8's 32-byte fractal width) and prefill tasks (more than 4 rows) widen the keys
    on the Vector cores for the Cube, as before: nothing through L1, the staged pages through MTE3."""
    case = cases.CASES_BY_NAME[name]
    inputs = cases.build_inputs(case)
    out, run = _run(case, inputs)
    assert_accepted(out, inputs.run_reference(), case.fill_value, name)
    assert _total(run, "fix_l1_bytes") == 0
    assert _total(run, "mte3_bytes") >= PAGE * case.head_dim * 2


SCALE_CLASSES = (("zero", None), ("subnormal", None), ("2^-130", -130), ("2^-100", -100), ("2^-15", -15),
                 ("2^-1", -1), ("2^0", 0), ("2^9", 9), ("2^20", 20), ("2^66", 66))


def _decode_with_scale_classes(dtype, query_scale, layout="BBND", seed=21):
    """4 decode requests (4 heads, one key head) over 700 keys each; physical page j's scales are of class
    j % len(SCALE_CLASSES), with random signs and mantissas in [1, 2)."""
    case = cases.Case("int8-decode-scale-classes", 4, 128, 24, (1,) * 4, (700, 129, 300, 640), dtype=dtype,
                      layout=layout, int8_key=True, local_blocks=0, query_scale=query_scale)
    inputs = cases.build_inputs(case, seed=seed)
    cases.set_scale_classes(inputs, SCALE_CLASSES, seed + 1)
    return case, inputs


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("query_scale", [2.0 ** -20, 1.0, 2.0 ** 12])
def test_int8_decode_scales_and_query_magnitudes_meet_the_reference(dtype, query_scale):
    """Scales from 0 and subnormal to 2^66, both signs, and queries from 2^-20 to 2^12: the keys are widened on
    the Cube for every page, and the pages whose scales reach the bound are recomputed."""
    case, inputs = _decode_with_scale_classes(dtype, query_scale)
    ref = inputs.run_reference()
    out, run = _run(case, inputs)
    assert_accepted(out, ref, case.fill_value, f"{dtype} {query_scale}")
    assert _total(run, "fix_l1_bytes") == _pages(case) * PAGE * case.head_dim * 2


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_the_scale_bound_decides_which_pages_are_recomputed(sign):
    """Query rows with max |q| in [1, 2) (E = 1): every scale of magnitude 3.5 gives the bound 2 x 2 x 2^13 =
    32,768 and nothing is recomputed; 4.0 gives 65,536, at least 65,504, and every page is. Both meet the
    reference."""
    recomputed = {}
    for scale_value in (3.5, 4.0):
        case = cases.Case("int8-decode-bound", 4, 128, 8, (1, 1), (300, 129), dtype="bfloat16", int8_key=True,
                          local_blocks=0)
        inputs = cases.build_inputs(case, seed=51)
        query = inputs.values["query"].astype(np.float64)
        query = query / np.abs(query).max(axis=-1, keepdims=True) * 1.5
        inputs.set("query", query, "bfloat16")
        assert np.abs(inputs.values["query"]).max(axis=-1).min() >= 1.0
        inputs.set("scale", np.full_like(inputs.values["scale"], sign * scale_value), "float32")
        out, run = _run(case, inputs)
        assert_accepted(out, inputs.run_reference(), case.fill_value, f"scale {sign * scale_value}")
        recomputed[scale_value] = _recomputed(run)
    assert recomputed[3.5] == 0
    assert recomputed[4.0] > 0


def test_a_query_half_cannot_hold_is_recomputed():
    """Element 0 of every query row 2^-30 times its size: below half's reach once the row is scaled to max |q'|
    < 2, so every task's pages are recomputed in fp32 (the recompute's sums, and its key reads); the same
    requests with an ordinary query recompute nothing. Both meet the reference."""
    recomputed = {}
    for name in ("X-int8-decode-m3", "X-int8-decode-query-inexact"):
        case = cases.CASES_BY_NAME[name]
        inputs = cases.build_inputs(case)
        out, run = _run(case, inputs)
        assert_accepted(out, inputs.run_reference(), case.fill_value, name)
        recomputed[name] = (_recomputed(run), _total(run, "mte2_bytes"))
    assert recomputed["X-int8-decode-m3"][0] == 0
    assert recomputed["X-int8-decode-query-inexact"][0] > 0
    # the recompute reads every visible page's int8 keys again
    case = cases.CASES_BY_NAME["X-int8-decode-m3"]
    assert recomputed["X-int8-decode-query-inexact"][1] >= recomputed["X-int8-decode-m3"][1] + _pages(case) * PAGE * 128


def test_queries_out_of_range_and_zero_rows():
    """A row of zeros (E 0, every score 0), a row near bf16's largest values (E beyond the range: recomputed)
    and a row of tiny normal values (E below it: recomputed), in one call."""
    case = cases.Case("int8-decode-extremes", 4, 128, 8, (1, 1, 1), (300, 129, 500), dtype="bfloat16",
                      int8_key=True, local_blocks=0)
    inputs = cases.build_inputs(case, seed=31)
    query = inputs.values["query"].copy()
    query[0] = 0.0
    query[1] *= 2.0 ** 104
    query[2] *= 2.0 ** -110
    inputs.set("query", query, "bfloat16")
    # scores of the large row stay below fp32's limit
    inputs.set("scale", np.full_like(inputs.values["scale"], 2.0 ** -12), "float32")
    ref = inputs.run_reference()
    out, run = _run(case, inputs)
    assert_accepted(out, ref, case.fill_value, "extremes")
    assert _recomputed(run) > 0


def test_a_score_that_rests_on_the_bits_half_drops():
    """Query rows (1, 2^-30, 0, ...) against keys (0, k, 0, ...) with scales 2^30: every score is k (the product
    of the element half cannot hold once the row is scaled, 2^-30 < 2^-24), and would be 0 from the Cube's scores
    alone: only the recompute gets them right."""
    case = cases.Case("int8-decode-dropped-bits", 4, 128, 4, (1, 1), (300, 129), dtype="bfloat16", int8_key=True,
                      local_blocks=0)
    inputs = cases.build_inputs(case, seed=41)
    query = np.zeros_like(inputs.values["query"])
    query[..., 0] = 1.0
    query[..., 1] = 2.0 ** -30
    key = np.zeros_like(inputs.values["key"])
    key[..., 1] = np.random.default_rng(42).integers(1, 128, key[..., 1].shape)
    scale = np.full_like(inputs.values["scale"], 2.0 ** 30)
    for name, value, dt in (("query", query, "bfloat16"), ("key", key, "int8"), ("scale", scale, "float32")):
        inputs.set(name, value, dt)
    ref = inputs.run_reference()
    assert (ref[np.isfinite(ref)] >= 1).all()
    out, run = _run(case, inputs)
    assert_accepted(out, ref, case.fill_value, "dropped bits")
    assert _recomputed(run) > 0


def test_every_int8_value_widens_exactly():
    """Keys running through all 256 int8 values (down each column a rotation of -128..127), query rows of eight
    +-1 and zeros elsewhere, and scales 1: every score is an integer of magnitude at most 1,024, exact in half and
    in fp32, so the kernel's block maxima equal the reference's exactly."""
    case = cases.Case("int8-decode-every-value", 4, 128, 8, (1, 1), (512, 200), dtype="float16", int8_key=True,
                      local_blocks=0)
    inputs = cases.build_inputs(case, seed=61)
    key = inputs.values["key"]
    flat = key.reshape(-1, key.shape[-1])
    values = np.arange(-128, 128)
    flat[:] = values[(np.arange(flat.shape[0])[:, None] + 37 * np.arange(flat.shape[1])[None, :]) % 256]
    inputs.set("key", flat.reshape(key.shape).astype(np.int8), "int8")
    rng = np.random.default_rng(62)
    query = np.zeros(inputs.values["query"].shape)
    rows = query.reshape(-1, query.shape[-1])
    for row in rows:
        row[rng.choice(row.size, 8, replace=False)] = rng.choice([-1.0, 1.0], 8)
    inputs.set("query", rows.reshape(query.shape).astype(np.float16), "float16")
    inputs.set("scale", np.ones_like(inputs.values["scale"]), "float32")
    ref = inputs.run_reference()
    out, run = _run(case, inputs)
    finite = np.isfinite(ref)
    assert np.array_equal(out[finite], ref[finite])
    assert _recomputed(run) == 0 and _total(run, "fix_l1_bytes") > 0
