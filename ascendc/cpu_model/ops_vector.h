// Modelled AscendC vector instructions for Atlas A2/A3 (__NPU_ARCH__ 2201): Mul, Max, Duplicate,
// WholeReduceMax, Gather and Cast, all on pipe V over UB operands. Declarations as in CANN's
// kernel_operator_vec_*_intf.h (WholeReduceMax as in kernel_operator_vec_reduce_intf_impl.h), each
// with a trailing defaulted ascend_model::Site. Only the overloads the kernel needs are declared.
//
// Semantics from CANN's "high-dimensional split" (高维切分), "mask" (掩码) and per-API documents:
// one repeat is 8 data blocks of 32 bytes; block and repeat strides count 32-byte blocks; a
// continuous mask enables the first n lanes of each repeat (clamped to the lanes of a repeat), a
// bit mask enables lane i when bit i is set (mask[1] must be 0 for 32-bit types). Bytes of a
// masked-off lane are neither read nor written. The count overloads ("first n elements") work on n
// contiguous elements. repeatTime / count 0 and an empty mask are NOPs, as documented for A2/A3.
// Max with a NaN operand returns NaN (an assumption: the documents do not say).
#ifndef ASCEND_MODEL_OPS_VECTOR_H
#define ASCEND_MODEL_OPS_VECTOR_H

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "model_hooks.h"
#include "ops_common.h"

namespace AscendC {

const int32_t DEFAULT_BLK_NUM = 8;
const int32_t DEFAULT_BLK_STRIDE = 1;
const uint8_t DEFAULT_REPEAT_STRIDE = 8;

struct BinaryRepeatParams {
  BinaryRepeatParams() {}
  BinaryRepeatParams(const uint8_t dstBlkStrideIn, const uint8_t src0BlkStrideIn, const uint8_t src1BlkStrideIn,
                     const uint8_t dstRepStrideIn, const uint8_t src0RepStrideIn, const uint8_t src1RepStrideIn)
      : dstBlkStride(dstBlkStrideIn),
        src0BlkStride(src0BlkStrideIn),
        src1BlkStride(src1BlkStrideIn),
        dstRepStride(dstRepStrideIn),
        src0RepStride(src0RepStrideIn),
        src1RepStride(src1RepStrideIn) {}
  uint32_t blockNumber = DEFAULT_BLK_NUM;
  uint8_t dstBlkStride = DEFAULT_BLK_STRIDE;
  uint8_t src0BlkStride = DEFAULT_BLK_STRIDE;
  uint8_t src1BlkStride = DEFAULT_BLK_STRIDE;
  uint8_t dstRepStride = DEFAULT_REPEAT_STRIDE;
  uint8_t src0RepStride = DEFAULT_REPEAT_STRIDE;
  uint8_t src1RepStride = DEFAULT_REPEAT_STRIDE;
  bool repeatStrideMode = false;
  bool strideSizeMode = false;
};

enum class RoundMode : uint8_t {
  CAST_NONE = 0,
  CAST_RINT,
  CAST_FLOOR,
  CAST_CEIL,
  CAST_ROUND,
  CAST_TRUNC,
  CAST_ODD,
  UNKNOWN = 0xFF,
};

enum class ReduceOrder : uint8_t {
  ORDER_VALUE_INDEX = 0,
  ORDER_INDEX_VALUE,
  ORDER_ONLY_VALUE,
  ORDER_ONLY_INDEX,
};

namespace model_detail {

// One strided vector operand: its span and its block / repeat strides (in 32-byte blocks).
struct VecOperand {
  ascend_model::Span span;
  uint64_t blk;
  uint64_t rep;
};

inline void RequireUbOperand(const char *api, const ascend_model::Site &site, const ascend_model::Span &s,
                             const char *what) {
  ascend_model::ops::RequireSpace(api, site, s, ascend_model::Space::kUB, what);
  ascend_model::ops::RequireAlign(api, site, s, ascend_model::ops::kBlockBytes, what);
}

// Adds the bytes of the enabled lanes of `repeats` repeats of `op` to `set`, a whole block at a
// time where all its lanes are enabled.
inline void AddLanes(ascend_model::ops::RangeSet &set, const VecOperand &op, const ascend_model::ops::LaneMask &mask,
                     uint64_t repeats, uint64_t elemBytes) {
  using namespace ascend_model::ops;
  const uint64_t perBlock = kBlockBytes / elemBytes;
  for (uint64_t r = 0; r < repeats; ++r) {
    for (uint64_t b = 0; b < kBlocksPerRepeat; ++b) {
      bool all = true;
      for (uint64_t e = 0; e < perBlock; ++e) all = all && mask.Enabled(b * perBlock + e);
      if (all) {
        set.Add((r * op.rep + b * op.blk) * kBlockBytes, kBlockBytes);
        continue;
      }
      for (uint64_t e = 0; e < perBlock; ++e) {
        const uint64_t lane = b * perBlock + e;
        if (mask.Enabled(lane)) set.Add(LaneOffset(r, lane, elemBytes, op.blk, op.rep), elemBytes);
      }
    }
  }
}

inline void RequireMaskRegister(const char *api, const ascend_model::Site &site, bool isSetMask) {
  if (!isSetMask) ascend_model::Fail(api, site, "isSetMask = false (a mask set by SetVectorMask) is not modelled");
}

// dst = op(src0, src1) lane by lane over `repeats` repeats (Mul, Max).
template <typename T, typename Op>
inline void BinaryVector(const char *api, const ascend_model::Site &site, const LocalTensor<T> &dst,
                         const LocalTensor<T> &src0, const LocalTensor<T> &src1,
                         const ascend_model::ops::LaneMask &mask,
                         uint64_t repeats, const BinaryRepeatParams &rp, Op op) {
  using namespace ascend_model;
  using namespace ascend_model::ops;
  constexpr Kind k = KindOf<T>();
  if (k != Kind::kF32 && k != Kind::kF16) {
    Fail(api, site, std::string("the model supports float and half, not ") + KindName(k));
  }
  const VecOperand d{dst.ModelSpan(), rp.dstBlkStride, rp.dstRepStride};
  const VecOperand a{src0.ModelSpan(), rp.src0BlkStride, rp.src0RepStride};
  const VecOperand b{src1.ModelSpan(), rp.src1BlkStride, rp.src1RepStride};
  RequireUbOperand(api, site, d.span, "dst");
  RequireUbOperand(api, site, a.span, "src0");
  RequireUbOperand(api, site, b.span, "src1");
  if (repeats == 0 || mask.Empty()) return;  // documented NOP
  if (d.blk == 0) Fail(api, site, "dstBlkStride must not be 0 (undefined on hardware)");
  const uint64_t e = sizeof(T);
  CheckRepeatOverlap(api, site, d.span.host, a.span.host, "src0", repeats, d.blk, d.rep, a.blk, a.rep);
  CheckRepeatOverlap(api, site, d.span.host, b.span.host, "src1", repeats, d.blk, d.rep, b.blk, b.rep);
  CheckCrossRepeatOverlap(api, site, d.span.host, a.span.host, "src0", repeats, d.blk, d.rep, a.blk, a.rep, false);
  // Documented for Mul / Max (and the other binary arithmetic) on half / float: dst may feed src1
  // of later repeats when src1RepStride or dstRepStride is 0.
  CheckCrossRepeatOverlap(api, site, d.span.host, b.span.host, "src1", repeats, d.blk, d.rep, b.blk, b.rep,
                          b.rep == 0 || d.rep == 0);
  RangeSet r0(a.span, Pipe::kV, Access::kRead, api, site);
  RangeSet r1(b.span, Pipe::kV, Access::kRead, api, site);
  RangeSet w(d.span, Pipe::kV, Access::kWrite, api, site);
  AddLanes(r0, a, mask, repeats, e);
  AddLanes(r1, b, mask, repeats, e);
  AddLanes(w, d, mask, repeats, e);
  r0.Report();
  r1.Report();
  w.Report();
  const uint64_t lanes = kRepeatBytes / e;
  for (uint64_t r = 0; r < repeats; ++r) {
    for (uint64_t lane = 0; lane < lanes; ++lane) {
      if (!mask.Enabled(lane)) continue;
      const float x = LoadFloat<T>(a.span.host + LaneOffset(r, lane, e, a.blk, a.rep));
      const float y = LoadFloat<T>(b.span.host + LaneOffset(r, lane, e, b.blk, b.rep));
      StoreFloat<T>(d.span.host + LaneOffset(r, lane, e, d.blk, d.rep), op(x, y), Rounding::kRint);
    }
  }
  CountVectorRepeats(repeats);
}

// The count overloads: `count` contiguous elements, as full repeats plus a partial last one.
template <typename T, typename Op>
inline void BinaryVectorCount(const char *api, const ascend_model::Site &site, const LocalTensor<T> &dst,
                              const LocalTensor<T> &src0, const LocalTensor<T> &src1, int32_t count, Op op) {
  using namespace ascend_model::ops;
  if (count < 0) ascend_model::Fail(api, site, "count = " + std::to_string(count) + " must not be negative");
  const uint64_t lanes = kRepeatBytes / sizeof(T);
  const uint64_t n = static_cast<uint64_t>(count);
  if (n / lanes > 0) {
    BinaryVector(api, site, dst, src0, src1, ContinuousMask(lanes, lanes), n / lanes, BinaryRepeatParams(), op);
  }
  if (n % lanes > 0) {
    const uint64_t done = n / lanes * lanes;
    BinaryVector(api, site, dst[done], src0[done], src1[done], ContinuousMask(n % lanes, lanes), 1,
                 BinaryRepeatParams(), op);
  }
}

inline float MulOp(float x, float y) { return x * y; }
inline float MaxOp(float x, float y) { return ascend_model::ops::MaxPropagatingNaN(x, y); }

}  // namespace model_detail

// ---- Mul / Max -----------------------------------------------------------------------------------
template <typename T, bool isSetMask = true>
inline void Mul(const LocalTensor<T> &dst, const LocalTensor<T> &src0, const LocalTensor<T> &src1, uint64_t mask[],
                const uint8_t repeatTime, const BinaryRepeatParams &repeatParams,
                const ascend_model::Site &site = ascend_model::Site()) {
  model_detail::RequireMaskRegister("Mul", site, isSetMask);
  model_detail::BinaryVector("Mul", site, dst, src0, src1, ascend_model::ops::BitMask("Mul", site, mask, sizeof(T)),
                             repeatTime, repeatParams, model_detail::MulOp);
}
template <typename T, bool isSetMask = true>
inline void Mul(const LocalTensor<T> &dst, const LocalTensor<T> &src0, const LocalTensor<T> &src1, uint64_t mask,
                const uint8_t repeatTime, const BinaryRepeatParams &repeatParams,
                const ascend_model::Site &site = ascend_model::Site()) {
  model_detail::RequireMaskRegister("Mul", site, isSetMask);
  model_detail::BinaryVector("Mul", site, dst, src0, src1,
                             ascend_model::ops::ContinuousMask(mask, ascend_model::ops::kRepeatBytes / sizeof(T)),
                             repeatTime, repeatParams, model_detail::MulOp);
}
template <typename T>
inline void Mul(const LocalTensor<T> &dst, const LocalTensor<T> &src0, const LocalTensor<T> &src1, const int32_t &count,
                const ascend_model::Site &site = ascend_model::Site()) {
  model_detail::BinaryVectorCount("Mul", site, dst, src0, src1, count, model_detail::MulOp);
}

template <typename T, bool isSetMask = true>
inline void Max(const LocalTensor<T> &dst, const LocalTensor<T> &src0, const LocalTensor<T> &src1, uint64_t mask[],
                const uint8_t repeatTime, const BinaryRepeatParams &repeatParams,
                const ascend_model::Site &site = ascend_model::Site()) {
  model_detail::RequireMaskRegister("Max", site, isSetMask);
  model_detail::BinaryVector("Max", site, dst, src0, src1, ascend_model::ops::BitMask("Max", site, mask, sizeof(T)),
                             repeatTime, repeatParams, model_detail::MaxOp);
}
template <typename T, bool isSetMask = true>
inline void Max(const LocalTensor<T> &dst, const LocalTensor<T> &src0, const LocalTensor<T> &src1, uint64_t mask,
                const uint8_t repeatTime, const BinaryRepeatParams &repeatParams,
                const ascend_model::Site &site = ascend_model::Site()) {
  model_detail::RequireMaskRegister("Max", site, isSetMask);
  model_detail::BinaryVector("Max", site, dst, src0, src1,
                             ascend_model::ops::ContinuousMask(mask, ascend_model::ops::kRepeatBytes / sizeof(T)),
                             repeatTime, repeatParams, model_detail::MaxOp);
}
template <typename T>
inline void Max(const LocalTensor<T> &dst, const LocalTensor<T> &src0, const LocalTensor<T> &src1, const int32_t &count,
                const ascend_model::Site &site = ascend_model::Site()) {
  model_detail::BinaryVectorCount("Max", site, dst, src0, src1, count, model_detail::MaxOp);
}

// ---- Duplicate -----------------------------------------------------------------------------------
namespace model_detail {
template <typename T>
inline void DuplicateLanes(const char *api, const ascend_model::Site &site, const LocalTensor<T> &dst,
                           const T &scalarValue, const ascend_model::ops::LaneMask &mask, uint64_t repeats,
                           uint64_t blk, uint64_t rep) {
  using namespace ascend_model;
  using namespace ascend_model::ops;
  static_assert(sizeof(T) == 2 || sizeof(T) == 4, "Duplicate takes 16- or 32-bit elements");
  const VecOperand d{dst.ModelSpan(), blk, rep};
  RequireUbOperand(api, site, d.span, "dst");
  if (repeats == 0 || mask.Empty()) return;  // documented NOP
  if (blk == 0) Fail(api, site, "dstBlockStride must not be 0 (undefined on hardware)");
  const uint64_t e = sizeof(T);
  RangeSet w(d.span, Pipe::kV, Access::kWrite, api, site);
  AddLanes(w, d, mask, repeats, e);
  w.Report();
  const uint64_t lanes = kRepeatBytes / e;
  for (uint64_t r = 0; r < repeats; ++r) {
    for (uint64_t lane = 0; lane < lanes; ++lane) {
      if (mask.Enabled(lane)) std::memcpy(d.span.host + LaneOffset(r, lane, e, blk, rep), &scalarValue, e);
    }
  }
  CountVectorRepeats(repeats);
}
}  // namespace model_detail

template <typename T, bool isSetMask = true>
inline void Duplicate(const LocalTensor<T> &dst, const T &scalarValue, uint64_t mask, const uint8_t repeatTime,
                      const uint16_t dstBlockStride, const uint8_t dstRepeatStride,
                      const ascend_model::Site &site = ascend_model::Site()) {
  model_detail::RequireMaskRegister("Duplicate", site, isSetMask);
  model_detail::DuplicateLanes("Duplicate", site, dst, scalarValue,
                               ascend_model::ops::ContinuousMask(mask, ascend_model::ops::kRepeatBytes / sizeof(T)),
                               repeatTime, dstBlockStride, dstRepeatStride);
}
template <typename T, bool isSetMask = true>
inline void Duplicate(const LocalTensor<T> &dst, const T &scalarValue, uint64_t mask[], const uint8_t repeatTime,
                      const uint16_t dstBlockStride, const uint8_t dstRepeatStride,
                      const ascend_model::Site &site = ascend_model::Site()) {
  model_detail::RequireMaskRegister("Duplicate", site, isSetMask);
  model_detail::DuplicateLanes("Duplicate", site, dst, scalarValue,
                               ascend_model::ops::BitMask("Duplicate", site, mask, sizeof(T)), repeatTime,
                               dstBlockStride, dstRepeatStride);
}
template <typename T>
inline void Duplicate(const LocalTensor<T> &dst, const T &scalarValue, const int32_t &count,
                      const ascend_model::Site &site = ascend_model::Site()) {
  using namespace ascend_model::ops;
  if (count < 0) ascend_model::Fail("Duplicate", site, "count = " + std::to_string(count) + " must not be negative");
  const uint64_t lanes = kRepeatBytes / sizeof(T);
  const uint64_t n = static_cast<uint64_t>(count);
  if (n / lanes > 0) {
    model_detail::DuplicateLanes("Duplicate", site, dst, scalarValue, ContinuousMask(lanes, lanes), n / lanes, 1, 8);
  }
  if (n % lanes > 0) {
    model_detail::DuplicateLanes("Duplicate", site, dst[n / lanes * lanes], scalarValue,
                                 ContinuousMask(n % lanes, lanes),
                                 1, 1, 8);
  }
}

// ---- WholeReduceMax ------------------------------------------------------------------------------
// Per repeat, the maximum of its enabled lanes (and the lane index of its first occurrence) goes
// to dst + repeat * dstRepStride units, the unit depending on `order` (CANN's ReduceRepeat table):
// [value, index] / [index, value] pairs of 2 * sizeof(T), the value alone (sizeof(T)), or the index
// alone (uint32_t). Indices are stored in the bits of T (pairs) or as uint32_t (index only).
namespace model_detail {
template <typename T>
inline void ReduceMaxRepeats(const char *api, const ascend_model::Site &site, const LocalTensor<T> &dst,
                             const LocalTensor<T> &src, const ascend_model::ops::LaneMask &mask, int32_t repeatTime,
                             int32_t dstRepStride, int32_t srcBlkStride, int32_t srcRepStride, ReduceOrder order) {
  using namespace ascend_model;
  using namespace ascend_model::ops;
  constexpr Kind k = KindOf<T>();
  if (k != Kind::kF32 && k != Kind::kF16) {
    Fail(api, site, std::string("the model supports float and half, not ") + KindName(k));
  }
  RequireRange(api, site, "repeatTime", static_cast<uint64_t>(static_cast<int64_t>(repeatTime)), 0, 255);
  RequireRange(api, site, "dstRepStride", static_cast<uint64_t>(static_cast<int64_t>(dstRepStride)), 0, 65535);
  RequireRange(api, site, "srcBlkStride", static_cast<uint64_t>(static_cast<int64_t>(srcBlkStride)), 0, 65535);
  RequireRange(api, site, "srcRepStride", static_cast<uint64_t>(static_cast<int64_t>(srcRepStride)), 0, 65535);
  const uint64_t e = sizeof(T);
  const VecOperand s{src.ModelSpan(), static_cast<uint64_t>(srcBlkStride), static_cast<uint64_t>(srcRepStride)};
  const Span d = dst.ModelSpan();
  RequireUbOperand(api, site, s.span, "src");
  RequireSpace(api, site, d, Space::kUB, "dst");
  const bool pair = order == ReduceOrder::ORDER_VALUE_INDEX || order == ReduceOrder::ORDER_INDEX_VALUE;
  const uint64_t unit = pair ? 2 * e : (order == ReduceOrder::ORDER_ONLY_VALUE ? e : 4);
  RequireAlign(api, site, d, unit, "dst");
  if (repeatTime == 0 || mask.Empty()) return;  // documented NOP
  const uint64_t repeats = static_cast<uint64_t>(repeatTime);
  RangeSet reads(s.span, Pipe::kV, Access::kRead, api, site);
  RangeSet writes(d, Pipe::kV, Access::kWrite, api, site);
  AddLanes(reads, s, mask, repeats, e);
  for (uint64_t r = 0; r < repeats; ++r) writes.Add(r * static_cast<uint64_t>(dstRepStride) * unit, unit);
  reads.Report();
  writes.Report();
  const uint64_t lanes = kRepeatBytes / e;
  std::vector<uint8_t> out(unit);
  for (uint64_t r = 0; r < repeats; ++r) {
    float best = 0.0f;
    uint32_t bestLane = 0;
    bool found = false;
    for (uint64_t lane = 0; lane < lanes; ++lane) {
      if (!mask.Enabled(lane)) continue;
      const float v = LoadFloat<T>(s.span.host + LaneOffset(r, lane, e, s.blk, s.rep));
      if (!found || (!std::isnan(best) && (std::isnan(v) || v > best))) {
        best = v;
        bestLane = static_cast<uint32_t>(lane);
        found = true;
      }
    }
    uint8_t value[4], index[4];
    StoreFloat<T>(value, best, Rounding::kRint);  // exact: best is one of the T inputs
    std::memcpy(index, &bestLane, 4);              // little-endian: the low bytes are the T-sized index
    switch (order) {
      case ReduceOrder::ORDER_VALUE_INDEX:
        std::memcpy(out.data(), value, e);
        std::memcpy(out.data() + e, index, e);
        break;
      case ReduceOrder::ORDER_INDEX_VALUE:
        std::memcpy(out.data(), index, e);
        std::memcpy(out.data() + e, value, e);
        break;
      case ReduceOrder::ORDER_ONLY_VALUE:
        std::memcpy(out.data(), value, e);
        break;
      case ReduceOrder::ORDER_ONLY_INDEX:
        std::memcpy(out.data(), index, 4);
        break;
    }
    std::memcpy(d.host + r * static_cast<uint64_t>(dstRepStride) * unit, out.data(), unit);
  }
  CountVectorRepeats(repeats);
}
}  // namespace model_detail

template <typename T, bool isSetMask = true>
inline void WholeReduceMax(const LocalTensor<T> &dst, const LocalTensor<T> &src, const uint64_t mask[],
                           const int32_t repeatTime, const int32_t dstRepStride, const int32_t srcBlkStride,
                           const int32_t srcRepStride, ReduceOrder order = ReduceOrder::ORDER_VALUE_INDEX,
                           const ascend_model::Site &site = ascend_model::Site()) {
  model_detail::RequireMaskRegister("WholeReduceMax", site, isSetMask);
  model_detail::ReduceMaxRepeats("WholeReduceMax", site, dst, src,
                                 ascend_model::ops::BitMask("WholeReduceMax", site, mask, sizeof(T)), repeatTime,
                                 dstRepStride, srcBlkStride, srcRepStride, order);
}
template <typename T, bool isSetMask = true>
inline void WholeReduceMax(const LocalTensor<T> &dst, const LocalTensor<T> &src, const int32_t mask,
                           const int32_t repeatTime, const int32_t dstRepStride, const int32_t srcBlkStride,
                           const int32_t srcRepStride, ReduceOrder order = ReduceOrder::ORDER_VALUE_INDEX,
                           const ascend_model::Site &site = ascend_model::Site()) {
  model_detail::RequireMaskRegister("WholeReduceMax", site, isSetMask);
  if (mask < 0) ascend_model::Fail("WholeReduceMax", site, "mask = " + std::to_string(mask) + " must not be negative");
  model_detail::ReduceMaxRepeats(
      "WholeReduceMax", site, dst, src,
      ascend_model::ops::ContinuousMask(static_cast<uint64_t>(mask), ascend_model::ops::kRepeatBytes / sizeof(T)),
      repeatTime, dstRepStride, srcBlkStride, srcRepStride, order);
}

// ---- Gather --------------------------------------------------------------------------------------
// dst[i] = the element at byte srcBaseAddr + srcOffset[i] of src, for i < count. src and dst must
// not share memory; offsets must keep elements aligned (both as documented).
template <typename T>
inline void Gather(const LocalTensor<T> &dst, const LocalTensor<T> &src, const LocalTensor<uint32_t> &srcOffset,
                   const uint32_t srcBaseAddr, const uint32_t count,
                   const ascend_model::Site &site = ascend_model::Site()) {
  using namespace ascend_model;
  using namespace ascend_model::ops;
  static_assert(sizeof(T) == 2 || sizeof(T) == 4, "Gather takes 16- or 32-bit elements");
  const char *api = "Gather";
  const Span d = dst.ModelSpan();
  const Span s = src.ModelSpan();
  const Span o = srcOffset.ModelSpan();
  model_detail::RequireUbOperand(api, site, d, "dst");
  model_detail::RequireUbOperand(api, site, s, "src");
  model_detail::RequireUbOperand(api, site, o, "srcOffset");
  if (count == 0) return;  // documented NOP
  const uint64_t e = sizeof(T);
  if (srcBaseAddr % e != 0) Fail(api, site, "srcBaseAddr = " + Num(srcBaseAddr) + " is not element-aligned");
  RangeSet offsets(o, Pipe::kV, Access::kRead, api, site);
  offsets.Add(0, static_cast<uint64_t>(count) * 4);
  offsets.Report();
  std::vector<uint64_t> at(count);
  RangeSet reads(s, Pipe::kV, Access::kRead, api, site);
  for (uint64_t i = 0; i < count; ++i) {
    uint32_t off;
    std::memcpy(&off, o.host + i * 4, 4);
    if (off % e != 0) Fail(api, site, "srcOffset[" + Num(i) + "] = " + Num(off) + " is not element-aligned");
    at[i] = static_cast<uint64_t>(srcBaseAddr) + off;
    reads.Add(at[i], e);
  }
  reads.Normalize();
  RangeSet writes(d, Pipe::kV, Access::kWrite, api, site);
  writes.Add(0, static_cast<uint64_t>(count) * e);
  for (const auto &r : reads.ranges()) {
    if (HostOverlap(s.host + r.first, r.second - r.first, d.host, static_cast<uint64_t>(count) * e)) {
      Fail(api, site, "src and dst share memory (not supported)");
    }
  }
  reads.Report();
  writes.Report();
  for (uint64_t i = 0; i < count; ++i) std::memcpy(d.host + i * e, s.host + at[i], e);
  CountVectorRepeats((static_cast<uint64_t>(count) * e + kRepeatBytes - 1) / kRepeatBytes);
}

// ---- Cast ----------------------------------------------------------------------------------------
// The A2/A3 conversions the model supports, with the rounding modes CANN's Cast table allows for
// them: int8_t -> half, half -> float and bfloat16_t -> float (exact, CAST_NONE), float -> half
// (CAST_NONE = CAST_RINT, RINT, FLOOR, CEIL, ROUND, TRUNC, ODD), float -> bfloat16_t (RINT, FLOOR,
// CEIL, ROUND, TRUNC). Other pairs stop the run as not modelled.
template <typename T, typename U>
inline void Cast(const LocalTensor<T> &dst, const LocalTensor<U> &src, const RoundMode &roundMode, const uint32_t count,
                 const ascend_model::Site &site = ascend_model::Site()) {
  using namespace ascend_model;
  using namespace ascend_model::ops;
  const char *api = "Cast";
  const Span d = dst.ModelSpan();
  const Span s = src.ModelSpan();
  model_detail::RequireUbOperand(api, site, d, "dst");
  model_detail::RequireUbOperand(api, site, s, "src");
  constexpr Kind kd = KindOf<T>(), ks = KindOf<U>();
  const bool exact = (ks == Kind::kI8 && kd == Kind::kF16) || (ks == Kind::kF16 && kd == Kind::kF32) ||
                     (ks == Kind::kBF16 && kd == Kind::kF32);
  const bool toHalf = ks == Kind::kF32 && kd == Kind::kF16;
  const bool toBf16 = ks == Kind::kF32 && kd == Kind::kBF16;
  Rounding rounding = Rounding::kRint;
  bool allowed = false;
  switch (roundMode) {
    case RoundMode::CAST_NONE: allowed = exact || toHalf; break;
    case RoundMode::CAST_RINT: rounding = Rounding::kRint; allowed = toHalf || toBf16; break;
    case RoundMode::CAST_FLOOR: rounding = Rounding::kFloor; allowed = toHalf || toBf16; break;
    case RoundMode::CAST_CEIL: rounding = Rounding::kCeil; allowed = toHalf || toBf16; break;
    case RoundMode::CAST_ROUND: rounding = Rounding::kRound; allowed = toHalf || toBf16; break;
    case RoundMode::CAST_TRUNC: rounding = Rounding::kTrunc; allowed = toHalf || toBf16; break;
    case RoundMode::CAST_ODD: rounding = Rounding::kOdd; allowed = toHalf; break;
    default: break;
  }
  if (!allowed) {
    Fail(api, site, std::string("RoundMode ") + Num(static_cast<uint64_t>(roundMode)) + " from " + KindName(ks) +
                        " to " + KindName(kd) + " is not a supported (or not a modelled) conversion on A2/A3");
  }
  if (count == 0) return;  // documented NOP
  const uint64_t n = count;
  const uint64_t dBytes = n * sizeof(T), sBytes = n * sizeof(U);
  if (HostOverlap(d.host, dBytes, s.host, sBytes) && !(d.host == s.host && sizeof(T) == sizeof(U))) {
    Fail(api, site, "src and dst overlap partially (results undefined)");
  }
  RangeSet reads(s, Pipe::kV, Access::kRead, api, site);
  RangeSet writes(d, Pipe::kV, Access::kWrite, api, site);
  reads.Add(0, sBytes);
  writes.Add(0, dBytes);
  reads.Report();
  writes.Report();
  for (uint64_t i = 0; i < n; ++i) {
    StoreFloat<T>(d.host + i * sizeof(T), LoadFloat<U>(s.host + i * sizeof(U)), rounding);
  }
  const uint64_t wide = sizeof(T) > sizeof(U) ? sizeof(T) : sizeof(U);
  CountVectorRepeats((n * wide + kRepeatBytes - 1) / kRepeatBytes);
}

}  // namespace AscendC

#endif  // ASCEND_MODEL_OPS_VECTOR_H
