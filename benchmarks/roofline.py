"""This machine's ceilings, measured in the same run as the kernels: the fastest dense matmul for a
given FLOP count, and memory bandwidth (a large copy)."""
import time

import numpy as np

D = 128


def _best(fn, runs):
    fn()
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def matmul_gflops(total_flops, runs=5):
    """{name: GFLOP/s} of dense [M, D] x [D, N] products doing `total_flops` (M = 4096 rows)."""
    m = 4096
    n = max(int(total_flops / (2 * m * D)), 16)
    flops = 2.0 * m * n * D
    rng = np.random.default_rng(0)
    a = rng.standard_normal((m, D), np.float32)
    b = rng.standard_normal((D, n), np.float32)
    result = {"numpy fp32 matmul": flops / _best(lambda: a @ b, runs) / 1e9}
    try:
        import torch  # pylint: disable=import-outside-toplevel
        ta, tb = torch.from_numpy(a), torch.from_numpy(b)
        result["torch fp32 matmul"] = flops / _best(lambda: ta @ tb, runs) / 1e9
        ha, hb = ta.bfloat16(), tb.bfloat16()
        result["torch bf16 matmul (oneDNN)"] = flops / _best(lambda: ha @ hb, runs) / 1e9
    except ImportError:
        pass
    return result


def copy_gbps(nbytes=512 << 20, runs=5):
    """{name: GB/s} of copying a buffer of nbytes (bytes of the buffer per second)."""
    src = np.ones(nbytes // 4, np.float32)
    dst = np.empty_like(src)
    result = {"numpy copy": nbytes / _best(lambda: np.copyto(dst, src), runs) / 1e9}
    try:
        import torch  # pylint: disable=import-outside-toplevel
        ts, td = torch.from_numpy(src), torch.from_numpy(dst)
        result["torch copy"] = nbytes / _best(lambda: td.copy_(ts), runs) / 1e9
    except ImportError:
        pass
    return result
