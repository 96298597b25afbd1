// Portable build of the micro-kernel: whatever the compiler's baseline vectorizes (SSE2, NEON, ...).
#include <algorithm>
#include <cmath>

#include "block_max.h"

namespace msa {
namespace cpu {
namespace generic {
#include "block_max_impl.inc"
}  // namespace generic

BlockMaxFn GenericBlockMax() { return generic::BlockMax; }

}  // namespace cpu
}  // namespace msa
