"""ctypes bindings to the CPU library's rule checks (ms_msa/csrc/common/msa_rules_c_api.h).

The argument rules of SPEC §5 are written once, in C++; Python calls them here so that the Cell, the
CPU kernel and the Ascend tiling can never disagree about what a valid call is.
"""
import ctypes
import threading

from . import _build

_MSG_CAP = 1024
_ERRORS = {1: TypeError, 2: ValueError}

TARGET_CPU = 0
TARGET_ASCEND = 1

_lock = threading.Lock()
_lib = None


class _AttrsC(ctypes.Structure):
    _fields_ = [
        ("layout_key", ctypes.c_char_p),
        ("local_window", ctypes.c_char_p),
        ("sparse_mode", ctypes.c_int64),
        ("init_blocks", ctypes.c_int64),
        ("local_blocks", ctypes.c_int64),
        ("block_size", ctypes.c_int64),
        ("max_kv_blocks", ctypes.c_int64),
        ("target", ctypes.c_int32),
        ("scale_layout", ctypes.c_char_p),
    ]


def library():
    """The loaded CPU library, built first if missing or stale."""
    global _lib
    with _lock:
        if _lib is None:
            lib = ctypes.CDLL(_build.build())
            lib.MsaCheckAttrs.argtypes = [ctypes.POINTER(_AttrsC), ctypes.c_char_p, ctypes.c_int]
            lib.MsaCheckArgs.argtypes = [ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(ctypes.c_int32),
                                         ctypes.POINTER(ctypes.c_int64), ctypes.POINTER(_AttrsC),
                                         ctypes.POINTER(ctypes.c_int64), ctypes.c_char_p, ctypes.c_int]
            lib.MsaConstant.argtypes = [ctypes.c_char_p]
            lib.MsaConstant.restype = ctypes.c_int64
            lib.MsaLastKernelError.argtypes = [ctypes.c_char_p, ctypes.c_int]
            lib.MsaCpuLastLaunchNanos.restype = ctypes.c_int64
            lib.MsaCpuBf16PairRateRatio.restype = ctypes.c_double
            _lib = lib
        return _lib


def library_path():
    library()
    return _build.lib_path()


def constant(name):
    value = library().MsaConstant(name.encode())
    if value < 0:
        raise KeyError(name)
    return value



def _num_inputs():
    return constant("num_inputs")


def _attrs_c(attrs, target):
    return _AttrsC(
        attrs["layout_key"].encode() if isinstance(attrs["layout_key"], str) else None,
        attrs["local_window"].encode() if isinstance(attrs["local_window"], str) else None,
        attrs["sparse_mode"], attrs["init_blocks"], attrs["local_blocks"], attrs["block_size"],
        -1 if attrs["max_kv_blocks"] is None else attrs["max_kv_blocks"], target,
        attrs.get("scale_layout", "auto").encode())


def _raise(code, msg):
    if code:
        raise _ERRORS.get(code, RuntimeError)(msg.value.decode(errors="replace"))


def check_attrs(attrs, target=TARGET_CPU):
    """Raises ValueError if the attributes alone break a rule."""
    msg = ctypes.create_string_buffer(_MSG_CAP)
    c = _attrs_c(attrs, target)
    _raise(library().MsaCheckAttrs(ctypes.byref(c), msg, _MSG_CAP), msg)


def check_args(dtype_names, shapes, attrs, target=TARGET_CPU):
    """Checks every shape/dtype rule; returns the output shape [N1, T1, W] (-1 where unknown).

    dtype_names: MindSpore AOT names ("float16", ..., "none" for an absent input), aclnn order.
    shapes: tuples (None for an absent input; [-2] for an unknown rank; -1 for an unknown dim).
    """
    n = _num_inputs()
    max_rank = constant("max_rank")
    names = (ctypes.c_char_p * n)(*[d.encode() for d in dtype_names])
    ndims = (ctypes.c_int32 * n)()
    dims = (ctypes.c_int64 * (n * max_rank))()
    for i, shape in enumerate(shapes):
        if shape is None:
            continue
        shape = list(shape)
        if shape == [-2]:
            ndims[i] = -1
            continue
        ndims[i] = len(shape) if len(shape) <= max_rank else max_rank + 1
        for r, v in enumerate(shape[:max_rank]):
            dims[i * max_rank + r] = v
    out = (ctypes.c_int64 * 3)()
    msg = ctypes.create_string_buffer(_MSG_CAP)
    c = _attrs_c(attrs, target)
    _raise(library().MsaCheckArgs(names, ndims, dims, ctypes.byref(c), out, msg, _MSG_CAP), msg)
    return [out[0], out[1], out[2]]


def last_kernel_error():
    msg = ctypes.create_string_buffer(_MSG_CAP)
    library().MsaLastKernelError(msg, _MSG_CAP)
    return msg.value.decode(errors="replace")


def last_launch_seconds():
    """Seconds the last MsaIndexScore launch spent inside the CPU library (attributes, checks, the work), by the
    library's own clock (for the benchmarks: what a call took beyond it is MindSpore's and Python's part)."""
    return library().MsaCpuLastLaunchNanos() / 1e9


def cpu_isas():
    """The CPU micro-kernels this machine can run, best first (MS_MSA_CPU_ISA picks one; the first is the default).
    avx512-bf16 is first only where its vdpbf16ps outruns the fp32 FMA (cpu_bf16_pair_rate_ratio() >= 1)."""
    buf = ctypes.create_string_buffer(256)
    library().MsaCpuIsas(buf, 256)
    return buf.value.decode().split(",")


def cpu_bf16_pair_rate_ratio():
    """vdpbf16ps's multiply-adds per second over the fp32 FMA's, as this process measured them on first use of the
    CPU kernels (0.0 where the CPU has no AVX512-BF16)."""
    return library().MsaCpuBf16PairRateRatio()
