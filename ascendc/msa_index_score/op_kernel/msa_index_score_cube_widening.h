// int8-key decode with the keys widened on the Cube (docs/ascend.md, "int8 keys widened on the Cube").
//
// A2/A3 cannot feed int8 keys and a 16-bit query to one Mmad, and their Vector cores reach the Cube only
// through GM, so staging the keys as half costs 4 GM bytes a key element beside the 1 read. In a widen task
// (int8 keys, at most kWidenRows query rows: decode) the Cube widens each key page itself:
//   * int8 x int8 -> int32 is exact (Mmad), so the 32 x 32 identity times each 32-wide D slice of the page
//     gives the keys as int32 in L0C, transposed ([D, keys]); the Fixpipe's DEQF16 with the scale 1.0 writes
//     them into L1 as half, exact (|k| <= 128);
//   * LoadData with transpose puts them into L0B as a 16-bit key page, and one fp16 Mmad with the query
//     gives the page's fp32 scores, written to the S workspace as fp16 (F322F16) like every other page.
// The query goes to the Cube as half: each row q, scaled by a power of two so that max |q'| < 2 (q' = q
// 2^(kWidenQueryExp - E), 2^E the smallest power of two above max |q|), written by the Vector cores. Then
// |q' . k| < D x 128 x 2 <= 32,768 for D <= 128: no score can leave fp16's range. What fp16 cannot do is
// carry a score below 2^-14 to better than 2^-25 (2^-14 if the Fixpipe flushes subnormals, which the
// documents do not say); times the key's scale s and 2^(E - kWidenQueryExp) after the hand-over, that is
// below SPEC §6's 1e-3 when 2^(E - kWidenQueryExp) |s| < 8. A page whose bound (ScaleSplit::Bound) is not
// below that, and a row that half does not hold exactly (its elements must all lie at or above
// 2^(E - 18) for bf16, 2^(E - 15) for fp16, or be 0), are recomputed in fp32 from the query and the keys
// (ScoreRange), so the widening never decides a result it cannot carry.
#ifndef MSA_INDEX_SCORE_CUBE_WIDENING_H
#define MSA_INDEX_SCORE_CUBE_WIDENING_H

#include "kernel_operator.h"

namespace msa_kernel {

using namespace AscendC;

constexpr uint32_t kWidenRows = 4;        // query rows of a widen task at most (decode: one token x 4 heads)
constexpr uint32_t kWidenMaxDim = 128;    // D at most: the page's widened keys fill one L0C buffer
constexpr uint32_t kIdentityEdge = 32;    // the identity's edge: int8's fractal K width
constexpr uint32_t kIdentityBytes = kIdentityEdge * kIdentityEdge;
constexpr int32_t kWidenQueryExp = 1;     // max |q'| < 2^kWidenQueryExp
constexpr uint64_t kDeqOne = 0x3F800000ULL;  // DEQF16's quantisation word for the scale 1.0 (M1 = 1.0f)
// E outside this range falls back to the fp32 recompute: 2^(1 - E) and the bound's 2^(E + 13) must be
// normal floats.
constexpr int32_t kMinExp = -98;
constexpr int32_t kMaxExp = 100;
// A page's bound is 2^(E - kWidenQueryExp) x (a power of two above max |s|) x kBoundScale; at or above
// kHalfMax (65,504) it makes the page unheld: held pages have 2^(E - 1) |s| < 65,504 / 2^13 < 8.
constexpr float kBoundScale = 8192.0f;

// 2^e as a float, e in [-126, 127].
__aicore__ inline float Pow2(int32_t e) {
  const uint32_t bits = static_cast<uint32_t>(e + 127) << 23;
  float f;
  __builtin_memcpy(&f, &bits, sizeof(f));
  return f;
}

// E of a row from max |q| (a float read by the scalar unit): the exponent of the smallest power of two above
// it, or kMaxExp + 1 when it is not a finite normal number > 0 (0 itself: a zero row, E 0).
__aicore__ inline int32_t QueryExponent(float maxAbs) {
  if (maxAbs == 0.0f) return 0;
  uint32_t bits;
  __builtin_memcpy(&bits, &maxAbs, sizeof(bits));
  const int32_t field = static_cast<int32_t>((bits >> 23) & 0xFF);
  if (field == 0 || field == 0xFF) return kMaxExp + 1;  // subnormal (E below kMinExp anyway), inf or NaN
  return field - 127 + 1;
}

__aicore__ inline bool QueryExponentInRange(int32_t e) { return e >= kMinExp && e <= kMaxExp; }

// max |x| of each of `rows` rows of d floats (d a multiple of 32, at most 128) into maxAbs[0, rows), through
// mag ([rows, d]).
__aicore__ inline void RowMaxAbs(const LocalTensor<float> &maxAbs, const LocalTensor<float> &mag,
                                 const LocalTensor<float> &x, uint32_t rows, uint32_t d) {
  constexpr uint32_t kFloatsPerRepeat = 64;
  const uint8_t rowBlocks = static_cast<uint8_t>(d * sizeof(float) / 32);
  Abs(mag, x, rows * d);
  PipeBarrier<PIPE_V>();
  if (d > kFloatsPerRepeat) {  // each row's second 64 lanes into its first
    Max(mag, mag, mag[kFloatsPerRepeat], d - kFloatsPerRepeat, rows,
        BinaryRepeatParams(1, 1, 1, rowBlocks, rowBlocks, rowBlocks));
    PipeBarrier<PIPE_V>();
  }
  WholeReduceMax(maxAbs, mag, d > kFloatsPerRepeat ? kFloatsPerRepeat : d, rows, 1, 1, rowBlocks,
                 ReduceOrder::ORDER_ONLY_VALUE);
}

}  // namespace msa_kernel

#endif  // MSA_INDEX_SCORE_CUBE_WIDENING_H
