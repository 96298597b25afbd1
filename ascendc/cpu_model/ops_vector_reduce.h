// Modelled AscendC vector reductions for Atlas A2/A3 (__NPU_ARCH__ 2201), half and float, declared as in
// CANN's basic_api/kernel_operator_vec_reduce_intf.h (ReduceMax / ReduceMin / ReduceSum) and
// impl/basic_api/kernel_operator_vec_reduce_intf_impl.h (WholeReduce*, BlockReduce*, PairReduceSum),
// each with a trailing defaulted Site. Documents (docs/zh/api/SIMD-API/基础API/Memory矢量计算/归约计算/):
//  WholeReduceMax / Min / Sum  -> ReduceRepeat.md: per repeat, the max / min (with the lane index of its
//    first occurrence, stored in the bits of T, or as uint32_t for ORDER_ONLY_INDEX) or the sum of the
//    enabled lanes, at dst + repeat * dstRepStride units (表3); repeatTime in [0, 255].
//  BlockReduceMax / Min / Sum -> ReduceDataBlock.md: per repeat, one result per 32-byte block (8 a
//    repeat) at dst + repeat * dstRepStride * 8 elements; a block with no enabled lane is not written
//    (A2/A3); dst 16-byte (half) / 32-byte (float) aligned.
//  PairReduceSum -> ReducePairElem.md: per repeat, the sums of lanes (2k, 2k+1) at dst + repeat * 128
//    bytes * dstRepStride; a pair with both lanes off is not written (A2/A3).
//  ReduceMax / ReduceMin / ReduceSum -> ReduceMax.md, ReduceMin.md, ReduceSum.md: one result over all
//    repeats (count form: the first count elements); Max / Min: value then index (calIndex), ties to the
//    smallest index, a half index at most 65535; the sharedTmpBuffer must hold the documented number of
//    elements (关键特性说明) and may overlap src and dst.
// Sums: a binary tree of adjacent pairs inside a repeat (ReduceDataBlock.md 关键特性说明), each addition
// rounded to T (an assumption: the documents do not say at which precision the tree adds; IEEE in T is
// the model's rule); ReduceSum's count form adds the repeats' sums in order, its high-dimension form
// adds them as a tree again, 1 repeat of lanes at a time (ReduceSum.md 方式一 / 方式二 for A2/A3).
// Lanes a mask turns off count as 0 in a sum. Max / Min of a NaN lane give NaN (an assumption).
// The high-dimension ReduceMax / ReduceMin index of lane l of repeat r is r * (lanes a repeat) + l
// (ReduceMax.md: derived from the repeat and the in-repeat index; with srcRepStride != 8 blocks it is
// not a position in src). The sharedTmpBuffer is reported as written over its documented size and
// holds the first round's results afterwards (its contents are not documented).
// A reduction's dst may meet its src in the same repeat (the repeat is read before its result is
// written: an assumption the kernel relies on), not in a later repeat (通用地址重叠约束).
// Counter mode (SetMaskCount) for the per-repeat reductions (WholeReduce* / ReduceRepeat, BlockReduce* /
// ReduceDataBlock, PairReduceSum / ReducePairElem), as SIMD计算说明/掩码.md defines it for every
// high-dimension API: the mask (or the register's low word, isSetMask = false) is the element count,
// repeatTime is ignored, ceil(count / lanes) repeats run and the last one enables its first
// count % lanes lanes (a disabled lane counts as 0 in a sum; a block / pair with none is not written).
// Not modelled for the high-dimension ReduceMax / ReduceMin / ReduceSum (the run stops).
// The 9.1.0 names (附录/接口变更说明: WholeReduce* -> ReduceRepeat, BlockReduce* -> ReduceDataBlock,
// PairReduceSum -> ReducePairElem,归约计算/ReduceRepeat.md, ReduceDataBlock.md, ReducePairElem.md) take
// ReduceType (SUM, MAX, MIN; ReducePairElem SUM only) and T = U (half or float) on A2/A3.
#ifndef ASCEND_MODEL_OPS_VECTOR_REDUCE_H
#define ASCEND_MODEL_OPS_VECTOR_REDUCE_H

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "ops_vector_common.h"

namespace AscendC {
namespace model_vec {

enum class Reduction { kMax, kMin, kSum };

template <typename T>
inline void RequireHalfOrFloat(const char *api, const Site &site) {
  RequireKind<T>(api, site, {Kind::kF16, Kind::kF32}, "half or float");
}

inline void RequireNormal(const char *api, const Site &site, const MaskPlan &plan) {
  if (plan.counter) Fail(api, site, "Counter mode (SetMaskCount) is not modelled for the reductions");
}

inline uint64_t Param(const char *api, const Site &site, const char *name, int64_t v, uint64_t hi) {
  ascend_model::ops::RequireRange(api, site, name, static_cast<uint64_t>(v), 0, hi);
  return static_cast<uint64_t>(v);
}

// Sum of `v` as a binary tree of adjacent pairs (v.size() a power of two), each sum rounded to T.
template <typename T>
inline double TreeSum(std::vector<double> v) {
  uint8_t b[4];
  for (size_t n = v.size(); n > 1; n /= 2) {
    for (size_t i = 0; i < n / 2; ++i) {
      StoreReal<T>(b, v[2 * i] + v[2 * i + 1]);
      v[i] = LoadReal<T>(b);
    }
  }
  return v.empty() ? 0.0 : v[0];
}
template <typename T>
inline double RoundedSum(double a, double b) {
  uint8_t buf[4];
  StoreReal<T>(buf, a + b);
  return LoadReal<T>(buf);
}

// The best (max / min) of the enabled lanes of one repeat: value bits and lane; NaN wins, ties keep the
// first lane. Returns false when no lane is enabled.
template <typename T>
inline bool BestLane(const Operand &s, uint64_t r, const LaneMask &mask, uint64_t first, uint64_t last,
                     Reduction kind, uint64_t *lane, double *value) {
  bool found = false;
  for (uint64_t l = first; l < last; ++l) {
    if (!mask.Enabled(l)) continue;
    const double v = LoadReal<T>(s.span.host + s.Offset(r, l));
    const bool better = kind == Reduction::kMax ? v > *value : v < *value;
    if (!found || (!std::isnan(*value) && (std::isnan(v) || better))) {
      *value = v;
      *lane = l;
      found = true;
    }
  }
  return found;
}

// Reads the enabled lanes of all repeats (reported before any write).
inline void ReportReads(const char *api, const Site &site, const Operand &s, const MaskPlan &plan) {
  using namespace ascend_model;
  ops::RangeSet reads(s.span, Pipe::kV, Access::kRead, api, site);
  AddLanes(reads, s, plan);
  reads.Report();
}

// The checks every per-repeat reduction starts with (element type, repeatTime and strides in range, src in
// UB and 32-byte aligned): the src operand and dst's stride in units.
struct ReduceOperands {
  Operand src;
  uint64_t dstRepStride;
};

template <typename T>
inline ReduceOperands CheckedReduceOperands(const char *api, const Site &site, const LocalTensor<T> &src,
                                            int32_t repeatTime, int32_t dstRepStride, int32_t srcBlkStride,
                                            int32_t srcRepStride) {
  RequireHalfOrFloat<T>(api, site);
  Param(api, site, "repeatTime", repeatTime, 255);
  const uint64_t dRep = Param(api, site, "dstRepStride", dstRepStride, 65535);
  const uint64_t sBlk = Param(api, site, "srcBlkStride", srcBlkStride, 65535);
  const uint64_t sRep = Param(api, site, "srcRepStride", srcRepStride, 65535);
  const Operand s{"src", src.ModelSpan(), sBlk, sRep, sizeof(T)};
  RequireUb(api, site, s.span, "src", kBlockBytes);
  return {s, dRep};
}

// ---- WholeReduceMax / Min / Sum ------------------------------------------------------------------------
template <typename T>
inline void WholeReduce(const char *api, const Site &site, Reduction kind, const LocalTensor<T> &dst,
                        const LocalTensor<T> &src, const MaskPlan &plan, int32_t repeatTime, int32_t dstRepStride,
                        int32_t srcBlkStride, int32_t srcRepStride, ReduceOrder order) {
  using namespace ascend_model;
  const ReduceOperands operands = CheckedReduceOperands(api, site, src, repeatTime, dstRepStride, srcBlkStride,
                                                    srcRepStride);
  const Operand &s = operands.src;
  const uint64_t dRep = operands.dstRepStride;
  const uint64_t e = sizeof(T);
  const Span d = dst.ModelSpan();
  ops::RequireSpace(api, site, d, Space::kUB, "dst");
  const bool pair = order == ReduceOrder::ORDER_VALUE_INDEX || order == ReduceOrder::ORDER_INDEX_VALUE;
  const uint64_t unit = kind == Reduction::kSum ? e : (pair ? 2 * e : (order == ReduceOrder::ORDER_ONLY_VALUE ? e : 4));
  ops::RequireAlign(api, site, d, unit, "dst");
  if (plan.Empty()) return;  // documented NOP (Counter mode: a count of 0)
  CheckLaterRepeats(api, site, [&](uint64_t r) {
    return std::vector<std::pair<const uint8_t *, uint64_t>>{{d.host + r * dRep * unit, unit}};
  }, s, plan, false);
  ReportReads(api, site, s, plan);
  ops::RangeSet writes(d, Pipe::kV, Access::kWrite, api, site);
  for (uint64_t r = 0; r < plan.repeats; ++r) writes.Add(r * dRep * unit, unit);
  writes.Report();
  uint8_t out[8];
  for (uint64_t r = 0; r < plan.repeats; ++r) {
    const LaneMask mask = plan.Of(r);
    if (kind == Reduction::kSum) {
      std::vector<double> v(plan.lanes, 0.0);
      for (uint64_t l = 0; l < plan.lanes; ++l) {
        if (mask.Enabled(l)) v[l] = LoadReal<T>(s.span.host + s.Offset(r, l));
      }
      StoreReal<T>(out, TreeSum<T>(v));
    } else {
      uint64_t lane = 0;
      double best = 0;
      BestLane<T>(s, r, mask, 0, plan.lanes, kind, &lane, &best);
      uint8_t value[4], index[4];
      std::memcpy(value, s.span.host + s.Offset(r, lane), e);  // the element itself (NaN payload kept)
      const uint32_t idx = static_cast<uint32_t>(lane);
      std::memcpy(index, &idx, 4);  // little-endian: the low bytes are the T-sized index
      switch (order) {
        case ReduceOrder::ORDER_VALUE_INDEX:
          std::memcpy(out, value, e);
          std::memcpy(out + e, index, e);
          break;
        case ReduceOrder::ORDER_INDEX_VALUE:
          std::memcpy(out, index, e);
          std::memcpy(out + e, value, e);
          break;
        case ReduceOrder::ORDER_ONLY_VALUE:
          std::memcpy(out, value, e);
          break;
        case ReduceOrder::ORDER_ONLY_INDEX:
          std::memcpy(out, index, 4);
          break;
      }
    }
    std::memcpy(d.host + r * dRep * unit, out, unit);
  }
  CountVectorRepeats(plan.repeats, VectorOp(api, sizeof(T)));
}

// ---- BlockReduceMax / Min / Sum, PairReduceSum -----------------------------------------------------------
// `group` lanes reduce to one result: 32 bytes' worth (BlockReduce) or 2 (PairReduceSum); results of a
// repeat are contiguous, repeats dstRepStride * `repUnitBytes` apart.
template <typename T>
inline void GroupReduce(const char *api, const Site &site, Reduction kind, const LocalTensor<T> &dst,
                        const LocalTensor<T> &src, const MaskPlan &plan, int32_t repeatTime, int32_t dstRepStride,
                        int32_t srcBlkStride, int32_t srcRepStride, uint64_t group, uint64_t repUnitBytes,
                        uint64_t dstAlign) {
  using namespace ascend_model;
  const ReduceOperands operands = CheckedReduceOperands(api, site, src, repeatTime, dstRepStride, srcBlkStride,
                                                    srcRepStride);
  const Operand &s = operands.src;
  const uint64_t dRep = operands.dstRepStride;
  const uint64_t e = sizeof(T);
  const Span d = dst.ModelSpan();
  RequireUb(api, site, d, "dst", dstAlign);
  if (plan.Empty()) return;  // documented NOP (Counter mode: a count of 0)
  const uint64_t groups = plan.lanes / group;
  CheckLaterRepeats(api, site, [&](uint64_t r) {
    return std::vector<std::pair<const uint8_t *, uint64_t>>{{d.host + r * dRep * repUnitBytes, groups * e}};
  }, s, plan, false);
  ReportReads(api, site, s, plan);
  ops::RangeSet writes(d, Pipe::kV, Access::kWrite, api, site);
  for (uint64_t r = 0; r < plan.repeats; ++r) {
    const LaneMask mask = plan.Of(r);
    for (uint64_t g = 0; g < groups; ++g) {
      bool any = false;
      for (uint64_t l = g * group; l < (g + 1) * group; ++l) any = any || mask.Enabled(l);
      if (any) writes.Add(r * dRep * repUnitBytes + g * e, e);
    }
  }
  writes.Report();
  for (uint64_t r = 0; r < plan.repeats; ++r) {
    const LaneMask mask = plan.Of(r);
    for (uint64_t g = 0; g < groups; ++g) {
      uint8_t *out = d.host + r * dRep * repUnitBytes + g * e;
      if (kind == Reduction::kSum) {
        std::vector<double> v(group, 0.0);
        bool any = false;
        for (uint64_t i = 0; i < group; ++i) {
          if (!mask.Enabled(g * group + i)) continue;
          v[i] = LoadReal<T>(s.span.host + s.Offset(r, g * group + i));
          any = true;
        }
        if (any) StoreReal<T>(out, TreeSum<T>(v));
      } else {
        uint64_t lane = 0;
        double best = 0;
        if (BestLane<T>(s, r, mask, g * group, (g + 1) * group, kind, &lane, &best)) {
          std::memcpy(out, s.span.host + s.Offset(r, lane), e);
        }
      }
    }
  }
  CountVectorRepeats(plan.repeats, VectorOp(api, sizeof(T)));
}

// ---- ReduceMax / ReduceMin / ReduceSum ---------------------------------------------------------------------
inline uint64_t DivCeil(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

// The sharedTmpBuffer elements ReduceMax / ReduceMin need (ReduceMax.md 关键特性说明).
inline uint64_t MaxMinTmpElements(uint64_t firstMaxRepeat, uint64_t elemBytes, bool calIndex) {
  const uint64_t perBlock = kBlockBytes / elemBytes, perRepeat = kRepeatBytes / elemBytes;
  const uint64_t iter1OutputCount = firstMaxRepeat * 2;
  if (!calIndex) return DivCeil(iter1OutputCount, perBlock) * perBlock;
  const uint64_t iter2AlignStart = DivCeil(iter1OutputCount, perBlock) * perBlock;
  const uint64_t iter2OutputCount = DivCeil(iter1OutputCount, perRepeat) * 2;
  const uint64_t iter2AlignEnd = DivCeil(iter2OutputCount, perBlock) * perBlock;
  uint64_t need = iter2AlignStart + iter2AlignEnd;
  if (iter2OutputCount > 2) {
    const uint64_t iter3AlignStart = iter2AlignEnd;
    const uint64_t iter3OutputCount = DivCeil(iter2OutputCount, perRepeat) * 2;
    const uint64_t iter3AlignEnd = DivCeil(iter3OutputCount, perBlock) * perBlock;
    need = iter2AlignStart + iter3AlignStart + iter3AlignEnd;
  }
  return need;
}

// Checks and reports the sharedTmpBuffer: `need` elements of T, written.
template <typename T>
inline Span TmpBuffer(const char *api, const Site &site, const LocalTensor<T> &tmp, uint64_t need) {
  using namespace ascend_model;
  const Span t = tmp.ModelSpan();
  RequireUb(api, site, t, "sharedTmpBuffer", kBlockBytes);
  if (t.bytes < need * sizeof(T)) {
    Fail(api, site, "sharedTmpBuffer ('" + std::string(t.buffer) + "') has " + Num(t.bytes) + " bytes from its start; " +
                        api + " needs " + Num(need * sizeof(T)) + " (" + Num(need) + " elements, the documented size)");
  }
  return t;
}

template <typename T>
inline void ReduceAll(const char *api, const Site &site, Reduction kind, const LocalTensor<T> &dst,
                      const LocalTensor<T> &src, const LocalTensor<T> &tmp, const MaskPlan &plan, uint64_t srcRep,
                      bool countForm, bool calIndex) {
  using namespace ascend_model;
  RequireHalfOrFloat<T>(api, site);
  const uint64_t e = sizeof(T);
  const Operand s{"src", src.ModelSpan(), 1, srcRep, e};
  const Span d = dst.ModelSpan();
  RequireUb(api, site, s.span, "src", kBlockBytes);
  ops::RequireSpace(api, site, d, Space::kUB, "dst");
  const uint64_t dstElems = kind != Reduction::kSum && calIndex ? 2 : 1;
  ops::RequireAlign(api, site, d, dstElems * e, "dst");
  if (plan.Empty()) return;  // documented NOP
  if (!countForm) RequireNormal(api, site, plan);
  // sharedTmpBuffer: none for ReduceSum's count form (方式一), else the documented size.
  const uint64_t firstMaxRepeat =
      countForm ? std::max<uint64_t>(1, plan.count / plan.lanes) : plan.repeats;
  uint64_t need = 0;
  if (kind != Reduction::kSum) {
    need = MaxMinTmpElements(firstMaxRepeat, e, calIndex);
  } else if (!countForm) {
    need = DivCeil(firstMaxRepeat, kBlockBytes / e) * (kBlockBytes / e);
  }
  Span t{};
  if (need > 0) t = TmpBuffer(api, site, tmp, need);
  // The results, from src, before anything is written (tmp and dst may overlap src).
  std::vector<double> perRepeat(plan.repeats);
  std::vector<uint64_t> bestLane(plan.repeats, 0);
  std::vector<bool> found(plan.repeats, false);
  for (uint64_t r = 0; r < plan.repeats; ++r) {
    const LaneMask mask = plan.Of(r);
    if (kind == Reduction::kSum) {
      std::vector<double> v(plan.lanes, 0.0);
      for (uint64_t l = 0; l < plan.lanes; ++l) {
        if (mask.Enabled(l)) v[l] = LoadReal<T>(s.span.host + s.Offset(r, l));
      }
      perRepeat[r] = TreeSum<T>(v);
      found[r] = true;
    } else {
      double best = 0;
      uint64_t lane = 0;
      found[r] = BestLane<T>(s, r, mask, 0, plan.lanes, kind, &lane, &best);
      perRepeat[r] = best;
      bestLane[r] = lane;
    }
  }
  double value = 0;
  uint64_t at = 0;  // the repeat holding the result (Max / Min)
  if (kind == Reduction::kSum) {
    if (countForm) {  // 方式一: the repeats' sums in order
      value = perRepeat[0];
      for (uint64_t r = 1; r < plan.repeats; ++r) value = RoundedSum<T>(value, perRepeat[r]);
    } else {  // 方式二: trees of `lanes` repeat sums until one is left
      std::vector<double> level = perRepeat;
      while (level.size() > 1) {
        std::vector<double> next;
        for (size_t c = 0; c < level.size(); c += plan.lanes) {
          std::vector<double> chunk(plan.lanes, 0.0);
          for (size_t i = c; i < level.size() && i < c + plan.lanes; ++i) chunk[i - c] = level[i];
          next.push_back(TreeSum<T>(chunk));
        }
        level.swap(next);
      }
      value = level[0];
    }
  } else {
    bool any = false;
    for (uint64_t r = 0; r < plan.repeats; ++r) {
      if (!found[r]) continue;
      const double v = perRepeat[r];
      const bool better = kind == Reduction::kMax ? v > value : v < value;
      if (!any || (!std::isnan(value) && (std::isnan(v) || better))) {
        value = v;
        at = r;
        any = true;
      }
    }
    if (!any) Fail(api, site, "no element is enabled: the result is undefined");
  }
  const uint64_t index = at * plan.lanes + bestLane[at];
  if (kind != Reduction::kSum && calIndex && e == 2 && index > 65535) {
    Fail(api, site, "the index " + Num(index) + " exceeds 65535, the largest a half result can hold (documented)");
  }
  // Report: reads of src, writes of tmp and dst.
  ReportReads(api, site, s, plan);
  if (need > 0) {
    ops::RangeSet tw(t, Pipe::kV, Access::kWrite, api, site);
    tw.Add(0, need * e);
    tw.Report();
  }
  ops::RangeSet dw(d, Pipe::kV, Access::kWrite, api, site);
  dw.Add(0, dstElems * e);
  dw.Report();
  uint8_t out[8];
  if (kind == Reduction::kSum) {
    StoreReal<T>(out, value);
  } else {
    std::memcpy(out, s.span.host + s.Offset(at, bestLane[at]), e);
  }
  if (need > 0) {  // the first round's results (Max / Min: [value, index] pairs; Sum: the repeat sums)
    const uint64_t per = kind == Reduction::kSum ? 1 : 2;
    for (uint64_t r = 0; r < plan.repeats && per * r + per <= need; ++r) {
      uint8_t *p = t.host + per * r * e;
      if (kind == Reduction::kSum) {
        StoreReal<T>(p, perRepeat[r]);
      } else if (found[r]) {
        std::memcpy(p, s.span.host + s.Offset(r, bestLane[r]), e);
        const uint32_t lane = static_cast<uint32_t>(bestLane[r]);
        std::memcpy(p + e, &lane, e);
      }
    }
  }
  if (dstElems == 2) {
    const uint32_t idx = static_cast<uint32_t>(index);
    std::memcpy(out + e, &idx, e);  // the index in the bits of T (uint16_t / uint32_t)
  }
  std::memcpy(d.host, out, dstElems * e);
  CountVectorRepeats(plan.repeats, VectorOp(api, sizeof(T)));
}

}  // namespace model_vec

// ---- WholeReduceMax / WholeReduceMin / WholeReduceSum -----------------------------------------------------
#define ASCEND_MODEL_WHOLE_REDUCE(NAME, KIND)                                                                      \
  template <typename T, bool isSetMask = true>                                                                    \
  inline void NAME(const LocalTensor<T> &dst, const LocalTensor<T> &src, const uint64_t mask[],                   \
                   const int32_t repeatTime, const int32_t dstRepStride, const int32_t srcBlkStride,              \
                   const int32_t srcRepStride, ReduceOrder order = ReduceOrder::ORDER_VALUE_INDEX,                \
                   const ascend_model::Site &site = ascend_model::Site()) {                                       \
    model_vec::WholeReduce(#NAME, site, KIND, dst, src,                                                           \
                           model_vec::PlanBits(#NAME, site, isSetMask, mask,                                      \
                                               repeatTime < 0 ? 0 : static_cast<uint64_t>(repeatTime), sizeof(T)), \
                           repeatTime, dstRepStride, srcBlkStride, srcRepStride, order);                          \
  }                                                                                                               \
  template <typename T, bool isSetMask = true>                                                                    \
  inline void NAME(const LocalTensor<T> &dst, const LocalTensor<T> &src, const int32_t mask,                      \
                   const int32_t repeatTime, const int32_t dstRepStride, const int32_t srcBlkStride,              \
                   const int32_t srcRepStride, ReduceOrder order = ReduceOrder::ORDER_VALUE_INDEX,                \
                   const ascend_model::Site &site = ascend_model::Site()) {                                       \
    if (isSetMask && mask < 0) {                                                                                  \
      ascend_model::Fail(#NAME, site, "mask = " + std::to_string(mask) + " must not be negative");                \
    }                                                                                                             \
    model_vec::WholeReduce(#NAME, site, KIND, dst, src,                                                           \
                           model_vec::PlanContinuous(#NAME, site, isSetMask, static_cast<uint64_t>(mask),         \
                                                     repeatTime < 0 ? 0 : static_cast<uint64_t>(repeatTime),      \
                                                     sizeof(T)),                                                  \
                           repeatTime, dstRepStride, srcBlkStride, srcRepStride, order);                          \
  }
ASCEND_MODEL_WHOLE_REDUCE(WholeReduceMax, model_vec::Reduction::kMax)
ASCEND_MODEL_WHOLE_REDUCE(WholeReduceMin, model_vec::Reduction::kMin)
#undef ASCEND_MODEL_WHOLE_REDUCE

template <typename T, bool isSetMask = true>
inline void WholeReduceSum(const LocalTensor<T> &dst, const LocalTensor<T> &src, const uint64_t mask[],
                           const int32_t repeatTime, const int32_t dstRepStride, const int32_t srcBlkStride,
                           const int32_t srcRepStride, const ascend_model::Site &site = ascend_model::Site()) {
  model_vec::WholeReduce(
      "WholeReduceSum", site, model_vec::Reduction::kSum, dst, src,
      model_vec::PlanBits("WholeReduceSum", site, isSetMask, mask,
                          repeatTime < 0 ? 0 : static_cast<uint64_t>(repeatTime), sizeof(T)),
      repeatTime, dstRepStride, srcBlkStride, srcRepStride, ReduceOrder::ORDER_ONLY_VALUE);
}
template <typename T, bool isSetMask = true>
inline void WholeReduceSum(const LocalTensor<T> &dst, const LocalTensor<T> &src, const int32_t mask,
                           const int32_t repeatTime, const int32_t dstRepStride, const int32_t srcBlkStride,
                           const int32_t srcRepStride, const ascend_model::Site &site = ascend_model::Site()) {
  if (isSetMask && mask < 0) {
    ascend_model::Fail("WholeReduceSum", site, "mask = " + std::to_string(mask) + " must not be negative");
  }
  model_vec::WholeReduce(
      "WholeReduceSum", site, model_vec::Reduction::kSum, dst, src,
      model_vec::PlanContinuous("WholeReduceSum", site, isSetMask, static_cast<uint64_t>(mask),
                                repeatTime < 0 ? 0 : static_cast<uint64_t>(repeatTime), sizeof(T)),
      repeatTime, dstRepStride, srcBlkStride, srcRepStride, ReduceOrder::ORDER_ONLY_VALUE);
}

// ---- BlockReduceMax / Min / Sum, PairReduceSum (repeatTime before mask, as CANN declares them) -----------
#define ASCEND_MODEL_GROUP_REDUCE(NAME, KIND, GROUP_BYTES, UNIT_BYTES, ALIGN)                                     \
  template <typename T, bool isSetMask = true>                                                                    \
  inline void NAME(const LocalTensor<T> &dst, const LocalTensor<T> &src, const int32_t repeatTime,                \
                   const int32_t mask, const int32_t dstRepStride, const int32_t srcBlkStride,                    \
                   const int32_t srcRepStride, const ascend_model::Site &site = ascend_model::Site()) {           \
    if (isSetMask && mask < 0) {                                                                                  \
      ascend_model::Fail(#NAME, site, "mask = " + std::to_string(mask) + " must not be negative");                \
    }                                                                                                             \
    model_vec::GroupReduce(#NAME, site, KIND, dst, src,                                                           \
                           model_vec::PlanContinuous(#NAME, site, isSetMask, static_cast<uint64_t>(mask),         \
                                                     repeatTime < 0 ? 0 : static_cast<uint64_t>(repeatTime),      \
                                                     sizeof(T)),                                                  \
                           repeatTime, dstRepStride, srcBlkStride, srcRepStride, (GROUP_BYTES) / sizeof(T),       \
                           UNIT_BYTES, ALIGN);                                                                    \
  }                                                                                                               \
  template <typename T, bool isSetMask = true>                                                                    \
  inline void NAME(const LocalTensor<T> &dst, const LocalTensor<T> &src, const int32_t repeatTime,                \
                   const uint64_t mask[], const int32_t dstRepStride, const int32_t srcBlkStride,                 \
                   const int32_t srcRepStride, const ascend_model::Site &site = ascend_model::Site()) {           \
    model_vec::GroupReduce(#NAME, site, KIND, dst, src,                                                           \
                           model_vec::PlanBits(#NAME, site, isSetMask, mask,                                      \
                                               repeatTime < 0 ? 0 : static_cast<uint64_t>(repeatTime), sizeof(T)), \
                           repeatTime, dstRepStride, srcBlkStride, srcRepStride, (GROUP_BYTES) / sizeof(T),       \
                           UNIT_BYTES, ALIGN);                                                                    \
  }
// BlockReduce: one result per 32-byte block; dstRepStride in units of 8 results; dst aligned to 8 results.
ASCEND_MODEL_GROUP_REDUCE(BlockReduceMax, model_vec::Reduction::kMax, 32, 8 * sizeof(T), 8 * sizeof(T))
ASCEND_MODEL_GROUP_REDUCE(BlockReduceMin, model_vec::Reduction::kMin, 32, 8 * sizeof(T), 8 * sizeof(T))
ASCEND_MODEL_GROUP_REDUCE(BlockReduceSum, model_vec::Reduction::kSum, 32, 8 * sizeof(T), 8 * sizeof(T))
// PairReduceSum: one result per 2 lanes; dstRepStride in units of 128 bytes; dst 32-byte aligned.
ASCEND_MODEL_GROUP_REDUCE(PairReduceSum, model_vec::Reduction::kSum, 2 * sizeof(T), 128, 32)
#undef ASCEND_MODEL_GROUP_REDUCE

// ---- ReduceMax / ReduceMin / ReduceSum --------------------------------------------------------------------
#define ASCEND_MODEL_REDUCE_MAXMIN(NAME, KIND)                                                                     \
  template <typename T>                                                                                           \
  inline void NAME(const LocalTensor<T> &dst, const LocalTensor<T> &src, const LocalTensor<T> &sharedTmpBuffer,   \
                   const int32_t mask, const int32_t repeatTime, const int32_t srcRepStride, bool calIndex = 0,   \
                   const ascend_model::Site &site = ascend_model::Site()) {                                       \
    if (mask < 0) ascend_model::Fail(#NAME, site, "mask = " + std::to_string(mask) + " must not be negative");    \
    if (repeatTime < 0) ascend_model::Fail(#NAME, site, "repeatTime must not be negative");                       \
    const uint64_t rep = model_vec::Param(#NAME, site, "srcRepStride", srcRepStride, 65535);                      \
    model_vec::ReduceAll(#NAME, site, KIND, dst, src, sharedTmpBuffer,                                            \
                         model_vec::PlanContinuous(#NAME, site, true, static_cast<uint64_t>(mask),                \
                                                   static_cast<uint64_t>(repeatTime), sizeof(T)),                 \
                         rep, false, calIndex);                                                                   \
  }                                                                                                               \
  template <typename T>                                                                                           \
  inline void NAME(const LocalTensor<T> &dst, const LocalTensor<T> &src, const LocalTensor<T> &sharedTmpBuffer,   \
                   const uint64_t mask[], const int32_t repeatTime, const int32_t srcRepStride,                   \
                   bool calIndex = 0, const ascend_model::Site &site = ascend_model::Site()) {                    \
    if (repeatTime < 0) ascend_model::Fail(#NAME, site, "repeatTime must not be negative");                       \
    const uint64_t rep = model_vec::Param(#NAME, site, "srcRepStride", srcRepStride, 65535);                      \
    model_vec::ReduceAll(#NAME, site, KIND, dst, src, sharedTmpBuffer,                                            \
                         model_vec::PlanBits(#NAME, site, true, mask, static_cast<uint64_t>(repeatTime),          \
                                             sizeof(T)),                                                          \
                         rep, false, calIndex);                                                                   \
  }                                                                                                               \
  template <typename T>                                                                                           \
  inline void NAME(const LocalTensor<T> &dst, const LocalTensor<T> &src, const LocalTensor<T> &sharedTmpBuffer,   \
                   const int32_t count, bool calIndex = 0, const ascend_model::Site &site = ascend_model::Site()) { \
    model_vec::ReduceAll(#NAME, site, KIND, dst, src, sharedTmpBuffer,                                            \
                         model_vec::PlanCount(#NAME, site, true, count, sizeof(T)), 8, true, calIndex);           \
  }
ASCEND_MODEL_REDUCE_MAXMIN(ReduceMax, model_vec::Reduction::kMax)
ASCEND_MODEL_REDUCE_MAXMIN(ReduceMin, model_vec::Reduction::kMin)
#undef ASCEND_MODEL_REDUCE_MAXMIN

template <typename T>
inline void ReduceSum(const LocalTensor<T> &dst, const LocalTensor<T> &src, const LocalTensor<T> &sharedTmpBuffer,
                      const int32_t mask, const int32_t repeatTime, const int32_t srcRepStride,
                      const ascend_model::Site &site = ascend_model::Site()) {
  if (mask < 0) ascend_model::Fail("ReduceSum", site, "mask = " + std::to_string(mask) + " must not be negative");
  if (repeatTime < 0) ascend_model::Fail("ReduceSum", site, "repeatTime must not be negative");
  const uint64_t rep = model_vec::Param("ReduceSum", site, "srcRepStride", srcRepStride, 65535);
  model_vec::ReduceAll("ReduceSum", site, model_vec::Reduction::kSum, dst, src, sharedTmpBuffer,
                       model_vec::PlanContinuous("ReduceSum", site, true, static_cast<uint64_t>(mask),
                                                 static_cast<uint64_t>(repeatTime), sizeof(T)),
                       rep, false, false);
}
template <typename T>
inline void ReduceSum(const LocalTensor<T> &dst, const LocalTensor<T> &src, const LocalTensor<T> &sharedTmpBuffer,
                      const uint64_t mask[], const int32_t repeatTime, const int32_t srcRepStride,
                      const ascend_model::Site &site = ascend_model::Site()) {
  if (repeatTime < 0) ascend_model::Fail("ReduceSum", site, "repeatTime must not be negative");
  const uint64_t rep = model_vec::Param("ReduceSum", site, "srcRepStride", srcRepStride, 65535);
  model_vec::ReduceAll("ReduceSum", site, model_vec::Reduction::kSum, dst, src, sharedTmpBuffer,
                       model_vec::PlanBits("ReduceSum", site, true, mask, static_cast<uint64_t>(repeatTime),
                                           sizeof(T)),
                       rep, false, false);
}
template <typename T, bool isSetMask = true>
inline void ReduceSum(const LocalTensor<T> &dst, const LocalTensor<T> &src, const LocalTensor<T> &sharedTmpBuffer,
                      const int32_t count, const ascend_model::Site &site = ascend_model::Site()) {
  model_vec::ReduceAll("ReduceSum", site, model_vec::Reduction::kSum, dst, src, sharedTmpBuffer,
                       model_vec::PlanCount("ReduceSum", site, isSetMask, count, sizeof(T)), 8, true, false);
}

// ---- the 9.1.0 names: ReduceRepeat / ReduceDataBlock / ReducePairElem ------------------------------------
enum class ReduceType {
  NONE = -1,
  SUM = 0,
  MAX,
  MIN,
};

namespace model_vec {
inline Reduction ReductionOf(const char *api, const Site &site, ReduceType t, bool sumOnly) {
  switch (t) {
    case ReduceType::SUM: return Reduction::kSum;
    case ReduceType::MAX:
      if (!sumOnly) return Reduction::kMax;
      break;
    case ReduceType::MIN:
      if (!sumOnly) return Reduction::kMin;
      break;
    default: break;
  }
  Fail(api, site, std::string("reduceType ") + std::to_string(static_cast<int>(t)) + " is not supported (" +
                      (sumOnly ? "only ReduceType::SUM" : "ReduceType::SUM, MAX or MIN") + ")");
  return Reduction::kSum;
}
// On A2/A3 dst and src have the same type (ReduceRepeat.md, ReduceDataBlock.md, ReducePairElem.md).
template <typename T, typename U>
inline void RequireSameType(const char *api, const Site &site) {
  if (!std::is_same<T, U>::value) {
    Fail(api, site, std::string("dst (") + TypeName<T>() + ") and src (" + TypeName<U>() +
                        ") must have the same type on A2/A3");
  }
}
inline uint64_t Repeats(int32_t repeatTime) { return repeatTime < 0 ? 0 : static_cast<uint64_t>(repeatTime); }
}  // namespace model_vec

template <ReduceType reduceType, typename T, typename U, bool isSetMask = true>
inline void ReduceRepeat(const LocalTensor<T> &dst, const LocalTensor<U> &src, const int32_t mask,
                         const int32_t repeatTime, const int32_t dstRepStride, const int32_t srcBlkStride,
                         const int32_t srcRepStride, ReduceOrder order = ReduceOrder::ORDER_VALUE_INDEX,
                         const ascend_model::Site &site = ascend_model::Site()) {
  const char *api = "ReduceRepeat";
  model_vec::RequireSameType<T, U>(api, site);
  if constexpr (std::is_same<T, U>::value) {
    const model_vec::Reduction kind = model_vec::ReductionOf(api, site, reduceType, false);
    if (isSetMask && mask < 0) ascend_model::Fail(api, site, "mask = " + std::to_string(mask) + " must not be negative");
    model_vec::WholeReduce(api, site, kind, dst, src,
                           model_vec::PlanContinuous(api, site, isSetMask, static_cast<uint64_t>(mask),
                                                     model_vec::Repeats(repeatTime), sizeof(T)),
                           repeatTime, dstRepStride, srcBlkStride, srcRepStride,
                           kind == model_vec::Reduction::kSum ? ReduceOrder::ORDER_ONLY_VALUE : order);
  }
}
template <ReduceType reduceType, typename T, typename U, bool isSetMask = true>
inline void ReduceRepeat(const LocalTensor<T> &dst, const LocalTensor<U> &src, const uint64_t mask[],
                         const int32_t repeatTime, const int32_t dstRepStride, const int32_t srcBlkStride,
                         const int32_t srcRepStride, ReduceOrder order = ReduceOrder::ORDER_VALUE_INDEX,
                         const ascend_model::Site &site = ascend_model::Site()) {
  const char *api = "ReduceRepeat";
  model_vec::RequireSameType<T, U>(api, site);
  if constexpr (std::is_same<T, U>::value) {
    const model_vec::Reduction kind = model_vec::ReductionOf(api, site, reduceType, false);
    model_vec::WholeReduce(api, site, kind, dst, src,
                           model_vec::PlanBits(api, site, isSetMask, mask, model_vec::Repeats(repeatTime), sizeof(T)),
                           repeatTime, dstRepStride, srcBlkStride, srcRepStride,
                           kind == model_vec::Reduction::kSum ? ReduceOrder::ORDER_ONLY_VALUE : order);
  }
}

// ReduceDataBlock: one result per 32-byte block (BlockReduce*); ReducePairElem: per lane pair (PairReduceSum).
#define ASCEND_MODEL_REDUCE_GROUP(NAME, SUM_ONLY, GROUP_BYTES, UNIT_BYTES, ALIGN)                                 \
  template <ReduceType reduceType, typename T, typename U, bool isSetMask = true>                                 \
  inline void NAME(const LocalTensor<T> &dst, const LocalTensor<U> &src, const int32_t mask,                      \
                   const int32_t repeatTime, const int32_t dstRepStride, const int32_t srcBlkStride,              \
                   const int32_t srcRepStride, const ascend_model::Site &site = ascend_model::Site()) {           \
    model_vec::RequireSameType<T, U>(#NAME, site);                                                                \
    if constexpr (std::is_same<T, U>::value) {                                                                    \
      const model_vec::Reduction kind = model_vec::ReductionOf(#NAME, site, reduceType, SUM_ONLY);                \
      if (isSetMask && mask < 0) {                                                                                \
        ascend_model::Fail(#NAME, site, "mask = " + std::to_string(mask) + " must not be negative");              \
      }                                                                                                           \
      model_vec::GroupReduce(#NAME, site, kind, dst, src,                                                         \
                             model_vec::PlanContinuous(#NAME, site, isSetMask, static_cast<uint64_t>(mask),       \
                                                       model_vec::Repeats(repeatTime), sizeof(T)),                \
                             repeatTime, dstRepStride, srcBlkStride, srcRepStride, (GROUP_BYTES) / sizeof(T),     \
                             UNIT_BYTES, ALIGN);                                                                  \
    }                                                                                                             \
  }                                                                                                               \
  template <ReduceType reduceType, typename T, typename U, bool isSetMask = true>                                 \
  inline void NAME(const LocalTensor<T> &dst, const LocalTensor<U> &src, const uint64_t mask[],                   \
                   const int32_t repeatTime, const int32_t dstRepStride, const int32_t srcBlkStride,              \
                   const int32_t srcRepStride, const ascend_model::Site &site = ascend_model::Site()) {           \
    model_vec::RequireSameType<T, U>(#NAME, site);                                                                \
    if constexpr (std::is_same<T, U>::value) {                                                                    \
      const model_vec::Reduction kind = model_vec::ReductionOf(#NAME, site, reduceType, SUM_ONLY);                \
      model_vec::GroupReduce(#NAME, site, kind, dst, src,                                                         \
                             model_vec::PlanBits(#NAME, site, isSetMask, mask, model_vec::Repeats(repeatTime),    \
                                                 sizeof(T)),                                                      \
                             repeatTime, dstRepStride, srcBlkStride, srcRepStride, (GROUP_BYTES) / sizeof(T),     \
                             UNIT_BYTES, ALIGN);                                                                  \
    }                                                                                                             \
  }
ASCEND_MODEL_REDUCE_GROUP(ReduceDataBlock, false, 32, 8 * sizeof(T), 8 * sizeof(T))
ASCEND_MODEL_REDUCE_GROUP(ReducePairElem, true, 2 * sizeof(T), 128, 32)
#undef ASCEND_MODEL_REDUCE_GROUP

}  // namespace AscendC

#endif  // ASCEND_MODEL_OPS_VECTOR_REDUCE_H
