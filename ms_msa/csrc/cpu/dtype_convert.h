// Element decoding to fp32 for every dtype the CPU kernel reads. All conversions are exact.
#pragma once
#include <cstdint>
#include <cstring>

#include "../common/msa_config.h"

namespace msa {
namespace cpu {

inline float BitsToFloat(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

inline float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  if (exp == 0) {
    const float mag = static_cast<float>(mant) * (1.0f / 16777216.0f);  // mant * 2^-24
    return sign ? -mag : mag;
  }
  if (exp == 31) return BitsToFloat(sign | 0x7f800000u | (mant << 13));
  return BitsToFloat(sign | ((exp + 112u) << 23) | (mant << 13));
}

inline float BFloat16ToFloat(uint16_t h) { return BitsToFloat(static_cast<uint32_t>(h) << 16); }

// fp8 has 256 codes: decode each once into a table.
struct Fp8Table {
  float value[256];
};

// OCP float8_e4m3fn: bias 7, no infinities, S.1111.111 is NaN.
inline Fp8Table MakeE4M3FNTable() {
  Fp8Table t{};
  for (int c = 0; c < 256; ++c) {
    const int exp = (c >> 3) & 0xf, mant = c & 0x7;
    float mag;
    if (exp == 0xf && mant == 0x7) {
      mag = BitsToFloat(0x7fc00000u);
    } else if (exp == 0) {
      mag = static_cast<float>(mant) / 8.0f / 64.0f;  // 2^-6 * mant/8
    } else {
      mag = (1.0f + mant / 8.0f) * BitsToFloat(static_cast<uint32_t>(exp - 7 + 127) << 23);
    }
    t.value[c] = (c & 0x80) ? -mag : mag;
  }
  return t;
}

// OCP float8_e5m2: bias 15, IEEE-like infinities and NaNs.
inline Fp8Table MakeE5M2Table() {
  Fp8Table t{};
  for (int c = 0; c < 256; ++c) {
    const int exp = (c >> 2) & 0x1f, mant = c & 0x3;
    float mag;
    if (exp == 0x1f) {
      mag = mant == 0 ? BitsToFloat(0x7f800000u) : BitsToFloat(0x7fc00000u);
    } else if (exp == 0) {
      mag = static_cast<float>(mant) / 4.0f / 16384.0f;  // 2^-14 * mant/4
    } else {
      mag = (1.0f + mant / 4.0f) * BitsToFloat(static_cast<uint32_t>(exp - 15 + 127) << 23);
    }
    t.value[c] = (c & 0x80) ? -mag : mag;
  }
  return t;
}

inline const Fp8Table &E4M3FNTable() {
  static const Fp8Table t = MakeE4M3FNTable();
  return t;
}
inline const Fp8Table &E5M2Table() {
  static const Fp8Table t = MakeE5M2Table();
  return t;
}

// Decodes n elements of `dtype` starting at element `offset` of `base` into dst.
inline void DecodeRow(DType dtype, const void *base, int64_t offset, int64_t n, float *dst) {
  switch (dtype) {
    case DType::kFloat32: {
      std::memcpy(dst, static_cast<const float *>(base) + offset, n * sizeof(float));
      break;
    }
    case DType::kFloat16: {
      const uint16_t *src = static_cast<const uint16_t *>(base) + offset;
      for (int64_t i = 0; i < n; ++i) dst[i] = HalfToFloat(src[i]);
      break;
    }
    case DType::kBFloat16: {
      const uint16_t *src = static_cast<const uint16_t *>(base) + offset;
      for (int64_t i = 0; i < n; ++i) dst[i] = BFloat16ToFloat(src[i]);
      break;
    }
    case DType::kFloat8E4M3FN:
    case DType::kFloat8E5M2: {
      const float *table = (dtype == DType::kFloat8E4M3FN ? E4M3FNTable() : E5M2Table()).value;
      const uint8_t *src = static_cast<const uint8_t *>(base) + offset;
      for (int64_t i = 0; i < n; ++i) dst[i] = table[src[i]];
      break;
    }
    case DType::kInt8: {
      const int8_t *src = static_cast<const int8_t *>(base) + offset;
      for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<float>(src[i]);
      break;
    }
    default:
      for (int64_t i = 0; i < n; ++i) dst[i] = 0.0f;
  }
}

}  // namespace cpu
}  // namespace msa
