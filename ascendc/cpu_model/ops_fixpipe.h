// Modelled AscendC transfers out of L0C for Atlas A2/A3 (__NPU_ARCH__ 2201), on FIX: Fixpipe to GM (NZ -> ND,
// NZ -> NZ; with the scalar or per-channel quantisation of "随路量化"), Fixpipe to L1 (NZ -> NZ, converting:
// "Fixpipe（L0C到L1数据搬运）"), and DataCopy L0C -> GM
// (DataCopyCO12DstParams) with the FIXPIPE registers it reads (SetFixpipePreQuantFlag, SetFixPipeConfig,
// SetFixpipeNz2ndFlag). The parameter structs (FixpipeParamsV220, FixpipeConfig, QuantMode_t) are in
// ops_cube.h with the other Cube declarations; each function has a trailing defaulted ascend_model::Site.
#ifndef ASCEND_MODEL_OPS_FIXPIPE_H
#define ASCEND_MODEL_OPS_FIXPIPE_H

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

#include "model_hooks.h"
#include "ops_common.h"
#include "ops_cube.h"

namespace AscendC {

namespace model_detail {
// One quantisation word of Fixpipe (deqScalar, SetFixpipePreQuantFlag, or one uint64_t per column in
// cbufWorkspace / the Fixpipe Buffer), decoded as table 1 of "随路量化" gives it for NPU architecture 2201:
// bits 0-31 M1, a float the hardware uses as (1, 8, 10) (sign 31, exponent 23-30, mantissa 13-22: bits
// 0-12 are dropped); bits 32-35 N (0b0000 = 1 ... 0b1111 = 16); bit 36 MCB; bits 37-45 Offset (9 bits);
// bit 46 Sign (1: int8 result, 0: uint8). M1 must not be inf / nan / subnormal (Fixpipe's constraints).
struct QuantWord {
  float m1;
  uint32_t n;
  bool mcb;
  uint32_t offset;
  bool sign;
};

inline QuantWord DecodeQuantWord(const char *api, const ascend_model::Site &site, uint64_t w, const char *what) {
  using namespace ascend_model;
  QuantWord q;
  const uint32_t bits = static_cast<uint32_t>(w) & 0xFFFFE000u;
  const uint32_t exponent = (bits >> 23) & 0xFF;
  if (exponent == 0xFF || (exponent == 0 && (bits & 0x7FFFFFFFu) != 0)) {
    Fail(api, site, std::string(what) + ": the quantisation scale M1 (bits 0-31) is inf, nan or subnormal, which "
                                        "the document forbids");
  }
  std::memcpy(&q.m1, &bits, sizeof(float));
  q.n = static_cast<uint32_t>((w >> 32) & 0xF) + 1;
  q.mcb = ((w >> 36) & 1) != 0;
  q.offset = static_cast<uint32_t>((w >> 37) & 0x1FF);
  q.sign = ((w >> 46) & 1) != 0;
  return q;
}

// What Fixpipe (FixpipeParamsV220) and DataCopy L0C -> GM (DataCopyCO12DstParams + the FIXPIPE registers)
// share: one L0C -> GM transfer on FIX.
struct L0cToGm {
  uint16_t nSize = 0, mSize = 0, srcStride = 0;
  uint32_t dstStride = 0;
  QuantMode_t quantPre = NoQuant;
  uint64_t scalar = 0;                      // the scalar quantisation word (DEQF16 / QF322B8_PRE / REQ8)
  const ascend_model::Span *words = nullptr;  // per-column words (VDEQF16 / VQF322B8_PRE / VREQ8), or none
  uint16_t ndNum = 1, srcNdStride = 0;
  uint32_t dstNdStride = 0;
  bool relu = false, nz2nd = true, channelSplit = false;
  uint8_t unitFlag = 0;
};

inline bool IsVectorQuant(QuantMode_t q) { return q == VDEQF16 || q == VQF322B8_PRE || q == VREQ8; }

// A float result stored as T (CAST_RINT). Into half or bfloat16_t under CTRL[48]'s saturation mode
// (`saturate`, the default; SetSaturationFlag<SaturationMode::FLOAT>): a result that is inf becomes
// +-MAX of T and NaN becomes 0 (Fixpipe / DataCopy L0C -> GM: 特殊值/边界值约束说明); otherwise
// inf / NaN stay.
template <typename T>
inline void StoreConverted(uint8_t *out, float v, bool saturate) {
  using namespace ascend_model;
  using namespace ascend_model::ops;
  StoreFloat<T>(out, v, Rounding::kRint);
  constexpr Kind k = KindOf<T>();
  if (k != Kind::kF16 && k != Kind::kBF16) return;
  if (!saturate) return;
  const float back = LoadFloat<T>(out);
  if (std::isnan(back)) {
    StoreFloat<T>(out, 0.0f, Rounding::kRint);
  } else if (std::isinf(back)) {
    const float max = k == Kind::kF16 ? 65504.0f : 3.38953139e38f;  // the largest finite half / bfloat16_t
    StoreFloat<T>(out, back > 0.0f ? max : -max, Rounding::kRint);
  }
}

// L0C (CO1) -> GM, or -> L1 (C1) when d is in L1. Element (m, n) of NZ matrix i is read from element
//   i * srcNdStride * 256 + (n / 16) * srcStride * 16 + m * 16 + n % 16      of src,
// converted (below), and written to
//   NZ2ND: element i * dstNdStride + m * dstStride + n of dst (dstStride: elements per ND row)
//   NZ2NZ ("NZ2NZ" pseudo code; one matrix): byte (n / 16) * dstStride * 32 + m * 16 * sizeof(T) + (n % 16) *
//          sizeof(T) of dst (dstStride in 32-byte units)
// for m < mSize, n < nSize. The conversions (quantPre, "随路量化", "随路量化与随路ReLU场景组合"; A2/A3 data
// types of the Fixpipe document): float -> float (NoQuant), half (F322F16), bfloat16_t (F322BF16), both
// CAST_RINT and then CTRL[48]'s saturation; float -> int8_t / uint8_t ((V)QF322B8_PRE); int32_t -> int32_t (NoQuant), half ((V)DEQF16),
// int8_t / uint8_t ((V)REQ8). ReLU (reluEn / reluPre) multiplies negative values by M2 = 0; without it
// M2 = M1. With a quantisation word:
//   x (int32_t source): MCB = 1 -> x >> N (arithmetic), which must fit int16_t (the document says it
//     becomes an int16_t and does not say how it saturates: the model stops otherwise); then x as float
//     (round to nearest even for |x| > 2^24, an assumption); MCB and N are ignored for QF322B8_PRE
//   y = x * (x >= 0 ? M1 : M2) in fp32
//   (V)DEQF16: half(y), CAST_RINT, then CTRL[48]'s saturation (StoreConverted)
//   (V)QF322B8_PRE / (V)REQ8: rint(y) (round half to even: the document's CAST_RINT), saturated to
//     [-128, 127] when Sign = 1 or [0, 255] when Sign = 0, stored as one byte. A nonzero Offset stops the
//     run: the document calls it a 9-bit integer without saying whether it is signed or where it is
//     saturated.
// Into L1 ("Fixpipe（L0C到L1数据搬运）", FixpipeParamsV220 on A2/A3): NZ -> NZ only (ndNum and the ND strides
// act on the GM path only; CANN's dav_c220 FixpipeL0C2L1Impl refuses nz2ndEn), a converting mode only (the
// table: "此通路不支持NoQuant"; float -> half / bfloat16_t / int8_t / uint8_t, int32_t -> half / int8_t /
// uint8_t), dst 32-byte aligned; what FIX writes there is counted apart (CountFixIntoL1) for the cost model.
// Not modelled (stop the run): unitFlag, channel split, NZ output of 1-byte types (int8 channel merge).
template <typename T, typename U>
inline void L0cOutTransfer(const char *api, const ascend_model::Site &site, const ascend_model::Span &d,
                            const ascend_model::Span &s, const L0cToGm &p) {
  using namespace ascend_model;
  using namespace ascend_model::ops;
  const bool toL1 = d.space == Space::kL1;
  if (!toL1) RequireSpace(api, site, d, Space::kGM, "dst");
  RequireSpace(api, site, s, Space::kL0C, "src");
  if (toL1 && p.nz2nd) Fail(api, site, "NZ2ND (CFG_ROW_MAJOR) into L1 is not available on A2/A3: use CFG_NZ");
  if (toL1 && p.quantPre == NoQuant) {
    Fail(api, site, "quantPre NoQuant into L1: the document says this path does not support it (F322F16, "
                    "F322BF16 or a quantisation mode)");
  }
  if (p.nSize == 0 || p.mSize == 0 || p.ndNum == 0) return;  // documented NOP
  RequireRange(api, site, "nSize", p.nSize, 0, 4095);
  // The parameter tables (FixpipeParamsV220, DataCopyCO12DstParams) say nSize must be a multiple of 16.
  // NZ2ND.md's pseudo code loops over ceil(nSize / 16) column groups and CANN's own mmad example passes
  // nSize = 40 with NZ2ND, but what such a copy writes past nSize is not documented: the model keeps the
  // tables' rule.
  if (p.nSize % 16 != 0) Fail(api, site, "nSize = " + Num(p.nSize) + " must be a multiple of 16");
  RequireRange(api, site, "mSize", p.mSize, 0, p.nz2nd ? 8192 : 65535);
  if (p.dstStride == 0) Fail(api, site, "dstStride must not be 0");
  RequireRange(api, site, "srcNdStride", p.srcNdStride, 0, 512);
  if (p.unitFlag != 0) Fail(api, site, "unitFlag = " + Num(p.unitFlag) + " is not modelled (use 0)");
  if (p.channelSplit) Fail(api, site, "channel split (F32 Channel Split) is not modelled");
  constexpr Kind kd = KindOf<T>(), ks = KindOf<U>();
  const QuantMode_t q = p.quantPre;
  const bool b8 = kd == Kind::kI8 || kd == Kind::kU8;
  const bool ok = (ks == Kind::kF32 && ((kd == Kind::kF32 && q == NoQuant) || (kd == Kind::kF16 && q == F322F16) ||
                                        (kd == Kind::kBF16 && q == F322BF16) ||
                                        (b8 && (q == QF322B8_PRE || q == VQF322B8_PRE)))) ||
                  (ks == Kind::kI32 && ((kd == Kind::kI32 && q == NoQuant) ||
                                        (kd == Kind::kF16 && (q == DEQF16 || q == VDEQF16)) ||
                                        (b8 && (q == REQ8 || q == VREQ8))));
  if (!ok) {
    Fail(api, site, std::string("quantPre ") + Num(static_cast<uint64_t>(q)) + " from " + KindName(ks) + " to " +
                        KindName(kd) +
                        " is not modelled: not an A2/A3 combination (float -> float NoQuant, half F322F16, "
                        "bfloat16_t F322BF16, "
                        "int8_t/uint8_t (V)QF322B8_PRE; int32_t -> int32_t NoQuant, half (V)DEQF16, int8_t/uint8_t "
                        "(V)REQ8)");
  }
  if (IsVectorQuant(q) && p.words == nullptr) {
    Fail(api, site, "a vector quantisation mode needs the per-column quantisation words (Fixpipe's cbufWorkspace "
                    "overload, or SetFixPipeConfig before DataCopy)");
  }
  RequireAlign(api, site, s, 64, "src");
  if (!p.nz2nd) {
    if (sizeof(T) == 1) Fail(api, site, "NZ output of 1-byte types (Int8 Channel Merge) is not modelled");
    RequireAlign(api, site, d, kBlockBytes, "dst");
  }
  const uint64_t e = sizeof(T);
  const uint64_t groups = p.nSize / 16;
  const uint64_t nd = p.nz2nd ? p.ndNum : 1;
  std::vector<QuantWord> colWord;
  QuantWord scalarWord{};
  const bool quant = q == DEQF16 || q == VDEQF16 || q == QF322B8_PRE || q == VQF322B8_PRE || q == REQ8 || q == VREQ8;
  RangeSet reads(s, Pipe::kFIX, Access::kRead, api, site);
  RangeSet writes(d, Pipe::kFIX, Access::kWrite, api, site);
  for (uint64_t i = 0; i < nd; ++i) {
    const uint64_t srcBase = i * p.srcNdStride * 256;
    for (uint64_t g = 0; g < groups; ++g) {
      reads.Add((srcBase + g * p.srcStride * 16) * sizeof(U), p.mSize * 16 * sizeof(U));
    }
  }
  if (p.nz2nd) {
    for (uint64_t i = 0; i < nd; ++i) {
      for (uint64_t r = 0; r < p.mSize; ++r) writes.Add((i * p.dstNdStride + r * uint64_t(p.dstStride)) * e, p.nSize * e);
    }
  } else {
    for (uint64_t g = 0; g < groups; ++g) {
      for (uint64_t r = 0; r < p.mSize; ++r) writes.Add(g * p.dstStride * kBlockBytes + r * 16 * e, 16 * e);
    }
  }
  reads.Normalize();
  writes.Normalize();
  reads.Report();
  if (quant && IsVectorQuant(q)) {
    const Span &w = *p.words;
    RangeSet wr(w, Pipe::kFIX, Access::kRead, api, site);
    wr.Add(0, p.nSize * sizeof(uint64_t));
    wr.Report();
    colWord.resize(p.nSize);
    for (uint64_t c = 0; c < p.nSize; ++c) {
      uint64_t word;
      std::memcpy(&word, w.host + c * sizeof(uint64_t), sizeof(word));
      colWord[c] = DecodeQuantWord(api, site, word, ("quantisation word " + Num(c)).c_str());
    }
  } else if (quant) {
    scalarWord = DecodeQuantWord(api, site, p.scalar, "the scalar quantisation word");
  }
  writes.Report();
  if (toL1) CountFixIntoL1(reads.Bytes());

  const bool saturate = FloatSaturation(api, site);
  auto convert = [&](const uint8_t *in, uint64_t col, uint8_t *out) {
    if (!quant) {
      if (ks == Kind::kI32) {
        int32_t x;
        std::memcpy(&x, in, 4);
        if (p.relu && x < 0) x = 0;
        std::memcpy(out, &x, 4);
      } else {
        float v;
        std::memcpy(&v, in, 4);
        if (p.relu && v < 0.0f) v = 0.0f;
        StoreConverted<T>(out, v, saturate);
      }
      return;
    }
    const QuantWord &w = IsVectorQuant(q) ? colWord[col] : scalarWord;
    float x;
    if (ks == Kind::kI32) {
      int32_t xi;
      std::memcpy(&xi, in, 4);
      if (w.mcb) {
        const int32_t shifted = xi >> w.n;
        if (shifted < -32768 || shifted > 32767) {
          Fail(api, site, "MCB = 1: " + std::to_string(xi) + " >> " + Num(w.n) + " = " + std::to_string(shifted) +
                              " does not fit int16_t, and the document does not say how it saturates");
        }
        xi = shifted;
      }
      x = static_cast<float>(xi);
    } else {
      std::memcpy(&x, in, 4);
    }
    const float y = x * ((x >= 0.0f || !p.relu) ? w.m1 : 0.0f);
    if (q == DEQF16 || q == VDEQF16) {
      StoreConverted<T>(out, y, saturate);
      return;
    }
    if (w.offset != 0) {
      Fail(api, site, "quantisation Offset = " + Num(w.offset) + " (bits 37-45): the document calls it a 9-bit "
                      "integer without saying whether it is signed or how the sum saturates; the model needs 0");
    }
    double r = std::nearbyint(static_cast<double>(y));  // default rounding: to nearest, ties to even
    if (std::isnan(y)) r = 0;
    const double lo = w.sign ? -128 : 0, hi = w.sign ? 127 : 255;
    r = r < lo ? lo : (r > hi ? hi : r);
    const int v = static_cast<int>(r);
    out[0] = static_cast<uint8_t>(v & 0xFF);
  };

  std::vector<uint8_t> row(p.nSize * e);
  for (uint64_t i = 0; i < nd; ++i) {
    for (uint64_t r = 0; r < p.mSize; ++r) {
      for (uint64_t col = 0; col < p.nSize; ++col) {
        const uint64_t at = i * p.srcNdStride * 256 + (col / 16) * p.srcStride * 16 + r * 16 + col % 16;
        convert(s.host + at * sizeof(U), col, row.data() + col * e);
      }
      if (p.nz2nd) {
        StoreGm(d.host + (i * p.dstNdStride + r * uint64_t(p.dstStride)) * e, row.data(), row.size(), e, api, site);
      } else {
        for (uint64_t g = 0; g < groups; ++g) {
          uint8_t *to = d.host + g * p.dstStride * kBlockBytes + r * 16 * e;
          if (toL1) {
            std::memcpy(to, row.data() + g * 16 * e, 16 * e);
          } else {
            StoreGm(to, row.data() + g * 16 * e, 16 * e, e, api, site);
          }
        }
      }
    }
  }
}

inline L0cToGm FromV220(const FixpipeParamsV220 &p, CO2Layout layout) {
  L0cToGm t;
  t.nSize = p.nSize;
  t.mSize = p.mSize;
  t.srcStride = p.srcStride;
  t.dstStride = p.dstStride;
  t.quantPre = p.quantPre;
  // deqScalar has no default (as CANN declares it): read only by the scalar modes that use it.
  if (p.quantPre == DEQF16 || p.quantPre == QF322B8_PRE || p.quantPre == REQ8) t.scalar = p.deqScalar;
  t.ndNum = p.ndNum;
  t.srcNdStride = p.srcNdStride;
  t.dstNdStride = p.dstNdStride;
  t.relu = p.reluEn;
  t.nz2nd = layout == CO2Layout::ROW_MAJOR;
  t.channelSplit = p.isChannelSplit;
  t.unitFlag = p.unitFlag;
  return t;
}

// What the four Fixpipe overloads below share: the layouts A2/A3 have, and where the quantisation words come
// from (none, or cbufWorkspace: one uint64_t per column of the output in L1 (A1/B1/C1), 32-byte aligned,
// words [0, nSize) read on FIX; CANN copies them to the Fixpipe Buffer inside the call).
template <typename T, typename U>
inline void FixpipeV220(const char *api, const ascend_model::Site &site, const ascend_model::Span &d,
                        const LocalTensor<U> &src, const FixpipeParamsV220 &p, CO2Layout format,
                        const ascend_model::Span *words) {
  using namespace ascend_model;
  if (format == CO2Layout::COLUMN_MAJOR) Fail(api, site, "CFG_COLUMN_MAJOR (NZ2DN) is not available on A2/A3");
  L0cToGm t = FromV220(p, format);
  if (words == nullptr) {
    if (IsVectorQuant(p.quantPre)) {
      Fail(api, site, "a vector quantisation mode (VDEQF16 / VQF322B8_PRE / VREQ8) needs the Fixpipe overload with "
                      "cbufWorkspace (the document's 开启随路tensor量化 prototype)");
    }
  } else {
    ops::RequireSpace(api, site, *words, Space::kL1, "cbufWorkspace");
    ops::RequireAlign(api, site, *words, ops::kBlockBytes, "cbufWorkspace");
    t.words = words;
  }
  L0cOutTransfer<T, U>(api, site, d, src.ModelSpan(), t);
}
}  // namespace model_detail

// L0C (CO1) -> GM (Fixpipe（L0C到GM数据搬运）, FixpipeParamsV220), on FIX: CFG_ROW_MAJOR (NZ2ND) or CFG_NZ
// (NZ2NZ); quantPre NoQuant / F322F16 / F322BF16 or a scalar quantisation mode (deqScalar). See
// model_detail::L0cOutTransfer. The vector modes need the overload with cbufWorkspace.
template <typename T, typename U, const FixpipeConfig &config = CFG_ROW_MAJOR>
inline void Fixpipe(const GlobalTensor<T> &dst, const LocalTensor<U> &src, const FixpipeParamsV220 &intriParams,
                    const ascend_model::Site &site = ascend_model::Site()) {
  model_detail::FixpipeV220<T, U>("Fixpipe(L0C->GM, FixpipeParamsV220)", site, dst.ModelSpan(), src, intriParams,
                                  config.format, nullptr);
}

// L0C (CO1) -> GM with vector quantisation: the words in cbufWorkspace. With a non-vector quantPre the words
// are not read.
template <typename T, typename U, const FixpipeConfig &config = CFG_ROW_MAJOR, typename S = uint64_t,
          typename std::enable_if<std::is_same<S, uint64_t>::value, bool>::type = true>
inline void Fixpipe(const GlobalTensor<T> &dst, const LocalTensor<U> &src, const LocalTensor<S> &cbufWorkspace,
                    const FixpipeParamsV220 &intriParams, const ascend_model::Site &site = ascend_model::Site()) {
  const ascend_model::Span w = cbufWorkspace.ModelSpan();
  model_detail::FixpipeV220<T, U>("Fixpipe(L0C->GM, cbufWorkspace, FixpipeParamsV220)", site, dst.ModelSpan(), src,
                                  intriParams, config.format, &w);
}

// L0C (CO1) -> L1 (C1) (Fixpipe（L0C到L1数据搬运）, FixpipeParamsV220), on FIX: CFG_NZ with F322F16 /
// F322BF16 or a scalar quantisation mode (deqScalar); the vector modes need the cbufWorkspace overload.
// See model_detail::L0cOutTransfer. No other local destination exists on A2/A3.
template <typename T, typename U, const FixpipeConfig &config = CFG_ROW_MAJOR>
inline void Fixpipe(const LocalTensor<T> &dst, const LocalTensor<U> &src, const FixpipeParamsV220 &intriParams,
                    const ascend_model::Site &site = ascend_model::Site()) {
  const char *api = "Fixpipe(L0C->L1, FixpipeParamsV220)";
  const ascend_model::Span d = dst.ModelSpan();
  ascend_model::ops::RequireSpace(api, site, d, ascend_model::Space::kL1, "dst");
  model_detail::FixpipeV220<T, U>(api, site, d, src, intriParams, config.format, nullptr);
}

// L0C (CO1) -> L1 (C1) with vector quantisation words in cbufWorkspace, as for the GM overload above.
template <typename T, typename U, const FixpipeConfig &config = CFG_ROW_MAJOR, typename S = uint64_t,
          typename std::enable_if<std::is_same<S, uint64_t>::value, bool>::type = true>
inline void Fixpipe(const LocalTensor<T> &dst, const LocalTensor<U> &src, const LocalTensor<S> &cbufWorkspace,
                    const FixpipeParamsV220 &intriParams, const ascend_model::Site &site = ascend_model::Site()) {
  const char *api = "Fixpipe(L0C->L1, cbufWorkspace, FixpipeParamsV220)";
  const ascend_model::Span d = dst.ModelSpan();
  ascend_model::ops::RequireSpace(api, site, d, ascend_model::Space::kL1, "dst");
  const ascend_model::Span w = cbufWorkspace.ModelSpan();
  model_detail::FixpipeV220<T, U>(api, site, d, src, intriParams, config.format, &w);
}

// ---- DataCopy L0C -> GM and the FIXPIPE registers it uses ("DataCopy（L0C到GM数据搬运）") ----------------
struct DataCopyCO12DstParams {
  DataCopyCO12DstParams() {}
  DataCopyCO12DstParams(const uint16_t nSizeIn, const uint16_t mSizeIn, const uint32_t dstStrideIn,
                        const uint16_t srcStrideIn, const QuantMode_t quantPreIn, const uint8_t reluPreIn,
                        const bool channelSplitIn, const bool nz2ndEnIn)
      : nSize(nSizeIn),
        mSize(mSizeIn),
        dstStride(dstStrideIn),
        srcStride(srcStrideIn),
        quantPre(quantPreIn),
        reluPre(reluPreIn),
        channelSplit(channelSplitIn),
        nz2ndEn(nz2ndEnIn) {}
  uint8_t sid = 0;
  uint16_t nSize = 0;
  uint16_t mSize = 0;
  uint32_t dstStride = DEFAULT_DATA_COPY_STRIDE;
  uint16_t srcStride = DEFAULT_DATA_COPY_STRIDE;
  uint8_t unitFlag = 0;
  uint8_t clipReluPre = 0;
  uint8_t eltWiseOp = 0;
  QuantMode_t quantPre = QuantMode_t::NoQuant;
  uint8_t reluPre = 0;
  bool channelSplit = false;
  bool nz2ndEn = false;
};

namespace model_detail {
// The calling core's FIXPIPE registers (each AI core runs on its own host thread), as the register
// setters below leave them.
struct FixpipeRegisters {
  bool haveScalar = false;
  uint64_t scalar = 0;
  bool haveNz2nd = false;
  uint16_t ndNum = 1, srcNdStride = 0;
  uint16_t dstNdStride = 0;
  bool haveWords = false;
  ascend_model::Span words{};
};
inline FixpipeRegisters &Fpr() {
  static thread_local FixpipeRegisters r;
  return r;
}
}  // namespace model_detail

// The scalar quantisation word of DataCopy L0C -> GM (DEQF16 / QF322B8_PRE / REQ8).
inline void SetFixpipePreQuantFlag(uint64_t config, const ascend_model::Site &site = ascend_model::Site()) {
  (void)site;
  model_detail::Fpr().haveScalar = true;
  model_detail::Fpr().scalar = config;
}

// NZ2ND of DataCopy L0C -> GM: ndNum matrices, srcNdStride (units of 16 * C0_Size) and dstNdStride (elements)
// as in FixpipeParamsV220.
inline void SetFixpipeNz2ndFlag(uint16_t ndNum, uint16_t srcNdStride, uint16_t dstNdStride,
                                const ascend_model::Site &site = ascend_model::Site()) {
  (void)site;
  auto &r = model_detail::Fpr();
  r.haveNz2nd = true;
  r.ndNum = ndNum;
  r.srcNdStride = srcNdStride;
  r.dstNdStride = dstNdStride;
}

// The per-column quantisation words of DataCopy L0C -> GM (VDEQF16 / VQF322B8_PRE / VREQ8): a uint64_t
// tensor in the Fixpipe Buffer (TPosition C2PIPE2GM). setRelu = true (a ReLU tensor) is not supported on
// A2/A3 ("SetFixPipeConfig": setRelu only false); isUnitFlag = true is not modelled.
template <typename T, bool setRelu = false>
inline void SetFixPipeConfig(const LocalTensor<T> &preData, bool isUnitFlag = false,
                             const ascend_model::Site &site = ascend_model::Site()) {
  using namespace ascend_model;
  const char *api = "SetFixPipeConfig";
  if (setRelu) Fail(api, site, "setRelu = true: only the quantisation tensor can be set");
  if (isUnitFlag) Fail(api, site, "isUnitFlag = true is not modelled");
  if (!std::is_same<T, uint64_t>::value) Fail(api, site, "the quantisation tensor must be uint64_t");
  const Span w = preData.ModelSpan();
  ops::RequireSpace(api, site, w, Space::kFB, "quantPre");
  auto &r = model_detail::Fpr();
  r.haveWords = true;
  r.words = w;
}

// The two-tensor form: reluPre is reserved ("pass an empty LocalTensor"); the model stops the run.
template <typename T>
inline void SetFixPipeConfig(const LocalTensor<T> &reluPre, const LocalTensor<T> &quantPre, bool isUnitFlag = false,
                             const ascend_model::Site &site = ascend_model::Site()) {
  (void)reluPre;
  (void)quantPre;
  (void)isUnitFlag;
  ascend_model::Fail("SetFixPipeConfig(reluPre, quantPre)", site,
                     "the two-tensor form (a ReLU tensor) is not modelled: use SetFixPipeConfig(quantPre)");
}

// L0C (CO1) -> GM with DataCopyCO12DstParams, on FIX: as Fixpipe, with NZ2ND's ndNum / srcNdStride /
// dstNdStride from SetFixpipeNz2ndFlag (required when nz2ndEn), the scalar word from SetFixpipePreQuantFlag
// and the vector words from SetFixPipeConfig (required by the modes that use them), reluPre 0 or 1.
// clipReluPre and eltWiseOp (Atlas 200I/500 A2 only) must be 0.
template <typename T, typename U>
inline void DataCopy(const GlobalTensor<T> &dst, const LocalTensor<U> &src, const DataCopyCO12DstParams &intriParams,
                     const ascend_model::Site &site = ascend_model::Site()) {
  using namespace ascend_model;
  const char *api = "DataCopy(L0C->GM, DataCopyCO12DstParams)";
  const DataCopyCO12DstParams &p = intriParams;
  if (p.clipReluPre != 0 || p.eltWiseOp != 0) {
    Fail(api, site, "clipReluPre / eltWiseOp are Atlas 200I/500 A2 only: set them to 0 on A2/A3");
  }
  ops::RequireRange(api, site, "reluPre", p.reluPre, 0, 1);
  const auto &r = model_detail::Fpr();
  model_detail::L0cToGm t;
  t.nSize = p.nSize;
  t.mSize = p.mSize;
  t.srcStride = p.srcStride;
  t.dstStride = p.dstStride;
  t.quantPre = p.quantPre;
  t.relu = p.reluPre == 1;
  t.nz2nd = p.nz2ndEn;
  t.channelSplit = p.channelSplit;
  t.unitFlag = p.unitFlag;
  const QuantMode_t q = p.quantPre;
  if ((q == DEQF16 || q == QF322B8_PRE || q == REQ8)) {
    if (!r.haveScalar) Fail(api, site, "a scalar quantisation mode needs SetFixpipePreQuantFlag first");
    t.scalar = r.scalar;
  }
  if (model_detail::IsVectorQuant(q)) {
    if (!r.haveWords) Fail(api, site, "a vector quantisation mode needs SetFixPipeConfig(quant tensor) first");
    t.words = &r.words;
  }
  if (p.nz2ndEn) {
    if (!r.haveNz2nd) Fail(api, site, "nz2ndEn needs SetFixpipeNz2ndFlag first");
    t.ndNum = r.ndNum;
    t.srcNdStride = r.srcNdStride;
    t.dstNdStride = r.dstNdStride;
  }
  model_detail::L0cOutTransfer<T, U>(api, site, dst.ModelSpan(), src.ModelSpan(), t);
}

}  // namespace AscendC

#endif  // ASCEND_MODEL_OPS_FIXPIPE_H
