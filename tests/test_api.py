"""The Python API: Cell reuse across shapes, keywords, @ms.jit, the functional form, thread counts and
CPU instruction-set paths (each against the reference), in PyNative and GRAPH_MODE."""

import numpy as np
import mindspore as ms
import pytest

import ms_msa
from ms_msa import MsaIndexScore, _lib
from ms_msa.testing import cases, numeric

CASE_A = cases.CASES_BY_NAME["L1-prefill-unaligned"]
CASE_B = cases.CASES_BY_NAME["L1-decode-speculative"]


def _check(out, inputs, case):
    numeric.assert_accepted(out.asnumpy(), inputs.run_reference(), case.fill_value, case.name)


def test_one_cell_serves_every_batch_shape(mode):
    op = MsaIndexScore()
    for case in (CASE_A, CASE_B, CASE_A):
        inputs = cases.build_inputs(case, seed=3)
        _check(op(*cases.call_args(inputs)), inputs, case)


def test_keyword_call(mode):
    inputs = cases.build_inputs(CASE_A)
    out = MsaIndexScore()(**inputs.tensors)
    _check(out, inputs, CASE_A)


def test_fresh_values_same_shapes(mode):
    op = MsaIndexScore()
    first = op(*cases.call_args(cases.build_inputs(CASE_A, seed=1))).asnumpy()
    inputs = cases.build_inputs(CASE_A, seed=2)
    second = op(*cases.call_args(inputs))
    _check(second, inputs, CASE_A)
    assert not np.array_equal(first, second.asnumpy())


def test_inside_a_user_cell(mode):
    class IndexBranch(ms.nn.Cell):
        def __init__(self):
            super().__init__()
            self.score = MsaIndexScore(local_window="token")

        def construct(self, q, k, table, qlen, klen):
            s = self.score(q, k, None, table, None, None, qlen, klen)
            return ms.ops.topk(s, 4)[1]

    case = cases.Case("user-cell", 4, 64, 8, (5, 1), (300, 200), local_window="token")
    inputs = cases.build_inputs(case)
    t = inputs.tensors
    idx = IndexBranch()(t["query"], t["key"], t["block_table"], t["actual_seq_qlen"], t["actual_seq_klen"]).asnumpy()
    ref = inputs.run_reference()
    expected_best = np.argmax(ref, axis=-1)
    assert np.array_equal(idx[..., 0], expected_best)


def test_jit_function(pynative):
    op = MsaIndexScore()

    @ms.jit
    def scored(*args):
        return op(*args) * 1.0

    inputs = cases.build_inputs(CASE_B)
    _check(scored(*cases.call_args(inputs)), inputs, CASE_B)


def test_functional_form(pynative):
    case = cases.CASES_BY_NAME["X-token-window-tnd"]
    inputs = cases.build_inputs(case)
    out = ms_msa.msa_index_score(*cases.call_args(inputs), **case.attrs())
    _check(out, inputs, case)


def test_functional_form_rejects_bad_attrs(pynative):
    inputs = cases.build_inputs(CASE_A)
    with pytest.raises(ValueError, match="'sparse_mode'"):
        ms_msa.msa_index_score(*cases.call_args(inputs), sparse_mode=2)


def test_docstring_example(pynative):
    q = ms.Tensor(np.random.randn(3, 4, 128).astype(np.float16))
    k = ms.Tensor(np.random.randn(2, 128, 1, 128).astype(np.float16))
    score = MsaIndexScore(local_blocks=0)(q, k, None, ms.Tensor([[1, 0]], ms.int32), None, None,
                                          ms.Tensor([0, 3], ms.int32), ms.Tensor([200], ms.int32))
    assert score.shape == (4, 3, 16)


def test_repr_names_attributes(pynative):
    text = repr(MsaIndexScore(layout_key="tnd", local_window="TOKEN"))
    assert "layout_key=TND" in text and "local_window=token" in text


@pytest.mark.parametrize("case_name", ["L1-prefill-multi-mtile", "L0-decode-q4-kv275", "X-gqa-n2-4-tnd-int8",
                                       "X-m3-decode-int8", "X-m3-decode-bf16-d100", "X-m3-decode-bf16-int8-d100"])
def test_bit_identical_whatever_the_thread_count(case_name, mode, monkeypatch):
    case = cases.CASES_BY_NAME[case_name]
    inputs = cases.build_inputs(case)
    results = []
    for threads in ("1", "2", "3", "8"):
        monkeypatch.setenv("MS_MSA_NUM_THREADS", threads)
        results.append(MsaIndexScore(**case.attrs())(*cases.call_args(inputs)).asnumpy())
    for r in results[1:]:
        assert np.array_equal(r.view(np.uint32), results[0].view(np.uint32))
    numeric.assert_accepted(results[0], inputs.run_reference(), case.fill_value, case_name)


@pytest.mark.parametrize("isa", _lib.cpu_isas())
@pytest.mark.parametrize("case_name", ["L1-int8-dequant", "X-head-dim-96", "L0-prefill-aligned-e5m2", "X-fp32",
                                       "X-m3-decode-int8", "X-m3-decode-bf16-d100", "X-m3-decode-bf16-int8-d100", "X-gqa-decode-fp16",
                                       "X-decode-fp32-int8-tnd", "L0-debug-trace"])
def test_every_cpu_path_against_reference(isa, case_name, mode, monkeypatch):
    monkeypatch.setenv("MS_MSA_CPU_ISA", isa)
    case = cases.CASES_BY_NAME[case_name]
    inputs = cases.build_inputs(case)
    _check(MsaIndexScore(**case.attrs())(*cases.call_args(inputs)), inputs, case)


# Query tiles of every size the micro-kernels split into row groups (32/16/8 rows, with tails of keys),
# causal so that the rows of one tile see different numbers of keys, and no local block forced (it would
# hide the partial last block, where those numbers differ).
ROW_GROUP_CASES = [
    cases.Case("rows-1..64-fp16", heads=1, head_dim=64, pages=40, q_lens=(47, 33, 17, 63, 5), kv_lens=(84, 70, 54, 100, 42),
               block_size=16, local_window="token", local_blocks=0),
    cases.Case("rows-1..64-bf16", heads=1, head_dim=40, pages=40, q_lens=(47, 33, 17, 63, 5), kv_lens=(84, 70, 54, 100, 42),
               block_size=16, dtype="bfloat16", local_window="token", local_blocks=0),
    cases.Case("rows-gqa4-bf16", heads=8, kv_heads=2, head_dim=32, pages=20, q_lens=(13, 6, 9), kv_lens=(77, 50, 40),
               block_size=16, dtype="bfloat16", local_window="token", local_blocks=0),
    cases.Case("rows-int8-fp32q", heads=2, head_dim=48, pages=30, q_lens=(41, 22), kv_lens=(150, 90), block_size=32,
               dtype="float32", int8_key=True, local_window="token", local_blocks=0),
]


@pytest.mark.parametrize("isa", _lib.cpu_isas())
@pytest.mark.parametrize("case", ROW_GROUP_CASES, ids=lambda c: c.name)
def test_every_row_group_of_each_cpu_path(isa, case, mode, monkeypatch):
    monkeypatch.setenv("MS_MSA_CPU_ISA", isa)
    monkeypatch.setenv("MS_MSA_NUM_THREADS", "1")
    inputs = cases.build_inputs(case, seed=11)
    _check(MsaIndexScore(**case.attrs())(*cases.call_args(inputs)), inputs, case)


def test_generic_path_always_available():
    assert _lib.cpu_isas()[-1] == "generic"


def test_pair_set_is_the_default_only_where_its_instruction_outruns_the_fma(mode, monkeypatch):
    isas, ratio = _lib.cpu_isas(), _lib.cpu_bf16_pair_rate_ratio()
    assert _lib.cpu_bf16_pair_rate_ratio() == ratio  # measured once per process
    if "avx512-bf16" not in isas:
        assert ratio == 0.0
        return
    assert 0.05 < ratio < 20.0, ratio  # a rate the probe measured, not a default
    ordered = [isa for isa in isas if isa != "avx512-amx"]  # the tile set, where offered, leads (its own test)
    if ratio >= 1.0:
        assert ordered[0] == "avx512-bf16"
    else:
        assert ordered[:2] == ["avx512", "avx512-bf16"]
    # The default launch runs the first set (the same bits as forcing it) on a bf16 prefill, where the two
    # AVX-512 sets take different instructions.
    case = cases.Case("default-set-bf16-prefill", heads=4, head_dim=128, pages=12, q_lens=(40, 24),
                      kv_lens=(600, 300), block_size=128, dtype="bfloat16", local_window="token", local_blocks=0)
    inputs = cases.build_inputs(case, seed=3)
    monkeypatch.delenv("MS_MSA_CPU_ISA", raising=False)
    default = MsaIndexScore(**case.attrs())(*cases.call_args(inputs)).asnumpy()
    monkeypatch.setenv("MS_MSA_CPU_ISA", isas[0])
    first = MsaIndexScore(**case.attrs())(*cases.call_args(inputs)).asnumpy()
    assert np.array_equal(default.view(np.uint32), first.view(np.uint32))
    runs = {}
    for isa in ordered[:2]:
        monkeypatch.setenv("MS_MSA_CPU_ISA", isa)
        runs[isa] = MsaIndexScore(**case.attrs())(*cases.call_args(inputs)).asnumpy()
    if isas[0] == ordered[0]:
        assert np.array_equal(runs[ordered[0]].view(np.uint32), first.view(np.uint32))
    assert not np.array_equal(runs[ordered[1]].view(np.uint32), runs[ordered[0]].view(np.uint32))  # told apart
    monkeypatch.setenv("MS_MSA_CPU_ISA", isas[0])
    _check(MsaIndexScore(**case.attrs())(*cases.call_args(inputs)), inputs, case)


def test_tile_set_offered_exactly_where_the_cpu_has_amx_bf16():
    """Linux lists amx_bf16 and amx_tile in /proc/cpuinfo where CPUID has them; the kernel offers the tile set
    (avx512-amx) there, first (Linux grants a process the tiles from 5.16 on, which every machine here runs)."""
    with open("/proc/cpuinfo") as f:
        flags = next(line for line in f if line.startswith("flags")).split()
    has_amx = all(flag in flags for flag in ("amx_bf16", "amx_tile", "avx512_bf16", "avx512vbmi"))
    isas = _lib.cpu_isas()
    assert has_amx == ("avx512-amx" in isas)
    if has_amx:
        assert isas[0] == "avx512-amx"
