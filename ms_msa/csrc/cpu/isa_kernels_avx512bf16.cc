// The AVX-512 build with AVX512-BF16 and AVX512-VBMI (compiled with the AVX-512 flags plus -mavx512bf16
// -mavx512vbmi; called only after a CPUID check): the AVX-512 kernel set, plus bf16 queries on vdpbf16ps against
// bf16 keys (PairBlockMax for several rows, Bf16DotMax for decode's few) and int8 keys (Bf16DotMax, the keys
// made bf16 by a byte-table permute, vpermt2b).
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "dtype_convert.h"
#include "isa_kernels.h"

namespace msa {
namespace cpu {
namespace avx512bf16 {
#include "isa_kernels_impl.inc"
}  // namespace avx512bf16

// vdpbf16ps's multiply-adds per second over the fp32 FMA's on the calling core: twelve independent accumulator
// chains of each (more than latency x ports on the cores measured), 4096 steps a run, the best of three
// interleaved runs each (a run is some 10-40 µs, the whole probe about 0.2 ms). A vdpbf16ps is 32 multiply-adds,
// an FMA 16.
double Bf16PairMacRateOverFma() {
  using Clock = std::chrono::steady_clock;
  constexpr int kChains = 12, kSteps = 4096;
  const __m512 a = _mm512_set1_ps(1.0f + 0x1p-20f), b = _mm512_set1_ps(1.0f - 0x1p-20f);
  const __m512bh pa = _mm512_cvtne2ps_pbh(a, b), pb = _mm512_cvtne2ps_pbh(b, a);
  float sink = 0.0f;
  double best_pair = 1e30, best_fma = 1e30;
  for (int rep = 0; rep < 3; ++rep) {
    __m512 acc[kChains];
    for (int c = 0; c < kChains; ++c) acc[c] = _mm512_set1_ps(static_cast<float>(c));
    auto t0 = Clock::now();
    for (int s = 0; s < kSteps; ++s) {
      for (int c = 0; c < kChains; ++c) acc[c] = _mm512_dpbf16_ps(acc[c], pa, pb);
    }
    auto t1 = Clock::now();
    for (int c = 0; c < kChains; ++c) sink += _mm512_reduce_add_ps(acc[c]);
    best_pair = std::min(best_pair, std::chrono::duration<double>(t1 - t0).count());
    for (int c = 0; c < kChains; ++c) acc[c] = _mm512_set1_ps(static_cast<float>(c));
    t0 = Clock::now();
    for (int s = 0; s < kSteps; ++s) {
      for (int c = 0; c < kChains; ++c) acc[c] = _mm512_fmadd_ps(acc[c], a, b);
    }
    t1 = Clock::now();
    for (int c = 0; c < kChains; ++c) sink += _mm512_reduce_add_ps(acc[c]);
    best_fma = std::min(best_fma, std::chrono::duration<double>(t1 - t0).count());
  }
  volatile float keep = sink;  // the chains' results are used: no loop can be dropped
  (void)keep;
  if (best_pair <= 0.0 || best_fma <= 0.0) return 1.0;
  return (32.0 / best_pair) / (16.0 / best_fma);
}

IsaKernels Avx512Bf16Kernels() {
  return {"avx512-bf16",          avx512bf16::Decode,         avx512bf16::DecodeRows,
          avx512bf16::BlockMaxWide, avx512bf16::DotMax,         avx512bf16::DecodeBlockMax,
          avx512bf16::PairBlockMax, avx512bf16::Bf16DotMax,     avx512bf16::Int8ToBf16};
}

}  // namespace cpu
}  // namespace msa
