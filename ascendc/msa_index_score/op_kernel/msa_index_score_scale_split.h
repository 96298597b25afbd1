// int8 keys with an fp16 S workspace (docs/ascend.md, "int8 keys: the scale split in two"): each key's
// scale s is split into p * m, where p = 2^e is a power of two and m = s / p.
//   * The Vector cores stage the keys for the Cube as int8 * p, computed in half: |int8| <= 128 has at
//     most 8 significant bits, so int8 * p is exact in half and in bf16 while p lies in [2^-14, 2^8]
//     (normal, and 128 * 2^8 below 65,504).
//   * The Cube's fp32 scores q . (k p) = p (q . k) are written as fp16 like those of 16-bit keys. The
//     Vector cores multiply each key's column by m after the hand-over.
//   * e is s's exponent clamped to [-14, 8], so |m| is in [1, 2) unless the clamp acted. With |m| >= 1
//     the range check of ScoreRange stays sound: a score fp16 could not hold comes back as
//     +-65,504 * m, of the true sign and at least 65,504 in magnitude. With |m| < 2 fp16's error below
//     2^-14 (2^-25, or 2^-14 if the Fixpipe flushed subnormals, which the documents do not say) stays
//     far below SPEC §6's 1e-3.
//   * A page with a key whose scale the clamp changed (0, subnormal, below 2^-14, 2^9 or more, inf,
//     NaN) is flagged (Mantissa's flag) and so recomputed in fp32 by ScoreRange.
// p comes from s's bits: its sign and mantissa are cleared with And on 16-bit halves. And.md gives A2/A3
// And for int16_t / uint16_t only, and advises ReinterpretCast for 32-bit words. 1 / p is built in the
// exponent field too, so that m = s * (1 / p) is exact: Div's accuracy is not documented.
#ifndef MSA_INDEX_SCORE_SCALE_SPLIT_H
#define MSA_INDEX_SCORE_SCALE_SPLIT_H

#include "kernel_operator.h"

namespace msa_kernel {

using namespace AscendC;

class ScaleSplit {
  static constexpr float kMinPower = 6.10351562e-05f;     // 2^-14
  static constexpr float kMaxPower = 256.0f;              // 2^8
  static constexpr uint32_t kExponentBits = 0x7F800000u;  // a float's exponent field
  static constexpr int32_t kInverseBase = 0x7F000000;     // bits of 1 / 2^e = 0x7F000000 - bits of 2^e
  static constexpr float kFlagScale = 4294967296.0f;      // 2^32: the smallest clamp (2^-15) flags
  static constexpr uint32_t kFloatsPerRepeat = 64;
  static constexpr uint32_t kBlockHalves = 16;            // halves of one 32-byte block

 public:
  // `keys` scales at most per call, `stageRows` staged key rows at most per PowerBlocks call.
  __aicore__ inline void Init(TPipe *pipe, uint32_t keys, uint32_t stageRows) {
    keys_ = keys;
    pipe->InitBuffer(exponentMaskBuf_, keys * sizeof(uint32_t));
    pipe->InitBuffer(powerBuf_, keys * sizeof(float));
    pipe->InitBuffer(powerHalfBuf_, keys * sizeof(half));
    pipe->InitBuffer(mantissaBuf_, keys * sizeof(float));
    pipe->InitBuffer(rawBuf_, keys * sizeof(float));
    pipe->InitBuffer(diffBuf_, keys * sizeof(float));
    pipe->InitBuffer(blocksBuf_, stageRows * kBlockHalves * sizeof(half));
    Duplicate(exponentMaskBuf_.Get<uint32_t>(), kExponentBits, static_cast<int32_t>(keys));
    PipeBarrier<PIPE_V>();  // the first And reads the mask
  }

  // p of the first n scales of `scale` (n a multiple of 8, at most `keys`) as half, each p repeated over
  // one 32-byte block: block r of the result holds p[r] (for a per-row multiply with block stride 0).
  // The caller puts a barrier between this and the first read of the blocks.
  __aicore__ inline LocalTensor<half> PowerBlocks(const LocalTensor<float> &scale, uint32_t n) {
    LocalTensor<float> p = powerBuf_.Get<float>();
    LocalTensor<half> pHalf = powerHalfBuf_.Get<half>();
    Power(p, scale, n);
    PipeBarrier<PIPE_V>();  // p is clamped; the previous call's Brcb has read pHalf
    Cast(pHalf, p, RoundMode::CAST_NONE, static_cast<int32_t>(n));  // exact: a power of two in range
    LocalTensor<half> blocks = blocksBuf_.Get<half>();
    PipeBarrier<PIPE_V>();  // pHalf is written; the previous call's multiplies have read the blocks
    Brcb(blocks, pHalf, static_cast<uint8_t>(n / 8), BrcbRepeatParams(1, 8));
    return blocks;
  }

  // m = s / p of the first `keys` scales, and the page's flag (MantissaFlag): at least 65,504 when one
  // of the first `present` scales (the page's keys) was clamped, so that the page counts as unheld.
  // The barriers inside order m and the flag before their readers.
  __aicore__ inline LocalTensor<float> Mantissa(const LocalTensor<float> &scale, uint32_t present) {
    LocalTensor<float> p = powerBuf_.Get<float>();
    LocalTensor<int32_t> inverse = p.ReinterpretCast<int32_t>();
    LocalTensor<float> raw = rawBuf_.Get<float>();
    LocalTensor<float> diff = diffBuf_.Get<float>();
    LocalTensor<float> m = mantissaBuf_.Get<float>();
    const int32_t n = static_cast<int32_t>(keys_);
    Unclamped(raw, scale, keys_);
    Duplicate(diff, 0.0f, n);
    PipeBarrier<PIPE_V>();
    Clamp(p, raw, keys_);
    PipeBarrier<PIPE_V>();
    Sub(raw, raw, p, n);  // 0 where the clamp did nothing, else at least 2^-15 (or inf)
    PipeBarrier<PIPE_V>();
    Muls(inverse, inverse, static_cast<int32_t>(-1), n);
    Abs(diff, raw, static_cast<int32_t>(present));
    PipeBarrier<PIPE_V>();
    Adds(inverse, inverse, kInverseBase, n);
    Max(raw, diff, diff[kFloatsPerRepeat], static_cast<int32_t>(kFloatsPerRepeat));
    PipeBarrier<PIPE_V>();
    Mul(m, scale, p, n);  // exact: p now holds 1 / p, a power of two
    Muls(raw, raw, kFlagScale, static_cast<int32_t>(kFloatsPerRepeat));
    PipeBarrier<PIPE_V>();
    return m;
  }
  // The flag of the last Mantissa call (for ScoreRange::Note) or Bound call (for NoteBound), 64 lanes.
  __aicore__ inline LocalTensor<float> MantissaFlag() { return rawBuf_.Get<float>(); }

  // A widen task's page (msa_index_score_cube_widening.h): a bound above max |s| over the first `present`
  // scales, times `factor` (a power of two), in 64 lanes for ScoreRange::NoteBound. The bound is 2 x 2^e of
  // the largest scale (above |s|); inf for an inf or NaN scale, 0 for 0 and subnormals (their scores'
  // error is far below SPEC's). The caller orders it before its reader (ReducePage's barrier after the
  // dequant). Its Abs / Max / Muls are those of Mantissa's flag, written out in each: Mantissa interleaves
  // them with 1 / p's steps so that the two share their barriers, which a common helper would not.
  __aicore__ inline LocalTensor<float> Bound(const LocalTensor<float> &scale, uint32_t present, float factor) {
    LocalTensor<float> raw = rawBuf_.Get<float>();
    LocalTensor<float> diff = diffBuf_.Get<float>();
    Unclamped(raw, scale, keys_);
    Duplicate(diff, 0.0f, static_cast<int32_t>(keys_));
    PipeBarrier<PIPE_V>();
    Abs(diff, raw, static_cast<int32_t>(present));  // the page's keys only: 2^e >= 0, unchanged
    PipeBarrier<PIPE_V>();
    Max(raw, diff, diff[kFloatsPerRepeat], static_cast<int32_t>(kFloatsPerRepeat));
    PipeBarrier<PIPE_V>();
    Muls(raw, raw, 2.0f * factor, static_cast<int32_t>(kFloatsPerRepeat));
    return raw;
  }

 private:
  // |s| with its mantissa cleared: 2^e for a normal s, 0 for 0 and subnormals, inf for inf and NaN.
  __aicore__ inline void Unclamped(const LocalTensor<float> &dst, const LocalTensor<float> &scale, uint32_t n) {
    // The previous readers of dst come before a barrier of their own.
    And(dst.ReinterpretCast<uint16_t>(), scale.ReinterpretCast<uint16_t>(), exponentMaskBuf_.Get<uint16_t>(),
        static_cast<int32_t>(2 * n));
  }
  // dst = src clamped to [kMinPower, kMaxPower] (p from Unclamped's 2^e). The caller orders src's writer
  // before it and dst's readers after it.
  __aicore__ inline void Clamp(const LocalTensor<float> &dst, const LocalTensor<float> &src, uint32_t n) {
    Maxs(dst, src, kMinPower, static_cast<int32_t>(n));
    PipeBarrier<PIPE_V>();
    Mins(dst, dst, kMaxPower, static_cast<int32_t>(n));
  }
  // p: the power of two of s clamped to [kMinPower, kMaxPower].
  __aicore__ inline void Power(const LocalTensor<float> &p, const LocalTensor<float> &scale, uint32_t n) {
    Unclamped(p, scale, n);
    PipeBarrier<PIPE_V>();
    Clamp(p, p, n);
  }

  uint32_t keys_ = 0;
  TBuf<TPosition::VECCALC> exponentMaskBuf_;
  TBuf<TPosition::VECCALC> powerBuf_;
  TBuf<TPosition::VECCALC> powerHalfBuf_;
  TBuf<TPosition::VECCALC> mantissaBuf_;
  TBuf<TPosition::VECCALC> rawBuf_;
  TBuf<TPosition::VECCALC> diffBuf_;
  TBuf<TPosition::VECCALC> blocksBuf_;
};

}  // namespace msa_kernel

#endif  // MSA_INDEX_SCORE_SCALE_SPLIT_H
