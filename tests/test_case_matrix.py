"""SPEC §7: the reference case matrix (CANN names) and ms_msa's extension cases, against the numpy
reference under the acceptance rule of SPEC §6, in PyNative and GRAPH_MODE."""
import numpy as np
import pytest

from ms_msa import MsaIndexScore
from ms_msa.testing import cases, numeric


def _run(case, seed=0):
    inputs = cases.build_inputs(case, seed)
    out = MsaIndexScore(**case.attrs())(*cases.call_args(inputs)).asnumpy()
    return out, inputs.run_reference()


@pytest.mark.parametrize("case", cases.SPEC_CASES, ids=lambda c: c.name)
def test_spec_case(case, mode):
    out, ref = _run(case)
    assert out.dtype == np.float32
    numeric.assert_accepted(out, ref, case.fill_value, case.name)


@pytest.mark.parametrize("case", cases.EXTENSION_CASES, ids=lambda c: c.name)
def test_extension_case(case, mode):
    out, ref = _run(case)
    numeric.assert_accepted(out, ref, case.fill_value, case.name)


def test_matrix_exercises_every_kind_of_position(pynative):
    """The matrix is only a check if its references contain scores, fills and both forcings."""
    kinds = {"score": 0, "fill": 0, "init": 0, "local": 0}
    for case in cases.ALL_CASES:
        if case.q_lens and max(case.kv_lens) > 5000:
            continue  # the reference is slow on the longest contexts; they add nothing here
        ref = cases.build_inputs(case).run_reference()
        kinds["init"] += int((ref == 1e30).sum())
        kinds["local"] += int((ref == 1e29).sum())
        kinds["fill"] += int((ref == case.fill_value).sum())
        kinds["score"] += int((np.isfinite(ref) & (np.abs(ref) < 1e29) & (ref != case.fill_value)).sum())
    assert all(v > 100 for v in kinds.values()), kinds
