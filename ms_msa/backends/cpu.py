"""CPU backend: the fused C++ kernel (ms_msa/csrc) called through ops.Custom(func_type="aot")."""
from .. import _lib
from .infer import MsaCustom

KERNEL_SYMBOL = "MsaIndexScore"


def make_primitive(attrs):
    return MsaCustom(f"{_lib.library_path()}:{KERNEL_SYMBOL}", attrs, _lib.TARGET_CPU)
