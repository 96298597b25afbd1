// The host-side planning of the Ascend MsaIndexScore that needs no CANN: argument and value rules
// (the shared ms_msa rules with Target::kAscend), the split into tasks, the balance over AI cores,
// the strides of each key layout and the packing of the tiling data. msa_index_score_tiling.cpp only
// moves data between the CANN tiling context and these functions, so everything here is unit-tested
// on a machine without CANN (tests/test_ascend_host_logic.py).
#ifndef MSA_INDEX_SCORE_TILING_LOGIC_H
#define MSA_INDEX_SCORE_TILING_LOGIC_H

#include <cstddef>
#include <cstdint>

#include "msa_rules.h"
#include "../op_kernel/msa_index_score_tiling_data.h"

namespace msa_tiling {

struct Plan {
  MsaIndexScoreTilingData data;
  uint32_t blockDim = 0;          // AI cores to launch (MIX: one AIC with its two AIVs each)
  uint64_t userWorkspaceBytes = 0;
};

// Relative cost of a task, the unit being one output element written: a computed page costs a Cube
// product and a Vector pass over its rows, far more than writing fill.
uint64_t TaskCost(const MsaIndexScoreTilingData &t, const Task &task, int64_t qLen, int64_t kvLen);

// AI cores worth launching for `totalCost` over `tasks` tasks on a chip with `aicCores` Cube cores.
uint32_t EstimateCores(uint64_t totalCost, uint32_t tasks, uint32_t aicCores);

// Fills layout, strides and the decomposition fields from a checked geometry.
void FillShapes(const msa::Geometry &geo, const msa::Attrs &attrs, bool int8Key, MsaIndexScoreTilingData *t);

// Splits the tasks over the cores, balancing TaskCost, and sizes the workspace. qlen/klen are the
// (checked) length tensors.
void BalanceTasks(const int32_t *qlen, const int32_t *klen, uint32_t aicCores, Plan *plan);

// The whole host plan: CheckArgs and CheckValues with Target::kAscend, then FillShapes and
// BalanceTasks. A broken rule comes back as the rule's Status (message naming the argument).
msa::Status MakePlan(const msa::TensorDesc in[msa::kNumInputs], const msa::Attrs &attrs, const int32_t *qlen,
                     const int32_t *klen, const int32_t *blockTable, uint32_t aicCores, Plan *plan);

// Copies the tiling data into the framework's raw buffer; returns the bytes written, or 0 when the
// buffer is too small.
size_t PackTilingData(const MsaIndexScoreTilingData &t, void *buffer, size_t capacity);

}  // namespace msa_tiling

#endif  // MSA_INDEX_SCORE_TILING_LOGIC_H
