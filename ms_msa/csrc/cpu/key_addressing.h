// Where key n of logical block beta of request b lives, per layout (SPEC §4 "Key addressing"), in
// 64-bit element offsets: a cache or an output may exceed 2^31 elements. Every layout is affine in n
// inside a block, which the kernel uses: offset(n) = offset(0) + n * (offset(1) - offset(0)).
#pragma once
#include <cstdint>

#include "../common/msa_config.h"

namespace msa {
namespace cpu {

struct KeyLocation {
  int64_t key;    // element offset of the key row (D elements) in the key tensor
  int64_t scale;  // element offset of its int8 dequant scale in the scale tensor
};

// Paged layouts: the physical page comes from the block table. The scale is [NP, N2, P] or, with
// scale_bbn, [NP, P, N2] (CANN's "BBN"), for either key layout.
inline KeyLocation PagedKey(Layout layout, int64_t page, int64_t n, int64_t g, int64_t P, int64_t N2, int64_t D,
                            bool scale_bbn = false) {
  KeyLocation loc;
  loc.key = layout == Layout::kBBND ? ((page * P + n) * N2 + g) * D : ((page * N2 + g) * P + n) * D;
  loc.scale = scale_bbn ? (page * P + n) * N2 + g : (page * N2 + g) * P + n;
  return loc;
}

// TND: packed rows; key_row0 is the request's first row (its klen prefix).
inline KeyLocation PackedKey(int64_t key_row0, int64_t beta, int64_t n, int64_t g, int64_t P, int64_t N2, int64_t D) {
  const int64_t row = key_row0 + beta * P + n;
  return {(row * N2 + g) * D, row * N2 + g};  // scale is [T2, N2] (or [T2] when N2 = 1)
}

// Bytes of one key element.
constexpr int64_t KeyElementBytes(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return 4;
    case DType::kFloat16:
    case DType::kBFloat16: return 2;
    default: return 1;  // int8, fp8
  }
}

// Element offset of output row (head, token) in the [N1, T1, W] score.
inline int64_t OutputRow(int64_t head, int64_t token, int64_t T1, int64_t W) { return (head * T1 + token) * W; }

}  // namespace cpu
}  // namespace msa
