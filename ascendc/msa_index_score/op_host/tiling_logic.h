// The host-side planning of the Ascend MsaIndexScore that needs no CANN: the argument rules (the
// shared ms_msa rules with Target::kAscend), the task decomposition and the number of AI cores
// (from shapes alone: the kernel splits the tasks from the lengths it reads, CoreShare), the
// strides of each key layout and the packing of the tiling data. msa_index_score_tiling.cpp only
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

// AI cores worth launching for `totalCost` over `tasks` tasks on a chip with `aicCores` Cube cores.
uint32_t EstimateCores(uint64_t totalCost, uint32_t tasks, uint32_t aicCores);

// Fills layout, strides and the decomposition fields from a checked geometry.
void FillShapes(const msa::Geometry &geo, const msa::Attrs &attrs, bool int8Key, MsaIndexScoreTilingData *t);

// Upper bounds of the task count and of their total TaskCost over every split of the T1 query
// tokens into B requests, every one seeing every block (the lengths are not known on the host).
uint32_t MaxTasks(const MsaIndexScoreTilingData &t);
uint64_t MaxTotalCost(const MsaIndexScoreTilingData &t);

// Column tiles of the tasks: kKeyCacheCols with the Cube's key cache in L1 (16-bit keys, requests of
// several token tiles: prefill), else kTileCols, or kNarrowTileCols when the wide tasks are too few to
// give every one of `aicCores` cores several (a small decode batch); sets tileCols, colTiles, keyCache.
void ChooseTileCols(uint32_t aicCores, MsaIndexScoreTilingData *t);

// The whole host plan: CheckArgs with Target::kAscend, FillShapes, ChooseTileCols, then the cores to
// launch (from the bounds) and the workspace. A broken rule comes back as the rule's Status (message naming the
// argument). The value rules are the kernel's (LengthsValid, PageInRange).
msa::Status MakePlan(const msa::TensorDesc in[msa::kNumInputs], const msa::Attrs &attrs, uint32_t aicCores,
                     Plan *plan);

// Copies the tiling data into the framework's raw buffer; returns the bytes written, or 0 when the
// buffer is too small.
size_t PackTilingData(const MsaIndexScoreTilingData &t, void *buffer, size_t capacity);

}  // namespace msa_tiling

#endif  // MSA_INDEX_SCORE_TILING_LOGIC_H
