// The fused CPU MsaIndexScore: one pass over (request, key head, token tile) tasks, each scoring its
// query rows against the visible KV blocks and writing whole output rows (scores, fill, forcing).
#pragma once
#include <cstdint>

#include "../common/msa_rules.h"

namespace msa {
namespace cpu {

struct ScoreProblem {
  Geometry geo;   // from CheckArgs, every size known
  Attrs attrs;
  float fill_value = 0.0f;
  DType query_dtype = DType::kNone;
  DType key_dtype = DType::kNone;
  const void *query = nullptr;        // [T1, N1, D]
  const void *key = nullptr;          // layout as attrs.layout
  const int32_t *block_table = nullptr;  // [B, MB] or null (TND)
  const float *scale = nullptr;       // int8 key only
  const int32_t *qlen = nullptr;      // [B+1]
  const int32_t *klen = nullptr;      // [B] paged, [B+1] TND
  const int32_t *start_loc = nullptr; // [B] or null
  float *out = nullptr;               // [N1, T1, W]
};

// Number of worker threads: MS_MSA_NUM_THREADS if set (>= 1), else the hardware's.
int ConfiguredThreads();

// Runs the problem (values already checked with CheckValues) on up to num_threads threads. The
// result is bit-identical for every thread count.
void RunScore(const ScoreProblem &p, int num_threads);

}  // namespace cpu
}  // namespace msa
