"""Repeated GRAPH_MODE calls run the graph compiled for their arguments directly (ms_msa/_graph_calls.py),
skipping Cell.__call__'s per-call work. Every output here is checked against the reference, with calls of
different signatures interleaved, after kernel rule failures, with dynamic-shape inputs and keywords; and
the arguments whose values can be part of a graph are shown to go through Cell.__call__ every time."""
import dataclasses

import mindspore as ms
import numpy as np
import pytest

import ms_msa
from ms_msa.testing import cases
from ms_msa.testing.numeric import assert_accepted


def _case(name, **changes):
    return dataclasses.replace(cases.CASES_BY_NAME[name], **changes)


def _check(cell, inputs, label, args=None, **kwargs):
    """cell(*args, **kwargs) (by default the inputs' positional arguments) against the reference."""
    if args is None and not kwargs:
        args = cases.call_args(inputs)
    out = cell(*(args or ()), **kwargs)
    assert_accepted(out.asnumpy(), inputs.run_reference(), float("-inf"), label)


def _direct_calls(cell):
    return cell._graph_calls.direct_calls  # pylint: disable=protected-access


# One attribute set; the signatures differ in shapes, in dtype alone, and in where a None is.
DECODE = _case("L1-decode-lq1")
SIGNATURES = {
    "decode-fp16": DECODE,
    "decode-bf16": dataclasses.replace(DECODE, dtype="bfloat16"),
    "prefill": _case("L1-prefill-unaligned"),
    "tiny": _case("L2-tiny-kv"),
    "int8": _case("L1-int8-dequant"),
}


def test_interleaved_signatures_each_run_their_own_graph(graph_mode):
    cell = ms_msa.MsaIndexScore(**DECODE.attrs())
    built = {name: cases.build_inputs(case, seed=3) for name, case in SIGNATURES.items()}
    for _ in range(3):
        for name, inputs in built.items():
            _check(cell, inputs, name)
    assert _direct_calls(cell) == 2 * len(built), "every call after a signature's first runs its graph directly"


def test_new_values_of_one_signature_are_read_at_every_call(graph_mode):
    cell = ms_msa.MsaIndexScore(**DECODE.attrs())
    for seed in range(4):
        _check(cell, cases.build_inputs(DECODE, seed=seed), f"seed {seed}")
    assert _direct_calls(cell) == 3


def test_none_in_another_place_is_another_signature(graph_mode):
    case = _case("L1-decode-lq1", local_blocks=0)  # start_loc is then optional
    inputs = cases.build_inputs(case)
    cell = ms_msa.MsaIndexScore(**case.attrs())
    with_start, without_start = cases.call_args(inputs), cases.call_args(inputs)
    without_start[cases.CALL_ORDER.index("start_loc")] = None
    for args in (with_start, without_start, with_start, without_start):
        _check(cell, inputs, "start_loc given / None", args)
    assert _direct_calls(cell) == 2


def test_kernel_rule_failures_between_direct_calls(graph_mode):
    """A failure forgets the remembered graphs (MindSpore refuses a graph whose kernel failed); each bad call
    raises and each good call after it is right."""
    cell = ms_msa.MsaIndexScore(**DECODE.attrs())
    inputs = cases.build_inputs(DECODE)
    good = cases.call_args(inputs)
    bad = list(good)
    bad[cases.CALL_ORDER.index("actual_seq_qlen")] = ms.Tensor(np.array([1, 2, 3, 4, 5, 6, 6], np.int32))
    _check(cell, inputs, "first")
    _check(cell, inputs, "direct")
    for _ in range(3):
        with pytest.raises(ValueError, match="'actual_seq_qlen' must start at 0"):
            cell(*bad).asnumpy()
        _check(cell, inputs, "after a failure")
        _check(cell, inputs, "direct after a failure")
    assert _direct_calls(cell) == 1 + 3


def test_dynamic_shape_inputs(graph_mode):
    shapes = [SIGNATURES[name] for name in ("decode-fp16", "prefill", "tiny")]
    built = [cases.build_inputs(case) for case in shapes]
    cell = ms_msa.MsaIndexScore(**DECODE.attrs())
    cell.set_inputs(*cases.dynamic_like(cases.call_args(built[0])))
    for _ in range(2):
        for case, inputs in zip(shapes, built):
            _check(cell, inputs, case.name)
    assert _direct_calls(cell) == len(shapes)
    assert len(cell.compile_cache) == 1
    # new dynamic inputs: nothing remembered under the old ones is used
    cell.set_inputs(*cases.dynamic_like(cases.call_args(built[0])))
    _check(cell, built[0], "after set_inputs")
    assert _direct_calls(cell) == len(shapes)


def test_keyword_calls(graph_mode):
    inputs = cases.build_inputs(DECODE)
    named = dict(zip(cases.CALL_ORDER, cases.call_args(inputs)))
    cell = ms_msa.MsaIndexScore(**DECODE.attrs())
    _check(cell, inputs, "keywords", **named)
    _check(cell, inputs, "keywords", **named)
    _check(cell, inputs, "positional, same arguments")
    first_two = [named.pop("query"), named.pop("key")]
    _check(cell, inputs, "mixed", first_two, **named)
    assert _direct_calls(cell) == 3


def test_const_arg_values_compile_their_own_graph(graph_mode):
    """A const_arg Tensor's value is folded into the graph: each new value must compile (a remembered graph
    would answer with the first value's kv lengths)."""
    case = _case("L1-decode-lq1")
    cell = ms_msa.MsaIndexScore(**case.attrs())
    for kv_lens in ((900, 512, 128, 129, 1, 4096), (4096, 12, 1, 300, 0, 100), (900, 512, 128, 129, 1, 4096)):
        inputs = cases.build_inputs(dataclasses.replace(case, kv_lens=kv_lens, start_loc=None))
        args = cases.call_args(inputs)
        klen = cases.CALL_ORDER.index("actual_seq_klen")
        args[klen] = ms.Tensor(inputs.values["actual_seq_klen"], const_arg=True)
        _check(cell, inputs, f"const kv lens {kv_lens}", args)
    assert _direct_calls(cell) == 0


def test_parameters_take_the_cell_call(graph_mode):
    inputs = cases.build_inputs(DECODE)
    args = cases.call_args(inputs)
    args[0] = ms.Parameter(args[0], name="query", requires_grad=False)
    cell = ms_msa.MsaIndexScore(**DECODE.attrs())
    for _ in range(3):
        _check(cell, inputs, "Parameter query", args)
    assert _direct_calls(cell) == 0


def test_mode_switches_and_ms_jit_off(graph_mode, monkeypatch):
    inputs = cases.build_inputs(DECODE)
    cell = ms_msa.MsaIndexScore(**DECODE.attrs())
    _check(cell, inputs, "graph")
    _check(cell, inputs, "graph, direct")
    ms.set_context(mode=ms.PYNATIVE_MODE)
    _check(cell, inputs, "PyNative")
    ms.set_context(mode=ms.GRAPH_MODE)
    _check(cell, inputs, "graph again")
    monkeypatch.setenv("MS_DEV_PRECOMPILE_ONLY", "1")  # MindSpore then compiles and runs nothing
    assert cell(*cases.call_args(inputs)) is None
    monkeypatch.delenv("MS_DEV_PRECOMPILE_ONLY")
    monkeypatch.setenv("MS_JIT", "0")  # GRAPH_MODE Cells then run as PyNative
    _check(cell, inputs, "MS_JIT=0")
    assert _direct_calls(cell) == 2
