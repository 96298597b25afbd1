#include "tiling_logic.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstring>

#include "msa_config.h"

namespace msa_tiling {

// The kernel cannot include the shared constants, so its copies are checked against them here.
static_assert(kPageKeys == msa::kAscendBlockSize, "the kernel's page size must be the Ascend block size");
static_assert(kTileCols % msa::kOutWidthAlign == 0 && kNarrowTileCols % msa::kOutWidthAlign == 0,
              "column tiles must split the aligned output width");
static_assert(kNarrowTileCols <= kTileCols && kKeyCacheCols <= kTileCols, "the Vector buffers are sized for kTileCols columns");
static_assert(msa::kOutWidthAlign % kKeyCacheCols == 0, "key-cache column tiles must split the aligned output width");
static_assert(kKeyCacheCols == kCutCols, "a key-cache task is never cut inside: one page per L1 slot, once");
static_assert(kStageBytes % (kCubeRows * kPageKeys * kScoreBytes) == 0, "a stage holds whole pages of a full task");
static_assert(kCubeRows % kVectorsPerCore == 0, "the Vector units split a task's rows");

namespace {

// Below this much work per core (eight key pages of D 128), launching another core costs more than
// it saves: the cores start together, so what a core adds is its fixed setup (the length checks,
// the task walk, the first query tile), not a serial launch.
constexpr uint64_t kMinCostPerCore = 8 * kPageKeys * 128 / 2;
// With fewer wide tasks than this per AI core, tasks are narrowed so that every core gets work and the
// split stays even: a decode batch of 8 at 16K is 32 wide tasks for 24 cores (the busiest core
// streams 64 key pages against 43 on average) or 64 narrow ones (48). Not always narrow: a task is at
// least one S-tile hand-over (and, for int8 keys, one of its staged keys), and the cost model charges
// a flag latency per wrap of the ring (64 x 16K: 210.6 us at the high end with wide tasks, 214.8 with
// narrow ones).
constexpr uint32_t kWideTasksPerCore = 4;
// The Cube keeps key pages in L1 across tasks (keyCache) when the requests average at least this many
// token tiles: only tasks of one request and key head share keys, and a core's share is then several row
// tiles of one request. Decode and speculative decode (one token tile per request) keep their wide or
// narrow tiles, whose tasks are one S-tile hand-over each.
constexpr uint32_t kKeyCacheTokenTiles = 2;

}  // namespace

uint32_t EstimateCores(uint64_t totalCost, uint32_t tasks, uint32_t aicCores) {
  const uint64_t byWork = std::max<uint64_t>(1, (totalCost + kMinCostPerCore - 1) / kMinCostPerCore);
  uint64_t cores = std::min<uint64_t>({byWork, static_cast<uint64_t>(std::max<uint32_t>(tasks, 1)),
                                       static_cast<uint64_t>(std::max<uint32_t>(aicCores, 1)),
                                       static_cast<uint64_t>(kMaxCores)});
  return static_cast<uint32_t>(cores);
}

void FillShapes(const msa::Geometry &geo, const msa::Attrs &attrs, bool int8Key, MsaIndexScoreTilingData *t) {
  std::memset(t, 0, sizeof(*t));
  t->layout = attrs.layout == msa::Layout::kBBND ? kLayoutBBND : attrs.layout == msa::Layout::kBNBD ? kLayoutBNBD
                                                                                                  : kLayoutTND;
  t->sparseMode = static_cast<uint32_t>(attrs.sparse_mode);
  t->initBlocks = static_cast<uint32_t>(attrs.init_blocks);
  t->localBlocks = static_cast<uint32_t>(attrs.local_blocks);
  t->batch = static_cast<uint32_t>(geo.batch);
  t->t1 = static_cast<uint32_t>(geo.t1);
  t->n1 = static_cast<uint32_t>(geo.n1);
  t->n2 = static_cast<uint32_t>(geo.n2);
  t->headDim = static_cast<uint32_t>(geo.d);
  t->numPages = geo.num_pages > 0 ? static_cast<uint32_t>(geo.num_pages) : 0;
  t->tableWidth = geo.table_width > 0 ? static_cast<uint32_t>(geo.table_width) : 0;
  t->t2 = geo.t2 > 0 ? static_cast<uint32_t>(geo.t2) : 0;
  t->outWidth = static_cast<uint32_t>(geo.out_width);
  t->int8Key = int8Key ? 1 : 0;
  t->initForceValue = msa::kInitForceValue;
  t->localForceValue = msa::kLocalForceValue;

  // With one key head every query head of a token reads the same keys and the heads of a token are
  // contiguous, so they stack into Cube rows; otherwise a task holds one query head.
  t->foldHeads = (t->n2 == 1 && t->n1 <= kCubeRows) ? t->n1 : 1;
  t->headGroups = t->n1 / t->foldHeads;
  t->tokensPerTile = kCubeRows / t->foldHeads;
  t->tileCols = kTileCols;
  t->colTiles = CeilDivU(t->outWidth, kTileCols);

  const uint64_t d = t->headDim, n1 = t->n1, n2 = t->n2, p = kPageKeys;
  t->queryTokenStride = n1 * d;
  t->cubeRowStride = t->foldHeads == t->n1 ? d : n1 * d;
  switch (t->layout) {
    case kLayoutBBND:  // [NP, P, N2, D]
      t->keyPageStride = p * n2 * d;
      t->keyRowStride = n2 * d;
      t->keyHeadStride = d;
      break;
    case kLayoutBNBD:  // [NP, N2, P, D]
      t->keyPageStride = n2 * p * d;
      t->keyRowStride = d;
      t->keyHeadStride = p * d;
      break;
    default:  // TND [T2, N2, D]: a "page" is 128 consecutive rows of the request
      t->keyPageStride = p * n2 * d;
      t->keyRowStride = n2 * d;
      t->keyHeadStride = d;
      break;
  }
  if (int8Key) {
    if (t->layout == kLayoutTND) {  // [T2, N2] (or [T2] when N2 = 1)
      t->scalePageStride = p * n2;
      t->scaleRowStride = n2;
      t->scaleHeadStride = 1;
    } else if (geo.scale_bbn) {  // [NP, P, N2] (CANN's "BBN")
      t->scalePageStride = p * n2;
      t->scaleRowStride = n2;
      t->scaleHeadStride = 1;
    } else {  // [NP, N2, P]
      t->scalePageStride = n2 * p;
      t->scaleRowStride = 1;
      t->scaleHeadStride = p;
    }
  }
  t->stageBytes = kStageBytes;
  // int8 keys are widened to the query's 16-bit type for the Cube, a task's pages at a time.
  t->keyStageBytes = int8Key ? static_cast<uint64_t>(kTileCols) * kPageKeys * d * sizeof(uint16_t) : 0;
  t->workspacePerCore = kRingStages * t->stageBytes + t->keyStageBytes;
}

uint32_t MaxTasks(const MsaIndexScoreTilingData &t) {
  // Each request's last token tile may be partial: at most B more tiles than T1 alone needs.
  const uint64_t tokenTiles = CeilDivU(t.t1, t.tokensPerTile) + static_cast<uint64_t>(t.batch);
  const uint64_t tasks = t.t1 == 0 ? 0 : tokenTiles * t.headGroups * t.colTiles;
  return tasks > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(tasks);
}

uint64_t MaxTotalCost(const MsaIndexScoreTilingData &t) {
  const uint64_t rows = static_cast<uint64_t>(t.t1) * t.n1;  // every (token, head) row once
  const uint64_t keyPages = static_cast<uint64_t>(MaxTasks(t)) * t.tileCols;  // every task's columns read
  return MaxTasks(t) * kTaskOverhead + keyPages * KeyPageCost(t) + rows * t.outWidth * (kPageCostPerRow + 1);
}

void ChooseTileCols(uint32_t aicCores, MsaIndexScoreTilingData *t) {
  // int8 keys reach the Cube through the per-task staging of the Vector cores (or, decode, as they are),
  // so only 16-bit keys are read from the key tensor by the Cube and can stay in L1.
  const uint64_t cachedTokens = static_cast<uint64_t>(kKeyCacheTokenTiles) * t->tokensPerTile * std::max<uint32_t>(t->batch, 1);
  t->keyCache = (t->int8Key == 0 && t->t1 >= cachedTokens) ? 1 : 0;
  if (t->keyCache != 0) {
    t->tileCols = kKeyCacheCols;
    t->colTiles = CeilDivU(t->outWidth, kKeyCacheCols);
    return;
  }
  t->tileCols = kTileCols;
  t->colTiles = CeilDivU(t->outWidth, kTileCols);
  if (MaxTasks(*t) >= static_cast<uint64_t>(kWideTasksPerCore) * std::max<uint32_t>(aicCores, 1)) return;
  t->tileCols = kNarrowTileCols;
  t->colTiles = CeilDivU(t->outWidth, kNarrowTileCols);
}

msa::Status MakePlan(const msa::TensorDesc in[msa::kNumInputs], const msa::Attrs &attrs, uint32_t aicCores,
                     Plan *plan) {
  msa::Attrs ascend = attrs;
  ascend.target = msa::Target::kAscend;
  msa::Geometry geo;
  msa::Status s = msa::CheckArgs(in, ascend, &geo);
  if (!s.ok()) return s;
  MsaIndexScoreTilingData &t = plan->data;
  FillShapes(geo, ascend, in[msa::kKey].dtype == msa::DType::kInt8, &t);
  ChooseTileCols(aicCores, &t);
  t.usedCores = EstimateCores(MaxTotalCost(t), MaxTasks(t), aicCores);
  plan->blockDim = t.usedCores;
  plan->userWorkspaceBytes = t.workspacePerCore * t.usedCores;
  return s;
}

size_t PackTilingData(const MsaIndexScoreTilingData &t, void *buffer, size_t capacity) {
  if (buffer == nullptr || capacity < sizeof(t)) return 0;
  std::memcpy(buffer, &t, sizeof(t));
  return sizeof(t);
}

}  // namespace msa_tiling
