// The grouped matmul's kernels for x86-64 with AVX2, FMA and F16C (_build.py compiles this file with
// -mavx2 -mfma -mf16c): the same code as the generic ones, 8-lane vectors in one register, fused
// multiply-adds and hardware fp16 conversion. Chosen at run time (grouped_matmul_aot.cc).
#define MSA_GMM_NS avx2_isa
#include "grouped_matmul_kernel.inc"

namespace msa {
namespace cpu {
namespace gmm {

Kernels Avx2Kernels() { return Kernels{"avx2", &avx2_isa::RunTasks, &avx2_isa::HalfRowsToFloat}; }

}  // namespace gmm
}  // namespace cpu
}  // namespace msa
