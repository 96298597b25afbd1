// This machine's ceilings for the benchmark, measured in the same run as the kernels:
//   - the fp32 FMA peak per instruction set: independent FMA chains that live in registers (no memory
//     traffic), on 1..N threads at once;
//   - copy bandwidth: memcpy of a buffer much larger than the caches, split over 1..N threads;
//   - read bandwidth: every byte of a buffer much larger than the caches loaded and summed (nothing written), in
//     blocks visited in a given order (the decode rows' layout: 32 KiB pages of a scrambled block table), split
//     over 1..N threads.
// Built by benchmarks/roofline.py with the same compiler as the kernel; not part of the package.
#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <thread>
#include <vector>

#define CEILING_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

constexpr int kChains = 12;  // FMA latency 4-5 cycles x 2 pipes: 12 chains keep both pipes full

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Each returns lane-sums (so nothing is optimised away) after `iters` rounds of kChains FMAs.
__attribute__((target("avx2,fma"))) float FmaAvx2(int64_t iters) {
  __m256 acc[kChains];
  const __m256 mul = _mm256_set1_ps(0.999999f), add = _mm256_set1_ps(1e-6f);
  for (int i = 0; i < kChains; ++i) acc[i] = _mm256_set1_ps(static_cast<float>(i));
  for (int64_t it = 0; it < iters; ++it) {
#pragma GCC unroll 12
    for (int i = 0; i < kChains; ++i) acc[i] = _mm256_fmadd_ps(acc[i], mul, add);
  }
  float out[8], sum = 0.0f;
  for (int i = 1; i < kChains; ++i) acc[0] = _mm256_add_ps(acc[0], acc[i]);
  _mm256_storeu_ps(out, acc[0]);
  for (float v : out) sum += v;
  return sum;
}

__attribute__((target("avx512f"))) float FmaAvx512(int64_t iters) {
  __m512 acc[kChains];
  const __m512 mul = _mm512_set1_ps(0.999999f), add = _mm512_set1_ps(1e-6f);
  for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_ps(static_cast<float>(i));
  for (int64_t it = 0; it < iters; ++it) {
#pragma GCC unroll 12
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_fmadd_ps(acc[i], mul, add);
  }
  for (int i = 1; i < kChains; ++i) acc[0] = _mm512_add_ps(acc[0], acc[i]);
  return _mm512_reduce_add_ps(acc[0]);
}

// vdpbf16ps: each lane multiplies a pair of bf16 and adds both products (4 flops per lane).
__attribute__((target("avx512f,avx512bf16"))) float DotBf16(int64_t iters) {
  __m512 acc[kChains];
  const __m512bh a = (__m512bh)_mm512_set1_epi32(0x3F803F80), b = (__m512bh)_mm512_set1_epi32(0x33803380);
  for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_ps(static_cast<float>(i));
  for (int64_t it = 0; it < iters; ++it) {
#pragma GCC unroll 12
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_dpbf16_ps(acc[i], a, b);
  }
  for (int i = 1; i < kChains; ++i) acc[0] = _mm512_add_ps(acc[0], acc[i]);
  return _mm512_reduce_add_ps(acc[0]);
}

// AMX-BF16 tiles: CPUID has them and Linux grants this process their state (ARCH_REQ_XCOMP_PERM, as the kernel
// library asks; without it the first tile instruction is SIGILL).
bool HaveTiles() {
  static const bool granted = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
    if ((edx & (1u << 22)) == 0 || (edx & (1u << 24)) == 0) return false;  // AMX-BF16, AMX-TILE
    return syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */, 18 /* XTILEDATA */) == 0;
  }();
  return granted;
}

struct alignas(64) TileConfig {
  uint8_t palette = 1, start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

// Tiles 0 to count - 1, each 16 rows of 64 bytes (palette 1), for this thread.
__attribute__((target("amx-tile"))) void ConfigureTiles(int count) {
  TileConfig cfg;
  for (int t = 0; t < count; ++t) {
    cfg.rows[t] = 16;
    cfg.colsb[t] = 64;
  }
  __asm__ __volatile__("" : : "r"(&cfg) : "memory");  // every store of cfg before the load (as the kernel's)
  _tile_loadconfig(&cfg);
}

// TDPBF16PS (16 x 16 fp32 += 16 x 32 bf16 times 32 x 16 bf16: 16384 flops) on kTileChains accumulator tiles, each
// thread configuring its own tiles (the state is per thread).
constexpr int kTileChains = 4;
__attribute__((target("amx-tile,amx-bf16"))) float TileBf16(int64_t iters) {
  ConfigureTiles(kTileChains + 2);
  alignas(64) uint16_t a[16 * 32], b[16 * 32];
  for (int i = 0; i < 16 * 32; ++i) {
    a[i] = 0x3F80;  // 1.0
    b[i] = 0x3380;  // 2^-24: the sums stay finite
  }
  _tile_loadd(4, a, 64);
  _tile_loadd(5, b, 64);
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  for (int64_t it = 0; it < iters; ++it) {
    _tile_dpbf16ps(0, 4, 5);
    _tile_dpbf16ps(1, 4, 5);
    _tile_dpbf16ps(2, 4, 5);
    _tile_dpbf16ps(3, 4, 5);
  }
  alignas(64) float c[16 * 16];
  _tile_stored(0, c, 64);
  _tile_release();
  return c[0];
}

// The tile path's instruction sequence (isa_kernels_impl.inc, TileBlockMaxG) without the rest of the kernel: the
// tile peak above multiplies tiles that never leave their registers, while the operator must load every tile of
// keys and queries, store every 16 x 16 tile of scores (one store per four TDPBF16PS at D 128: the only way out of a
// tile) and fold each stored tile into a running maximum. kSeq* say how much of that a probe run does, so that the
// share of the tile peak each step leaves is measured (MsaBenchTileSequenceGflops).
enum TileSequence : int {
  kSeqProduct = 0,     // tile loads and multiply-adds alone (the scores never stored)
  kSeqStore = 1,       // + each group's scores stored, as the kernel must
  kSeqFold = 2,        // + each stored tile folded into a running maximum after the stores (the kernel's order)
  kSeqFoldBetween = 3  // the same work, the last tile's fold done a group at a time between the next multiply-adds
};

// A 16 x 16 tile of scores (key i's row, a lane per query row) into a running maximum: a tree of max instructions,
// as the kernel's FoldVisibleTile (its NaN flags left out: they are a compare per max pair).
__attribute__((target("avx512f"))) inline void FoldScoreTile(const float (*c)[16], __m512 *run) {
  __m512 m[8];
  for (int i = 0; i < 8; ++i) m[i] = _mm512_max_ps(_mm512_load_ps(c[2 * i]), _mm512_load_ps(c[2 * i + 1]));
  for (int w = 4; w >= 1; w /= 2) {
    for (int i = 0; i < w; ++i) m[i] = _mm512_max_ps(m[i], m[i + w]);
  }
  *run = _mm512_max_ps(*run, m[0]);
}

// `repeats` passes of `sequence` over nkeys bf16 keys of 128 elements (keys, 256 bytes apart) against `sets` sets of four
// 16-row query groups (qp: 64 pairs x 64 * sets rows, the kernel's pair layout), 16 keys at a time as the kernel's
// prefill tasks take them: per set, for each 32-element chunk one key tile load and four query tile loads and
// TDPBF16PS (scores in tiles 0-3, keys in 4, queries in 5 and 6 in turn). Returns a value of the scores.
__attribute__((target("amx-tile,amx-bf16,avx512f"))) float TileSequencePass(int sequence, const uint16_t *keys,
                                                                             int64_t nkeys, int64_t repeats,
                                                                             const uint32_t *qp,
                                                                             int sets, float (*c)[8][16][16],
                                                                             __m512 *run) {
  const int64_t ldq = 64 * sets;  // query rows of the layout: a pair row is ldq words
  const int64_t qstride = ldq * static_cast<int64_t>(sizeof(uint32_t));
  int buf = 0;
  bool pending = false;
  for (int64_t jj = 0; jj + 16 <= nkeys * repeats; jj += 16) {
    const uint16_t *first = keys + jj % nkeys * 128;
    for (int set = 0; set < sets; ++set) {
      float (*out)[16][16] = c[buf] + 4 * set;
      const float (*last)[16][16] = c[buf ^ 1] + 4 * set;
      const bool fold_between = sequence == kSeqFoldBetween && pending;
      _tile_zero(0);
      _tile_zero(1);
      _tile_zero(2);
      _tile_zero(3);
      for (int k = 0; k < 4; ++k) {
        const uint32_t *chunk = qp + 16 * k * ldq + 64 * set;
        _tile_loadd(4, first + 32 * k, 256);
        _tile_loadd(5, chunk, qstride);
        _tile_dpbf16ps(0, 4, 5);
        _tile_loadd(6, chunk + 16, qstride);
        _tile_dpbf16ps(1, 4, 6);
        _tile_loadd(5, chunk + 32, qstride);
        _tile_dpbf16ps(2, 4, 5);
        _tile_loadd(6, chunk + 48, qstride);
        _tile_dpbf16ps(3, 4, 6);
        if (fold_between) FoldScoreTile(last[k], &run[4 * set + k]);
      }
      if (sequence != kSeqProduct) {
        _tile_stored(0, out[0], 64);
        _tile_stored(1, out[1], 64);
        _tile_stored(2, out[2], 64);
        _tile_stored(3, out[3], 64);
      }
      if (sequence == kSeqFold) {
        for (int g = 0; g < 4; ++g) FoldScoreTile(out[g], &run[4 * set + g]);
      }
    }
    if (sequence == kSeqFoldBetween) {
      buf ^= 1;
      pending = true;
    }
  }
  if (sequence == kSeqProduct) _tile_stored(0, c[0][0], 64);
  if (pending) {
    for (int g = 0; g < 4 * sets; ++g) FoldScoreTile(c[buf ^ 1][g], &run[g]);
  }
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, run[0]);
  return lanes[0] + c[0][0][0][0];
}

struct FreeDelete {
  void operator()(void *p) const { std::free(p); }
};

// n values of T, all `fill`, at a 64-byte boundary (tile loads and 512-bit loads of whole lines).
template <typename T>
std::unique_ptr<T[], FreeDelete> AlignedArray(int64_t n, T fill) {
  T *p = static_cast<T *>(std::aligned_alloc(64, (n * static_cast<int64_t>(sizeof(T)) + 63) / 64 * 64));
  if (p == nullptr) throw std::bad_alloc();
  std::fill(p, p + n, fill);
  return std::unique_ptr<T[], FreeDelete>(p);
}

__attribute__((target("amx-tile"))) void ReleaseTiles() { _tile_release(); }

__attribute__((target("avx512f"))) void ResetRunningMax(__m512 *run, int n) {
  for (int i = 0; i < n; ++i) run[i] = _mm512_set1_ps(-1e30f);
}

// Runs body(thread index) on `threads` threads started together; returns the wall time of the slowest.
template <typename Body>
double Parallel(int threads, Body body) {
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      ready.fetch_add(1);
      while (!go.load()) {
      }
      body(t);
    });
  }
  while (ready.load() < threads) {
  }
  const double t0 = Now();
  go.store(true);
  for (auto &th : pool) th.join();
  return Now() - t0;
}

}  // namespace

// 1 if this CPU runs the instruction set ("avx2": AVX2+FMA, "avx512": AVX-512F, "avx512-bf16": AVX-512F with
// AVX512-BF16's vdpbf16ps), else 0.
CEILING_EXPORT int MsaBenchHasIsa(const char *isa) {
  if (std::strcmp(isa, "avx2") == 0) return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (std::strcmp(isa, "avx512") == 0) return __builtin_cpu_supports("avx512f");
  if (std::strcmp(isa, "avx512-bf16") == 0) {
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bf16");
  }
  if (std::strcmp(isa, "avx512-amx") == 0) return HaveTiles();
  return 0;
}

// GFLOP/s of `threads` threads each running register-resident chains of `isa`'s multiply-add for about
// `seconds` (fp32 FMAs: 2 flops per lane; "avx512-bf16": vdpbf16ps, 4 per lane; "avx512-amx": TDPBF16PS on
// kTileChains tiles, 16384 flops each); the best of `runs`.
// -1 for an instruction set this CPU lacks.
// Every thread runs slices of about a millisecond until its time is up, and the rates of all of them add up:
// the throughput the cores delivered together, as a kernel that hands its tasks to whichever thread is free
// can use it. (A fixed share per thread measured threads x the slowest core: on a shared VM, where one vCPU
// can run far slower than the other for seconds, that read as little as half the pair's throughput.)
CEILING_EXPORT double MsaBenchFmaGflops(const char *isa, int threads, double seconds, int runs) {
  if (!MsaBenchHasIsa(isa) || threads < 1) return -1.0;
  const int kind = std::strcmp(isa, "avx512-amx") == 0    ? 3
                   : std::strcmp(isa, "avx512-bf16") == 0 ? 2
                   : std::strcmp(isa, "avx512") == 0      ? 1
                                                          : 0;
  const double flops_per_iter =
      kind == 3 ? kTileChains * 16384.0 : kChains * (kind == 2 ? 64.0 : kind == 1 ? 32.0 : 16.0);
  auto kernel = [kind](int64_t iters) {
    return kind == 3 ? TileBf16(iters) : kind == 2 ? DotBf16(iters) : kind == 1 ? FmaAvx512(iters) : FmaAvx2(iters);
  };
  // Calibrate on one thread: iterations of a slice of about a millisecond.
  constexpr double kSlice = 1e-3;
  int64_t slice = 1 << 12;
  for (;;) {
    const double t0 = Now();
    volatile float sink = kernel(slice);
    (void)sink;
    if (Now() - t0 > kSlice / 4 || slice > (int64_t{1} << 40)) break;
    slice *= 2;
  }
  slice *= 4;
  double best = 0.0;
  std::vector<float> sinks(threads);
  std::vector<double> rates(threads);  // iterations per second of each thread over its own time
  for (int r = 0; r < std::max(runs, 1); ++r) {
    Parallel(threads, [&](int t) {
      const double t0 = Now();  // Parallel releases the threads together
      int64_t n = 0;
      float sink = 0.0f;
      double elapsed;
      do {
        sink += kernel(slice);
        ++n;
        elapsed = Now() - t0;
      } while (elapsed < seconds);
      sinks[t] = sink;
      rates[t] = static_cast<double>(n * slice) / elapsed;
    });
    double total = 0.0;
    for (double rate : rates) total += rate;
    best = std::max(best, flops_per_iter * total / 1e9);
  }
  return best;
}

// GB/s (bytes of the buffer per second) of one memcpy of `bytes` from src to dst (the caller's buffers, pages
// already in), split over `threads` threads.
CEILING_EXPORT double MsaBenchCopyOnceGbps(void *dst, const void *src, int64_t bytes, int threads) {
  if (dst == nullptr || src == nullptr || bytes <= 0 || threads < 1) return -1.0;
  auto copy = [&](int t) {
    const int64_t begin = bytes * t / threads, end = bytes * (t + 1) / threads;
    std::memcpy(static_cast<char *>(dst) + begin, static_cast<const char *>(src) + begin, end - begin);
  };
  return bytes / Parallel(threads, copy) / 1e9;
}

// GB/s of copying `bytes` with memcpy split over `threads` threads; the best of `runs` (after one untimed
// pass that faults the pages in).
CEILING_EXPORT double MsaBenchCopyGbps(int64_t bytes, int threads, int runs) {
  if (bytes <= 0 || threads < 1) return -1.0;
  std::vector<char> src(bytes, 1), dst(bytes, 0);
  MsaBenchCopyOnceGbps(dst.data(), src.data(), bytes, threads);
  double best = 0.0;
  for (int r = 0; r < std::max(runs, 1); ++r) {
    best = std::max(best, MsaBenchCopyOnceGbps(dst.data(), src.data(), bytes, threads));
  }
  return best;
}

namespace {

// The sum of the 64-bit words of [p, p + bytes) (bytes a multiple of 128), with a prefetch of each cache line
// `lead` bytes ahead in the read order (next: the block read after this one) issued as the loads reach it: the
// pages of a scrambled block table are scattered and the hardware prefetchers stop at every 4 KiB, so the
// first lines of each block would otherwise wait on memory with nothing in flight (the kernel asks for its keys
// a few rows ahead for the same reason, isa_kernels.h KeyPrefetch).
__attribute__((target("avx2"))) uint64_t SumAvx2(const char *p, int64_t bytes, const char *next, int64_t lead) {
  __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
  for (int64_t i = 0; i < bytes; i += 128) {
    if (lead > 0) {
      const int64_t ahead = i + lead;
      const char *pf = ahead < bytes ? p + ahead : (next != nullptr ? next + (ahead - bytes) : nullptr);
      if (pf != nullptr) {
        __builtin_prefetch(pf, 0, 3);
        __builtin_prefetch(pf + 64, 0, 3);
      }
    }
    a0 = _mm256_add_epi64(a0, _mm256_loadu_si256(reinterpret_cast<const __m256i *>(p + i)));
    a1 = _mm256_add_epi64(a1, _mm256_loadu_si256(reinterpret_cast<const __m256i *>(p + i + 32)));
    a2 = _mm256_add_epi64(a2, _mm256_loadu_si256(reinterpret_cast<const __m256i *>(p + i + 64)));
    a3 = _mm256_add_epi64(a3, _mm256_loadu_si256(reinterpret_cast<const __m256i *>(p + i + 96)));
  }
  a0 = _mm256_add_epi64(_mm256_add_epi64(a0, a1), _mm256_add_epi64(a2, a3));
  alignas(32) uint64_t out[4];
  _mm256_store_si256(reinterpret_cast<__m256i *>(out), a0);
  return out[0] + out[1] + out[2] + out[3];
}

uint64_t SumPortable(const char *p, int64_t bytes, const char *next, int64_t lead) {
  const uint64_t *w = reinterpret_cast<const uint64_t *>(p);
  uint64_t a[4] = {0, 0, 0, 0};
  for (int64_t i = 0; i < bytes / 8; i += 16) {
    if (lead > 0) {
      const int64_t ahead = i * 8 + lead;
      const char *pf = ahead < bytes ? p + ahead : (next != nullptr ? next + (ahead - bytes) : nullptr);
      if (pf != nullptr) {
        __builtin_prefetch(pf, 0, 3);
        __builtin_prefetch(pf + 64, 0, 3);
      }
    }
    for (int j = 0; j < 16; ++j) a[j & 3] += w[i + j];
  }
  return a[0] + a[1] + a[2] + a[3];
}

std::atomic<uint64_t> g_read_sink{0};  // every probe's sum ends here: the loads can not be dropped

}  // namespace

// GB/s (bytes read per second) of one pass over `bytes` of buf (the caller's buffer, pages already in; blocks
// start where the caller aligned them): blocks of `block_bytes` (a multiple of 128 dividing `bytes`) visited in the order `order` (bytes / block_bytes
// block indices; nullptr: in place, one sequential stream per thread), each block's 64-bit words summed. Thread t
// reads the t-th contiguous share of the order. lead_bytes: how far ahead in that order each cache line is
// prefetched (0: none, the hardware prefetchers alone).
CEILING_EXPORT double MsaBenchReadOnceGbps(const void *buf, int64_t bytes, int64_t block_bytes, const int64_t *order,
                                           int64_t lead_bytes, int threads) {
  if (buf == nullptr || bytes <= 0 || block_bytes <= 0 || block_bytes % 128 != 0 || bytes % block_bytes != 0 ||
      threads < 1) {
    return -1.0;
  }
  const int64_t blocks = bytes / block_bytes;
  const bool avx2 = __builtin_cpu_supports("avx2");
  const char *base = static_cast<const char *>(buf);
  auto read = [&](int t) {
    const int64_t begin = blocks * t / threads, end = blocks * (t + 1) / threads;
    uint64_t sum = 0;
    for (int64_t b = begin; b < end; ++b) {
      const char *p = base + (order != nullptr ? order[b] : b) * block_bytes;
      const char *next = b + 1 < end ? base + (order != nullptr ? order[b + 1] : b + 1) * block_bytes : nullptr;
      sum += avx2 ? SumAvx2(p, block_bytes, next, lead_bytes) : SumPortable(p, block_bytes, next, lead_bytes);
    }
    g_read_sink.fetch_add(sum, std::memory_order_relaxed);
  };
  return bytes / Parallel(threads, read) / 1e9;
}

// GB/s of reading `bytes` (as MsaBenchReadOnceGbps) split over `threads` threads, the best of `runs` after one
// untimed pass; block_bytes 0: in place, else blocks of that size in a shuffled order (a fixed seed) with
// lead_bytes of prefetch.
CEILING_EXPORT double MsaBenchReadGbps(int64_t bytes, int64_t block_bytes, int64_t lead_bytes, int threads, int runs) {
  if (bytes <= 0 || threads < 1) return -1.0;
  const int64_t block = block_bytes > 0 ? block_bytes : bytes;
  const int64_t n = bytes / block;
  if (n < 1) return -1.0;
  void *buf = std::aligned_alloc(64, (n * block + 63) / 64 * 64);
  if (buf == nullptr) return -1.0;
  std::memset(buf, 1, n * block);
  std::vector<int64_t> order(n);
  for (int64_t i = 0; i < n; ++i) order[i] = i;
  uint64_t state = 0x9E3779B97F4A7C15ull;
  for (int64_t i = n - 1; i > 0; --i) {  // Fisher-Yates with a xorshift generator: the same order every run
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    std::swap(order[i], order[state % (i + 1)]);
  }
  const int64_t *ord = block_bytes > 0 ? order.data() : nullptr;
  const int64_t size = block_bytes > 0 ? block : std::max<int64_t>(128, bytes / threads / 128 * 128);
  const int64_t total = block_bytes > 0 ? n * block : size * threads;
  MsaBenchReadOnceGbps(buf, total, size, ord, lead_bytes, threads);
  double best = 0.0;
  for (int r = 0; r < std::max(runs, 1); ++r) {
    best = std::max(best, MsaBenchReadOnceGbps(buf, total, size, ord, lead_bytes, threads));
  }
  std::free(buf);
  return best;
}

// An AOT kernel for ops.Custom that does nothing: what MindSpore itself costs per Custom call.
CEILING_EXPORT int MsaBenchNoopAot(int, void **, int *, int64_t **, const char **, void *, void *) { return 0; }

// GFLOP/s of one thread running the tile path's instruction sequence (TileSequence `sequence`, 0-3) over `nkeys`
// keys (a multiple of 16: 128 keys, 32 KiB, stay in L1 with the queries; 4096, 1 MiB, in L2) against `groups`
// (4 or 8) groups of 16 query rows, for about `seconds`; the best of `runs` passes' rates. Counted as the kernel's
// flops: 2 x 16 rows x 16 keys x 128 elements per group and key tile. -1 without AMX or for a bad argument.
CEILING_EXPORT double MsaBenchTileSequenceGflops(int sequence, int64_t nkeys, int groups, double seconds, int runs) {
  if (!HaveTiles() || sequence < kSeqProduct || sequence > kSeqFoldBetween || nkeys < 16 || nkeys % 16 != 0 ||
      (groups != 4 && groups != 8)) {
    return -1.0;
  }
  const int sets = groups / 4;
  auto keys = AlignedArray<uint16_t>(nkeys * 128, 0x3F80);  // 1.0
  auto qp = AlignedArray<uint32_t>(64 * 64 * sets, 0x33803380u);  // pairs of 2^-24
  auto scores = AlignedArray<float>(2 * 8 * 16 * 16, 0.0f);
  auto *c = reinterpret_cast<float (*)[8][16][16]>(scores.get());
  alignas(64) __m512 run[8];
  ConfigureTiles(7);
  ResetRunningMax(run, 8);
  const int64_t repeats = std::max<int64_t>(1, 65536 / nkeys);  // a call of 65,536 keys or more: a millisecond
  const double flops = 2.0 * 16 * 16 * 128 * (nkeys / 16) * repeats * groups;
  float sink = TileSequencePass(sequence, keys.get(), nkeys, repeats, qp.get(), sets, c, run);  // warm the caches
  double best = 0.0;
  for (int r = 0; r < std::max(runs, 1); ++r) {
    const double t0 = Now();
    int64_t passes = 0;
    double elapsed;
    do {
      sink += TileSequencePass(sequence, keys.get(), nkeys, repeats, qp.get(), sets, c, run);
      ++passes;
      elapsed = Now() - t0;
    } while (elapsed < seconds);
    best = std::max(best, flops * passes / elapsed / 1e9);
  }
  ReleaseTiles();
  g_read_sink.fetch_add(static_cast<uint64_t>(sink != 0.0f), std::memory_order_relaxed);
  return best;
}
