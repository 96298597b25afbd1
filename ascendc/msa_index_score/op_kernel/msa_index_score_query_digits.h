// int8 keys straight to the Cube (docs/ascend.md, "int8 keys on the Cube: the query as int8 digits").
//
// The Cube multiplies int8 by int8 into int32 exactly, so a decode task's query rows go to it as int8 digits:
//   q = 2^E (d0 2^-6 + d1 2^-13 + d2 2^-20 + d3 2^-27) + remainder,
// 2^E the smallest power of two above max |q| of the row, d0 = round(q 2^(6-E)) and each next digit the
// remainder times 2^7, rounded (|d_i| <= 64). Every step is exact in fp32: scaling by a power of two, rounding
// to an integer, and a subtraction whose result has fewer significant bits than its operands. The digits hold
// the row exactly when the last remainder is zero; a row they do not hold (or with a NaN, an infinity, or an
// exponent outside kMinExp..kMaxExp) makes the task's pages "unheld", recomputed in fp32 from the query and
// the keys (ScoreRange), so the digits never decide a result they cannot carry.
//
// The Cube's int32 dots of the digit rows against the int8 keys are exact (|d| <= 64, |k| <= 128, D <= 128:
// below 2^21) and reach fp32 exactly; Combine adds them back with their powers of two, in fp32: the error is
// that of three additions, as small as the fp32 accumulation of a dot product.
#ifndef MSA_INDEX_SCORE_QUERY_DIGITS_H
#define MSA_INDEX_SCORE_QUERY_DIGITS_H

#include "kernel_operator.h"

namespace msa_kernel {

using namespace AscendC;

constexpr uint32_t kQueryDigits = 4;     // int8 digits per query row
constexpr uint32_t kDigitTaskRows = 4;   // query rows of a digit task: 4 x 4 digits = one 16-row Cube band
constexpr int32_t kFirstDigitBits = 6;   // |d0| <= 2^6
constexpr int32_t kDigitBits = 7;        // each next digit: 7 more bits, |d_i| <= 2^6
// E outside this range falls back to the fp32 recompute: 2^(6 - E) and 2^(E - 6 - 21) must be normal floats,
// and a combined dot (|sum| < 2^21 per digit) times 2^(E - 6) must stay below fp32's largest.
constexpr int32_t kMinExp = -98;
constexpr int32_t kMaxExp = 100;

// T when B, else F (the accumulator type of a Cube page).
template <bool B, typename T, typename F>
struct PickType {
  using type = T;
};
template <typename T, typename F>
struct PickType<false, T, F> {
  using type = F;
};

// 2^e as a float, e in [-126, 127].
__aicore__ inline float Pow2(int32_t e) {
  const uint32_t bits = static_cast<uint32_t>(e + 127) << 23;
  float f;
  __builtin_memcpy(&f, &bits, sizeof(f));
  return f;
}

// E of a row from max |q| (a float read by the scalar unit): the exponent of the smallest power of two above
// it, or kMaxExp + 1 when it is not a finite normal number > 0 (0 itself: all digits 0, E 0).
__aicore__ inline int32_t DigitExponent(float maxAbs) {
  if (maxAbs == 0.0f) return 0;
  uint32_t bits;
  __builtin_memcpy(&bits, &maxAbs, sizeof(bits));
  const int32_t field = static_cast<int32_t>((bits >> 23) & 0xFF);
  if (field == 0 || field == 0xFF) return kMaxExp + 1;  // subnormal (E below kMinExp anyway), inf or NaN
  return field - 127 + 1;
}

__aicore__ inline bool DigitExponentInRange(int32_t e) { return e >= kMinExp && e <= kMaxExp; }

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

// The scores of `rows` query rows against a page of keys from their digit rows' int32 dots:
// parts [rows * kQueryDigits, pageKeys] (row r's digit i at row r * kQueryDigits + i) widened to fp32 in
// place, each times 2^(E_r - 6 - 7 i), summed in digit order into scores [rows, pageKeys].
__aicore__ inline void CombineDigits(const LocalTensor<float> &scores, const LocalTensor<float> &parts,
                                     const LocalTensor<int32_t> &dots, const int32_t *exps, uint32_t rows,
                                     uint32_t pageKeys) {
  Cast(parts, dots, RoundMode::CAST_NONE, rows * kQueryDigits * pageKeys);  // |dot| < 2^21: exact
  PipeBarrier<PIPE_V>();
  for (uint32_t r = 0; r < rows; ++r) {
    for (uint32_t i = 0; i < kQueryDigits; ++i) {
      const LocalTensor<float> part = parts[(r * kQueryDigits + i) * pageKeys];
      Muls(part, part, Pow2(exps[r] - kFirstDigitBits - kDigitBits * static_cast<int32_t>(i)), pageKeys);
    }
  }
  PipeBarrier<PIPE_V>();
  for (uint32_t r = 0; r < rows; ++r) {
    const LocalTensor<float> row = scores[r * pageKeys];
    Add(row, parts[r * kQueryDigits * pageKeys], parts[(r * kQueryDigits + 1) * pageKeys], pageKeys);
    for (uint32_t i = 2; i < kQueryDigits; ++i) {
      PipeBarrier<PIPE_V>();
      Add(row, row, parts[(r * kQueryDigits + i) * pageKeys], pageKeys);
    }
  }
}

}  // namespace msa_kernel

#endif  // MSA_INDEX_SCORE_QUERY_DIGITS_H
