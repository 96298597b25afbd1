"""CPU backend: the fused C++ kernel (ms_msa/csrc) called through ops.Custom(func_type="aot")."""
from mindspore import nn
from mindspore.ops import CustomRegOp

from .. import _lib
from . import signature
from .infer import MsaCustom, primitives_by_pattern

KERNEL_SYMBOL = "MsaIndexScore"


def make_primitive(attrs):
    return CpuMsaIndexScore(attrs)


class CpuMsaIndexScore(nn.Cell):
    """The CPU kernel behind one primitive per pattern of given optional inputs.

    MindSpore's C++ infer-shape (needed for dynamic shapes) is not told which optional inputs are
    None, so each primitive is built for one pattern and carries it; `construct` picks the one
    matching the call, which GRAPH_MODE resolves while compiling. Takes the tensors in aclnn order.
    """

    def __init__(self, attrs):
        super().__init__()
        func = f"{_lib.library_path()}:{KERNEL_SYMBOL}"
        # The reg_info names the op (MindSpore's C++ infer path reads it as reg_op_name); a fresh one per
        # primitive, as Custom rewrites the dict it registers.
        def make(mask):
            reg_info = None if mask is None else CustomRegOp(KERNEL_SYMBOL).target("CPU").get_op_info()
            return MsaCustom(func, attrs, _lib.TARGET_CPU, reg_info=reg_info, present_inputs=mask)

        self.by_pattern = primitives_by_pattern(make)
        # Python shape inference only, for every input pattern: what MsaIndexScore calls in PyNative.
        self.pynative_primitive = self.by_pattern[-1]

    def construct(self, query, key, block_table, scale, atten_mask, actual_seq_qlen, actual_seq_klen, start_loc):
        op = self.by_pattern[signature.pattern_index(query, key, block_table, scale, atten_mask, actual_seq_qlen,
                                                     actual_seq_klen, start_loc)]
        return op(query, key, block_table, scale, atten_mask, actual_seq_qlen, actual_seq_klen, start_loc)
