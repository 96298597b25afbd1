// The tiling data of MsaIndexScore and the work decomposition that the host tiling and the kernel
// must agree on, in one header that compiles on both sides.
//
// The tiling sees shapes only. The lengths and the block table are device tensors of the aclnn
// interface (SPEC §8): an input declared ValueDepend would become a host aclIntArray in the
// generated interface, and its values would be copied to the host on every call. So every core
// reads the lengths from global memory, checks them (LengthsValid) and takes its own share of the
// tasks (CoreShare); the host only bounds the work to pick the number of cores.
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
// Output columns (logical blocks) one task covers at most: kTileCols, or kNarrowTileCols for a small
// decode batch (ChooseTileCols). Both split the output width (a multiple of 16) evenly.
constexpr uint32_t kTileCols = 32;
constexpr uint32_t kNarrowTileCols = 16;
// The column tiles of a call whose Cube keeps key pages in L1 across tasks (keyCache): one slot per
// column of a tile, 8 x 32 KB of L1 at D 128. A core then runs its share column tile by column tile, so
// every row tile of the share reads a tile's pages from L1 and each page comes from GM once per core
// (docs/ascend.md, "Prefill's key pages read once per core").
constexpr uint32_t kKeyCacheCols = 8;
// The Vector units of one AI core (MIX 1:2) split each task's rows between them.
constexpr uint32_t kVectorsPerCore = 2;
// Upper bound of AI cores a launch uses (Atlas A2/A3 have at most 25 AIC per die).
constexpr uint32_t kMaxCores = 48;
// Bytes of one score in the S workspace: the Cube writes fp16 (Fixpipe F322F16) for every key dtype;
// int8 keys carry only the power of two of their scale there (docs/ascend.md, "The S workspace in
// fp16").
constexpr uint32_t kScoreBytes = 2;
// The Cube hands its scores to the Vectors in S-tiles: consecutive pages of one task, written one
// after another into one stage of a ring in the workspace, announced by one cross-core flag. A
// stage holds kStageBytes of scores, so a task of `rows` Cube rows puts StagePages(rows) pages in one
// S-tile: 8 pages of a 128-row prefill tile, a whole 32-column task of a decode (4 rows).
constexpr uint32_t kStageBytes = kCubeRows * 8 * kPageKeys * kScoreBytes;
// Stages of the ring: the Cube runs up to kRingStages S-tiles ahead of the Vectors.
constexpr uint32_t kRingStages = 4;
// With the key cache (prefill: every page's 128 x rows scores leave L0C through the Fixpipe, which then
// bounds the Cube), the Cube writes its S-tiles in NZ (16-column groups of the tile's rows, as the
// Fixpipe lays them out) and sends the last RoutedPages(n) of an S-tile's n pages through L1 instead of
// straight to GM: a Fixpipe into L1, then the Cube core's MTE3 copies the page to its place. The FIX pipe
// writes into L1 faster than into GM, and the copy out runs beside it (docs/ascend.md, "Prefill's scores
// out of L0C by two paths"): 3 of 8 pages balance the two at the cost model's rates.
constexpr uint32_t kRoutedPagesPer8 = 3;
MSA_HD uint32_t RoutedPages(uint32_t pages) { return (pages * kRoutedPagesPer8 + 4) / 8; }

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
  uint32_t tileCols;       // columns of a task: kTileCols, kNarrowTileCols to spread a decode, or kKeyCacheCols
  uint32_t colTiles;       // ceil(W / tileCols)
  uint32_t keyCache;       // 1: tileCols is kKeyCacheCols and the Cube keeps a column tile's key pages in L1
  uint32_t usedCores;      // launched AI cores (block dim); CoreShare splits the tasks among them

  // Element strides of the inputs.
  uint64_t queryTokenStride;   // N1 * D
  uint64_t cubeRowStride;      // distance between two Cube rows of a task (D when heads fold, else N1 * D)
  uint64_t keyPageStride;      // paged: one page; TND: unused (rows are addressed directly)
  uint64_t keyRowStride;       // between consecutive keys of one head
  uint64_t keyHeadStride;      // between key heads
  uint64_t scalePageStride;    // int8 only, elements of float
  uint64_t scaleRowStride;
  uint64_t scaleHeadStride;

  // User workspace layout (bytes), per core: kRingStages S-tile stages, then int8 key staging.
  uint64_t stageBytes;
  uint64_t keyStageBytes;
  uint64_t workspacePerCore;
};

MSA_HD uint32_t CeilDivU(uint32_t a, uint32_t b) { return (a + b - 1) / b; }

// Pages of one S-tile for a task of `rows` Cube rows (rows written as they are, 128 scores of
// kScoreBytes each).
MSA_HD uint32_t StagePages(uint32_t rows) {
  const uint32_t pages = kStageBytes / (rows * kPageKeys * kScoreBytes);
  return pages < kTileCols ? pages : kTileCols;
}

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

// Task `local` of request `request` (qLen query tokens), in the order head group, token tile, column
// tile (the column tiles of one head group and token tile, a "row tile", are consecutive).
MSA_HD Task MakeTask(const MsaIndexScoreTilingData &t, uint32_t request, uint32_t qLen, uint32_t local) {
  const uint32_t tokenTiles = CeilDivU(qLen, t.tokensPerTile);
  Task task;
  task.request = request;
  uint32_t rest = local;
  const uint32_t colTile = rest % t.colTiles;
  rest /= t.colTiles;
  const uint32_t tokenTile = rest % tokenTiles;
  task.headGroup = rest / tokenTiles;
  task.tokenBegin = tokenTile * t.tokensPerTile;
  task.tokens = qLen - task.tokenBegin < t.tokensPerTile ? qLen - task.tokenBegin : t.tokensPerTile;
  task.colBegin = colTile * t.tileCols;
  task.cols = t.outWidth - task.colBegin < t.tileCols ? t.outWidth - task.colBegin : t.tileCols;
  const uint32_t firstHead = task.headGroup * t.foldHeads;
  task.kvHead = firstHead / (t.n1 / t.n2);
  return task;
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

  // Positions the cursor on global task `index` (below the sum of the requests' TaskCount).
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

  MSA_HD Task Get() const { return MakeTask(*t, request, static_cast<uint32_t>(qlen(request + 1) - qlen(request)), local); }
};

// Relative costs for balancing the cores, in units of writing one output element (4 bytes). A
// computed page reads its keys whatever the rows (KeyPageCost: 128 x D 16-bit values), and per row
// moves its 128 scores out of L0C through the Fixpipe as fp32 (128 units; the pipe that bounds a
// prefill core, docs/ascend.md), then through the workspace and the Vector pass. A task's fixed
// cost: scalar setup, loading the query tile, writing rows.
constexpr uint64_t kPageCostPerRow = kPageKeys;
constexpr uint64_t kTaskOverhead = 2048;

MSA_HD uint64_t KeyPageCost(const MsaIndexScoreTilingData &t) {
  return static_cast<uint64_t>(kPageKeys) * t.headDim / 2;
}

// Cost of the first `cols` columns of `task` (its fixed cost included); TaskCost is all of them.
MSA_HD uint64_t LeadingColsCost(const MsaIndexScoreTilingData &t, const Task &task, int64_t qLen, int64_t kvLen,
                                uint32_t cols) {
  const uint64_t rows = static_cast<uint64_t>(task.tokens) * t.foldHeads;
  const uint32_t computed = ComputedCols(t, task, qLen, kvLen);
  return kTaskOverhead + (cols < computed ? cols : computed) * (KeyPageCost(t) + rows * kPageCostPerRow) +
         rows * cols;
}

MSA_HD uint64_t TaskCost(const MsaIndexScoreTilingData &t, const Task &task, int64_t qLen, int64_t kvLen) {
  return LeadingColsCost(t, task, qLen, kvLen, task.cols);
}

// kv length of request b: the entry (paged) or the difference of the prefix sums (TND).
template <typename LenFn>
MSA_HD int64_t RequestKvLen(const MsaIndexScoreTilingData &t, const LenFn &klen, uint32_t b) {
  return t.layout == kLayoutTND ? klen(b + 1) - klen(b) : klen(b);
}

// The cost prefixes of one row tile (a head group's token tile: all its column tiles) in closed form,
// the values TaskCost and LeadingColsCost give its tasks: column tile j starts at Start(j), its inside
// cut at column c (a multiple of kCutCols) lies at Cut(j, c), and the row tile ends at End(). Every
// column tile before the last is tileCols wide, and the computed columns are a prefix of `computed`.
struct RowTileCuts {
  uint64_t prefix;    // cost of the work before the row tile
  uint64_t rows;      // its Cube rows
  uint64_t pageCost;  // cost of one computed column: KeyPageCost + rows * kPageCostPerRow
  uint32_t computed;  // min(blocks its last token sees, W)
  uint32_t width, tileCols, colTiles;

  // The token tile starting at `tokenBegin` of a request (qLen tokens, kvLen keys), after `prefix`.
  MSA_HD static RowTileCuts Of(const MsaIndexScoreTilingData &t, int64_t qLen, int64_t kvLen, uint32_t tokenBegin,
                               uint64_t prefix) {
    const uint32_t tokens = qLen - tokenBegin < t.tokensPerTile ? static_cast<uint32_t>(qLen - tokenBegin)
                                                                 : t.tokensPerTile;
    const int64_t visible = VisibleBlocks(t.sparseMode, qLen, kvLen, tokenBegin + tokens - 1);
    const uint64_t rows = static_cast<uint64_t>(tokens) * t.foldHeads;
    return RowTileCuts{prefix, rows, KeyPageCost(t) + rows * kPageCostPerRow,
                       visible < static_cast<int64_t>(t.outWidth) ? static_cast<uint32_t>(visible) : t.outWidth,
                       t.outWidth, t.tileCols, t.colTiles};
  }
  MSA_HD static uint64_t Min(uint64_t a, uint64_t b) { return a < b ? a : b; }
  MSA_HD uint64_t Start(uint32_t j) const {
    const uint64_t cols = Min(width, static_cast<uint64_t>(j) * tileCols);
    return prefix + j * kTaskOverhead + pageCost * Min(computed, cols) + rows * cols;
  }
  MSA_HD uint64_t End() const { return Start(colTiles); }
  MSA_HD uint32_t Cols(uint32_t j) const { return static_cast<uint32_t>(Min(tileCols, width - j * tileCols)); }
  MSA_HD uint64_t Cut(uint32_t j, uint32_t c) const {
    const uint32_t first = j * tileCols;
    return Start(j) + kTaskOverhead + pageCost * Min(c, computed > first ? computed - first : 0) + rows * c;
  }
};

// The summed TaskCost of the token tile starting at `tokenBegin` of a request (qLen tokens, kvLen keys).
MSA_HD uint64_t TokenTileCost(const MsaIndexScoreTilingData &t, int64_t qLen, int64_t kvLen, uint32_t tokenBegin) {
  return RowTileCuts::Of(t, qLen, kvLen, tokenBegin, 0).End();
}

// The value rules of SPEC §5 on the lengths that the task walk and the key addressing rely on (on
// CPU msa::CheckValues raises them). A call that breaks one gets NaN everywhere from the kernel.
template <typename QlenFn, typename KlenFn>
MSA_HD bool LengthsValid(const MsaIndexScoreTilingData &t, const QlenFn &qlen, const KlenFn &klen) {
  if (qlen(0) != 0 || qlen(t.batch) != static_cast<int64_t>(t.t1)) return false;
  const bool tnd = t.layout == kLayoutTND;
  if (tnd && (klen(0) < 0 || klen(t.batch) > static_cast<int64_t>(t.t2))) return false;
  for (uint32_t b = 0; b < t.batch; ++b) {
    if (qlen(b + 1) < qlen(b)) return false;
    const int64_t kvLen = RequestKvLen(t, klen, b);
    if (kvLen < 0) return false;
    const int64_t blocks = (kvLen + kPageKeys - 1) / kPageKeys;
    if (blocks > static_cast<int64_t>(tnd ? t.outWidth : t.tableWidth)) return false;
  }
  return true;
}

// Whether a block-table entry names a page of the key tensor.
MSA_HD bool PageInRange(const MsaIndexScoreTilingData &t, int64_t page) {
  return page >= 0 && page < static_cast<int64_t>(t.numPages);
}

// A core's share of the work, as column positions in the global task order: position
// task * tileCols + c is column c of that task (c < its cols). The share is [begin, end); it may start
// or end inside a task, so a long request's blocks are split across cores, with nothing to merge:
// a block is one column, and every column is scored whole by the core that owns it.
struct CoreRange {
  uint64_t begin;
  uint64_t end;

  // The tasks the share touches, [FirstTask, LastTask] (when begin < end); the first and last may be
  // pieces (ClipTask).
  MSA_HD uint32_t FirstTask(uint32_t tileCols) const { return static_cast<uint32_t>(begin / tileCols); }
  MSA_HD uint32_t LastTask(uint32_t tileCols) const { return static_cast<uint32_t>((end - 1) / tileCols); }
};

// Cuts inside a task fall on multiples of kCutCols columns (32 bytes of fp32 output; output rows start
// on 64 bytes, W being a multiple of 16), so every piece writes its rows as whole 32-byte blocks and no
// two cores write into the same block of global memory: whether concurrent byte-masked writes to one
// block are safe is not stated in the documents read here.
constexpr uint32_t kCutCols = 8;

// The part of task `index` (as the cursor returns it) that lies inside `range`: its columns clipped,
// the rest unchanged. Empty (cols 0) when the task lies outside.
MSA_HD Task ClipTask(const MsaIndexScoreTilingData &t, Task task, uint32_t index, const CoreRange &range) {
  const uint64_t first = static_cast<uint64_t>(index) * t.tileCols;
  const uint64_t lo = range.begin > first ? range.begin - first : 0;
  const uint64_t hi = range.end <= first ? 0 : range.end - first < task.cols ? range.end - first : task.cols;
  if (lo >= hi) {
    task.cols = 0;
    return task;
  }
  task.colBegin += static_cast<uint32_t>(lo);
  task.cols = static_cast<uint32_t>(hi - lo);
  return task;
}

// The shares' boundaries, placed one after another in a single walk over the cut positions (a task's
// first column, a multiple of kCutCols inside a task, and the end of the last task). Boundary k, where
// core k's share begins, is aimed at an equal part of the work left after boundary k - 1:
// target = at(k - 1) + (total - at(k - 1)) / (cores - k + 1). It is the nearer of the two positions
// around the target (the last below it, the first at or above it), an inside cut counting kTaskOverhead
// farther (it makes one more piece, which loads the query and hands over again); the earlier on a tie.
// Aiming at what is left keeps one boundary's rounding out of the next share (docs/ascend.md,
// "Boundaries aimed at the work left").
struct ShareCuts {
  uint64_t total;   // cost of all tasks
  uint32_t cores;
  uint32_t core;    // the core whose share is wanted
  uint32_t next;    // the boundary being placed, 1 .. cores - 1
  uint64_t target;  // the cost prefix it is aimed at
  bool seen;        // whether a position has been offered
  uint64_t lastAt, lastPos;  // the last position offered or placed (cost prefix, position)
  bool lastStart;            // whether it is a task's first column (or the end)
  CoreRange range;

  MSA_HD void Aim(uint64_t at) { target = at + (total - at) / (cores - next + 1); }
  MSA_HD static uint64_t Penalty(bool start) { return start ? 0 : kTaskOverhead; }
  // Whether a boundary may fall strictly inside work whose start (cost prefix `prefix`) is offered.
  MSA_HD bool Inside(uint64_t prefix, uint64_t cost) const { return next < cores && target < prefix + cost; }
  // Offers position `pos` with cost prefix `at` (in walk order; `start`: a task's first column or the
  // end); true once the share is known.
  MSA_HD bool Offer(uint64_t at, uint64_t pos, bool start) {
    while (next < cores && at >= target) {
      // The last position is below the target, or is the boundary just placed and meets it.
      const bool takeLast = seen && (lastAt >= target || target - lastAt + Penalty(lastStart) <=
                                                             at - target + Penalty(start));
      if (!takeLast) {
        lastAt = at;
        lastPos = pos;
        lastStart = start;
        seen = true;
      }
      if (next == core) {
        range.begin = lastPos;
        if (core + 1 == cores) return true;  // the last share ends after the last task
      }
      if (next == core + 1) {
        range.end = lastPos;
        return true;
      }
      ++next;
      if (next < cores) Aim(lastAt);
    }
    lastAt = at;
    lastPos = pos;
    lastStart = start;
    seen = true;
    return false;
  }
};

// Offers `cuts` the two cut positions of row tile `row` (its first position `position`) around each
// target that lies inside it, in order: the last below the target and the first at or above it (the row
// tile's end is offered by the walk as the next one's start). A binary search over the column tiles and
// a look at one tile's inside cuts find them, so a boundary costs O(log colTiles) whatever the tasks.
// True once the share is known.
MSA_HD bool OfferInside(ShareCuts &cuts, const RowTileCuts &row, uint64_t position) {
  while (cuts.Inside(row.prefix, row.End() - row.prefix)) {
    uint32_t lo = 0, hi = row.colTiles - 1;  // the last column tile starting below the target
    while (lo < hi) {
      const uint32_t mid = (lo + hi + 1) / 2;
      if (row.Start(mid) < cuts.target) {
        lo = mid;
      } else {
        hi = mid - 1;
      }
    }
    uint32_t below = 0;  // its last position below the target: 0 (its start) or an inside cut
    uint32_t above = row.Cols(lo);
    for (uint32_t c = kCutCols; c < row.Cols(lo); c += kCutCols) {
      if (row.Cut(lo, c) >= cuts.target) {
        above = c;
        break;
      }
      below = c;
    }
    const uint64_t belowPos = position + static_cast<uint64_t>(lo) * row.tileCols + below;
    if (!cuts.seen || belowPos > cuts.lastPos) {
      if (cuts.Offer(below == 0 ? row.Start(lo) : row.Cut(lo, below), belowPos, below == 0)) return true;
    }
    if (above == row.Cols(lo) && lo + 1 == row.colTiles) return false;  // the row tile's end
    const uint64_t aboveAt = above == row.Cols(lo) ? row.Start(lo + 1) : row.Cut(lo, above);
    const uint64_t abovePos = position + static_cast<uint64_t>(lo) * row.tileCols + above;
    if (cuts.Offer(aboveAt, abovePos, above == row.Cols(lo))) return true;
  }
  return false;
}

// The share of core `core` out of `cores` (ShareCuts' boundaries; the last core's ends after the last
// task). Every core places the same boundaries from the same lengths, so the shares tile the positions
// of all tasks. The walk goes a row tile at a time (RowTileCuts::End) and finds the cuts around a target in
// closed form (OfferInside), so it costs O(row tiles + cores log colTiles), the order of the length
// check (LengthsValid), not O(tasks). Needs LengthsValid.
template <typename QlenFn, typename KlenFn>
MSA_HD CoreRange CoreShare(const MsaIndexScoreTilingData &t, const QlenFn &qlen, const KlenFn &klen, uint32_t core,
                           uint32_t cores) {
  uint32_t total = 0;
  uint64_t totalCost = 0;
  for (uint32_t b = 0; b < t.batch; ++b) {
    const int64_t qLen = qlen(b + 1) - qlen(b), kvLen = RequestKvLen(t, klen, b);
    total += TaskCount(t, static_cast<uint32_t>(qLen));
    for (uint32_t tokenBegin = 0; tokenBegin < qLen; tokenBegin += t.tokensPerTile) {
      totalCost += t.headGroups * TokenTileCost(t, qLen, kvLen, tokenBegin);
    }
  }
  const uint64_t allEnd = static_cast<uint64_t>(total) * t.tileCols;
  if (total == 0 || cores == 0 || core >= cores) return CoreRange{allEnd, allEnd};
  ShareCuts cuts{totalCost, cores, core, 1, 0, false, 0, 0, true, {core == 0 ? 0 : allEnd, allEnd}};
  if (cores == 1) return cuts.range;
  cuts.Aim(0);
  uint64_t prefix = 0;    // cost of the work before the current row tile
  uint64_t position = 0;  // position of the current row tile's first task
  for (uint32_t b = 0; b < t.batch; ++b) {
    const int64_t qLen = qlen(b + 1) - qlen(b), kvLen = RequestKvLen(t, klen, b);
    const uint32_t tokenTiles = CeilDivU(static_cast<uint32_t>(qLen), t.tokensPerTile);
    for (uint32_t rowTile = 0; rowTile < t.headGroups * tokenTiles; ++rowTile) {
      const RowTileCuts row = RowTileCuts::Of(t, qLen, kvLen, (rowTile % tokenTiles) * t.tokensPerTile, prefix);
      if (cuts.Offer(prefix, position, true) || OfferInside(cuts, row, position)) return cuts.range;
      prefix = row.End();
      position += static_cast<uint64_t>(t.colTiles) * t.tileCols;
    }
  }
  cuts.Offer(prefix, allEnd, true);
  return cuts.range;
}

}  // namespace msa_tiling

#endif  // MSA_INDEX_SCORE_TILING_DATA_H
