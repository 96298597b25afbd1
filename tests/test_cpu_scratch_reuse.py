"""The CPU kernel keeps its workers' scratch from one launch to the next (score_kernel.cc, CallerScratch), so nothing
a launch leaves there may reach the next: calls of every path, dtype, head dim and block size, interleaved in one
process on every kernel set the CPU has and with one and two threads, each give the bits of their first call and
are accepted against the reference, a head dim whose scratch passes the kept bound (and is released) among them;
and two index-score ops in one Cell, which a compiled graph may run on two threads at once, each give what they
give alone. In PyNative and GRAPH_MODE."""
import numpy as np
from mindspore import nn

from ms_msa import MsaIndexScore, _lib
from ms_msa.testing import cases, numeric

ISAS = _lib.cpu_isas()
# One of each kind of task: bf16 prefill (the tiles or the pair path where the CPU has them), fp16 speculative
# decode, int8-key decode with bf16 queries (the bf16 dot path) and fp32 queries, fp8 prefill, TND int8 keys,
# D 192 and 64, a block of 1024 keys.
NAMES = ["L1-bf16", "L1-decode-speculative", "X-int8-decode-m3", "X-fp32-int8", "L0-prefill-aligned-e4m3fn",
         "L1-tnd-int8", "X-head-dim-192", "X-block-1024"]
# D 8192: each worker's scratch is some 5 MiB (query rows, their transpose, a chunk of decoded keys), so two
# workers pass the 8 MiB a thread keeps (kKeptScratchBytes) and the launch frees it.
WIDE = cases.Case("scratch-d8192", heads=4, head_dim=8192, pages=3, q_lens=(40,), kv_lens=(130,), dtype="float16",
                  local_window="token")


def _cases():
    return [cases.CASES_BY_NAME[n] for n in NAMES] + [WIDE]


def test_interleaved_calls_keep_their_bits(mode, monkeypatch):
    all_cases = _cases()
    cells = {c.name: MsaIndexScore(**c.attrs()) for c in all_cases}
    inputs = {c.name: cases.build_inputs(c, seed=3) for c in all_cases}
    refs = {c.name: inputs[c.name].run_reference() for c in all_cases}
    calls = [(isa, c) for isa in ISAS for c in all_cases]
    first = {}
    rng = np.random.default_rng(11)
    for threads in ("2", "1", "2"):  # the first round in order, then shuffled: each call after a different one
        monkeypatch.setenv("MS_MSA_NUM_THREADS", threads)
        for i in (range(len(calls)) if not first else rng.permutation(len(calls))):
            isa, case = calls[i]
            monkeypatch.setenv("MS_MSA_CPU_ISA", isa)
            out = cells[case.name](*cases.call_args(inputs[case.name])).asnumpy()
            label = f"{case.name} on {isa}, {threads} thread(s)"
            numeric.assert_accepted(out, refs[case.name], case.fill_value, label)
            prev = first.setdefault((isa, case.name), out)
            assert np.array_equal(prev.view(np.uint32), out.view(np.uint32)), f"{label}: other bits than its first call"
    assert len(first) == len(calls)


class _TwoScores(nn.Cell):
    """Two index-score ops on independent inputs: a compiled graph may launch them at once."""

    def __init__(self, case_a, case_b):
        super().__init__()
        self.a = MsaIndexScore(**case_a.attrs())
        self.b = MsaIndexScore(**case_b.attrs())

    def construct(self, qa, ka, sa, ta, ca, ma, ql_a, kl_a, qb, kb, sb, tb, cb, mb, ql_b, kl_b):
        return self.a(qa, ka, sa, ta, ca, ma, ql_a, kl_a), self.b(qb, kb, sb, tb, cb, mb, ql_b, kl_b)


def test_two_ops_of_one_cell(mode):
    case_a, case_b = cases.CASES_BY_NAME["L1-bf16"], cases.CASES_BY_NAME["X-int8-decode-m3"]
    in_a, in_b = cases.build_inputs(case_a, seed=5), cases.build_inputs(case_b, seed=6)
    args_a, args_b = list(cases.call_args(in_a)), list(cases.call_args(in_b))
    alone_a = MsaIndexScore(**case_a.attrs())(*args_a).asnumpy()
    alone_b = MsaIndexScore(**case_b.attrs())(*args_b).asnumpy()
    two = _TwoScores(case_a, case_b)
    for _ in range(3):
        out_a, out_b = (o.asnumpy() for o in two(*args_a, *args_b))
        numeric.assert_accepted(out_a, in_a.run_reference(), case_a.fill_value, case_a.name)
        numeric.assert_accepted(out_b, in_b.run_reference(), case_b.fill_value, case_b.name)
        assert np.array_equal(out_a.view(np.uint32), alone_a.view(np.uint32)), case_a.name
        assert np.array_equal(out_b.view(np.uint32), alone_b.view(np.uint32)), case_b.name
