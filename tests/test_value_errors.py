"""SPEC §5 value rules (tensor contents): the CPU kernel fails the call with a message naming the rule,
never reading out of bounds; NaN/Inf inputs propagate into the scores. PyNative and GRAPH_MODE."""
import numpy as np
import mindspore as ms
import pytest

from ms_msa import MsaIndexScore, _lib, reference
from ms_msa.testing import cases, numeric

from _inputs import call, valid_args


def t(x):
    return ms.Tensor(np.array(x, np.int32))


def _expect(match, layout="BBND", attrs=None, **changes):
    args = valid_args(layout)
    args.update(changes)
    attrs = dict(attrs or {})
    if layout != "BBND":
        attrs["layout_key"] = layout
    with pytest.raises(ValueError, match=match):
        call(args, **attrs).asnumpy()


@pytest.mark.parametrize("qlen, match", [
    ([1, 3, 5], "must start at 0"),
    ([0, 4, 3], "must be non-decreasing"),
    ([0, 3, 4], "last entry 4 must equal T1 = 5"),
    ([0, 3, 6], "last entry 6 must equal T1 = 5"),
])
def test_qlen_rules(qlen, match, mode):
    _expect("'actual_seq_qlen' " + match, actual_seq_qlen=t(qlen))


def test_negative_kv_length_paged(mode):
    _expect("negative kv length", actual_seq_klen=t([40, -1]))


def test_paged_request_needs_more_blocks_than_table(mode):
    _expect("needs 4 blocks but 'block_table' has only 3 columns", actual_seq_klen=t([49, 20]))


@pytest.mark.parametrize("klen, match", [
    ([0, 40, 30], "non-decreasing"),
    ([-1, 40, 60], "negative kv length"),
    ([0, 40, 61], "past the key rows T2 = 60"),
])
def test_tnd_klen_rules(klen, match, mode):
    _expect(match, layout="TND", actual_seq_klen=t(klen))


def test_tnd_request_wider_than_output(mode):
    # With block_size 16 a request of 300 keys needs 19 blocks; max_kv_blocks=1 gives width 16.
    args = valid_args("TND")
    args["key"] = ms.Tensor(np.zeros((320, 2, 32), np.float16))
    args["actual_seq_klen"] = t([0, 300, 320])
    with pytest.raises(ValueError, match="needs 19 blocks, more than the output width 16"):
        call(args, layout_key="TND", max_kv_blocks=1).asnumpy()


@pytest.mark.parametrize("bad", [-1, 6, 2 ** 31 - 1])
def test_block_table_entry_out_of_range(bad, mode):
    table = np.array([[1, 0, 2], [3, bad, 5]], np.int32)
    _expect(r"'block_table'\[1, 1\] = .* outside the key pages \[0, 6\)", block_table=ms.Tensor(table))


def test_unread_block_table_entries_may_be_anything(mode):
    """Entries past a request's blocks, and rows of requests without queries, are never read."""
    args = valid_args()
    table = np.array([[1, 0, 2], [3, 4, -7]], np.int32)  # request 1 has kv 20: blocks 0-1 only
    args["block_table"] = ms.Tensor(table)
    values = {k: (None if v is None else v.asnumpy().astype(np.float64) if k in ("query", "key") else v.asnumpy())
              for k, v in args.items()}
    out = call(args).asnumpy()
    ref = reference.msa_index_score(**values, block_size=16)
    numeric.assert_accepted(out, ref, float("-inf"))


def test_error_does_not_poison_later_calls(mode):
    """The same Cell keeps working after a kernel rule failure (GRAPH_MODE would refuse the graph)."""
    cell = MsaIndexScore(block_size=16)
    args = valid_args()
    good = cell(**args).asnumpy()
    for _ in range(2):
        with pytest.raises(ValueError, match="must start at 0"):
            cell(**dict(args, actual_seq_qlen=t([1, 3, 5]))).asnumpy()
        np.testing.assert_array_equal(cell(**args).asnumpy(), good)


class _Wraps(ms.nn.Cell):
    """A user's Cell around the operator: in GRAPH_MODE the operator is compiled into this Cell's graph."""

    def __init__(self):
        super().__init__()
        self.op = MsaIndexScore(block_size=16)

    def construct(self, query, key, start_loc, block_table, actual_seq_qlen, actual_seq_klen):
        return self.op(query, key, start_loc, block_table, None, None, actual_seq_qlen, actual_seq_klen)


def test_wrapping_cell_recovers_under_a_new_phase(mode):
    """What README "Errors" tells a user whose own Cell holds the operator: after a kernel rule failure inside
    its graph (a RuntimeError in GRAPH_MODE, the ValueError in PyNative), a new phase name, or a new Cell, runs
    valid calls again with the right scores."""
    args = valid_args()
    names = ["query", "key", "start_loc", "block_table", "actual_seq_qlen", "actual_seq_klen"]
    good = [args[name] for name in names]
    bad = list(good)
    bad[names.index("actual_seq_qlen")] = t([1, 3, 5])
    values = {name: args[name].asnumpy() for name in names}
    ref = reference.msa_index_score(**values, block_size=16)
    cell = _Wraps()
    numeric.assert_accepted(cell(*good).asnumpy(), ref, float("-inf"))
    with pytest.raises((RuntimeError, ValueError)):
        cell(*bad).asnumpy()
    cell.phase = cell.phase + "_after_error"
    numeric.assert_accepted(cell(*good).asnumpy(), ref, float("-inf"))
    with pytest.raises((RuntimeError, ValueError)):
        cell(*bad).asnumpy()
    numeric.assert_accepted(_Wraps()(*good).asnumpy(), ref, float("-inf"))


@pytest.mark.parametrize("where", ["query", "key"])
@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
def test_nan_inf_propagate(where, value, mode):
    args = valid_args(dtype=np.float32)
    arr = args[where].asnumpy().copy()
    if where == "query":
        arr[1, 0, 3] = value          # token 1, head 0
    else:
        arr[0, 5, 0, 7] = value       # page 0 (request 0 block 1), key 5, head 0
    args[where] = ms.Tensor(arr)
    values = {k: (None if v is None else v.asnumpy()) for k, v in args.items()}
    out = call(args).asnumpy()
    ref = reference.msa_index_score(**values, block_size=16)
    assert not np.isfinite(ref).all()
    numeric.assert_accepted(out, ref, float("-inf"))


# M3's shape (block 128, D 128, 4 heads per key head) with many rows per task: the kernels' full tiles of
# keys, which every row sees, fold without a visibility mask, and must still let NaN and infinities through.
# And decode (one token per request: the dot path, on vdpbf16ps for bf16).
FULL_TILE_CASES = [
    cases.Case(f"full-tiles-{dtype}", heads=4, head_dim=128, pages=10, q_lens=(20, 4), kv_lens=(600, 300),
               block_size=128, dtype=dtype, local_window="token", local_blocks=0)
    for dtype in ("bfloat16", "float16", "float32")
] + [
    cases.Case(f"decode-{dtype}", heads=4, head_dim=128, pages=10, q_lens=(1, 1), kv_lens=(600, 300),
               block_size=128, dtype=dtype, local_window="token", local_blocks=0)
    for dtype in ("bfloat16", "float16")
]


@pytest.mark.parametrize("isa", _lib.cpu_isas())
@pytest.mark.parametrize("case", FULL_TILE_CASES, ids=lambda c: c.name)
@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
def test_nan_inf_propagate_through_full_tiles(isa, case, value, mode, monkeypatch):
    monkeypatch.setenv("MS_MSA_CPU_ISA", isa)
    inputs = cases.build_inputs(case, seed=3)
    key = inputs.values["key"].copy()
    table = inputs.values["block_table"]
    key[table[0, 1], 40, 0, 9] = value   # request 0, block 1, key 40: seen by every row of request 0
    key[table[1, 0], 3, 0, 100] = value  # request 1, block 0, key 3
    inputs.set("key", key, case.dtype)
    out = MsaIndexScore(**case.attrs())(*cases.call_args(inputs)).asnumpy()
    ref = inputs.run_reference()
    assert not np.isfinite(ref[:, :, :2]).all()
    numeric.assert_accepted(out, ref, case.fill_value, case.name)
