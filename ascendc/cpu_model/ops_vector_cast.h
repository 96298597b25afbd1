// Modelled AscendC Cast for Atlas A2/A3 (__NPU_ARCH__ 2201), declared as in CANN's
// basic_api/kernel_operator_vec_vconv_intf.h (count form, bit-mask and continuous-mask forms with
// UnaryRepeatParams), each with a trailing defaulted Site.
//
// Documents: docs/zh/api/SIMD-API/基础API/Memory矢量计算/类型转换/Cast.md (the A2 and A3 tables of type
// pairs and round modes; a repeat holds 256 bytes of the wider type; count / repeatTime 0 is a NOP) and
// 基础API/数据结构/precision_conversion.md (the rounding modes bit by bit: CAST_RINT nearest-even,
// CAST_ROUND ties away from zero, CAST_ODD von Neumann; CAST_NONE is CAST_RINT where the conversion
// loses precision; out-of-range values saturate; a negative input to uint8_t is an exception).
// The pairs (A2 = A3), with the modes each accepts (R F C Ro T = RINT FLOOR CEIL ROUND TRUNC):
//   int8_t -> half, uint8_t -> half, half -> float, bfloat16_t -> float, int16_t -> float,
//   int32_t -> int64_t, int32_t -> int16_t, int64_t -> int32_t             NONE
//   int16_t -> half, int32_t -> float, half -> int8_t, half -> uint8_t      R F C Ro T NONE
//   half -> int16_t, half -> int32_t, bfloat16_t -> int32_t, float -> int16_t, float -> int32_t,
//   float -> int64_t, float -> bfloat16_t, float -> float, int64_t -> float R F C Ro T
//   float -> half                                                          R F C Ro T ODD NONE
// half <-> int4b_t: see CastInt4. Not modelled (the run stops): int32_t -> half (it needs SetDeqScale). Any other pair or mode is not supported on A2/A3 and stops the run.
// Assumptions: NaN converts to integer 0 (undocumented); inf saturates like any out-of-range value;
// floating results keep inf / NaN (see ops_vector_common.h); src and dst may share memory only when they
// start at the same address and have the same element size (Cast.md warns that widening in place gives
// wrong results; a partial overlap stops the run).
#ifndef ASCEND_MODEL_OPS_VECTOR_CAST_H
#define ASCEND_MODEL_OPS_VECTOR_CAST_H

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>

#include "ops_vector_common.h"

namespace AscendC {
namespace model_vec {

enum : unsigned { kR = 1, kF = 2, kC = 4, kRo = 8, kT = 16, kOdd = 32, kNone = 64 };
constexpr unsigned kRFCRoT = kR | kF | kC | kRo | kT;

// The modes the A2/A3 table allows from U to T (0: not a documented pair).
template <typename T, typename U>
constexpr unsigned CastModes() {
  constexpr Kind d = KindOf<T>(), s = KindOf<U>();
  constexpr bool dI64 = std::is_same<T, int64_t>::value, sI64 = std::is_same<U, int64_t>::value;
  if (dI64) return s == Kind::kI32 ? kNone : (s == Kind::kF32 ? kRFCRoT : 0);
  if (sI64) return d == Kind::kI32 ? kNone : (d == Kind::kF32 ? kRFCRoT : 0);
  if ((s == Kind::kI8 || s == Kind::kU8) && d == Kind::kF16) return kNone;
  if (s == Kind::kI16 && d == Kind::kF16) return kRFCRoT | kNone;
  if (s == Kind::kI16 && d == Kind::kF32) return kNone;
  if (s == Kind::kF16 && (d == Kind::kI8 || d == Kind::kU8)) return kRFCRoT | kNone;
  if (s == Kind::kF16 && (d == Kind::kI16 || d == Kind::kI32)) return kRFCRoT;
  if (s == Kind::kF16 && d == Kind::kF32) return kNone;
  if (s == Kind::kBF16 && d == Kind::kI32) return kRFCRoT;
  if (s == Kind::kBF16 && d == Kind::kF32) return kNone;
  if (s == Kind::kI32 && d == Kind::kI16) return kNone;
  if (s == Kind::kI32 && d == Kind::kF32) return kRFCRoT | kNone;
  if (s == Kind::kF32 && (d == Kind::kI16 || d == Kind::kI32 || d == Kind::kBF16 || d == Kind::kF32)) return kRFCRoT;
  if (s == Kind::kF32 && d == Kind::kF16) return kRFCRoT | kOdd | kNone;
  return 0;
}

inline unsigned ModeBit(RoundMode m) {
  switch (m) {
    case RoundMode::CAST_RINT: return kR;
    case RoundMode::CAST_FLOOR: return kF;
    case RoundMode::CAST_CEIL: return kC;
    case RoundMode::CAST_ROUND: return kRo;
    case RoundMode::CAST_TRUNC: return kT;
    case RoundMode::CAST_ODD: return kOdd;
    case RoundMode::CAST_NONE: return kNone;
    default: return 0;
  }
}

inline ascend_model::Rounding RoundingOf(RoundMode m) {
  using ascend_model::Rounding;
  switch (m) {
    case RoundMode::CAST_FLOOR: return Rounding::kFloor;
    case RoundMode::CAST_CEIL: return Rounding::kCeil;
    case RoundMode::CAST_ROUND: return Rounding::kRound;
    case RoundMode::CAST_TRUNC: return Rounding::kTrunc;
    case RoundMode::CAST_ODD: return Rounding::kOdd;
    default: return Rounding::kRint;  // CAST_RINT, and CAST_NONE where precision is lost
  }
}

// A real to an integer in mode `r`, saturated to [lo, hi]; NaN gives 0 (an assumption).
inline int64_t RoundToInt(double v, ascend_model::Rounding r, int64_t lo, int64_t hi) {
  using ascend_model::Rounding;
  if (std::isnan(v)) return 0;
  double i;
  switch (r) {
    case Rounding::kFloor: i = std::floor(v); break;
    case Rounding::kCeil: i = std::ceil(v); break;
    case Rounding::kRound: i = std::round(v); break;  // ties away from zero
    case Rounding::kTrunc: i = std::trunc(v); break;
    default: i = std::nearbyint(v); break;  // the default FE_TONEAREST: ties to even
  }
  if (i <= static_cast<double>(lo)) return lo;
  if (i >= static_cast<double>(hi)) return hi;
  return static_cast<int64_t>(i);
}

template <typename T>
inline void StoreInt(uint8_t *p, int64_t v) {
  const T t = static_cast<T>(v);
  std::memcpy(p, &t, sizeof(T));
}

// One element from U to T.
template <typename T, typename U>
inline void CastLane(const char *api, const Site &site, uint8_t *d, const uint8_t *s, ascend_model::Rounding r) {
  if constexpr (IsFloating<T>()) {
    if constexpr (IsFloating<U>()) {
      const double v = LoadReal<U>(s);
      if constexpr (std::is_same<T, float>::value && std::is_same<U, float>::value) {
        // float -> float: to an integral value in the mode (precision_conversion.md)
        double i = v;
        if (std::isfinite(v)) {
          switch (r) {
            case ascend_model::Rounding::kFloor: i = std::floor(v); break;
            case ascend_model::Rounding::kCeil: i = std::ceil(v); break;
            case ascend_model::Rounding::kRound: i = std::round(v); break;
            case ascend_model::Rounding::kTrunc: i = std::trunc(v); break;
            default: i = std::nearbyint(v); break;
          }
        }
        StoreReal<T>(d, i);
      } else {
        StoreReal<T>(d, v, r);
      }
    } else {
      StoreBits<T>(d, IntToBinary(LoadInt<U>(s), SignificandBits<T>(), ExponentBits<T>(), r));
    }
  } else {
    const int64_t lo = static_cast<int64_t>(std::numeric_limits<T>::min());
    const int64_t hi = static_cast<int64_t>(std::numeric_limits<T>::max());
    if constexpr (IsFloating<U>()) {
      const double v = LoadReal<U>(s);
      if (std::is_same<T, uint8_t>::value && v < 0) {
        Fail(api, site, "a negative input (" + std::to_string(v) + ") to uint8_t is an exception on A2/A3 (documented)");
      }
      StoreInt<T>(d, RoundToInt(v, r, lo, hi));
    } else {
      const int64_t v = LoadInt<U>(s);
      StoreInt<T>(d, v < lo ? lo : (v > hi ? hi : v));  // saturates (precision_conversion.md)
    }
  }
}

// half <-> int4b_t (Cast.md, A2/A3 tables: half -> int4b_t in CAST_RINT / FLOOR / CEIL / ROUND / TRUNC /
// NONE (= RINT), saturated to [-8, 7]; int4b_t -> half CAST_NONE, exact). A repeat is 128 lanes (256 bytes
// of half, 64 bytes of int4b_t); an int4b_t operand's block of 32 bytes holds 64 lanes, lane 2i in the low
// nibble of its byte (see int4b_t). As documented, the enabled lanes must come in pairs (2i, 2i + 1: a
// count, a continuous mask and each bit pair of a bit mask even); src and dst must not share memory (an
// assumption: the in-place forms are not modelled).
template <typename T, typename U>
inline void CastInt4(const Site &site, const LocalTensor<T> &dst, const LocalTensor<U> &src,
                     const RoundMode &roundMode, const MaskPlan &plan, uint64_t dstBlk, uint64_t srcBlk,
                     uint64_t dstRep, uint64_t srcRep) {
  using namespace ascend_model;
  using namespace ascend_model::ops;
  const char *api = "Cast";
  constexpr bool toInt4 = IsInt4<T>();
  using H = typename std::conditional<toInt4, U, T>::type;  // the half side
  if (!std::is_same<H, ::half>::value || (IsInt4<T>() && IsInt4<U>())) {
    Fail(api, site, std::string("int4b_t converts only from / to half on A2/A3"));
  }
  const unsigned allowed = toInt4 ? (kRFCRoT | kNone) : kNone;
  if ((allowed & ModeBit(roundMode)) == 0) {
    Fail(api, site, std::string("RoundMode ") + Num(static_cast<uint64_t>(roundMode)) + " is not supported for " +
                        (toInt4 ? "half -> int4b_t" : "int4b_t -> half") + " on A2/A3");
  }
  const Rounding r = RoundingOf(roundMode);
  const Span d = dst.ModelSpan(), sp = src.ModelSpan();
  RequireUb(api, site, d, "dst", kBlockBytes);
  RequireUb(api, site, sp, "src", kBlockBytes);
  if (plan.Empty()) return;
  if (dstBlk == 0) Fail(api, site, "dstBlkStride must not be 0 (undefined on hardware)");
  for (uint64_t rr = 0; rr < plan.repeats; ++rr) {
    const LaneMask mask = plan.Of(rr);
    for (uint64_t lane = 0; lane + 1 < plan.lanes; lane += 2) {
      if (mask.Enabled(lane) != mask.Enabled(lane + 1)) {
        Fail(api, site, "with int4b_t the enabled lanes must come in pairs (2i, 2i + 1): lane " + Num(lane) +
                            " and " + Num(lane + 1) + " of repeat " + Num(rr) + " differ (documented)");
      }
    }
  }
  // Byte offset of lane `lane` of repeat `rr`: the half side as any 2-byte operand; the int4b_t side 64
  // lanes per 32-byte block.
  auto halfAt = [&](uint64_t rr, uint64_t lane, uint64_t blk, uint64_t rep) {
    return LaneOffset(rr, lane, 2, blk, rep);
  };
  auto int4At = [&](uint64_t rr, uint64_t lane, uint64_t blk, uint64_t rep) {
    return (rr * rep + (lane / 64) * blk) * kBlockBytes + (lane % 64) / 2;
  };
  const uint64_t hBlk = toInt4 ? srcBlk : dstBlk, hRep = toInt4 ? srcRep : dstRep;
  const uint64_t qBlk = toInt4 ? dstBlk : srcBlk, qRep = toInt4 ? dstRep : srcRep;
  const Span &hs = toInt4 ? sp : d;
  const Span &qs = toInt4 ? d : sp;
  RangeSet hr(hs, Pipe::kV, toInt4 ? Access::kRead : Access::kWrite, api, site);
  RangeSet qr(qs, Pipe::kV, toInt4 ? Access::kWrite : Access::kRead, api, site);
  for (uint64_t rr = 0; rr < plan.repeats; ++rr) {
    const LaneMask mask = plan.Of(rr);
    for (uint64_t lane = 0; lane < plan.lanes; lane += 2) {
      if (!mask.Enabled(lane)) continue;
      hr.Add(halfAt(rr, lane, hBlk, hRep), 4);
      qr.Add(int4At(rr, lane, qBlk, qRep), 1);
    }
  }
  hr.Normalize();
  qr.Normalize();
  for (const auto &a : hr.ranges()) {
    for (const auto &b : qr.ranges()) {
      if (HostOverlap(hs.host + a.first, a.second - a.first, qs.host + b.first, b.second - b.first)) {
        Fail(api, site, "src and dst share memory: an int4b_t Cast in place is not modelled");
      }
    }
  }
  if (toInt4) {
    hr.Report();
    qr.Report();
  } else {
    qr.Report();
    hr.Report();
  }
  for (uint64_t rr = 0; rr < plan.repeats; ++rr) {
    const LaneMask mask = plan.Of(rr);
    for (uint64_t lane = 0; lane < plan.lanes; lane += 2) {
      if (!mask.Enabled(lane)) continue;
      uint8_t *q = qs.host + int4At(rr, lane, qBlk, qRep);
      uint8_t *h = hs.host + halfAt(rr, lane, hBlk, hRep);
      if (toInt4) {
        uint8_t byte = 0;
        for (int i = 0; i < 2; ++i) {
          const double v = LoadReal<::half>(h + 2 * i);
          byte |= static_cast<uint8_t>(RoundToInt(v, r, -8, 7) & 0xF) << (4 * i);
        }
        *q = byte;
      } else {
        for (int i = 0; i < 2; ++i) {
          const uint8_t nib = (*q >> (4 * i)) & 0xF;
          const int v = (nib & 0x8) != 0 ? static_cast<int>(nib) - 16 : nib;
          StoreReal<::half>(h + 2 * i, static_cast<double>(v));
        }
      }
    }
  }
  CountVectorRepeats(plan.repeats, VectorOp("Cast", sizeof(T), sizeof(U)));
}

template <typename T, typename U>
inline void CastVector(const Site &site, const LocalTensor<T> &dst, const LocalTensor<U> &src,
                       const RoundMode &roundMode, const MaskPlan &plan, uint64_t dstBlk, uint64_t srcBlk,
                       uint64_t dstRep, uint64_t srcRep) {
  if constexpr (ascend_model::IsInt4<T>() || ascend_model::IsInt4<U>()) {
    CastInt4(site, dst, src, roundMode, plan, dstBlk, srcBlk, dstRep, srcRep);
  } else {
  const char *api = "Cast";
  constexpr unsigned allowed = CastModes<T, U>();
  if (std::is_same<U, int32_t>::value && std::is_same<T, ::half>::value) {
    Fail(api, site, "int32_t -> half (with SetDeqScale) is not modelled");
  }
  if ((allowed & ModeBit(roundMode)) == 0) {
    Fail(api, site, std::string("RoundMode ") + Num(static_cast<uint64_t>(roundMode)) + " from " + TypeName<U>() +
                        " to " + TypeName<T>() + " is not a supported (or not a modelled) conversion on A2/A3");
  }
  const ascend_model::Rounding r = RoundingOf(roundMode);
  const Operand d = MakeOperand("dst", dst, dstBlk, dstRep);
  const Operand s[1] = {MakeOperand("src", src, srcBlk, srcRep)};
  Elementwise(api, site, d, s, 1, plan, "dstBlkStride", nullptr,
              [&](uint8_t *dp, const uint8_t *const *sp) { CastLane<T, U>(api, site, dp, sp[0], r); });
  }
}

template <typename T, typename U>
constexpr uint64_t WiderBytes() {
  return sizeof(T) > sizeof(U) ? sizeof(T) : sizeof(U);
}

}  // namespace model_vec

template <typename T, typename U, bool isSetMask = true>
inline void Cast(const LocalTensor<T> &dst, const LocalTensor<U> &src, const RoundMode &roundMode,
                 const uint64_t mask[], const uint8_t repeatTime, const UnaryRepeatParams &repeatParams,
                 const ascend_model::Site &site = ascend_model::Site()) {
  if (repeatParams.halfBlock) ascend_model::Fail("Cast", site, "UnaryRepeatParams::halfBlock = true is not modelled");
  model_vec::CastVector(site, dst, src, roundMode,
                        model_vec::PlanBits("Cast", site, isSetMask, mask, repeatTime, model_vec::WiderBytes<T, U>()),
                        repeatParams.dstBlkStride, repeatParams.srcBlkStride, repeatParams.dstRepStride,
                        repeatParams.srcRepStride);
}
template <typename T, typename U, bool isSetMask = true>
inline void Cast(const LocalTensor<T> &dst, const LocalTensor<U> &src, const RoundMode &roundMode,
                 const uint64_t mask, const uint8_t repeatTime, const UnaryRepeatParams &repeatParams,
                 const ascend_model::Site &site = ascend_model::Site()) {
  if (repeatParams.halfBlock) ascend_model::Fail("Cast", site, "UnaryRepeatParams::halfBlock = true is not modelled");
  model_vec::CastVector(
      site, dst, src, roundMode,
      model_vec::PlanContinuous("Cast", site, isSetMask, mask, repeatTime, model_vec::WiderBytes<T, U>()),
      repeatParams.dstBlkStride, repeatParams.srcBlkStride, repeatParams.dstRepStride, repeatParams.srcRepStride);
}
// Count form: `count` contiguous elements of each (repeat strides of 256 bytes of the wider type).
template <typename T, typename U>
inline void Cast(const LocalTensor<T> &dst, const LocalTensor<U> &src, const RoundMode &roundMode,
                 const uint32_t count, const ascend_model::Site &site = ascend_model::Site()) {
  constexpr uint64_t wide = model_vec::WiderBytes<T, U>();
  // An int4b_t operand's repeat is 128 lanes of half a byte: 2 blocks.
  constexpr uint64_t dRep = ascend_model::IsInt4<T>() ? 2 : 8 * sizeof(T) / wide;
  constexpr uint64_t sRep = ascend_model::IsInt4<U>() ? 2 : 8 * sizeof(U) / wide;
  model_vec::CastVector(site, dst, src, roundMode, model_vec::PlanCount("Cast", site, true, count, wide), 1, 1, dRep,
                        sRep);
}

}  // namespace AscendC

#endif  // ASCEND_MODEL_OPS_VECTOR_CAST_H
