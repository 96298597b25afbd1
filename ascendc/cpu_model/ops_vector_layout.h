// Modelled AscendC vector data-layout instructions for Atlas A2/A3 (__NPU_ARCH__ 2201), declared as in
// CANN's basic_api/kernel_operator_vec_brcb_intf.h, kernel_operator_data_copy_intf.h (Copy, UB -> UB),
// kernel_operator_vec_transpose_intf.h and kernel_operator_vec_gather_intf.h, with their structs
// (kernel_struct_brcb.h, kernel_struct_data_copy.h, kernel_struct_transpose.h, kernel_struct_gather.h),
// each with a trailing defaulted Site. Documents (docs/zh/api/SIMD-API/基础API/Memory矢量计算/):
//  数据填充/Brcb.md: repeat i fills 8 data blocks (32 bytes each) with src[8i .. 8i+7], block j of repeat i at
//    dst + (i * dstRepStride + j * dstBlkStride) * 32 bytes; src read contiguously; types int16_t uint16_t half
//    bfloat16_t int32_t uint32_t float; repeatTime in [0, 255] (0: NOP); dstBlkStride 0 undefined (refused);
//    src and dst must not share memory.
//  数据搬运/Copy（UBToUB掩码式高维数据搬运）.md: an element-wise copy with a mask, block strides (dstStride,
//    srcStride, [0, 65535]) and repeat strides (dstRepeatSize, srcRepeatSize, [0, 4095]) in 32-byte blocks;
//    types int16_t uint16_t half bfloat16_t int32_t uint32_t float; repeatTime 0: NOP; the overlap rules of
//    通用地址重叠约束. Counter mode differs from the other APIs: the mask is the element count of each
//    repeat and repeatTime counts (the model takes counts up to one repeat's lanes; above, the run stops).
//  数据排布转换/Transpose.md: the 16 x 16 form, dst[i][j] = src[j][i] over 512 bytes, int16_t uint16_t half,
//    src and dst may be the same tensor; the enhanced form: TRANSPOSE_ND2ND_B16 (uint16_t on A2/A3) is the
//    16 x 16 form; TRANSPOSE_NCHW2NHWC / NHWC2NCHW (int8_t uint8_t int16_t uint16_t half int32_t uint32_t
//    float) permute [N, C, H, W] <-> [N, H, W, C], need sharedTmpBuffer of (C + 2) * h0 * w0 * sizeof(T)
//    (NCHW2NHWC) or (2C + 1) * h0 * w0 * sizeof(T) bytes (h0 = 32 for 8-bit types, else 16; w0 =
//    32 / sizeof(T)), H * W * sizeof(T) a multiple of 32, N <= 65535, C <= 4095, H * W <= 4095, a 0 size a
//    NOP, no src / dst reuse. The other TransposeTypes are "not supported" and stop the run.
// Declared but not modelled (a call stops the run, naming it): TransDataTo5HD, Gatherb.
// Assumptions: the enhanced Transpose's sharedTmpBuffer is reported as written over its documented size
// (its contents afterwards are not documented and not modelled).
#ifndef ASCEND_MODEL_OPS_VECTOR_LAYOUT_H
#define ASCEND_MODEL_OPS_VECTOR_LAYOUT_H

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "ops_vector_common.h"

namespace AscendC {

struct BrcbRepeatParams {
  BrcbRepeatParams() {}
  BrcbRepeatParams(const uint16_t dstBlkStrideIn, const uint16_t dstRepStrideIn)
      : dstRepStride(dstRepStrideIn), dstBlkStride(dstBlkStrideIn) {}
  uint32_t blockNumber = DEFAULT_BLK_NUM;
  uint16_t dstRepStride = DEFAULT_REPEAT_STRIDE;
  uint16_t dstBlkStride = DEFAULT_BLK_STRIDE;
  uint8_t src0BlkStride = DEFAULT_BLK_STRIDE;
  uint8_t src1BlkStride = DEFAULT_BLK_STRIDE;
  uint8_t src0RepStride = DEFAULT_REPEAT_STRIDE;
  uint8_t src1RepStride = DEFAULT_REPEAT_STRIDE;
  bool repeatStrideMode = false;
  bool strideSizeMode = false;
};

// As in kernel_struct_data_copy.h (the block strides default to DEFAULT_DATA_COPY_STRIDE, 0).
struct CopyRepeatParams {
  CopyRepeatParams() {}
  CopyRepeatParams(const uint16_t dstStrideIn, const uint16_t srcStrideIn, uint16_t dstRepeatSizeIn,
                   uint16_t srcRepeatSizeIn)
      : dstStride(dstStrideIn), srcStride(srcStrideIn), dstRepeatSize(dstRepeatSizeIn), srcRepeatSize(srcRepeatSizeIn) {}
  uint16_t dstStride = 0;
  uint16_t srcStride = 0;
  uint16_t dstRepeatSize = DEFAULT_REPEAT_STRIDE;
  uint16_t srcRepeatSize = DEFAULT_REPEAT_STRIDE;
};

struct GatherRepeatParams {
  GatherRepeatParams() {}
  GatherRepeatParams(const uint8_t dstBlkStrideIn, const uint8_t dstRepStrideIn)
      : dstRepStride(dstRepStrideIn), dstBlkStride(dstBlkStrideIn) {}
  uint32_t blockNumber = DEFAULT_BLK_NUM;
  uint16_t dstRepStride = DEFAULT_REPEAT_STRIDE;
  uint8_t dstBlkStride = DEFAULT_BLK_STRIDE;
  uint8_t src0BlkStride = DEFAULT_BLK_STRIDE;
  uint8_t src1BlkStride = DEFAULT_BLK_STRIDE;
  uint8_t src0RepStride = DEFAULT_REPEAT_STRIDE;
  uint8_t src1RepStride = DEFAULT_REPEAT_STRIDE;
  bool repeatStrideMode = false;
  bool strideSizeMode = false;
};

enum class TransposeType : uint8_t {
  TRANSPOSE_TYPE_NONE,
  TRANSPOSE_NZ2ND_0213,
  TRANSPOSE_NZ2NZ_0213,
  TRANSPOSE_NZ2NZ_012_WITH_N,
  TRANSPOSE_NZ2ND_012_WITH_N,
  TRANSPOSE_NZ2ND_012_WITHOUT_N,
  TRANSPOSE_NZ2NZ_012_WITHOUT_N,
  TRANSPOSE_ND2ND_ONLY,
  TRANSPOSE_ND_UB_GM,
  TRANSPOSE_GRAD_ND_UB_GM,
  TRANSPOSE_ND2ND_B16,
  TRANSPOSE_NCHW2NHWC,
  TRANSPOSE_NHWC2NCHW,
};

struct TransDataTo5HDParams {
  constexpr TransDataTo5HDParams() = default;
  constexpr TransDataTo5HDParams(const bool dstHighHalfIn, const bool srcHighHalfIn, const uint8_t repeatTimesIn,
                                 const uint16_t dstRepStrideIn, const uint16_t srcRepStrideIn)
      : dstHighHalf(dstHighHalfIn),
        srcHighHalf(srcHighHalfIn),
        repeatTimes(repeatTimesIn),
        dstRepStride(dstRepStrideIn),
        srcRepStride(srcRepStrideIn) {}
  bool dstHighHalf = false;
  bool srcHighHalf = false;
  uint8_t repeatTimes = 1;
  uint16_t dstRepStride = 0;
  uint16_t srcRepStride = 0;
};

struct TransposeParamsExt {
  constexpr TransposeParamsExt() = default;
  constexpr TransposeParamsExt(const uint16_t nSizeIn, const uint16_t cSizeIn, const uint16_t hSizeIn,
                               const uint16_t wSizeIn, const TransposeType transposeTypeIn)
      : nSize(nSizeIn), cSize(cSizeIn), hSize(hSizeIn), wSize(wSizeIn), transposeType(transposeTypeIn) {}
  uint16_t nSize = 0;
  uint16_t cSize = 0;
  uint16_t hSize = 0;
  uint16_t wSize = 0;
  TransposeType transposeType = TransposeType::TRANSPOSE_ND2ND_B16;
};

constexpr int32_t NCHW_CONV_ADDR_LIST_SIZE = 16;

// ---- Brcb ------------------------------------------------------------------------------------------------
template <typename T>
inline void Brcb(const LocalTensor<T> &dst, const LocalTensor<T> &src, const uint8_t repeatTime,
                 const BrcbRepeatParams &repeatParams, const ascend_model::Site &site = ascend_model::Site()) {
  using namespace ascend_model;
  using model_vec::Kind;
  const char *api = "Brcb";
  model_vec::RequireKind<T>(api, site,
                            {Kind::kI16, Kind::kU16, Kind::kF16, Kind::kBF16, Kind::kI32, Kind::kU32, Kind::kF32},
                            "int16_t, uint16_t, half, bfloat16_t, int32_t, uint32_t or float");
  const Span d = dst.ModelSpan(), s = src.ModelSpan();
  model_vec::RequireUb(api, site, d, "dst", ops::kBlockBytes);
  model_vec::RequireUb(api, site, s, "src", ops::kBlockBytes);
  if (repeatTime == 0) return;  // documented NOP
  if (repeatParams.dstBlkStride == 0) Fail(api, site, "dstBlkStride must not be 0 (undefined on hardware)");
  const uint64_t e = sizeof(T), n = static_cast<uint64_t>(repeatTime) * 8;
  ops::RangeSet reads(s, Pipe::kV, Access::kRead, api, site);
  reads.Add(0, n * e);
  ops::RangeSet writes(d, Pipe::kV, Access::kWrite, api, site);
  std::vector<uint64_t> at(n);
  for (uint64_t i = 0; i < repeatTime; ++i) {
    for (uint64_t j = 0; j < 8; ++j) {
      at[i * 8 + j] = (i * repeatParams.dstRepStride + j * repeatParams.dstBlkStride) * ops::kBlockBytes;
      writes.Add(at[i * 8 + j], ops::kBlockBytes);
      if (ops::HostOverlap(d.host + at[i * 8 + j], ops::kBlockBytes, s.host, n * e)) {
        Fail(api, site, "src and dst share memory (not supported)");
      }
    }
  }
  writes.Normalize();
  reads.Report();
  writes.Report();
  for (uint64_t k = 0; k < n; ++k) {
    for (uint64_t b = 0; b < ops::kBlockBytes; b += e) std::memcpy(d.host + at[k] + b, s.host + k * e, e);
  }
  CountVectorRepeats(repeatTime, model_vec::VectorOp(api, e));
}

// ---- Copy (UB -> UB) -------------------------------------------------------------------------------------
namespace model_vec {
template <typename T>
inline void CopyLanes(const Site &site, const LocalTensor<T> &dst, const LocalTensor<T> &src, const MaskPlan &plan,
                      const CopyRepeatParams &p) {
  const char *api = "Copy";
  RequireKind<T>(api, site, {Kind::kI16, Kind::kU16, Kind::kF16, Kind::kBF16, Kind::kI32, Kind::kU32, Kind::kF32},
                 "int16_t, uint16_t, half, bfloat16_t, int32_t, uint32_t or float");
  ascend_model::ops::RequireRange(api, site, "dstRepeatSize", p.dstRepeatSize, 0, 4095);
  ascend_model::ops::RequireRange(api, site, "srcRepeatSize", p.srcRepeatSize, 0, 4095);
  const Operand d = MakeOperand("dst", dst, p.dstStride, p.dstRepeatSize);
  const Operand s[1] = {MakeOperand("src", src, p.srcStride, p.srcRepeatSize)};
  Elementwise(api, site, d, s, 1, plan, "dstStride", nullptr,
              [&](uint8_t *dp, const uint8_t *const *sp) { std::memcpy(dp, sp[0], sizeof(T)); });
}
// Copy's Counter mode: the count is per repeat and repeatTime counts (the document's difference).
inline MaskPlan CopyCounterPlan(const char *api, const Site &site, uint64_t count, uint64_t repeatTime,
                                uint64_t elemBytes) {
  const uint64_t lanes = LanesOf(elemBytes);
  if (count > lanes) {
    Fail(api, site, "Counter mode with " + Num(count) + " elements a repeat (more than the " + Num(lanes) +
                        " lanes of 256 bytes) is not modelled");
  }
  return NormalPlan(ascend_model::ops::ContinuousMask(count, lanes), repeatTime, lanes);
}
inline MaskPlan CopyPlan(const char *api, const Site &site, bool isSetMask, const uint64_t *bits, uint64_t cont,
                         uint64_t repeatTime, uint64_t elemBytes) {
  if (MaskReg().counter) {
    uint64_t count;
    if (!isSetMask) {
      if (!MaskReg().userSet) Fail(api, site, "isSetMask = false, but no SetVectorMask set the count");
      count = MaskReg().low;
    } else {
      count = bits != nullptr ? bits[0] : cont;
      ClobberMask(0, count);
    }
    return CopyCounterPlan(api, site, count, repeatTime, elemBytes);
  }
  return bits != nullptr ? PlanBits(api, site, isSetMask, bits, repeatTime, elemBytes)
                         : PlanContinuous(api, site, isSetMask, cont, repeatTime, elemBytes);
}
}  // namespace model_vec

template <typename T, bool isSetMask = true>
inline void Copy(const LocalTensor<T> &dst, const LocalTensor<T> &src, const uint64_t mask[], const uint8_t repeatTime,
                 const CopyRepeatParams &repeatParams, const ascend_model::Site &site = ascend_model::Site()) {
  model_vec::CopyLanes(site, dst, src,
                       model_vec::CopyPlan("Copy", site, isSetMask, mask, 0, repeatTime, sizeof(T)), repeatParams);
}
template <typename T, bool isSetMask = true>
inline void Copy(const LocalTensor<T> &dst, const LocalTensor<T> &src, const uint64_t mask, const uint8_t repeatTime,
                 const CopyRepeatParams &repeatParams, const ascend_model::Site &site = ascend_model::Site()) {
  model_vec::CopyLanes(site, dst, src,
                       model_vec::CopyPlan("Copy", site, isSetMask, nullptr, mask, repeatTime, sizeof(T)),
                       repeatParams);
}

// ---- Transpose ---------------------------------------------------------------------------------------------
namespace model_vec {
template <typename T>
inline void Transpose16(const char *api, const Site &site, const LocalTensor<T> &dst, const LocalTensor<T> &src) {
  using namespace ascend_model;
  const Span d = dst.ModelSpan(), s = src.ModelSpan();
  RequireUb(api, site, d, "dst", kBlockBytes);
  RequireUb(api, site, s, "src", kBlockBytes);
  const uint64_t bytes = 16 * 16 * 2;
  if (d.host != s.host && ops::HostOverlap(d.host, bytes, s.host, bytes)) {
    Fail(api, site, "src and dst overlap without being the same tensor (not supported)");
  }
  Touch(s, 0, bytes, Pipe::kV, Access::kRead, api, site);
  Touch(d, 0, bytes, Pipe::kV, Access::kWrite, api, site);
  uint8_t tmp[bytes];
  for (int i = 0; i < 16; ++i) {
    for (int j = 0; j < 16; ++j) std::memcpy(tmp + (i * 16 + j) * 2, s.host + (j * 16 + i) * 2, 2);
  }
  std::memcpy(d.host, tmp, bytes);
  CountVectorRepeats(2, model_vec::VectorOp(api, sizeof(T)));
}
}  // namespace model_vec

template <typename T>
inline void Transpose(const LocalTensor<T> &dst, const LocalTensor<T> &src,
                      const ascend_model::Site &site = ascend_model::Site()) {
  using model_vec::Kind;
  model_vec::RequireKind<T>("Transpose", site, {Kind::kI16, Kind::kU16, Kind::kF16}, "int16_t, uint16_t or half");
  model_vec::Transpose16("Transpose", site, dst, src);
}

template <typename T>
inline void Transpose(const LocalTensor<T> &dst, const LocalTensor<T> &src, const LocalTensor<uint8_t> &sharedTmpBuffer,
                      const TransposeParamsExt &transposeParams,
                      const ascend_model::Site &site = ascend_model::Site()) {
  using namespace ascend_model;
  using model_vec::Kind;
  const char *api = "Transpose";
  const TransposeParamsExt &p = transposeParams;
  if (p.transposeType == TransposeType::TRANSPOSE_ND2ND_B16) {
    model_vec::RequireKind<T>(api, site, {Kind::kU16}, "uint16_t (TRANSPOSE_ND2ND_B16)");
    model_vec::Transpose16(api, site, dst, src);
    return;
  }
  const bool toNhwc = p.transposeType == TransposeType::TRANSPOSE_NCHW2NHWC;
  if (!toNhwc && p.transposeType != TransposeType::TRANSPOSE_NHWC2NCHW) {
    Fail(api, site, "transposeType " + ops::Num(static_cast<uint8_t>(p.transposeType)) +
                        " is not supported (only TRANSPOSE_ND2ND_B16, NCHW2NHWC, NHWC2NCHW)");
  }
  model_vec::RequireKind<T>(
      api, site, {Kind::kI8, Kind::kU8, Kind::kI16, Kind::kU16, Kind::kF16, Kind::kI32, Kind::kU32, Kind::kF32},
      "int8_t, uint8_t, int16_t, uint16_t, half, int32_t, uint32_t or float");
  const uint64_t e = sizeof(T);
  const Span d = dst.ModelSpan(), s = src.ModelSpan(), t = sharedTmpBuffer.ModelSpan();
  model_vec::RequireUb(api, site, d, "dst", ops::kBlockBytes);
  model_vec::RequireUb(api, site, s, "src", ops::kBlockBytes);
  model_vec::RequireUb(api, site, t, "sharedTmpBuffer", ops::kBlockBytes);
  const uint64_t N = p.nSize, C = p.cSize, HW = static_cast<uint64_t>(p.hSize) * p.wSize;
  ops::RequireRange(api, site, "cSize", C, 0, 4095);
  ops::RequireRange(api, site, "hSize * wSize", HW, 0, 4095);
  if (N == 0 || C == 0 || HW == 0) return;  // documented: no computation, no write
  if (HW * e % 32 != 0) Fail(api, site, "hSize * wSize * sizeof(T) = " + ops::Num(HW * e) + " is not 32-byte aligned");
  const uint64_t h0 = e == 1 ? 32 : 16, w0 = 32 / e;
  const uint64_t need = (toNhwc ? C + 2 : 2 * C + 1) * h0 * w0 * e;
  if (t.bytes < need) {
    Fail(api, site, "sharedTmpBuffer ('" + std::string(t.buffer) + "') has " + ops::Num(t.bytes) +
                        " bytes from its start; the document requires " + ops::Num(need));
  }
  const uint64_t bytes = N * C * HW * e;
  if (ops::HostOverlap(d.host, bytes, s.host, bytes)) Fail(api, site, "src and dst share memory (not supported here)");
  Touch(s, 0, bytes, Pipe::kV, Access::kRead, api, site);
  Touch(t, 0, need, Pipe::kV, Access::kWrite, api, site);
  Touch(d, 0, bytes, Pipe::kV, Access::kWrite, api, site);
  for (uint64_t n = 0; n < N; ++n) {
    for (uint64_t c = 0; c < C; ++c) {
      for (uint64_t x = 0; x < HW; ++x) {
        const uint64_t nchw = (n * C + c) * HW + x, nhwc = (n * HW + x) * C + c;
        if (toNhwc) std::memcpy(d.host + nhwc * e, s.host + nchw * e, e);
        else std::memcpy(d.host + nchw * e, s.host + nhwc * e, e);
      }
    }
  }
  CountVectorRepeats((bytes + ops::kRepeatBytes - 1) / ops::kRepeatBytes, model_vec::VectorOp(api, e));
}

// ---- declared, not modelled ------------------------------------------------------------------------------
template <typename T>
inline void TransDataTo5HD(const LocalTensor<T> (&dstList)[NCHW_CONV_ADDR_LIST_SIZE],
                           const LocalTensor<T> (&srcList)[NCHW_CONV_ADDR_LIST_SIZE],
                           const TransDataTo5HDParams &nchwconvParams,
                           const ascend_model::Site &site = ascend_model::Site()) {
  (void)dstList, (void)srcList, (void)nchwconvParams;
  ascend_model::Fail("TransDataTo5HD", site, "not modelled");
}
template <typename T>
inline void TransDataTo5HD(uint64_t dstList[NCHW_CONV_ADDR_LIST_SIZE], uint64_t srcList[NCHW_CONV_ADDR_LIST_SIZE],
                           const TransDataTo5HDParams &nchwconvParams,
                           const ascend_model::Site &site = ascend_model::Site()) {
  (void)dstList, (void)srcList, (void)nchwconvParams;
  ascend_model::Fail("TransDataTo5HD", site, "not modelled");
}
template <typename T>
inline void Gatherb(const LocalTensor<T> &dst, const LocalTensor<T> &src, const LocalTensor<uint32_t> &offset,
                    const uint8_t repeatTime, const GatherRepeatParams &repeatParams,
                    const ascend_model::Site &site = ascend_model::Site()) {
  (void)dst, (void)src, (void)offset, (void)repeatTime, (void)repeatParams;
  ascend_model::Fail("Gatherb", site, "not modelled");
}

}  // namespace AscendC

#endif  // ASCEND_MODEL_OPS_VECTOR_LAYOUT_H
