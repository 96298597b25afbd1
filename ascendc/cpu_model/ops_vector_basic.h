// Modelled element-wise AscendC vector instructions for Atlas A2/A3 (__NPU_ARCH__ 2201), declared as in
// CANN's basic_api/kernel_operator_vec_binary_intf.h, _binary_scalar_intf.h, _unary_intf.h and
// _duplicate_intf.h (the overloads of the 2201 branch), each with a trailing defaulted Site:
//   Add Sub Mul Div Max Min                (dst_i = src0_i op src1_i)
//   And Or                                  (dst_i = src0_i & src1_i, src0_i | src1_i: 逻辑计算/And.md, Or.md)
//   Adds Muls Maxs Mins LeakyRelu           (dst_i = src_i op scalar)
//   Abs Exp Ln Relu                         (dst_i = f(src_i))
//   Duplicate                               (dst_i = scalar)
// in their three forms: "first n elements" (count), and the high-dimension forms with a bit mask
// (uint64_t mask[2]) or a continuous mask (uint64_t mask), repeatTime and Binary/UnaryRepeatParams,
// with isSetMask = false taking the mask register (SetVectorMask).
//
// Documents: docs/zh/api/SIMD-API/基础API/Memory矢量计算/基础算术/<API>.md and 数据填充/Duplicate.md
// (formula, A2/A3 element types, count / repeatTime 0 is a NOP), plus the ones ops_vector_common.h names.
// Element types on A2/A3: Add Sub Mul Max Min Adds Muls Maxs Mins: int16_t half int32_t float; Div Abs
// Exp Ln LeakyRelu: half float; Relu: half int32_t float; And Or: int16_t uint16_t (a 32-bit word is
// ANDed as two 16-bit halves through ReinterpretCast, as And.md advises); Duplicate: int16_t uint16_t
// half bfloat16_t int32_t uint32_t float. Any other type stops the run.
//
// Arithmetic: each result is the exact result rounded once to T (round to nearest even), which is what
// IEEE arithmetic in T gives; half and float are computed in double (exact or innocuously double-rounded
// for + - * /). Exp and Ln: computed in double and rounded once to T; the documents state a maximum error
// of 1 ulp (基础算术/Exp.md, Ln.md, 关键特性), which the model does not reproduce (it is exact to 0.5 ulp),
// nor their flush of subnormal results. Division by zero, overflow: IEEE (inf / NaN), see
// ops_vector_common.h. Max / Min / Maxs / Mins / Relu with a NaN give NaN (an assumption).
// The operator overloads (dst = src0 + src1) are not modelled (they would live on LocalTensor).
#ifndef ASCEND_MODEL_OPS_VECTOR_BASIC_H
#define ASCEND_MODEL_OPS_VECTOR_BASIC_H

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "ops_vector_common.h"

namespace AscendC {
namespace model_vec {

struct AddOp {
  template <typename V>
  V operator()(V a, V b) const { return a + b; }
};
struct SubOp {
  template <typename V>
  V operator()(V a, V b) const { return a - b; }
};
struct MulOp {
  // Integer products wrap: computed in uint64_t to keep the overflow defined.
  int64_t operator()(int64_t a, int64_t b) const {
    return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
  }
  double operator()(double a, double b) const { return a * b; }
};
struct DivOp {
  double operator()(double a, double b) const { return a / b; }
  int64_t operator()(int64_t a, int64_t) const { return a; }  // never used: Div takes half / float only
};
struct MaxOp {
  template <typename V>
  V operator()(V a, V b) const { return MaxOf(a, b); }
};
struct MinOp {
  template <typename V>
  V operator()(V a, V b) const { return MinOf(a, b); }
};
struct AndOp {
  int64_t operator()(int64_t a, int64_t b) const { return a & b; }
  double operator()(double a, double) const { return a; }  // never used: int16_t / uint16_t only
};
struct OrOp {
  int64_t operator()(int64_t a, int64_t b) const { return a | b; }
  double operator()(double a, double) const { return a; }  // never used: int16_t / uint16_t only
};
struct LeakyReluOp {
  double operator()(double x, double alpha) const { return x >= 0 || std::isnan(x) ? x : x * alpha; }
  int64_t operator()(int64_t x, int64_t) const { return x; }  // never used: half / float only
};
struct AbsOp {
  double operator()(double x) const { return std::fabs(x); }
  int64_t operator()(int64_t x) const { return x; }  // never used
};
struct ReluOp {
  double operator()(double x) const { return std::isnan(x) ? x : (x > 0 ? x : 0.0); }
  int64_t operator()(int64_t x) const { return x > 0 ? x : 0; }
};
struct ExpOp {
  double operator()(double x) const { return std::exp(x); }
  int64_t operator()(int64_t x) const { return x; }  // never used
};
struct LnOp {
  double operator()(double x) const { return std::log(x); }
  int64_t operator()(int64_t x) const { return x; }  // never used
};

// Which types each API takes on A2/A3 (the documents' 数据类型 sections).
enum class Types { kArith, kFloatOnly, kRelu, kBitwise };
template <typename T>
inline void RequireTypes(const char *api, const Site &site, Types t) {
  switch (t) {
    case Types::kArith:
      RequireKind<T>(api, site, {Kind::kI16, Kind::kF16, Kind::kI32, Kind::kF32}, "int16_t, half, int32_t or float");
      break;
    case Types::kFloatOnly:
      RequireKind<T>(api, site, {Kind::kF16, Kind::kF32}, "half or float");
      break;
    case Types::kRelu:
      RequireKind<T>(api, site, {Kind::kF16, Kind::kI32, Kind::kF32}, "half, int32_t or float");
      break;
    case Types::kBitwise:
      RequireKind<T>(api, site, {Kind::kI16, Kind::kU16}, "int16_t or uint16_t");
      break;
  }
}

// One lane of an arithmetic instruction in the domain of T: double for half / float (rounded once to
// T), int64_t for the integers (wrapped to T).
template <typename T, typename Op>
inline void Lane2(uint8_t *d, const uint8_t *a, const uint8_t *b, const Op &op) {
  if constexpr (IsFloating<T>()) {
    StoreReal<T>(d, op(LoadReal<T>(a), LoadReal<T>(b)));
  } else {
    StoreWrapped<T>(d, op(LoadInt<T>(a), LoadInt<T>(b)));
  }
}
template <typename T, typename Op>
inline void Lane1(uint8_t *d, const uint8_t *a, const Op &op) {
  if constexpr (IsFloating<T>()) {
    StoreReal<T>(d, op(LoadReal<T>(a)));
  } else {
    StoreWrapped<T>(d, op(LoadInt<T>(a)));
  }
}

// The binary APIs that may chain dst into src1 across repeats (通用地址重叠约束).
inline bool MayFeedSrc1(const char *api) {
  const std::string a(api);
  return a == "Add" || a == "Sub" || a == "Mul" || a == "Max" || a == "Min";
}

template <typename T, typename Op>
inline void Binary(const char *api, const Site &site, Types types, const LocalTensor<T> &dst,
                   const LocalTensor<T> &src0, const LocalTensor<T> &src1, const MaskPlan &plan, uint64_t dstBlk,
                   uint64_t dstRep, uint64_t blk0, uint64_t rep0, uint64_t blk1, uint64_t rep1, Op op) {
  RequireTypes<T>(api, site, types);
  const Operand d = MakeOperand("dst", dst, dstBlk, dstRep);
  const Operand s[2] = {MakeOperand("src0", src0, blk0, rep0), MakeOperand("src1", src1, blk1, rep1)};
  constexpr Kind k = KindOf<T>();
  const bool feed = MayFeedSrc1(api) && (k == Kind::kF16 || k == Kind::kI32 || k == Kind::kF32) &&
                    (rep1 == 0 || dstRep == 0);
  const bool allowed[2] = {false, feed};
  Elementwise(api, site, d, s, 2, plan, "dstBlkStride", allowed,
              [&](uint8_t *dp, const uint8_t *const *sp) { Lane2<T>(dp, sp[0], sp[1], op); });
}

template <typename T, typename Op>
inline void BinaryRepeat(const char *api, const Site &site, Types types, const LocalTensor<T> &dst,
                         const LocalTensor<T> &src0, const LocalTensor<T> &src1, const MaskPlan &plan,
                         const BinaryRepeatParams &p, Op op) {
  Binary(api, site, types, dst, src0, src1, plan, p.dstBlkStride, p.dstRepStride, p.src0BlkStride, p.src0RepStride,
         p.src1BlkStride, p.src1RepStride, op);
}

template <typename T, typename Op>
inline void Unary(const char *api, const Site &site, Types types, const LocalTensor<T> &dst,
                  const LocalTensor<T> &src, const MaskPlan &plan, const UnaryRepeatParams &p, Op op) {
  RequireTypes<T>(api, site, types);
  if (p.halfBlock) Fail(api, site, "UnaryRepeatParams::halfBlock = true is not modelled");
  const Operand d = MakeOperand("dst", dst, p.dstBlkStride, p.dstRepStride);
  const Operand s[1] = {MakeOperand("src", src, p.srcBlkStride, p.srcRepStride)};
  Elementwise(api, site, d, s, 1, plan, "dstBlkStride", nullptr,
              [&](uint8_t *dp, const uint8_t *const *sp) { Lane1<T>(dp, sp[0], op); });
}

template <typename T, typename Op>
inline void Scalar(const char *api, const Site &site, Types types, const LocalTensor<T> &dst,
                   const LocalTensor<T> &src, const T &scalar, const MaskPlan &plan, const UnaryRepeatParams &p,
                   Op op) {
  RequireTypes<T>(api, site, types);
  if (p.halfBlock) Fail(api, site, "UnaryRepeatParams::halfBlock = true is not modelled");
  uint8_t sv[sizeof(T)];
  std::memcpy(sv, &scalar, sizeof(T));
  const Operand d = MakeOperand("dst", dst, p.dstBlkStride, p.dstRepStride);
  const Operand s[1] = {MakeOperand("src", src, p.srcBlkStride, p.srcRepStride)};
  Elementwise(api, site, d, s, 1, plan, "dstBlkStride", nullptr,
              [&](uint8_t *dp, const uint8_t *const *sp) { Lane2<T>(dp, sp[0], sv, op); });
}

}  // namespace model_vec

// ---- binary: Add Sub Mul Div Max Min And Or ----------------------------------------------------------
#define ASCEND_MODEL_BINARY(NAME, OP, TYPES)                                                                      \
  template <typename T, bool isSetMask = true>                                                                    \
  inline void NAME(const LocalTensor<T> &dst, const LocalTensor<T> &src0, const LocalTensor<T> &src1,             \
                   uint64_t mask[], const uint8_t repeatTime, const BinaryRepeatParams &repeatParams,             \
                   const ascend_model::Site &site = ascend_model::Site()) {                                       \
    model_vec::BinaryRepeat(#NAME, site, TYPES, dst, src0, src1,                                                  \
                            model_vec::PlanBits(#NAME, site, isSetMask, mask, repeatTime, sizeof(T)),             \
                            repeatParams, OP());                                                                  \
  }                                                                                                               \
  template <typename T, bool isSetMask = true>                                                                    \
  inline void NAME(const LocalTensor<T> &dst, const LocalTensor<T> &src0, const LocalTensor<T> &src1,             \
                   uint64_t mask, const uint8_t repeatTime, const BinaryRepeatParams &repeatParams,               \
                   const ascend_model::Site &site = ascend_model::Site()) {                                       \
    model_vec::BinaryRepeat(#NAME, site, TYPES, dst, src0, src1,                                                  \
                            model_vec::PlanContinuous(#NAME, site, isSetMask, mask, repeatTime, sizeof(T)),       \
                            repeatParams, OP());                                                                  \
  }                                                                                                               \
  template <typename T>                                                                                           \
  inline void NAME(const LocalTensor<T> &dst, const LocalTensor<T> &src0, const LocalTensor<T> &src1,             \
                   const int32_t &count, const ascend_model::Site &site = ascend_model::Site()) {                 \
    model_vec::BinaryRepeat(#NAME, site, TYPES, dst, src0, src1,                                                  \
                            model_vec::PlanCount(#NAME, site, true, count, sizeof(T)), BinaryRepeatParams(),      \
                            OP());                                                                                \
  }

ASCEND_MODEL_BINARY(Add, model_vec::AddOp, model_vec::Types::kArith)
ASCEND_MODEL_BINARY(Sub, model_vec::SubOp, model_vec::Types::kArith)
ASCEND_MODEL_BINARY(Mul, model_vec::MulOp, model_vec::Types::kArith)
ASCEND_MODEL_BINARY(Div, model_vec::DivOp, model_vec::Types::kFloatOnly)
ASCEND_MODEL_BINARY(Max, model_vec::MaxOp, model_vec::Types::kArith)
ASCEND_MODEL_BINARY(Min, model_vec::MinOp, model_vec::Types::kArith)
ASCEND_MODEL_BINARY(And, model_vec::AndOp, model_vec::Types::kBitwise)
ASCEND_MODEL_BINARY(Or, model_vec::OrOp, model_vec::Types::kBitwise)
#undef ASCEND_MODEL_BINARY

// ---- vector-scalar: Adds Muls Maxs Mins LeakyRelu ----------------------------------------------------
// Each with the `const T &` overloads and the `const U &` ones CANN enables for U = PrimT<T> (= T here:
// the model has no TensorTrait), so a scalar of another type is rejected as it is there.
#define ASCEND_MODEL_SCALAR(NAME, OP, TYPES)                                                                      \
  template <typename T, bool isSetMask = true>                                                                    \
  inline void NAME(const LocalTensor<T> &dst, const LocalTensor<T> &src, const T &scalarValue, uint64_t mask[],   \
                   const uint8_t repeatTime, const UnaryRepeatParams &repeatParams,                               \
                   const ascend_model::Site &site = ascend_model::Site()) {                                       \
    model_vec::Scalar(#NAME, site, TYPES, dst, src, scalarValue,                                                  \
                      model_vec::PlanBits(#NAME, site, isSetMask, mask, repeatTime, sizeof(T)), repeatParams,     \
                      OP());                                                                                      \
  }                                                                                                               \
  template <typename T, typename U, bool isSetMask = true,                                                        \
            typename std::enable_if<std::is_same<T, U>::value, bool>::type = true>                                \
  inline void NAME(const LocalTensor<T> &dst, const LocalTensor<T> &src, const U &scalarValue, uint64_t mask[],   \
                   const uint8_t repeatTime, const UnaryRepeatParams &repeatParams,                               \
                   const ascend_model::Site &site = ascend_model::Site()) {                                       \
    NAME<T, isSetMask>(dst, src, static_cast<const T &>(scalarValue), mask, repeatTime, repeatParams, site);      \
  }                                                                                                               \
  template <typename T, bool isSetMask = true>                                                                    \
  inline void NAME(const LocalTensor<T> &dst, const LocalTensor<T> &src, const T &scalarValue, uint64_t mask,     \
                   const uint8_t repeatTime, const UnaryRepeatParams &repeatParams,                               \
                   const ascend_model::Site &site = ascend_model::Site()) {                                       \
    model_vec::Scalar(#NAME, site, TYPES, dst, src, scalarValue,                                                  \
                      model_vec::PlanContinuous(#NAME, site, isSetMask, mask, repeatTime, sizeof(T)),             \
                      repeatParams, OP());                                                                        \
  }                                                                                                               \
  template <typename T, typename U, bool isSetMask = true,                                                        \
            typename std::enable_if<std::is_same<T, U>::value, bool>::type = true>                                \
  inline void NAME(const LocalTensor<T> &dst, const LocalTensor<T> &src, const U &scalarValue, uint64_t mask,     \
                   const uint8_t repeatTime, const UnaryRepeatParams &repeatParams,                               \
                   const ascend_model::Site &site = ascend_model::Site()) {                                       \
    NAME<T, isSetMask>(dst, src, static_cast<const T &>(scalarValue), mask, repeatTime, repeatParams, site);      \
  }                                                                                                               \
  template <typename T, bool isSetMask = true>                                                                    \
  inline void NAME(const LocalTensor<T> &dst, const LocalTensor<T> &src, const T &scalarValue,                    \
                   const int32_t &count, const ascend_model::Site &site = ascend_model::Site()) {                 \
    model_vec::Scalar(#NAME, site, TYPES, dst, src, scalarValue,                                                  \
                      model_vec::PlanCount(#NAME, site, isSetMask, count, sizeof(T)), UnaryRepeatParams(), OP()); \
  }                                                                                                               \
  template <typename T, typename U, bool isSetMask = true,                                                        \
            typename std::enable_if<std::is_same<T, U>::value, bool>::type = true>                                \
  inline void NAME(const LocalTensor<T> &dst, const LocalTensor<T> &src, const U &scalarValue,                    \
                   const int32_t &count, const ascend_model::Site &site = ascend_model::Site()) {                 \
    NAME<T, isSetMask>(dst, src, static_cast<const T &>(scalarValue), count, site);                               \
  }

ASCEND_MODEL_SCALAR(Adds, model_vec::AddOp, model_vec::Types::kArith)
ASCEND_MODEL_SCALAR(Muls, model_vec::MulOp, model_vec::Types::kArith)
ASCEND_MODEL_SCALAR(Maxs, model_vec::MaxOp, model_vec::Types::kArith)
ASCEND_MODEL_SCALAR(Mins, model_vec::MinOp, model_vec::Types::kArith)
ASCEND_MODEL_SCALAR(LeakyRelu, model_vec::LeakyReluOp, model_vec::Types::kFloatOnly)
#undef ASCEND_MODEL_SCALAR

// ---- unary: Abs Exp Ln Relu --------------------------------------------------------------------------
#define ASCEND_MODEL_UNARY(NAME, OP, TYPES)                                                                       \
  template <typename T, bool isSetMask = true>                                                                    \
  inline void NAME(const LocalTensor<T> &dst, const LocalTensor<T> &src, uint64_t mask[],                         \
                   const uint8_t repeatTime, const UnaryRepeatParams &repeatParams,                               \
                   const ascend_model::Site &site = ascend_model::Site()) {                                       \
    model_vec::Unary(#NAME, site, TYPES, dst, src,                                                                \
                     model_vec::PlanBits(#NAME, site, isSetMask, mask, repeatTime, sizeof(T)), repeatParams,      \
                     OP());                                                                                       \
  }                                                                                                               \
  template <typename T, bool isSetMask = true>                                                                    \
  inline void NAME(const LocalTensor<T> &dst, const LocalTensor<T> &src, uint64_t mask, const uint8_t repeatTime, \
                   const UnaryRepeatParams &repeatParams, const ascend_model::Site &site = ascend_model::Site()) { \
    model_vec::Unary(#NAME, site, TYPES, dst, src,                                                                \
                     model_vec::PlanContinuous(#NAME, site, isSetMask, mask, repeatTime, sizeof(T)),              \
                     repeatParams, OP());                                                                         \
  }                                                                                                               \
  template <typename T>                                                                                           \
  inline void NAME(const LocalTensor<T> &dst, const LocalTensor<T> &src, const int32_t &count,                    \
                   const ascend_model::Site &site = ascend_model::Site()) {                                       \
    model_vec::Unary(#NAME, site, TYPES, dst, src, model_vec::PlanCount(#NAME, site, true, count, sizeof(T)),     \
                     UnaryRepeatParams(), OP());                                                                  \
  }

ASCEND_MODEL_UNARY(Abs, model_vec::AbsOp, model_vec::Types::kFloatOnly)
ASCEND_MODEL_UNARY(Exp, model_vec::ExpOp, model_vec::Types::kFloatOnly)
ASCEND_MODEL_UNARY(Ln, model_vec::LnOp, model_vec::Types::kFloatOnly)
ASCEND_MODEL_UNARY(Relu, model_vec::ReluOp, model_vec::Types::kRelu)
#undef ASCEND_MODEL_UNARY

// ---- Duplicate -----------------------------------------------------------------------------------------
namespace model_vec {
template <typename T>
inline void DuplicateLanes(const char *api, const Site &site, const LocalTensor<T> &dst, const T &scalarValue,
                           const MaskPlan &plan, uint64_t blk, uint64_t rep) {
  static_assert(sizeof(T) == 2 || sizeof(T) == 4, "Duplicate takes 16- or 32-bit elements");
  RequireKind<T>(api, site, {Kind::kI16, Kind::kU16, Kind::kF16, Kind::kBF16, Kind::kI32, Kind::kU32, Kind::kF32},
                 "int16_t, uint16_t, half, bfloat16_t, int32_t, uint32_t or float");
  const Operand d = MakeOperand("dst", dst, blk, rep);
  Elementwise(api, site, d, nullptr, 0, plan, "dstBlockStride", nullptr,
              [&](uint8_t *dp, const uint8_t *const *) { std::memcpy(dp, &scalarValue, sizeof(T)); });
}
}  // namespace model_vec

template <typename T, bool isSetMask = true>
inline void Duplicate(const LocalTensor<T> &dst, const T &scalarValue, uint64_t mask, const uint8_t repeatTime,
                      const uint16_t dstBlockStride, const uint8_t dstRepeatStride,
                      const ascend_model::Site &site = ascend_model::Site()) {
  model_vec::DuplicateLanes("Duplicate", site, dst, scalarValue,
                            model_vec::PlanContinuous("Duplicate", site, isSetMask, mask, repeatTime, sizeof(T)),
                            dstBlockStride, dstRepeatStride);
}
template <typename T, bool isSetMask = true>
inline void Duplicate(const LocalTensor<T> &dst, const T &scalarValue, uint64_t mask[], const uint8_t repeatTime,
                      const uint16_t dstBlockStride, const uint8_t dstRepeatStride,
                      const ascend_model::Site &site = ascend_model::Site()) {
  model_vec::DuplicateLanes("Duplicate", site, dst, scalarValue,
                            model_vec::PlanBits("Duplicate", site, isSetMask, mask, repeatTime, sizeof(T)),
                            dstBlockStride, dstRepeatStride);
}
template <typename T>
inline void Duplicate(const LocalTensor<T> &dst, const T &scalarValue, const int32_t &count,
                      const ascend_model::Site &site = ascend_model::Site()) {
  model_vec::DuplicateLanes("Duplicate", site, dst, scalarValue,
                            model_vec::PlanCount("Duplicate", site, true, count, sizeof(T)), 1, 8);
}

}  // namespace AscendC

#endif  // ASCEND_MODEL_OPS_VECTOR_BASIC_H
