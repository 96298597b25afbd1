// AVX2 + FMA build of the micro-kernel (compiled with -mavx2 -mfma; only called after a CPUID check).
#include <algorithm>
#include <cmath>

#include "block_max.h"

namespace msa {
namespace cpu {
namespace avx2 {
#include "block_max_impl.inc"
}  // namespace avx2

BlockMaxFn Avx2BlockMax() { return avx2::BlockMax; }

}  // namespace cpu
}  // namespace msa
