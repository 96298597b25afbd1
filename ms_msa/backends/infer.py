"""Inference shared by the backends' Custom primitives: the C++ argument rules, run from Python."""
import ctypes
import functools

import mindspore as ms
from mindspore import ops
from mindspore.common import dtype as mstype

from .. import _lib
from . import signature

NUM_TENSOR_INPUTS = len(signature.INPUTS)

# Must equal kPresenceAttr of ms_msa/csrc/cpu/aot_attrs.h.
PRESENCE_ATTR = "present_inputs"
# Must equal kAclnnInferAttrPrefix of ms_msa/csrc/cpu/aot_attrs.h: the aclnn Custom's attributes named
# like the Cell's are call arguments its C++ infer-shape does not see, so the Cell's attributes are
# set on that primitive under these prefixed names.
ACLNN_INFER_ATTR_PREFIX = "infer_"


def aot_dtype_name(dtype):
    """MindSpore's AOT dtype string of a (tensor) dtype; "none" for an absent input."""
    if dtype is None:
        return "none"
    if hasattr(dtype, "element_type"):
        dtype = dtype.element_type()
    return str(dtype).lower()


# A tensor's dtype as MindSpore hands it to an infer callback, and its state: the (type id,) of its element.
_TENSOR_TYPE = mstype.TensorType
_tensor_type_state = _TENSOR_TYPE.__getstate__


def dtype_key(dtype):
    """A key that tells (tensor) dtypes apart and hashes fast: a TensorType's pickle state, the (type id,) of its
    element (about 0.2 µs, where hashing the TensorType itself takes about 2.5 µs and comparing two 4.6 µs, which
    made the memo of passed arguments cost 44 µs of a 150 µs PyNative call). A TensorType, what MindSpore hands an
    infer callback, is taken first; another type with a pickle state and an element type keys as its class name
    and that state; anything else as itself."""
    if type(dtype) is _TENSOR_TYPE:
        return _tensor_type_state(dtype)
    getstate = getattr(type(dtype), "__getstate__", None)
    if dtype is None or getstate is None or not hasattr(dtype, "element_type"):
        return dtype
    try:
        return (type(dtype).__name__,) + tuple(getstate(dtype))
    except (TypeError, ValueError, RuntimeError):
        return dtype


@functools.lru_cache(maxsize=None)
def _infer_shape_fn():
    fn = _lib.library().MsaInferShape
    fn.argtypes = [ctypes.POINTER(ctypes.c_int32), ctypes.POINTER(ctypes.c_int64), ctypes.c_uint32, ctypes.c_void_p,
                   ctypes.POINTER(ctypes.c_int64), ctypes.c_char_p, ctypes.c_int]
    return fn


def constant_float(name):
    """A floating-point constant of msa_config.h (the force values), read from the library."""
    fn = _lib.library().MsaConstantFloat
    fn.argtypes, fn.restype = [ctypes.c_char_p], ctypes.c_double
    value = fn(name.encode())
    if value != value:  # NaN: unknown name
        raise KeyError(name)
    return value


def infer_output_shape(shapes, attrs, target):
    """[N1, T1, W] from the tensor shapes alone (aclnn order, None = absent; -1 = unknown size), by
    the C++ shape rules (msa_infer.h). Raises ValueError naming the argument of a broken rule.

    For infer callbacks that see shapes without dtypes; `check_dtypes` covers the dtype rules.
    """
    n, max_rank = NUM_TENSOR_INPUTS, _lib.constant("max_rank")
    ndims = (ctypes.c_int32 * n)()
    dims = (ctypes.c_int64 * (n * max_rank))()
    present = 0
    for i, shape in enumerate(shapes[:n]):
        if shape is None:
            continue
        present |= 1 << i
        shape = list(shape)
        if shape == [-2]:
            ndims[i] = -1
            continue
        ndims[i] = min(len(shape), max_rank + 1)
        for r, v in enumerate(shape[:max_rank]):
            dims[i * max_rank + r] = v
    out = (ctypes.c_int64 * 3)()
    msg = ctypes.create_string_buffer(1024)
    c_attrs = _lib._attrs_c(attrs, target)  # pylint: disable=protected-access
    code = _infer_shape_fn()(ndims, dims, present, ctypes.addressof(c_attrs), out, msg, len(msg))
    if code:
        raise (TypeError if code == 1 else ValueError)(msg.value.decode(errors="replace"))
    return [out[0], out[1], out[2]]


def check_dtypes(dtypes, attrs, target):
    """The dtype and presence rules alone (aclnn order, None = absent), sizes taken as unknown."""
    names = [aot_dtype_name(d) for d in dtypes[:NUM_TENSOR_INPUTS]]
    _lib.check_args(names, [None if d is None else [-2] for d in dtypes[:NUM_TENSOR_INPUTS]], attrs, target)
    return ms.float32


# An absent input as MindSpore describes a None argument to __infer__.
_ABSENT = {"shape": None, "dtype": None, "value": None}

# How many passing argument signatures a primitive remembers (then it starts afresh): a serving loop has a
# handful (prefill, decode, a few batch shapes).
_PASSED_ARGUMENTS_KEPT = 64


class MsaCustom(ops.Custom):
    """ops.Custom whose inference runs the C++ argument rules once, with shapes and dtypes together.

    present_inputs: None for a primitive with Python shape inference only (static shapes), or the
    presence mask (signature.presence_masks()) of the one input pattern this primitive serves: it
    then also declares the library's C++ infer-shape (`<func>InferShape`), which MindSpore uses
    for dynamic shapes and which needs that mask because MindSpore does not list absent inputs.
    `func` then names the library: "<path>:<symbol>".
    """

    def __init__(self, func, attrs, target, reg_info=None, present_inputs=None, attrs_as_inputs=False,
                 given_only=False):
        """attrs_as_inputs: the attributes arrive as positional arguments after the tensors (the
        aclnn Custom), so they are not set on the primitive, and a PyNative launch (pyboost) infers
        through out_shape/out_dtype, which then carry the rules.
        given_only: the primitive is called with only the inputs of present_inputs, in aclnn order (no None
        among them), and infers in Python; its kernel entry reads present_inputs to place them."""
        self._msa_attrs = dict(attrs)
        self._msa_target = target
        self._msa_passed = {}  # (each input's shape and dtype key, flat) -> output shape, of arguments that passed
        self._msa_present = present_inputs
        self._msa_given = tuple(i for i in range(NUM_TENSOR_INPUTS) if present_inputs >> i & 1) if given_only \
            else None
        self._msa_listed = None if given_only else NUM_TENSOR_INPUTS  # the tensors among infer's arguments
        if present_inputs is not None and not given_only:
            out_shape = None  # declares the library's C++ infer-shape to MindSpore
        elif attrs_as_inputs:
            out_shape = lambda *shapes: infer_output_shape(shapes, self._msa_attrs, target)
        else:
            out_shape = lambda *shapes: None  # unused: __infer__ below answers
        out_dtype = (lambda *dtypes: check_dtypes(dtypes, self._msa_attrs, target)) if attrs_as_inputs else \
            self._infer_dtype
        super().__init__(func, out_shape, out_dtype, func_type="aot", bprop=None, reg_info=reg_info)
        if not attrs_as_inputs or present_inputs is not None:
            prefix = ACLNN_INFER_ATTR_PREFIX if attrs_as_inputs else ""
            for name, value in attrs.items():
                self.add_prim_attr(prefix + name, -1 if value is None and name == "max_kv_blocks" else value)
        if present_inputs is not None:
            self.add_prim_attr(PRESENCE_ATTR, present_inputs)

    def __infer__(self, *args):
        # Shapes and dtypes are checked together (the rules need both), so this replaces
        # Custom.__infer__, which would ask for them one after the other. Attributes passed as
        # positional arguments (the aclnn Custom) follow the tensors and are not checked here.
        #
        # A serving loop calls with the same shapes and dtypes again and again, and the rules depend on
        # nothing else (the attributes are fixed per primitive): passing arguments are remembered, which
        # takes the C++ rule check (about 40 µs of a 250 µs PyNative call here) off every repeated call.
        # Failing arguments are not remembered: each such call raises again.
        key = []
        for a in args[:self._msa_listed]:  # one flat tuple: 2.1 µs a call where a tuple per argument took 3.7
            shape = a["shape"]
            key.append(None if shape is None else tuple(shape))
            key.append(dtype_key(a["dtype"]))
        key = tuple(key)
        out = self._msa_passed.get(key)
        if out is None:
            out = self._check(args)
            if len(self._msa_passed) >= _PASSED_ARGUMENTS_KEPT:
                self._msa_passed.clear()
            self._msa_passed[key] = out
        return {"shape": list(out), "dtype": ms.float32, "value": None}

    def _check(self, args):
        """The output shape of arguments not seen before, by the C++ rules (aclnn order, all eight inputs)."""
        if self._msa_given is not None:
            if len(args) != len(self._msa_given):
                raise RuntimeError(f"MsaIndexScore: internal error: primitive for the inputs {self._msa_given} "
                                   f"called with {len(args)}")
            spread = [_ABSENT] * NUM_TENSOR_INPUTS
            for slot, arg in zip(self._msa_given, args):
                spread[slot] = arg
            args = spread
        args = args[:NUM_TENSOR_INPUTS]
        if self._msa_present is not None:
            present = sum(1 << i for i, a in enumerate(args) if a["dtype"] is not None)
            if present != self._msa_present:
                raise RuntimeError(f"MsaIndexScore: internal error: primitive for input pattern {self._msa_present:#x} "
                                   f"called with pattern {present:#x}")
        shapes = tuple(None if a["shape"] is None else tuple(a["shape"]) for a in args)
        names = tuple(aot_dtype_name(a["dtype"]) for a in args)
        return _lib.check_args(names, shapes, self._msa_attrs, self._msa_target)

    def _infer_dtype(self, *dtypes):
        return ms.float32


def primitives_by_pattern(make):
    """make(mask) for every presence mask of signature.presence_masks(), then make(None) for calls
    missing a required input (they only need the Python infer, which names what is missing); index
    the result with signature.pattern_index."""
    return tuple(make(mask) for mask in signature.presence_masks()) + (make(None),)
