// The portable build: the compiler's baseline instruction set (SSE2 on x86-64, NEON on aarch64).
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "dtype_convert.h"
#include "isa_kernels.h"

namespace msa {
namespace cpu {
namespace generic {
#include "isa_kernels_impl.inc"
}  // namespace generic

IsaKernels GenericKernels() {
  return {"generic", generic::Decode, generic::DecodeRows, generic::BlockMax, generic::DotMax, nullptr, nullptr, nullptr};
}

}  // namespace cpu
}  // namespace msa
