"""SPEC §5: every argument rule raises TypeError/ValueError naming the argument before any kernel runs,
in PyNative and GRAPH_MODE (one test per rule)."""
import numpy as np
import mindspore as ms
import pytest

from ms_msa import MsaIndexScore

from _inputs import B, D, N1, N2, NP, P, T1, call, valid_args


def t(x, dtype=None):
    return ms.Tensor(x) if dtype is None else ms.Tensor(x, dtype=dtype)


def test_valid_call_passes(mode):
    assert call(valid_args()).shape == (N1, T1, 16)


def test_one_cell_checks_every_call(mode):
    """A Cell remembers the shapes and dtypes that passed its rules, never those that failed: after a good
    call, a bad one raises, and raises again, and the good one still runs."""
    cell = MsaIndexScore(block_size=P)
    good = valid_args()
    first = cell(**good).asnumpy()
    bad = dict(good, key=t(np.zeros((NP, P, N2, D + 16), np.float16)))
    for _ in range(2):
        with pytest.raises(ValueError, match="head dims differ"):
            cell(**bad)
    np.testing.assert_array_equal(cell(**good).asnumpy(), first)
    with pytest.raises(TypeError, match="'query' dtype"):
        cell(**dict(good, query=t(np.zeros((T1, N1, D), np.int32))))  # the same shapes, another dtype


def test_rules_rerun_for_new_arguments_only(pynative, monkeypatch):
    """The remembered check is keyed by every dtype and shape: a repeated good call skips the C++ rule
    check, a call differing in one dtype or one dim runs it (and fails there, before any kernel)."""
    from ms_msa import _lib  # pylint: disable=import-outside-toplevel
    checked = []
    real = _lib.check_args
    monkeypatch.setattr(_lib, "check_args", lambda names, shapes, *a: checked.append(names) or real(names, shapes, *a))
    cell = MsaIndexScore(block_size=P)
    good = valid_args()
    cell(**good)
    cell(**good)
    assert len(checked) == 1
    for bad, exc in [(dict(good, query=t(np.zeros((T1, N1, D), np.int32))), TypeError),
                     (dict(good, key=t(np.zeros((NP, P, N2, D + 16), np.float16))), ValueError)]:
        before = len(checked)
        with pytest.raises(exc):
            cell(**bad)
        assert len(checked) == before + 1


def test_remembered_check_tells_every_dtype_apart():
    """The memo's dtype key (the TensorType's pickle state, cheap to hash) is one key per dtype: every tensor
    dtype MindSpore has gets its own, and the same dtype built twice the same one."""
    from mindspore._c_expression import typing  # pylint: disable=import-outside-toplevel
    from ms_msa.backends.infer import dtype_key  # pylint: disable=import-outside-toplevel
    dtypes = [ms.bool_, ms.int8, ms.int16, ms.int32, ms.int64, ms.uint8, ms.uint16, ms.uint32, ms.uint64,
              ms.float16, ms.bfloat16, ms.float32, ms.float64, ms.float8_e4m3fn, ms.float8_e5m2, ms.complex64]
    keys = [dtype_key(typing.TensorType(d)) for d in dtypes]
    assert len(set(keys)) == len(dtypes), keys
    assert keys == [dtype_key(typing.TensorType(d)) for d in dtypes]
    assert dtype_key(None) is None


# ---- attributes (checked when the Cell is built) ------------------------------------------------

@pytest.mark.parametrize("attrs, match", [
    ({"layout_key": "BSND"}, "'layout_key'"),
    ({"sparse_mode": 1}, "'sparse_mode'"),
    ({"init_blocks": -1}, "'init_blocks'"),
    ({"local_blocks": -2}, "'local_blocks'"),
    ({"local_window": "sliding"}, "'local_window'"),
    ({"layout_key": "TND", "block_size": 24}, "'block_size'"),
    ({"layout_key": "TND", "block_size": 2048}, "'block_size'"),
    ({"layout_key": "TND", "block_size": 0}, "'block_size'"),
    ({"layout_key": "TND", "max_kv_blocks": -3}, "'max_kv_blocks'"),
    ({"layout_key": "TND", "max_kv_blocks": -1}, "'max_kv_blocks' must be >= 0 or None, got -1"),  # None's code
    ({"layout_key": "BBND", "max_kv_blocks": -1}, "'max_kv_blocks' must be >= 0 or None, got -1"),
    ({"layout_key": "BBND", "max_kv_blocks": 8}, "'max_kv_blocks'"),
    ({"fill_value": 1e39}, "'fill_value'"),
])
def test_attribute_value_errors(attrs, match, mode):
    with pytest.raises(ValueError, match=match):
        MsaIndexScore(**attrs)


@pytest.mark.parametrize("attrs, match", [
    ({"layout_key": 1}, "'layout_key'"),
    ({"sparse_mode": 3.0}, "'sparse_mode'"),
    ({"init_blocks": True}, "'init_blocks'"),
    ({"local_blocks": "1"}, "'local_blocks'"),
    ({"local_window": None}, "'local_window'"),
    ({"fill_value": "-inf"}, "'fill_value'"),
    ({"block_size": 128.0}, "'block_size'"),
    ({"max_kv_blocks": 2.5}, "'max_kv_blocks'"),
])
def test_attribute_type_errors(attrs, match, mode):
    with pytest.raises(TypeError, match=match):
        MsaIndexScore(**attrs)


def test_layout_key_is_case_insensitive(mode):
    assert MsaIndexScore(layout_key="bnbd").layout_key == "BNBD"


# ---- tensors --------------------------------------------------------------------------------------

def _expect(exc, match, attrs=None, layout="BBND", **changes):
    args = valid_args(layout)
    args.update(changes)
    attrs = dict(attrs or {})
    if layout != "BBND":
        attrs.setdefault("layout_key", layout)
    with pytest.raises(exc, match=match):
        call(args, **attrs)


def test_query_not_rank_3(mode):
    _expect(ValueError, "'query' must be a rank-3", query=t(np.zeros((T1, N1 * D), np.float16)))


@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.int8])
def test_query_dtype(dtype, mode):
    _expect(TypeError, "'query' dtype", query=t(np.zeros((T1, N1, D), dtype)))


@pytest.mark.parametrize("layout, shape", [
    ("BBND", (NP, P, N2, D, 1)), ("BBND", (NP, P)), ("BNBD", (NP, P, D)), ("TND", (60, N2, D, 1)), ("TND", (60, D)),
])
def test_key_rank_for_layout(layout, shape, mode):
    _expect(ValueError, "'key' with layout_key " + layout, layout=layout, key=t(np.zeros(shape, np.float16)))


def test_head_dims_differ(mode):
    _expect(ValueError, "head dims differ", key=t(np.zeros((NP, P, N2, D + 16), np.float16)))


def test_query_heads_not_multiple_of_key_heads(mode):
    _expect(ValueError, "multiple of 'key' heads", key=t(np.zeros((NP, P, 3, D), np.float16)))


def test_zero_query_heads(mode):
    _expect(ValueError, "N1 > 0", query=t(np.zeros((T1, 0, D), np.float16)))


def test_zero_key_heads(mode):
    _expect(ValueError, "N2 > 0", key=t(np.zeros((NP, P, 0, D), np.float16)))


@pytest.mark.parametrize("page", [24, 1040])
def test_key_block_size(page, mode):
    _expect(ValueError, "'key' block size P", key=t(np.zeros((NP, page, N2, D), np.float16)))


def test_zero_head_dim(mode):
    _expect(ValueError, "head dim D must be > 0", query=t(np.zeros((T1, N1, 0), np.float16)),
            key=t(np.zeros((NP, P, N2, 0), np.float16)))


def test_key_dtype_differs(mode):
    _expect(TypeError, "'key' dtype must equal", key=t(np.zeros((NP, P, N2, D), np.float32)))


def test_fp8_query_with_other_fp8_key(mode):
    q = t(np.zeros((T1, N1, D), np.float32), ms.float8_e4m3fn)
    k = t(np.zeros((NP, P, N2, D), np.float32), ms.float8_e5m2)
    _expect(TypeError, "fp8 'query'", query=q, key=k)


def test_fp8_query_with_int8_key(mode):
    q = t(np.zeros((T1, N1, D), np.float32), ms.float8_e4m3fn)
    _expect(TypeError, "fp8 'query'", query=q, key=t(np.zeros((NP, P, N2, D), np.int8)),
            scale=t(np.ones((NP, N2, P), np.float32)))


def test_block_table_missing_for_paged(mode):
    _expect(ValueError, "'block_table' is required", block_table=None)


def test_block_table_given_for_tnd(mode):
    _expect(ValueError, "'block_table' must be None", layout="TND", block_table=t(np.zeros((B, 3), np.int32)))


def test_block_table_not_rank_2(mode):
    _expect(ValueError, "'block_table' must be a rank-2", block_table=t(np.zeros((B * 3,), np.int32)))


def test_block_table_batch(mode):
    _expect(ValueError, "'block_table' batch", block_table=t(np.zeros((B + 1, 3), np.int32)))


@pytest.mark.parametrize("name", ["block_table", "actual_seq_qlen", "actual_seq_klen", "start_loc"])
def test_index_tensors_int32(name, mode):
    args = valid_args()
    _expect(TypeError, f"'{name}' must be int32", **{name: t(args[name].asnumpy().astype(np.int64))})


def test_qlen_not_rank_1(mode):
    _expect(ValueError, "'actual_seq_qlen' must be a rank-1", actual_seq_qlen=t(np.array([[0, 3, 5]], np.int32)))


def test_qlen_too_short(mode):
    _expect(ValueError, "'actual_seq_qlen' must have B\\+1 >= 2", actual_seq_qlen=t(np.array([0], np.int32)))


def test_qlen_missing(mode):
    _expect(ValueError, "'actual_seq_qlen' is required", actual_seq_qlen=None)


def test_klen_missing(mode):
    _expect(ValueError, "'actual_seq_klen' is required", actual_seq_klen=None)


def test_klen_length_paged(mode):
    _expect(ValueError, "'actual_seq_klen' must have B = 2", actual_seq_klen=t(np.array([0, 40, 20], np.int32)))


def test_klen_length_tnd(mode):
    _expect(ValueError, "'actual_seq_klen' must have B\\+1 = 3", layout="TND", actual_seq_klen=t(np.array([40, 60], np.int32)))


def test_start_loc_length(mode):
    _expect(ValueError, "'start_loc' must have B = 2", start_loc=t(np.array([1, 2, 3], np.int32)))


def test_start_loc_required_for_request_window(mode):
    _expect(ValueError, "'start_loc' is required", start_loc=None)


def test_start_loc_optional_in_token_mode(mode):
    args = valid_args()
    args["start_loc"] = None
    assert call(args, local_window="token").shape == (N1, T1, 16)


def test_int8_key_without_scale(mode):
    _expect(ValueError, "'scale' is required", key=t(np.zeros((NP, P, N2, D), np.int8)))


def test_scale_on_float_key(mode):
    _expect(ValueError, "'scale' is only allowed", scale=t(np.ones((NP, N2, P), np.float32)))


def test_scale_dtype(mode):
    _expect(TypeError, "'scale' must be float32", key=t(np.zeros((NP, P, N2, D), np.int8)),
            scale=t(np.ones((NP, N2, P), np.float16)))


@pytest.mark.parametrize("shape", [(NP, P, N2 + 1), (NP, N2), (NP, N2, P, 1), (NP + 1, N2, P)])
def test_scale_shape_paged(shape, mode):
    _expect(ValueError, "'scale' with layout_key BBND", key=t(np.zeros((NP, P, N2, D), np.int8)),
            scale=t(np.ones(shape, np.float32)))


@pytest.mark.parametrize("order, shape", [("BNB", (NP, P, N2)), ("BBN", (NP, N2, P))])
def test_scale_shape_against_scale_layout(order, shape, mode):
    _expect(ValueError, f"'scale' with scale_layout '{order}'", {"scale_layout": order},
            key=t(np.zeros((NP, P, N2, D), np.int8)), scale=t(np.ones(shape, np.float32)))


def test_scale_ambiguous_when_n2_equals_p(mode):
    # N2 == P: [NP, N2, P] and [NP, P, N2] are one shape; the error says how to choose.
    _expect(ValueError, "ambiguous when N2 = P.*scale_layout='BNB'.*scale_layout='BBN'", {"local_blocks": 0},
            query=t(np.zeros((T1, P, D), np.float16)), key=t(np.zeros((NP, P, P, D), np.int8)),
            scale=t(np.ones((NP, P, P), np.float32)))


@pytest.mark.parametrize("attrs, exc, match", [
    ({"scale_layout": "NPB"}, ValueError, "'scale_layout'"),
    ({"scale_layout": "BBN", "layout_key": "TND"}, ValueError, "'scale_layout' is for the paged layouts"),
    ({"scale_layout": None}, TypeError, "'scale_layout'"),
])
def test_scale_layout_attribute(attrs, exc, match, mode):
    with pytest.raises(exc, match=match):
        MsaIndexScore(**attrs)


def test_scale_layout_is_case_insensitive(mode):
    assert MsaIndexScore(scale_layout="bbn").scale_layout == "BBN"
    assert MsaIndexScore(scale_layout="AUTO").scale_layout == "auto"


@pytest.mark.parametrize("shape", [(60,), (60, N2 + 1), (59, N2)])
def test_scale_shape_tnd(shape, mode):
    _expect(ValueError, "'scale' with layout_key TND", layout="TND", key=t(np.zeros((60, N2, D), np.int8)),
            scale=t(np.ones(shape, np.float32)))


def test_atten_mask_with_sparse_mode_0(mode):
    _expect(ValueError, "'atten_mask' is only allowed", {"sparse_mode": 0},
            atten_mask=t(np.zeros((2048, 2048), np.int8)))


def test_atten_mask_dtype(mode):
    _expect(TypeError, "'atten_mask' must be int8", atten_mask=t(np.zeros((2048, 2048), np.bool_)))


def test_atten_mask_shape(mode):
    _expect(ValueError, "'atten_mask' must be \\[2048, 2048\\]", atten_mask=t(np.zeros((128, 128), np.int8)))


def test_atten_mask_accepted_and_not_read(mode):
    args = valid_args()
    base = call(args).asnumpy()
    args["atten_mask"] = t(np.ones((2048, 2048), np.int8))
    np.testing.assert_array_equal(call(args).asnumpy(), base)


@pytest.mark.parametrize("attr", ["init_blocks", "local_blocks"])
def test_forcing_larger_than_width(attr, mode):
    _expect(ValueError, f"'{attr}' \\(17\\) is larger than the output width 16", {attr: 17})


# ---- inputs that are not tensors -------------------------------------------------------------------
# MindSpore hands an AOT kernel's C++ infer-shape only the tensor inputs, without their count: a list or a numpy
# array in a tensor's place once shifted every later shape and sent that infer past the end of its arrays (a
# crash). Each input, each kind of non-tensor, as a keyword and positionally.

def _not_a_tensor(kind, name):
    # (scale and atten_mask are absent from the valid call; any small array stands in, as only the type is checked)
    values = valid_args()[name].asnumpy() if name in valid_args() else np.ones((2, 2), np.float32)
    return {"list": values.tolist(), "tuple": tuple(values.reshape(-1).tolist()), "numpy": values, "int": 3}[kind]


@pytest.mark.parametrize("kind", ["list", "tuple", "numpy", "int"])
@pytest.mark.parametrize("name", ["query", "key", "start_loc", "block_table", "scale", "atten_mask",
                                  "actual_seq_qlen", "actual_seq_klen"])
def test_input_not_a_tensor(name, kind, mode):
    value = _not_a_tensor(kind, name)
    _expect(TypeError, f"'{name}' must be a mindspore Tensor or None, got {type(value).__name__}", **{name: value})


def test_input_not_a_tensor_positional_then_valid(mode):
    """Positional arguments take the same check, and the Cell still runs a valid call afterwards."""
    args = valid_args()
    cell = MsaIndexScore(block_size=P)
    order = ["query", "key", "start_loc", "block_table", "scale", "atten_mask", "actual_seq_qlen", "actual_seq_klen"]
    good = [args.get(name) for name in order]
    first = cell(*good).asnumpy()
    bad = list(good)
    bad[order.index("actual_seq_klen")] = [40, 20]
    with pytest.raises(TypeError, match="'actual_seq_klen' must be a mindspore Tensor or None, got list"):
        cell(*bad)
    np.testing.assert_array_equal(cell(*good).asnumpy(), first)


class _PassesAList(ms.nn.Cell):
    """A user's Cell whose construct hands the operator a Python list (GRAPH_MODE: a constant of its graph)."""

    def __init__(self):
        super().__init__()
        self.op = MsaIndexScore(block_size=P)

    def construct(self, query, key, block_table, qlen):
        return self.op(query, key, None, block_table, None, None, qlen, [40, 20])


def test_input_not_a_tensor_inside_a_users_cell(mode):
    args = valid_args()
    with pytest.raises(TypeError, match="'actual_seq_klen' must be a mindspore Tensor or None, got list"):
        _PassesAList()(args["query"], args["key"], args["block_table"], args["actual_seq_qlen"])
