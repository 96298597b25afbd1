// The Vector side of the fp16 S workspace: which pages held every score, and the fp32 recompute of those
// that did not (docs/ascend.md, "The S workspace in fp16"). int8 keys reach the Cube as int8 * p and
// their scores are multiplied by m = scale / p afterwards (msa_index_score_scale_split.h); the argument
// below holds for them while |m| >= 1, and a page with a key whose m left [1, 2) is made unheld by its
// flag.
//
// The Cube writes each page's scores as fp16 (Fixpipe F322F16). A score of magnitude 65,520 or more
// has no fp16 value: it arrives as +-65,504 in CTRL[48]'s saturation mode (the A2/A3 default) or as
// +-inf without it. Every page leaves max |row maximum| over the rows of this Vector core that see it
// (one data block per page; 0 when no such row). A visible score beyond fp16's range either is the
// row maximum (then |maximum| >= kHalfMax) or lies below a maximum it cannot change, except when every
// visible score of the row is beyond -kHalfMax, and then the maximum is -kHalfMax (-inf without
// saturation): so a range below kHalfMax proves the page's maxima exact up to fp16 rounding. The
// kernel recomputes any other page from the query and the keys in fp32 (LoadQueryRows, ExactScores)
// and reduces it again.
#ifndef MSA_INDEX_SCORE_SCORE_RANGE_H
#define MSA_INDEX_SCORE_SCORE_RANGE_H

#include "kernel_operator.h"
#include "msa_index_score_tiling_data.h"

namespace msa_kernel {

using namespace AscendC;

// The largest finite half. A score the fp16 S workspace cannot hold reaches this (see above).
constexpr float kHalfMax = 65504.0f;

template <typename QT, typename KT>
class ScoreRange {
  static constexpr uint32_t kFloatsPerRepeat = 64;                       // one 256-byte repeat of fp32
  static constexpr uint32_t kBlockBytes = 32;                            // UB data block
  static constexpr uint32_t kRangeStride = kBlockBytes / sizeof(float);  // one page's range per data block
  static constexpr uint32_t kExactKeys = 16;                             // keys per chunk of the recompute

 public:
  // `rows`: the most rows a Vector core takes; `pageKeys` scores per row; `pages` per task at most.
  __aicore__ inline void Init(TPipe *pipe, uint32_t rows, uint32_t pageKeys, uint32_t pages, uint32_t headDim) {
    pageKeys_ = pageKeys;
    pipe->InitBuffer(pageScoresBuf_, rows * pageKeys * sizeof(float));
    pipe->InitBuffer(rangeBuf_, pages * kRangeStride * sizeof(float));
    pipe->InitBuffer(absBuf_, kFloatsPerRepeat * sizeof(float));
    pipe->InitBuffer(worstBuf_, 2 * kRangeStride * sizeof(float));
    pipe->InitBuffer(queryInQue_, 1, rows * headDim * sizeof(QT));
    pipe->InitBuffer(queryBuf_, rows * headDim * sizeof(float));
    pipe->InitBuffer(keyInQue_, 1, kExactKeys * KeyPitch(headDim) * sizeof(KT));
    pipe->InitBuffer(keyBuf_, kExactKeys * KeyPitch(headDim) * sizeof(float));
    if constexpr (kInt8Key) pipe->InitBuffer(keyHalfBuf_, kExactKeys * KeyPitch(headDim) * sizeof(half));
    pipe->InitBuffer(prodBuf_, kExactKeys * headDim * sizeof(float));
    pages_ = pages;
    evRangeRead_ = pipe->AllocEventID<HardEvent::V_S>();
    evRangeFree_ = pipe->AllocEventID<HardEvent::S_V>();
  }

  // One page of scores in fp32, [rows, pageKeys]: the widened fp16 scores, or the recomputed ones.
  // Between a task's last reduction and the next task's first page the kernel may use it as scratch
  // (the int8 key staging does).
  __aicore__ inline LocalTensor<float> PageScores() { return pageScoresBuf_.Get<float>(); }

  // A new task: every page's range 0.
  __aicore__ inline void Clear() {
    if (rangePending_) {  // the previous task's scalar reads of the ranges are done
      WaitFlag<HardEvent::S_V>(evRangeFree_);
      rangePending_ = false;
    }
    // The previous task's vector reads of rangeBuf_ are ordered by the barriers of its WriteRows.
    Duplicate(rangeBuf_.Get<float>(), 0.0f, pages_ * kRangeStride);
  }

  // Page c's range: max |colMaxC[r]| over rows [firstSeen, rows), the rows that see the page.
  __aicore__ inline void Note(uint32_t c, uint32_t firstSeen, uint32_t rows, const LocalTensor<float> &colMaxC) {
    if (firstSeen >= rows) return;
    AbsRowMaxima(firstSeen, rows, colMaxC);
    Reduce(c);
  }
  // The same, at least the largest of `floor`'s 64 lanes (int8 keys: ScaleSplit's flag).
  __aicore__ inline void Note(uint32_t c, uint32_t firstSeen, uint32_t rows, const LocalTensor<float> &colMaxC,
                              const LocalTensor<float> &floor) {
    if (firstSeen >= rows) return;
    AbsRowMaxima(firstSeen, rows, colMaxC);
    PipeBarrier<PIPE_V>();
    LocalTensor<float> absMax = absBuf_.Get<float>();
    Max(absMax, absMax, floor, static_cast<int32_t>(kFloatsPerRepeat));
    Reduce(c);
  }

  // A widen task's page: its range is the largest of `bound`'s 64 lanes (ScaleSplit::Bound); its scores
  // cannot leave fp16's range, so the row maxima play no part.
  __aicore__ inline void NoteBound(uint32_t c, uint32_t firstSeen, uint32_t rows, const LocalTensor<float> &bound) {
    if (firstSeen >= rows) return;
    WholeReduceMax(rangeBuf_.Get<float>()[c * kRangeStride], bound, kFloatsPerRepeat, 1, 1, 1, 8,
                   ReduceOrder::ORDER_ONLY_VALUE);
  }
  // Every page of the first `computed` unheld (recomputed), whatever Note says: a widen task whose query
  // half does not hold exactly.
  __aicore__ inline void MarkUnheld(uint32_t computed) {
    PipeBarrier<PIPE_V>();  // after Clear's zeros
    Duplicate(rangeBuf_.Get<float>(), kHalfMax, computed * kRangeStride);
  }

  // After the task's last page: whether some page of the first `computed` may not have held its
  // scores (one scalar read; a NaN counts as not held). Unheld(c) may be asked only after this, and
  // Release() must follow.
  __aicore__ inline bool AnyUnheld(uint32_t computed) {
    LocalTensor<float> worst = worstBuf_.Get<float>();
    const uint32_t groups = (computed * kRangeStride + kFloatsPerRepeat - 1) / kFloatsPerRepeat;
    PipeBarrier<PIPE_V>();  // the last page's range is written; the previous task's check has read worst
    WholeReduceMax(worst, rangeBuf_.Get<float>(), kFloatsPerRepeat, groups, 1, 1, 8, ReduceOrder::ORDER_ONLY_VALUE);
    PipeBarrier<PIPE_V>();
    WholeReduceMax(worst[kRangeStride], worst, groups, 1, 1, 1, 8, ReduceOrder::ORDER_ONLY_VALUE);
    SetFlag<HardEvent::V_S>(evRangeRead_);
    WaitFlag<HardEvent::V_S>(evRangeRead_);
    return !(worst.GetValue(kRangeStride) < kHalfMax);
  }
  __aicore__ inline bool Unheld(uint32_t c) { return !(rangeBuf_.Get<float>().GetValue(c * kRangeStride) < kHalfMax); }
  // The scalar reads of the ranges are issued: the next Clear waits for them.
  __aicore__ inline void Release() {
    SetFlag<HardEvent::S_V>(evRangeFree_);
    rangePending_ = true;
  }
  __aicore__ inline void Drain() {
    if (!rangePending_) return;
    WaitFlag<HardEvent::S_V>(evRangeFree_);
    rangePending_ = false;
  }

  // `rows` query rows in fp32, [rows, d], from row 0 at `query` (rows `rowStride` elements apart).
  __aicore__ inline void LoadQueryRows(const GlobalTensor<QT> &query, uint64_t rowStride, uint32_t rows, uint32_t d) {
    LocalTensor<QT> raw = queryInQue_.AllocTensor<QT>();
    DataCopyPadExtParams<QT> pad{false, 0, 0, 0};
    DataCopyPad(raw, query, RowsIn<QT>(rows, d, rowStride), pad);
    queryInQue_.EnQue(raw);
    raw = queryInQue_.DeQue<QT>();
    // The previous task's products, the last reads of queryBuf_, are ordered by later barriers.
    Cast(queryBuf_.Get<float>(), raw, RoundMode::CAST_NONE, rows * d);
    queryInQue_.FreeTensor(raw);
  }

  // The rows LoadQueryRows loaded, [rows, d] in fp32. A caller may overwrite them (the widened query
  // does); the recompute loads them again before it reads them.
  __aicore__ inline LocalTensor<float> QueryRows() { return queryBuf_.Get<float>(); }

  // Scores of `keys` keys (from `key`, `keyRowStride` elements apart) against the loaded query rows,
  // in fp32 into PageScores() ([rows, pageKeys]; later keys untouched). kExactKeys keys at a time; per
  // row, a product with the row broadcast over the chunk (repeat stride 0), the two halves of D added,
  // and one sum per key.
  __aicore__ inline void ExactScores(const GlobalTensor<KT> &key, uint64_t keyRowStride, uint32_t keys, uint32_t rows,
                                     uint32_t d) {
    const uint32_t lanes = d > kFloatsPerRepeat ? kFloatsPerRepeat : d;  // lanes left after folding D
    const uint8_t rowBlocks = static_cast<uint8_t>(d * sizeof(float) / kBlockBytes);
    const uint8_t keyBlocks = static_cast<uint8_t>(KeyPitch(d) * sizeof(float) / kBlockBytes);
    LocalTensor<float> scores = pageScoresBuf_.Get<float>();
    LocalTensor<float> q = queryBuf_.Get<float>();
    LocalTensor<float> k = keyBuf_.Get<float>();
    LocalTensor<float> prod = prodBuf_.Get<float>();
    for (uint32_t n0 = 0; n0 < keys; n0 += kExactKeys) {
      const uint32_t count = keys - n0 < kExactKeys ? keys - n0 : kExactKeys;
      LocalTensor<KT> raw = keyInQue_.AllocTensor<KT>();
      DataCopyPadExtParams<KT> pad{false, 0, 0, 0};
      DataCopyPad(raw, key[static_cast<uint64_t>(n0) * keyRowStride], RowsIn<KT>(count, d, keyRowStride), pad);
      keyInQue_.EnQue(raw);
      raw = keyInQue_.DeQue<KT>();
      // The previous chunk's products, its last reads of k, are ordered by the barriers after them.
      if constexpr (kInt8Key) {  // no int8 -> float conversion on A2/A3: through half, exact
        LocalTensor<half> kHalf = keyHalfBuf_.Get<half>();
        Cast(kHalf, raw, RoundMode::CAST_NONE, count * KeyPitch(d));
        PipeBarrier<PIPE_V>();
        Cast(k, kHalf, RoundMode::CAST_NONE, count * KeyPitch(d));
      } else {
        Cast(k, raw, RoundMode::CAST_NONE, count * d);
      }
      keyInQue_.FreeTensor(raw);
      for (uint32_t r = 0; r < rows; ++r) {
        PipeBarrier<PIPE_V>();  // k is widened; the previous row's sums have read prod
        Mul(prod, k, q[r * d], lanes, count, BinaryRepeatParams(1, 1, 1, rowBlocks, keyBlocks, 0));
        if (d > kFloatsPerRepeat) {
          Mul(prod[kFloatsPerRepeat], k[kFloatsPerRepeat], q[r * d + kFloatsPerRepeat], d - kFloatsPerRepeat, count,
              BinaryRepeatParams(1, 1, 1, rowBlocks, keyBlocks, 0));
          PipeBarrier<PIPE_V>();  // the fold reads both halves of the products
          Add(prod, prod, prod[kFloatsPerRepeat], d - kFloatsPerRepeat, count,
              BinaryRepeatParams(1, 1, 1, rowBlocks, rowBlocks, rowBlocks));
        }
        PipeBarrier<PIPE_V>();  // the sums read the products
        WholeReduceSum(scores[r * pageKeys_ + n0], prod, lanes, count, 1, 1, rowBlocks);
      }
    }
    PipeBarrier<PIPE_V>();  // the mask and the max read the sums
  }

 private:
  static constexpr bool kInt8Key = IsSameType<KT, int8_t>::value;

  // Elements between two key rows in UB: DataCopyPad pads each row to a 32-byte block, so int8 rows of
  // d bytes take AlignUp(d, 32); 16-bit rows are whole blocks already (d is a multiple of 16).
  __aicore__ static inline uint32_t KeyPitch(uint32_t d) {
    return kInt8Key ? (d + kBlockBytes - 1) / kBlockBytes * kBlockBytes : d;
  }

  // |colMaxC[r]| of rows [firstSeen, rows) into absBuf_'s 64 lanes, 0 in the others.
  __aicore__ inline void AbsRowMaxima(uint32_t firstSeen, uint32_t rows, const LocalTensor<float> &colMaxC) {
    LocalTensor<float> absMax = absBuf_.Get<float>();
    const uint64_t upTo = rows >= 64 ? ~0ULL : (1ULL << rows) - 1;
    uint64_t lanes[2] = {upTo & ~((1ULL << firstSeen) - 1), 0ULL};
    // The previous page's reduction of absMax is ordered by the barriers of this page's reduction.
    Duplicate(absMax, 0.0f, kFloatsPerRepeat);
    PipeBarrier<PIPE_V>();  // colMaxC is written, and absMax cleared
    Abs(absMax, colMaxC, lanes, 1, UnaryRepeatParams(1, 1, 8, 8));
  }
  // The largest of absBuf_'s lanes is page c's range.
  __aicore__ inline void Reduce(uint32_t c) {
    PipeBarrier<PIPE_V>();
    WholeReduceMax(rangeBuf_.Get<float>()[c * kRangeStride], absBuf_.Get<float>(), kFloatsPerRepeat, 1, 1, 1, 8,
                   ReduceOrder::ORDER_ONLY_VALUE);
  }

  // GM -> UB copy of `rows` rows of `d` elements, `rowStride` elements apart in GM, packed in UB (d is a
  // multiple of 16, so a 16-bit row is whole data blocks).
  template <typename T>
  __aicore__ static inline DataCopyExtParams RowsIn(uint32_t rows, uint32_t d, uint64_t rowStride) {
    DataCopyExtParams copy;
    copy.blockCount = static_cast<uint16_t>(rows);
    copy.blockLen = d * sizeof(T);
    copy.srcStride = static_cast<uint32_t>((rowStride - d) * sizeof(T));
    copy.dstStride = 0;
    copy.rsv = 0;
    return copy;
  }

  uint32_t pageKeys_ = 0, pages_ = 0;
  TEventID evRangeRead_ = 0, evRangeFree_ = 0;
  bool rangePending_ = false;
  TBuf<TPosition::VECCALC> pageScoresBuf_;
  TBuf<TPosition::VECCALC> rangeBuf_;
  TBuf<TPosition::VECCALC> absBuf_;
  TBuf<TPosition::VECCALC> worstBuf_;
  TQue<QuePosition::VECIN, 1> queryInQue_;
  TBuf<TPosition::VECCALC> queryBuf_;
  TQue<QuePosition::VECIN, 1> keyInQue_;
  TBuf<TPosition::VECCALC> keyBuf_;
  TBuf<TPosition::VECCALC> keyHalfBuf_;  // int8 keys: widened through half
  TBuf<TPosition::VECCALC> prodBuf_;
};

}  // namespace msa_kernel

#endif  // MSA_INDEX_SCORE_SCORE_RANGE_H
