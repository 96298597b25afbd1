"""This machine's ceilings, measured in the same run as the kernels (benchmarks/ceilings.cc and numpy /
torch): the fp32 FMA peak per instruction set on one core and on all, copy bandwidth, read bandwidth (a
read-only stream: every byte loaded and summed, nothing written), and for reference the best dense matmul for a
given FLOP count. A row's roofline is min(FMA peak, flop per key byte x bandwidth), i.e. its time can not be below
max(flops / peak, key bytes / bandwidth); the kernel only reads keys (its writes are the small score rows), so
the bandwidth the new fields divide by is the read bandwidth, and the copy-based fields are kept beside them."""
import ctypes
import glob
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
        lib.MsaBenchReadOnceGbps.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p,
                                             ctypes.c_int64, ctypes.c_int]
        lib.MsaBenchReadOnceGbps.restype = ctypes.c_double
        lib.MsaBenchReadGbps.argtypes = [ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_int, ctypes.c_int]
        lib.MsaBenchReadGbps.restype = ctypes.c_double
        lib.MsaBenchTileSequenceGflops.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int, ctypes.c_double,
                                                   ctypes.c_int]
        lib.MsaBenchTileSequenceGflops.restype = ctypes.c_double
        _native = lib
    return _native


# The fp32 FMA each kernel set multiplies with; "avx512-bf16" also has the bf16 pair instruction, "avx512-amx" the
# AMX tiles' TDPBF16PS (below).
FP32_FMA_OF = {"avx512-amx": "avx512", "avx512-bf16": "avx512", "avx512": "avx512", "avx2": "avx2"}
BF16_PAIRS = "avx512-bf16"
TILES = "avx512-amx"
# Tile products per multiply-add of an fp16 row on the tiles (each value split into two bf16: hi.hi, hi.lo, lo.hi, lo.lo).
SPLIT_PRODUCTS = 4


def fma_peaks(isas, threads, seconds=0.3, runs=3):
    """{name: {"1": GFLOP/s of one core, "all": GFLOP/s of `threads` threads}}: the fp32 FMA of each of the
    kernel's SIMD sets ("generic" has no FMA and is left out), and "avx512-bf16" for vdpbf16ps where the
    kernel has that set (its bf16 pair path)."""
    lib = native()
    names = sorted({FP32_FMA_OF[i] for i in isas if i in FP32_FMA_OF}) + [i for i in isas if i in (BF16_PAIRS, TILES)]
    peaks = {}
    for name in names:
        if lib.MsaBenchHasIsa(name.encode()):
            peaks[name] = {"1": lib.MsaBenchFmaGflops(name.encode(), 1, seconds, runs),
                           "all": lib.MsaBenchFmaGflops(name.encode(), threads, seconds, runs)}
    return peaks


# The steps of the tile path's instruction sequence (ceilings.cc, TileSequence), in its order.
TILE_SEQUENCE_STEPS = ("product", "store", "fold", "fold_between")


def tile_sequence(seconds=0.2, runs=3, groups=8):
    """What the tile path's instruction sequence can reach on one core, against the tile peak measured beside it
    (None without AMX): a prefill task's `groups` groups of 16 query rows against 16 keys at a time, keys in L1 (128
    keys) and in L2 (4,096), the sequence cut after each step (TILE_SEQUENCE_STEPS: the tile loads and products alone;
    + the score tiles stored; + each folded into a running maximum, the kernel's order; the same with the fold
    between the next product's multiply-adds). {"tile_peak_1": GFLOP/s, "keys_in_l1"/"keys_in_l2": {step:
    {"gflops", "vs_tile_peak"}}}."""
    lib = native()
    if not lib.MsaBenchHasIsa(TILES.encode()):
        return None
    peak = lib.MsaBenchFmaGflops(TILES.encode(), 1, seconds, runs)
    out = {"tile_peak_1": peak, "groups": groups}
    for where, nkeys in (("keys_in_l1", 128), ("keys_in_l2", 4096)):
        out[where] = {}
        for i, step in enumerate(TILE_SEQUENCE_STEPS):
            gflops = lib.MsaBenchTileSequenceGflops(i, nkeys, groups, seconds, runs)
            out[where][step] = {"gflops": gflops, "vs_tile_peak": gflops / peak}
    return out


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


# The read probe's layout: the decode rows' (BBND pages of 128 keys x 128 dims x 2 B = 32 KiB, visited in the
# scrambled order of a block table), each thread reading its share of the shuffled pages, with every cache line
# prefetched 4 KiB ahead in that order (into the next page at a page's end: the hardware prefetchers stop at
# every 4 KiB, and the kernel asks for its keys ahead for the same reason).
READ_BLOCK_BYTES = 32 << 10
READ_LEAD_BYTES = 4 << 10
READ_MIN_BYTES, READ_MAX_BYTES = 256 << 20, 512 << 20


def last_level_cache_bytes():
    """The largest cache sysfs lists for any CPU (the L3 where there is one; on a VM, what the host reports), or 0."""
    best = 0
    for path in glob.glob("/sys/devices/system/cpu/cpu*/cache/index*/size"):
        try:
            with open(path) as f:
                text = f.read().strip().upper()
        except OSError:
            continue
        scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
        digits = text.rstrip("KMG")
        if digits.isdigit():
            best = max(best, int(digits) * scale)
    return best


def read_probe_bytes():
    """Bytes the read probe streams: 4x the last-level cache, at least 256 MiB, at most 512 MiB (a multiple of
    the 32 KiB page). On a CPU whose L3 is above 128 MiB (a VM on a large host) that is less than 4x, but still
    larger than the cache; between two passes of a row's beside samples a copy of 2 x 256 MB and the row's calls
    also go through it."""
    nbytes = min(max(4 * last_level_cache_bytes(), READ_MIN_BYTES), READ_MAX_BYTES)
    return nbytes // READ_BLOCK_BYTES * READ_BLOCK_BYTES


def read_probe_info():
    return {"bytes": read_probe_bytes(), "last_level_cache_bytes": last_level_cache_bytes(),
            "block_bytes": READ_BLOCK_BYTES, "lead_bytes": READ_LEAD_BYTES, "order": "shuffled pages"}


def read_gbps(threads, runs=5):
    """{name: GB/s} of reading read_probe_bytes() (bytes read per second): one sequential stream per thread on
    one thread and on `threads`, and the probe's layout (shuffled 32 KiB pages, prefetched ahead) on `threads`, the
    one the rows' beside samples take."""
    lib, nbytes = native(), read_probe_bytes()
    return {"read, 1 thread": lib.MsaBenchReadGbps(nbytes, 0, 0, 1, runs),
            f"read, {threads} threads": lib.MsaBenchReadGbps(nbytes, 0, 0, threads, runs),
            f"read 32 KiB pages shuffled, {threads} threads": lib.MsaBenchReadGbps(nbytes, READ_BLOCK_BYTES,
                                                                                 READ_LEAD_BYTES, threads, runs)}


def _aligned(nbytes, align=4096):
    """A writable uint8 array of nbytes starting on an `align` boundary (numpy's own start is 16-byte aligned)."""
    raw = np.empty(nbytes + align, np.uint8)
    start = (-raw.ctypes.data) % align
    return raw[start:start + nbytes]


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
    past the last-level cache) on all threads, one pass of the read probe (read_probe_bytes() in shuffled 32 KiB
    pages, as read_gbps) on all threads, and a short register-resident run of each multiply-add peak of `names`
    on all threads. A shared machine's bandwidth and clock move within seconds; a ceiling sampled in
    the same seconds as the row it divides measures the row against what the machine gave it then."""

    COPY_BYTES = 256 << 20
    FMA_SECONDS = 0.03

    def __init__(self, names, threads):
        self.names, self.threads = list(names), threads
        self.src = np.ones(self.COPY_BYTES // 4, np.float32)
        self.dst = np.zeros_like(self.src)              # both written once: their pages are in before any sample
        self.read_bytes = read_probe_bytes()
        self.read_buf = _aligned(self.read_bytes)
        self.read_buf.fill(1)                           # its pages in, as the copy's
        pages = self.read_bytes // READ_BLOCK_BYTES     # the visiting order of a scrambled block table
        self.read_order = np.random.default_rng(0).permutation(pages).astype(np.int64)
        self.copy, self.read, self.fma = [], [], {name: [] for name in self.names}

    def sample(self, keep=True):
        """One sample; keep=False runs the same work without recording it (the pause a sample makes, elsewhere)."""
        lib = native()
        copy = lib.MsaBenchCopyOnceGbps(self.dst.ctypes.data, self.src.ctypes.data, self.COPY_BYTES, self.threads)
        read = lib.MsaBenchReadOnceGbps(self.read_buf.ctypes.data, self.read_bytes, READ_BLOCK_BYTES,
                                        self.read_order.ctypes.data, READ_LEAD_BYTES, self.threads)
        fma = {name: lib.MsaBenchFmaGflops(name.encode(), self.threads, self.FMA_SECONDS, 1) for name in self.names}
        if keep:
            self.copy.append(copy)
            self.read.append(read)
            for name in self.names:
                self.fma[name].append(fma[name])

    def best(self):
        """{"copy_gbps": best copy sample, "read_gbps": best read sample, "fma_gflops": {name: best sample},
        "samples": n, and every sample}: the best, as the run's own ceilings are the best of their runs."""
        return {"copy_gbps": max(self.copy), "read_gbps": max(self.read),
                "fma_gflops": {n: max(v) for n, v in self.fma.items()},
                "samples": len(self.copy), "copy_gbps_samples": list(self.copy), "read_gbps_samples": list(self.read),
                "fma_gflops_samples": {n: list(v) for n, v in self.fma.items()}}


def roofline_seconds(flops, key_bytes, peak_gflops, gbps):
    """The least time a row can take: its FLOPs at the FMA peak or its key bytes at the bandwidth `gbps` (copy
    for the fields named without "read", read for the "_read" ones)."""
    return max(flops / (peak_gflops * 1e9), key_bytes / (gbps * 1e9))


def roofline_bound(flops, key_bytes, peak_gflops, gbps):
    """Which term of roofline_seconds binds: "reading keys" or "compute"."""
    return "reading keys" if key_bytes / (gbps * 1e9) >= flops / (peak_gflops * 1e9) else "compute"
