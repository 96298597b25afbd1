"""This machine's ceilings, measured in the same run as the kernels (benchmarks/ceilings.cc and numpy /
torch): the fp32 FMA peak per instruction set on one core and on all, copy bandwidth, and for reference
the best dense matmul for a given FLOP count. A row's roofline is min(FMA peak, flop per key byte x copy
bandwidth), i.e. its time can not be below max(flops / peak, key bytes / bandwidth)."""
import ctypes
import os
import platform
import time

import numpy as np

from ms_msa import _build

D = 128
HERE = os.path.dirname(os.path.abspath(__file__))
_native = None


def native():
    """The ceilings library, built on first use with the kernel's compiler and flags (x86-64 only)."""
    global _native
    if _native is None:
        if platform.machine().lower() not in ("x86_64", "amd64"):
            raise RuntimeError("the FMA-peak loops are written for x86-64")
        path = _build.build_library(os.path.join(HERE, "build", "libms_msa_ceilings.so"),
                                    [(os.path.join(HERE, "ceilings.cc"), [])], [], [HERE], exts=("ceilings.cc",),
                                    what="the benchmark's ceilings")
        lib = ctypes.CDLL(path)
        lib.MsaBenchHasIsa.argtypes = [ctypes.c_char_p]
        lib.MsaBenchFmaGflops.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_double, ctypes.c_int]
        lib.MsaBenchFmaGflops.restype = ctypes.c_double
        lib.MsaBenchCopyGbps.argtypes = [ctypes.c_int64, ctypes.c_int, ctypes.c_int]
        lib.MsaBenchCopyGbps.restype = ctypes.c_double
        lib.MsaBenchCopyOnceGbps.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int]
        lib.MsaBenchCopyOnceGbps.restype = ctypes.c_double
        _native = lib
    return _native


# The fp32 FMA each kernel set multiplies with; "avx512-bf16" also has the bf16 pair instruction (below).
FP32_FMA_OF = {"avx512-bf16": "avx512", "avx512": "avx512", "avx2": "avx2"}
BF16_PAIRS = "avx512-bf16"


def fma_peaks(isas, threads, seconds=0.3, runs=3):
    """{name: {"1": GFLOP/s of one core, "all": GFLOP/s of `threads` threads}}: the fp32 FMA of each of the
    kernel's SIMD sets ("generic" has no FMA and is left out), and "avx512-bf16" for vdpbf16ps where the
    kernel has that set (its bf16 pair path)."""
    lib = native()
    names = sorted({FP32_FMA_OF[i] for i in isas if i in FP32_FMA_OF}) + [i for i in isas if i == BF16_PAIRS]
    peaks = {}
    for name in names:
        if lib.MsaBenchHasIsa(name.encode()):
            peaks[name] = {"1": lib.MsaBenchFmaGflops(name.encode(), 1, seconds, runs),
                           "all": lib.MsaBenchFmaGflops(name.encode(), threads, seconds, runs)}
    return peaks


def _best(fn, runs, budget_s=3.0):
    """Best time of `runs` calls after a warm-up, or of fewer once they have taken budget_s (a peer with no fast
    path for its dtype, such as torch's bf16 matmul on a CPU without bf16 instructions, takes 100x as long)."""
    t0 = time.perf_counter()
    fn()
    times = [time.perf_counter() - t0]  # the warm-up: not a result, but part of the budget
    spent = times[0]
    for _ in range(runs):
        if spent > budget_s and len(times) > 1:
            break
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
        spent += times[-1]
    return min(times[1:])


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
        # Without bf16 instructions (AVX2 machines) oneDNN's bf16 matmul ran at 0.5 GFLOP/s, a minute per call
        # at chunked prefill's FLOPs: a 16-column probe first, and the full size only if it is not far behind.
        probe = flops / _best(lambda: ha @ hb[:, :16], 1) * 16 / n / 1e9
        full = probe >= result["torch fp32 matmul"] / 8
        result["torch bf16 matmul (oneDNN)"] = flops / _best(lambda: ha @ hb, runs) / 1e9 if full else probe
    except ImportError:
        pass
    return result


def copy_gbps(threads, nbytes=512 << 20, runs=5):
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
    del src, dst
    lib = native()
    result["memcpy, 1 thread"] = lib.MsaBenchCopyGbps(nbytes, 1, runs)
    result[f"memcpy, {threads} threads"] = lib.MsaBenchCopyGbps(nbytes, threads, runs)
    return result


class BesideSamples:
    """The ceilings again, sampled between a row's timed runs (`sample()` before each): one memcpy of 256 MB (far
    past the last-level cache) on all threads, and a short register-resident run of each multiply-add peak of
    `names` on all threads. A shared machine's bandwidth and clock move within seconds; a ceiling sampled in
    the same seconds as the row it divides measures the row against what the machine gave it then."""

    COPY_BYTES = 256 << 20
    FMA_SECONDS = 0.03

    def __init__(self, names, threads):
        self.names, self.threads = list(names), threads
        self.src = np.ones(self.COPY_BYTES // 4, np.float32)
        self.dst = np.zeros_like(self.src)              # both written once: their pages are in before any sample
        self.copy, self.fma = [], {name: [] for name in self.names}

    def sample(self, keep=True):
        """One sample; keep=False runs the same work without recording it (the pause a sample makes, elsewhere)."""
        lib = native()
        copy = lib.MsaBenchCopyOnceGbps(self.dst.ctypes.data, self.src.ctypes.data, self.COPY_BYTES, self.threads)
        fma = {name: lib.MsaBenchFmaGflops(name.encode(), self.threads, self.FMA_SECONDS, 1) for name in self.names}
        if keep:
            self.copy.append(copy)
            for name in self.names:
                self.fma[name].append(fma[name])

    def best(self):
        """{"copy_gbps": best copy sample, "fma_gflops": {name: best sample}, "samples": n, and every sample}: the
        best, as the run's own ceilings are the best of their runs."""
        return {"copy_gbps": max(self.copy), "fma_gflops": {n: max(v) for n, v in self.fma.items()},
                "samples": len(self.copy), "copy_gbps_samples": list(self.copy),
                "fma_gflops_samples": {n: list(v) for n, v in self.fma.items()}}


def roofline_seconds(flops, key_bytes, peak_gflops, copy_gbps_best):
    """The least time a row can take: its FLOPs at the FMA peak or its key bytes at copy bandwidth."""
    return max(flops / (peak_gflops * 1e9), key_bytes / (copy_gbps_best * 1e9))
