// The machinery the modelled AscendC vector instructions share (ops_vector_basic.h, ops_vector_reduce.h,
// ops_vector_cast.h, ops_vector.h), for Atlas A2/A3 (__NPU_ARCH__ 2201):
//  - the parameter structs and enums of CANN's headers (BinaryRepeatParams, UnaryRepeatParams,
//    RoundMode, ReduceOrder, MaskMode, MASK_PLACEHOLDER) and the mask API (SetVectorMask, ResetMask,
//    SetMaskCount, SetMaskNorm: basic_api/kernel_common.h), declared as there, plus the trailing Site;
//  - the mask register of the calling vector core and how an instruction's mask resolves against it;
//  - operand addressing, the address-overlap rules, the byte ranges reported to Touch;
//  - element codecs and IEEE rounding to half / bfloat16 / float in every Cast rounding mode.
//
// Documents followed (asc-devkit docs/zh/api/SIMD-API/):
//  基础API/Memory矢量计算/SIMD计算说明/高维切分.md: a repeat is 8 data blocks of 32 bytes; block and repeat
//    strides count blocks; dstBlkStride 0 is undefined; srcBlkStride 0 re-reads block 0.
//  基础API/Memory矢量计算/SIMD计算说明/掩码.md and 掩码操作/*.md: continuous / bit masks; Normal and Counter
//    mode; isSetMask = false takes the mask set by SetVectorMask; Counter mode with a high-dimension API:
//    the low 64 bits of the mask are the element count and repeatTime is ignored; the "first n" APIs
//    run in Counter mode and then ResetMask + SetMaskNorm.
//  通用说明和约束.md (通用地址重叠约束): within a repeat a source coincides with dst exactly or not at all;
//    a repeat's dst must not be a later repeat's source, except dst -> src1 for Add/Sub/Mul/Max/Min on
//    half/int32_t/float with src1RepStride or dstRepStride 0.
//
// Assumptions where the documents are silent or disagree (each also named where it applies):
//  - The mask register's value at kernel start is unknown, and the model does not let a kernel rely on
//    a mask another API left behind: isSetMask = false needs SetVectorMask or ResetMask after the last
//    API call with isSetMask = true (which overwrites the register), or the run stops.
//  - Floating results follow IEEE inf/NaN (non-saturating; 基础API/Memory矢量计算/归约计算/ReduceDataBlock.md
//    says half defaults to non-saturation, 特殊寄存器访问/SetCtrlSpr(ISASI).md lists CTRL[48] = 0,
//    saturation, as A2's default: the model follows the former and models no SetCtrlSpr /
//    SetSaturationFlag). Integer arithmetic wraps (two's complement), as A2 documents no saturation
//    control for it.
#ifndef ASCEND_MODEL_OPS_VECTOR_COMMON_H
#define ASCEND_MODEL_OPS_VECTOR_COMMON_H

#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>
#include <type_traits>
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

// As in basic_api/kernel_struct_unary.h.
struct UnaryRepeatParams {
  UnaryRepeatParams() {}
  UnaryRepeatParams(const uint16_t dstBlkStrideIn, const uint16_t srcBlkStrideIn, const uint8_t dstRepStrideIn,
                    const uint8_t srcRepStrideIn)
      : dstBlkStride(dstBlkStrideIn),
        srcBlkStride(srcBlkStrideIn),
        dstRepStride(dstRepStrideIn),
        srcRepStride(srcRepStrideIn) {}
  UnaryRepeatParams(const uint16_t dstBlkStrideIn, const uint16_t srcBlkStrideIn, const uint8_t dstRepStrideIn,
                    const uint8_t srcRepStrideIn, const bool halfBlockIn)
      : dstBlkStride(dstBlkStrideIn),
        srcBlkStride(srcBlkStrideIn),
        dstRepStride(dstRepStrideIn),
        srcRepStride(srcRepStrideIn),
        halfBlock(halfBlockIn) {}
  uint32_t blockNumber = DEFAULT_BLK_NUM;
  uint16_t dstBlkStride = DEFAULT_BLK_STRIDE;
  uint16_t srcBlkStride = DEFAULT_BLK_STRIDE;
  uint8_t dstRepStride = DEFAULT_REPEAT_STRIDE;
  uint8_t srcRepStride = DEFAULT_REPEAT_STRIDE;
  bool repeatStrideMode = false;
  bool strideSizeMode = false;
  bool halfBlock = false;
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

// As in impl/basic_api/kernel_reg.h.
constexpr uint64_t MASK_PLACEHOLDER = 0;
constexpr uint64_t MASK_PLACEHOLDER_LIST[2] = {0, 0};
enum class MaskMode : uint8_t { NORMAL = 0, COUNTER };

namespace model_vec {

// The key of one instruction in the per-instruction repeat counts: "<API>/<dst element bytes>", and
// "/<src element bytes>" when a source's width matters (a Cast, a Compare).
inline std::string VectorOp(const char *api, uint64_t dstBytes) {
  return std::string(api) + "/" + std::to_string(dstBytes);
}
inline std::string VectorOp(const char *api, uint64_t dstBytes, uint64_t srcBytes) {
  return VectorOp(api, dstBytes) + "/" + std::to_string(srcBytes);
}

using ascend_model::Fail;
using ascend_model::Site;
using ascend_model::Span;
using ascend_model::ops::Kind;
using ascend_model::ops::LaneMask;
using ascend_model::ops::Num;
using ascend_model::ops::kBlockBytes;
using ascend_model::ops::kRepeatBytes;

// ---- the mask register ---------------------------------------------------------------------------
// One per vector core: each core of the model runs on its own thread, created for the launch.
struct MaskRegister {
  bool counter = false;  // SetMaskCount / SetMaskNorm
  uint64_t high = ~uint64_t{0};
  uint64_t low = ~uint64_t{0};
  bool userSet = false;          // last written by SetVectorMask / ResetMask (see the file comment)
  bool setAsCounter = false;     // SetVectorMask<T, COUNTER>(len) vs <T, NORMAL>(len)
  bool lenForm = false;
};
inline MaskRegister &MaskReg() {
  static thread_local MaskRegister reg;
  return reg;
}
// An API with isSetMask = true writes the register.
inline void ClobberMask(uint64_t high, uint64_t low) {
  MaskRegister &m = MaskReg();
  m.high = high;
  m.low = low;
  m.userSet = false;
}

// The lanes each repeat of one instruction enables: Normal mode (one mask for every repeat) or
// Counter mode (`count` elements: full repeats and a partial last one).
struct MaskPlan {
  bool counter = false;
  LaneMask normal;
  uint64_t count = 0;
  uint64_t repeats = 0;
  uint64_t lanes = 0;  // lanes of one repeat
  LaneMask Of(uint64_t r) const {
    if (!counter) return normal;
    const uint64_t left = count - r * lanes;
    return ascend_model::ops::ContinuousMask(left < lanes ? left : lanes, lanes);
  }
  bool Empty() const { return repeats == 0 || (!counter && normal.Empty()); }
};

inline uint64_t LanesOf(uint64_t elemBytes) { return kRepeatBytes / elemBytes; }

inline MaskPlan CounterPlan(uint64_t count, uint64_t lanes) {
  MaskPlan p;
  p.counter = true;
  p.count = count;
  p.lanes = lanes;
  p.repeats = (count + lanes - 1) / lanes;
  return p;
}

inline MaskPlan NormalPlan(const LaneMask &mask, uint64_t repeats, uint64_t lanes) {
  MaskPlan p;
  p.normal = mask;
  p.repeats = repeats;
  p.lanes = lanes;
  return p;
}

// Bit masks: 16-bit lanes use both words, 32-bit lanes mask[0] only (mask[1] must be 0), 64-bit lanes
// the low 32 bits of mask[0] (基础API/Memory矢量计算/掩码操作/SetVectorMask.md).
inline LaneMask CheckedBits(const char *api, const Site &site, uint64_t high, uint64_t low, uint64_t elemBytes,
                            const char *what) {
  if (elemBytes >= 4 && high != 0) {
    Fail(api, site, std::string(what) + "[1] must be 0 for " + Num(elemBytes * 8) +
                        "-bit elements (one repeat has only " + Num(LanesOf(elemBytes)) + " lanes)");
  }
  if (elemBytes == 8 && (low >> 32) != 0) {
    Fail(api, site, std::string(what) + "[0] must be below 2^32 for 64-bit elements (32 lanes a repeat)");
  }
  LaneMask m;
  m.bits[0] = low;
  m.bits[1] = elemBytes <= 2 ? high : 0;
  return m;
}

// isSetMask = false: the mask SetVectorMask / ResetMask put in the register.
inline MaskPlan PlanFromRegister(const char *api, const Site &site, uint64_t repeatTime, uint64_t elemBytes) {
  const MaskRegister &reg = MaskReg();
  const uint64_t lanes = LanesOf(elemBytes);
  if (!reg.userSet) {
    Fail(api, site,
         "isSetMask = false, but the mask register holds no mask of the kernel's own: call SetVectorMask (or "
         "ResetMask) first; an API called with isSetMask = true (or a \"first n elements\" API) overwrites it");
  }
  if (reg.lenForm && reg.setAsCounter != reg.counter) {
    Fail(api, site, std::string("the mask was set by SetVectorMask<T, MaskMode::") +
                        (reg.setAsCounter ? "COUNTER" : "NORMAL") + ">(len) but the mask mode is " +
                        (reg.counter ? "Counter (SetMaskCount)" : "Normal (SetMaskNorm)"));
  }
  if (reg.counter) {
    if (reg.high != 0) Fail(api, site, "Counter mode: the high word of the mask register must be 0");
    return CounterPlan(reg.low, lanes);  // repeatTime ignored (掩码.md)
  }
  LaneMask m;
  m.bits[0] = elemBytes == 8 ? (reg.low & 0xFFFFFFFFull) : reg.low;
  m.bits[1] = elemBytes <= 2 ? reg.high : 0;
  return NormalPlan(m, repeatTime, lanes);
}

// The high-dimension forms. `elemBytes` is the size that selects lanes (the wider type for Cast).
inline MaskPlan PlanBits(const char *api, const Site &site, bool isSetMask, const uint64_t mask[],
                         uint64_t repeatTime, uint64_t elemBytes) {
  if (!isSetMask) return PlanFromRegister(api, site, repeatTime, elemBytes);
  const uint64_t lanes = LanesOf(elemBytes);
  const bool counter = MaskReg().counter;
  const uint64_t high = mask[1], low = mask[0];
  ClobberMask(high, low);
  if (counter) return CounterPlan(low, lanes);  // only the low 64 bits count; repeatTime ignored
  return NormalPlan(CheckedBits(api, site, high, low, elemBytes, "mask"), repeatTime, lanes);
}

inline MaskPlan PlanContinuous(const char *api, const Site &site, bool isSetMask, uint64_t mask, uint64_t repeatTime,
                               uint64_t elemBytes) {
  if (!isSetMask) return PlanFromRegister(api, site, repeatTime, elemBytes);
  const uint64_t lanes = LanesOf(elemBytes);
  if (MaskReg().counter) {
    ClobberMask(0, mask);
    return CounterPlan(mask, lanes);
  }
  // A continuous mask above the lanes of a repeat acts as a full repeat (掩码.md).
  const LaneMask m = ascend_model::ops::ContinuousMask(mask, lanes);
  ClobberMask(m.bits[1], m.bits[0]);
  return NormalPlan(m, repeatTime, lanes);
}

// The "first n elements" forms: Counter mode for `count` elements, then ResetMask + SetMaskNorm
// (掩码.md, 接口内设置Mask / Counter模式). With isSetMask = false (the forms that have the parameter)
// the count is the register's, which must be in Counter mode.
inline MaskPlan PlanCount(const char *api, const Site &site, bool isSetMask, int64_t count, uint64_t elemBytes) {
  const uint64_t lanes = LanesOf(elemBytes);
  if (!isSetMask) {
    if (!MaskReg().counter) {
      Fail(api, site, "isSetMask = false on a \"first n elements\" form needs Counter mode (SetMaskCount); "
                      "Normal mode is not modelled for it");
    }
    return PlanFromRegister(api, site, 1, elemBytes);
  }
  if (count < 0) Fail(api, site, "count = " + std::to_string(count) + " must not be negative");
  MaskRegister &reg = MaskReg();
  reg.counter = false;
  ClobberMask(~uint64_t{0}, ~uint64_t{0});
  return CounterPlan(static_cast<uint64_t>(count), lanes);
}

// ---- operands --------------------------------------------------------------------------------------
struct Operand {
  const char *name;
  Span span;
  uint64_t blk;
  uint64_t rep;
  uint64_t elemBytes;
  uint64_t Offset(uint64_t r, uint64_t lane) const {
    return ascend_model::ops::LaneOffset(r, lane, elemBytes, blk, rep);
  }
  uint64_t Blocks(uint64_t lanes) const { return (lanes * elemBytes + kBlockBytes - 1) / kBlockBytes; }
};

template <typename T>
inline Operand MakeOperand(const char *name, const LocalTensor<T> &t, uint64_t blk, uint64_t rep) {
  return Operand{name, t.ModelSpan(), blk, rep, sizeof(T)};
}

inline void RequireUb(const char *api, const Site &site, const Span &s, const char *what, uint64_t align) {
  ascend_model::ops::RequireSpace(api, site, s, ascend_model::Space::kUB, what);
  ascend_model::ops::RequireAlign(api, site, s, align, what);
}

// Whether block `b` of an operand of `elemBytes` elements holds an enabled lane.
inline bool BlockEnabled(const LaneMask &mask, uint64_t b, uint64_t elemBytes) {
  const uint64_t perBlock = kBlockBytes / elemBytes;
  for (uint64_t i = b * perBlock; i < (b + 1) * perBlock; ++i) {
    if (mask.Enabled(i)) return true;
  }
  return false;
}

// Within one repeat a source must coincide with dst block for block (same address, same place in the
// repeat, same element size) or not meet it (通用地址重叠约束). Only blocks with an enabled lane count:
// the others are neither read nor written.
inline void CheckSameRepeat(const char *api, const Site &site, const Operand &dst, const Operand &src,
                            const MaskPlan &plan) {
  using ascend_model::ops::HostOverlap;
  const uint64_t db = dst.Blocks(plan.lanes), sb = src.Blocks(plan.lanes);
  for (uint64_t r = 0; r < plan.repeats; ++r) {
    const LaneMask mask = plan.Of(r);
    for (uint64_t b = 0; b < sb; ++b) {
      if (!BlockEnabled(mask, b, src.elemBytes)) continue;
      const uint8_t *s = src.span.host + (r * src.rep + b * src.blk) * kBlockBytes;
      for (uint64_t bd = 0; bd < db; ++bd) {
        const uint8_t *d = dst.span.host + (r * dst.rep + bd * dst.blk) * kBlockBytes;
        if (!HostOverlap(s, kBlockBytes, d, kBlockBytes) || !BlockEnabled(mask, bd, dst.elemBytes)) continue;
        if (b == bd && s == d && src.elemBytes == dst.elemBytes) continue;
        Fail(api, site, std::string(src.name) + " overlaps dst partially in repeat " + Num(r) + " (block " + Num(b) +
                            " of " + src.name + " meets block " + Num(bd) +
                            " of dst); operands must coincide exactly or not overlap");
      }
    }
  }
}

// A repeat's dst must not be a source of a later repeat, unless `allowed` (the documented exception).
// `dstBytesOf(r)` gives the [first, last) host range of dst in repeat r (reductions write less).
template <typename DstRange>
inline void CheckLaterRepeats(const char *api, const Site &site, DstRange dstRange, const Operand &src,
                              const MaskPlan &plan, bool allowed) {
  using ascend_model::ops::HostOverlap;
  if (allowed || plan.repeats < 2) return;
  const uint64_t sb = src.Blocks(plan.lanes);
  for (uint64_t r = 0; r + 1 < plan.repeats; ++r) {
    const auto d = dstRange(r);  // vector of (host, bytes)
    for (uint64_t later = r + 1; later < plan.repeats; ++later) {
      const uint8_t *first = src.span.host + later * src.rep * kBlockBytes;
      const uint8_t *last = first + ((sb - 1) * src.blk + 1) * kBlockBytes;
      for (const auto &piece : d) {
        if (!HostOverlap(piece.first, piece.second, first, static_cast<uint64_t>(last - first))) continue;
        const LaneMask mask = plan.Of(later);
        for (uint64_t b = 0; b < sb; ++b) {
          const uint8_t *s = first + b * src.blk * kBlockBytes;
          if (HostOverlap(piece.first, piece.second, s, kBlockBytes) && BlockEnabled(mask, b, src.elemBytes)) {
            Fail(api, site, "dst of repeat " + Num(r) + " overlaps " + src.name + " of the later repeat " +
                                Num(later) + " (not supported: results undefined)");
          }
        }
      }
    }
  }
}

// The dst blocks (with an enabled lane) of repeat r of an element-wise instruction.
inline std::vector<std::pair<const uint8_t *, uint64_t>> DstBlocks(const Operand &dst, uint64_t r,
                                                                   const MaskPlan &plan) {
  std::vector<std::pair<const uint8_t *, uint64_t>> out;
  const LaneMask mask = plan.Of(r);
  const uint64_t db = dst.Blocks(plan.lanes);
  for (uint64_t b = 0; b < db; ++b) {
    if (BlockEnabled(mask, b, dst.elemBytes)) {
      out.emplace_back(dst.span.host + (r * dst.rep + b * dst.blk) * kBlockBytes, kBlockBytes);
    }
  }
  return out;
}

// Adds the bytes of the enabled lanes of every repeat of `op` to `set`, a whole block at a time where
// all its lanes are enabled.
inline void AddLanes(ascend_model::ops::RangeSet &set, const Operand &op, const MaskPlan &plan) {
  const uint64_t e = op.elemBytes;
  const uint64_t perBlock = kBlockBytes / e;
  const uint64_t blocks = op.Blocks(plan.lanes);
  for (uint64_t r = 0; r < plan.repeats; ++r) {
    const LaneMask mask = plan.Of(r);
    for (uint64_t b = 0; b < blocks; ++b) {
      bool all = true;
      for (uint64_t i = 0; i < perBlock; ++i) all = all && mask.Enabled(b * perBlock + i);
      if (all) {
        set.Add((r * op.rep + b * op.blk) * kBlockBytes, kBlockBytes);
        continue;
      }
      for (uint64_t i = 0; i < perBlock; ++i) {
        const uint64_t lane = b * perBlock + i;
        if (mask.Enabled(lane)) set.Add(op.Offset(r, lane), e);
      }
    }
  }
}

// The element-wise engine: checks, reports and runs `fn(dstLane, srcLanes)` for every enabled lane of
// every repeat, repeat by repeat (so a documented dst -> src1 chain sees the earlier repeats' results).
// `feedAllowed[i]`: source i may be fed by an earlier repeat's dst.
// ElementwiseAt: the same, `fn(dstLane, srcLanes, repeat, lane)` (for the APIs whose lane reads more
// state by its position: Select's selMask bits).
template <typename Fn>
inline void ElementwiseAt(const char *api, const Site &site, const Operand &dst, const Operand *srcs, int nsrc,
                          const MaskPlan &plan, const char *dstBlkName, const bool *feedAllowed, Fn fn) {
  using namespace ascend_model;
  using namespace ascend_model::ops;
  RequireUb(api, site, dst.span, dst.name, kBlockBytes);
  for (int i = 0; i < nsrc; ++i) RequireUb(api, site, srcs[i].span, srcs[i].name, kBlockBytes);
  if (plan.Empty()) return;  // documented NOP (mask, count or repeatTime 0)
  if (dst.blk == 0) Fail(api, site, std::string(dstBlkName) + " must not be 0 (undefined on hardware)");
  for (int i = 0; i < nsrc; ++i) {
    CheckSameRepeat(api, site, dst, srcs[i], plan);
    CheckLaterRepeats(api, site, [&](uint64_t r) { return DstBlocks(dst, r, plan); }, srcs[i], plan,
                      feedAllowed != nullptr && feedAllowed[i]);
  }
  std::vector<RangeSet> reads;
  reads.reserve(nsrc);
  for (int i = 0; i < nsrc; ++i) {
    reads.emplace_back(srcs[i].span, Pipe::kV, Access::kRead, api, site);
    AddLanes(reads.back(), srcs[i], plan);
  }
  RangeSet writes(dst.span, Pipe::kV, Access::kWrite, api, site);
  AddLanes(writes, dst, plan);
  for (const auto &r : reads) r.Report();
  writes.Report();
  const uint8_t *sp[3] = {nullptr, nullptr, nullptr};
  for (uint64_t r = 0; r < plan.repeats; ++r) {
    const LaneMask mask = plan.Of(r);
    for (uint64_t lane = 0; lane < plan.lanes; ++lane) {
      if (!mask.Enabled(lane)) continue;
      for (int i = 0; i < nsrc; ++i) sp[i] = srcs[i].span.host + srcs[i].Offset(r, lane);
      fn(dst.span.host + dst.Offset(r, lane), sp, r, lane);
    }
  }
  CountVectorRepeats(plan.repeats,
                     nsrc > 0 ? VectorOp(api, dst.elemBytes, srcs[0].elemBytes) : VectorOp(api, dst.elemBytes));
}
template <typename Fn>
inline void Elementwise(const char *api, const Site &site, const Operand &dst, const Operand *srcs, int nsrc,
                        const MaskPlan &plan, const char *dstBlkName, const bool *feedAllowed, Fn fn) {
  ElementwiseAt(api, site, dst, srcs, nsrc, plan, dstBlkName, feedAllowed,
                [&](uint8_t *dp, const uint8_t *const *sp, uint64_t, uint64_t) { fn(dp, sp); });
}

// ---- element codecs and rounding -------------------------------------------------------------------
template <typename T>
constexpr Kind KindOf() {
  return ascend_model::ops::KindOf<T>();
}
template <typename T>
constexpr bool IsFloating() {
  return KindOf<T>() == Kind::kF32 || KindOf<T>() == Kind::kF16 || KindOf<T>() == Kind::kBF16;
}
template <typename T>
inline const char *TypeName() {
  if (std::is_same<T, int64_t>::value) return "int64_t";
  if (std::is_same<T, uint64_t>::value) return "uint64_t";
  return ascend_model::ops::KindName(KindOf<T>());
}

// Fails unless T is one of `kinds` (the types the API's document lists for A2/A3).
template <typename T>
inline void RequireKind(const char *api, const Site &site, std::initializer_list<Kind> kinds, const char *listed) {
  const Kind k = KindOf<T>();
  bool ok = k != Kind::kOther;
  if (ok) {
    ok = false;
    for (Kind w : kinds) ok = ok || w == k;
  }
  if (!ok) Fail(api, site, std::string("on A2/A3 the element type is ") + listed + ", not " + TypeName<T>());
}

// Rounds sign * m * 2^e (m > 0) to an IEEE binary format of `p` significand bits (the implicit one
// included) and `expBits` exponent bits, in rounding mode `r`; returns the bits without the sign.
// Overflow gives inf where the mode rounds away from zero, else the largest finite value.
inline uint64_t RoundToBinary(bool negative, uint64_t m, int e, int p, int expBits, ascend_model::Rounding r) {
  using ascend_model::Rounding;
  const int bias = (1 << (expBits - 1)) - 1, emin = 1 - bias, emax = bias;
  const uint64_t infBits = ((uint64_t{1} << expBits) - 1) << (p - 1);
  const bool toInf = r == Rounding::kRint || r == Rounding::kRound || (r == Rounding::kFloor && negative) ||
                     (r == Rounding::kCeil && !negative);
  const int top = 63 - __builtin_clzll(m);
  const int E = top + e;  // the value lies in [2^E, 2^(E+1))
  if (E > emax) return toInf ? infBits : infBits - 1;
  const int qe = (E < emin ? emin : E) - (p - 1);  // weight of the last kept bit
  const int shift = qe - e;
  uint64_t kept, rest = 0;
  unsigned restBits = 0;
  if (shift <= 0) {
    kept = m << (-shift);  // exact: fewer than p bits
  } else if (shift >= 64) {
    kept = 0;
    rest = shift == 64 ? m : 1;  // below half an ulp but not zero
    restBits = 64;
  } else {
    kept = m >> shift;
    rest = m & ((uint64_t{1} << shift) - 1);
    restBits = static_cast<unsigned>(shift);
  }
  if (ascend_model::RoundsUp(kept, rest, restBits, negative, r)) {
    if (r == Rounding::kOdd) kept |= 1;
    else ++kept;
  }
  const uint64_t bits = E < emin ? kept : (static_cast<uint64_t>(E + bias - 1) << (p - 1)) + kept;
  if (bits >= infBits) return toInf ? infBits : infBits - 1;
  return bits;
}

// A double (exact) to the format, with its sign; NaN stays a quiet NaN.
inline uint64_t DoubleToBinary(double d, int p, int expBits, ascend_model::Rounding r) {
  const uint64_t signBit = uint64_t{1} << (p - 1 + expBits);
  const uint64_t infBits = ((uint64_t{1} << expBits) - 1) << (p - 1);
  const bool negative = std::signbit(d);
  const uint64_t sign = negative ? signBit : 0;
  if (std::isnan(d)) return sign | infBits | (uint64_t{1} << (p - 2));
  if (std::isinf(d)) return sign | infBits;
  if (d == 0) return sign;
  int ex;
  const double fr = std::frexp(std::fabs(d), &ex);  // [0.5, 1)
  const uint64_t m = static_cast<uint64_t>(std::ldexp(fr, 53));
  return sign | RoundToBinary(negative, m, ex - 53, p, expBits, r);
}

// An integer to the format (exactly rounded from the integer, not via double).
inline uint64_t IntToBinary(int64_t v, int p, int expBits, ascend_model::Rounding r) {
  if (v == 0) return 0;
  const bool negative = v < 0;
  const uint64_t m = negative ? (~static_cast<uint64_t>(v) + 1) : static_cast<uint64_t>(v);
  const uint64_t sign = negative ? uint64_t{1} << (p - 1 + expBits) : 0;
  return sign | RoundToBinary(negative, m, 0, p, expBits, r);
}

template <typename T>
constexpr int SignificandBits() {
  return KindOf<T>() == Kind::kF32 ? 24 : (KindOf<T>() == Kind::kF16 ? 11 : 8);
}
template <typename T>
constexpr int ExponentBits() {
  return KindOf<T>() == Kind::kF16 ? 5 : 8;
}

template <typename T>
inline double LoadReal(const uint8_t *p) {
  return static_cast<double>(ascend_model::ops::LoadFloat<T>(p));
}
template <typename T>
inline void StoreBits(uint8_t *p, uint64_t bits) {
  if (sizeof(T) == 4) {
    const uint32_t b = static_cast<uint32_t>(bits);
    std::memcpy(p, &b, 4);
  } else {
    const uint16_t b = static_cast<uint16_t>(bits);
    std::memcpy(p, &b, 2);
  }
}
// A real result, rounded once to T.
template <typename T>
inline void StoreReal(uint8_t *p, double v, ascend_model::Rounding r = ascend_model::Rounding::kRint) {
  StoreBits<T>(p, DoubleToBinary(v, SignificandBits<T>(), ExponentBits<T>(), r));
}

template <typename T>
inline int64_t LoadInt(const uint8_t *p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return static_cast<int64_t>(v);
}
// Integer arithmetic wraps to the width of T (two's complement).
template <typename T>
inline void StoreWrapped(uint8_t *p, int64_t v) {
  const T t = static_cast<T>(static_cast<typename std::make_unsigned<T>::type>(static_cast<uint64_t>(v)));
  std::memcpy(p, &t, sizeof(T));
}

// NaN-propagating maximum / minimum (an assumption: the documents do not say what Max / Min return for
// a NaN operand; propagating makes it visible).
inline double MaxOf(double a, double b) {
  if (std::isnan(a)) return a;
  if (std::isnan(b)) return b;
  return a > b ? a : b;
}
inline double MinOf(double a, double b) {
  if (std::isnan(a)) return a;
  if (std::isnan(b)) return b;
  return a < b ? a : b;
}
inline int64_t MaxOf(int64_t a, int64_t b) { return a > b ? a : b; }
inline int64_t MinOf(int64_t a, int64_t b) { return a < b ? a : b; }

}  // namespace model_vec

// ---- the mask API (basic_api/kernel_common.h; 基础API/Memory矢量计算/掩码操作/*.md) -------------------------
// Normal mode: the register holds lane bits (SetVectorMask(len) sets the first len lanes of T);
// Counter mode: its low word is the element count (the high word must be 0).
template <typename T, MaskMode mode = MaskMode::NORMAL>
static inline void SetVectorMask(const uint64_t maskHigh, const uint64_t maskLow,
                                 const ascend_model::Site &site = ascend_model::Site()) {
  if (mode == MaskMode::COUNTER) {
    if (maskHigh != 0) ascend_model::Fail("SetVectorMask", site, "Counter mode: maskHigh must be 0");
  } else {
    model_vec::CheckedBits("SetVectorMask", site, maskHigh, maskLow, sizeof(T), "maskHigh/maskLow: mask");
  }
  model_vec::MaskRegister &reg = model_vec::MaskReg();
  reg.high = maskHigh;
  reg.low = maskLow;
  reg.userSet = true;
  reg.lenForm = false;
}
template <typename T, MaskMode mode = MaskMode::NORMAL>
static inline void SetVectorMask(int32_t len, const ascend_model::Site &site = ascend_model::Site()) {
  const uint64_t lanes = model_vec::LanesOf(sizeof(T));
  if (len < 0) ascend_model::Fail("SetVectorMask", site, "len = " + std::to_string(len) + " must not be negative");
  model_vec::MaskRegister &reg = model_vec::MaskReg();
  if (mode == MaskMode::COUNTER) {
    reg.high = 0;
    reg.low = static_cast<uint64_t>(len);
  } else {
    ascend_model::ops::RequireRange("SetVectorMask", site, "len", static_cast<uint64_t>(len), 0, lanes);
    const ascend_model::ops::LaneMask m = ascend_model::ops::ContinuousMask(static_cast<uint64_t>(len), lanes);
    reg.high = m.bits[1];
    reg.low = m.bits[0];
  }
  reg.userSet = true;
  reg.lenForm = true;
  reg.setAsCounter = mode == MaskMode::COUNTER;
}
inline void ResetMask(const ascend_model::Site &site = ascend_model::Site()) {
  (void)site;
  model_vec::MaskRegister &reg = model_vec::MaskReg();
  reg.high = reg.low = ~uint64_t{0};
  reg.userSet = true;
  reg.lenForm = false;
}
inline void SetMaskCount(const ascend_model::Site &site = ascend_model::Site()) {
  (void)site;
  model_vec::MaskReg().counter = true;
}
inline void SetMaskNorm(const ascend_model::Site &site = ascend_model::Site()) {
  (void)site;
  model_vec::MaskReg().counter = false;
}

}  // namespace AscendC

#endif  // ASCEND_MODEL_OPS_VECTOR_COMMON_H
