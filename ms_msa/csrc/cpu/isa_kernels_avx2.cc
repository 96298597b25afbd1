// The AVX2 build (compiled with -mavx2 -mfma -mf16c; called only after a CPUID check).
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
namespace avx2 {
#include "isa_kernels_impl.inc"
}  // namespace avx2

IsaKernels Avx2Kernels() {
  return {"avx2", avx2::Decode, avx2::DecodeRows, avx2::BlockMax, avx2::DotMax, nullptr, nullptr, nullptr};
}

}  // namespace cpu
}  // namespace msa
