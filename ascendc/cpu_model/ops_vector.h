// The modelled AscendC vector instructions for Atlas A2/A3 (__NPU_ARCH__ 2201), all on pipe V over UB
// operands, declared as in CANN's basic_api/kernel_operator_vec_*_intf.h with a trailing defaulted
// ascend_model::Site each:
//   ops_vector_common.h  parameter structs, enums, the mask register and SetVectorMask / ResetMask /
//                        SetMaskCount / SetMaskNorm, addressing, overlap rules, codecs and rounding
//   ops_vector_basic.h   Add Sub Mul Div Max Min, Adds Muls Maxs Mins LeakyRelu, Abs Exp Ln Relu, Duplicate
//   ops_vector_reduce.h  WholeReduceMax/Min/Sum, BlockReduceMax/Min/Sum, PairReduceSum, their 9.1.0 names
//                        ReduceRepeat / ReduceDataBlock / ReducePairElem (ReduceType), ReduceMax / ReduceMin /
//                        ReduceSum
//   ops_vector_cast.h    Cast (every A2/A3 pair of the Cast document, half <-> int4b_t included, but int32_t -> half)
//   ops_vector_cmpsel.h  Compare, Compares / CompareScalar, GetCmpMask, SetCmpMask, Select, GatherMask
//   ops_vector_layout.h  Brcb, Copy (UB -> UB), Transpose (16 x 16 and NCHW <-> NHWC); TransDataTo5HD and
//                        Gatherb declared, not modelled
//   this file            Gather, and the headers above
// Each file names the documents it follows and the assumptions it makes where they are silent.
#ifndef ASCEND_MODEL_OPS_VECTOR_H
#define ASCEND_MODEL_OPS_VECTOR_H

#include <cstdint>
#include <cstring>
#include <vector>

#include "model_hooks.h"
#include "ops_common.h"
#include "ops_vector_common.h"
#include "ops_vector_basic.h"
#include "ops_vector_reduce.h"
#include "ops_vector_cast.h"
#include "ops_vector_cmpsel.h"
#include "ops_vector_layout.h"

namespace AscendC {

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
  model_vec::RequireUb(api, site, d, "dst", kBlockBytes);
  model_vec::RequireUb(api, site, s, "src", kBlockBytes);
  model_vec::RequireUb(api, site, o, "srcOffset", kBlockBytes);
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
  CountVectorRepeats((static_cast<uint64_t>(count) * e + kRepeatBytes - 1) / kRepeatBytes,
                     model_vec::VectorOp(api, e));
}

}  // namespace AscendC

#endif  // ASCEND_MODEL_OPS_VECTOR_H
