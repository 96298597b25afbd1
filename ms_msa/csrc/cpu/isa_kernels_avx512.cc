// The AVX-512 build (compiled with -mavx512f -mavx512bw -mavx512vl -mavx512dq plus the AVX2 flags;
// called only after a CPUID check). Same arithmetic as the AVX2 build (fp32 FMAs, per-key scale after
// the dot), in 16-lane vectors with the 32 registers' larger tiles.
#include <immintrin.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "dtype_convert.h"
#include "isa_kernels.h"

namespace msa {
namespace cpu {
namespace avx512 {
#include "isa_kernels_impl.inc"
}  // namespace avx512

// Decode (few rows) dots 16 lanes at a time at D 128 (DotGroupWide), 8 at other D.
IsaKernels Avx512Kernels() {
  return {"avx512",       avx512::Decode,         avx512::DecodeRows, avx512::BlockMaxWide,
          avx512::DotMax, avx512::DecodeBlockMax, nullptr,            nullptr};
}

}  // namespace cpu
}  // namespace msa
