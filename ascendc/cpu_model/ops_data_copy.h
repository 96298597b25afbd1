// Modelled AscendC data movement between global memory and the local buffers, for Atlas A2/A3
// (__NPU_ARCH__ 2201): DataCopy (ND -> NZ into L1, contiguous GM <-> UB/L1, L1 -> BiasTable) and DataCopyPad
// (GM <-> UB with DataCopyExtParams). Parameter structs as in CANN's kernel_struct_data_copy.h
// (the non-3510 variants); functions as in kernel_operator_data_copy_intf.h, each with a trailing
// defaulted ascend_model::Site. Only the overloads the kernel needs are declared: a call the real
// headers reject does not compile here either.
//
// Semantics from CANN's API documents ("DataCopy (GMToL1 ND2NZ)", "DataCopy (GM and UB contiguous)",
// "DataCopyPad (GMToUB / UBToGM)", "SetPadValue"). Copies run on MTE2 (GM -> local) and MTE3 (UB -> GM);
// stores to GM go through ascend_model::StoreGm (plain, or the atomic operation SetAtomicAdd enabled).
//
// Requires AscendC::LocalTensor<T> / GlobalTensor<T> (with ModelSpan()), ::half and ::bfloat16_t to
// be declared first (runtime_types.h; kernel_operator.h includes this header after it).
#ifndef ASCEND_MODEL_OPS_DATA_COPY_H
#define ASCEND_MODEL_OPS_DATA_COPY_H

#include <cstdint>
#include <cstring>
#include <vector>

#include "model_hooks.h"
#include "ops_common.h"

namespace AscendC {

const uint8_t DEFAULT_DATA_COPY_NBURST = 1;
const uint8_t DEFAULT_DATA_COPY_STRIDE = 0;

struct DataCopyParams {
  DataCopyParams() {}
  DataCopyParams(const uint16_t count, const uint16_t len, const uint16_t srcStrideIn, const uint16_t dstStrideIn)
      : blockCount(count), blockLen(len), srcStride(srcStrideIn), dstStride(dstStrideIn) {}
  uint16_t blockCount = DEFAULT_DATA_COPY_NBURST;
  uint16_t blockLen = 0;
  union {
    uint16_t srcGap = 0;
    uint16_t srcStride;
  };
  union {
    uint16_t dstGap = 0;
    uint16_t dstStride;
  };
};

struct DataCopyExtParams {
  DataCopyExtParams() {}
  DataCopyExtParams(const uint16_t count, const uint32_t len, const uint32_t srcStrideIn, const uint32_t dstStrideIn,
                    const uint32_t rsvIn)
      : blockCount(count), blockLen(len), srcStride(srcStrideIn), dstStride(dstStrideIn), rsv(rsvIn) {}
  uint16_t blockCount = DEFAULT_DATA_COPY_NBURST;
  uint32_t blockLen = 0;
  uint32_t srcStride = DEFAULT_DATA_COPY_STRIDE;
  uint32_t dstStride = DEFAULT_DATA_COPY_STRIDE;
  uint32_t rsv = 0;
};

template <typename T>
struct DataCopyPadExtParams {
  DataCopyPadExtParams() {}
  DataCopyPadExtParams(const bool isPadValue, const uint8_t leftPadValue, const uint8_t rightPadValue, T padValue)
      : isPad(isPadValue), leftPadding(leftPadValue), rightPadding(rightPadValue), paddingValue(padValue) {}
  bool isPad = false;
  uint8_t leftPadding = 0;
  uint8_t rightPadding = 0;
  T paddingValue = 0;
};

struct Nd2NzParams {
  Nd2NzParams() {}
  Nd2NzParams(const uint16_t ndNumIn, const uint16_t nValueIn, const uint16_t dValueIn,
              const uint16_t srcNdMatrixStrideIn, const uint16_t srcDValueIn, const uint16_t dstNzC0StrideIn,
              const uint16_t dstNzNStrideIn, const uint16_t dstNzMatrixStrideIn)
      : ndNum(ndNumIn),
        nValue(nValueIn),
        dValue(dValueIn),
        srcNdMatrixStride(srcNdMatrixStrideIn),
        srcDValue(srcDValueIn),
        dstNzC0Stride(dstNzC0StrideIn),
        dstNzNStride(dstNzNStrideIn),
        dstNzMatrixStride(dstNzMatrixStrideIn) {}
  uint16_t ndNum = 0;
  uint16_t nValue = 0;
  uint16_t dValue = 0;
  uint16_t srcNdMatrixStride = 0;
  uint16_t srcDValue = 0;
  uint16_t dstNzC0Stride = 0;
  uint16_t dstNzNStride = 0;
  uint16_t dstNzMatrixStride = 0;
};

// GM -> L1 (A1/B1) with ND -> NZ conversion. Row n, column d of ND matrix i lands at element
//   i * dstNzMatrixStride + (d / C0) * dstNzC0Stride * C0 + n * dstNzNStride * C0 + d % C0
// with C0 = 32 bytes / sizeof(T) (strides in 32-byte units except the matrix stride, in
// elements); the last column group is zero-padded to 32 bytes. Rows are read from
//   src + i * srcNdMatrixStride + n * srcDValue (elements).
template <typename T>
inline void DataCopy(const LocalTensor<T> &dst, const GlobalTensor<T> &src, const Nd2NzParams &intriParams,
                     const ascend_model::Site &site = ascend_model::Site()) {
  using namespace ascend_model;
  using namespace ascend_model::ops;
  const char *api = "DataCopy(GM->L1, Nd2NzParams)";
  const Span d = dst.ModelSpan();
  const Span s = src.ModelSpan();
  RequireSpace(api, site, d, Space::kL1, "dst");
  RequireSpace(api, site, s, Space::kGM, "src");
  const Nd2NzParams &p = intriParams;
  if (p.ndNum == 0 || p.nValue == 0 || p.dValue == 0) return;  // documented NOP
  RequireRange(api, site, "ndNum", p.ndNum, 0, 4095);
  RequireRange(api, site, "nValue", p.nValue, 0, 16384);
  RequireRange(api, site, "srcDValue", p.srcDValue, 1, 65535);
  RequireRange(api, site, "dstNzC0Stride", p.dstNzC0Stride, 1, 16384);
  RequireRange(api, site, "dstNzNStride", p.dstNzNStride, 1, 16384);
  RequireRange(api, site, "dstNzMatrixStride", p.dstNzMatrixStride, 0, 16384);
  RequireAlign(api, site, d, kBlockBytes, "dst");

  const uint64_t e = sizeof(T);
  const uint64_t c0 = kBlockBytes / e;
  const uint64_t groups = (p.dValue + c0 - 1) / c0;
  // The documents leave overlapping writes into L1 undefined: every (group, row) of one matrix
  // must get its own 32-byte slot.
  if (groups > 1 || p.nValue > 1) {
    std::vector<uint64_t> slots;
    slots.reserve(groups * p.nValue);
    for (uint64_t g = 0; g < groups; ++g) {
      for (uint64_t n = 0; n < p.nValue; ++n) slots.push_back(g * p.dstNzC0Stride + n * p.dstNzNStride);
    }
    std::sort(slots.begin(), slots.end());
    if (std::adjacent_find(slots.begin(), slots.end()) != slots.end()) {
      Fail(api, site, "dstNzC0Stride " + Num(p.dstNzC0Stride) + " and dstNzNStride " + Num(p.dstNzNStride) +
                          " make rows of " + Num(p.nValue) + " x " + Num(p.dValue) +
                          " overlap in L1 (undefined on hardware)");
    }
  }
  RangeSet reads(s, Pipe::kMTE2, Access::kRead, api, site);
  RangeSet writes(d, Pipe::kMTE2, Access::kWrite, api, site);
  for (uint64_t i = 0; i < p.ndNum; ++i) {
    for (uint64_t n = 0; n < p.nValue; ++n) reads.Add((i * p.srcNdMatrixStride + n * p.srcDValue) * e, p.dValue * e);
    for (uint64_t g = 0; g < groups; ++g) {
      for (uint64_t n = 0; n < p.nValue; ++n) {
        writes.Add(i * p.dstNzMatrixStride * e + (g * p.dstNzC0Stride + n * p.dstNzNStride) * kBlockBytes,
                   kBlockBytes);
      }
    }
  }
  reads.Report();
  writes.Report();
  for (uint64_t i = 0; i < p.ndNum; ++i) {
    for (uint64_t g = 0; g < groups; ++g) {
      const uint64_t cols = p.dValue - g * c0 < c0 ? p.dValue - g * c0 : c0;
      for (uint64_t n = 0; n < p.nValue; ++n) {
        uint8_t *out = d.host + i * p.dstNzMatrixStride * e + (g * p.dstNzC0Stride + n * p.dstNzNStride) * kBlockBytes;
        const uint8_t *in = s.host + (i * p.srcNdMatrixStride + n * p.srcDValue + g * c0) * e;
        std::memcpy(out, in, cols * e);
        if (cols < c0) std::memset(out + cols * e, 0, (c0 - cols) * e);
      }
    }
  }
}

namespace model_detail {
// Contiguous copy by element count: count * sizeof(T) is rounded down to whole 32-byte blocks, as
// documented for the contiguous DataCopy.
inline void ContiguousCopy(const char *api, const ascend_model::Site &site, const ascend_model::Span &d,
                           const ascend_model::Span &s, uint64_t count, uint64_t elemBytes, ascend_model::Pipe pipe) {
  using namespace ascend_model;
  using namespace ascend_model::ops;
  const Span &local = d.space == Space::kGM ? s : d;
  const Span &global = d.space == Space::kGM ? d : s;
  RequireAlign(api, site, local, kBlockBytes, d.space == Space::kGM ? "src" : "dst");
  RequireAlign(api, site, global, elemBytes, d.space == Space::kGM ? "dst" : "src");
  const uint64_t bytes = count * elemBytes / kBlockBytes * kBlockBytes;
  if (bytes == 0) return;
  RangeSet reads(s, pipe, Access::kRead, api, site);
  RangeSet writes(d, pipe, Access::kWrite, api, site);
  reads.Add(0, bytes);
  writes.Add(0, bytes);
  reads.Report();
  writes.Report();
  if (d.space == Space::kGM) {
    StoreGm(d.host, s.host, bytes, elemBytes, api, site);
  } else {
    std::memmove(d.host, s.host, bytes);
  }
}
}  // namespace model_detail

// GM -> UB (VECIN/VECCALC/VECOUT) or L1 (A1/B1), `count` elements (MTE2).
template <typename T>
inline void DataCopy(const LocalTensor<T> &dst, const GlobalTensor<T> &src, const uint32_t count,
                     const ascend_model::Site &site = ascend_model::Site()) {
  using namespace ascend_model;
  const char *api = "DataCopy(GM->local, count)";
  const Span d = dst.ModelSpan();
  const Span s = src.ModelSpan();
  if (d.space != Space::kUB && d.space != Space::kL1) {
    Fail(api, site, std::string("dst ('") + d.buffer + "') must be in UB or L1, not " + SpaceName(d.space));
  }
  ops::RequireSpace(api, site, s, Space::kGM, "src");
  // int4b_t: `count` elements are count / 2 bytes (an odd count stops the run).
  model_detail::ContiguousCopy(api, site, d, s, OffsetBytes<T>(count, api) / sizeof(T), sizeof(T), Pipe::kMTE2);
}

// GM -> UB or L1 (A1/B1/C1) with DataCopyParams (MTE2), as "DataCopy（GMToL1高维切分数据搬运）" and
// "DataCopy（GM与UB高维切分数据搬运）" document it for A2/A3 (any element size: b8 to b64, e.g. the uint64_t
// quantisation words of Fixpipe): blockCount blocks of blockLen 32-byte DataBlocks; srcGap / dstGap are
// DataBlocks from one block's end to the next one's start. Block i is read from
//   src + i * (blockLen + srcGap) * 32   and written to   dst + i * (blockLen + dstGap) * 32   (bytes).
// blockCount in [0, 4095], blockLen in [0, 65535], either 0 a NOP; dst 32-byte aligned.
template <typename T>
inline void DataCopy(const LocalTensor<T> &dst, const GlobalTensor<T> &src, const DataCopyParams &repeatParams,
                     const ascend_model::Site &site = ascend_model::Site()) {
  using namespace ascend_model;
  using namespace ascend_model::ops;
  const char *api = "DataCopy(GM->local, DataCopyParams)";
  const Span d = dst.ModelSpan();
  const Span s = src.ModelSpan();
  if (d.space != Space::kUB && d.space != Space::kL1) {
    Fail(api, site, std::string("dst ('") + d.buffer + "') must be in UB or L1, not " + SpaceName(d.space));
  }
  RequireSpace(api, site, s, Space::kGM, "src");
  const DataCopyParams &p = repeatParams;
  RequireRange(api, site, "blockCount", p.blockCount, 0, 4095);
  if (p.blockCount == 0 || p.blockLen == 0) return;  // documented NOP
  RequireAlign(api, site, d, kBlockBytes, "dst");
  const uint64_t len = static_cast<uint64_t>(p.blockLen) * kBlockBytes;
  const uint64_t srcPitch = len + static_cast<uint64_t>(p.srcGap) * kBlockBytes;
  const uint64_t dstPitch = len + static_cast<uint64_t>(p.dstGap) * kBlockBytes;
  RangeSet reads(s, Pipe::kMTE2, Access::kRead, api, site);
  RangeSet writes(d, Pipe::kMTE2, Access::kWrite, api, site);
  for (uint64_t i = 0; i < p.blockCount; ++i) {
    reads.Add(i * srcPitch, len);
    writes.Add(i * dstPitch, len);
  }
  reads.Report();
  writes.Report();
  for (uint64_t i = 0; i < p.blockCount; ++i) std::memmove(d.host + i * dstPitch, s.host + i * srcPitch, len);
}

// UB -> GM, or L1 -> GM on the Cube core ("DataCopy（L1ToGM连续数据搬运）": src 32-byte aligned, dst 1-byte,
// count * sizeof(T) rounded down to 32 bytes as the document says), `count` elements (MTE3). Both stores
// take the core's atomic state.
template <typename T>
inline void DataCopy(const GlobalTensor<T> &dst, const LocalTensor<T> &src, const uint32_t count,
                     const ascend_model::Site &site = ascend_model::Site()) {
  using namespace ascend_model;
  const Span d = dst.ModelSpan();
  const Span s = src.ModelSpan();
  const char *api = s.space == Space::kL1 ? "DataCopy(L1->GM, count)" : "DataCopy(UB->GM, count)";
  ops::RequireSpace(api, site, d, Space::kGM, "dst");
  if (s.space != Space::kL1) ops::RequireSpace(api, site, s, Space::kUB, "src");
  model_detail::ContiguousCopy(api, site, d, s, OffsetBytes<T>(count, api) / sizeof(T), sizeof(T), Pipe::kMTE3);
}

namespace model_detail {
// Local -> local DataCopy with DataCopyParams. Only L1 (C1) -> BiasTable Buffer (C2) is modelled, as
// "DataCopy（L1ToBiasTable Buffer数据搬运）" documents it for Atlas A2/A3, on MTE1 (dav_c220
// DataCopyL12BTImpl is __inout_pipe__(MTE1)):
//   * src and dst types: T = U (float or int32_t), or half -> float (the one converting pair; exact);
//   * dst 64-byte aligned, src 32-byte aligned; blockCount in [0, 4095], blockLen in [0, 65535], either
//     0 is a NOP;
//   * blockLen counts 64-byte units of the source (doubled in the destination for half -> float, as
//     CANN's CPU check CalculateDataCopyMaxOffset computes it), srcGap 32-byte and dstGap 64-byte units
//     between one block's end and the next block's start: block i is read from
//       src + i * (blockLen * 64 + srcGap * 32)   and written to   dst + i * (blockLen * 64 * r + dstGap * 64)
//     (bytes, r = 2 for half -> float, else 1). A write past the BiasTable buffer stops the run.
// L1 (C1) -> Fixpipe Buffer (C2PIPE2GM): see the branch below. Other local -> local paths (UB -> UB,
// UB <-> L1) stop the run as not modelled.
template <typename T, typename U>
inline void LocalCopy(const char *api, const ascend_model::Site &site, const LocalTensor<T> &dst,
                      const LocalTensor<U> &src, const DataCopyParams &p) {
  using namespace ascend_model;
  using namespace ascend_model::ops;
  const Span d = dst.ModelSpan();
  const Span s = src.ModelSpan();
  if (s.space == Space::kL1 && d.space == Space::kFB) {
    // "DataCopy（L1ToFixpipe-Buffer数据搬运）" (A2/A3), on FIX (dav_c220 DataCopyL12FBImpl is
    // __inout_pipe__(FIX)): src and dst uint64_t; dst 128-byte, src 32-byte aligned; blockCount in
    // [0, 4095] and blockLen in [0, 65535] (0: NOP); blockLen counts 128-byte units; srcGap (32-byte units)
    // and dstGap (128-byte units) run from one block's head to the next one's head (0: every block reads
    // the first source block / overwrites the first destination block):
    //   block i: src + i * srcGap * 32  ->  dst + i * dstGap * 128   (bytes)
    if (!std::is_same<T, uint64_t>::value || !std::is_same<U, uint64_t>::value) {
      Fail(api, site, "L1 -> Fixpipe Buffer copies uint64_t to uint64_t only (the document's data types)");
    }
    RequireRange(api, site, "blockCount", p.blockCount, 0, 4095);
    RequireAlign(api, site, d, 128, "dst");
    RequireAlign(api, site, s, kBlockBytes, "src");
    if (p.blockCount == 0 || p.blockLen == 0) return;  // documented NOP
    const uint64_t len = static_cast<uint64_t>(p.blockLen) * 128;
    RangeSet reads(s, Pipe::kFIX, Access::kRead, api, site);
    RangeSet writes(d, Pipe::kFIX, Access::kWrite, api, site);
    std::vector<std::pair<uint64_t, uint64_t>> blocks;  // (src, dst) byte offsets
    for (uint64_t i = 0; i < p.blockCount; ++i) {
      blocks.emplace_back(i * p.srcGap * kBlockBytes, i * p.dstGap * 128);
      reads.Add(blocks.back().first, len);
      writes.Add(blocks.back().second, len);
    }
    reads.Normalize();
    writes.Normalize();
    reads.Report();
    writes.Report();
    for (const auto &b : blocks) std::memmove(d.host + b.second, s.host + b.first, len);
    return;
  }
  if (!(s.space == Space::kL1 && d.space == Space::kBT)) {
    Fail(api, site, std::string("local -> local copy from ") + SpaceName(s.space) + " ('" + s.buffer + "') to " +
                        SpaceName(d.space) + " ('" + d.buffer +
                        "') is not modelled (only L1 (C1) -> BiasTable Buffer (C2) and L1 -> Fixpipe Buffer "
                        "(C2PIPE2GM) are)");
  }
  constexpr Kind kd = KindOf<T>(), ks = KindOf<U>();
  constexpr bool convert = kd == Kind::kF32 && ks == Kind::kF16;
  if (!(convert || (kd == ks && (kd == Kind::kF32 || kd == Kind::kI32)))) {
    Fail(api, site, std::string("L1 -> BiasTable copies float -> float, int32_t -> int32_t or half -> float "
                                "(Atlas A2/A3: src half, int32_t, float; dst int32_t, float), not ") +
                        KindName(ks) + " -> " + KindName(kd));
  }
  RequireRange(api, site, "blockCount", p.blockCount, 0, 4095);
  RequireAlign(api, site, d, 64, "dst");
  RequireAlign(api, site, s, kBlockBytes, "src");
  if (p.blockCount == 0 || p.blockLen == 0) return;  // documented NOP
  const uint64_t srcBlock = static_cast<uint64_t>(p.blockLen) * 64;
  const uint64_t dstBlock = srcBlock * (convert ? 2 : 1);
  RangeSet reads(s, Pipe::kMTE1, Access::kRead, api, site);
  RangeSet writes(d, Pipe::kMTE1, Access::kWrite, api, site);
  for (uint64_t i = 0; i < p.blockCount; ++i) {
    reads.Add(i * (srcBlock + static_cast<uint64_t>(p.srcGap) * kBlockBytes), srcBlock);
    writes.Add(i * (dstBlock + static_cast<uint64_t>(p.dstGap) * 64), dstBlock);
  }
  reads.Report();
  writes.Report();
  for (uint64_t i = 0; i < p.blockCount; ++i) {
    const uint8_t *in = s.host + i * (srcBlock + static_cast<uint64_t>(p.srcGap) * kBlockBytes);
    uint8_t *out = d.host + i * (dstBlock + static_cast<uint64_t>(p.dstGap) * 64);
    if (!convert) {
      std::memmove(out, in, srcBlock);
    } else {
      for (uint64_t e = 0; e < srcBlock / 2; ++e) {
        const float v = LoadFloat<U>(in + e * 2);
        std::memcpy(out + e * 4, &v, 4);
      }
    }
  }
}
}  // namespace model_detail

// L1 (C1) -> BiasTable Buffer (C2) with DataCopyParams (MTE1); see model_detail::LocalCopy.
template <typename T>
inline void DataCopy(const LocalTensor<T> &dst, const LocalTensor<T> &src, const DataCopyParams &repeatParams,
                     const ascend_model::Site &site = ascend_model::Site()) {
  model_detail::LocalCopy("DataCopy(local->local, DataCopyParams)", site, dst, src, repeatParams);
}

// L1 (C1) -> BiasTable Buffer (C2), src and dst of different types (half -> float).
template <typename T, typename U>
inline void DataCopy(const LocalTensor<T> &dst, const LocalTensor<U> &src, const DataCopyParams &repeatParams,
                     const ascend_model::Site &site = ascend_model::Site()) {
  model_detail::LocalCopy("DataCopy(local->local, DataCopyParams, T/U)", site, dst, src, repeatParams);
}

// L1 (C1) -> BiasTable Buffer (C2), `count` elements: one block of count * sizeof(T) / 64 64-byte units
// (kernel_operator_data_copy_intf_impl.h). The document says a count * sizeof(T) that is not 32-byte
// aligned is rounded down; the model stops the run on any count * sizeof(T) that is not a multiple of
// 64 bytes, the unit the copy moves (the rounded-off bytes would silently not be copied).
template <typename T>
inline void DataCopy(const LocalTensor<T> &dst, const LocalTensor<T> &src, const uint32_t count,
                     const ascend_model::Site &site = ascend_model::Site()) {
  using namespace ascend_model;
  const char *api = "DataCopy(local->local, count)";
  const uint64_t bytes = static_cast<uint64_t>(count) * sizeof(T);
  if (dst.ModelSpan().space == Space::kFB) {
    // L1 -> Fixpipe Buffer: one block of count * 8 / 128 128-byte units; the model stops the run on a
    // count * sizeof(T) that is not a multiple of 128 bytes (the rest would silently not be copied).
    if (bytes % 128 != 0) {
      Fail(api, site, "count * sizeof(T) = " + ops::Num(bytes) +
                          " bytes is not a multiple of 128: the copy to the Fixpipe Buffer moves 128-byte units");
    }
    DataCopyParams fp;
    fp.blockCount = 1;
    fp.blockLen = static_cast<uint16_t>(bytes / 128);
    model_detail::LocalCopy(api, site, dst, src, fp);
    return;
  }
  if (bytes % 64 != 0) {
    Fail(api, site, "count * sizeof(T) = " + ops::Num(bytes) +
                        " bytes is not a multiple of 64: the copy moves 64-byte units and would drop the rest");
  }
  if (bytes / 64 > 65535) Fail(api, site, "count * sizeof(T) / 64 = " + ops::Num(bytes / 64) + " exceeds blockLen's 65535");
  DataCopyParams p;
  p.blockCount = 1;
  p.blockLen = static_cast<uint16_t>(bytes / 64);
  model_detail::LocalCopy(api, site, dst, src, p);
}

namespace model_detail {
// The documented ranges of DataCopyExtParams for rows of elements of `elemBytes` bytes.
inline void RequireExtParams(const char *api, const ascend_model::Site &site, const DataCopyExtParams &p,
                             uint64_t elemBytes) {
  using namespace ascend_model;
  using namespace ascend_model::ops;
  RequireRange(api, site, "blockCount", p.blockCount, 0, 4095);
  RequireRange(api, site, "blockLen", p.blockLen, 0, 2097151);
  if (p.blockLen % elemBytes != 0) {
    Fail(api, site, "blockLen = " + Num(p.blockLen) + " must be a multiple of sizeof(T) = " + Num(elemBytes));
  }
}
}  // namespace model_detail

// GM -> UB, blockCount rows of blockLen bytes (MTE2). Row i is read from
//   src + i * (blockLen + srcStride)                      (bytes)
// and written, after leftPadding elements, to
//   dst + i * (align32(leftPad + blockLen + rightPad) + dstStride * 32)
// Each row is filled up to its 32-byte boundary: left / right padding take paddingValue when
// isPad is set; the dummy bytes past the right padding repeat the row's first element when both
// paddings are 0 (as documented). Padding the documents call random is written as 0xFF bytes.
template <typename T>
inline void DataCopyPad(const LocalTensor<T> &dst, const GlobalTensor<T> &src, const DataCopyExtParams &dataCopyParams,
                        const DataCopyPadExtParams<T> &padParams,
                        const ascend_model::Site &site = ascend_model::Site()) {
  using namespace ascend_model;
  using namespace ascend_model::ops;
  const char *api = "DataCopyPad(GM->UB)";
  const Span d = dst.ModelSpan();
  const Span s = src.ModelSpan();
  RequireSpace(api, site, d, Space::kUB, "dst");
  RequireSpace(api, site, s, Space::kGM, "src");
  const DataCopyExtParams &p = dataCopyParams;
  if (p.blockCount == 0 || p.blockLen == 0) return;  // documented NOP
  const uint64_t e = sizeof(T);
  model_detail::RequireExtParams(api, site, p, e);
  if (padParams.leftPadding * e > kBlockBytes || padParams.rightPadding * e > kBlockBytes) {
    Fail(api, site, "leftPadding / rightPadding (" + Num(padParams.leftPadding) + ", " + Num(padParams.rightPadding) +
                        " elements) must each fit in 32 bytes");
  }
  RequireAlign(api, site, d, kBlockBytes, "dst");
  const uint64_t left = padParams.leftPadding * e;
  const uint64_t right = padParams.rightPadding * e;
  const uint64_t rowBytes = (left + p.blockLen + right + kBlockBytes - 1) / kBlockBytes * kBlockBytes;
  const uint64_t srcPitch = p.blockLen + static_cast<uint64_t>(p.srcStride);
  const uint64_t dstPitch = rowBytes + static_cast<uint64_t>(p.dstStride) * kBlockBytes;
  RangeSet reads(s, Pipe::kMTE2, Access::kRead, api, site);
  RangeSet writes(d, Pipe::kMTE2, Access::kWrite, api, site);
  for (uint64_t i = 0; i < p.blockCount; ++i) {
    reads.Add(i * srcPitch, p.blockLen);
    writes.Add(i * dstPitch, rowBytes);
  }
  reads.Report();
  writes.Report();
  std::vector<uint8_t> padElem(e, 0xFF);
  if (padParams.isPad) {
    std::memcpy(padElem.data(), &padParams.paddingValue, e);
  } else if (left + right > 0) {
    PadValue(padElem.data(), e, api, site);  // SetPadValue's value, if one was set
  }
  for (uint64_t i = 0; i < p.blockCount; ++i) {
    uint8_t *out = d.host + i * dstPitch;
    const uint8_t *in = s.host + i * srcPitch;
    for (uint64_t b = 0; b < left; b += e) std::memcpy(out + b, padElem.data(), e);
    std::memmove(out + left, in, p.blockLen);
    for (uint64_t b = 0; b < right; b += e) std::memcpy(out + left + p.blockLen + b, padElem.data(), e);
    const bool noPadding = left == 0 && right == 0;
    for (uint64_t b = left + p.blockLen + right; b < rowBytes; b += e) {
      std::memcpy(out + b, noPadding ? out : padElem.data(), e);
    }
  }
}

// UB -> GM, blockCount rows of blockLen bytes (MTE3). Row i is read from
//   src + i * (align32(blockLen) + srcStride * 32)
// and exactly its blockLen bytes are written to dst + i * (blockLen + dstStride) (bytes).
template <typename T>
inline void DataCopyPad(const GlobalTensor<T> &dst, const LocalTensor<T> &src, const DataCopyExtParams &dataCopyParams,
                        const ascend_model::Site &site = ascend_model::Site()) {
  using namespace ascend_model;
  using namespace ascend_model::ops;
  const char *api = "DataCopyPad(UB->GM)";
  const Span d = dst.ModelSpan();
  const Span s = src.ModelSpan();
  RequireSpace(api, site, d, Space::kGM, "dst");
  RequireSpace(api, site, s, Space::kUB, "src");
  const DataCopyExtParams &p = dataCopyParams;
  if (p.blockCount == 0 || p.blockLen == 0) return;  // documented NOP
  const uint64_t e = sizeof(T);
  model_detail::RequireExtParams(api, site, p, e);
  RequireAlign(api, site, s, kBlockBytes, "src");
  const uint64_t srcPitch =
      (p.blockLen + kBlockBytes - 1) / kBlockBytes * kBlockBytes + static_cast<uint64_t>(p.srcStride) * kBlockBytes;
  const uint64_t dstPitch = p.blockLen + static_cast<uint64_t>(p.dstStride);
  RangeSet reads(s, Pipe::kMTE3, Access::kRead, api, site);
  RangeSet writes(d, Pipe::kMTE3, Access::kWrite, api, site);
  for (uint64_t i = 0; i < p.blockCount; ++i) {
    reads.Add(i * srcPitch, p.blockLen);
    writes.Add(i * dstPitch, p.blockLen);
  }
  reads.Report();
  writes.Report();
  for (uint64_t i = 0; i < p.blockCount; ++i) {
    StoreGm(d.host + i * dstPitch, s.host + i * srcPitch, p.blockLen, e, api, site);
  }
}

// The value DataCopyPad (GM -> UB) writes into leftPadding / rightPadding when isPad is false
// ("SetPadValue"): T as the copy's element type; pos VECIN, VECOUT or MAX (either).
template <typename T, TPosition pos = TPosition::MAX>
inline void SetPadValue(T paddingValue, const ascend_model::Site &site = ascend_model::Site()) {
  using ascend_model::ops::Kind;
  if (pos != TPosition::VECIN && pos != TPosition::VECOUT && pos != TPosition::MAX) {
    ascend_model::Fail("SetPadValue", site, "pos must be TPosition::VECIN, VECOUT or MAX");
  }
  // The types the A2/A3 document lists: the 8- to 32-bit integers, half, bfloat16_t, float, and
  // int64_t, uint64_t, double.
  const bool supported = ascend_model::ops::KindOf<T>() != Kind::kOther || std::is_same<T, int64_t>::value ||
                         std::is_same<T, uint64_t>::value || std::is_same<T, double>::value;
  ascend_model::SetPadValueBytes(&paddingValue, sizeof(T), supported, site);
}

}  // namespace AscendC

#endif  // ASCEND_MODEL_OPS_DATA_COPY_H
