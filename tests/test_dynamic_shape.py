"""Dynamic input shapes (MindFormers marks every input dynamic): one compiled GRAPH_MODE graph serves
many shapes through the C++ infer-shape of the CPU library, and the per-pattern primitives behind it
serve every combination of optional inputs in both modes."""
import dataclasses

import mindspore as ms
import numpy as np
import pytest

import ms_msa
from ms_msa import _attrs, _lib
from ms_msa.backends import infer
from ms_msa.testing import cases
from ms_msa.testing.numeric import assert_accepted


def _case(name, **changes):
    return dataclasses.replace(cases.CASES_BY_NAME[name], **changes)


def _check_cases(cell, case_list):
    for case in case_list:
        inputs = cases.build_inputs(case)
        out = cell(*cases.call_args(inputs))
        assert_accepted(out.asnumpy(), inputs.run_reference(), case.fill_value, case.name)


def _dynamic_cell(case_list):
    """A Cell for the (shared) attributes of case_list, compiled for fully dynamic inputs."""
    first = cases.build_inputs(case_list[0])
    cell = ms_msa.MsaIndexScore(**first.attrs)
    cell.set_inputs(*cases.dynamic_like(cases.call_args(first)))
    return cell


# Same attributes, dtypes and input pattern; shapes differ in every dim (T1, B, MB, NP, N1, D).
PAGED_FP16 = [_case(name) for name in ("L1-prefill-unaligned", "L1-decode-lq1", "L2-tiny-kv", "L0-wide-table-257",
                                        "L1-pad-kv0", "L0-all-q0", "L1-heads-16")]


def test_one_fully_dynamic_graph_serves_many_shapes(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    ms.set_context(mode=ms.GRAPH_MODE, device_target="CPU")
    cell = _dynamic_cell(PAGED_FP16)
    _check_cases(cell, PAGED_FP16)
    assert len(cell.compile_cache) == 1, "every shape must run through the one dynamic graph"


def test_m3_shapes_with_dynamic_token_dims(tmp_path, monkeypatch):
    """The MiniMax-M3 index branch as a serving graph sees it: heads and head dim fixed, tokens dynamic."""
    monkeypatch.chdir(tmp_path)
    ms.set_context(mode=ms.GRAPH_MODE, device_target="CPU")
    n1, d, p = 4, 128, 128
    cell = ms_msa.MsaIndexScore(layout_key="BBND", sparse_mode=3, init_blocks=0, local_blocks=1)
    f16, i32 = ms.float16, ms.int32
    cell.set_inputs(ms.Tensor(shape=[None, n1, d], dtype=f16), ms.Tensor(shape=[None, p, 1, d], dtype=f16),
                    ms.Tensor(shape=[None], dtype=i32), ms.Tensor(shape=[None, None], dtype=i32), None, None,
                    ms.Tensor(shape=[None], dtype=i32), ms.Tensor(shape=[None], dtype=i32))
    shapes = [  # (q lens, kv lens): decode batches and a prefill
        ((1, 1, 1), (4000, 129, 1)),
        ((1,), (700,)),
        ((37, 5), (37, 900)),
    ]
    for q_lens, kv_lens in shapes:
        case = cases.Case("m3", n1, d, 40, q_lens, kv_lens)
        inputs = cases.build_inputs(case)
        out = cell(*cases.call_args(inputs))
        table_width = max(-(-k // p) for k in kv_lens)
        assert out.shape == (n1, sum(q_lens), max(16, -(-table_width // 16) * 16))
        assert_accepted(out.asnumpy(), inputs.run_reference(), case.fill_value, str(shapes))
    assert len(cell.compile_cache) == 1


@pytest.mark.parametrize("case_list", [
    [_case("L1-tnd-unaligned"), _case("L0-tnd-tiny"), _case("L0-tnd-all-kv0")],  # TND: W follows T2 at run time
    [_case("L1-int8-dequant"), _case("L0-int8-dequant-trace"), _case("X-m3-decode-int8")],  # int8 key + scale
    [_case("X-token-window-prefill"),
     _case("X-token-window-chunked-prefill", init_blocks=0, local_blocks=2)],
], ids=["tnd", "int8", "token-window"])
def test_dynamic_graph_other_patterns(case_list, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    ms.set_context(mode=ms.GRAPH_MODE, device_target="CPU")
    cell = _dynamic_cell(case_list)
    _check_cases(cell, case_list)
    assert len(cell.compile_cache) == 1


def test_tnd_max_kv_blocks_fixes_the_width_of_a_dynamic_graph(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    ms.set_context(mode=ms.GRAPH_MODE, device_target="CPU")
    case = cases.CASES_BY_NAME["X-tnd-max-kv-blocks"]  # max_kv_blocks 40 -> W 48 whatever T2 is
    cell = ms_msa.MsaIndexScore(**case.attrs())
    inputs = cases.build_inputs(case)
    cell.set_inputs(*cases.dynamic_like(cases.call_args(inputs)))
    for q_lens, kv_lens in (((32, 17), (300, 130)), ((3,), (4000,))):
        small = cases.Case("tnd-w", 8, 128, 0, q_lens, kv_lens, layout="TND", max_kv_blocks=40)
        small_inputs = cases.build_inputs(small)
        out = cell(*cases.call_args(small_inputs))
        assert out.shape[2] == 48
        assert_accepted(out.asnumpy(), small_inputs.run_reference(), small.fill_value, str(kv_lens))


def test_shape_rule_broken_at_run_time_is_a_value_error(tmp_path, monkeypatch):
    """Sizes unknown at compile time are checked before the launch, with the rule's own error."""
    monkeypatch.chdir(tmp_path)
    ms.set_context(mode=ms.GRAPH_MODE, device_target="CPU")
    inputs = cases.build_inputs(cases.CASES_BY_NAME["L1-prefill-unaligned"])
    args = cases.call_args(inputs)
    breaks = [  # (argument position, bad tensor, message)
        (3, ms.Tensor(np.zeros((3, 3), np.int32)), "'block_table' batch 3 differs from B = 2"),
        (1, ms.Tensor(np.zeros((8, 128, 1, 64), np.float16)), "head dims differ"),
    ]
    for pos, tensor, message in breaks:
        # A fresh graph each time: MindSpore refuses to run a graph again after a failed step.
        cell = _dynamic_cell([cases.CASES_BY_NAME["L1-prefill-unaligned"]])
        cell(*args)
        bad = list(args)
        bad[pos] = tensor
        with pytest.raises(ValueError, match=message):
            cell(*bad)


def test_rules_decidable_at_compile_time_still_raise_there(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    ms.set_context(mode=ms.GRAPH_MODE, device_target="CPU")
    inputs = cases.build_inputs(cases.CASES_BY_NAME["L1-prefill-unaligned"])
    args = cases.call_args(inputs)
    cell = ms_msa.MsaIndexScore(**inputs.attrs)
    dyn = cases.dynamic_like(args)
    dyn[0] = ms.Tensor(shape=[None, None], dtype=ms.float16)  # query rank 2: known though dims are not
    cell.set_inputs(*dyn)
    with pytest.raises(ValueError, match="'query' must be a rank-3"):
        cell(ms.Tensor(np.zeros((49, 8), np.float16)), *args[1:])
    cell = ms_msa.MsaIndexScore(**inputs.attrs)
    dyn = cases.dynamic_like(args)
    dyn[7] = ms.Tensor(shape=[None], dtype=ms.int64)
    cell.set_inputs(*dyn)
    with pytest.raises(TypeError, match="actual_seq_klen"):
        cell(*args[:7], ms.Tensor(np.array([300, 130], np.int64)))


# Every pattern of given optional inputs reaches its own primitive: check a spread of them.
PATTERN_CASES = [
    ("L1-prefill-unaligned", {}),                       # block_table, start_loc
    ("L1-prefill-unaligned", {"atten_mask": True}),     # + atten_mask
    ("L1-int8-dequant", {"atten_mask": True}),          # + scale
    ("X-token-window-prefill", {"start_loc": None}),    # token mode needs no start_loc
    ("L1-tnd-unaligned", {"start_loc": None, "local_window": "token"}),  # TND, nothing optional
    ("L1-tnd-int8", {}),                                # TND + scale + start_loc
]


@pytest.mark.parametrize("name,change", PATTERN_CASES)
def test_optional_input_patterns(mode, name, change):
    case = cases.CASES_BY_NAME[name]
    if "local_window" in change:
        case = dataclasses.replace(case, local_window=change["local_window"])
    inputs = cases.build_inputs(case)
    if change.get("atten_mask"):
        inputs.tensors["atten_mask"] = ms.Tensor(np.ones((2048, 2048), np.int8))
    if "start_loc" in change:
        inputs.tensors["start_loc"] = None
    out = ms_msa.MsaIndexScore(**inputs.attrs)(*cases.call_args(inputs))
    assert_accepted(out.asnumpy(), inputs.run_reference(), case.fill_value, name)


# --- the shape-only inference behind the C++ infer-shape, called directly -------------------------

def _infer(shapes, attrs):
    """(error class or None, output shape) of the shape-only inference behind the C++ infer-shape."""
    try:
        return None, infer.infer_output_shape(shapes, attrs, _lib.TARGET_CPU)
    except (TypeError, ValueError) as err:
        return err, None


def _attr_dict(**kw):
    base = dict(layout_key="BBND", sparse_mode=3, init_blocks=0, local_blocks=1, local_window="request",
                fill_value=float("-inf"), block_size=128, max_kv_blocks=None)
    base.update(kw)
    return _attrs.normalize(**base)


def test_infer_shape_only_paged():
    shapes = [(-1, 4, 128), (-1, 128, 1, 128), (-1, 33), None, None, (-1,), (-1,), (-1,)]
    assert _infer(shapes, _attr_dict()) == (None, [4, -1, 48])


def test_infer_shape_only_tnd_width():
    shapes = [(-1, 4, 128), (-1, 1, 128), None, None, None, (-1,), (-1,), None]
    attrs = _attr_dict(layout_key="TND", local_window="token")
    assert _infer(shapes, attrs)[1] == [4, -1, -1]  # W follows T2, unknown until run time
    assert _infer(shapes, _attr_dict(layout_key="TND", local_window="token", max_kv_blocks=20))[1] == [4, -1, 32]
    shapes[1] = (1000, 1, 128)
    assert _infer(shapes, attrs)[1] == [4, -1, 16]


def test_infer_shape_only_runs_the_shape_rules():
    # A scale makes the key int8 for the rules, so its shape is checked against the key.
    shapes = [(5, 4, 128), (6, 128, 1, 128), (2, 3), (6, 1, 64), None, (3,), (2,), (2,)]
    err, _ = _infer(shapes, _attr_dict())
    assert isinstance(err, ValueError) and "'scale'" in str(err)
    shapes[3] = (6, 1, 128)
    assert _infer(shapes, _attr_dict())[0] is None
    shapes[2] = None  # a paged layout without block_table
    err, _ = _infer(shapes, _attr_dict())
    assert isinstance(err, ValueError) and "'block_table' is required" in str(err)
