"""The AscendC kernel of ascendc/ run on the race-checking CPU model of the AscendC API
(ascendc/cpu_model/): what an Ascend user of MsaIndexScore gets, computed without an NPU.

`msa_index_score(...)` takes the Cell's arguments (MindSpore tensors, in MsaIndexScore.construct's
positional order) and attributes (keywords) and returns the float32 numpy score. It runs the Ascend
backend's whole composition (ms_msa.backends.ascend.AscendMsaIndexScore: argument checks with the
Ascend rules, the default mask, the scale transpose, token-mode forcing and fill_value around the
kernel) with only the device call replaced: the op_host tiling plans the launch from the shapes, and
the kernel entry `msa_index_score` runs on the modelled AI cores (1 Cube + 2 Vector threads each).
A synchronisation hazard, a hang, an out-of-bounds access or an output element never written stops
the run: ModelError with the model's message.

The model library (the model, the kernel for its four dtype columns, the tiling and the shared rules)
is built with the system C++ compiler on first use, through ms_msa._build (rebuilt when a source
changes; MS_MSA_SANITIZE=1 selects an ASan + UBSan build). It needs a source checkout: the AscendC
sources are ascendc/ beside the ms_msa package folder (MS_MSA_ASCENDC_DIR names another), and
`pip install .` does not ship them, so an installed package refuses at the first call, saying where it
looked (SourceCheckoutError). A failed build raises RuntimeError whose first line carries the compiler's
first error, followed by the command and the compiler's whole output.

    python -m ms_msa.testing.ascend_model --counts     # per-core counts of the SPEC §7 matrix
"""
import argparse
import ctypes
import functools
import glob
import os
import sys
import threading

import numpy as np
import mindspore as ms
from mindspore import nn, ops

from .. import _attrs, _build, _lib
from ..backends import ascend
from ..backends.infer import aot_dtype_name
from .ascend_cost import COUNTERS

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ASCENDC_ENV = "MS_MSA_ASCENDC_DIR"     # the ascendc/ folder of a source checkout, for an installed ms_msa
ASCENDC = os.environ.get(ASCENDC_ENV) or os.path.join(REPO, "ascendc")
MODEL_DIR = os.path.join(ASCENDC, "cpu_model")
OP_KERNEL = os.path.join(ASCENDC, "msa_index_score", "op_kernel")
OP_HOST = os.path.join(ASCENDC, "msa_index_score", "op_host")
COMMON = os.path.join(_build.CSRC_DIR, "common")

# Cube cores of the modelled chip (Atlas A2, 24 AIC): the tiling decides how many it launches.
DEFAULT_AIC_CORES = 24
# Per-core counters, in the order of the model library's export (driver.cc kCounters).
COUNTER_NAMES = COUNTERS
_MAX_CORES = 64
_DTYPE_NAMES = {"half": "float16", "bfloat16_t": "bfloat16", "int8_t": "int8"}
_MSG_CAP = 8192

# The kernel's dtype columns (OpDef): (DTYPE_QUERY, DTYPE_KEY, entry suffix).
_COLUMNS = (("half", "half", "f16_f16"), ("bfloat16_t", "bfloat16_t", "bf16_bf16"), ("half", "int8_t", "f16_i8"),
            ("bfloat16_t", "int8_t", "bf16_i8"))


class ModelError(RuntimeError):
    """The model stopped the kernel: a hazard, a hang, an access out of bounds, ... (the message says)."""


class SourceCheckoutError(RuntimeError):
    """The AscendC sources the model is built from are not there (an installed ms_msa: they are not shipped)."""


def check_sources():
    """Raises SourceCheckoutError, naming the folder looked in, unless the AscendC sources are there."""
    needed = (os.path.join(MODEL_DIR, "runtime.cc"), os.path.join(OP_KERNEL, "msa_index_score.cpp"),
              os.path.join(OP_HOST, "tiling_logic.cc"))
    missing = [path for path in needed if not os.path.isfile(path)]
    if missing:
        raise SourceCheckoutError(
            f"ms_msa.testing.ascend_model needs a source checkout of ms_msa: it builds the AscendC kernel and its "
            f"CPU model from the ascendc/ folder, looked for in {ASCENDC} ({missing[0]} is missing). `pip install .` "
            f"does not ship ascendc/: run from a clone of the repository, or set {ASCENDC_ENV} to a clone's ascendc/.")


def _compile(target, units, flags, roots, what):
    """_build.build_library, with the compiler's first error on the first line of a failure's message."""
    try:
        return _build.build_library(target, units, flags, roots, exts=(".cc", ".h", ".inc", ".cpp"), what=what)
    except OSError as err:                    # no compiler: CXX names a program that is not there
        raise RuntimeError(f"building {what} failed: the C++ compiler could not be run: {err}") from err
    except RuntimeError as err:
        head, _, rest = str(err).partition("\n")
        output = rest.partition("\n")[2]      # after the "$ command" line
        lines = [line for line in output.splitlines() if line.strip()]
        first = next((line for line in lines if "error" in line.lower()), lines[0] if lines else
                     "the compiler failed and printed nothing")
        raise RuntimeError(f"{head} {first.strip()}\n{rest}") from None


def _kernel_units(kernel_dir, columns, extra=()):
    """The kernel entry once per core type and dtype column: a MIX kernel is compiled separately for
    the Cube and the Vector cores, as CANN's compiler does (`if ASCEND_IS_AIC` is an if constexpr)."""
    kernel = os.path.join(kernel_dir, "msa_index_score.cpp")
    units = []
    for core in ("aic", "aiv"):
        for query, key, suffix in columns:
            units.append((kernel, [f"-I{kernel_dir}", f"-DASCEND_MODEL_{core.upper()}", f"-DDTYPE_QUERY={query}",
                                   f"-DDTYPE_KEY={key}", f"-Dmsa_index_score=msa_index_score_{core}_{suffix}",
                                   f"-Dmsa_kernel=msa_kernel_{core}_{suffix}", *extra]))
    return units


def _units():
    """The compile units of the model library: the model, the tiling, the shared rules and the kernel."""
    units = [(os.path.join(MODEL_DIR, "runtime.cc"), []), (os.path.join(MODEL_DIR, "driver.cc"), [])]
    units += [(path, []) for path in sorted(glob.glob(os.path.join(MODEL_DIR, "ops_*.cc")))]
    units += [(os.path.join(OP_HOST, "tiling_logic.cc"), []), (os.path.join(COMMON, "msa_rules.cc"), [])]
    return units + _kernel_units(OP_KERNEL, _COLUMNS)


def library_path():
    """Beside the CPU kernel, in a folder of its own (a wheel carries lib/*.so only: not this)."""
    name = "libms_msa_ascend_model_asan.so" if _build.sanitized() else "libms_msa_ascend_model.so"
    return os.path.join(_build.LIB_DIR, "ascend_model", name)


_BUILD_LOCK = threading.Lock()


@functools.lru_cache(maxsize=1)
def library():
    """The model library, built when missing or stale."""
    check_sources()
    with _BUILD_LOCK:
        path = _compile(library_path(), _units(), [f"-I{MODEL_DIR}", f"-I{OP_KERNEL}", f"-I{OP_HOST}", f"-I{COMMON}"],
                        [ASCENDC, COMMON], what="the AscendC CPU model")
    # Global: a kernel variant (kernel_variant) resolves the model's runtime from this library.
    lib = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
    lib.ascend_model_msa_index_score.restype = ctypes.c_int
    lib.ascend_model_msa_index_score.argtypes = [
        ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(ctypes.c_int32), ctypes.POINTER(ctypes.c_int64),
        ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64,
        ctypes.c_uint32, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_float),
        ctypes.c_int64,
        ctypes.POINTER(ctypes.c_uint64), ctypes.c_int64, ctypes.POINTER(ctypes.c_uint32), ctypes.c_char_p,
        ctypes.c_int64]
    lib.ascend_model_sync_sites.restype = ctypes.c_int64
    lib.ascend_model_sync_sites.argtypes = [ctypes.c_char_p, ctypes.c_int64]
    lib.ascend_model_vector_ops.restype = ctypes.c_int64
    lib.ascend_model_vector_ops.argtypes = [ctypes.c_char_p, ctypes.c_int64]
    return lib


class KernelVariant:
    """The kernel of another source folder (an edited copy of op_kernel/), built for one dtype column
    against the model library's runtime; pass it as msa_index_score(..., kernel=variant)."""

    def __init__(self, kernel_dir, build_dir, query="half", key="half"):
        suffix = next(s for q, k, s in _COLUMNS if (q, k) == (query, key))
        library()  # the runtime the variant links against, loaded first (globally)
        target = os.path.join(build_dir, f"libmsa_kernel_variant_{suffix}.so")
        # -O1: a variant is built per test run; default visibility to reach the model's runtime.
        units = _kernel_units(kernel_dir, [(query, key, suffix)], extra=("-O1", "-fvisibility=default"))
        path = _compile(target, units, [f"-I{MODEL_DIR}"], [kernel_dir, MODEL_DIR], what="a kernel variant")
        self._lib = ctypes.CDLL(path)
        self.query, self.key = query, key
        self.aic = ctypes.cast(getattr(self._lib, f"msa_index_score_aic_{suffix}"), ctypes.c_void_p).value
        self.aiv = ctypes.cast(getattr(self._lib, f"msa_index_score_aiv_{suffix}"), ctypes.c_void_p).value


def _host_bytes(tensor):
    """The tensor's bytes as the device holds them (bfloat16 through float32, which holds it exactly)."""
    if tensor.dtype == ms.bfloat16:
        wide = ops.cast(tensor, ms.float32).asnumpy()
        return np.ascontiguousarray((wide.view(np.uint32) >> 16).astype(np.uint16))
    return np.ascontiguousarray(tensor.asnumpy())


class KernelRun:
    """The last launch: counters per core (with "vector_ops", the vector repeats per instruction), the cores
    launched, the sync call sites executed."""
    counters = None
    cores = 0
    sync_sites = ()


def launch(tensors, layout_key, sparse_mode, init_blocks, local_blocks, out_shape, aic_cores=DEFAULT_AIC_CORES,
           skip_sync_site=None, run=None, kernel=None):
    """One aclnnMsaIndexScore launch on the model: the eight aclnn tensors (None when absent), the aclnn
    attributes, the output shape the rules inferred. Returns the float32 score; fills `run`."""
    lib = library()
    n = len(tensors)
    max_rank = _lib.constant("max_rank")
    names = (ctypes.c_char_p * n)()
    ndims = (ctypes.c_int32 * n)()
    dims = (ctypes.c_int64 * (n * max_rank))()
    data = (ctypes.c_void_p * n)()
    keep = []
    for i, t in enumerate(tensors):
        names[i] = aot_dtype_name(None if t is None else t.dtype).encode()
        if t is None:
            continue
        for r, v in enumerate(t.shape):
            dims[i * max_rank + r] = v
        ndims[i] = len(t.shape)
        host = _host_bytes(t)
        keep.append(host)
        data[i] = host.ctypes.data
    score = np.empty(out_shape, np.float32)
    counters = (ctypes.c_uint64 * (len(COUNTER_NAMES) * _MAX_CORES))()
    cores = ctypes.c_uint32(0)
    msg = ctypes.create_string_buffer(_MSG_CAP)
    code = lib.ascend_model_msa_index_score(
        names, ndims, dims, data, layout_key.encode(), sparse_mode, init_blocks, local_blocks, aic_cores,
        (skip_sync_site or "").encode(), kernel.aic if kernel else None, kernel.aiv if kernel else None, score.ctypes.data_as(ctypes.POINTER(ctypes.c_float)), score.size,
        counters, _MAX_CORES, ctypes.byref(cores), msg, _MSG_CAP)
    if run is not None:
        run.cores = cores.value
        n = len(COUNTER_NAMES)
        run.counters = [dict(zip(COUNTER_NAMES, counters[n * c:n * c + n])) for c in range(cores.value)]
        size = lib.ascend_model_sync_sites(None, 0)
        buf = ctypes.create_string_buffer(size + 1)
        lib.ascend_model_sync_sites(buf, size + 1)
        run.sync_sites = tuple(s for s in buf.value.decode().split("\n") if s)
        size = lib.ascend_model_vector_ops(None, 0)
        buf = ctypes.create_string_buffer(size + 1)
        lib.ascend_model_vector_ops(buf, size + 1)
        for line in buf.value.decode().split("\n"):
            core, op, repeats = line.split(" ") if line else (None, None, None)
            if core is not None and int(core) < len(run.counters):
                run.counters[int(core)].setdefault("vector_ops", {})[op] = int(repeats)
    text = msg.value.decode(errors="replace")
    if code == 1:
        raise ModelError(text)
    if code == 2:
        raise TypeError(text)
    if code == 3:
        raise ValueError(text)
    if code != 0:
        raise RuntimeError(text)
    return score


class ModelKernel(nn.Cell):
    """The device boundary of AscendMsaIndexScore (8 tensors, then the aclnn attributes) on the model.
    Like the aclnn primitive, it first infers the output with the Ascend rules (TypeError/ValueError)."""

    def __init__(self, kernel_cell_attrs, aic_cores=DEFAULT_AIC_CORES, skip_sync_site=None, run=None, kernel=None):
        super().__init__()
        self.kernel_cell_attrs = kernel_cell_attrs
        self.aic_cores = aic_cores
        self.skip_sync_site = skip_sync_site
        self.run = run
        self.variant = kernel

    def construct(self, *args):
        tensors, (layout_key, sparse_mode, init_blocks, local_blocks) = args[:8], args[8:]
        names = [aot_dtype_name(None if t is None else t.dtype) for t in tensors]
        shapes = [None if t is None else tuple(t.shape) for t in tensors]
        out_shape = _lib.check_args(names, shapes, self.kernel_cell_attrs, _lib.TARGET_ASCEND)
        if self.variant is not None and (aot_dtype_name(tensors[0].dtype), aot_dtype_name(tensors[1].dtype)) != \
                (_DTYPE_NAMES[self.variant.query], _DTYPE_NAMES[self.variant.key]):
            raise ValueError("the kernel variant was built for another dtype column")
        score = launch(tensors, layout_key, sparse_mode, init_blocks, local_blocks, out_shape, self.aic_cores,
                       self.skip_sync_site, self.run, self.variant)
        return ms.Tensor(score)


def msa_index_score(query, key, start_loc=None, block_table=None, scale=None, atten_mask=None,
                    actual_seq_qlen=None, actual_seq_klen=None, *, layout_key="BBND", sparse_mode=3, init_blocks=0,
                    local_blocks=1, local_window="request", fill_value=float("-inf"), block_size=128,
                    max_kv_blocks=None, scale_layout="auto", aic_cores=DEFAULT_AIC_CORES, skip_sync_site=None,
                    run=None, kernel=None):
    """MsaIndexScore as on Ascend, the kernel run on the CPU model; returns the float32 numpy score.

    Arguments and attributes are the Cell's (see ms_msa.MsaIndexScore). Model-only keywords:
    aic_cores (Cube cores of the chip, default 24), skip_sync_site ("file:line:api" of a sync call the
    model drops, for strictness tests), run (a KernelRun that receives the counters and sync sites),
    kernel (a KernelVariant to run instead of the kernel of ascendc/).
    Raises TypeError/ValueError as the Ascend backend does, ModelError when the model stops the kernel,
    SourceCheckoutError without the AscendC sources (an installed package), RuntimeError when the build fails.
    Runs in PyNative mode (the context is switched for the call and restored).
    """
    check_sources()          # an installed package refuses here, before any work
    attrs = _attrs.normalize(layout_key, sparse_mode, init_blocks, local_blocks, local_window, fill_value,
                             block_size, max_kv_blocks, scale_layout)
    _lib.check_attrs(attrs, _lib.TARGET_ASCEND)
    cell = ascend.AscendMsaIndexScore(attrs, kernel=ModelKernel(ascend.kernel_cell_attrs(attrs), aic_cores,
                                                                skip_sync_site, run, kernel))
    mode = ms.get_context("mode")
    ms.set_context(mode=ms.PYNATIVE_MODE)
    try:
        out = cell(query, key, block_table, scale, atten_mask, actual_seq_qlen, actual_seq_klen, start_loc)
    finally:
        ms.set_context(mode=mode)
    return out.asnumpy()


def counts_table(case_names=None, stream=sys.stdout):
    """Runs every Ascend-valid case of SPEC §7 (or `case_names`) and prints the per-core counts."""
    from . import cases

    selected = [cases.CASES_BY_NAME[n] for n in case_names] if case_names else \
        [c for c in cases.SPEC_CASES if ascend_valid(c)]
    print("case core " + " ".join(COUNTER_NAMES), file=stream)
    for case in selected:
        inputs = cases.build_inputs(case)
        run = KernelRun()
        msa_index_score(*cases.call_args(inputs), **case.attrs(), run=run)
        for core, counts in enumerate(run.counters):
            print(case.name, core, " ".join(str(counts[k]) for k in COUNTER_NAMES), file=stream)


def shape_counters(shape, aic_cores):
    """Our kernel's per-core counters for an ascend_cost.Shape, from a real run on the model with
    `aic_cores` Cube cores (the estimate's input). Keys live in a small pool of pages: the counts do not
    depend on their values."""
    from . import cases
    case = cases.Case(shape.name, shape.heads, shape.head_dim, 64, (shape.q_tokens,) * shape.batch,
                      (shape.kv_len,) * shape.batch, dtype="bfloat16", int8_key=shape.int8)
    inputs = cases.build_inputs(case)
    run = KernelRun()
    msa_index_score(*cases.call_args(inputs), **case.attrs(), aic_cores=aic_cores, run=run)
    return run.counters


def ascend_valid(case):
    """Whether the Ascend kernel takes the case (SPEC §7 rows that fit its rules)."""
    return (case.dtype in ("float16", "bfloat16") and case.block_size == 128 and case.head_dim % 16 == 0
            and case.head_dim <= 128)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--counts", action="store_true", help="print per-core counts of the SPEC §7 matrix")
    parser.add_argument("--case", action="append", help="only this case (repeatable)")
    parser.add_argument("--estimate", action="store_true",
                        help="estimated time per call on Ascend (cost model, not a measurement): ours, "
                             "production, roofline for the M3 index shapes (--case: an M3 shape name)")
    parser.add_argument("--shape", help="with --estimate: one shape B,Q,K[,int8] (B requests of Q tokens, K keys)")
    parser.add_argument("--chip", default="A3", choices=("A2", "A3", "950"), help="with --estimate (default A3)")
    args = parser.parse_args(argv)
    if args.estimate:
        from . import ascend_estimate
        ms.set_context(device_target="CPU")
        ascend_estimate.estimate_main(shape_counters, args.case, args.shape, args.chip)
        return 0
    if not args.counts:
        parser.print_help()
        return 0
    ms.set_context(device_target="CPU")
    counts_table(args.case)
    return 0


if __name__ == "__main__":
    sys.exit(main())
