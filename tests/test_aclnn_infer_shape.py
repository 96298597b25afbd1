"""The C++ infer-shape of the aclnn Custom (dynamic-shape graphs on Ascend), called as MindSpore
calls it: from the library named in the primitive's `func`, with the present inputs' shapes listed
in order and the attributes the primitive actually carries. No NPU is needed for this step of a graph
compile; the expected shapes come from the numpy reference's output."""
import ctypes
import dataclasses
import math

import pytest

import _aot_shim
from ms_msa import _attrs, _lib
from ms_msa.backends import ascend, cpu, infer, signature
from ms_msa.testing import cases

MAX_RANK = 8


@pytest.fixture(scope="module")
def shim(tmp_path_factory):
    fn = _aot_shim.build(tmp_path_factory.mktemp("shim")).CallInferShape
    fn.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(ctypes.c_int),
                   ctypes.POINTER(ctypes.c_int64), ctypes.c_int, ctypes.POINTER(ctypes.c_int64),
                   ctypes.POINTER(ctypes.c_int), ctypes.c_char_p, ctypes.c_int]
    return fn


def _infer(shim, prim, shapes):
    """MindSpore's compile-time call for `prim`: shapes in aclnn order, None (absent) not listed."""
    library, symbol = prim.attrs["func_name"].rsplit(":", 1)
    listed = [s for s in shapes if s is not None]
    ndims = (ctypes.c_int * len(listed))(*[len(s) for s in listed])
    dims = (ctypes.c_int64 * (MAX_RANK * len(listed)))()
    for i, shape in enumerate(listed):
        for r, v in enumerate(shape):
            dims[i * MAX_RANK + r] = v
    out, rank = (ctypes.c_int64 * 8)(), ctypes.c_int(0)
    msg = ctypes.create_string_buffer(512)
    code = shim(library.encode(), (symbol + "InferShape").encode(), _aot_shim.attr_spec(prim).encode(), len(listed),
                ndims, dims, MAX_RANK, out, ctypes.byref(rank), msg, len(msg))
    if code:
        raise RuntimeError(f"infer-shape call failed ({code}): {msg.value.decode()}")
    return [out[i] for i in range(rank.value)]


def _aclnn_shapes(inputs):
    return [None if inputs.tensors[n] is None else list(inputs.tensors[n].shape) for n in signature.INPUT_NAMES]


def _pattern_primitive(attrs, shapes):
    mask = sum(1 << i for i, s in enumerate(shapes) if s is not None)
    kernel = ascend.AclnnKernel(attrs)
    return kernel.by_pattern[signature.presence_masks().index(mask)]


def _ascend_cases():
    """The matrix cases the Ascend kernel serves (16-bit query, block 128, D a multiple of 16 up to 128)."""
    return [c for c in cases.ALL_CASES
            if c.dtype in ("float16", "bfloat16") and c.block_size == 128 and c.head_dim % 16 == 0
            and c.head_dim <= 128 and c.max_kv_blocks is None]


ASCEND_CASES = _ascend_cases()


def test_the_case_list_covers_every_layout_and_dtype():
    assert {c.layout for c in ASCEND_CASES} == {"BBND", "BNBD", "TND"}
    assert {(c.dtype, c.int8_key) for c in ASCEND_CASES} >= {("float16", False), ("bfloat16", False),
                                                             ("float16", True)}
    assert len(ASCEND_CASES) >= 30


@pytest.mark.parametrize("case", ASCEND_CASES, ids=[c.name for c in ASCEND_CASES])
def test_known_shapes_give_the_reference_output_shape(shim, case):
    inputs = cases.build_inputs(case)
    attrs = _attrs.normalize(**case.attrs())
    shapes = _aclnn_shapes(inputs)
    prim = _pattern_primitive(attrs, shapes)
    assert _infer(shim, prim, shapes) == list(inputs.run_reference().shape)


def test_unknown_dims_stay_unknown(shim):
    """The M3 serving graph: heads and head dim fixed, every token dim dynamic."""
    case = cases.CASES_BY_NAME["L1-decode-lq1"]
    inputs = cases.build_inputs(case)
    attrs = _attrs.normalize(**case.attrs())
    shapes = _aclnn_shapes(inputs)
    prim = _pattern_primitive(attrs, shapes)
    n1, d = case.heads, case.head_dim
    dynamic = [[-1, n1, d], [-1, 128, 1, d], [-1, -1], None, [2048, 2048], [-1], [-1], [-1]]
    dynamic = [None if s is None else dyn for s, dyn in zip(shapes, dynamic)]
    assert _infer(shim, prim, dynamic) == [n1, -1, -1]
    every_rank_unknown = [None if s is None else [-2] for s in shapes]
    assert _infer(shim, prim, every_rank_unknown) == [-1, -1, -1]


def test_tnd_width_follows_the_key_tokens(shim):
    case = cases.CASES_BY_NAME["L1-tnd-unaligned"]
    inputs = cases.build_inputs(case)
    shapes = _aclnn_shapes(inputs)
    prim = _pattern_primitive(_attrs.normalize(**case.attrs()), shapes)
    for t2 in (1, 128, 129, 4000):
        shapes[1] = [t2, 1, case.head_dim]
        width = max(16, math.ceil(math.ceil(t2 / 128) / 16) * 16)
        assert _infer(shim, prim, shapes) == [case.heads, sum(case.q_lens), width]


def test_the_ascend_rules_apply(shim):
    """A block size the CPU serves but the Ascend kernel does not: the aclnn infer-shape answers with
    the placeholder that lets the launch report the rule; the CPU one with the shape."""
    case = dataclasses.replace(cases.CASES_BY_NAME["X-block-64-tnd"], layout="BBND", pages=8, table_width=None)
    inputs = cases.build_inputs(case)
    attrs = _attrs.normalize(**case.attrs())
    shapes = _aclnn_shapes(inputs)
    expected = list(inputs.run_reference().shape)
    assert _infer(shim, _pattern_primitive(attrs, shapes), shapes) == [1, 1, 1]
    mask = sum(1 << i for i, s in enumerate(shapes) if s is not None)
    cpu_prim = cpu.CpuMsaIndexScore(attrs).by_pattern[signature.presence_masks().index(mask)]
    assert _infer(shim, cpu_prim, shapes) == expected


def test_aclnn_primitives_carry_what_the_infer_shape_reads():
    attrs = _attrs.normalize("TND", 0, 2, 3, "token", -2.5, 64, 40)
    kernel = ascend.AclnnKernel(attrs)
    assert len(kernel.by_pattern) == len(signature.presence_masks()) + 1
    for mask, prim in zip(signature.presence_masks(), kernel.by_pattern):
        assert prim.attrs["func_name"] == f"{_lib.library_path()}:{signature.ACLNN_OP}"
        assert prim.attrs["cpp_infer_shape"] and prim.attrs[infer.PRESENCE_ATTR] == mask
        assert prim.attrs["reg_op_name"] == signature.OP_TYPE
        carried = {name[len(infer.ACLNN_INFER_ATTR_PREFIX):]: value for name, value in prim.attrs.items()
                   if name.startswith(infer.ACLNN_INFER_ATTR_PREFIX)}
        assert carried == attrs
        # The aclnn attributes of these names are call arguments: none is fixed on the primitive.
        assert not set(signature.ACLNN_ATTR_NAMES) & set(prim.attrs)
    static = kernel.by_pattern[-1]
    assert static.attrs["func_name"] == signature.ACLNN_OP and "cpp_infer_shape" not in static.attrs


def test_cpu_attribute_names_are_not_read_by_the_aclnn_infer_shape(shim):
    """The two callbacks read different attribute names: an aclnn infer-shape handed a CPU primitive's
    attributes fails loudly instead of inferring from defaults."""
    case = cases.CASES_BY_NAME["L1-prefill-unaligned"]
    inputs = cases.build_inputs(case)
    attrs = _attrs.normalize(**case.attrs())
    shapes = _aclnn_shapes(inputs)
    mask = sum(1 << i for i, s in enumerate(shapes) if s is not None)
    cpu_prim = cpu.CpuMsaIndexScore(attrs).by_pattern[signature.presence_masks().index(mask)]
    cpu_prim.add_prim_attr("func_name", f"{_lib.library_path()}:{signature.ACLNN_OP}")
    with pytest.raises(RuntimeError, match="failed \\(3\\)"):
        _infer(shim, cpu_prim, shapes)
