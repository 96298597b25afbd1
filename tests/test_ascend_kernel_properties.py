"""Hypothesis property cases for the AscendC kernel on the CPU model: random Ascend-valid problems
(ms_msa.testing.strategies.problems(ascend=True): fp16/bf16 queries, 16-bit or int8 keys, block size
128, D a multiple of 16 up to 128, every key layout, GQA, query heads folded into Cube rows, empty
requests, request- and token-window forcing, fill values, TND widths), each run through the kernel's
own entry and tiling and compared with the reference."""
from hypothesis import given, settings

from ms_msa.reference import msa_index_score as reference
from ms_msa.testing import ascend_model
from ms_msa.testing.numeric import assert_accepted
from ms_msa.testing.strategies import SETTINGS, problems, tensors


@settings(max_examples=40, **SETTINGS)
@given(problem=problems(ascend=True))
def test_ascend_kernel_random_problems(problem):
    values, attrs, dtype, key_dtype = problem
    t = tensors(values, dtype, key_dtype)
    out = ascend_model.msa_index_score(t["query"], t["key"], t["start_loc"], t["block_table"], t["scale"], None,
                                       t["actual_seq_qlen"], t["actual_seq_klen"], **attrs)
    assert_accepted(out, reference(**values, **attrs), attrs["fill_value"], str(attrs))
