// MsaIndexScore on Atlas A2/A3: a MIX kernel (one Cube core + two Vector cores per AI core).
//
// Work unit = one task of msa_index_score_tiling_data.h: up to kCubeRows query rows (tokens x the
// query heads that share one key head) of one request, by up to tileCols output columns (blocks).
// Per task:
//   Cube   loads the query tile once (GM -> L1 -> L0A, resident for the whole task; two query
//          buffers, so the next task's query loads while this one's last pages multiply), then for
//          every column that some row can see: key page GM -> L1 -> L0B, Mmad into L0C (fp32),
//          Fixpipe into the current S-tile, a stage of the workspace ring, as fp16; the key page
//          buffers are doubled (L1, L0B, L0C), so the next page's copy overlaps this one's work.
//          Prefill with 16-bit keys (keyCache: 8-column tasks) keeps one L1 slot per column instead,
//          and each core runs its share column tile by column tile, so a key page comes from GM once
//          per core and every row tile of the share multiplies it out of L1 (CachePage); its S-tiles
//          are NZ, and their last RoutedPages go by a Fixpipe into L1 and the MTE3 on to the ring, so
//          that the Fixpipe into GM does not carry every score (PageOut).
//          One cross-core flag hands a whole S-tile (StagePages pages) to the Vector cores:
//
//              Cube:    [tile k  ][tile k+1][tile k+2][tile k+3]  waits "free k" before tile k+4
//              ring:     stage 0   stage 1   stage 2   stage 3
//              Vector:  reads tile k page by page, frees stage k % 4 after its last page's copy
//
//   Vector each of the two takes half of the task's rows (at most kVecRows, for every N1): int8 keys
//          are widened to the query type ahead of the Cube, times the power of two of their scale
//          (ScaleSplit), except in a widen task (int8-key decode, at most 4 rows: WidenTask), where
//          they write the query rows as half scaled by a power of two, and the Cube widens the int8
//          keys itself (an identity Mmad into int32, the Fixpipe into L1 as half) before the fp16
//          Mmad (msa_index_score_cube_widening.h); its pages are software-pipelined by one: the next
//          page is widened before this one is multiplied;
//          per page it masks the causal tail of each row and takes the row maxima: of 16-bit keys in
//          fp16 as they come, row-major or NZ (ReducePageHalf: a maximum of fp16 values is one of
//          them), of int8 keys in fp32 after the dequantisation (the rest of each key's scale, m)
//          (the next page's copy into UB overlaps this); pages with a score fp16 could not hold are
//          recomputed in fp32 at the end of the task (RecomputeUnheldPages); then it fills
//          the columns no row sees, applies the request-mode forcing (local wins) and writes whole
//          output rows.
// Synchronisation, every hand-over explicit:
//   * read after write (a copy, then the load that reads it): SetFlag then WaitFlag of one event,
//     an event id per buffer, so that a set never overtakes the wait of the previous one;
//   * write after read (a buffer written again while the previous read may still run): the reading
//     pipe sets a "free" event after its last read, the writing pipe waits for it before the next
//     write (the *Pending_ members say whether a set is outstanding; the kernel ends with none);
//   * the Vector pipe orders its dependent instructions with PipeBarrier<PIPE_V>;
//   * Cube and Vector meet only through cross-core flags (mode 2: the Cube signals both Vector cores,
//     and waits until both have signalled), counted so that every set is waited exactly once.
// The lengths and the block table are read here, not on the host: every core checks the lengths
// (LengthsValid; a broken call gets NaN everywhere) and takes its own share of the tasks (CoreShare,
// which may start or end inside a task), and a block whose table entry lies outside [0, NP) is never
// read and scores NaN.
#ifndef MSA_INDEX_SCORE_KERNEL_H
#define MSA_INDEX_SCORE_KERNEL_H

#include "kernel_operator.h"
#include "msa_index_score_cube_widening.h"
#include "msa_index_score_scale_split.h"
#include "msa_index_score_score_range.h"
#include "msa_index_score_tiling_data.h"

namespace msa_kernel {

using namespace AscendC;
using msa_tiling::ComputedCols;
using msa_tiling::ClipTask;
using msa_tiling::CoreRange;
using msa_tiling::CoreShare;
using msa_tiling::kCubeRows;
using msa_tiling::kKeyCacheCols;
using msa_tiling::kPageKeys;
using msa_tiling::kRingStages;
using msa_tiling::kStageBytes;
using msa_tiling::kTileCols;
using msa_tiling::kVectorsPerCore;
using msa_tiling::LengthsValid;
using msa_tiling::MsaIndexScoreTilingData;
using msa_tiling::RequestKvLen;
using msa_tiling::RoutedPages;
using msa_tiling::StagePages;
using msa_tiling::Task;
using msa_tiling::TaskCursor;
using msa_tiling::VisibleEnd;

constexpr uint32_t kFractal = 16;                         // Cube fractal edge for 16-bit inputs
constexpr uint32_t kFractalBytes = 512;                   // one L0A / L0B fractal
constexpr uint32_t kVecRows = kCubeRows / kVectorsPerCore;  // rows one Vector core handles
constexpr uint32_t kFloatsPerRepeat = 64;                 // one 256-byte vector repeat of fp32
constexpr uint32_t kBlockBytes = 32;                      // UB data block
constexpr uint32_t kKeyBuffers = 2;                       // Cube: key page buffers in L1, L0B and L0C
constexpr uint32_t kKeySlots = kKeyCacheCols;             // Cube, keyCache: L1 slots, one per column of a tile
constexpr uint32_t kQueryBuffers = 2;                     // Cube: query tiles in L1 and L0A
constexpr uint32_t kRoutedBuffers = 2;                    // Cube, keyCache: pages of scores on their way through L1
constexpr uint32_t kPageBuffers = 2;                      // Vector: pages of scores in UB
constexpr uint32_t kStageRows = 32;                       // Vector: int8 key rows widened at a time

// Cross-core flag ids (0..10 on A2/A3). Stage s of the ring uses kStageReady + s / kStageFree + s.
constexpr uint16_t kFlagStageReady = 0;
constexpr uint16_t kFlagStageFree = kFlagStageReady + kRingStages;
constexpr uint16_t kFlagKeysStaged = kFlagStageFree + kRingStages;
static_assert(kFlagKeysStaged <= 10, "A2/A3 have cross-core flag ids 0..10");
constexpr uint8_t kCubeVectorMode = 2;

// actual_seq_qlen / actual_seq_klen entries, read from global memory by the task walk.
struct GmLengths {
  GlobalTensor<int32_t> gm;
  __aicore__ inline int64_t operator()(uint32_t i) const { return gm.GetValue(i); }
};

__aicore__ inline uint32_t AlignUp(uint32_t v, uint32_t a) { return (v + a - 1) / a * a; }

// T when B, else F.
template <bool B, typename T, typename F>
struct PickType {
  using type = T;
};
template <typename T, typename F>
struct PickType<false, T, F> {
  using type = F;
};

template <typename QT, typename KT>
class MsaIndexScoreKernel {
  // The key dtype is fixed per compiled kernel (one binary per OpDef dtype column).
  static constexpr bool kInt8Key = IsSameType<KT, int8_t>::value;
  // The scores between Cube and Vector (the S workspace), for every key dtype.
  using ST = half;

 public:
  __aicore__ inline MsaIndexScoreKernel() {}

  __aicore__ inline void Init(GM_ADDR query, GM_ADDR key, GM_ADDR blockTable, GM_ADDR scale, GM_ADDR qlen,
                              GM_ADDR klen, GM_ADDR startLoc, GM_ADDR score, GM_ADDR workspace,
                              const MsaIndexScoreTilingData *tiling, TPipe *pipe) {
    t_ = tiling;
    pipe_ = pipe;
    queryGm_.SetGlobalBuffer(reinterpret_cast<__gm__ QT *>(query));
    keyGm_.SetGlobalBuffer(reinterpret_cast<__gm__ KT *>(key));
    blockTableGm_.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t *>(blockTable));
    scaleGm_.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(scale));
    qlen_.gm.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t *>(qlen));
    klen_.gm.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t *>(klen));
    startLocGm_.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t *>(startLoc));
    scoreGm_.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(score));

    if ASCEND_IS_AIC {
      core_ = GetBlockIdx();
    } else {
      core_ = GetBlockIdx() / GetSubBlockNum();
      sub_ = GetSubBlockIdx();
    }
    // Per-core workspace: the ring's stages (scores) then the widened int8 keys (query type).
    __gm__ uint8_t *base = reinterpret_cast<__gm__ uint8_t *>(workspace) + core_ * t_->workspacePerCore;
    stageGm_.SetGlobalBuffer(reinterpret_cast<__gm__ ST *>(base));
    stagedKeyGm_.SetGlobalBuffer(reinterpret_cast<__gm__ QT *>(base + kRingStages * t_->stageBytes));
    // A widen task's query rows (half) and the identity (int8), where staged keys go otherwise.
    widenQueryGm_.SetGlobalBuffer(reinterpret_cast<__gm__ half *>(base + kRingStages * t_->stageBytes));
    identityGm_.SetGlobalBuffer(reinterpret_cast<__gm__ int8_t *>(base + kRingStages * t_->stageBytes) +
                                kWidenRows * t_->headDim * sizeof(half));

    if ASCEND_IS_AIC {
      pipe_->InitBuffer(queryL1_, kQueryBuffers * kCubeRows * t_->headDim * sizeof(QT));
      // 16-bit keys: kKeySlots pages for the key cache (the streaming double buffer uses the first two).
      pipe_->InitBuffer(keyL1_, (kInt8Key ? kKeyBuffers : kKeySlots) * kPageKeys * t_->headDim * sizeof(QT));
      pipe_->InitBuffer(queryL0a_, kQueryBuffers * kCubeRows * t_->headDim * sizeof(QT));
      pipe_->InitBuffer(keyL0b_, kKeyBuffers * kPageKeys * t_->headDim * sizeof(QT));
      pipe_->InitBuffer(resultL0c_, kKeyBuffers * kCubeRows * kPageKeys * sizeof(float));
      for (uint32_t q = 0; q < kQueryBuffers; ++q) {
        evQueryCopied_[q] = pipe_->AllocEventID<HardEvent::MTE2_MTE1>();
        evQueryL1Free_[q] = pipe_->AllocEventID<HardEvent::MTE1_MTE2>();
        evL0aFree_[q] = pipe_->AllocEventID<HardEvent::M_MTE1>();
      }
      for (uint32_t b = 0; b < kKeyBuffers; ++b) {
        evKeyCopied_[b] = pipe_->AllocEventID<HardEvent::MTE2_MTE1>();
        evKeyLoaded_[b] = pipe_->AllocEventID<HardEvent::MTE1_M>();
        evMultiplied_[b] = pipe_->AllocEventID<HardEvent::M_FIX>();
        evKeyL1Free_[b] = pipe_->AllocEventID<HardEvent::MTE1_MTE2>();
        evL0bFree_[b] = pipe_->AllocEventID<HardEvent::M_MTE1>();
        evL0cFree_[b] = pipe_->AllocEventID<HardEvent::FIX_M>();
      }
      if constexpr (kInt8Key) {
        // Widen tasks: each page's keys widened to half in L1, between the Fixpipe and the load into L0B.
        pipe_->InitBuffer(widenedL1_, kKeyBuffers * kPageKeys * t_->headDim * sizeof(half));
        for (uint32_t b = 0; b < kKeyBuffers; ++b) {
          evWidened_[b] = pipe_->AllocEventID<HardEvent::FIX_MTE1>();
          evWidenedLoaded_[b] = pipe_->AllocEventID<HardEvent::MTE1_M>();
          evWidenMultiplied_[b] = pipe_->AllocEventID<HardEvent::M_FIX>();
        }
      }
      if constexpr (!kInt8Key) {
        evKeyCacheFence_ = pipe_->AllocEventID<HardEvent::MTE1_MTE2>();
        // keyCache: the routed pages' scores in L1 (Fixpipe in, MTE3 out to the ring).
        pipe_->InitBuffer(routedL1_, kRoutedBuffers * kCubeRows * kPageKeys * sizeof(ST));
        for (uint32_t r = 0; r < kRoutedBuffers; ++r) {
          evRoutedWritten_[r] = pipe_->AllocEventID<HardEvent::FIX_MTE3>();
          evRoutedFree_[r] = pipe_->AllocEventID<HardEvent::MTE3_MTE1>();
        }
      }
    } else {
      evScaleCopied_ = pipe_->AllocEventID<HardEvent::MTE2_V>();
      evScaleWritten_ = pipe_->AllocEventID<HardEvent::S_V>();
      evOffsetsWritten_ = pipe_->AllocEventID<HardEvent::S_V>();
      evScaleFree_ = pipe_->AllocEventID<HardEvent::V_MTE2>();
      evScaleFreeScalar_ = pipe_->AllocEventID<HardEvent::V_S>();
      pipe_->InitBuffer(resultInQue_, kPageBuffers, kVecRows * kPageKeys * sizeof(ST));
      pipe_->InitBuffer(outQue_, 1, kVecRows * kTileCols * sizeof(float));
      pipe_->InitBuffer(colMaxBuf_, kTileCols * kVecRows * sizeof(float));
      pipe_->InitBuffer(gatherOffsetBuf_, kVecRows * kTileCols * sizeof(uint32_t));
      pipe_->InitBuffer(scaleBuf_, kPageKeys * sizeof(float));
      // fp16 scores widened to fp32, the check of their range, and the fp32 recompute.
      range_.Init(pipe_, kVecRows, kPageKeys, kTileCols, t_->headDim);
      if constexpr (kInt8Key) {
        // Rows keep a 32-byte pitch in UB (DataCopyPad pads each int8 row to a data block). The
        // widening's half and float rows live in range_'s page buffer (StageInt8Keys).
        const uint32_t elems = kStageRows * AlignUp(t_->headDim, kBlockBytes);
        pipe_->InitBuffer(int8InQue_, 1, elems * sizeof(int8_t));
        pipe_->InitBuffer(stagedOutQue_, 1, elems * sizeof(QT));
        split_.Init(pipe_, kPageKeys, kStageRows);
        evQueryRead_ = pipe_->AllocEventID<HardEvent::V_S>();
        evQueryReadDone_ = pipe_->AllocEventID<HardEvent::S_V>();
      }
      PrepareGatherOffsets();
    }
  }

  __aicore__ inline void Process() {
    if (core_ >= t_->usedCores) return;
    if ASCEND_IS_AIC {
      RunTasks<true>();
      DrainStages();
      DrainCubeFences();
    } else {
      RunTasks<false>();
      DrainVectorFences();
    }
  }

 private:
  template <bool kCube>
  __aicore__ inline void RunTasks() {
    if (!LengthsValid(*t_, qlen_, klen_)) {
      if constexpr (!kCube) WriteNaNShare();
      return;
    }
    const CoreRange share = CoreShare(*t_, qlen_, klen_, core_, t_->usedCores);
    if (share.begin >= share.end) return;
    const uint32_t first = share.FirstTask(t_->tileCols), last = share.LastTask(t_->tileCols);
    TaskCursor<GmLengths> cursor(t_, qlen_);
    if (t_->keyCache == 0) {
      cursor.Seek(first);
      for (uint32_t i = first; i <= last; ++i, cursor.Next()) RunTask<kCube>(ClipTask(*t_, cursor.Get(), i, share));
      return;
    }
    // Key cache: column tile by column tile (task i is column tile i % colTiles: every request has a whole
    // number of row tiles), so the row tiles of the share read one tile's pages from L1 in turn. The Cube
    // and the Vector cores walk the same order.
    const uint32_t colTiles = t_->colTiles;
    for (uint32_t j = 0; j < colTiles; ++j) {
      uint32_t i = first + (j + colTiles - first % colTiles) % colTiles;
      if (i > last) continue;
      cursor.Seek(i);
      for (;;) {
        RunTask<kCube>(ClipTask(*t_, cursor.Get(), i, share));  // the first and last may be pieces
        if (last - i < colTiles) break;
        i += colTiles;
        for (uint32_t n = 0; n < colTiles; ++n) cursor.Next();
      }
    }
  }

  template <bool kCube>
  __aicore__ inline void RunTask(const Task &task) {
    if constexpr (kCube) {
      if constexpr (kInt8Key) {
        if (WidenTask(task)) {
          CubeTask<true>(task);
          return;
        }
      }
      CubeTask<false>(task);
    } else {
      VectorTask(task);
    }
  }

  // Scores of one stage of the ring.
  __aicore__ inline uint64_t StageElems() const { return t_->stageBytes / sizeof(ST); }
  // int8 keys, at most kWidenRows query rows (decode: one token x the heads of a key head), D a multiple of
  // int8's fractal width and at most kWidenMaxDim: the Cube widens the keys itself
  // (msa_index_score_cube_widening.h). Decided from the task alone, so the Cube and both Vector cores agree.
  __aicore__ inline bool WidenTask(const Task &task) const {
    return kInt8Key && task.tokens * t_->foldHeads <= kWidenRows && t_->headDim % kBlockBytes == 0 &&
           t_->headDim <= kWidenMaxDim;
  }

  // The S-tiles are NZ, and their last pages go through L1 (PageOut), in key-cache calls: 16-bit keys only.
  // Decided from the tiling alone, so the Cube and both Vector cores agree.
  __aicore__ inline bool NzTiles() const { return !kInt8Key && t_->keyCache != 0; }

  // ---- request geometry (SPEC §4) ------------------------------------------------------------------
  // Element offset in the query of Cube row `row` of `task` (rows cubeRowStride apart from the task's
  // first token and head).
  __aicore__ inline uint64_t QueryRowOffset(const Task &task, uint32_t row) const {
    const uint64_t token = static_cast<uint64_t>(qlen_(task.request)) + task.tokenBegin;
    const uint64_t firstHead = static_cast<uint64_t>(task.headGroup) * t_->foldHeads;
    return token * t_->queryTokenStride + firstHead * t_->headDim + static_cast<uint64_t>(row) * t_->cubeRowStride;
  }
  __aicore__ inline int64_t QLen(uint32_t b) const { return qlen_(b + 1) - qlen_(b); }
  __aicore__ inline int64_t KvLen(uint32_t b) const { return RequestKvLen(*t_, klen_, b); }
  // Keys of column `col` that exist (the last page of a request may be partial).
  __aicore__ inline uint32_t PageKeys(int64_t kvLen, uint32_t col) const {
    const int64_t rest = kvLen - static_cast<int64_t>(col) * kPageKeys;
    return rest >= kPageKeys ? kPageKeys : static_cast<uint32_t>(rest);
  }
  // Whether the keys of column `col` of request b may be read: TND rows lie inside the key tensor
  // once LengthsValid holds; a paged column needs a table entry inside [0, NP).
  __aicore__ inline bool ColumnReadable(uint32_t b, uint32_t col) const {
    if (t_->layout == msa_tiling::kLayoutTND) return true;
    return msa_tiling::PageInRange(*t_, blockTableGm_.GetValue(static_cast<uint64_t>(b) * t_->tableWidth + col));
  }
  // Where column `col` of request b starts: its first packed row (TND) or its physical page (paged).
  // Only for a ColumnReadable column.
  __aicore__ inline uint64_t ColumnBase(uint32_t b, uint32_t col) const {
    if (t_->layout == msa_tiling::kLayoutTND) {
      return static_cast<uint64_t>(klen_(b)) + static_cast<uint64_t>(col) * kPageKeys;
    }
    return static_cast<uint64_t>(blockTableGm_.GetValue(static_cast<uint64_t>(b) * t_->tableWidth + col));
  }
  // Element offset of key 0 of column `col` for key head `kvHead` in the key tensor.
  __aicore__ inline uint64_t KeyOffset(uint32_t b, uint32_t col, uint32_t kvHead) const {
    const bool tnd = t_->layout == msa_tiling::kLayoutTND;
    return ColumnBase(b, col) * (tnd ? t_->keyRowStride : t_->keyPageStride) + kvHead * t_->keyHeadStride;
  }
  __aicore__ inline uint64_t ScaleOffset(uint32_t b, uint32_t col, uint32_t kvHead) const {
    const bool tnd = t_->layout == msa_tiling::kLayoutTND;
    return ColumnBase(b, col) * (tnd ? t_->scaleRowStride : t_->scalePageStride) + kvHead * t_->scaleHeadStride;
  }

  // How a page's scores reach the ring: row-major (128 per row) by the Fixpipe, or NZ (16-column groups of
  // the page's rows, `rows` rows x 32 bytes each) by the Fixpipe, or NZ through L1 (keyCache).
  enum class PageOut { kRowMajor, kNz, kNzViaL1 };

  // ---- Cube ----------------------------------------------------------------------------------------
  // Page c of a core uses key buffer set c % kKeyBuffers (keyL1_, keyL0b_, resultL0c_, and widenedL1_ for a
  // widen task): the copy of the next page runs while the current one is loaded, multiplied and written out.
  // Task j (of those with computed pages) uses query buffer j % kQueryBuffers.
  // kWiden: a widen task (the query rows the Vector cores wrote as half, the int8 keys widened on the Cube,
  // WidenPage); otherwise the query and the keys (16-bit, or int8 staged by the Vector cores) in QT.
  template <bool kWiden>
  __aicore__ inline void CubeTask(const Task &task) {
    using CT = typename PickType<kWiden, half, QT>::type;  // the Cube's 16-bit input type
    const int64_t qLen = QLen(task.request), kvLen = KvLen(task.request);
    const uint32_t computed = ComputedCols(*t_, task, qLen, kvLen);
    if (computed == 0) return;  // the Vector cores write fill only
    if constexpr (kInt8Key) CrossCoreWaitFlag(kFlagKeysStaged);  // staged keys, or the widened query

    const uint32_t rows = task.tokens * t_->foldHeads;  // Cube rows
    const uint32_t rowsAligned = AlignUp(rows, kFractal);
    const uint32_t d = t_->headDim;
    const uint32_t qb = tasksLoaded_++ % kQueryBuffers;
    LocalTensor<CT> qL1 = queryL1_.Get<CT>()[qb * kCubeRows * d];
    LocalTensor<CT> qL0a = queryL0a_.Get<CT>()[qb * kCubeRows * d];
    // A widen task's identity follows its query rows (16 of them, rowsAligned) in the same buffers.
    const uint32_t identityAt = qb * kCubeRows * d * sizeof(QT) + kFractal * d * sizeof(half);
    LocalTensor<int8_t> identityL1 = queryL1_.Get<int8_t>()[identityAt];
    LocalTensor<int8_t> identityL0a = queryL0a_.Get<int8_t>()[identityAt];
    Nd2NzParams qCopy;
    qCopy.ndNum = 1;
    qCopy.nValue = rows;
    qCopy.dValue = d;
    qCopy.srcNdMatrixStride = 0;
    qCopy.srcDValue = kWiden ? d : t_->cubeRowStride;
    qCopy.dstNzC0Stride = rowsAligned;
    qCopy.dstNzNStride = 1;
    qCopy.dstNzMatrixStride = 0;
    if (queryL1Pending_[qb]) {  // the query loads out of this buffer two tasks ago are done
      WaitFlag<HardEvent::MTE1_MTE2>(evQueryL1Free_[qb]);
      queryL1Pending_[qb] = false;
    }
    if constexpr (kWiden) {
      DataCopy(qL1, widenQueryGm_, qCopy);
      DataCopy(identityL1, identityGm_, kIdentityBytes);
    } else {
      DataCopy(qL1, queryGm_[QueryRowOffset(task, 0)], qCopy);
    }
    SetFlag<HardEvent::MTE2_MTE1>(evQueryCopied_[qb]);
    WaitFlag<HardEvent::MTE2_MTE1>(evQueryCopied_[qb]);
    if (l0aPending_[qb]) {  // the last Mmad of two tasks ago has read this query buffer
      WaitFlag<HardEvent::M_MTE1>(evL0aFree_[qb]);
      l0aPending_[qb] = false;
    }
    // L1 holds the tile as NZ (16-column groups of all rows); L0A wants zZ (fractal rows in order):
    // one load per 16-row band gathers that band's fractals across the column groups.
    LoadData2DParams qLoad;
    qLoad.startIndex = 0;
    qLoad.repeatTimes = d / kFractal;
    qLoad.srcStride = rowsAligned / kFractal;
    qLoad.dstGap = 0;
    qLoad.ifTranspose = false;
    for (uint32_t band = 0; band < rowsAligned / kFractal; ++band) {
      LoadData(qL0a[band * kFractal * d], qL1[band * kFractal * kFractal], qLoad);
    }
    if constexpr (kWiden) {  // the identity, row-major in L1: its two 16 x 32 fractals are L0A's zZ already
      qLoad.repeatTimes = kIdentityBytes / kFractalBytes;
      qLoad.srcStride = 1;
      LoadData(identityL0a, identityL1, qLoad);
    }
    SetFlag<HardEvent::MTE1_MTE2>(evQueryL1Free_[qb]);
    queryL1Pending_[qb] = true;
    // The first key load below is on MTE1 after these, so its MTE1 -> M event covers them too.

    const uint32_t tilePages = StagePages(rows);
    const bool nz = NzTiles();  // prefill: NZ S-tiles, their last pages through L1
    const uint32_t firstPage = pagesIssued_;
    pagesIssued_ += computed;
    if constexpr (kWiden) WidenPage(task, 0, kvLen, identityL0a, firstPage % kKeyBuffers);
    uint32_t stage = 0, routedFrom = computed;
    for (uint32_t c = 0; c < computed; ++c) {
      const uint32_t inTile = c % tilePages;
      const uint32_t b = (firstPage + c) % kKeyBuffers;
      // A widen task widens the next page before this one's ring wait and multiply: the FIX, MTE1 and M work
      // of two pages interleaves (each pipe runs its queue in program order).
      if constexpr (kWiden) {
        if (c + 1 < computed) WidenPage(task, c + 1, kvLen, identityL0a, (b + 1) % kKeyBuffers);
      }
      if (inTile == 0) {  // a new S-tile: its stage must have been read by the Vector cores
        stage = stilesIssued_ % kRingStages;
        if (stilesIssued_ >= kRingStages) CrossCoreWaitFlag(kFlagStageFree + stage);
        const uint32_t tileEnd = c + tilePages < computed ? c + tilePages : computed;
        routedFrom = nz ? tileEnd - RoutedPages(tileEnd - c) : computed;
      }
      const uint64_t at = static_cast<uint64_t>(stage) * StageElems() + static_cast<uint64_t>(inTile) * rows * kPageKeys;
      const PageOut out = c >= routedFrom ? PageOut::kNzViaL1 : (nz ? PageOut::kNz : PageOut::kRowMajor);
      if constexpr (kWiden) {
        MultiplyWidenedPage(rows, qL0a, at, b);
      } else {
        ComputePage(task, c, rows, rowsAligned, kvLen, qL0a, at, b, out);
      }
      if (inTile + 1 == tilePages || c + 1 == computed) {  // the S-tile is complete: one hand-over
        // Routed pages are an S-tile's last: their MTE3 copies follow every Fixpipe of the tile (FIX -> MTE3),
        // so a flag on MTE3 after the last one follows all its writes.
        if (out == PageOut::kNzViaL1) {
          CrossCoreSetFlag<kCubeVectorMode, PIPE_MTE3>(kFlagStageReady + stage);
        } else {
          CrossCoreSetFlag<kCubeVectorMode, PIPE_FIX>(kFlagStageReady + stage);
        }
        ++stilesIssued_;
      }
    }
    SetFlag<HardEvent::M_MTE1>(evL0aFree_[qb]);  // after the task's last Mmad, the last read of qL0a
    l0aPending_[qb] = true;
  }

  // A widen task's page c (key buffer set b): the int8 keys GM -> L1 -> L0B, the identity times each 32-wide
  // D slice into L0C as int32 ([D, keys], NZ: exact), and the Fixpipe's DEQF16 (scale 1.0) into widenedL1_
  // as half (exact: |k| <= 128), [D, keys] NZ. MultiplyWidenedPage waits for evWidened_[b].
  // Buffers reused within the page follow each other through the pipes: the widened keys overwrite the int8
  // page in L0B, and the scores the int32 keys in L0C, after the Fixpipe that the load into L0B waits for.
  // widenedL1_[b] is written again two pages later only after this page's loads out of it, which precede
  // that page's int8 load on MTE1.
  __aicore__ inline void WidenPage(const Task &task, uint32_t c, int64_t kvLen, const LocalTensor<int8_t> &identity,
                                   uint32_t b) {
    const uint32_t d = t_->headDim;
    const uint32_t col = task.colBegin + c;
    const LocalTensor<int8_t> kL1 = keyL1_.Get<int8_t>()[b * kPageKeys * d * sizeof(QT)];
    const LocalTensor<int8_t> kL0b = keyL0b_.Get<int8_t>()[b * kPageKeys * d * sizeof(half)];
    StreamPage<int8_t>(task, c, col, kvLen, kL1, b);
    if (l0bPending_[b]) {  // the Mmad of two pages ago has read this keyL0b_ buffer
      WaitFlag<HardEvent::M_MTE1>(evL0bFree_[b]);
      l0bPending_[b] = false;
    }
    // The NZ page is L0B's layout for int8 too (D groups of 32, the keys' fractals).
    LoadKeyPage(kL0b, kL1, (kPageKeys / kFractal) * (d / kBlockBytes), b, false);
    // Slice g: [32 of D, 128 keys] = identity [32, 32] x keys [32 of D, 128 keys], into rows 32 g of the
    // int32 [D, keys] matrix (NZ: each 16-key group holds D rows, so slice g is a block of its own).
    const LocalTensor<int32_t> wideL0c = resultL0c_.Get<int32_t>()[b * kCubeRows * kPageKeys];
    MmadParams mm;
    mm.m = kIdentityEdge;
    mm.n = kPageKeys;
    mm.k = kIdentityEdge;
    mm.cmatrixInitVal = true;
    mm.cmatrixSource = false;
    for (uint32_t g = 0; g < d / kIdentityEdge; ++g) {
      Mmad(wideL0c[g * kIdentityEdge * kPageKeys], identity, kL0b[g * kIdentityEdge * kPageKeys], mm);
    }
    SetFlag<HardEvent::M_FIX>(evWidenMultiplied_[b]);
    WaitFlag<HardEvent::M_FIX>(evWidenMultiplied_[b]);
    FixpipeParamsV220 fix;
    fix.nSize = kPageKeys;
    fix.mSize = kIdentityEdge;
    fix.srcStride = kIdentityEdge;
    fix.dstStride = d;  // each 16-key group of the [D, keys] matrix: D rows of 32 bytes
    fix.ndNum = 1;
    fix.quantPre = QuantMode_t::DEQF16;
    fix.deqScalar = kDeqOne;
    const LocalTensor<half> wideL1 = widenedL1_.Get<half>()[b * kPageKeys * d];
    for (uint32_t g = 0; g < d / kIdentityEdge; ++g) {
      Fixpipe<half, int32_t, CFG_NZ>(wideL1[g * kIdentityEdge * kFractal], wideL0c[g * kIdentityEdge * kPageKeys], fix);
    }
    SetFlag<HardEvent::FIX_MTE1>(evWidened_[b]);
  }

  // A widen task's page widened in buffer set b: the keys into L0B as a 16-bit key page (D groups of 16,
  // each the keys' 16 x 16 fractals in order: fractal (key group j, D band i) of the [D, keys] matrix,
  // transposed, goes to place i * 8 + j), the fp16 Mmad with the query, and the scores to the ring as fp16
  // at `at`, row-major.
  __aicore__ inline void MultiplyWidenedPage(uint32_t rows, const LocalTensor<half> &qL0a, uint64_t at, uint32_t b) {
    const uint32_t d = t_->headDim;
    const LocalTensor<half> wideL1 = widenedL1_.Get<half>()[b * kPageKeys * d];
    const LocalTensor<half> kL0b = keyL0b_.Get<half>()[b * kPageKeys * d];
    WaitFlag<HardEvent::FIX_MTE1>(evWidened_[b]);
    LoadData2DParams kLoad;
    kLoad.startIndex = 0;
    kLoad.repeatTimes = kPageKeys / kFractal;
    kLoad.srcStride = d / kFractal;  // fractals between key groups
    kLoad.dstGap = 0;
    kLoad.ifTranspose = true;
    for (uint32_t band = 0; band < d / kFractal; ++band) {
      LoadData(kL0b[band * kPageKeys * kFractal], wideL1[band * kFractal * kFractal], kLoad);
    }
    SetFlag<HardEvent::MTE1_M>(evWidenedLoaded_[b]);
    WaitFlag<HardEvent::MTE1_M>(evWidenedLoaded_[b]);
    MultiplyPage(rows, kFractal, qL0a, kL0b, b);
    FixpipeParamsV220 fix = ScoresOut(rows, kFractal, PageOut::kRowMajor);
    Fixpipe(stageGm_[at], resultL0c_.Get<float>()[b * kCubeRows * kPageKeys], fix);
    SetFlag<HardEvent::FIX_M>(evL0cFree_[b]);
    l0cPending_[b] = true;
  }

  // A key page in L1 (NZ: `fractals` fractals in L0B's order) into L0B buffer b as it is; then its L1 buffer
  // is free again (a key-cache slot instead records that MTE1 has read L1), and the Mmad that follows may
  // read L0B once L0C buffer b is free too (the Fixpipe of two pages ago has read it).
  template <typename T>
  __aicore__ inline void LoadKeyPage(const LocalTensor<T> &kL0b, const LocalTensor<T> &kL1, uint32_t fractals,
                                     uint32_t b, bool cached) {
    LoadData2DParams kLoad;
    kLoad.startIndex = 0;
    kLoad.repeatTimes = fractals;
    kLoad.srcStride = 1;
    kLoad.dstGap = 0;
    kLoad.ifTranspose = false;
    LoadData(kL0b, kL1, kLoad);
    if (cached) {
      cacheRead_ = true;
    } else {
      SetFlag<HardEvent::MTE1_MTE2>(evKeyL1Free_[b]);
      keyL1Pending_[b] = true;
    }
    SetFlag<HardEvent::MTE1_M>(evKeyLoaded_[b]);
    WaitFlag<HardEvent::MTE1_M>(evKeyLoaded_[b]);
    if (l0cPending_[b]) {
      WaitFlag<HardEvent::FIX_M>(evL0cFree_[b]);
      l0cPending_[b] = false;
    }
  }

  // The page's Mmad: the query tile (qL0a, rowsAligned rows) times the keys in L0B buffer b into L0C buffer b
  // (fp32), then L0B is free again and the Fixpipe may read the scores.
  template <typename CT>
  __aicore__ inline void MultiplyPage(uint32_t rows, uint32_t rowsAligned, const LocalTensor<CT> &qL0a,
                                      const LocalTensor<CT> &kL0b, uint32_t b) {
    MmadParams mm;
    mm.m = rowsAligned;
    mm.n = kPageKeys;
    mm.k = t_->headDim;
    mm.cmatrixInitVal = true;  // C = A * B, no accumulation across pages
    mm.cmatrixSource = false;
    Mmad(resultL0c_.Get<float>()[b * kCubeRows * kPageKeys], qL0a, kL0b, mm);
    SetFlag<HardEvent::M_MTE1>(evL0bFree_[b]);
    l0bPending_[b] = true;
    SetFlag<HardEvent::M_FIX>(evMultiplied_[b]);
    WaitFlag<HardEvent::M_FIX>(evMultiplied_[b]);
  }

  // The Fixpipe of a page's fp32 scores ([rows, 128] in L0C) into the ring as fp16 (F322F16): a block maximum
  // of rounded scores is the rounded maximum (rounding is monotonic), within SPEC §6; what fp16 cannot hold is
  // found and recomputed by the Vector cores.
  __aicore__ inline FixpipeParamsV220 ScoresOut(uint32_t rows, uint32_t rowsAligned, PageOut out) const {
    FixpipeParamsV220 fix;
    fix.nSize = kPageKeys;
    fix.mSize = rows;
    fix.srcStride = rowsAligned;
    // row-major: [rows, 128] scores in the S-tile; NZ: a 16-column group of `rows` rows of 32 bytes
    fix.dstStride = out == PageOut::kRowMajor ? kPageKeys : rows;
    fix.ndNum = 1;
    fix.quantPre = QuantMode_t::F322F16;
    return fix;
  }

  // Page c of the task: keys to L0B, the product of the query tile (qL0a) and the keys into L0C,
  // then the rows' scores to element `at` (of ST) of the ring as `out` says.
  __aicore__ inline void ComputePage(const Task &task, uint32_t c, uint32_t rows, uint32_t rowsAligned, int64_t kvLen,
                                     const LocalTensor<QT> &qL0a, uint64_t at, uint32_t b, PageOut out) {
    const uint32_t d = t_->headDim;
    const uint32_t col = task.colBegin + c;
    LocalTensor<QT> kL0b = keyL0b_.Get<QT>()[b * kPageKeys * d];
    LocalTensor<float> cL0c = resultL0c_.Get<float>()[b * kCubeRows * kPageKeys];

    const bool cached = !kInt8Key && t_->keyCache != 0;
    const uint32_t slot = cached ? col % kKeySlots : b;
    const LocalTensor<QT> kL1 = keyL1_.Get<QT>()[slot * kPageKeys * d];
    if (cached) {
      CachePage(task, col, kvLen, slot, b);
    } else {
      StreamPage<QT>(task, c, col, kvLen, kL1, b);
    }
    if (l0bPending_[b]) {  // the Mmad of two pages ago has read this keyL0b_ buffer
      WaitFlag<HardEvent::M_MTE1>(evL0bFree_[b]);
      l0bPending_[b] = false;
    }
    const uint32_t routed = routedIssued_ % kRoutedBuffers;
    if (out == PageOut::kNzViaL1 && routedPending_[routed]) {
      // The copy out of this L1 buffer two routed pages ago is done before the key load below, so before the
      // Mmad and the Fixpipe that follow it (there is no MTE3 -> FIX event).
      WaitFlag<HardEvent::MTE3_MTE1>(evRoutedFree_[routed]);
      routedPending_[routed] = false;
    }
    LoadKeyPage(kL0b, kL1, (kPageKeys / kFractal) * (d / kFractal), b, cached);
    MultiplyPage(rows, rowsAligned, qL0a, kL0b, b);
    FixpipeParamsV220 fix = ScoresOut(rows, rowsAligned, out);
    if (out == PageOut::kRowMajor) {
      Fixpipe(stageGm_[at], cL0c, fix);
    } else if (out == PageOut::kNz) {
      Fixpipe<ST, float, CFG_NZ>(stageGm_[at], cL0c, fix);
    } else {
      const LocalTensor<ST> sL1 = routedL1_.Get<ST>()[routed * kCubeRows * kPageKeys];
      Fixpipe<ST, float, CFG_NZ>(sL1, cL0c, fix);
      SetFlag<HardEvent::FIX_MTE3>(evRoutedWritten_[routed]);
      WaitFlag<HardEvent::FIX_MTE3>(evRoutedWritten_[routed]);
      DataCopy(stageGm_[at], sL1, rows * kPageKeys);
      SetFlag<HardEvent::MTE3_MTE1>(evRoutedFree_[routed]);
      routedPending_[routed] = true;
      ++routedIssued_;
    }
    SetFlag<HardEvent::FIX_M>(evL0cFree_[b]);
    l0cPending_[b] = true;
  }

  // Keys as the rows of an NZ matrix: row-major 16x16 key fractals are exactly the column-major
  // fractals of K^T that L0B expects, and their order (column groups outer) is its order too. `keys` rows,
  // never past the request's keys (TND), `srcD` elements apart in global memory.
  __aicore__ inline Nd2NzParams KeyPageCopy(uint32_t keys, uint64_t srcD) const {
    Nd2NzParams copy;
    copy.ndNum = 1;
    copy.nValue = keys;
    copy.dValue = t_->headDim;
    copy.srcNdMatrixStride = 0;
    copy.srcDValue = srcD;
    copy.dstNzC0Stride = kPageKeys;
    copy.dstNzNStride = 1;
    copy.dstNzMatrixStride = 0;
    return copy;
  }

  // Page c of the task (column col) into L1 buffer b (kL1), the streaming double buffer. An unreadable page
  // is not loaded: the product is then meaningless and the Vector cores replace its scores by NaN.
  // CT int8_t: a widen task's int8 keys as they are; QT: 16-bit keys, or int8 keys staged as QT.
  template <typename CT>
  __aicore__ inline void StreamPage(const Task &task, uint32_t c, uint32_t col, int64_t kvLen,
                                    const LocalTensor<CT> &kL1, uint32_t b) {
    constexpr bool kRawInt8 = IsSameType<CT, int8_t>::value;
    if (keyL1Pending_[b]) {  // the key load out of this buffer two pages ago is done
      WaitFlag<HardEvent::MTE1_MTE2>(evKeyL1Free_[b]);
      keyL1Pending_[b] = false;
    }
    const uint32_t keys = PageKeys(kvLen, col);
    if constexpr (kInt8Key && !kRawInt8) {  // widened by the Vector cores, one page after another
      DataCopy(kL1, stagedKeyGm_[static_cast<uint64_t>(c) * kPageKeys * t_->headDim], KeyPageCopy(keys, t_->headDim));
    } else if constexpr (IsSameType<CT, KT>::value) {  // 16-bit keys, or a widen task's int8 keys as they are
      if (ColumnReadable(task.request, col)) {
        DataCopy(kL1, keyGm_[KeyOffset(task.request, col, task.kvHead)], KeyPageCopy(keys, t_->keyRowStride));
      }
    }
    SetFlag<HardEvent::MTE2_MTE1>(evKeyCopied_[b]);
    WaitFlag<HardEvent::MTE2_MTE1>(evKeyCopied_[b]);
  }

  // Key cache (16-bit keys): column col's page into L1 slot `slot` unless the slot holds it already (the
  // same key offset and key count: a page of an earlier task of this core). Before a copy, when MTE1 has
  // loaded from L1 since the last one, a fence (MTE1 -> MTE2, set and waited at once) waits for those loads:
  // the slot's last reader among them, and the wait of the copy event before them, which the copy's own
  // set must follow. A hit needs neither. An unreadable page is not loaded (its scores become NaN), and the
  // slot keeps what it held.
  __aicore__ inline void CachePage(const Task &task, uint32_t col, int64_t kvLen, uint32_t slot, uint32_t b) {
    if constexpr (!kInt8Key) {  // int8 keys are never cached (ChooseTileCols)
      if (!ColumnReadable(task.request, col)) return;
      const uint64_t offset = KeyOffset(task.request, col, task.kvHead);
      const uint32_t keys = PageKeys(kvLen, col);
      if (slotKeys_[slot] == keys && slotOffset_[slot] == offset) return;  // slotKeys_ 0: never written
      if (cacheRead_) {
        SetFlag<HardEvent::MTE1_MTE2>(evKeyCacheFence_);
        WaitFlag<HardEvent::MTE1_MTE2>(evKeyCacheFence_);
        cacheRead_ = false;
      }
      DataCopy(keyL1_.Get<QT>()[slot * kPageKeys * t_->headDim], keyGm_[offset], KeyPageCopy(keys, t_->keyRowStride));
      slotOffset_[slot] = offset;
      slotKeys_[slot] = keys;
      SetFlag<HardEvent::MTE2_MTE1>(evKeyCopied_[b]);
      WaitFlag<HardEvent::MTE2_MTE1>(evKeyCopied_[b]);
    }
  }

  // The Cube's write-after-read events still set at the end are waited, so none is left set.
  __aicore__ inline void DrainCubeFences() {
    for (uint32_t q = 0; q < kQueryBuffers; ++q) {
      if (queryL1Pending_[q]) WaitFlag<HardEvent::MTE1_MTE2>(evQueryL1Free_[q]);
      if (l0aPending_[q]) WaitFlag<HardEvent::M_MTE1>(evL0aFree_[q]);
      queryL1Pending_[q] = l0aPending_[q] = false;
    }
    for (uint32_t b = 0; b < kKeyBuffers; ++b) {
      if (keyL1Pending_[b]) WaitFlag<HardEvent::MTE1_MTE2>(evKeyL1Free_[b]);
      if (l0bPending_[b]) WaitFlag<HardEvent::M_MTE1>(evL0bFree_[b]);
      if (l0cPending_[b]) WaitFlag<HardEvent::FIX_M>(evL0cFree_[b]);
      keyL1Pending_[b] = l0bPending_[b] = l0cPending_[b] = false;
    }
    for (uint32_t r = 0; r < kRoutedBuffers; ++r) {
      if (routedPending_[r]) WaitFlag<HardEvent::MTE3_MTE1>(evRoutedFree_[r]);
      routedPending_[r] = false;
    }
  }

  // Every stage-free flag the Vector cores set must be consumed before the kernel ends.
  __aicore__ inline void DrainStages() {
    const uint32_t outstanding = stilesIssued_ < kRingStages ? stilesIssued_ : kRingStages;
    for (uint32_t i = 0; i < outstanding; ++i) {
      CrossCoreWaitFlag(kFlagStageFree + (stilesIssued_ - outstanding + i) % kRingStages);
    }
  }

  // ---- Vector --------------------------------------------------------------------------------------
  __aicore__ inline void VectorTask(const Task &task) {
    const int64_t qLen = QLen(task.request), kvLen = KvLen(task.request);
    const uint32_t computed = ComputedCols(*t_, task, qLen, kvLen);
    // This core's share of the task: the first or second half of its rows (a row is one token of
    // one query head), so at most kVecRows = kCubeRows / 2 whatever N1 is.
    const uint32_t rows = task.tokens * t_->foldHeads;
    const uint32_t firstHalf = (rows + 1) / 2;
    const uint32_t myRowBegin = sub_ == 0 ? 0 : firstHalf;
    const uint32_t myRows = sub_ == 0 ? firstHalf : rows - firstHalf;

    // int8 keys: staged for the Cube, or for a widen task the query as half (queryHeld: half holds every row
    // of this core; if not, every page is recomputed in fp32 at the end of the task).
    const bool widen = WidenTask(task);
    bool queryHeld = true;
    if constexpr (kInt8Key) {
      if (computed > 0 && widen) {
        queryHeld = WriteWidenedQuery(task, myRowBegin, myRows);
      } else if (computed > 0) {
        StageInt8Keys(keyGm_, task, computed, kvLen);
      }
    }

    LocalTensor<float> colMax = colMaxBuf_.Get<float>();
    if (computed > 0 && myRows > 0) {
      range_.Clear();
      if (!queryHeld) range_.MarkUnheld(computed);
    }
    const uint32_t tilePages = StagePages(rows);
    const bool nz = NzTiles();
    uint32_t stage = 0;
    for (uint32_t c = 0; c < computed; ++c) {
      const uint32_t inTile = c % tilePages;
      if (inTile == 0) {
        stage = stilesSeen_ % kRingStages;
        CrossCoreWaitFlag(kFlagStageReady + stage);
      }
      LocalTensor<ST> result = resultInQue_.AllocTensor<ST>();
      if (myRows > 0 && nz) {  // this core's rows of each 16-column group: [8][myRows][16] in UB
        const uint64_t page = static_cast<uint64_t>(stage) * StageElems() + static_cast<uint64_t>(inTile) * rows * kPageKeys;
        DataCopy(result, stageGm_[page + static_cast<uint64_t>(myRowBegin) * kFractal],
                 DataCopyParams(static_cast<uint16_t>(kPageKeys / kFractal), static_cast<uint16_t>(myRows),
                                static_cast<uint16_t>(rows - myRows), 0));
      } else if (myRows > 0) {
        const uint64_t at =
            static_cast<uint64_t>(stage) * StageElems() + (static_cast<uint64_t>(inTile) * rows + myRowBegin) * kPageKeys;
        DataCopy(result, stageGm_[at], myRows * kPageKeys);
      }
      if (inTile + 1 == tilePages || c + 1 == computed) {
        // The S-tile's copies are queued on MTE2 ahead of this flag: the stage is free once it is seen.
        CrossCoreSetFlag<kCubeVectorMode, PIPE_MTE2>(kFlagStageFree + stage);
        ++stilesSeen_;
      }
      resultInQue_.EnQue(result);
      result = resultInQue_.DeQue<ST>();
      if (myRows > 0 && widen) {
        // Back from q' to q (a power of two per row, exact), then times the whole scale in ReducePage, with the
        // page's bound for the range check (widenBound_: 2^(E - 1) |s| x 2^13, E the largest of this core's rows).
        LocalTensor<float> scores = range_.PageScores();
        // The previous page's last read of `scores` (its pairwise max) is ordered by a barrier after it.
        Cast(scores, result, RoundMode::CAST_NONE, myRows * kPageKeys);
        PipeBarrier<PIPE_V>();
        for (uint32_t r = 0; r < myRows; ++r) {
          Muls(scores[r * kPageKeys], scores[r * kPageKeys], Pow2(widenExp_[r] - kWidenQueryExp), kPageKeys);
        }
        PipeBarrier<PIPE_V>();  // the dequant, the mask and the max read the scores
        const uint32_t firstSeen =
            ReducePage(task, c, myRowBegin, myRows, qLen, kvLen, scores, colMax[c * kVecRows], true, widenBound_);
        if (queryHeld) range_.NoteBound(c, firstSeen, myRows, split_.MantissaFlag());  // else unheld already
      } else if (myRows > 0 && kInt8Key) {  // dequantised in fp32: the scores carry p of each key's scale
        // The previous page's last read of `scores` (its pairwise max) is ordered by a barrier after it.
        LocalTensor<float> scores = range_.PageScores();
        // The dequant reads the widened scores first, after the barriers inside ReducePage's Mantissa.
        Cast(scores, result, RoundMode::CAST_NONE, myRows * kPageKeys);
        const uint32_t firstSeen =
            ReducePage(task, c, myRowBegin, myRows, qLen, kvLen, scores, colMax[c * kVecRows], false);
        range_.Note(c, firstSeen, myRows, colMax[c * kVecRows], split_.MantissaFlag());
      } else if (myRows > 0) {
        const uint32_t firstSeen =
            ReducePageHalf(task, c, myRowBegin, myRows, qLen, kvLen, result, colMax[c * kVecRows], nz);
        range_.Note(c, firstSeen, myRows, colMax[c * kVecRows]);
      }
      resultInQue_.FreeTensor(result);
    }
    if (myRows == 0) return;
    if (computed > 0) RecomputeUnheldPages(task, computed, myRowBegin, myRows, qLen, kvLen, colMax);

    const float negInf = -__builtin_inff();
    for (uint32_t c = computed; c < task.cols; ++c) Duplicate(colMax[c * kVecRows], negInf, myRows);
    ApplyRequestForcing(task, kvLen, myRows, colMax);
    PipeBarrier<PIPE_V>();  // the gather below reads every column written above
    WriteRows(task, myRowBegin, myRows, colMax);
  }

  // One page for this core's rows: dequant, causal tail, row max into column c of colMax. Returns
  // the first of these rows that sees a key of the page (rows before it score -inf; the visible end
  // grows with the token, so they are a prefix), or myRows when none does or the page is unreadable.
  // int8 keys: the Cube's scores carry p of each key's scale (ScaleSplit), so they are multiplied by
  // m, and the page's flag is left for ScoreRange::Note; `exact` scores (recomputed in fp32 from the
  // int8 keys themselves, or a widen task's) are multiplied by the whole scale; a nonzero `bound` (a widen
  // task) leaves ScaleSplit::Bound of the page's scales times `bound` in the same flag.
  __aicore__ inline uint32_t ReducePage(const Task &task, uint32_t c, uint32_t myRowBegin, uint32_t myRows,
                                        int64_t qLen, int64_t kvLen, const LocalTensor<float> &result,
                                        const LocalTensor<float> &colMaxC, bool exact, float bound = 0.0f) {
    const uint32_t col = task.colBegin + c;
    if (!ColumnReadable(task.request, col)) {
      Duplicate(colMaxC, static_cast<float>(__builtin_nanf("")), myRows);
      return myRows;
    }
    if constexpr (kInt8Key) {
      LocalTensor<float> scale = scaleBuf_.Get<float>();
      const uint32_t keys = PageKeys(kvLen, col);
      LoadScale(task, col, 0, keys, scale);
      // m is ordered before the multiplies by the barriers inside Mantissa.
      LocalTensor<float> factor = exact ? scale : split_.Mantissa(scale, keys);
      // Scores of key n times factor[n]: left and right halves of every row against the two
      // halves of the factor row (repeat stride 0 on the factor).
      Mul(result, result, factor, kFloatsPerRepeat, myRows, BinaryRepeatParams(1, 1, 1, 16, 16, 0));
      Mul(result[kFloatsPerRepeat], result[kFloatsPerRepeat], factor[kFloatsPerRepeat], kFloatsPerRepeat, myRows,
          BinaryRepeatParams(1, 1, 1, 16, 16, 0));
      if (bound != 0.0f) split_.Bound(scale, keys, bound);
      ReleaseScale();
      PipeBarrier<PIPE_V>();  // the causal tail below overwrites products
    }
    const uint32_t firstSeen = MaskCausalTail(task, col, myRowBegin, myRows, qLen, kvLen, result);
    PipeBarrier<PIPE_V>();  // the max reads the masked rows
    // Max in fp32: pairwise over the two halves of each row, then over the 64 that remain.
    // The pairwise maxima overwrite the left halves in place (the page's scores are not read again).
    Max(result, result, result[kFloatsPerRepeat], kFloatsPerRepeat, myRows, BinaryRepeatParams(1, 1, 1, 16, 16, 16));
    PipeBarrier<PIPE_V>();  // the reduction reads the pairwise maxima
    WholeReduceMax(colMaxC, result, kFloatsPerRepeat, myRows, 1, 1, 16, ReduceOrder::ORDER_ONLY_VALUE);
    // The next page's first instructions on result come after its own barriers.
    return firstSeen;
  }

  // ReducePage for 16-bit keys straight on the page's fp16 scores (`result` from the ring): nothing to
  // dequantise, and a maximum of fp16 values is one of them, so taking it in fp16 is exact and equals the
  // maximum of the widened scores; only the row maxima are widened to fp32. Row-major ([myRows, 128]): one
  // 128-lane repeat per row masks the causal tail and one reduces the row. NZ ([8][myRows][16], `nz`): one
  // repeat per row masks its 8 blocks of 16 (lane 16 g + j is column 16 g + j, as in a row-major row), the
  // 8 groups fold into one by three Max (4 + 4, 2 + 2, 1 + 1), and one 32-byte block per row reduces to its
  // maximum. Returns what ReducePage returns.
  __aicore__ inline uint32_t ReducePageHalf(const Task &task, uint32_t c, uint32_t myRowBegin, uint32_t myRows,
                                            int64_t qLen, int64_t kvLen, const LocalTensor<half> &result,
                                            const LocalTensor<float> &colMaxC, bool nz) {
    const uint32_t col = task.colBegin + c;
    if (!ColumnReadable(task.request, col)) {
      Duplicate(colMaxC, static_cast<float>(__builtin_nanf("")), myRows);
      return myRows;
    }
    const uint32_t firstSeen = nz ? MaskCausalTail(task, col, myRowBegin, myRows, qLen, kvLen, result, kFractal, myRows)
                                  : MaskCausalTail(task, col, myRowBegin, myRows, qLen, kvLen, result);
    PipeBarrier<PIPE_V>();  // the reduction reads the masked rows
    // The row maxima as half in range_'s page buffer (no fp32 page on this path); the previous page's
    // widening of them is ordered by the barrier above.
    LocalTensor<half> rowMax = range_.PageScores().template ReinterpretCast<half>();
    if (nz) {
      const int32_t group = static_cast<int32_t>(myRows * kFractal);  // one 16-column group of this core's rows
      for (int32_t groups = kPageKeys / kFractal / 2; groups >= 1; groups /= 2) {
        Max(result, result, result[groups * group], groups * group);
        PipeBarrier<PIPE_V>();  // the next fold reads these maxima
      }
      // Eight rows (blocks) a repeat; a last partial repeat reduces rows past myRows too, out of group 1
      // (written, and read by no one).
      BlockReduceMax(rowMax, result, static_cast<int32_t>((myRows + 7) / 8), static_cast<int32_t>(kPageKeys), 1, 1, 8);
    } else {
      WholeReduceMax(rowMax, result, kPageKeys, myRows, 1, 1, 8, ReduceOrder::ORDER_ONLY_VALUE);
    }
    PipeBarrier<PIPE_V>();  // the widening reads the maxima
    Cast(colMaxC, rowMax, RoundMode::CAST_NONE, myRows);
    return firstSeen;
  }

  // Causal tail of one page of this core's rows (`scores`, [myRows, 128], float or half; half also NZ,
  // [8][myRows][16]: row r at element r * rowElems, its 8 blocks blockStride blocks apart): keys at or past a
  // row's visible end become -inf. Returns the first row that sees a key of the page (rows before it see
  // none: the visible end grows with the token), myRows when none does.
  template <typename T>
  __aicore__ inline uint32_t MaskCausalTail(const Task &task, uint32_t col, uint32_t myRowBegin, uint32_t myRows,
                                            int64_t qLen, int64_t kvLen, const LocalTensor<T> &scores,
                                            uint32_t rowElems = kPageKeys, uint32_t blockStride = 1) {
    const T negInf = static_cast<T>(-__builtin_inff());
    const int64_t pageStart = static_cast<int64_t>(col) * kPageKeys;
    uint32_t firstSeen = 0;
    for (uint32_t r = 0; r < myRows; ++r) {
      const int64_t tOff = task.tokenBegin + (myRowBegin + r) / t_->foldHeads;
      int64_t valid = VisibleEnd(t_->sparseMode, qLen, kvLen, tOff) - pageStart;
      if (valid >= kPageKeys) continue;
      if (valid <= 0) firstSeen = r + 1;
      if (valid < 0) valid = 0;
      const uint64_t low = valid < 64 ? ~0ULL << valid : 0ULL;     // lanes 0..63 of the row
      const uint64_t high = valid <= 64 ? ~0ULL : ~0ULL << (valid - 64);  // lanes 64..127
      if constexpr (sizeof(T) == sizeof(half)) {  // the row is one repeat of 128 lanes
        uint64_t mask[2] = {low, high};
        Duplicate(scores[r * rowElems], negInf, mask, 1, static_cast<uint16_t>(blockStride), 8);
      } else {  // two repeats of 64
        uint64_t lowMask[2] = {low, 0ULL};
        uint64_t highMask[2] = {high, 0ULL};
        if (low != 0) Duplicate(scores[r * kPageKeys], negInf, lowMask, 1, 1, 8);
        Duplicate(scores[r * kPageKeys + kFloatsPerRepeat], negInf, highMask, 1, 1, 8);
      }
    }
    return firstSeen;
  }

  // Pages whose scores fp16 could not hold (ScoreRange): recomputed in fp32 from the query and the
  // keys, and reduced again.
  __aicore__ inline void RecomputeUnheldPages(const Task &task, uint32_t computed, uint32_t myRowBegin, uint32_t myRows,
                                              int64_t qLen, int64_t kvLen, const LocalTensor<float> &colMax) {
    if (range_.AnyUnheld(computed)) {
      const uint32_t d = t_->headDim;
      bool queryLoaded = false;
      for (uint32_t c = 0; c < computed; ++c) {
        if (!range_.Unheld(c)) continue;
        if (!queryLoaded) {
          range_.LoadQueryRows(queryGm_[QueryRowOffset(task, myRowBegin)], t_->cubeRowStride, myRows, d);
          queryLoaded = true;
        }
        const uint32_t col = task.colBegin + c;
        range_.ExactScores(keyGm_[KeyOffset(task.request, col, task.kvHead)], t_->keyRowStride, PageKeys(kvLen, col),
                           myRows, d);
        ReducePage(task, c, myRowBegin, myRows, qLen, kvLen, range_.PageScores(), colMax[c * kVecRows], true);
      }
    }
    range_.Release();
  }

  // The scales of keys [first, first + keys) of one page into `scale`: one copy when they are
  // contiguous, else scalar reads. The previous reads of `scale` must be released (ReleaseScale).
  __aicore__ inline void LoadScale(const Task &task, uint32_t col, uint32_t first, uint32_t keys,
                                   const LocalTensor<float> &scale) {
    const uint64_t offset =
        ScaleOffset(task.request, col, task.kvHead) + static_cast<uint64_t>(first) * t_->scaleRowStride;
    if (t_->scaleRowStride == 1) {
      if (scalePending_) {
        WaitFlag<HardEvent::V_MTE2>(evScaleFree_);
        scalePending_ = false;
      }
      DataCopyExtParams copy{1, static_cast<uint32_t>(keys * sizeof(float)), 0, 0, 0};
      DataCopyPadExtParams<float> pad{false, 0, 0, 0.0f};
      DataCopyPad(scale, scaleGm_[offset], copy, pad);
      SetFlag<HardEvent::MTE2_V>(evScaleCopied_);
      WaitFlag<HardEvent::MTE2_V>(evScaleCopied_);
    } else {
      // One scale per N2 floats (TND with several key heads, or a [NP, P, N2] scale): scalar reads.
      if (scalePending_) {
        WaitFlag<HardEvent::V_S>(evScaleFreeScalar_);
        scalePending_ = false;
      }
      for (uint32_t n = 0; n < keys; ++n) scale.SetValue(n, scaleGm_.GetValue(offset + n * t_->scaleRowStride));
      SetFlag<HardEvent::S_V>(evScaleWritten_);
      WaitFlag<HardEvent::S_V>(evScaleWritten_);
    }
  }

  // After the vector instructions that read `scale`: the next LoadScale may write it once they are done.
  __aicore__ inline void ReleaseScale() {
    if (t_->scaleRowStride == 1) {
      SetFlag<HardEvent::V_MTE2>(evScaleFree_);
    } else {
      SetFlag<HardEvent::V_S>(evScaleFreeScalar_);
    }
    scalePending_ = true;
  }

  __aicore__ inline void DrainVectorFences() {
    range_.Drain();
    if (!scalePending_) return;
    if (t_->scaleRowStride == 1) {
      WaitFlag<HardEvent::V_MTE2>(evScaleFree_);
    } else {
      WaitFlag<HardEvent::V_S>(evScaleFreeScalar_);
    }
    scalePending_ = false;
  }

  // SPEC §4 request mode: init blocks [0, init) then the window ending at start_loc (local wins),
  // both only below the request's block count. Token mode is applied by ms_msa around the kernel.
  __aicore__ inline void ApplyRequestForcing(const Task &task, int64_t kvLen, uint32_t myRows,
                                             const LocalTensor<float> &colMax) {
    if (t_->initBlocks == 0 && t_->localBlocks == 0) return;
    const int64_t blocks = (kvLen + kPageKeys - 1) / kPageKeys;
    const int64_t start = t_->localBlocks > 0 ? startLocGm_.GetValue(task.request) : 0;
    const int64_t localBegin = start + 1 - static_cast<int64_t>(t_->localBlocks);
    PipeBarrier<PIPE_V>();  // forcing overwrites columns the maxima and the fill above wrote
    for (uint32_t c = 0; c < task.cols; ++c) {
      const int64_t col = task.colBegin + c;
      if (col >= blocks) break;
      if (t_->localBlocks > 0 && col >= localBegin && col <= start) {
        Duplicate(colMax[c * kVecRows], t_->localForceValue, myRows);
      } else if (col < static_cast<int64_t>(t_->initBlocks)) {
        Duplicate(colMax[c * kVecRows], t_->initForceValue, myRows);
      }
    }
  }

  // colMax is column-major (one column of this core's rows per block); the output wants rows. A
  // gather with fixed byte offsets transposes it, then one strided copy per query head writes that
  // head's rows (consecutive tokens in the output, every fold-th row here).
  __aicore__ inline void WriteRows(const Task &task, uint32_t myRowBegin, uint32_t myRows,
                                   const LocalTensor<float> &colMax) {
    const uint32_t fold = t_->foldHeads;
    LocalTensor<float> rowsOut = outQue_.AllocTensor<float>();
    const uint32_t width = t_->tileCols;  // rowsOut's row pitch: a multiple of 8 floats, whole data blocks
    Gather(rowsOut, colMax, gatherOffsetBuf_.Get<uint32_t>(), 0, myRows * width);
    PipeBarrier<PIPE_V>();  // the next task writes colMax again
    outQue_.EnQue(rowsOut);
    rowsOut = outQue_.DeQue<float>();
    const uint64_t requestToken = static_cast<uint64_t>(qlen_(task.request)) + task.tokenBegin;
    const uint32_t myRowEnd = myRowBegin + myRows;
    for (uint32_t j = 0; j < fold; ++j) {
      // This core's first row of head j of the group, and how many tokens of it follow.
      const uint32_t first = myRowBegin + (j + fold - myRowBegin % fold) % fold;
      if (first >= myRowEnd) continue;
      const uint32_t tokens = (myRowEnd - 1 - first) / fold + 1;
      const uint64_t head = static_cast<uint64_t>(task.headGroup) * fold + j;
      const uint64_t token = requestToken + first / fold;
      DataCopyExtParams copy;
      copy.blockCount = static_cast<uint16_t>(tokens);
      copy.blockLen = task.cols * sizeof(float);
      copy.srcStride = (fold * width - task.cols) * sizeof(float) / kBlockBytes;
      copy.dstStride = (t_->outWidth - task.cols) * sizeof(float);
      copy.rsv = 0;
      DataCopyPad(scoreGm_[(head * t_->t1 + token) * t_->outWidth + task.colBegin], rowsOut[(first - myRowBegin) * width],
                  copy);
    }
    outQue_.FreeTensor(rowsOut);
  }

  // Byte offsets of element (row r, column c) of colMax at position r * tileCols + c: a task's rows are
  // gathered tileCols wide, the call's task width (kKeyCacheCols, kNarrowTileCols or kTileCols).
  __aicore__ inline void PrepareGatherOffsets() {
    LocalTensor<uint32_t> offsets = gatherOffsetBuf_.Get<uint32_t>();
    const uint32_t width = t_->tileCols;
    for (uint32_t r = 0; r < kVecRows; ++r) {
      for (uint32_t c = 0; c < width; ++c) {
        offsets.SetValue(r * width + c, (c * kVecRows + r) * static_cast<uint32_t>(sizeof(float)));
      }
    }
    SetFlag<HardEvent::S_V>(evOffsetsWritten_);
    WaitFlag<HardEvent::S_V>(evOffsetsWritten_);
  }

  // A widen task: this core's query rows (myRows from myRowBegin) as half, each scaled by 2^(1 - E) (E: the
  // exponent of the smallest power of two above its max |q|) into rows [myRowBegin, ...) of the core's widen
  // workspace, the identity after them once per core (Vector core 0), then the flag the Cube waits for (both
  // Vector cores set it, as after staging keys). Returns whether half holds each of the rows exactly;
  // widenExp_ gets each row's E (0 where it is out of range, the row then not held).
  __aicore__ inline bool WriteWidenedQuery(const Task &task, uint32_t myRowBegin, uint32_t myRows) {
    bool exact = true;
    if (myRows > 0) {
      const uint32_t d = t_->headDim;
      // The rows in fp32 (exact) in the range check's query buffer; what half misses of them overwrites them
      // (a recompute of this task loads them again).
      range_.LoadQueryRows(queryGm_[QueryRowOffset(task, myRowBegin)], t_->cubeRowStride, myRows, d);
      LocalTensor<float> x = range_.QueryRows();  // [myRows, d]: the rows, then what half misses of them
      // Scratch in range_'s page buffer, free until the task's first page of scores (as for staging):
      LocalTensor<float> back = range_.PageScores();  // [myRows, d]: q' through half and back
      LocalTensor<float> mag = back[kWidenRows * d];  // [myRows, d]: |x|
      LocalTensor<float> maxAbs = mag[kWidenRows * d];  // one per row
      PipeBarrier<PIPE_V>();  // the rows are widened
      RowMaxAbs(maxAbs, mag, x, myRows, d);
      SetFlag<HardEvent::V_S>(evQueryRead_);
      WaitFlag<HardEvent::V_S>(evQueryRead_);
      for (uint32_t r = 0; r < myRows; ++r) {
        int32_t e = QueryExponent(maxAbs.GetValue(r));
        if (!QueryExponentInRange(e)) {
          exact = false;
          e = 0;
        }
        widenExp_[r] = e;
      }
      SetFlag<HardEvent::S_V>(evQueryReadDone_);  // maxAbs is read before RowMaxAbs writes it again
      WaitFlag<HardEvent::S_V>(evQueryReadDone_);
      int32_t maxExp = widenExp_[0];
      for (uint32_t r = 0; r < myRows; ++r) {
        Muls(x[r * d], x[r * d], Pow2(kWidenQueryExp - widenExp_[r]), d);  // exact: a power of two
        if (widenExp_[r] > maxExp) maxExp = widenExp_[r];
      }
      widenBound_ = Pow2(maxExp - kWidenQueryExp) * kBoundScale;
      LocalTensor<half> out = stagedOutQue_.AllocTensor<half>();
      PipeBarrier<PIPE_V>();
      Cast(out, x, RoundMode::CAST_RINT, myRows * d);
      PipeBarrier<PIPE_V>();
      Cast(back, out, RoundMode::CAST_NONE, myRows * d);
      PipeBarrier<PIPE_V>();
      Sub(x, x, back, myRows * d);  // 0 wherever half holds q' exactly
      stagedOutQue_.EnQue(out);
      out = stagedOutQue_.DeQue<half>();
      DataCopy(widenQueryGm_[static_cast<uint64_t>(myRowBegin) * d], out, myRows * d);
      stagedOutQue_.FreeTensor(out);
      PipeBarrier<PIPE_V>();  // the differences are complete
      RowMaxAbs(maxAbs, mag, x, myRows, d);
      SetFlag<HardEvent::V_S>(evQueryRead_);
      WaitFlag<HardEvent::V_S>(evQueryRead_);
      for (uint32_t r = 0; r < myRows; ++r) {
        if (!(maxAbs.GetValue(r) == 0.0f)) exact = false;  // a NaN difference too
      }
      SetFlag<HardEvent::S_V>(evQueryReadDone_);  // the page buffer is written again by the first page
      WaitFlag<HardEvent::S_V>(evQueryReadDone_);
    }
    if (sub_ == 0 && !identityWritten_) {
      WriteIdentity();
      identityWritten_ = true;
    }
    CrossCoreSetFlag<kCubeVectorMode, PIPE_MTE3>(kFlagKeysStaged);
    return exact;
  }

  // The 32 x 32 int8 identity, row-major, into the core's widen workspace (Vector core 0, before its first
  // widen task's flag): zeros as half, 32 ones written by the scalar unit, then half -> int8 (exact).
  __aicore__ inline void WriteIdentity() {
    // Scratch past WriteWidenedQuery's in range_'s page buffer, whose scalar reads are done (S -> V above).
    LocalTensor<half> ones = range_.PageScores()[3 * kWidenRows * kWidenMaxDim].template ReinterpretCast<half>();
    Duplicate(ones, static_cast<half>(0.0f), static_cast<int32_t>(kIdentityBytes));
    SetFlag<HardEvent::V_S>(evQueryRead_);
    WaitFlag<HardEvent::V_S>(evQueryRead_);
    for (uint32_t i = 0; i < kIdentityEdge; ++i) ones.SetValue(i * (kIdentityEdge + 1), static_cast<half>(1.0f));
    SetFlag<HardEvent::S_V>(evQueryReadDone_);
    WaitFlag<HardEvent::S_V>(evQueryReadDone_);
    LocalTensor<int8_t> out = stagedOutQue_.AllocTensor<int8_t>();
    Cast(out, ones, RoundMode::CAST_NONE, static_cast<int32_t>(kIdentityBytes));
    stagedOutQue_.EnQue(out);
    out = stagedOutQue_.DeQue<int8_t>();
    DataCopy(identityGm_, out, kIdentityBytes);
    stagedOutQue_.FreeTensor(out);
  }

  // int8 keys become the query's 16-bit type for the Cube as int8 * p, p the power of two of the key's
  // scale (ScaleSplit; exact). Each Vector core stages its half of every page's keys, kStageRows rows
  // at a time, then both signal the Cube once per task. The widening runs in range_'s page buffer, free
  // until this task's first page of scores. A member template called only for int8 keys: it is never
  // instantiated for the other dtype columns.
  template <typename K>
  __aicore__ inline void StageInt8Keys(const GlobalTensor<K> &keys, const Task &task, uint32_t computed,
                                       int64_t kvLen) {
    static_assert(IsSameType<K, int8_t>::value, "int8 keys only");
    const uint32_t d = t_->headDim;
    const uint32_t pitch = AlignUp(d, kBlockBytes);  // int8 row pitch in UB, also used after widening
    const uint32_t share = kPageKeys / kVectorsPerCore;
    const uint8_t pitchBlocks = static_cast<uint8_t>(pitch * sizeof(half) / kBlockBytes);
    LocalTensor<float> wide = range_.PageScores();                                 // [kStageRows, pitch]
    LocalTensor<half> asHalf = wide[kStageRows * pitch].template ReinterpretCast<half>();  // the same rows
    LocalTensor<float> scale = scaleBuf_.Get<float>();
    // The previous task's last reads of the page buffer come before the barriers of its WriteRows.
    for (uint32_t c = 0; c < computed; ++c) {
      const uint32_t col = task.colBegin + c;
      const uint32_t pageKeys = PageKeys(kvLen, col);
      const uint32_t first = sub_ * share;
      if (first >= pageKeys || !ColumnReadable(task.request, col)) continue;
      const uint32_t count = pageKeys - first < share ? pageKeys - first : share;
      LoadScale(task, col, first, count, scale);
      for (uint32_t r0 = 0; r0 < count; r0 += kStageRows) {
        const uint32_t rows = count - r0 < kStageRows ? count - r0 : kStageRows;
        LocalTensor<int8_t> raw = int8InQue_.AllocTensor<int8_t>();
        DataCopyExtParams in;
        in.blockCount = static_cast<uint16_t>(rows);
        in.blockLen = d * sizeof(int8_t);
        in.srcStride = static_cast<uint32_t>((t_->keyRowStride - d) * sizeof(int8_t));
        in.dstStride = 0;
        in.rsv = 0;
        DataCopyPadExtParams<int8_t> pad{false, 0, 0, 0};
        DataCopyPad(raw, keys[KeyOffset(task.request, col, task.kvHead) + (first + r0) * t_->keyRowStride], in, pad);
        int8InQue_.EnQue(raw);
        raw = int8InQue_.DeQue<int8_t>();
        // The blocks of p for these rows; for the last chunk of a page the scales past `count` are
        // stale, and their rows are never copied out.
        LocalTensor<half> power = split_.PowerBlocks(scale[r0], AlignUp(rows, 8));
        if (r0 + kStageRows >= count) ReleaseScale();  // the page's last read of `scale` is issued
        // int8 -> half (exact), times p row by row in half (block stride 0 on p; exact), -> the query
        // type (bf16 through float, exact). The barrier after the first cast also orders the Brcb.
        Cast(asHalf, raw, RoundMode::CAST_NONE, rows * pitch);
        PipeBarrier<PIPE_V>();
        int8InQue_.FreeTensor(raw);
        LocalTensor<QT> staged = stagedOutQue_.AllocTensor<QT>();
        const BinaryRepeatParams byRow(1, 1, 0, pitchBlocks, pitchBlocks, 1);
        if constexpr (IsSameType<QT, half>::value) {
          Mul(staged, asHalf, power, d, rows, byRow);
        } else {  // no half -> bf16 conversion on A2/A3
          Mul(asHalf, asHalf, power, d, rows, byRow);
          PipeBarrier<PIPE_V>();
          Cast(wide, asHalf, RoundMode::CAST_NONE, rows * pitch);
          PipeBarrier<PIPE_V>();
          Cast(staged, wide, RoundMode::CAST_RINT, rows * pitch);  // exact: int8 * p fits bf16
        }
        stagedOutQue_.EnQue(staged);
        staged = stagedOutQue_.DeQue<QT>();
        // Rows go to the staging page without their UB padding (row pitch d in global memory).
        DataCopyExtParams out;
        out.blockCount = static_cast<uint16_t>(rows);
        out.blockLen = d * sizeof(QT);
        out.srcStride = (pitch - d) * sizeof(QT) / kBlockBytes;
        out.dstStride = 0;
        out.rsv = 0;
        DataCopyPad(stagedKeyGm_[(static_cast<uint64_t>(c) * kPageKeys + first + r0) * d], staged, out);
        stagedOutQue_.FreeTensor(staged);
        // The next chunk writes the page buffer again after the barriers inside its PowerBlocks.
      }
    }
    CrossCoreSetFlag<kCubeVectorMode, PIPE_MTE3>(kFlagKeysStaged);
  }

  // A call whose lengths break a value rule: each Vector core fills its share of the whole output
  // with NaN (nothing else is read or written).
  __aicore__ inline void WriteNaNShare() {
    const uint64_t total = static_cast<uint64_t>(t_->n1) * t_->t1 * t_->outWidth;
    const uint64_t vectors = static_cast<uint64_t>(t_->usedCores) * kVectorsPerCore;
    const uint64_t share = (total + vectors - 1) / vectors;
    const uint64_t begin = (static_cast<uint64_t>(core_) * kVectorsPerCore + sub_) * share;
    const uint64_t end = begin + share < total ? begin + share : total;
    if (begin >= end) return;
    constexpr uint32_t kChunk = kVecRows * kTileCols;  // floats of outQue_'s buffer
    LocalTensor<float> nan = outQue_.AllocTensor<float>();
    Duplicate(nan, static_cast<float>(__builtin_nanf("")), kChunk);
    outQue_.EnQue(nan);
    nan = outQue_.DeQue<float>();
    for (uint64_t pos = begin; pos < end; pos += kChunk) {
      const uint64_t n = end - pos < kChunk ? end - pos : kChunk;
      DataCopyExtParams copy{1, static_cast<uint32_t>(n * sizeof(float)), 0, 0, 0};
      DataCopyPad(scoreGm_[pos], nan, copy);
    }
    outQue_.FreeTensor(nan);
  }

  const MsaIndexScoreTilingData *t_ = nullptr;
  TPipe *pipe_ = nullptr;
  uint32_t core_ = 0;
  uint32_t sub_ = 0;
  uint32_t pagesIssued_ = 0;   // Cube: pages computed by this core so far (key buffer = count % kKeyBuffers)
  uint32_t tasksLoaded_ = 0;   // Cube: query tiles loaded so far (query buffer = count % kQueryBuffers)
  uint32_t stilesIssued_ = 0;  // Cube: S-tiles handed over so far (stage = count % kRingStages)
  uint32_t stilesSeen_ = 0;    // Vector: the same count, seen from the consumer side

  // Event ids (allocated once: a flag is reused only after its previous wait is known done) and the
  // write-after-read events still set (see the file comment).
  TEventID evQueryCopied_[kQueryBuffers] = {}, evKeyCopied_[kKeyBuffers] = {}, evKeyLoaded_[kKeyBuffers] = {},
           evMultiplied_[kKeyBuffers] = {};  // Cube, read after write
  TEventID evQueryL1Free_[kQueryBuffers] = {}, evL0aFree_[kQueryBuffers] = {}, evKeyL1Free_[kKeyBuffers] = {},
           evL0bFree_[kKeyBuffers] = {}, evL0cFree_[kKeyBuffers] = {};  // Cube, write after read
  bool queryL1Pending_[kQueryBuffers] = {}, l0aPending_[kQueryBuffers] = {}, keyL1Pending_[kKeyBuffers] = {},
       l0bPending_[kKeyBuffers] = {}, l0cPending_[kKeyBuffers] = {};
  // Key cache: what each L1 slot holds (key offset, keys; 0 keys: nothing) and whether MTE1 has loaded from
  // L1 since the last fence (CachePage).
  TEventID evKeyCacheFence_ = 0;
  uint64_t slotOffset_[kKeySlots] = {};
  uint32_t slotKeys_[kKeySlots] = {};
  bool cacheRead_ = false;
  // keyCache: the pages of scores routed through L1 (buffer = count % kRoutedBuffers), FIX -> MTE3 and the
  // MTE3 -> MTE1 event that frees a buffer.
  TEventID evRoutedWritten_[kRoutedBuffers] = {}, evRoutedFree_[kRoutedBuffers] = {};
  bool routedPending_[kRoutedBuffers] = {};
  uint32_t routedIssued_ = 0;
  TEventID evScaleCopied_ = 0, evScaleWritten_ = 0, evOffsetsWritten_ = 0, evScaleFree_ = 0,
           evScaleFreeScalar_ = 0;  // Vector
  bool scalePending_ = false;
  TEventID evQueryRead_ = 0, evQueryReadDone_ = 0;  // Vector: max |q| and the differences to the scalar unit
  int32_t widenExp_[kWidenRows] = {};               // Vector: E of each of its rows of a widen task
  float widenBound_ = 0.0f;                         // Vector: 2^(max E - 1) x kBoundScale, ScaleSplit::Bound's factor
  bool identityWritten_ = false;                    // Vector core 0: the identity is in the workspace
  // Cube, widen tasks: the page's keys widened in L1 (FIX -> MTE1), loaded into L0B (MTE1 -> M), and the
  // identity Mmad done (M -> FIX); per key buffer set.
  TEventID evWidened_[kKeyBuffers] = {}, evWidenedLoaded_[kKeyBuffers] = {}, evWidenMultiplied_[kKeyBuffers] = {};

  GlobalTensor<QT> queryGm_;
  GlobalTensor<KT> keyGm_;
  GlobalTensor<int32_t> blockTableGm_;
  GlobalTensor<float> scaleGm_;
  GmLengths qlen_;
  GmLengths klen_;
  GlobalTensor<int32_t> startLocGm_;
  GlobalTensor<float> scoreGm_;
  GlobalTensor<ST> stageGm_;
  GlobalTensor<QT> stagedKeyGm_;
  GlobalTensor<half> widenQueryGm_;  // a widen task's query rows, where staged keys go otherwise
  GlobalTensor<int8_t> identityGm_;  // after them: the identity the Cube widens the keys with

  // Cube buffers.
  TBuf<TPosition::A1> queryL1_;
  TBuf<TPosition::B1> keyL1_;
  TBuf<TPosition::A2> queryL0a_;
  TBuf<TPosition::B2> keyL0b_;
  TBuf<TPosition::CO1> resultL0c_;
  TBuf<TPosition::C1> routedL1_;
  TBuf<TPosition::B1> widenedL1_;  // int8 keys: a widen task's keys as half, [D, keys] NZ, per key buffer set
  // Vector buffers.
  TQue<QuePosition::VECIN, 1> resultInQue_;
  TQue<QuePosition::VECOUT, 1> outQue_;
  TBuf<TPosition::VECCALC> colMaxBuf_;
  TBuf<TPosition::VECCALC> gatherOffsetBuf_;
  TBuf<TPosition::VECCALC> scaleBuf_;
  TQue<QuePosition::VECIN, 1> int8InQue_;
  TQue<QuePosition::VECOUT, 1> stagedOutQue_;
  ScoreRange<QT, KT> range_;  // the range of the fp16 scores and their fp32 recompute
  ScaleSplit split_;          // int8 keys: each scale as a power of two (staged) times m (after)
};

}  // namespace msa_kernel

#endif  // MSA_INDEX_SCORE_KERNEL_H
