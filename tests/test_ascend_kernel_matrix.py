"""The AscendC kernel run on the CPU model of the AscendC API (ms_msa.testing.ascend_model), through its
own entry and the op_host tiling, against the numpy reference under SPEC §6: every Ascend-valid case
of the SPEC §7 matrix, the extension cases the Ascend kernel supports, query-head counts up to 128
(odd ones too), and broken contents (bad lengths, out-of-range table entries), where the model also
shows that nothing is read out of bounds (any such read stops the run)."""
import dataclasses

import numpy as np
import pytest

from ms_msa.reference import INIT_FORCE_VALUE, LOCAL_FORCE_VALUE
from ms_msa.testing import ascend_model, cases
from ms_msa.testing.numeric import assert_accepted

SPEC = [c for c in cases.SPEC_CASES if ascend_model.ascend_valid(c)]
EXTENSIONS = [c for c in cases.EXTENSION_CASES if ascend_model.ascend_valid(c)]


def _k(name, heads, d, pages, q, kv, start=None, **kw):
    return cases.Case(name, heads, d, pages, tuple(q), tuple(kv), None if start is None else tuple(start), **kw)


# Query-head counts whose rows do not split into per-token halves of at most 64 rows (N1 up to 128 with
# one key head: heads x tokens stacked into 128 Cube rows), more heads than Cube rows, GQA, int8 keys
# with both query types.
HEADS = [
    _k("K-n1-5", 5, 32, 6, (30, 7), (300, 130), (2, 0)),
    _k("K-n1-13-bf16", 13, 32, 6, (20, 3), (260, 140), (2, 1), dtype="bfloat16"),
    _k("K-n1-33-int8", 33, 32, 4, (7,), (300,), (2,), int8_key=True),
    _k("K-n1-33-bf16-int8-bnbd", 33, 16, 4, (5, 2), (200, 129), (1, 1), dtype="bfloat16", int8_key=True, layout="BNBD"),
    _k("K-n1-127", 127, 16, 4, (3, 1), (300, 70), (2, 0)),
    _k("K-n1-128", 128, 32, 4, (2, 3), (260, 300), (2, 2)),
    _k("K-n1-128-tnd-int8", 128, 16, 0, (2, 1), (200, 129), (1, 1), layout="TND", int8_key=True),
    _k("K-n1-160", 160, 16, 3, (3, 2), (200, 100), (1, 0)),  # more heads than Cube rows: one head per task
    _k("K-gqa-n1-8-n2-4-bf16-int8-tnd", 8, 32, 0, (9, 4), (300, 40), (2, 0), kv_heads=4, dtype="bfloat16",
       int8_key=True, layout="TND"),
    _k("K-gqa-n1-6-n2-2-bbnd", 6, 48, 6, (17,), (640,), (4,), kv_heads=2, init_blocks=1),
]


def _check(case):
    inputs = cases.build_inputs(case)
    out = ascend_model.msa_index_score(*cases.call_args(inputs), **case.attrs())
    assert out.dtype == np.float32
    assert_accepted(out, inputs.run_reference(), case.fill_value, case.name)


@pytest.mark.parametrize("case", SPEC, ids=[c.name for c in SPEC])
def test_ascend_kernel_spec_matrix(case):
    _check(case)


@pytest.mark.parametrize("case", EXTENSIONS + HEADS, ids=[c.name for c in EXTENSIONS + HEADS])
def test_ascend_kernel_extension_cases(case):
    _check(case)


def test_ascend_kernel_matrix_is_complete():
    """Every SPEC §7 case the Ascend rules accept is run (only the fp8 rows are not Ascend cases)."""
    skipped = {c.name for c in cases.SPEC_CASES} - {c.name for c in SPEC}
    assert skipped and all("e4m3fn" in n or "e5m2" in n for n in skipped), skipped
    assert {5, 13, 33, 127, 128} <= {c.heads for c in HEADS}


# The aclnn interface carries no max_kv_blocks: the kernel's width follows T2, and the backend widens
# or cuts it to the Cell's width RoundUp(max_kv_blocks, 16).
TND_WIDTHS = [
    cases.CASES_BY_NAME["X-tnd-max-kv-blocks"],                                   # W 48 from 16
    _k("K-tnd-width-cut", 2, 16, 0, (2, 1), (1000, 1100), layout="TND", max_kv_blocks=9),  # W 16 from 32
    dataclasses.replace(cases.CASES_BY_NAME["L0-tnd-all-q0"], name="K-tnd-width-no-tokens", max_kv_blocks=20),
]


@pytest.mark.parametrize("case", TND_WIDTHS, ids=[c.name for c in TND_WIDTHS])
def test_tnd_max_kv_blocks_sets_the_width_around_the_kernel(case):
    _check(case)


def test_tnd_request_wider_than_max_kv_blocks_is_nan():
    # Request 0 needs 17 blocks, more than W = 16: a value rule (a ValueError on CPU), NaN on Ascend.
    case = _k("K-tnd-width-broken", 2, 16, 0, (2, 1), (2100, 50), layout="TND", max_kv_blocks=16)
    inputs = cases.build_inputs(case)
    out = ascend_model.msa_index_score(*cases.call_args(inputs), **case.attrs())
    assert out.shape == (2, 3, 16) and np.isnan(out).all()


# One decode request at 16K: 8 tasks of 16 pages (W 128) on as many cores as the host's bounds launch (it
# counts an extra token tile per request, so 16): every core's share is half a task, the tasks are cut at
# multiples of 8 columns (CoreShare) and each piece scores its own columns.
CUT_TASKS = [
    _k("K-cut-bf16", 4, 128, 130, (1,), (16384,), (127,), dtype="bfloat16"),
    _k("K-cut-fp16-tnd", 4, 128, 0, (1,), (16384,), (127,), layout="TND"),
    _k("K-cut-bf16-int8-bnbd", 4, 128, 130, (1,), (16384,), (127,), dtype="bfloat16", int8_key=True, layout="BNBD"),
    _k("K-cut-fp16-int8-tnd", 4, 128, 0, (1,), (16384,), (127,), int8_key=True, layout="TND"),
    _k("K-cut-bf16-scores-overflow", 4, 128, 130, (1,), (16384,), (127,), dtype="bfloat16", query_scale=2.0 ** 12),
]


@pytest.mark.parametrize("case", CUT_TASKS, ids=[c.name for c in CUT_TASKS])
def test_tasks_cut_between_cores(case):
    inputs = cases.build_inputs(case)
    run = ascend_model.KernelRun()
    out = ascend_model.msa_index_score(*cases.call_args(inputs), **case.attrs(), run=run)
    assert_accepted(out, inputs.run_reference(), case.fill_value, case.name)
    # More cores than tasks, and every one of them multiplied keys: tasks were cut between cores.
    assert run.cores > 128 // 16
    assert all(c["cube_fractal_macs"] > 0 for c in run.counters)
    # Each of the 128 pages was multiplied once: 4 rows (one 16-row band) x 128 keys x D 128 per page, in
    # 16x16x16 fractals; int8 keys add the widening on the Cube: the 32 x 32 identity times each of the 4 D
    # slices of 32 (2 bands x 8 key groups of int8's 16x32x16 fractals each).
    per_page = 8 * 8 + (4 * 2 * 8 if case.int8_key else 0)
    assert sum(c["cube_fractal_macs"] for c in run.counters) == 128 * per_page


def test_ascend_kernel_uses_several_cores_and_both_vector_cores():
    case = cases.CASES_BY_NAME["L1-long-seq-multi-stile"]
    inputs = cases.build_inputs(case)
    run = ascend_model.KernelRun()
    out = ascend_model.msa_index_score(*cases.call_args(inputs), **case.attrs(), run=run)
    assert_accepted(out, inputs.run_reference(), case.fill_value, case.name)
    assert run.cores == len(run.counters) >= 1
    total = {k: sum(c[k] for c in run.counters) for k in ascend_model.COUNTER_NAMES}
    # 32 pages of keys (128 x 128 fp16) at least once through MTE2 into L1 and on through MTE1.
    assert total["mte2_bytes"] >= 32 * 128 * 128 * 2 and total["mte1_bytes"] >= 32 * 128 * 128 * 2
    # Each page: 64 rows (8 tokens x 8 heads) x 128 keys x D 128 = 4 x 8 x 8 fractal products.
    assert total["cube_fractal_macs"] >= 32 * 4 * 8 * 8
    # One hand-over per S-tile, not per page: 64-row tasks put 16 pages of fp16 scores in an S-tile
    # (StagePages). The 32 pages are cut into one piece per core (CoreShare), so each core hands over
    # ceil(its pages / 16) S-tiles, each set once by the Cube and freed once by each Vector core.
    assert total["vector_repeats"] > 0
    # The same repeats per instruction (the cost model prices each): per page every Vector core reduces each
    # of its 32 rows of fp16 scores in fp16 (WholeReduceMax on half, one 128-lane repeat per row) and widens
    # only the 32 row maxima (one repeat of Cast half -> float), plus its range check: one WholeReduceMax
    # per page and two per piece of a task (ScoreRange::AnyUnheld; one piece per core here).
    assert all(sum(c["vector_ops"].values()) == c["vector_repeats"] for c in run.counters)
    ops = {}
    for c in run.counters:
        for op, n in c["vector_ops"].items():
            ops[op] = ops.get(op, 0) + n
    assert ops["WholeReduceMax/2"] == 32 * 64
    assert ops["Cast/4/2"] == 32 * 2
    assert ops["WholeReduceMax/4"] == 32 * 2 + 2 * 2 * run.cores
    page_bytes = 64 * 128 * 2  # the fp16 scores of one page
    pages = [c["fix_gm_bytes"] // page_bytes for c in run.counters]
    assert sum(pages) == 32 and all(p > 0 for p in pages)  # every core the host launched has work
    assert [c["cross_core_sets"] for c in run.counters] == [3 * -(-p // 16) for p in pages]


# --- broken contents: NaN as promised, and no read out of bounds -------------------------------------

def _run_tensors(case, change):
    inputs = cases.build_inputs(case)
    args = dict(zip(cases.CALL_ORDER, cases.call_args(inputs)))
    change(args, inputs)
    return inputs, ascend_model.msa_index_score(*[args[k] for k in cases.CALL_ORDER], **case.attrs())


def _int32(values):
    import mindspore as ms
    return ms.Tensor(np.asarray(values, np.int32))


@pytest.mark.parametrize("name,qlen,klen", [
    ("qlen-not-ending-at-t1", [0, 30, 48], None),
    ("qlen-decreasing", [0, 50, 49], None),
    ("kv-longer-than-table", None, [300, 130 + 128 * 8]),
    ("kv-negative", None, [300, -5]),
])
def test_ascend_kernel_bad_lengths_give_nan_everywhere(name, qlen, klen):
    case = cases.CASES_BY_NAME["L1-prefill-unaligned"]

    def change(args, _):
        if qlen is not None:
            args["actual_seq_qlen"] = _int32(qlen)
        if klen is not None:
            args["actual_seq_klen"] = _int32(klen)

    _, out = _run_tensors(case, change)
    assert out.size > 0 and np.isnan(out).all(), name


@pytest.mark.parametrize("base", ["L1-prefill-unaligned", "L1-int8-dequant", "X-bf16-int8", "L1-bnbd"])
@pytest.mark.parametrize("entry", [-1, 8, 1 << 20])
def test_ascend_kernel_out_of_range_table_entry_scores_nan(base, entry):
    """Block 0 of request 0 names no page: it is never read (the model stops any read outside the key
    tensor) and scores NaN where a row sees it; everything else is the reference's."""
    case = cases.CASES_BY_NAME[base]
    inputs = cases.build_inputs(case)
    ref = inputs.run_reference()  # with the valid table
    table = inputs.values["block_table"].copy()
    table[0, 0] = entry

    def change(args, _):
        args["block_table"] = _int32(table)

    _, out = _run_tensors(case, change)
    q0 = case.q_lens[0]
    broken = np.zeros(ref.shape, bool)
    broken[:, :q0, 0] = True
    forced = (ref == np.float32(INIT_FORCE_VALUE)) | (ref == np.float32(LOCAL_FORCE_VALUE))
    seen = broken & ~forced & (ref != case.fill_value)
    assert seen.any()
    assert np.isnan(out[seen]).all()
    assert_accepted(np.where(broken, ref, out).astype(np.float32), ref, case.fill_value, case.name)
    # Rows of request 0 that cannot see block 0 keep the fill, or NaN from the block's Cube tile.
    unseen = broken & ~forced & (ref == case.fill_value)
    assert (np.isnan(out[unseen]) | (out[unseen] == case.fill_value)).all()


def test_ascend_kernel_counts_table():
    """The per-core counts command (python -m ms_msa.testing.ascend_model --counts) prints one row per
    core with every counter, from the run itself."""
    import io
    out = io.StringIO()
    ascend_model.counts_table(["L0-debug-trace", "L0-int8-dequant-trace"], stream=out)
    lines = out.getvalue().splitlines()
    assert lines[0].split() == ["case", "core", *ascend_model.COUNTER_NAMES]
    rows = [line.split() for line in lines[1:]]
    assert [r[0] for r in rows] == ["L0-debug-trace", "L0-int8-dequant-trace"]
    for row in rows:
        counts = dict(zip(ascend_model.COUNTER_NAMES, map(int, row[2:])))
        # TINY: 2 tokens x 2 heads of D 16 against one page of 128 keys: one 16-row band, 8 x 1 fractals.
        assert counts["cube_fractal_macs"] == 8 and counts["mte1_bytes"] > 0 and counts["vector_repeats"] > 0
        assert counts["cross_core_sets"] == (3 if row[0] == "L0-debug-trace" else 5)
