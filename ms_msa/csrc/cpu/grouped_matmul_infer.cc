// C++ infer-shape of the grouped matmul's AOT Custom, which MindSpore needs for dynamic-shape graphs
// (MindSpore 2.10 calls `<func name>InferShape` of the library named in `func` at graph compile, unknown
// dims -1 and an unknown rank the one dim -2, and again before every launch with every size known; see
// msa_index_score_infer.cc). The output is [P, N] from x [P, K] and w [G, N, K].
//
// Nothing is checked here: MindSpore would turn a throw into a bare RuntimeError. The Python wrapper checks
// ranks and dtypes while compiling, and the kernel checks every rule before it reads anything.
#include <cstdint>
#include <vector>

#include "../common/msa_config.h"
#include "aot_extra.h"

namespace {

constexpr int64_t kDynamicRank = -2;

// Dim `axis` of input `i`, -1 if unknown (or absent: the kernel then reports the bad rank).
int64_t DimOf(const int *ndims, int64_t **shapes, int i, int axis, int rank) {
  if (ndims[i] == 1 && shapes[i][0] == kDynamicRank) return -1;
  if (ndims[i] != rank) return 1;  // a placeholder, so that the launch happens and reports the rank
  return shapes[i][axis];
}

}  // namespace

extern "C" MSA_EXPORT std::vector<int64_t> MsaGroupedMatmulInferShape(int *ndims, int64_t **shapes,
                                                                      mindspore::AotExtra * /*extra*/) {
  return {DimOf(ndims, shapes, 0, 0, 2), DimOf(ndims, shapes, 1, 1, 3)};
}
