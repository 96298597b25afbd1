// The CPU grouped matmul of MiniMax-M3's routed experts (model_zoo/minimax_m3/layers/grouped_matmul.py):
//
//   y[r, :] = x[r, :] @ w[g(r)]^T      x [P, K], w [G, N, K], y [P, N]
//
// where the rows of x are grouped contiguously in group order: group g owns the next group_sizes[g]
// rows. An optional last entry group_sizes[G] counts trailing rows that belong to no group; their
// output rows are zero (a tensor-parallel rank's pairs routed to another rank's experts). Groups of
// size 0 are skipped, so only the selected groups' weights are read, each once per call, straight
// from the full [G, N, K] tensor. fp32 or fp16 in and out (same dtype for x, w and y), fp32
// accumulation.
#ifndef MS_MSA_CSRC_CPU_GROUPED_MATMUL_H_
#define MS_MSA_CSRC_CPU_GROUPED_MATMUL_H_

#include <atomic>
#include <cstdint>

namespace msa {
namespace cpu {
namespace gmm {

struct Group {
  int64_t index;     // which w[g]
  int64_t row0;      // its first row of x / y
  int64_t rows;      // > 0
};

struct Problem {
  bool half = false;               // fp16 (else fp32) x, w and y
  const float *x32 = nullptr;      // x as fp32 [P, K] (converted first when x is fp16)
  const void *w = nullptr;         // [G, N, K] in the dtype
  void *y = nullptr;               // [P, N] in the dtype
  int64_t p = 0, n = 0, k = 0;
  const Group *groups = nullptr;   // the non-empty groups, in row order
  int64_t num_groups = 0;
};

// One ISA's kernels. Tasks are (group, block of kPanel output columns), numbered group-major.
struct Kernels {
  const char *isa;
  // Runs tasks of `prob` taken from `next` until it passes `tasks` (each thread calls it once).
  void (*run_tasks)(const Problem &prob, std::atomic<int64_t> *next, int64_t tasks);
  // x rows [r0, r1) of an fp16 x into fp32 (dst is [P, K]).
  void (*half_rows_to_float)(const uint16_t *x, int64_t k, int64_t r0, int64_t r1, float *dst);
};

constexpr int64_t kPanel = 16;  // output columns per task

Kernels GenericKernels();
#if defined(MSA_HAVE_X86_KERNELS)
Kernels Avx2Kernels();
#endif

}  // namespace gmm
}  // namespace cpu
}  // namespace msa

#endif  // MS_MSA_CSRC_CPU_GROUPED_MATMUL_H_
