"""Ascend backend: the AscendC kernel of ascendc/ (a CANN custom OPP package, vendor "ms_msa") called
as aclnnMsaIndexScore, with the SPEC extensions its interface cannot carry applied around it.

Finding the package: MindSpore loads `<entry>/op_api/lib/libcust_opapi.so` for every entry of
ASCEND_CUSTOM_OPP_PATH, once per process. ms_msa puts its vendor directory first on that path when
the first MsaIndexScore is built on Ascend, so build it before any other Ascend op runs (or export
the path yourself). The vendor directory is, first found wins:
  1. $MS_MSA_OPP_PATH (the vendor directory itself, i.e. the folder holding op_api/);
  2. ~/.cache/ms_msa/opp/vendors/ms_msa (where ascendc/build.sh installs by default);
  3. $ASCEND_OPP_PATH/vendors/ms_msa (a package installed into the CANN toolkit).

Around the kernel (plain MindSpore ops, `ScoreExtensions`, which also run on CPU):
  * local_window="token": the kernel runs with init_blocks = local_blocks = 0 (raw scores) and the
    token-mode forcing of SPEC §4 is applied from each token's visible block count;
  * fill_value other than -inf: the kernel's fill (-inf where a block has no visible key) is replaced;
  * max_kv_blocks with TND keys: the interface has no such attribute and the kernel's output is as wide
    as T2 needs; it is cut or widened to the Cell's width (TndOutputWidth);
  * scale_layout="BBN": the aclnn interface tells the two paged scale orders apart by shape and reads a
    [NP, X, X] scale (N2 = P) as [NP, N2, P], so a scale declared [NP, P, N2] is transposed first (one
    copy of the scale per call; "auto" passes either unambiguous order to the kernel as it is).
The aclnn interface requires an int8 [2048, 2048] atten_mask with sparse_mode 3: one is supplied when
the caller gives none (the kernel never reads it), and start_loc, which token mode does not need, is
passed as zeros when omitted.
"""
import functools
import os

import numpy as np
import mindspore as ms
from mindspore import nn, ops
from mindspore.ops import CustomRegOp

from .. import _lib
from . import signature
from .infer import MsaCustom, constant_float, primitives_by_pattern

OPP_PATH_ENV = "MS_MSA_OPP_PATH"
CUSTOM_OPP_ENV = "ASCEND_CUSTOM_OPP_PATH"
OPP_API_LIB = os.path.join("op_api", "lib", "libcust_opapi.so")
DEFAULT_INSTALL_ROOT = os.path.join("~", ".cache", "ms_msa", "opp")
PYBOOST_ENV = "MS_MSA_ASCEND_PYBOOST"  # "0": PyNative launches through ops.Custom instead

_ADAPTER_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                            "aclnn_adapter")

_NEG_INF = float("-inf")


def vendor_dir_candidates(environ=None):
    """The vendor directories ms_msa looks at, in order (see the module doc)."""
    environ = os.environ if environ is None else environ
    candidates = []
    if environ.get(OPP_PATH_ENV):
        candidates.append(environ[OPP_PATH_ENV])
    candidates.append(os.path.join(os.path.expanduser(DEFAULT_INSTALL_ROOT), "vendors", signature.VENDOR))
    if environ.get("ASCEND_OPP_PATH"):
        candidates.append(os.path.join(environ["ASCEND_OPP_PATH"], "vendors", signature.VENDOR))
    return candidates


def ensure_opp_path(environ=None):
    """Puts the ms_msa vendor directory first on ASCEND_CUSTOM_OPP_PATH; returns it.

    Raises RuntimeError naming every place looked at when no installed package is found.
    """
    environ = os.environ if environ is None else environ
    candidates = vendor_dir_candidates(environ)
    if environ.get(OPP_PATH_ENV) and not os.path.isfile(os.path.join(candidates[0], OPP_API_LIB)):
        # An explicit setting that is wrong must not be papered over by another install.
        raise RuntimeError(f"MsaIndexScore: {OPP_PATH_ENV}={candidates[0]} holds no {OPP_API_LIB}; point it at the "
                           f"'{signature.VENDOR}' vendor directory of the installed ascendc package")
    found = next((os.path.abspath(c) for c in candidates if os.path.isfile(os.path.join(c, OPP_API_LIB))), None)
    if found is None:
        raise RuntimeError("MsaIndexScore: the Ascend kernel package (vendor '" + signature.VENDOR + "') is not "
                           "installed: no " + OPP_API_LIB + " under " + ", ".join(candidates) +
                           ". Build and install it with ascendc/build.sh (needs CANN), or set " + OPP_PATH_ENV)
    entries = [e for e in environ.get(CUSTOM_OPP_ENV, "").split(":") if e]
    if not entries or os.path.abspath(entries[0]) != found:
        entries = [found] + [e for e in entries if os.path.abspath(e) != found]
        environ[CUSTOM_OPP_ENV] = ":".join(entries)
    return found


def aclnn_reg_info():
    """The reg_info of the aclnn Custom, from signature's table (inputs, attributes, output, dtypes)."""
    reg = CustomRegOp(signature.OP_TYPE)
    for index, (name, kind) in enumerate(signature.INPUTS):
        reg.input(index, name, kind)
    reg.output(0, signature.OUTPUT[0], "required")
    for name, value_type, _ in signature.ACLNN_ATTRS:
        reg.attr(name, "required", value_type)
    for query_dtype, key_dtype in signature.ASCEND_QUERY_KEY_DTYPES:
        row = []
        for name in signature.INPUT_NAMES:
            dtype = {"query": query_dtype, "key": key_dtype}.get(name) or signature.FIXED_INPUT_DTYPES[name]
            row.append((dtype, "DefaultFormat"))
        row.append((signature.OUTPUT[1], "DefaultFormat"))
        reg.dtype_format(*row)
    return reg.target("Ascend").get_op_info()


def kernel_attrs(attrs):
    """The aclnn attribute values, in aclnn order, for the Cell attributes `attrs`."""
    token = attrs["local_window"] == "token"
    values = {
        "layout_key": attrs["layout_key"],
        "sparse_mode": attrs["sparse_mode"],
        # Token-mode forcing is applied around the kernel, which then computes raw scores.
        "init_blocks": 0 if token else attrs["init_blocks"],
        "local_blocks": 0 if token else attrs["local_blocks"],
    }
    return tuple(values[name] for name in signature.ACLNN_ATTR_NAMES)


class AclnnMsaIndexScore(MsaCustom):
    """ops.Custom("aclnnMsaIndexScore", func_type="aot"): tensors in aclnn order, then the attributes
    as positional arguments in aclnn order. Inference runs the C++ rules with Target Ascend.

    present_inputs None: Python inference only (static shapes). A presence mask: the primitive of
    that one input pattern, whose `func` ("<libms_msa_cpu.so>:aclnnMsaIndexScore") names the
    library holding its C++ infer-shape, aclnnMsaIndexScoreInferShape, for dynamic-shape graphs.
    MindSpore reads only the infer-shape from that library; the kernel is the CANN package's.

    PyNative calls go through the CustomOpBuilder runner of aclnn_adapter/ when it builds (it skips
    the per-call Custom overhead), else through the Python-infer primitive (PyNative shapes are always
    known); GRAPH_MODE uses this primitive.
    """

    def __init__(self, attrs, present_inputs=None, pynative_twin=None):
        """pynative_twin: the Python-infer primitive of the same attributes that takes this one's
        PyNative calls when there is no runner (required with present_inputs)."""
        func = signature.ACLNN_OP if present_inputs is None else f"{_lib.library_path()}:{signature.ACLNN_OP}"
        super().__init__(func, attrs, _lib.TARGET_ASCEND, reg_info=aclnn_reg_info(), present_inputs=present_inputs,
                         attrs_as_inputs=True)
        self._pynative_twin = pynative_twin

    def __call__(self, *args):  # PyNative only: GRAPH_MODE compiles the primitive itself
        runner = pyboost_runner()
        if runner is not None:
            return runner.msa_index_score(*args)
        if self._pynative_twin is None:
            return super().__call__(*args)
        return self._pynative_twin(*args)


class AclnnKernel(nn.Cell):
    """The device call: one AclnnMsaIndexScore per pattern of given optional inputs (as the CPU
    backend, since the C++ infer-shape is not told which inputs are None), picked while compiling.
    Same call signature as the primitive: 8 tensors, then the aclnn attributes."""

    def __init__(self, attrs):
        super().__init__()
        static = AclnnMsaIndexScore(attrs)  # also the PyNative twin of every pattern primitive
        self.by_pattern = primitives_by_pattern(
            lambda mask: static if mask is None else AclnnMsaIndexScore(attrs, mask, static))

    def construct(self, query, key, block_table, scale, atten_mask, actual_seq_qlen, actual_seq_klen, start_loc,
                  layout_key, sparse_mode, init_blocks, local_blocks):
        op = self.by_pattern[signature.pattern_index(query, key, block_table, scale, atten_mask, actual_seq_qlen,
                                                     actual_seq_klen, start_loc)]
        return op(query, key, block_table, scale, atten_mask, actual_seq_qlen, actual_seq_klen, start_loc,
                  layout_key, sparse_mode, init_blocks, local_blocks)


@functools.lru_cache(maxsize=1)
def pyboost_runner():
    """The CustomOpBuilder module of aclnn_adapter/pyboost_msa_index_score.cpp, or None when disabled
    (MS_MSA_ASCEND_PYBOOST=0), not on Ascend, or without the source (an installed wheel carries only
    the package; PyNative then launches through the Custom primitive)."""
    if os.environ.get(PYBOOST_ENV, "1") == "0" or ms.get_context("device_target") != "Ascend":
        return None
    runner_source = os.path.join(_ADAPTER_DIR, "pyboost_msa_index_score.cpp")
    if not os.path.isfile(runner_source):
        return None
    common = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "csrc", "common")
    sources = [runner_source, os.path.join(common, "msa_rules.cc")]
    builder = ops.CustomOpBuilder("ms_msa_aclnn", sources, backend="Ascend", include_paths=[_ADAPTER_DIR, common])
    return builder.load()


def _token_positions(actual_seq_qlen, actual_seq_klen, num_tokens, paged, sparse_mode, block_size):
    """n_vis (SPEC §4) of every query token, int32 [T1], from the lengths alone."""
    qlen = actual_seq_qlen.astype(ms.int32)
    klen = actual_seq_klen.astype(ms.int32)
    token = ops.arange(0, num_tokens, dtype=ms.int32)
    # Request of each token: how many requests end at or before it (prefix sums are non-decreasing,
    # so empty requests are skipped).
    ends = qlen[1:]
    request = (ends.reshape(1, -1) <= token.reshape(-1, 1)).astype(ms.int32).sum(axis=1)
    q_start = ops.gather(qlen, request, 0)
    q_len = ops.gather(ends, request, 0) - q_start
    if paged:
        kv_len = ops.gather(klen, request, 0)
    else:
        kv_len = ops.gather(klen[1:], request, 0) - ops.gather(klen, request, 0)
    if sparse_mode == 3:
        vis_end = ops.minimum(ops.maximum(kv_len - q_len + (token - q_start) + 1, 0), kv_len)
    else:
        vis_end = kv_len
    return (vis_end + (block_size - 1)) // block_size


class ScoreExtensions(nn.Cell):
    """The SPEC extensions the aclnn kernel cannot carry, applied to its output with MindSpore ops.

    Input: the kernel's [N1, T1, W] float32 scores for the kernel attributes of `kernel_attrs` (raw
    scores in token mode; -inf where a block has no visible key). Output: the scores of SPEC §4 for
    the Cell attributes `attrs`. An identity when the attributes need nothing (request mode, -inf).
    """

    def __init__(self, attrs, block_size):
        super().__init__()
        self.token_forcing = attrs["local_window"] == "token" and (attrs["init_blocks"] > 0 or attrs["local_blocks"] > 0)
        self.fill_value = attrs["fill_value"]
        self.refill = not (self.fill_value == _NEG_INF)  # NaN is a fill value too
        self.paged = attrs["layout_key"] != "TND"
        self.sparse_mode = attrs["sparse_mode"]
        self.block_size = block_size
        self.init_blocks = attrs["init_blocks"]
        self.local_blocks = attrs["local_blocks"]
        self.init_value = constant_float("init_force_value")
        self.local_value = constant_float("local_force_value")

    def construct(self, score, actual_seq_qlen, actual_seq_klen):
        if not self.token_forcing and not self.refill:
            return score
        num_tokens, width = score.shape[1], score.shape[2]
        if num_tokens == 0:
            return score
        n_vis = _token_positions(actual_seq_qlen, actual_seq_klen, num_tokens, self.paged, self.sparse_mode,
                                 self.block_size).reshape(1, -1, 1)
        column = ops.arange(0, width, dtype=ms.int32).reshape(1, 1, -1)
        if self.refill:
            # Only where no key is visible: a computed score of -inf (from an -inf input) stays.
            no_key = ops.logical_and(column >= n_vis, score == _NEG_INF)
            score = ops.where(no_key, ops.full_like(score, self.fill_value), score)
        if self.token_forcing:
            visible = column < n_vis
            init = ops.logical_and(column < self.init_blocks, visible)
            local = ops.logical_and(column >= n_vis - self.local_blocks, visible)
            score = ops.where(init, ops.full_like(score, self.init_value), score)
            score = ops.where(local, ops.full_like(score, self.local_value), score)  # local wins
        return score


def kernel_cell_attrs(attrs):
    """The Cell attributes that describe what the aclnn kernel itself receives and returns (its
    inference runs with these): a scale declared BBN arrives transposed to BNB, and a TND output is
    RoundUp(ceil(T2 / P), 16) wide, since the interface carries no max_kv_blocks (TndOutputWidth
    gives the Cell's width)."""
    kernel = dict(attrs)
    if attrs.get("scale_layout") == "BBN":
        kernel["scale_layout"] = "BNB"
    if attrs["layout_key"] == "TND":
        kernel["max_kv_blocks"] = None
    return kernel


class TndOutputWidth(nn.Cell):
    """TND with max_kv_blocks: the kernel's [N1, T1, RoundUp(ceil(T2 / P), 16)] scores cut or widened to
    the Cell's W = RoundUp(max_kv_blocks, 16) columns, the new ones -inf (no key there, so
    ScoreExtensions writes the fill). A request with more blocks than W breaks a value rule (SPEC §5),
    which on Ascend makes the whole output NaN, as the kernel does for the rules it checks itself."""

    def __init__(self, max_kv_blocks, block_size):
        super().__init__()
        align = _lib.constant("out_width_align")
        self.width = max(-(-max_kv_blocks // align) * align, align)
        self.block_size = block_size

    def construct(self, score, actual_seq_klen):
        if score.shape[1] == 0:  # no query tokens: an empty [N1, 0, W] result
            return ops.zeros((score.shape[0], 0, self.width), ms.float32)
        score = ops.pad(score, (0, self.width), value=_NEG_INF)[:, :, :self.width]
        klen = actual_seq_klen.astype(ms.int32)
        blocks = (klen[1:] - klen[:-1] + (self.block_size - 1)) // self.block_size
        broken = (blocks > self.width).any()
        return ops.where(broken, ops.full_like(score, float("nan")), score)


class AscendMsaIndexScore(nn.Cell):
    """MsaIndexScore on Ascend: the aclnn kernel plus ScoreExtensions. Tensors in aclnn order.

    `kernel` is the device boundary: by default the aclnn Custom; tests pass a stand-in with the
    same call signature (8 tensors, then the aclnn attributes).
    """

    def __init__(self, attrs, kernel=None):
        super().__init__()
        self.transpose_scale = attrs.get("scale_layout") == "BBN"
        if kernel is None:
            ensure_opp_path()
            kernel = AclnnKernel(kernel_cell_attrs(attrs))
        self.kernel = kernel
        tnd_width = attrs["layout_key"] == "TND" and attrs["max_kv_blocks"] is not None
        self.tnd_width = TndOutputWidth(attrs["max_kv_blocks"], attrs["block_size"]) if tnd_width else None
        self.layout_key, self.sparse_mode, self.init_blocks, self.local_blocks = kernel_attrs(attrs)
        block_size = attrs["block_size"] if attrs["layout_key"] == "TND" else _lib.constant("ascend_block_size")
        self.extensions = ScoreExtensions(attrs, block_size)
        self.needs_mask = attrs["sparse_mode"] == 3
        size = _lib.constant("atten_mask_size")
        # The causal template of the CANN interface (1 = masked); the kernel never reads it.
        self.default_mask = ms.Tensor(np.triu(np.ones((size, size), np.int8), 1))

    def construct(self, query, key, block_table, scale, atten_mask, actual_seq_qlen, actual_seq_klen, start_loc):
        if atten_mask is None and self.needs_mask:
            atten_mask = self.default_mask
        if start_loc is None:
            start_loc = ops.zeros_like(actual_seq_qlen[1:])
        if self.transpose_scale and scale is not None:
            scale = ops.transpose(scale, (0, 2, 1))
        score = self.kernel(query, key, block_table, scale, atten_mask, actual_seq_qlen, actual_seq_klen, start_loc,
                            self.layout_key, self.sparse_mode, self.init_blocks, self.local_blocks)
        if self.tnd_width is not None:
            score = self.tnd_width(score, actual_seq_klen)
        return self.extensions(score, actual_seq_qlen, actual_seq_klen)


def make_primitive(attrs):
    return AscendMsaIndexScore(attrs)
