// The tiling data of MsaIndexScore and the work decomposition that the host tiling and the kernel
// must agree on, in one header that compiles on both sides.
//
// It lives in op_kernel/ because only that folder is shipped for the kernel's online compile, and it
// includes nothing but <cstdint>: the host logic (op_host/tiling_logic.*) is compiled and unit-tested
// without CANN. The struct is a plain POD (CANN's "standard C++ tiling struct"), registered on the
// kernel side with REGISTER_TILING_DEFAULT.
#ifndef MSA_INDEX_SCORE_TILING_DATA_H
#define MSA_INDEX_SCORE_TILING_DATA_H

#include <cstdint>

#if defined(__CCE_AICORE__) || defined(__CCE_KT_TEST__)
#define MSA_HD __aicore__ inline
#else
#define MSA_HD inline
#endif

namespace msa_tiling {

// Keys per page; the only block size of the Ascend kernel (msa_config.h kAscendBlockSize, which the
// host tiling checks this against: the kernel cannot include the shared rules).
constexpr uint32_t kPageKeys = 128;
// Rows of one Cube M tile (query rows resident in L0A for all pages of a task).
constexpr uint32_t kCubeRows = 128;
// Output columns (logical blocks) one task covers; a multiple of the output width alignment (16).
constexpr uint32_t kTileCols = 32;
// The Vector units of one AI core (MIX 1:2) split each task's rows between them.
constexpr uint32_t kVectorsPerCore = 2;
// Upper bound of AI cores a launch uses (Atlas A2/A3 have at most 25 AIC per die).
constexpr uint32_t kMaxCores = 48;
// Pages of one C result (fp32 [kCubeRows, kPageKeys]) in flight between the Cube and the Vectors.
constexpr uint32_t kResultSlots = 2;

enum KeyLayout : uint32_t { kLayoutBBND = 0, kLayoutBNBD = 1, kLayoutTND = 2 };

struct MsaIndexScoreTilingData {
  // Shapes (elements) and attributes.
  uint32_t layout;
  uint32_t sparseMode;
  uint32_t initBlocks;
  uint32_t localBlocks;
  uint32_t batch;        // B
  uint32_t t1;           // query tokens
  uint32_t n1;           // query heads
  uint32_t n2;           // key heads
  uint32_t headDim;      // D
  uint32_t numPages;     // NP (paged layouts)
  uint32_t tableWidth;   // MB (paged layouts)
  uint32_t t2;           // key rows (TND)
  uint32_t outWidth;     // W
  uint32_t int8Key;      // 1: int8 key, dequantised per key with `scale`
  // Values written by the kernel, from the shared constants (msa_config.h) via the host.
  float initForceValue;
  float localForceValue;

  // Work decomposition (see TaskCount / TaskCursor below).
  uint32_t foldHeads;      // query heads stacked in one Cube row group per token (N1 when N2 == 1, else 1)
  uint32_t headGroups;     // N1 / foldHeads
  uint32_t tokensPerTile;  // tokens of one task (foldHeads * tokensPerTile <= kCubeRows)
  uint32_t colTiles;       // ceil(W / kTileCols)
  uint32_t usedCores;      // launched AI cores (block dim)
  uint32_t totalTasks;
  uint32_t taskBegin[kMaxCores + 1];  // core c runs tasks [taskBegin[c], taskBegin[c + 1])

  // Element strides of the inputs.
  uint64_t queryTokenStride;   // N1 * D
  uint64_t cubeRowStride;      // distance between two Cube rows of a task (D when heads fold, else N1 * D)
  uint64_t keyPageStride;      // paged: one page; TND: unused (rows are addressed directly)
  uint64_t keyRowStride;       // between consecutive keys of one head
  uint64_t keyHeadStride;      // between key heads
  uint64_t scalePageStride;    // int8 only, elements of float
  uint64_t scaleRowStride;
  uint64_t scaleHeadStride;

  // User workspace layout (bytes), per core: kResultSlots C results, then int8 key staging.
  uint64_t resultSlotBytes;
  uint64_t keyStageBytes;
  uint64_t workspacePerCore;
};

MSA_HD uint32_t CeilDivU(uint32_t a, uint32_t b) { return (a + b - 1) / b; }

// SPEC §4 visible end (exclusive) of token t_off of a request.
MSA_HD int64_t VisibleEnd(uint32_t sparseMode, int64_t qLen, int64_t kvLen, int64_t tOff) {
  if (sparseMode != 3) return kvLen;
  int64_t end = kvLen - qLen + tOff + 1;
  if (end < 0) end = 0;
  if (end > kvLen) end = kvLen;
  return end;
}

MSA_HD int64_t VisibleBlocks(uint32_t sparseMode, int64_t qLen, int64_t kvLen, int64_t tOff) {
  return (VisibleEnd(sparseMode, qLen, kvLen, tOff) + kPageKeys - 1) / kPageKeys;
}

// Tasks of one request: head groups x token tiles x column tiles. A request without query tokens
// has no output rows; one without keys still has tasks (they write fill).
MSA_HD uint32_t TaskCount(const MsaIndexScoreTilingData &t, uint32_t qLen) {
  if (qLen == 0) return 0;
  return t.headGroups * CeilDivU(qLen, t.tokensPerTile) * t.colTiles;
}

// One task: rows (tokens x heads) by columns of the output, all of one request and one key head.
struct Task {
  uint32_t request;
  uint32_t headGroup;   // query heads [headGroup * foldHeads, + foldHeads)
  uint32_t tokenBegin;  // offset inside the request
  uint32_t tokens;
  uint32_t colBegin;
  uint32_t cols;
  uint32_t kvHead;      // GQA: h // (N1 / N2)
};

// Columns of `task` that have at least one visible key for some of its rows (the Cube computes
// these; later columns are fill). The last token of a task sees the most blocks.
MSA_HD uint32_t ComputedCols(const MsaIndexScoreTilingData &t, const Task &task, int64_t qLen, int64_t kvLen) {
  const int64_t visible = VisibleBlocks(t.sparseMode, qLen, kvLen, task.tokenBegin + task.tokens - 1);
  int64_t cols = visible - task.colBegin;
  if (cols < 0) cols = 0;
  if (cols > task.cols) cols = task.cols;
  return static_cast<uint32_t>(cols);
}

// Walks the global task order (request, head group, token tile, column tile). Lengths come from an
// accessor so that the host (arrays) and the kernel (global memory) share the walk. qlen(b) is the
// prefix-sum entry b of actual_seq_qlen.
template <typename QlenFn>
struct TaskCursor {
  const MsaIndexScoreTilingData *t;
  QlenFn qlen;
  uint32_t request = 0;
  uint32_t local = 0;  // index inside the request's tasks

  MSA_HD TaskCursor(const MsaIndexScoreTilingData *tiling, QlenFn fn) : t(tiling), qlen(fn) {}

  // Positions the cursor on global task `index` (< totalTasks).
  MSA_HD void Seek(uint32_t index) {
    request = 0;
    for (;;) {
      const uint32_t count = TaskCount(*t, static_cast<uint32_t>(qlen(request + 1) - qlen(request)));
      if (index < count) break;
      index -= count;
      ++request;
    }
    local = index;
  }

  MSA_HD void Next() {
    ++local;
    while (local >= TaskCount(*t, static_cast<uint32_t>(qlen(request + 1) - qlen(request)))) {
      local = 0;
      ++request;
      if (request >= t->batch) return;
    }
  }

  MSA_HD Task Get() const {
    const uint32_t qLen = static_cast<uint32_t>(qlen(request + 1) - qlen(request));
    const uint32_t tokenTiles = CeilDivU(qLen, t->tokensPerTile);
    Task task;
    task.request = request;
    uint32_t rest = local;
    const uint32_t colTile = rest % t->colTiles;
    rest /= t->colTiles;
    const uint32_t tokenTile = rest % tokenTiles;
    task.headGroup = rest / tokenTiles;
    task.tokenBegin = tokenTile * t->tokensPerTile;
    task.tokens = qLen - task.tokenBegin < t->tokensPerTile ? qLen - task.tokenBegin : t->tokensPerTile;
    task.colBegin = colTile * kTileCols;
    task.cols = t->outWidth - task.colBegin < kTileCols ? t->outWidth - task.colBegin : kTileCols;
    const uint32_t firstHead = task.headGroup * t->foldHeads;
    task.kvHead = firstHead / (t->n1 / t->n2);
    return task;
  }
};

}  // namespace msa_tiling

#endif  // MSA_INDEX_SCORE_TILING_DATA_H
