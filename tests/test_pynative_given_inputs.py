"""PyNative hands the CPU kernel only the inputs a call gives (backends/cpu.py `pynative_given`, the kernel entry
MsaIndexScoreGiven of msa_index_score_aot.cc), where GRAPH_MODE hands it all eight with None for the absent
ones: every pattern of given inputs the case matrix has, with start_loc given and left out, bit for bit as
GRAPH_MODE; and a primitive whose tensors disagree with its `present_inputs` is refused, not read past."""
import numpy as np
import pytest
import mindspore as ms
from mindspore import ops

import ms_msa
from ms_msa import _lib
from ms_msa.backends import infer, signature
from ms_msa.testing import cases, numeric


def _given_mask(args):
    named = dict(zip(cases.CALL_ORDER, args))
    return sum(1 << i for i, name in enumerate(signature.INPUT_NAMES) if named[name] is not None)


# The smallest case of each pattern of given inputs in the matrix (0xe3, 0xe7, 0xeb, 0xef when written).
_PATTERN_CASES = {}
for _case in cases.ALL_CASES:
    _inputs = cases.build_inputs(_case)
    _mask = _given_mask(cases.call_args(_inputs))
    _size = sum(int(np.prod(t.shape)) for t in _inputs.tensors.values() if t is not None)
    if _mask not in _PATTERN_CASES or _size < _PATTERN_CASES[_mask][1]:
        _PATTERN_CASES[_mask] = (_case, _size)
PATTERN_CASES = [case for case, _ in _PATTERN_CASES.values()]
# A case with work to do and a block table, for the tests of one call.
ONE_CASE = next(case for mask, (case, size) in _PATTERN_CASES.items()
                if size > 1000 and mask & signature.input_bit("block_table"))


def test_the_matrix_has_several_patterns():
    assert len(PATTERN_CASES) >= 4, [c.name for c in PATTERN_CASES]


@pytest.mark.parametrize("without_start_loc", [False, True], ids=["start_loc", "no-start_loc"])
@pytest.mark.parametrize("case", PATTERN_CASES, ids=lambda c: c.name)
def test_pynative_given_inputs_equal_graph_mode(case, without_start_loc, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    inputs = cases.build_inputs(case, seed=3)
    attrs = case.attrs()
    if without_start_loc:  # (SPEC §3: start_loc may be omitted in token mode)
        attrs["local_window"] = inputs.attrs["local_window"] = "token"
        inputs.values["start_loc"] = inputs.tensors["start_loc"] = None
    args = cases.call_args(inputs)
    ref = inputs.run_reference()

    ms.set_context(mode=ms.PYNATIVE_MODE, device_target="CPU")
    cell = ms_msa.MsaIndexScore(**attrs)
    pynative = cell(*args).asnumpy()
    # the call went to the primitive for exactly its given inputs
    assert set(cell.score_op._given_only) == {_given_mask(args)}  # pylint: disable=protected-access
    try:
        ms.set_context(mode=ms.GRAPH_MODE)
        graph = ms_msa.MsaIndexScore(**attrs)(*args).asnumpy()
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    np.testing.assert_array_equal(pynative, graph)
    numeric.assert_accepted(pynative, ref, case.fill_value, case.name)


def test_keyword_call_takes_the_same_primitive(pynative):
    case = ONE_CASE
    args = cases.call_args(cases.build_inputs(case, seed=5))
    cell = ms_msa.MsaIndexScore(**case.attrs())
    by_position = cell(*args).asnumpy()
    by_name = cell(**dict(zip(cases.CALL_ORDER, args))).asnumpy()
    np.testing.assert_array_equal(by_position, by_name)
    assert set(cell.score_op._given_only) == {_given_mask(args)}  # pylint: disable=protected-access


def test_a_missing_required_input_is_still_named(pynative):
    case = ONE_CASE
    args = list(cases.call_args(cases.build_inputs(case)))
    args[cases.CALL_ORDER.index("actual_seq_klen")] = None
    cell = ms_msa.MsaIndexScore(**case.attrs())
    with pytest.raises(ValueError, match="actual_seq_klen"):
        cell(*args)
    assert not cell.score_op._given_only  # pylint: disable=protected-access


def _given_args(case):
    inputs = cases.build_inputs(case)
    args = cases.call_args(inputs)
    named = dict(zip(cases.CALL_ORDER, args))
    given = [named[name] for name in signature.INPUT_NAMES if named[name] is not None]
    return given, _given_mask(args), inputs.run_reference().shape


def test_the_primitive_refuses_another_count_of_inputs(pynative):
    case = ONE_CASE
    given, mask, _ = _given_args(case)
    op = ms_msa.MsaIndexScore(**case.attrs()).score_op.pynative_given(mask)
    with pytest.raises(RuntimeError, match="internal error"):
        op(*given[:-1])


def test_the_kernel_entry_refuses_tensors_its_mask_does_not_describe(pynative):
    """Past the Python infer (a plain Custom): the kernel reads `present_inputs` and refuses a tensor count
    that disagrees with it before it reads any tensor."""
    case = ONE_CASE
    given, mask, out_shape = _given_args(case)
    op = ops.Custom(f"{_lib.library_path()}:MsaIndexScoreGiven", out_shape=lambda *s: list(out_shape),
                    out_dtype=lambda *d: ms.float32, func_type="aot")
    given_op = ms_msa.MsaIndexScore(**case.attrs()).score_op.pynative_given(mask)
    for name in given_op._msa_attrs:  # the Cell's attributes as that primitive carries them
        op.add_prim_attr(name, given_op.attrs[name])
    op.add_prim_attr(infer.PRESENCE_ATTR, mask | signature.input_bit("atten_mask"))  # one more than given
    with pytest.raises(RuntimeError):
        op(*given).asnumpy()
    assert "do not match" in _lib.last_kernel_error()
