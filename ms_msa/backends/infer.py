"""Python infer-shape/infer-type shared by the backends' Custom primitives (static shapes)."""
import mindspore as ms
from mindspore import ops

from .. import _lib


def aot_dtype_name(dtype):
    """MindSpore's AOT dtype string of a (tensor) dtype; "none" for an absent input."""
    if dtype is None:
        return "none"
    if hasattr(dtype, "element_type"):
        dtype = dtype.element_type()
    return str(dtype).lower()


class MsaCustom(ops.Custom):
    """ops.Custom whose inference runs the C++ argument rules once, with shapes and dtypes together."""

    def __init__(self, func, attrs, target, reg_info=None):
        self._msa_attrs = dict(attrs)
        self._msa_target = target
        super().__init__(func, lambda *shapes: None, self._infer_dtype, func_type="aot", bprop=None,
                         reg_info=reg_info)
        for name, value in attrs.items():
            self.add_prim_attr(name, -1 if value is None and name == "max_kv_blocks" else value)

    def __infer__(self, *args):
        # Shapes and dtypes are checked together (the rules need both), so this replaces
        # Custom.__infer__, which would ask for them one after the other.
        return {"shape": self._infer_shape(*args), "dtype": ms.float32, "value": None}

    def _infer_shape(self, *args):
        names = [aot_dtype_name(a["dtype"]) for a in args]
        shapes = [a["shape"] for a in args]
        return _lib.check_args(names, shapes, self._msa_attrs, self._msa_target)

    def _infer_dtype(self, *dtypes):
        return ms.float32
