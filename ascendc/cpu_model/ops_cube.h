// Modelled AscendC Cube instructions for Atlas A2/A3 (__NPU_ARCH__ 2201): LoadData (2D, into
// L0A/L0B), LoadDataWithTranspose and Mmad (with or without a bias tensor in the BiasTable Buffer), and the
// parameter structs of the Cube and of Fixpipe, as in CANN's kernel_struct_mm.h and kernel_struct_fixpipe.h;
// functions as in kernel_operator_mm_intf.h, each with a trailing defaulted ascend_model::Site. The L0C -> GM
// transfers (Fixpipe, DataCopy L0C -> GM) are in ops_fixpipe.h.
//
// Layouts, from CANN's "key fractal formats" document (A2/A3: Zz x Zn = Nz), for 16-bit inputs
// (K0 = 16) of an M x K matrix A, a K x N matrix B and the M x N fp32 result C:
//   L0A  Zz  A(m, k) at ((m / 16) * K1 + k / 16) * 256 + (m % 16) * 16 + k % 16
//   L0B  Zn  B(k, n) at ((k / 16) * N1 + n / 16) * 256 + (n % 16) * 16 + k % 16
//   L0C  Nz  C(m, n) at ((n / 16) * M1 + m / 16) * 256 + (m % 16) * 16 + n % 16
// with M1, K1, N1 the 16-rounded-up block counts. LoadData runs on MTE1 (from L1) or MTE2 (from
// GM), Mmad on M, Fixpipe on FIX.
#ifndef ASCEND_MODEL_OPS_CUBE_H
#define ASCEND_MODEL_OPS_CUBE_H

#include <cstdint>
#include <cstring>
#include <vector>

#include "model_hooks.h"
#include "ops_common.h"

// Fixpipe's quantisation modes (a plain enum outside AscendC, as CANN declares it).
enum QuantMode_t {
  NoQuant,
  F322F16,
  F322BF16,
  DEQF16,
  VDEQF16,
  QF322B8_PRE,
  VQF322B8_PRE,
  REQ8,
  VREQ8,
};

namespace AscendC {

using LoadData2dParams = struct LoadData2DParams;
struct LoadData2DParams {
  LoadData2DParams() {}
  LoadData2DParams(const uint16_t startIndexIn, const uint8_t repeatTimesIn, const uint16_t srcStrideIn,
                   const uint8_t sidIn, const uint16_t dstGapIn, const bool ifTransposeIn, const uint8_t addrModeIn)
      : startIndex(startIndexIn),
        dstGap(dstGapIn),
        srcStride(srcStrideIn),
        ifTranspose(ifTransposeIn),
        repeatTimes(repeatTimesIn),
        sid(sidIn),
        addrMode(addrModeIn) {}
  uint16_t startIndex = 0;
  uint16_t dstGap = 0;
  uint16_t srcStride = 0;
  bool ifTranspose = 0;
  uint8_t repeatTimes = 0;
  uint8_t sid = 0;
  uint8_t addrMode = 0;
};

struct MmadParams {
  MmadParams() {}
  MmadParams(const uint16_t mIn, const uint16_t nIn, const uint16_t kIn, const bool isBiasIn, const int32_t fmOffsetIn,
             const bool enSsparseIn, const bool enWinogradAIn, const bool enWinogradBIn)
      : m(mIn),
        n(nIn),
        k(kIn),
        isBias(isBiasIn),
        fmOffset(fmOffsetIn),
        enSsparse(enSsparseIn),
        enWinogradA(enWinogradAIn),
        enWinogradB(enWinogradBIn) {}
  MmadParams(const uint16_t mIn, const uint16_t nIn, const uint16_t kIn, const uint8_t unitFlagIn,
             const bool cmatrixSourceIn, const bool cmatrixInitValIn)
      : m(mIn),
        n(nIn),
        k(kIn),
        unitFlag(unitFlagIn),
        cmatrixSource(cmatrixSourceIn),
        cmatrixInitVal(cmatrixInitValIn) {}
  uint16_t m = 0;
  uint16_t n = 0;
  uint16_t k = 0;
  bool isBias = false;
  int32_t fmOffset = 0;
  bool enSsparse = false;
  bool enWinogradA = false;
  bool enWinogradB = false;
  uint8_t unitFlag = 0;
  bool kDirectionAlign = false;
  bool cmatrixSource = false;
  bool cmatrixInitVal = true;
};

enum class CO2Layout : uint8_t { NZ = 0, ROW_MAJOR, COLUMN_MAJOR };

struct FixpipeConfig {
  CO2Layout format;
  constexpr FixpipeConfig(CO2Layout format_) : format(format_) {}
  constexpr FixpipeConfig(CO2Layout format_, bool isToUB_) : format(format_) { (void)isToUB_; }
  constexpr FixpipeConfig(CO2Layout format_, bool isToUB_, bool enableFixVal_) : format(format_) {
    (void)isToUB_;
    (void)enableFixVal_;
  }
};
constexpr FixpipeConfig CFG_NZ = {CO2Layout::NZ};
constexpr FixpipeConfig CFG_ROW_MAJOR = {CO2Layout::ROW_MAJOR};
constexpr FixpipeConfig CFG_COLUMN_MAJOR = {CO2Layout::COLUMN_MAJOR};

struct FixpipeParamsV220 {
  FixpipeParamsV220() {}
  FixpipeParamsV220(const uint16_t nSizeIn, const uint16_t mSizeIn, const uint16_t srcStrideIn,
                    const uint32_t dstStrideIn, const bool reluEnIn)
      : nSize(nSizeIn), mSize(mSizeIn), srcStride(srcStrideIn), dstStride(dstStrideIn), reluEn(reluEnIn) {}
  FixpipeParamsV220(const uint16_t nSizeIn, const uint16_t mSizeIn, const uint16_t srcStrideIn,
                    const uint32_t dstStrideIn, const bool reluEnIn, const QuantMode_t quantPreIn,
                    const int64_t deqScalarIn, const uint16_t ndNumIn, const uint16_t srcNdStrideIn,
                    const uint16_t dstNdStrideIn, const uint8_t unitFlagIn)
      : FixpipeParamsV220(nSizeIn, mSizeIn, srcStrideIn, dstStrideIn, reluEnIn, quantPreIn, deqScalarIn, ndNumIn,
                          srcNdStrideIn, dstNdStrideIn, unitFlagIn, false) {}
  FixpipeParamsV220(const uint16_t nSizeIn, const uint16_t mSizeIn, const uint16_t srcStrideIn,
                    const uint32_t dstStrideIn, const bool reluEnIn, const QuantMode_t quantPreIn,
                    const int64_t deqScalarIn, const uint16_t ndNumIn, const uint16_t srcNdStrideIn,
                    const uint16_t dstNdStrideIn, const uint8_t unitFlagIn, const bool isChannelSplitIn)
      : nSize(nSizeIn),
        mSize(mSizeIn),
        srcStride(srcStrideIn),
        dstStride(dstStrideIn),
        quantPre(quantPreIn),
        deqScalar(deqScalarIn),
        ndNum(ndNumIn),
        srcNdStride(srcNdStrideIn),
        dstNdStride(dstNdStrideIn),
        reluEn(reluEnIn),
        unitFlag(unitFlagIn),
        isChannelSplit(isChannelSplitIn) {}
  uint16_t nSize = 0;
  uint16_t mSize = 0;
  uint16_t srcStride = 0;
  uint32_t dstStride = 0;
  QuantMode_t quantPre = QuantMode_t::NoQuant;
  uint64_t deqScalar;
  uint16_t ndNum = 1;
  uint16_t srcNdStride = 0;
  uint16_t dstNdStride = 0;
  bool reluEn = false;
  uint8_t unitFlag = 0;
  bool isChannelSplit = false;
};

namespace model_detail {
// repeatTimes fractals of 512 bytes: fractal startIndex + i * srcStride (or minus, addrMode 1)
// of src goes to fractal i * (1 + dstGap) of dst, each 16-bit 16x16 fractal transposed if asked.
inline void LoadFractals(const char *api, const ascend_model::Site &site, const ascend_model::Span &d,
                         const ascend_model::Span &s, const LoadData2DParams &p, uint64_t elemBytes,
                         ascend_model::Pipe pipe) {
  using namespace ascend_model;
  using namespace ascend_model::ops;
  if (d.space != Space::kL0A && d.space != Space::kL0B && !(s.space == Space::kGM && d.space == Space::kL1)) {
    Fail(api, site, std::string("dst ('") + d.buffer + "') must be in L0A (A2) or L0B (B2), not " +
                        SpaceName(d.space));
  }
  if (p.repeatTimes == 0) return;  // documented NOP
  if (p.ifTranspose && (s.space != Space::kL1 || elemBytes != 2)) {
    Fail(api, site, "ifTranspose needs an L1 source and 16-bit elements (got " + Num(elemBytes * 8) + "-bit from " +
                        SpaceName(s.space) + ")");
  }
  if (p.addrMode != 0 && !(s.space == Space::kGM && d.space == Space::kL1)) {
    Fail(api, site, "addrMode = " + Num(p.addrMode) + ": only GM -> L1 loads may count fractals downwards");
  }
  RequireRange(api, site, "addrMode", p.addrMode, 0, 1);
  RequireAlign(api, site, d, d.space == Space::kL1 ? kBlockBytes : kFractalBytes, "dst");
  if (s.space == Space::kL1) RequireAlign(api, site, s, kBlockBytes, "src");
  std::vector<uint64_t> srcFractal(p.repeatTimes);
  for (uint64_t i = 0; i < p.repeatTimes; ++i) {
    const int64_t f = p.addrMode == 0 ? static_cast<int64_t>(p.startIndex) + static_cast<int64_t>(i * p.srcStride)
                                      : static_cast<int64_t>(p.startIndex) - static_cast<int64_t>(i * p.srcStride);
    if (f < 0) Fail(api, site, "addrMode 1 counts fractals below 0 at repeat " + Num(i));
    srcFractal[i] = static_cast<uint64_t>(f);
  }
  RangeSet reads(s, pipe, Access::kRead, api, site);
  RangeSet writes(d, pipe, Access::kWrite, api, site);
  for (uint64_t i = 0; i < p.repeatTimes; ++i) {
    reads.Add(srcFractal[i] * kFractalBytes, kFractalBytes);
    writes.Add(i * (1 + static_cast<uint64_t>(p.dstGap)) * kFractalBytes, kFractalBytes);
  }
  reads.Report();
  writes.Report();
  uint8_t tmp[kFractalBytes];
  for (uint64_t i = 0; i < p.repeatTimes; ++i) {
    const uint8_t *in = s.host + srcFractal[i] * kFractalBytes;
    uint8_t *out = d.host + i * (1 + static_cast<uint64_t>(p.dstGap)) * kFractalBytes;
    if (!p.ifTranspose) {
      std::memcpy(tmp, in, kFractalBytes);
    } else {
      for (uint64_t r = 0; r < kCubeEdge; ++r) {
        for (uint64_t c = 0; c < kCubeEdge; ++c) {
          std::memcpy(tmp + (r * kCubeEdge + c) * 2, in + (c * kCubeEdge + r) * 2, 2);
        }
      }
    }
    std::memcpy(out, tmp, kFractalBytes);
  }
}
}  // namespace model_detail

// L1 (A1/B1) -> L0A (A2) / L0B (B2), on MTE1.
template <typename T>
inline void LoadData(const LocalTensor<T> &dst, const LocalTensor<T> &src, const LoadData2DParams &loadDataParams,
                     const ascend_model::Site &site = ascend_model::Site()) {
  using namespace ascend_model;
  const char *api = "LoadData(L1->L0, LoadData2DParams)";
  const Span s = src.ModelSpan();
  ops::RequireSpace(api, site, s, Space::kL1, "src");
  model_detail::LoadFractals(api, site, dst.ModelSpan(), s, loadDataParams, sizeof(T), Pipe::kMTE1);
}

// GM -> L0A / L0B / L1, on MTE2 (no transpose on this path).
template <typename T>
inline void LoadData(const LocalTensor<T> &dst, const GlobalTensor<T> &src, const LoadData2DParams &loadDataParams,
                     const ascend_model::Site &site = ascend_model::Site()) {
  using namespace ascend_model;
  const char *api = "LoadData(GM->local, LoadData2DParams)";
  const Span s = src.ModelSpan();
  ops::RequireSpace(api, site, s, Space::kGM, "src");
  model_detail::LoadFractals(api, site, dst.ModelSpan(), s, loadDataParams, sizeof(T), Pipe::kMTE2);
}

// Load3D v2 (LoadData_3D.md: img2col from L1 into L0A / L0B) is declared as CANN declares it, with its parameter
// struct, so that a kernel holding one in a branch it does not take compiles; a call stops the run: the model
// has no img2col (PAD_SIZE: kernel_utils_constants.h).
const uint8_t PAD_SIZE = 4;

template <typename T>
struct LoadData3DParamsV2 {
  LoadData3DParamsV2() {}
  uint8_t padList[PAD_SIZE] = {0};
  uint16_t l1H = 0;
  uint16_t l1W = 0;
  uint16_t channelSize = 0;
  uint16_t kExtension = 0;
  uint16_t mExtension = 0;
  uint16_t kStartPt = 0;
  uint16_t mStartPt = 0;
  uint8_t strideW = 1;
  uint8_t strideH = 1;
  uint8_t filterW = 1;
  uint8_t filterH = 1;
  uint8_t dilationFilterW = 1;
  uint8_t dilationFilterH = 1;
  bool enTranspose = false;
  bool enSmallK = false;
  T padValue = 0;
  bool filterSizeW = false;
  bool filterSizeH = false;
  bool fMatrixCtrl = false;
};

template <typename T, typename U>
inline void LoadData(const LocalTensor<T> &dst, const LocalTensor<T> &src, const LoadData3DParamsV2<U> &loadDataParams,
                     const ascend_model::Site &site = ascend_model::Site()) {
  (void)dst;
  (void)src;
  (void)loadDataParams;
  ascend_model::Fail("LoadData(LoadData3DParamsV2)", site, "Load3D v2 (img2col, LoadData_3D.md) is not modelled");
}

struct LoadData2dTransposeParams {
  LoadData2dTransposeParams() {}
  LoadData2dTransposeParams(const uint16_t startIndexIn, const uint8_t repeatTimesIn, const uint16_t srcStrideIn,
                            const uint16_t dstGapIn, const uint16_t dstfracGapIn, const uint8_t addrModeIn)
      : startIndex(startIndexIn),
        repeatTimes(repeatTimesIn),
        srcStride(srcStrideIn),
        dstGap(dstGapIn),
        dstFracGap(dstfracGapIn),
        addrMode(addrModeIn) {}
  LoadData2dTransposeParams(const uint16_t startIndexIn, const uint8_t repeatTimesIn, const uint16_t srcStrideIn,
                            const uint16_t dstGapIn, const uint16_t dstfracGapIn)
      : startIndex(startIndexIn),
        repeatTimes(repeatTimesIn),
        srcStride(srcStrideIn),
        dstGap(dstGapIn),
        dstFracGap(dstfracGapIn) {}
  uint16_t startIndex = 0;
  uint8_t repeatTimes = 0;
  uint16_t srcStride = 0;
  uint16_t dstGap = 0;
  uint16_t dstFracGap = 0;
  uint8_t addrMode = 0;
};

// L1 (A1/B1) -> L0A / L0B with transpose ("LoadDataWithTranspose", A2/A3), on MTE1. Each of repeatTimes
// iterations transposes one square matrix of the source: 16 x 16 of a 16-bit type (one 512-byte fractal)
// or 32 x 32 of a 1-byte type (two 16 x 32 fractals stacked: rows 0-15 and 16-31, split back the same way
// after the transpose, as the document's pseudo code load_data_with_transpose.py moves them). Square i is read from square startIndex + i * srcStride (minus
// with addrMode 1; units of the square's size) and its fractal j written at byte
//   i * (1 + dstGap) * 512 + j * (1 + dstFracGap) * 512       of dst.
// dst 512-byte aligned in L0A / L0B, src 32-byte aligned in L1; repeatTimes 0 is a NOP. The 4-byte types
// (two 16 x 8 fractals merged into a 16 x 16 square) stop the run: no modelled Mmad consumes them (float x
// float is not modelled). int4b_t (L0B only) is not modelled.
template <typename T>
inline void LoadDataWithTranspose(const LocalTensor<T> &dst, const LocalTensor<T> &src,
                                  const LoadData2dTransposeParams &loadDataParams,
                                  const ascend_model::Site &site = ascend_model::Site()) {
  using namespace ascend_model;
  using namespace ascend_model::ops;
  const char *api = "LoadDataWithTranspose";
  const Span d = dst.ModelSpan();
  const Span s = src.ModelSpan();
  RequireSpace(api, site, s, Space::kL1, "src");
  if (d.space != Space::kL0A && d.space != Space::kL0B) {
    Fail(api, site, std::string("dst ('") + d.buffer + "') must be in L0A (A2) or L0B (B2), not " + SpaceName(d.space));
  }
  constexpr Kind k = KindOf<T>();
  const bool typeOk = k == Kind::kI8 || k == Kind::kU8 || k == Kind::kF16 || k == Kind::kBF16;
  if (!typeOk) {
    Fail(api, site, std::string("data type ") + KindName(k) +
                        " is not modelled (int8_t, uint8_t, half, bfloat16_t are)");
  }
  const LoadData2dTransposeParams &p = loadDataParams;
  RequireRange(api, site, "addrMode", p.addrMode, 0, 1);
  RequireAlign(api, site, d, kFractalBytes, "dst");
  RequireAlign(api, site, s, kBlockBytes, "src");
  if (p.repeatTimes == 0) return;  // documented NOP
  constexpr uint64_t e = sizeof(T);
  constexpr uint64_t fractals = e == 1 ? 2 : 1;
  constexpr uint64_t squareBytes = fractals * kFractalBytes;
  std::vector<uint64_t> srcSquare(p.repeatTimes);
  for (uint64_t i = 0; i < p.repeatTimes; ++i) {
    const int64_t q = p.addrMode == 0 ? int64_t(p.startIndex) + int64_t(i * p.srcStride)
                                      : int64_t(p.startIndex) - int64_t(i * p.srcStride);
    if (q < 0) Fail(api, site, "addrMode 1 counts squares below 0 at repeat " + Num(i));
    srcSquare[i] = static_cast<uint64_t>(q) * squareBytes;
  }
  auto dstFractal = [&](uint64_t i, uint64_t j) {
    return i * (1 + uint64_t(p.dstGap)) * kFractalBytes + j * (1 + uint64_t(p.dstFracGap)) * kFractalBytes;
  };
  RangeSet reads(s, Pipe::kMTE1, Access::kRead, api, site);
  RangeSet writes(d, Pipe::kMTE1, Access::kWrite, api, site);
  std::vector<uint64_t> outs;
  for (uint64_t i = 0; i < p.repeatTimes; ++i) {
    reads.Add(srcSquare[i], squareBytes);
    for (uint64_t j = 0; j < fractals; ++j) {
      writes.Add(dstFractal(i, j), kFractalBytes);
      outs.push_back(dstFractal(i, j));
    }
  }
  std::sort(outs.begin(), outs.end());
  for (size_t x = 1; x < outs.size(); ++x) {
    if (outs[x] < outs[x - 1] + kFractalBytes) {
      Fail(api, site, "dstGap / dstFracGap make transposed fractals overlap in dst (the document forbids it)");
    }
  }
  reads.Normalize();
  writes.Normalize();
  reads.Report();
  writes.Report();
  const uint64_t edge = e == 1 ? 32 : 16;  // the square's side in elements
  std::vector<uint8_t> in(squareBytes), sq(squareBytes), tr(squareBytes);
  for (uint64_t i = 0; i < p.repeatTimes; ++i) {
    std::memcpy(in.data(), s.host + srcSquare[i], squareBytes);
    sq = in;  // row-major: 16-bit one fractal; 1-byte fractal 0 is rows 0-15, fractal 1 rows 16-31
    for (uint64_t r = 0; r < edge; ++r) {
      for (uint64_t c = 0; c < edge; ++c) std::memcpy(&tr[(r * edge + c) * e], &sq[(c * edge + r) * e], e);
    }
    for (uint64_t j = 0; j < fractals; ++j) {
      std::memcpy(d.host + dstFractal(i, j), &tr[j * kFractalBytes], kFractalBytes);
    }
  }
}

namespace model_detail {
// Element `i` of an int8_t or int4b_t operand (int4b_t: two per byte, element 2j in the low nibble).
template <typename X>
inline int32_t IntAt(const uint8_t *base, uint64_t i) {
  if (ascend_model::IsInt4<X>()) {
    const uint8_t nib = (base[i / 2] >> (4 * (i % 2))) & 0xF;
    return (nib & 0x8) != 0 ? static_cast<int32_t>(nib) - 16 : nib;
  }
  return static_cast<int8_t>(base[i]);
}

// The Mmad computation of both overloads, on M. `bias` (nullptr: none) is the BiasTable span of the
// overload with a bias tensor: C(i, j) starts from bias[j] instead of 0 or the L0C contents.
template <typename T, typename U, typename S>
inline void MmadCompute(const char *api, const ascend_model::Site &site, const LocalTensor<T> &dst,
                        const LocalTensor<U> &fm, const LocalTensor<S> &filter, const ascend_model::Span *bias,
                        const MmadParams &p, bool accumulate) {
  using namespace ascend_model;
  using namespace ascend_model::ops;
  const Span c = dst.ModelSpan();
  const Span a = fm.ModelSpan();
  const Span b = filter.ModelSpan();
  RequireSpace(api, site, c, Space::kL0C, "dst");
  RequireSpace(api, site, a, Space::kL0A, "fm");
  RequireSpace(api, site, b, Space::kL0B, "filter");
  RequireRange(api, site, "m", p.m, 0, 4095);
  RequireRange(api, site, "n", p.n, 0, 4095);
  RequireRange(api, site, "k", p.k, 0, 4095);
  if (p.m == 0 || p.n == 0 || p.k == 0) return;  // documented NOP
  constexpr Kind kc = KindOf<T>(), ka = KindOf<U>(), kb = KindOf<S>();
  constexpr bool isInt4 = IsInt4<U>() && IsInt4<S>();
  constexpr bool isInt = kc == Kind::kI32 && ((ka == Kind::kI8 && kb == Kind::kI8) || isInt4);
  if (!(kc == Kind::kF32 && ka == kb && (ka == Kind::kF16 || ka == Kind::kBF16)) && !isInt) {
    Fail(api, site, std::string("the model supports half x half and bfloat16_t x bfloat16_t into float, int8_t x "
                                "int8_t and int4b_t x int4b_t into int32_t, not ") +
                        KindName(ka) + " x " + KindName(kb) + " into " + KindName(kc));
  }
  if (p.unitFlag != 0) Fail(api, site, "unitFlag = " + Num(p.unitFlag) + " is not modelled (use 0)");
  RequireAlign(api, site, c, 1024, "dst");
  RequireAlign(api, site, a, kFractalBytes, "fm");
  RequireAlign(api, site, b, kFractalBytes, "filter");

  const uint64_t m = p.m, n = p.n, k = p.k;
  // K0 (c0): 32 bytes of the input type, 16 for 16-bit, 32 for 8-bit and 64 for int4b_t inputs
  // ("关键分形格式详解"; Mmad.md: a 16 x 64 int4b_t fractal is 512 bytes).
  constexpr uint64_t c0 = isInt4 ? 64 : kBlockBytes / sizeof(U);
  const uint64_t m1 = (m + 15) / 16, n1 = (n + 15) / 16, k1 = (k + c0 - 1) / c0;
  const bool gemv = m == 1;
  RangeSet readA(a, Pipe::kM, Access::kRead, api, site);
  RangeSet readB(b, Pipe::kM, Access::kRead, api, site);
  RangeSet readC(c, Pipe::kM, Access::kRead, api, site);
  RangeSet writeC(c, Pipe::kM, Access::kWrite, api, site);
  readA.Add(0, gemv ? BytesOf<U>(k) : m1 * k1 * kFractalBytes);
  readB.Add(0, k1 * n1 * kFractalBytes);
  writeC.Add(0, n1 * m1 * 256 * sizeof(T));
  if (accumulate) readC.Add(0, n1 * m1 * 256 * sizeof(T));
  readA.Report();
  readB.Report();
  readC.Report();
  if (bias != nullptr) {  // the 1 x N bias row, n floats
    RangeSet readBias(*bias, Pipe::kM, Access::kRead, api, site);
    readBias.Add(0, n * sizeof(T));
    readBias.Report();
  }
  writeC.Report();

  if constexpr (isInt) {
    // int8_t x int8_t -> int32_t: exact integer products summed in k order; a sum outside int32_t stops the
    // run (the documents do not say whether it wraps or saturates).
    for (uint64_t i = 0; i < m1 * 16; ++i) {
      for (uint64_t j = 0; j < n1 * 16; ++j) {
        uint8_t *out = c.host + (((j / 16) * m1 + i / 16) * 256 + (i % 16) * 16 + j % 16) * sizeof(int32_t);
        int32_t init = 0;
        if (accumulate) std::memcpy(&init, out, sizeof(int32_t));
        int64_t acc = init;
        if (i < m && j < n) {
          if (bias != nullptr) {
            int32_t bj;
            std::memcpy(&bj, bias->host + j * sizeof(int32_t), sizeof(int32_t));
            acc = bj;
          }
          for (uint64_t kk = 0; kk < k; ++kk) {
            const uint64_t at = gemv ? kk : ((i / 16) * k1 + kk / c0) * (16 * c0) + (i % 16) * c0 + kk % c0;
            const uint64_t bt = ((kk / c0) * n1 + j / 16) * (16 * c0) + (j % 16) * c0 + kk % c0;
            acc += static_cast<int64_t>(IntAt<U>(a.host, at)) * IntAt<S>(b.host, bt);
          }
          if (acc < INT32_MIN || acc > INT32_MAX) {
            Fail(api, site, "C(" + Num(i) + ", " + Num(j) + ") = " + std::to_string(acc) +
                                " overflows int32_t (not documented: wrap or saturate)");
          }
        }
        const int32_t v = static_cast<int32_t>(acc);
        std::memcpy(out, &v, sizeof(int32_t));
      }
    }
    CountCubeFractalMacs(m1 * n1 * k1);
    return;
  } else {

  // Decode A row-major [m][k] and B column-major [n][k] once; products of 16-bit floats are exact
  // in fp32, the sums run in fp32 in k order.
  std::vector<float> av(m * k), bv(n * k);
  for (uint64_t i = 0; i < m; ++i) {
    for (uint64_t kk = 0; kk < k; ++kk) {
      const uint64_t at = gemv ? kk : ((i / 16) * k1 + kk / 16) * 256 + (i % 16) * 16 + kk % 16;
      av[i * k + kk] = LoadFloat<U>(a.host + at * sizeof(U));
    }
  }
  for (uint64_t j = 0; j < n; ++j) {
    for (uint64_t kk = 0; kk < k; ++kk) {
      const uint64_t at = ((kk / 16) * n1 + j / 16) * 256 + (j % 16) * 16 + kk % 16;
      bv[j * k + kk] = LoadFloat<S>(b.host + at * sizeof(S));
    }
  }
  std::vector<float> biasRow(bias != nullptr ? n : 0);
  for (uint64_t j = 0; j < biasRow.size(); ++j) std::memcpy(&biasRow[j], bias->host + j * sizeof(float), sizeof(float));
  for (uint64_t i = 0; i < m1 * 16; ++i) {
    for (uint64_t j = 0; j < n1 * 16; ++j) {
      uint8_t *out = c.host + (((j / 16) * m1 + i / 16) * 256 + (i % 16) * 16 + j % 16) * sizeof(float);
      float acc = 0.0f;
      if (accumulate) std::memcpy(&acc, out, sizeof(float));
      if (i < m && j < n) {
        if (bias != nullptr) acc = biasRow[j];
        const float *ar = &av[i * k];
        const float *bc = &bv[j * k];
        for (uint64_t kk = 0; kk < k; ++kk) acc += ar[kk] * bc[kk];
      }
      std::memcpy(out, &acc, sizeof(float));
    }
  }
  CountCubeFractalMacs(m1 * n1 * k1);
  }
}
}  // namespace model_detail

// C = A * B (cmatrixInitVal) or C += A * B, fp32 accumulation, on M. m, n, k need not be
// multiples of 16: the padded part of each fractal takes no part in the sums, and padded result
// positions are written as 0 (C = A * B) or kept (C += A * B). m = 1 is GEMV: A is read as one
// ND row of k elements, as documented. C += A * B when cmatrixInitVal is false (cmatrixSource false:
// C from L0C) or the deprecated isBias is set (dav_c220 MmadCal: cmatrixInitVal && !isBias).
template <typename T, typename U, typename S>
inline void Mmad(const LocalTensor<T> &dst, const LocalTensor<U> &fm, const LocalTensor<S> &filter,
                 const MmadParams &mmadParams, const ascend_model::Site &site = ascend_model::Site()) {
  using namespace ascend_model;
  const char *api = "Mmad";
  const MmadParams &p = mmadParams;
  if (p.cmatrixSource) {
    Fail(api, site, "cmatrixSource = true without a bias tensor initialises C from the BiasTable Buffer at an "
                    "address the documents do not give: use the Mmad overload with a bias tensor in C2");
  }
  model_detail::MmadCompute(api, site, dst, fm, filter, static_cast<const Span *>(nullptr), p,
                            !p.cmatrixInitVal || p.isBias);
}

// The overload with a bias ("Mmad", 传入bias的原型): C(i, j) = bias[j] + sum_k A(i, k) * B(k, j) for
// i < m, j < n, the sum in fp32 in k order after the bias (padded result positions are written as 0).
// As documented for Atlas A2/A3: bias in the BiasTable Buffer (TPosition C2), 64-byte aligned, float
// with half x half or bfloat16_t x bfloat16_t into float (table 8, the pairs the model computes); the
// bias tensor decides where C starts from and cmatrixSource is ignored. The model requires
// cmatrixInitVal = false, as the documents' examples set it ("通过BT Buffer实现高效的bias计算", the mmad
// sample): with true, table 4 says C starts from 0, and whether the bias is then added is not documented.
// A bias tensor in L0C (CO1), which CANN's implementation also takes, is not in the document and stops
// the run, as does the deprecated isBias.
template <typename T, typename U, typename S, typename V>
inline void Mmad(const LocalTensor<T> &dst, const LocalTensor<U> &fm, const LocalTensor<S> &filter,
                 const LocalTensor<V> &bias, const MmadParams &mmadParams,
                 const ascend_model::Site &site = ascend_model::Site()) {
  using namespace ascend_model;
  using namespace ascend_model::ops;
  const char *api = "Mmad(with bias)";
  const Span bs = bias.ModelSpan();
  if (bs.space != Space::kBT) {
    Fail(api, site, std::string("bias ('") + bs.buffer + "') must be in the BiasTable Buffer (TPosition C2), not " +
                        SpaceName(bs.space));
  }
  RequireAlign(api, site, bs, 64, "bias");
  if (KindOf<V>() != KindOf<T>()) {
    Fail(api, site, std::string("bias must have dst's type (table 8: float with half or bfloat16_t inputs, int32_t "
                                "with int8_t), not ") +
                        KindName(KindOf<V>()));
  }
  const MmadParams &p = mmadParams;
  if (p.cmatrixInitVal) {
    Fail(api, site, "cmatrixInitVal = true with a bias tensor: the documents' examples set cmatrixInitVal = false; "
                    "with true C starts from 0 (table 4) and whether the bias is added is not documented");
  }
  if (p.isBias) Fail(api, site, "isBias (deprecated) with a bias tensor is not documented: leave it false");
  model_detail::MmadCompute(api, site, dst, fm, filter, &bs, p, false);
}

}  // namespace AscendC

#endif  // ASCEND_MODEL_OPS_CUBE_H
