// Modelled AscendC compare-and-select instructions for Atlas A2/A3 (__NPU_ARCH__ 2201), declared as in
// CANN's basic_api/kernel_operator_vec_cmpsel_intf.h and kernel_operator_vec_gather_mask_intf.h (the 2201
// overloads), each with a trailing defaulted Site:
//   Compare (dst bit mask; count form and mask forms), Compare to the CmpMask register, Compares /
//   CompareScalar, GetCmpMask, SetCmpMask, Select (SELMODE 0, 1, 2), GatherMask.
// Documents: docs/zh/api/SIMD-API/基础API/Memory矢量计算/比较与选择/Compare.md, Compare（结果存入寄存器）.md,
// Compares.md, GetCmpMask(ISASI).md, SetCmpMask(ISASI).md, Select.md, GatherMask.md.
//  - Compare / Compares: dst bit i (little-endian bit order, byte i / 8, bit i % 8) is src0_i cmp src1_i;
//    T half or float (every CMPMODE) or int32_t (EQ only), dst U int8_t / uint8_t (Compares: uint8_t);
//    the count must fill whole 256-byte repeats ("未对齐部分元素不参与计算" is read strictly: a count that
//    does not stops the run); on A2/A3 the mask of the high-dimension forms is a reserved parameter
//    without effect ("保留参数，设置无效"): every lane of every repeat is compared. count / repeatTime 0: NOP.
//  - Compare to the register: one repeat (256 bytes), half / float, its mask enables lanes; the result
//    goes to the 128-bit CmpMask register of the core. GetCmpMask writes the register's 16 bytes to dst
//    (16-byte aligned; the document requires dst to have at least 128 bytes, which the model checks);
//    SetCmpMask loads 16 bytes from src (16-byte aligned).
//  - Select: T half / float, selMask U uint8_t / uint16_t / uint32_t / uint64_t (read as bits, byte i / 8,
//    bit i % 8); bit 1 takes src0, bit 0 src1. Mode 0 (VSEL_CMPMASK_SPR): selMask is loaded into the
//    CmpMask register (16 bytes read) and every repeat uses its first 256 / sizeof(T) bits; modes 1
//    (VSEL_TENSOR_SCALAR_MODE, src1 a scalar) and 2 (VSEL_TENSOR_TENSOR_MODE): repeat r uses bits
//    [r * 256 / sizeof(T), (r + 1) * 256 / sizeof(T)) of selMask. In the mask forms a lane the mask turns
//    off keeps dst's value. The forms without mask and selMode (Select<T, selMode>(dst, src0, src1, ...)):
//    mode 0 only, from the register (SetCmpMask / Compare before); the other no-mask form stops the run.
//  - GatherMask: dst gets, packed from its start, the elements of src0 whose pattern bit is 1; rsvdCnt their
//    number. Patterns 1-7 (1 even lanes, 2 odd, 3-6 lane 4k + 0..3, 7 all) or a tensor of U bits (repeat r's
//    bits start at src1 + r * src1RepeatStride blocks). reduceMode false: repeatTimes repeats of 256 bytes
//    (mask ignored); true (Counter, A2/A3 配置方式一): repeatTimes repeats of `mask` elements.
// Assumptions where the documents are silent: the Compare high-dimension forms pack the bits of repeat r at
// byte r * (256 / sizeof(T)) / 8 of dst whatever dstRepStride / dstBlkStride say (the strides of a bit
// output are not documented); a lane Compare-to-register does not enable gets bit 0; comparisons follow
// IEEE (a NaN compares unequal: LT / GT / LE / GE / EQ false, NE true); GatherMask reads src0 before it
// writes dst (the example gathers in place: dst and src0 may start at the same address; another overlap
// stops the run); Select and GatherMask overwrite the mask register (isSetMask = false after them needs
// SetVectorMask again).
#ifndef ASCEND_MODEL_OPS_VECTOR_CMPSEL_H
#define ASCEND_MODEL_OPS_VECTOR_CMPSEL_H

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>
#include <type_traits>
#include <vector>

#include "ops_vector_common.h"

namespace AscendC {

enum class CMPMODE : uint8_t { LT = 0, GT, EQ, LE, GE, NE };
enum class SELMODE : uint8_t { VSEL_CMPMASK_SPR = 0, VSEL_TENSOR_SCALAR_MODE, VSEL_TENSOR_TENSOR_MODE };
enum class GatherMaskMode : uint8_t { VERSION_V1 = 0, VERSION_V2 = 1 };
const GatherMaskMode defaultGahterMaskMode = GatherMaskMode::VERSION_V2;
const GatherMaskMode defaultGatherMaskMode = GatherMaskMode::VERSION_V2;

struct GatherMaskParams {
  GatherMaskParams() {}
  GatherMaskParams(const uint8_t src0BlockStrideIn, const uint16_t repeatTimesIn, const uint16_t src0RepeatStrideIn,
                   const uint8_t src1RepeatStrideIn)
      : src0BlockStride(src0BlockStrideIn),
        repeatTimes(repeatTimesIn),
        src0RepeatStride(src0RepeatStrideIn),
        src1RepeatStride(src1RepeatStrideIn) {}
  uint8_t src0BlockStride = DEFAULT_BLK_STRIDE;
  uint16_t repeatTimes = 0;
  uint16_t src0RepeatStride = DEFAULT_REPEAT_STRIDE;
  uint8_t src1RepeatStride = DEFAULT_REPEAT_STRIDE;
};

namespace model_vec {

// The CmpMask register of the calling vector core (128 bits) and whether the kernel put a value there.
struct CmpMaskRegister {
  uint8_t bytes[16] = {0};
  bool set = false;
};
inline CmpMaskRegister &CmpReg() {
  static thread_local CmpMaskRegister reg;
  return reg;
}

inline const char *CmpName(CMPMODE m) {
  switch (m) {
    case CMPMODE::LT: return "LT";
    case CMPMODE::GT: return "GT";
    case CMPMODE::EQ: return "EQ";
    case CMPMODE::LE: return "LE";
    case CMPMODE::GE: return "GE";
    case CMPMODE::NE: return "NE";
  }
  return "?";
}

template <typename V>
inline bool CmpHolds(CMPMODE m, V a, V b) {
  switch (m) {
    case CMPMODE::LT: return a < b;
    case CMPMODE::GT: return a > b;
    case CMPMODE::EQ: return a == b;
    case CMPMODE::LE: return a <= b;
    case CMPMODE::GE: return a >= b;
    case CMPMODE::NE: return !(a == b);
  }
  return false;
}

template <typename T>
inline bool CmpLane(CMPMODE m, const uint8_t *a, const uint8_t *b) {
  if constexpr (IsFloating<T>()) {
    return CmpHolds(m, LoadReal<T>(a), LoadReal<T>(b));
  } else {
    return CmpHolds(m, LoadInt<T>(a), LoadInt<T>(b));
  }
}

// T half / float (every mode) or int32_t (EQ only); U as `dstTypes` lists.
template <typename T, typename U>
inline void RequireCmpTypes(const char *api, const Site &site, CMPMODE m, bool int8Dst) {
  RequireKind<T>(api, site, {Kind::kF16, Kind::kF32, Kind::kI32}, "half, float or int32_t");
  if (KindOf<T>() == Kind::kI32 && m != CMPMODE::EQ) {
    Fail(api, site, std::string("int32_t supports only CMPMODE::EQ on A2/A3, not ") + CmpName(m));
  }
  if (int8Dst) {
    RequireKind<U>(api, site, {Kind::kI8, Kind::kU8}, "int8_t or uint8_t (dst)");
  } else {
    RequireKind<U>(api, site, {Kind::kU8}, "uint8_t (dst)");
  }
}

// Compare / Compares with a bit-mask dst: `repeats` full repeats, every lane, src1 a tensor or a scalar.
template <typename T, typename U>
inline void CompareBits(const char *api, const Site &site, const LocalTensor<U> &dst, const LocalTensor<T> &src0,
                        const LocalTensor<T> *src1, const T *scalar, CMPMODE m, uint64_t repeats, uint64_t blk0,
                        uint64_t rep0, uint64_t blk1, uint64_t rep1) {
  using namespace ascend_model;
  RequireCmpTypes<T, U>(api, site, m, src1 != nullptr);
  const uint64_t lanes = LanesOf(sizeof(T));
  const Span d = dst.ModelSpan();
  RequireUb(api, site, d, "dst", ascend_model::ops::kBlockBytes);
  const Operand s0 = MakeOperand("src0", src0, blk0, rep0);
  RequireUb(api, site, s0.span, "src0", ascend_model::ops::kBlockBytes);
  Operand s1 = s0;
  if (src1 != nullptr) {
    s1 = MakeOperand("src1", *src1, blk1, rep1);
    RequireUb(api, site, s1.span, "src1", ascend_model::ops::kBlockBytes);
  }
  if (repeats == 0) return;  // documented NOP
  const MaskPlan plan = NormalPlan(ops::ContinuousMask(lanes, lanes), repeats, lanes);
  const uint64_t outBytes = repeats * lanes / 8;
  for (const Operand *s : std::initializer_list<const Operand *>{&s0, src1 != nullptr ? &s1 : nullptr}) {
    if (s == nullptr) continue;
    for (uint64_t r = 0; r < repeats; ++r) {
      for (uint64_t b = 0; b < 8; ++b) {  // 8 blocks a repeat
        const uint8_t *sb = s->span.host + (r * s->rep + b * s->blk) * ascend_model::ops::kBlockBytes;
        if (ops::HostOverlap(sb, ascend_model::ops::kBlockBytes, d.host, outBytes)) {
          Fail(api, site, std::string(s->name) + " overlaps dst (a bit-mask output over its source: not supported)");
        }
      }
    }
  }
  ops::RangeSet r0(s0.span, Pipe::kV, Access::kRead, api, site);
  AddLanes(r0, s0, plan);
  ops::RangeSet r1(s1.span, Pipe::kV, Access::kRead, api, site);
  if (src1 != nullptr) AddLanes(r1, s1, plan);
  ops::RangeSet w(d, Pipe::kV, Access::kWrite, api, site);
  w.Add(0, outBytes);
  r0.Report();
  if (src1 != nullptr) r1.Report();
  w.Report();
  uint8_t sv[sizeof(T)];
  if (scalar != nullptr) std::memcpy(sv, scalar, sizeof(T));
  std::vector<uint8_t> out(outBytes, 0);
  for (uint64_t r = 0; r < repeats; ++r) {
    for (uint64_t l = 0; l < lanes; ++l) {
      const uint8_t *a = s0.span.host + s0.Offset(r, l);
      const uint8_t *b = src1 != nullptr ? s1.span.host + s1.Offset(r, l) : sv;
      if (CmpLane<T>(m, a, b)) out[(r * lanes + l) / 8] |= static_cast<uint8_t>(1u << ((r * lanes + l) % 8));
    }
  }
  std::memcpy(d.host, out.data(), outBytes);
  CountVectorRepeats(repeats, VectorOp(api, sizeof(U), sizeof(T)));
}

// The repeats of a count form: whole 256-byte repeats only (Compare.md / Compares.md 约束说明).
template <typename T>
inline uint64_t CmpCountRepeats(const char *api, const Site &site, uint32_t count) {
  const uint64_t bytes = static_cast<uint64_t>(count) * sizeof(T);
  if (bytes % kRepeatBytes != 0) {
    Fail(api, site, "count = " + Num(count) + " elements of " + TypeName<T>() + " (" + Num(bytes) +
                        " bytes) is not a multiple of 256 bytes (documented: only whole 256-byte repeats are compared)");
  }
  // The count form runs in Counter mode and then ResetMask + SetMaskNorm, as the other count forms.
  MaskReg().counter = false;
  ClobberMask(~uint64_t{0}, ~uint64_t{0});
  return bytes / kRepeatBytes;
}

// The high-dimension forms' mask: reserved on A2/A3 (no effect); the register is still overwritten
// (isSetMask = true) or must hold a kernel's mask (false).
inline void ReservedMask(const char *api, const Site &site, bool isSetMask) {
  if (isSetMask) {
    ClobberMask(~uint64_t{0}, ~uint64_t{0});
  } else if (!MaskReg().userSet) {
    Fail(api, site, "isSetMask = false, but the mask register holds no mask of the kernel's own (SetVectorMask first)");
  }
}

// Compare to the CmpMask register: one repeat, the plan's lanes.
template <typename T>
inline void CompareToRegister(const char *api, const Site &site, const LocalTensor<T> &src0,
                              const LocalTensor<T> &src1, CMPMODE m, const MaskPlan &plan,
                              const BinaryRepeatParams &p) {
  using namespace ascend_model;
  RequireKind<T>(api, site, {Kind::kF16, Kind::kF32}, "half or float");
  const Operand s[2] = {MakeOperand("src0", src0, p.src0BlkStride, p.src0RepStride),
                        MakeOperand("src1", src1, p.src1BlkStride, p.src1RepStride)};
  RequireUb(api, site, s[0].span, "src0", ascend_model::ops::kBlockBytes);
  RequireUb(api, site, s[1].span, "src1", ascend_model::ops::kBlockBytes);
  if (plan.counter) Fail(api, site, "Counter mode (SetMaskCount) is not modelled for Compare to the register");
  if (plan.Empty()) return;
  ops::RangeSet r0(s[0].span, Pipe::kV, Access::kRead, api, site);
  ops::RangeSet r1(s[1].span, Pipe::kV, Access::kRead, api, site);
  AddLanes(r0, s[0], plan);
  AddLanes(r1, s[1], plan);
  r0.Report();
  r1.Report();
  CmpMaskRegister &reg = CmpReg();
  std::memset(reg.bytes, 0, sizeof(reg.bytes));
  const LaneMask mask = plan.Of(0);
  for (uint64_t l = 0; l < plan.lanes; ++l) {
    if (!mask.Enabled(l)) continue;
    if (CmpLane<T>(m, s[0].span.host + s[0].Offset(0, l), s[1].span.host + s[1].Offset(0, l))) {
      reg.bytes[l / 8] |= static_cast<uint8_t>(1u << (l % 8));
    }
  }
  reg.set = true;
  CountVectorRepeats(1, VectorOp(api, sizeof(T)));
}

template <typename U>
inline void RequireSelMaskType(const char *api, const Site &site) {
  if (!(std::is_same<U, uint8_t>::value || std::is_same<U, uint16_t>::value || std::is_same<U, uint32_t>::value ||
        std::is_same<U, uint64_t>::value)) {
    Fail(api, site, "selMask's type is uint8_t, uint16_t, uint32_t or uint64_t on A2/A3");
  }
}

// Select: mode 0 takes the register's bits (loaded from selMask unless `fromRegister`), modes 1 / 2 the
// bits of selMask consumed repeat after repeat.
template <typename T, typename U>
inline void SelectLanes(const char *api, const Site &site, const LocalTensor<T> &dst, const LocalTensor<U> *selMask,
                        const LocalTensor<T> &src0, const LocalTensor<T> *src1, const T *scalar, SELMODE mode,
                        const MaskPlan &plan, const BinaryRepeatParams &p) {
  using namespace ascend_model;
  RequireKind<T>(api, site, {Kind::kF16, Kind::kF32}, "half or float");
  RequireSelMaskType<U>(api, site);
  if (static_cast<uint8_t>(mode) > 2) Fail(api, site, "selMode " + Num(static_cast<uint8_t>(mode)) + " is not 0, 1 or 2");
  const Operand d = MakeOperand("dst", dst, p.dstBlkStride, p.dstRepStride);
  Operand srcs[2] = {MakeOperand("src0", src0, p.src0BlkStride, p.src0RepStride),
                     MakeOperand("src0", src0, p.src0BlkStride, p.src0RepStride)};
  int nsrc = 1;
  if (src1 != nullptr) {
    srcs[1] = MakeOperand("src1", *src1, p.src1BlkStride, p.src1RepStride);
    nsrc = 2;
  }
  Span sm{};
  if (selMask != nullptr) {
    sm = selMask->ModelSpan();
    RequireUb(api, site, sm, "selMask", ascend_model::ops::kBlockBytes);
  }
  RequireUb(api, site, d.span, "dst", ascend_model::ops::kBlockBytes);
  for (int i = 0; i < nsrc; ++i) RequireUb(api, site, srcs[i].span, srcs[i].name, ascend_model::ops::kBlockBytes);
  if (plan.Empty()) return;  // NOP
  // The bits: mode 0 from the register (16 bytes), modes 1 / 2 from selMask, lanes bits a repeat.
  const uint64_t totalLanes = plan.counter ? plan.count : plan.repeats * plan.lanes;
  std::vector<uint8_t> bits;
  if (mode == SELMODE::VSEL_CMPMASK_SPR) {
    if (selMask != nullptr) {
      ops::RangeSet rs(sm, Pipe::kV, Access::kRead, api, site);
      rs.Add(0, 16);
      rs.Report();
      std::memcpy(CmpReg().bytes, sm.host, 16);
      CmpReg().set = true;
    } else if (!CmpReg().set) {
      Fail(api, site, "mode 0 without selMask takes the CmpMask register, which no SetCmpMask / Compare set");
    }
    bits.assign(CmpReg().bytes, CmpReg().bytes + 16);
  } else {
    const uint64_t bytes = (totalLanes + 7) / 8;
    ops::RangeSet rs(sm, Pipe::kV, Access::kRead, api, site);
    rs.Add(0, bytes);
    rs.Report();
    bits.assign(sm.host, sm.host + bytes);
  }
  uint8_t sv[sizeof(T)] = {0};
  if (scalar != nullptr) std::memcpy(sv, scalar, sizeof(T));
  const bool perRepeat = mode == SELMODE::VSEL_CMPMASK_SPR;
  ElementwiseAt(api, site, d, srcs, nsrc, plan, "dstBlkStride", nullptr,
                [&](uint8_t *dp, const uint8_t *const *sp, uint64_t r, uint64_t lane) {
                  const uint64_t i = perRepeat ? lane : r * plan.lanes + lane;
                  const bool take0 = (bits[i / 8] >> (i % 8)) & 1;
                  const uint8_t *from = take0 ? sp[0] : (nsrc == 2 ? sp[1] : sv);
                  std::memcpy(dp, from, sizeof(T));
                });
}

inline MaskPlan SelectCountPlan(const char *api, const Site &site, uint32_t count, uint64_t elemBytes) {
  return PlanCount(api, site, true, static_cast<int64_t>(count), elemBytes);
}

// GatherMask: the pattern bit of lane i of repeat r.
template <typename T>
inline void RequireGatherMaskType(const char *api, const Site &site) {
  RequireKind<T>(api, site, {Kind::kI16, Kind::kU16, Kind::kF16, Kind::kBF16, Kind::kI32, Kind::kU32, Kind::kF32},
                 "int16_t, uint16_t, half, bfloat16_t, int32_t, uint32_t or float");
}

template <typename T, typename PatternBit>
inline void GatherMaskRun(const char *api, const Site &site, const LocalTensor<T> &dst, const LocalTensor<T> &src0,
                          bool reduceMode, uint32_t mask, const GatherMaskParams &p, uint64_t &rsvdCnt,
                          PatternBit bit, const Span *pattern, uint64_t patternBytesPerRepeat) {
  using namespace ascend_model;
  RequireGatherMaskType<T>(api, site);
  const uint64_t e = sizeof(T);
  const Span d = dst.ModelSpan();
  const Operand s{"src0", src0.ModelSpan(), p.src0BlockStride, p.src0RepeatStride, e};
  RequireUb(api, site, d, "dst", ascend_model::ops::kBlockBytes);
  RequireUb(api, site, s.span, "src0", ascend_model::ops::kBlockBytes);
  uint64_t perRepeat = LanesOf(e);
  if (reduceMode) {
    ops::RequireRange(api, site, "mask", mask, 1, 0xFFFFFFFFull);
    perRepeat = mask;
  }
  // The instruction sets its own mask (Normal: all lanes; Counter: the count).
  MaskReg().counter = false;
  ClobberMask(~uint64_t{0}, ~uint64_t{0});
  rsvdCnt = 0;
  const uint64_t repeats = p.repeatTimes;
  if (repeats == 0) return;
  // Reads: src0 lanes and the pattern bits; then the selected elements.
  ops::RangeSet reads(s.span, Pipe::kV, Access::kRead, api, site);
  for (uint64_t r = 0; r < repeats; ++r) {
    for (uint64_t l = 0; l < perRepeat; ++l) reads.Add(s.Offset(r, l), e);
  }
  reads.Normalize();
  if (pattern != nullptr) {
    ops::RangeSet pr(*pattern, Pipe::kV, Access::kRead, api, site);
    for (uint64_t r = 0; r < repeats; ++r) pr.Add(r * p.src1RepeatStride * ascend_model::ops::kBlockBytes, patternBytesPerRepeat);
    pr.Normalize();
    pr.Report();
  }
  std::vector<uint64_t> picked;
  for (uint64_t r = 0; r < repeats; ++r) {
    for (uint64_t l = 0; l < perRepeat; ++l) {
      if (bit(r, l)) picked.push_back(s.Offset(r, l));
    }
  }
  const uint64_t outBytes = picked.size() * e;
  // dst may start where src0 starts (in-place compaction); any other overlap is refused.
  if (d.host != s.span.host) {
    for (const auto &rg : reads.ranges()) {
      if (ops::HostOverlap(s.span.host + rg.first, rg.second - rg.first, d.host, outBytes)) {
        Fail(api, site, "dst overlaps src0 without starting at the same address (not supported)");
      }
    }
  }
  reads.Report();
  ops::RangeSet w(d, Pipe::kV, Access::kWrite, api, site);
  w.Add(0, outBytes);
  w.Report();
  std::vector<uint8_t> out(outBytes);
  for (size_t i = 0; i < picked.size(); ++i) std::memcpy(out.data() + i * e, s.span.host + picked[i], e);
  if (outBytes > 0) std::memcpy(d.host, out.data(), outBytes);
  rsvdCnt = picked.size();
  CountVectorRepeats(repeats, VectorOp(api, sizeof(T)));
}

}  // namespace model_vec

// ---- Compare (bit-mask dst) --------------------------------------------------------------------------
template <typename T, typename U, bool isSetMask = true>
inline void Compare(const LocalTensor<U> &dst, const LocalTensor<T> &src0, const LocalTensor<T> &src1, CMPMODE cmpMode,
                    const uint64_t mask[], uint8_t repeatTime, const BinaryRepeatParams &repeatParams,
                    const ascend_model::Site &site = ascend_model::Site()) {
  (void)mask;
  model_vec::ReservedMask("Compare", site, isSetMask);
  model_vec::CompareBits<T, U>("Compare", site, dst, src0, &src1, nullptr, cmpMode, repeatTime,
                               repeatParams.src0BlkStride, repeatParams.src0RepStride, repeatParams.src1BlkStride,
                               repeatParams.src1RepStride);
}
template <typename T, typename U, bool isSetMask = true>
inline void Compare(const LocalTensor<U> &dst, const LocalTensor<T> &src0, const LocalTensor<T> &src1, CMPMODE cmpMode,
                    const uint64_t mask, uint8_t repeatTime, const BinaryRepeatParams &repeatParams,
                    const ascend_model::Site &site = ascend_model::Site()) {
  (void)mask;
  model_vec::ReservedMask("Compare", site, isSetMask);
  model_vec::CompareBits<T, U>("Compare", site, dst, src0, &src1, nullptr, cmpMode, repeatTime,
                               repeatParams.src0BlkStride, repeatParams.src0RepStride, repeatParams.src1BlkStride,
                               repeatParams.src1RepStride);
}
template <typename T, typename U>
inline void Compare(const LocalTensor<U> &dst, const LocalTensor<T> &src0, const LocalTensor<T> &src1, CMPMODE cmpMode,
                    uint32_t count, const ascend_model::Site &site = ascend_model::Site()) {
  const uint64_t repeats = model_vec::CmpCountRepeats<T>("Compare", site, count);
  model_vec::CompareBits<T, U>("Compare", site, dst, src0, &src1, nullptr, cmpMode, repeats, 1, 8, 1, 8);
}

// ---- Compare to the CmpMask register -------------------------------------------------------------------
template <typename T, bool isSetMask = true>
inline void Compare(const LocalTensor<T> &src0, const LocalTensor<T> &src1, CMPMODE cmpMode, const uint64_t mask[],
                    const BinaryRepeatParams &repeatParams, const ascend_model::Site &site = ascend_model::Site()) {
  model_vec::CompareToRegister("Compare", site, src0, src1, cmpMode,
                               model_vec::PlanBits("Compare", site, isSetMask, mask, 1, sizeof(T)), repeatParams);
}
template <typename T, bool isSetMask = true>
inline void Compare(const LocalTensor<T> &src0, const LocalTensor<T> &src1, CMPMODE cmpMode, const uint64_t mask,
                    const BinaryRepeatParams &repeatParams, const ascend_model::Site &site = ascend_model::Site()) {
  model_vec::CompareToRegister("Compare", site, src0, src1, cmpMode,
                               model_vec::PlanContinuous("Compare", site, isSetMask, mask, 1, sizeof(T)),
                               repeatParams);
}

template <typename T>
inline void GetCmpMask(const LocalTensor<T> &dst, const ascend_model::Site &site = ascend_model::Site()) {
  using namespace ascend_model;
  static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4, "GetCmpMask takes b8, b16 or b32");
  const Span d = dst.ModelSpan();
  model_vec::RequireUb("GetCmpMask", site, d, "dst", 16);
  if (d.bytes < 128) {
    Fail("GetCmpMask", site, "dst ('" + std::string(d.buffer) + "') has " + ops::Num(d.bytes) +
                                 " bytes from its start; the document requires at least 128");
  }
  if (!model_vec::CmpReg().set) Fail("GetCmpMask", site, "the CmpMask register holds no value (no Compare / SetCmpMask)");
  ascend_model::Touch(d, 0, 16, Pipe::kV, Access::kWrite, "GetCmpMask", site);
  std::memcpy(d.host, model_vec::CmpReg().bytes, 16);
}
template <typename T>
inline void SetCmpMask(const LocalTensor<T> &src, const ascend_model::Site &site = ascend_model::Site()) {
  using namespace ascend_model;
  static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8,
                "SetCmpMask takes b8, b16, b32 or b64");
  const Span s = src.ModelSpan();
  model_vec::RequireUb("SetCmpMask", site, s, "src", 16);
  ascend_model::Touch(s, 0, 16, Pipe::kV, Access::kRead, "SetCmpMask", site);
  std::memcpy(model_vec::CmpReg().bytes, s.host, 16);
  model_vec::CmpReg().set = true;
}

// ---- Compares / CompareScalar ---------------------------------------------------------------------------
#define ASCEND_MODEL_COMPARES(NAME)                                                                             \
  template <typename T, typename U, bool isSetMask = true>                                                      \
  inline void NAME(const LocalTensor<U> &dst, const LocalTensor<T> &src0, const T src1Scalar, CMPMODE cmpMode,  \
                   const uint64_t mask[], uint8_t repeatTime, const UnaryRepeatParams &repeatParams,            \
                   const ascend_model::Site &site = ascend_model::Site()) {                                     \
    (void)mask;                                                                                                 \
    model_vec::ReservedMask(#NAME, site, isSetMask);                                                            \
    model_vec::CompareBits<T, U>(#NAME, site, dst, src0, nullptr, &src1Scalar, cmpMode, repeatTime,             \
                                 repeatParams.srcBlkStride, repeatParams.srcRepStride, 1, 8);                   \
  }                                                                                                             \
  template <typename T, typename U, bool isSetMask = true>                                                      \
  inline void NAME(const LocalTensor<U> &dst, const LocalTensor<T> &src0, const T src1Scalar, CMPMODE cmpMode,  \
                   const uint64_t mask, uint8_t repeatTime, const UnaryRepeatParams &repeatParams,              \
                   const ascend_model::Site &site = ascend_model::Site()) {                                     \
    (void)mask;                                                                                                 \
    model_vec::ReservedMask(#NAME, site, isSetMask);                                                            \
    model_vec::CompareBits<T, U>(#NAME, site, dst, src0, nullptr, &src1Scalar, cmpMode, repeatTime,             \
                                 repeatParams.srcBlkStride, repeatParams.srcRepStride, 1, 8);                   \
  }                                                                                                             \
  template <typename T, typename U>                                                                             \
  inline void NAME(const LocalTensor<U> &dst, const LocalTensor<T> &src0, const T src1Scalar, CMPMODE cmpMode,  \
                   uint32_t count, const ascend_model::Site &site = ascend_model::Site()) {                     \
    const uint64_t repeats = model_vec::CmpCountRepeats<T>(#NAME, site, count);                                 \
    model_vec::CompareBits<T, U>(#NAME, site, dst, src0, nullptr, &src1Scalar, cmpMode, repeats, 1, 8, 1, 8);   \
  }
ASCEND_MODEL_COMPARES(Compares)
ASCEND_MODEL_COMPARES(CompareScalar)
#undef ASCEND_MODEL_COMPARES

// ---- Select ---------------------------------------------------------------------------------------------
template <typename T, typename U, bool isSetMask = true>
inline void Select(const LocalTensor<T> &dst, const LocalTensor<U> &selMask, const LocalTensor<T> &src0,
                   const LocalTensor<T> &src1, SELMODE selMode, uint64_t mask[], uint8_t repeatTime,
                   const BinaryRepeatParams &repeatParams, const ascend_model::Site &site = ascend_model::Site()) {
  if (selMode == SELMODE::VSEL_TENSOR_SCALAR_MODE) {
    ascend_model::Fail("Select", site, "VSEL_TENSOR_SCALAR_MODE takes a scalar src1 (the tensor form is modes 0 and 2)");
  }
  model_vec::SelectLanes<T, U>("Select", site, dst, &selMask, src0, &src1, nullptr, selMode,
                               model_vec::PlanBits("Select", site, true, mask, repeatTime, sizeof(T)), repeatParams);
}
template <typename T, typename U, bool isSetMask = true>
inline void Select(const LocalTensor<T> &dst, const LocalTensor<U> &selMask, const LocalTensor<T> &src0,
                   const LocalTensor<T> &src1, SELMODE selMode, uint64_t mask, uint8_t repeatTime,
                   const BinaryRepeatParams &repeatParams, const ascend_model::Site &site = ascend_model::Site()) {
  if (selMode == SELMODE::VSEL_TENSOR_SCALAR_MODE) {
    ascend_model::Fail("Select", site, "VSEL_TENSOR_SCALAR_MODE takes a scalar src1 (the tensor form is modes 0 and 2)");
  }
  model_vec::SelectLanes<T, U>("Select", site, dst, &selMask, src0, &src1, nullptr, selMode,
                               model_vec::PlanContinuous("Select", site, true, mask, repeatTime, sizeof(T)),
                               repeatParams);
}
template <typename T, SELMODE selMode>
inline void Select(const LocalTensor<T> &dst, const LocalTensor<T> &src0, const LocalTensor<T> &src1,
                   uint8_t repeatTime, const BinaryRepeatParams &repeatParams,
                   const ascend_model::Site &site = ascend_model::Site()) {
  if (selMode != SELMODE::VSEL_CMPMASK_SPR) {
    ascend_model::Fail("Select", site, "the form without selMask and mask is modelled for VSEL_CMPMASK_SPR only");
  }
  model_vec::SelectLanes<T, uint8_t>("Select", site, dst, nullptr, src0, &src1, nullptr, selMode,
                                     model_vec::PlanFromRegister("Select", site, repeatTime, sizeof(T)), repeatParams);
}
template <typename T, typename U>
inline void Select(const LocalTensor<T> &dst, const LocalTensor<U> &selMask, const LocalTensor<T> &src0,
                   uint8_t repeatTime, const BinaryRepeatParams &repeatParams,
                   const ascend_model::Site &site = ascend_model::Site()) {
  (void)dst, (void)selMask, (void)src0, (void)repeatTime, (void)repeatParams;
  ascend_model::Fail("Select", site,
                     "the mode-1 form without mask (scalar from a SetCmpMask'd register) is not modelled");
}
template <typename T, typename U>
inline void Select(const LocalTensor<T> &dst, const LocalTensor<U> &selMask, const LocalTensor<T> &src0,
                   const LocalTensor<T> &src1, SELMODE selMode, uint32_t count,
                   const ascend_model::Site &site = ascend_model::Site()) {
  if (selMode == SELMODE::VSEL_TENSOR_SCALAR_MODE) {
    ascend_model::Fail("Select", site, "VSEL_TENSOR_SCALAR_MODE takes a scalar src1 (the tensor form is modes 0 and 2)");
  }
  model_vec::SelectLanes<T, U>("Select", site, dst, &selMask, src0, &src1, nullptr, selMode,
                               model_vec::SelectCountPlan("Select", site, count, sizeof(T)), BinaryRepeatParams());
}
template <typename T, typename U, bool isSetMask = true>
inline void Select(const LocalTensor<T> &dst, const LocalTensor<U> &selMask, const LocalTensor<T> &src0, T src1,
                   SELMODE selMode, uint64_t mask[], uint8_t repeatTime, const BinaryRepeatParams &repeatParams,
                   const ascend_model::Site &site = ascend_model::Site()) {
  if (selMode != SELMODE::VSEL_TENSOR_SCALAR_MODE) {
    ascend_model::Fail("Select", site, "a scalar src1 needs VSEL_TENSOR_SCALAR_MODE");
  }
  model_vec::SelectLanes<T, U>("Select", site, dst, &selMask, src0, nullptr, &src1, selMode,
                               model_vec::PlanBits("Select", site, true, mask, repeatTime, sizeof(T)), repeatParams);
}
template <typename T, typename U, bool isSetMask = true>
inline void Select(const LocalTensor<T> &dst, const LocalTensor<U> &selMask, const LocalTensor<T> &src0, T src1,
                   SELMODE selMode, uint64_t mask, uint8_t repeatTime, const BinaryRepeatParams &repeatParams,
                   const ascend_model::Site &site = ascend_model::Site()) {
  if (selMode != SELMODE::VSEL_TENSOR_SCALAR_MODE) {
    ascend_model::Fail("Select", site, "a scalar src1 needs VSEL_TENSOR_SCALAR_MODE");
  }
  model_vec::SelectLanes<T, U>("Select", site, dst, &selMask, src0, nullptr, &src1, selMode,
                               model_vec::PlanContinuous("Select", site, true, mask, repeatTime, sizeof(T)),
                               repeatParams);
}
template <typename T, typename U>
inline void Select(const LocalTensor<T> &dst, const LocalTensor<U> &selMask, const LocalTensor<T> &src0, T src1,
                   SELMODE selMode, uint32_t count, const ascend_model::Site &site = ascend_model::Site()) {
  if (selMode != SELMODE::VSEL_TENSOR_SCALAR_MODE) {
    ascend_model::Fail("Select", site, "a scalar src1 needs VSEL_TENSOR_SCALAR_MODE");
  }
  model_vec::SelectLanes<T, U>("Select", site, dst, &selMask, src0, nullptr, &src1, selMode,
                               model_vec::SelectCountPlan("Select", site, count, sizeof(T)), BinaryRepeatParams());
}

// ---- GatherMask -----------------------------------------------------------------------------------------
template <typename T, typename U, GatherMaskMode mode = defaultGatherMaskMode>
inline void GatherMask(const LocalTensor<T> &dst, const LocalTensor<T> &src0, const LocalTensor<U> &src1Pattern,
                       const bool reduceMode, const uint32_t mask, const GatherMaskParams &gatherMaskParams,
                       uint64_t &rsvdCnt, const ascend_model::Site &site = ascend_model::Site()) {
  using namespace ascend_model;
  const char *api = "GatherMask";
  if (!std::is_unsigned<U>::value || sizeof(U) != sizeof(T) || !std::is_integral<U>::value) {
    Fail(api, site, "src1Pattern's type must be the unsigned integer of src0's width (uint16_t / uint32_t) on A2/A3");
  }
  const Span pat = src1Pattern.ModelSpan();
  model_vec::RequireUb(api, site, pat, "src1Pattern", ascend_model::ops::kBlockBytes);
  const uint64_t perRepeat = reduceMode ? mask : model_vec::LanesOf(sizeof(T));
  const uint64_t stride = static_cast<uint64_t>(gatherMaskParams.src1RepeatStride) * ascend_model::ops::kBlockBytes;
  model_vec::GatherMaskRun<T>(
      api, site, dst, src0, reduceMode, mask, gatherMaskParams, rsvdCnt,
      [&](uint64_t r, uint64_t l) { return ((pat.host[r * stride + l / 8] >> (l % 8)) & 1) != 0; }, &pat,
      (perRepeat + 7) / 8);
}
template <typename T, GatherMaskMode mode = defaultGatherMaskMode>
inline void GatherMask(const LocalTensor<T> &dst, const LocalTensor<T> &src0, const uint8_t src1Pattern,
                       const bool reduceMode, const uint32_t mask, const GatherMaskParams &gatherMaskParams,
                       uint64_t &rsvdCnt, const ascend_model::Site &site = ascend_model::Site()) {
  const char *api = "GatherMask";
  ascend_model::ops::RequireRange(api, site, "src1Pattern", src1Pattern, 1, 7);
  model_vec::GatherMaskRun<T>(
      api, site, dst, src0, reduceMode, mask, gatherMaskParams, rsvdCnt,
      [&](uint64_t, uint64_t l) {
        switch (src1Pattern) {
          case 1: return l % 2 == 0;
          case 2: return l % 2 == 1;
          case 7: return true;
          default: return l % 4 == static_cast<uint64_t>(src1Pattern - 3);
        }
      },
      nullptr, 0);
}

}  // namespace AscendC

#endif  // ASCEND_MODEL_OPS_VECTOR_CMPSEL_H
