// The grouped matmul's kernels for any CPU: the portable code of grouped_matmul_kernel.inc at the
// baseline target.
#define MSA_GMM_NS generic_isa
#include "grouped_matmul_kernel.inc"

namespace msa {
namespace cpu {
namespace gmm {

Kernels GenericKernels() { return Kernels{"generic", &generic_isa::RunTasks, &generic_isa::HalfRowsToFloat}; }

}  // namespace gmm
}  // namespace cpu
}  // namespace msa
