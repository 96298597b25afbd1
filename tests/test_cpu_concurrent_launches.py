"""Launches of the CPU kernel from several threads at once, as MindSpore would make them if a graph ran two of its
index-score ops in parallel. No test through MindSpore has two at once (it ran the two ops of one graph one after
the other, and ms_msa's Cells take turns), so the library's AOT entry is called here as MindSpore calls it, through
the shim tests/cpp/aot_shim.cc: calls of several kinds of task (bf16 prefill, int8-key decode, fp16 speculative
decode, fp32, a head dim whose scratch, 5.8-8.4 MiB, passes the 8 MiB a thread keeps in some launches) run one
after another, each accepted against the reference, then from four threads at once, each thread running every call
again and again in its own order with kernel instances of its own; every one of those launches writes, byte for
byte, what its call wrote alone. The kernel keeps its workers' scratch per calling thread (score_kernel.cc,
CallerScratch): one per process would fail here."""
import ctypes

import numpy as np
import pytest

import _aot_shim
from ms_msa import MsaIndexScore, _lib
from ms_msa.backends import signature
from ms_msa.testing import cases, numeric

MAX_RANK = 8
THREADS, ROUNDS = 4, 6
WIDE = cases.Case("concurrent-d4096", heads=4, head_dim=4096, pages=3, q_lens=(40,), kv_lens=(130,), dtype="float16",
                  local_window="token")
CASES = [cases.CASES_BY_NAME[n] for n in ("L1-bf16", "X-int8-decode-m3", "L1-decode-speculative", "X-fp32")] + [WIDE]
_NUMPY = {"float16": np.float16, "float32": np.float32, "int8": np.int8, "int32": np.int32, "bool": np.bool_}


def _raw(value, dtype):
    """The bytes a tensor of `dtype` holds for `value` (already on the dtype's grid)."""
    if dtype == "bfloat16":
        return (np.asarray(value, np.float32).view(np.uint32) >> 16).astype(np.uint16)
    return np.ascontiguousarray(np.asarray(value).astype(_NUMPY[dtype]))


def _tensor_dtypes(case):
    key = "int8" if case.int8_key else case.dtype
    return {"query": case.dtype, "key": key, "scale": "float32", "atten_mask": "bool"}


@pytest.fixture(scope="module")
def launch(tmp_path_factory):
    fn = _aot_shim.build(tmp_path_factory.mktemp("shim")).LaunchConcurrently
    fn.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_int, ctypes.POINTER(ctypes.c_void_p),
                   ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int64), ctypes.c_int,
                   ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(ctypes.c_int64),
                   ctypes.c_void_p, ctypes.c_int64, ctypes.c_int, ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
    return fn


@pytest.mark.parametrize("isa", _lib.cpu_isas())
def test_launches_from_four_threads_at_once(launch, isa, monkeypatch):
    monkeypatch.setenv("MS_MSA_CPU_ISA", isa)
    names = [name for name, _ in signature.INPUTS]  # the kernel's (aclnn) order
    n_params = len(names) + 1
    keep, refs, out_shapes, specs = [], [], [], []
    params = (ctypes.c_void_p * (len(CASES) * n_params))()
    ndims = (ctypes.c_int * (len(CASES) * n_params))()
    dims = (ctypes.c_int64 * (len(CASES) * n_params * MAX_RANK))()
    dtypes = (ctypes.c_char_p * (len(CASES) * n_params))()
    out_bytes = (ctypes.c_int64 * len(CASES))()
    primitive = None
    for c, case in enumerate(CASES):
        inputs = cases.build_inputs(case, seed=c)
        ref = inputs.run_reference()
        refs.append(ref)
        out_shapes.append(ref.shape)
        primitive = MsaIndexScore(**case.attrs())._pynative_primitive  # the eight-input primitive and its attributes
        specs.append(_aot_shim.attr_spec(primitive).encode())
        kinds = _tensor_dtypes(case)
        for i, name in enumerate(names):
            k = c * n_params + i
            value = inputs.values.get(name)
            if value is None:
                dtypes[k] = b"none"
                continue
            dtype = kinds.get(name, "int32")
            raw = _raw(value, dtype)
            keep.append(raw)
            params[k] = raw.ctypes.data
            ndims[k] = raw.ndim
            for r, v in enumerate(raw.shape):
                dims[k * MAX_RANK + r] = v
            dtypes[k] = dtype.encode()
        k = c * n_params + len(names)  # the output: [N1, T1, W] float32
        ndims[k] = 3
        for r, v in enumerate(ref.shape):
            dims[k * MAX_RANK + r] = v
        dtypes[k] = b"float32"
        out_bytes[c] = int(np.prod(ref.shape)) * 4
    max_out = max(out_bytes)
    out_seq = np.zeros(len(CASES) * max_out, np.uint8)
    library, symbol = primitive.attrs["func_name"].rsplit(":", 1)
    msg = ctypes.create_string_buffer(512)
    failed = launch(library.encode(), symbol.encode(), len(CASES), n_params, params, ndims, dims, MAX_RANK, dtypes,
                    (ctypes.c_char_p * len(CASES))(*specs), out_bytes, out_seq.ctypes.data, max_out, THREADS, ROUNDS,
                    msg, len(msg))
    assert failed >= 0, (failed, msg.value.decode())
    for c, case in enumerate(CASES):  # the sequential launches: the shim calls the kernel as MindSpore does
        out = out_seq[c * max_out:c * max_out + out_bytes[c]].view(np.float32).reshape(out_shapes[c])
        numeric.assert_accepted(out, refs[c], case.fill_value, f"{case.name} on {isa}")
    assert failed == 0, f"{failed} of {THREADS * ROUNDS * len(CASES)} concurrent launches differ from the call alone"
