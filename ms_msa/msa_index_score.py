"""MsaIndexScore: the block scores of MiniMax-M3's sparse-attention index branch (SPEC.md)."""
import functools
import inspect
import re
import threading

from mindspore import Tensor, context, nn
from mindspore.common.api import _pynative_executor

from . import _attrs, _graph_calls, _lib, backends
from .backends import signature

_AOT_FAILURE = re.compile(r"function\(MsaIndexScore(?:Given)?\) is (\d+)")  # the two entries of backends/cpu.py
_KERNEL_ERRORS = {1: TypeError, 2: ValueError}
_CALL_LOCK = threading.RLock()


class MsaIndexScore(nn.Cell):
    r"""Scores every KV block for every index head and query token.

    .. math::
        score[h, t, \beta] = \max_{j \in \beta,\ j\ \mathrm{visible}} \langle q[t, h], \tilde k[j, h // (N1/N2)] \rangle

    accumulated in fp32, with causal visibility from the lengths, then init/local forcing (1e30 / 1e29)
    and `fill_value` where no key is visible. Top-k is not part of the operator. The full contract is
    SPEC.md; the attributes below are fixed when the Cell is built, so one Cell serves every batch shape.

    Args:
        layout_key (str): key layout, "BBND" [NP, P, N2, D] (or [NP, P, D]), "BNBD" [NP, N2, P, D] or
            "TND" [T2, N2, D]; case-insensitive. Default: ``"BBND"``.
        sparse_mode (int): 3 = right-down causal, 0 = only length truncation. Default: ``3``.
        init_blocks (int): blocks [0, init_blocks) are forced to 1e30. Default: ``0``.
        local_blocks (int): the local window forced to 1e29 (wins over init). Default: ``1``.
        local_window (str): "request" (window ends at start_loc[b], the CANN behaviour) or "token"
            (window ends at each token's last visible block). Default: ``"request"``.
        fill_value (float): written where no key is visible and in padding columns. Default: ``-inf``.
        block_size (int): tokens per block for TND keys (paged keys take P from their shape). Default: ``128``.
        max_kv_blocks (int): TND only, output width before rounding; None = ceil(T2 / block_size).
            Default: ``None``.
        scale_layout (str): paged layouts: the order of an int8 key's `scale`, "BNB" [NP, N2, P], "BBN"
            [NP, P, N2] (CANN's order) or "auto" (told apart by the shape; a [NP, X, X] scale with
            N2 = P = X is then ambiguous and a ValueError asks for "BNB" or "BBN"). Default: ``"auto"``.

    Inputs:
        - **query** (Tensor) - [T1, N1, D], float16/bfloat16 (CPU also float32, float8_e4m3fn, float8_e5m2).
        - **key** (Tensor) - laid out as `layout_key`; the query's dtype, or int8 with `scale`.
        - **start_loc** (Tensor, optional) - [B] int32, logical block of each request's current query;
          required for local_window "request" with local_blocks > 0.
        - **block_table** (Tensor, optional) - [B, MB] int32; required for BBND/BNBD, None for TND.
        - **scale** (Tensor, optional) - float32 per-token dequant scale of an int8 key
          ([NP, N2, P] or [NP, P, N2] paged, see `scale_layout`; [T2, N2] or [T2] TND).
        - **atten_mask** (Tensor, optional) - int8 [2048, 2048], accepted for the CANN interface, never read.
        - **actual_seq_qlen** (Tensor) - [B+1] int32 prefix sums of the query lengths.
        - **actual_seq_klen** (Tensor) - int32, [B] kv lengths (paged) or [B+1] prefix sums (TND).

    Outputs:
        Tensor of float32, [N1, T1, W] with W = RoundUp(MB, 16) (paged) or
        RoundUp(max_kv_blocks or ceil(T2 / block_size), 16) (TND), at least 16.

    Raises:
        TypeError: an input that is neither a Tensor nor None, a wrong dtype (query, key, scale, index
            tensors, atten_mask) or attribute type.
        ValueError: a rule of SPEC §5 on shapes or attributes, before the kernel runs; on CPU also a
            rule on tensor contents (lengths, block table), found by the kernel before it reads anything.
        RuntimeError: MindSpore could not run the op (e.g. the output cannot be allocated).

    Supported Platforms:
        ``CPU`` ``Ascend`` (Ascend: the AscendC kernel of ascendc/, built with CANN; not yet run on an NPU,
        see README "Verified where")

    Examples:
        >>> import numpy as np
        >>> import mindspore as ms
        >>> from ms_msa import MsaIndexScore
        >>> q = ms.Tensor(np.random.randn(3, 4, 128).astype(np.float16))
        >>> k = ms.Tensor(np.random.randn(2, 128, 1, 128).astype(np.float16))
        >>> op = MsaIndexScore(local_blocks=0)
        >>> score = op(q, k, None, ms.Tensor([[1, 0]], ms.int32), None, None,
        ...            ms.Tensor([0, 3], ms.int32), ms.Tensor([200], ms.int32))
        >>> score.shape
        (4, 3, 16)
    """

    def __init__(self, layout_key="BBND", sparse_mode=3, init_blocks=0, local_blocks=1, local_window="request",
                 fill_value=float("-inf"), block_size=128, max_kv_blocks=None, scale_layout="auto"):
        super().__init__()
        attrs = _attrs.normalize(layout_key, sparse_mode, init_blocks, local_blocks, local_window, fill_value,
                                 block_size, max_kv_blocks, scale_layout)
        target = _lib.TARGET_CPU if backends.device_target() == "CPU" else _lib.TARGET_ASCEND
        _lib.check_attrs(attrs, target)
        self.layout_key = attrs["layout_key"]
        self.sparse_mode = attrs["sparse_mode"]
        self.init_blocks = attrs["init_blocks"]
        self.local_blocks = attrs["local_blocks"]
        self.local_window = attrs["local_window"]
        self.fill_value = attrs["fill_value"]
        self.block_size = attrs["block_size"]
        self.max_kv_blocks = attrs["max_kv_blocks"]
        self.scale_layout = attrs["scale_layout"]
        self.score_op = backends.make_primitive(attrs)
        # The primitive a PyNative call runs directly (_pynative_direct), kept outside the Cell's attribute
        # registry, which Cell.__getattr__ searches at every read. With the loop there, _pynative_direct took
        # 1.5 µs a call where it took 3.4 (timeit, this machine).
        object.__setattr__(self, "_pynative_primitive", getattr(self.score_op, "pynative_primitive", None))
        object.__setattr__(self, "_pynative_given", getattr(self.score_op, "pynative_given", None))
        # Repeated GRAPH_MODE calls run their compiled graph directly (_graph_calls.py): on CPU, where that
        # has run; Ascend keeps Cell.__call__ until this library has run on an NPU.
        self._graph_calls = _graph_calls.CompiledCalls() if target == _lib.TARGET_CPU else None
        self._recoveries = 0
        self._base_phase = self.phase

    def construct(self, query, key, start_loc=None, block_table=None, scale=None, atten_mask=None,
                  actual_seq_qlen=None, actual_seq_klen=None):
        _check_tensor_inputs(query, key, start_loc, block_table, scale, atten_mask, actual_seq_qlen, actual_seq_klen)
        return self.score_op(query, key, block_table, scale, atten_mask, actual_seq_qlen, actual_seq_klen,
                             start_loc)

    def __call__(self, *args, **kwargs):
        # MindSpore 2.10 compiles and launches unsafely from concurrent Python threads (crashes, and in
        # PyNative outputs of one call handed to another), so ms_msa's Cells take turns.
        with _CALL_LOCK:
            try:
                out = self._call(args, kwargs)
                # Launches are asynchronous: wait, so that a kernel rule failure (a bad length or
                # block-table entry) is raised by this call, and the next thread starts on a quiet runtime.
                _pynative_executor.sync()
                return out
            except Exception as err:
                if self._graph_calls is not None:
                    self._graph_calls.forget()
                if not isinstance(err, RuntimeError):
                    raise
                translated = translate_kernel_error(err)
                if translated is not err:
                    # MindSpore refuses to run a graph again after one of its kernels failed; a new
                    # phase name makes the next call compile a fresh graph instead.
                    self._recoveries += 1
                    self.phase = f"{self._base_phase}_recovered_{self._recoveries}"
                raise translated from err

    def _call(self, args, kwargs):
        direct = self._pynative_direct(args, kwargs)
        if direct is not None:
            return direct()
        if self._graph_calls is None or not _graph_calls.graph_mode_compiles():
            return super().__call__(*args, **kwargs)
        if kwargs:
            # what Cell.__call__ does with keywords in GRAPH_MODE, so that both paths see the same arguments
            construct_signature = getattr(self, "_construct_sig", None)  # (MindSpore 2.10's, read lazily)
            try:
                bound = construct_signature.bind(*args, **kwargs)
            except (AttributeError, TypeError):
                return super().__call__(*args, **kwargs)  # raises a bad call in MindSpore's words
            bound.apply_defaults()
            args, kwargs = bound.args, bound.kwargs
        direct = self._graph_calls.direct(self, args)
        if direct is not None:
            return direct()
        out = super().__call__(*args, **kwargs)
        if not kwargs:
            self._graph_calls.remember(self, args)
        return out

    def _pynative_direct(self, args, kwargs):
        """In PyNative, the backend's primitive with Python shape inference, called directly: MindSpore
        runs a C++ infer-shape by opening the library anew at every call (about 60 µs of a 200 µs call here),
        and PyNative shapes are always known. A call with every required input goes to the backend's primitive
        for its given inputs, which is handed only those (no None). None (the ordinary Cell call) in
        GRAPH_MODE, for a backend without such a primitive, or for arguments that are not all Tensors or None
        (the Cell call then converts or rejects them)."""
        primitive = self._pynative_primitive
        if primitive is None or len(args) > len(_CALL_NAMES) or _mode() != context.PYNATIVE_MODE:
            return None
        if kwargs:
            named = dict(zip(_CALL_NAMES, args))
            for name, value in kwargs.items():
                if name not in _CALL_NAMES or name in named:
                    return None
                named[name] = value
            args = [named.get(name) for name in _CALL_NAMES]
        else:
            args = list(args) + [None] * (len(_CALL_NAMES) - len(args))
        given, mask = [], 0
        for bit, i in enumerate(_BACKEND_ORDER):  # the backends' (aclnn) order
            value = args[i]
            if value is None:
                continue
            if not isinstance(value, Tensor):
                return None
            given.append(value)
            mask |= 1 << bit
        if self._pynative_given is not None and mask & signature.REQUIRED_MASK == signature.REQUIRED_MASK:
            primitive = self._pynative_given(mask)  # handed only the given tensors
            return lambda: primitive(*given)
        ordered = [args[i] for i in _BACKEND_ORDER]
        return lambda: primitive(*ordered)

    def extend_repr(self):
        return (f"layout_key={self.layout_key}, sparse_mode={self.sparse_mode}, init_blocks={self.init_blocks}, "
                f"local_blocks={self.local_blocks}, local_window={self.local_window}, fill_value={self.fill_value}, "
                f"block_size={self.block_size}, max_kv_blocks={self.max_kv_blocks}, scale_layout={self.scale_layout}")


# The execution mode, read at every call: context.get_context("mode") costs 11 µs here, Cell.__call__'s own
# reader (MindSpore 2.10's context._get_mode) 0.4 µs.
_mode = getattr(context, "_get_mode", None) or (lambda: context.get_context("mode"))

# construct's parameters after self, in order (what a direct PyNative call binds positional arguments to).
_CALL_NAMES = tuple(inspect.signature(MsaIndexScore.construct).parameters)[1:]
# Where each of the backends' (aclnn order) inputs sits among construct's parameters.
_BACKEND_ORDER = tuple(_CALL_NAMES.index(name) for name in signature.INPUT_NAMES)


def _check_tensor_inputs(*args):
    """TypeError for an argument (in construct's order) that is neither a Tensor nor None.

    MindSpore lists only tensors to the C++ infer-shape of an AOT Custom, without their count, so a list or
    numpy array given for a tensor would shift every later input's shape and send that infer past the end
    of its arrays. In GRAPH_MODE this folds while compiling (also inside a user's Cell); in PyNative it is
    a loop over eight arguments, on the calls that Cell.__call__ serves.
    """
    for name, value in zip(_CALL_NAMES, args):
        if value is not None and not isinstance(value, Tensor):
            raise TypeError(f"MsaIndexScore: '{name}' must be a mindspore Tensor or None, got {type(value).__name__}")


def translate_kernel_error(err):
    """MindSpore reports only an AOT kernel's return code; attach the kernel's own message.

    Returns the exception to raise: TypeError/ValueError for the kernel's rule failures, else `err`.
    """
    match = _AOT_FAILURE.search(str(err))
    if match is None:
        return err
    code = int(match.group(1))
    return _KERNEL_ERRORS.get(code, RuntimeError)(_lib.last_kernel_error() or str(err))


@functools.lru_cache(maxsize=64)
def _cell_for(device_target, *attr_values):
    return MsaIndexScore(*attr_values)


def msa_index_score(query, key, start_loc=None, block_table=None, scale=None, atten_mask=None,
                    actual_seq_qlen=None, actual_seq_klen=None, *, layout_key="BBND", sparse_mode=3,
                    init_blocks=0, local_blocks=1, local_window="request", fill_value=float("-inf"),
                    block_size=128, max_kv_blocks=None, scale_layout="auto"):
    """Functional form of :class:`MsaIndexScore` (same arguments; attributes are keyword-only).

    Cells are cached per attribute set. Inside a GRAPH_MODE `construct`, build a MsaIndexScore Cell
    in `__init__` instead.
    """
    cell = _cell_for(backends.device_target(), layout_key, sparse_mode, init_blocks, local_blocks, local_window,
                     fill_value, block_size, max_kv_blocks, scale_layout)
    return cell(query, key, start_loc, block_table, scale, atten_mask, actual_seq_qlen, actual_seq_klen)
