"""A small valid call that the error tests break one rule at a time."""
import numpy as np
import mindspore as ms

from ms_msa import MsaIndexScore

T1, N1, N2, D, P, NP, B, MB = 5, 4, 2, 32, 16, 6, 2, 3


def valid_args(layout="BBND", dtype=np.float16):
    """Tensors by name (construct's keywords) for a 2-request call: q lens {3, 2}, kv lens {40, 20}."""
    rng = np.random.default_rng(1)
    args = {
        "query": ms.Tensor(rng.standard_normal((T1, N1, D)).astype(dtype)),
        "start_loc": ms.Tensor(np.array([2, 1], np.int32)),
        "actual_seq_qlen": ms.Tensor(np.array([0, 3, 5], np.int32)),
    }
    if layout == "TND":
        args["key"] = ms.Tensor(rng.standard_normal((60, N2, D)).astype(dtype))
        args["actual_seq_klen"] = ms.Tensor(np.array([0, 40, 60], np.int32))
    else:
        shape = (NP, P, N2, D) if layout == "BBND" else (NP, N2, P, D)
        args["key"] = ms.Tensor(rng.standard_normal(shape).astype(dtype))
        args["block_table"] = ms.Tensor(np.array([[1, 0, 2], [3, 4, 5]], np.int32))
        args["actual_seq_klen"] = ms.Tensor(np.array([40, 20], np.int32))
    return args


def call(args, **attrs):
    attrs.setdefault("block_size", P)
    return MsaIndexScore(**attrs)(**args)
