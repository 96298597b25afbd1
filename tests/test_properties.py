"""Property-based tests: random valid shapes, lengths, block tables and attributes against the numpy
reference (SPEC §6), in PyNative and GRAPH_MODE."""
import pytest
from hypothesis import given, settings

from ms_msa import MsaIndexScore, _lib, reference
from ms_msa.testing import numeric
from ms_msa.testing.strategies import SETTINGS, problems, tensors


def _check(problem):
    values, attrs, dtype, key_dtype = problem
    out = MsaIndexScore(**attrs)(**tensors(values, dtype, key_dtype)).asnumpy()
    ref = reference.msa_index_score(**values, **attrs)
    numeric.assert_accepted(out, ref, attrs["fill_value"], str(attrs))


@settings(max_examples=150, **SETTINGS)
@given(problem=problems())
def test_random_problems_pynative(problem, pynative):
    _check(problem)


@settings(max_examples=25, **SETTINGS)
@given(problem=problems())
def test_random_problems_graph(problem, tmp_path, monkeypatch):
    import mindspore as ms
    monkeypatch.chdir(tmp_path)
    ms.set_context(mode=ms.GRAPH_MODE, device_target="CPU")
    try:
        _check(problem)
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)


# The tests above run the best kernel set this CPU has; these force each of the others.
@pytest.mark.parametrize("isa", _lib.cpu_isas()[1:])
def test_random_problems_every_other_cpu_path(isa, pynative, monkeypatch):
    monkeypatch.setenv("MS_MSA_CPU_ISA", isa)

    @settings(max_examples=40, **SETTINGS)
    @given(problem=problems())
    def run(problem):
        _check(problem)

    run()
