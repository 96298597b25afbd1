"""CPU backend: the fused C++ kernel (ms_msa/csrc) called through ops.Custom(func_type="aot")."""
from mindspore import nn
from mindspore.ops import CustomRegOp

from .. import _lib
from . import signature
from .infer import MsaCustom, primitives_by_pattern

KERNEL_SYMBOL = "MsaIndexScore"
# The entry that is handed only the given inputs (msa_index_score_aot.cc).
GIVEN_KERNEL_SYMBOL = "MsaIndexScoreGiven"


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
        # Python shape inference only, for every input pattern: what MsaIndexScore calls in PyNative for a call
        # that lacks a required input (its infer names it).
        self.pynative_primitive = self.by_pattern[-1]
        self._attrs = attrs
        self._given_only = {}  # presence mask -> primitive handed only those inputs

    def pynative_given(self, mask):
        """The primitive for a PyNative call whose present inputs (aclnn order) are `mask`, which must include
        every required input: it is handed only those tensors, since MindSpore 2.10 spends about 4 µs of a
        PyNative call on each None argument. Python shape inference; built at the first call of each pattern."""
        op = self._given_only.get(mask)
        if op is None:
            op = MsaCustom(f"{_lib.library_path()}:{GIVEN_KERNEL_SYMBOL}", self._attrs, _lib.TARGET_CPU,
                           present_inputs=mask, given_only=True)
            self._given_only[mask] = op
        return op

    def construct(self, query, key, block_table, scale, atten_mask, actual_seq_qlen, actual_seq_klen, start_loc):
        op = self.by_pattern[signature.pattern_index(query, key, block_table, scale, atten_mask, actual_seq_qlen,
                                                     actual_seq_klen, start_loc)]
        return op(query, key, block_table, scale, atten_mask, actual_seq_qlen, actual_seq_klen, start_loc)
