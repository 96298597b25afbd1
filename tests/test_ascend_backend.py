"""The Ascend backend on a machine without an NPU: everything around the device call.

The device boundary (the aclnnMsaIndexScore launch) is replaced by a stand-in that runs the CPU
kernel with the attributes the Ascend Cell passes; everything else (argument mapping, default mask,
token-mode forcing and fill_value applied with MindSpore ops, reg_info, package discovery, inference
with the Ascend rules) is the real code.
"""
import dataclasses
import os
import shutil
import subprocess
import types

import mindspore as ms
import numpy as np
import pytest
from mindspore import nn

import ms_msa
from ms_msa import _attrs, _lib
from ms_msa import backends
from ms_msa.backends import ascend, cpu, signature
from ms_msa.testing import cases
from ms_msa.testing.numeric import assert_accepted, mismatches

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEADER = os.path.join(REPO, "aclnn_adapter", "aclnn_msa_index_score.h")
NEEDS_NPU = pytest.mark.skipif(not (os.environ.get("ASCEND_HOME_PATH") and shutil.which("npu-smi")),
                               reason="needs an Ascend NPU and CANN")


class CpuStandIn(nn.Cell):
    """The device boundary: the aclnn call signature, computed by the CPU kernel with the attributes
    the Ascend Cell passes positionally (request-mode forcing, -inf fill: the CANN kernel's contract)."""

    def __init__(self, kernel_attrs, block_size):
        super().__init__()
        attrs = dict(zip(signature.ACLNN_ATTR_NAMES, kernel_attrs), local_window="request", fill_value=float("-inf"),
                     block_size=block_size, max_kv_blocks=None)
        self.cpu = cpu.CpuMsaIndexScore(attrs)
        # The aclnn interface has no scale_layout: it reads a [NP, X, X] scale (N2 = P) as [NP, N2, P].
        self.cpu_square_scale = cpu.CpuMsaIndexScore(dict(attrs, scale_layout="BNB"))

    def construct(self, query, key, block_table, scale, atten_mask, actual_seq_qlen, actual_seq_klen, start_loc,
                  layout_key, sparse_mode, init_blocks, local_blocks):
        if scale is not None and scale.ndim == 3 and scale.shape[1] == scale.shape[2]:
            return self.cpu_square_scale(query, key, block_table, scale, atten_mask, actual_seq_qlen,
                                         actual_seq_klen, start_loc)
        return self.cpu(query, key, block_table, scale, atten_mask, actual_seq_qlen, actual_seq_klen, start_loc)


def _ascend_cell(case, kernel=None):
    attrs = _attrs.normalize(**case.attrs())
    if kernel is None:
        kernel = CpuStandIn(ascend.kernel_attrs(attrs), case.block_size)
    return ascend.AscendMsaIndexScore(attrs, kernel=kernel)


def _aclnn_args(inputs):
    return [inputs.tensors[name] for name in signature.INPUT_NAMES]


def _case(name, **changes):
    return dataclasses.replace(cases.CASES_BY_NAME[name], **changes)


COMPOSED_CASES = [
    _case("X-token-window-prefill"),
    _case("X-token-window-chunked-prefill"),
    _case("X-token-window-tnd"),
    _case("X-sparse-mode-0-tnd-token"),
    _case("X-fill-value"),
    _case("X-fill-value-zero-tnd"),
    _case("L1-pad-mid-q0", local_window="token", init_blocks=3, local_blocks=2, fill_value=float("nan")),
    _case("L2-tiny-kv", local_window="token", init_blocks=4, local_blocks=2, fill_value=float("inf")),
    _case("L1-decode-lq1", local_window="token", fill_value=-3.5),
    _case("X-bf16-int8", local_window="token", init_blocks=1, local_blocks=1, fill_value=0.0),
    _case("L1-bnbd-int8", fill_value=-1e30),
    _case("X-tnd-max-kv-blocks"),  # the kernel's width follows T2, the Cell's max_kv_blocks
    _case("X-int8-scale-bbn"),  # told apart by shape: passed as it is
    _case("X-gqa-int8-scale-bbn-bnbd"),  # named BBN: transposed before the kernel
    _case("X-int8-scale-bbn-n2-eq-p-128"),  # N2 = P: only the transpose makes the kernel read it right
    _case("L1-prefill-unaligned"),  # request mode, -inf: nothing to add
]


@pytest.mark.parametrize("case", COMPOSED_CASES, ids=[c.name for c in COMPOSED_CASES])
def test_composed_result_matches_reference(mode, case):
    inputs = cases.build_inputs(case)
    out = _ascend_cell(case)(*_aclnn_args(inputs))
    assert_accepted(out.asnumpy(), inputs.run_reference(), case.fill_value, case.name)


def test_extensions_are_needed(pynative):
    """The stand-in alone (the device kernel's contract) differs from the spec where ms_msa adds."""
    for case in (_case("X-token-window-prefill"), _case("X-fill-value")):
        inputs = cases.build_inputs(case)
        attrs = _attrs.normalize(**case.attrs())
        raw = CpuStandIn(ascend.kernel_attrs(attrs), case.block_size)(*_aclnn_args(inputs),
                                                                      *ascend.kernel_attrs(attrs))
        assert mismatches(raw.asnumpy(), inputs.run_reference(), case.fill_value).any(), case.name


@pytest.mark.parametrize("case", [_case("X-block-64-tnd", local_window="token", local_blocks=3, fill_value=-7.0),
                                  _case("X-block-16-tnd", local_window="token", init_blocks=1, fill_value=1.0)],
                         ids=["P64", "P16"])
def test_score_extensions_follow_the_block_size(mode, case):
    inputs = cases.build_inputs(case)
    attrs = _attrs.normalize(**case.attrs())
    raw = CpuStandIn(ascend.kernel_attrs(attrs), case.block_size)(*_aclnn_args(inputs), *ascend.kernel_attrs(attrs))
    out = ascend.ScoreExtensions(attrs, case.block_size)(raw, inputs.tensors["actual_seq_qlen"],
                                                         inputs.tensors["actual_seq_klen"])
    assert_accepted(out.asnumpy(), inputs.run_reference(), case.fill_value, case.name)


# --- what is passed to the aclnn Custom --------------------------------------------------------------

class RecordingKernel:
    """Records the positional arguments of the device call and answers with the CPU stand-in."""

    def __init__(self, stand_in):
        self.calls = []
        self.stand_in = stand_in

    def __call__(self, *args):
        self.calls.append(args)
        return self.stand_in(*args)


def _record(case, change_inputs=None):
    inputs = cases.build_inputs(case)
    if change_inputs:
        change_inputs(inputs.tensors)
    attrs = _attrs.normalize(**case.attrs())
    kernel = RecordingKernel(CpuStandIn(ascend.kernel_attrs(attrs), case.block_size))
    args = _aclnn_args(inputs)
    _ascend_cell(case, kernel)(*args)
    assert len(kernel.calls) == 1
    return args, kernel.calls[0]


def test_arguments_in_aclnn_order(pynative):
    args, call = _record(_case("X-init-blocks", layout="BNBD"))  # init 2, local 2, request mode
    assert len(call) == len(signature.INPUTS) + len(signature.ACLNN_ATTRS)
    for name, given, passed in zip(signature.INPUT_NAMES, args, call):
        if name != "atten_mask":
            assert passed is given, name
    assert call[len(signature.INPUTS):] == ("BNBD", 3, 2, 2)


def test_default_atten_mask_for_sparse_mode_3(pynative):
    _, call = _record(_case("L1-prefill-unaligned"))
    mask = call[signature.INPUT_NAMES.index("atten_mask")]
    size = _lib.constant("atten_mask_size")
    assert mask.dtype == ms.int8 and mask.shape == (size, size)
    np.testing.assert_array_equal(mask.asnumpy(), np.triu(np.ones((size, size), np.int8), 1))


def test_given_atten_mask_is_passed_through(pynative):
    mine = ms.Tensor(np.zeros((2048, 2048), np.int8))
    _, call = _record(_case("L1-prefill-unaligned"), lambda t: t.update(atten_mask=mine))
    assert call[signature.INPUT_NAMES.index("atten_mask")] is mine


def test_sparse_mode_0_passes_no_mask(pynative):
    _, call = _record(_case("X-sparse-mode-0"))
    assert call[signature.INPUT_NAMES.index("atten_mask")] is None
    assert call[len(signature.INPUTS) + signature.ACLNN_ATTR_NAMES.index("sparse_mode")] == 0


def test_token_mode_calls_for_raw_scores(pynative):
    case = _case("X-token-window-chunked-prefill", layout="bnbd")  # init 1, local 1; layout case-insensitive
    _, call = _record(case, lambda t: t.update(start_loc=None))
    assert call[len(signature.INPUTS):] == ("BNBD", 3, 0, 0)
    start_loc = call[signature.INPUT_NAMES.index("start_loc")]
    assert start_loc.dtype == ms.int32 and start_loc.asnumpy().tolist() == [0] * len(case.q_lens)


TOKEN_WINDOW = dict(local_window="token", init_blocks=0, local_blocks=2)


@pytest.mark.parametrize("case_list", [
    [_case("X-token-window-prefill"), _case("X-token-window-chunked-prefill", **TOKEN_WINDOW),
     _case("L1-pad-mid-q0", **TOKEN_WINDOW), _case("L0-all-q0", **TOKEN_WINDOW)],
    [_case("X-fill-value-zero-tnd"), _case("L0-tnd-all-kv0", fill_value=0.0), _case("L1-tnd-unaligned", fill_value=0.0)],
], ids=["token-window", "fill-tnd"])
def test_extensions_in_a_dynamic_shape_graph(case_list, tmp_path, monkeypatch):
    """MindFormers marks every input dynamic: one compiled graph of the Ascend Cell (device call stubbed)
    serves other token counts, including none, with the forcing and the fill computed at run time."""
    monkeypatch.chdir(tmp_path)
    ms.set_context(mode=ms.GRAPH_MODE, device_target="CPU")
    try:
        first = cases.build_inputs(case_list[0])
        cell = _ascend_cell(case_list[0])
        cell.set_inputs(*cases.dynamic_like(_aclnn_args(first)))
        for case in case_list:
            assert case.attrs() == case_list[0].attrs()
            inputs = cases.build_inputs(case)
            out = cell(*_aclnn_args(inputs))
            assert_accepted(out.asnumpy(), inputs.run_reference(), case.fill_value, case.name)
        assert len(cell.compile_cache) == 1
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)


def test_pynative_launch_of_a_dynamic_shape_primitive(pynative, monkeypatch):
    """In PyNative the per-pattern primitive (C++ infer-shape) hands the call to the runner when there
    is one, else to its Python-infer twin, since PyNative shapes are always known."""
    monkeypatch.setattr(ascend, "pyboost_runner", lambda: None)
    attrs = _attrs.normalize(**cases.CASES_BY_NAME["L1-prefill-unaligned"].attrs())
    kernel = ascend.AclnnKernel(attrs)
    prim = kernel.by_pattern[0]
    launched = []
    monkeypatch.setattr(ms.ops.Custom, "__call__", lambda self, *args: launched.append((self, args)) or "out")
    args = ("q", "k", None, None, None, "qlen", "klen", None, "BBND", 3, 0, 1)
    assert prim(*args) == "out"
    twin, passed = launched[0]
    assert twin is not prim and passed == args
    assert twin is kernel.by_pattern[-1]  # the kernel's own Python-infer primitive
    assert twin.attrs["func_name"] == signature.ACLNN_OP and "cpp_infer_shape" not in twin.attrs
    assert prim(*args) == "out" and launched[1][0] is twin  # made once
    runner_calls = []
    runner = types.SimpleNamespace(msa_index_score=lambda *a: runner_calls.append(a))
    monkeypatch.setattr(ascend, "pyboost_runner", lambda: runner)
    prim(*args)
    assert runner_calls == [args] and len(launched) == 2


# --- the aclnn Custom primitive, its reg_info and the header MindSpore parses ----------------------

def test_reg_info_from_the_table():
    info = ascend.aclnn_reg_info()
    assert info["op_name"] == "MsaIndexScore" and info["target"] == "Ascend"
    assert [(i["index"], i["name"], i["paramType"]) for i in info["inputs"]] == [
        (0, "query", "required"), (1, "key", "required"), (2, "block_table", "optional"), (3, "scale", "optional"),
        (4, "atten_mask", "optional"), (5, "actual_seq_qlen", "required"), (6, "actual_seq_klen", "required"),
        (7, "start_loc", "optional")]
    assert [(o["name"], o["paramType"]) for o in info["outputs"]] == [("score", "required")]
    assert [(a["name"], a["type"]) for a in info["attr"]] == [
        ("layout_key", "str"), ("sparse_mode", "int"), ("init_blocks", "int"), ("local_blocks", "int")]
    rows = [[dtype for dtype, _ in row] for row in info["dtype_format"]]
    assert rows == [[q, k, "int32", "float32", "int8", "int32", "int32", "int32", "float32"]
                    for q, k in (("float16", "float16"), ("bfloat16", "bfloat16"), ("float16", "int8"),
                                 ("bfloat16", "int8"))]


def test_custom_maps_positional_attributes(pynative):
    prim = ascend.AclnnMsaIndexScore(_attrs.normalize("BBND", 3, 0, 1, "request", float("-inf"), 128, None))
    assert prim.attrs["func_name"] == "aclnnMsaIndexScore" and prim.attrs["func_type"] == "aot"
    assert prim.attrs["reg_op_name"] == "MsaIndexScore"
    # MindSpore turns the arguments after the tensors into these attributes, by position.
    assert list(prim.attrs["input_names"]) == list(signature.INPUT_NAMES + signature.ACLNN_ATTR_NAMES)
    assert list(prim.attrs["attr_names"]) == list(signature.ACLNN_ATTR_NAMES)
    assert "layout_key" not in prim.attrs  # the values come with each call, not from the primitive


def _abstract(tensor):
    if tensor is None:
        return {"shape": None, "dtype": None, "value": None}
    return {"shape": list(tensor.shape), "dtype": ms.TensorType(tensor.dtype), "value": None}


def test_custom_infers_with_the_ascend_rules(pynative):
    case = cases.CASES_BY_NAME["L1-prefill-unaligned"]
    inputs = cases.build_inputs(case)
    attrs = _attrs.normalize(**case.attrs())
    prim = ascend.AclnnMsaIndexScore(attrs)
    tensors = _aclnn_args(inputs)
    attr_args = [{"shape": [], "dtype": None, "value": v} for v in ascend.kernel_attrs(attrs)]
    out = prim.__infer__(*[_abstract(t) for t in tensors], *attr_args)
    assert list(out["shape"]) == [8, 49, 16] and out["dtype"] == ms.float32
    # The callbacks a PyNative launch through pyboost uses see the attributes too.
    shapes = [None if t is None else list(t.shape) for t in tensors] + [[]] * len(attr_args)
    assert prim.out_shape(*shapes) == [8, 49, 16]
    assert prim.out_dtype(*[None if t is None else t.dtype for t in tensors], *[None] * len(attr_args)) == ms.float32

    paged_64 = [_abstract(t) for t in tensors]
    paged_64[1] = {"shape": [8, 64, 1, 128], "dtype": ms.TensorType(ms.float16), "value": None}
    with pytest.raises(ValueError, match="must be 128 on Ascend"):
        prim.__infer__(*paged_64, *attr_args)
    shapes[1] = [8, 64, 1, 128]
    with pytest.raises(ValueError, match="must be 128 on Ascend"):
        prim.out_shape(*shapes)
    fp32 = [_abstract(t) for t in tensors]
    fp32[0] = {"shape": [49, 8, 128], "dtype": ms.TensorType(ms.float32), "value": None}
    fp32[1] = {"shape": [8, 128, 1, 128], "dtype": ms.TensorType(ms.float32), "value": None}
    with pytest.raises(TypeError, match="'query'"):
        prim.__infer__(*fp32, *attr_args)
    with pytest.raises(TypeError, match="'query'"):
        prim.out_dtype(ms.float32, ms.float32, *[None if t is None else t.dtype for t in tensors[2:]])


def test_header_gives_mindspore_the_callback_signature(tmp_path, monkeypatch):
    """MindSpore parses the aclnn header to build the workspace callback; it must agree with reg_info."""
    from mindspore.ops.operations._custom_ops_utils import CustomCodeGenerator, CustomInfoGenerator
    vendor = tmp_path / "vendors" / "ms_msa"
    (vendor / "op_api" / "include").mkdir(parents=True)
    shutil.copy(HEADER, vendor / "op_api" / "include")
    monkeypatch.setenv("ASCEND_CUSTOM_OPP_PATH", str(vendor))
    monkeypatch.setenv("ASCEND_OPP_PATH", str(tmp_path / "opp"))
    types = CustomInfoGenerator(signature.ACLNN_OP).get_aclnn_api_types()
    assert types == ["aclTensor*"] * 8 + ["char*", "int64_t", "int64_t", "int64_t", "aclTensor*", "uint64_t*",
                                          "aclOpExecutor**"]
    code = CustomCodeGenerator().generate_callback_by_types(signature.ACLNN_OP, ascend.aclnn_reg_info(), types)
    # The generated callback compiles against a stand-in of the one CANN header it includes.
    (tmp_path / "acl").mkdir()
    (tmp_path / "acl" / "acl_base.h").write_text("#include <cstdint>\n")
    src = tmp_path / "callback.cc"
    src.write_text(code)
    res = subprocess.run(["g++", "-std=c++17", "-fsyntax-only", f"-I{tmp_path}", str(src)], capture_output=True,
                         text=True)
    assert res.returncode == 0, res.stderr
    assert "aclnnMsaIndexScoreGetWorkSpaceSize" in code


# --- finding the installed package ----------------------------------------------------------------

def _fake_vendor(root):
    lib = os.path.join(root, ascend.OPP_API_LIB)
    os.makedirs(os.path.dirname(lib))
    open(lib, "wb").close()
    return os.path.abspath(root)


def test_opp_path_from_env_goes_first(tmp_path):
    vendor = _fake_vendor(str(tmp_path / "pkg" / "vendors" / "ms_msa"))
    env = {"MS_MSA_OPP_PATH": vendor, "ASCEND_CUSTOM_OPP_PATH": "/opt/other/vendors/x:" + vendor}
    assert ascend.ensure_opp_path(env) == vendor
    assert env["ASCEND_CUSTOM_OPP_PATH"] == vendor + ":/opt/other/vendors/x"
    ascend.ensure_opp_path(env)  # idempotent
    assert env["ASCEND_CUSTOM_OPP_PATH"] == vendor + ":/opt/other/vendors/x"


def test_opp_path_env_without_package_is_an_error(tmp_path):
    fallback = _fake_vendor(str(tmp_path / "opp" / "vendors" / "ms_msa"))
    env = {"MS_MSA_OPP_PATH": str(tmp_path / "nothing"), "ASCEND_OPP_PATH": str(tmp_path / "opp")}
    with pytest.raises(RuntimeError, match="MS_MSA_OPP_PATH"):
        ascend.ensure_opp_path(env)
    assert "ASCEND_CUSTOM_OPP_PATH" not in env
    del env["MS_MSA_OPP_PATH"]
    assert ascend.ensure_opp_path(env) == fallback  # the toolkit's vendors folder


def test_opp_path_default_install_location(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    env = {}
    with pytest.raises(RuntimeError, match="not installed.*ascendc/build.sh"):
        ascend.ensure_opp_path(env)
    vendor = _fake_vendor(str(tmp_path / ".cache" / "ms_msa" / "opp" / "vendors" / "ms_msa"))
    assert ascend.ensure_opp_path(env) == vendor
    assert env["ASCEND_CUSTOM_OPP_PATH"] == vendor


def test_ascend_target_selects_the_ascend_backend(pynative, tmp_path, monkeypatch):
    monkeypatch.setattr(backends, "device_target", lambda: "Ascend")
    monkeypatch.setenv("MS_MSA_OPP_PATH", _fake_vendor(str(tmp_path / "vendors" / "ms_msa")))
    monkeypatch.setenv("ASCEND_CUSTOM_OPP_PATH", "")
    cell = ms_msa.MsaIndexScore(local_window="token", fill_value=0.0)
    assert isinstance(cell.score_op, ascend.AscendMsaIndexScore)
    assert isinstance(cell.score_op.kernel, ascend.AclnnKernel)
    assert os.environ["ASCEND_CUSTOM_OPP_PATH"] == os.environ["MS_MSA_OPP_PATH"]
    with pytest.raises(ValueError, match="must be 128 on Ascend"):  # the Cell checks with the Ascend rules
        ms_msa.MsaIndexScore(layout_key="TND", block_size=64)
    monkeypatch.setenv("MS_MSA_OPP_PATH", str(tmp_path / "missing"))
    with pytest.raises(RuntimeError, match="MS_MSA_OPP_PATH"):
        ms_msa.MsaIndexScore()


# --- on the device ---------------------------------------------------------------------------------

@NEEDS_NPU
@pytest.mark.parametrize("name", ["L1-prefill-unaligned", "L1-int8-dequant", "L1-bnbd", "L1-tnd-unaligned",
                                  "L1-decode-lq1", "X-token-window-prefill", "X-fill-value", "X-gqa-n2-2"])
def test_device_kernel_matches_reference(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    ms.set_context(mode=ms.GRAPH_MODE, device_target="Ascend")
    case = cases.CASES_BY_NAME[name]
    inputs = cases.build_inputs(case)
    out = ms_msa.MsaIndexScore(**inputs.attrs)(*cases.call_args(inputs)).asnumpy()
    bad = mismatches(out, inputs.run_reference(), case.fill_value)
    assert bad.mean() <= 1e-3, f"{name}: {int(bad.sum())} mismatches (SPEC §6 allows a 1e-3 ratio on Ascend)"
