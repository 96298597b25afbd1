"""int8-key decode on the Ascend kernel's Cube with the query as int8 digits (docs/ascend.md, "int8 keys on the
Cube: the query as int8 digits"), on the CPU model against the reference.

A task of at most 4 query rows with int8 keys and D a multiple of 32 sends the Cube the keys as they are and
each query row as 4 int8 digits (q = 2^E (d0 2^-6 + d1 2^-13 + d2 2^-20 + d3 2^-27)); the int32 dots come back
exactly and the Vector cores add them in fp32 and multiply by the whole scale. A row the digits do not hold
exactly is recomputed in fp32. These tests show which tasks take the path (by the counters: no staged keys, int32
scores), that every class of scale and of query magnitude meets the reference on it, and that a query the digits
cannot hold is recomputed, and only then."""
import numpy as np
import pytest

from ms_msa.testing import ascend_model, cases, dtypes
from ms_msa.testing.numeric import assert_accepted

DIGITS = 4
PAGE = 128


def _run(case, inputs):
    run = ascend_model.KernelRun()
    out = ascend_model.msa_index_score(*cases.call_args(inputs), **case.attrs(), run=run)
    return out, run


def _total(run, counter):
    return sum(c.get(counter, 0) for c in run.counters)


def _ops(run, op):
    return sum(c.get("vector_ops", {}).get(op, 0) for c in run.counters)


def _pages(case):
    return sum(-(-kv // case.block_size) for kv in case.kv_lens)


@pytest.mark.parametrize("name", ["X-int8-decode-m3", "X-int8-decode-m3-fp16-tnd", "X-int8-decode-gqa-n2-2-bnbd",
                                  "X-int8-decode-mha-n2-2"])
def test_int8_decode_takes_the_digit_path(name):
    """Every page leaves the Cube as int32 dots of the task's digit rows (4 per query row) and no key is staged:
    the Vector cores write only the digits and the output rows."""
    case = cases.CASES_BY_NAME[name]
    inputs = cases.build_inputs(case)
    out, run = _run(case, inputs)
    assert_accepted(out, inputs.run_reference(), case.fill_value, name)
    rows = case.heads // case.kv_heads  # query rows of a decode task
    assert _total(run, "fix_gm_bytes") == case.kv_heads * _pages(case) * rows * DIGITS * PAGE * 4
    assert _ops(run, "Cast/4/4") > 0  # the dots widened to fp32
    staged_page = PAGE * case.head_dim * 2
    assert _total(run, "mte3_bytes") < staged_page  # digits and scores only
    assert _ops(run, "WholeReduceSum/4") == 0  # nothing recomputed


@pytest.mark.parametrize("name", ["X-int8-decode-head-dim-48", "L1-int8-dequant"])
def test_other_int8_tasks_stage_their_keys(name):
    """D 48 (not a multiple of int8's 32-byte fractal width) and prefill tasks (more than 4 rows) widen the keys
    on the Vector cores for the Cube, as before: fp16 scores, the staged pages through MTE3."""
    case = cases.CASES_BY_NAME[name]
    inputs = cases.build_inputs(case)
    out, run = _run(case, inputs)
    assert_accepted(out, inputs.run_reference(), case.fill_value, name)
    assert _ops(run, "Cast/4/4") == 0
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
    """Scales from 0 and subnormal to 2^66, both signs, and queries from 2^-20 to 2^12: no fp16 on this path,
    so nothing saturates and nothing is recomputed; the scores are the exact dots times the scale in fp32."""
    case, inputs = _decode_with_scale_classes(dtype, query_scale)
    ref = inputs.run_reference()
    out, run = _run(case, inputs)
    assert_accepted(out, ref, case.fill_value, f"{dtype} {query_scale}")
    assert _ops(run, "Cast/4/4") > 0 and _ops(run, "WholeReduceSum/4") == 0


def test_a_query_the_digits_cannot_hold_is_recomputed():
    """Element 0 of every query row 2^-30 times its size: its bits fall below the fourth digit, so every
    task's pages are recomputed in fp32 (WholeReduceSum, the recompute's sums, and its key reads); the same
    requests with an ordinary query recompute nothing. Both meet the reference."""
    recomputed = {}
    for name in ("X-int8-decode-m3", "X-int8-decode-digits-inexact"):
        case = cases.CASES_BY_NAME[name]
        inputs = cases.build_inputs(case)
        out, run = _run(case, inputs)
        assert_accepted(out, inputs.run_reference(), case.fill_value, name)
        recomputed[name] = (_ops(run, "WholeReduceSum/4"), _total(run, "mte2_bytes"))
    assert recomputed["X-int8-decode-m3"][0] == 0
    assert recomputed["X-int8-decode-digits-inexact"][0] > 0
    # the recompute reads every visible page's int8 keys again
    case = cases.CASES_BY_NAME["X-int8-decode-m3"]
    assert recomputed["X-int8-decode-digits-inexact"][1] >= recomputed["X-int8-decode-m3"][1] + _pages(case) * PAGE * 128


def test_queries_out_of_the_digits_range_and_zero_rows():
    """A row of zeros (all digits 0), a row near bf16's largest values (E beyond the digits' range: recomputed)
    and a row of tiny normal values (E below it: recomputed), in one call."""
    case = cases.Case("int8-decode-extremes", 4, 128, 8, (1, 1, 1), (300, 129, 500), dtype="bfloat16",
                      int8_key=True, local_blocks=0)
    inputs = cases.build_inputs(case, seed=31)
    query = inputs.values["query"].copy()
    query[0] = 0.0
    query[1] *= 2.0 ** 104
    query[2] *= 2.0 ** -110
    inputs.values["query"] = dtypes.round_to(query, "bfloat16")
    inputs.tensors["query"] = dtypes.to_tensor(inputs.values["query"], "bfloat16")
    scale = np.full_like(inputs.values["scale"], 2.0 ** -12)  # scores of the large row stay below fp32's limit
    inputs.values["scale"] = scale
    inputs.tensors["scale"] = dtypes.to_tensor(scale, "float32")
    ref = inputs.run_reference()
    out, run = _run(case, inputs)
    assert_accepted(out, ref, case.fill_value, "extremes")
    assert _ops(run, "WholeReduceSum/4") > 0


def test_a_score_that_rests_on_the_bits_the_digits_drop():
    """Query rows (1, 2^-30, 0, ...) against keys (0, k, 0, ...) with scales 2^30: every score is k (the
    product of the element below the fourth digit, 2^-30 < 2^(E-27) with E = 1), and would be 0 from the
    digits alone: only the recompute gets them right."""
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
        inputs.values[name] = value
        inputs.tensors[name] = dtypes.to_tensor(value, dt)
    ref = inputs.run_reference()
    assert (ref[np.isfinite(ref)] >= 1).all()
    out, run = _run(case, inputs)
    assert_accepted(out, ref, case.fill_value, "dropped bits")
    assert _ops(run, "WholeReduceSum/4") > 0
