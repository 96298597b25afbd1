// Private helpers of the modelled instructions (ops_data_copy.h, ops_cube.h, ops_vector.h): element
// codecs, exact byte-range bookkeeping for ascend_model::Touch, and the parameter checks they share.
// Nothing here is AscendC API; the kernel never names namespace ascend_model::ops.
//
// Uses runtime_types.h for ::half / ::bfloat16_t and their exact decoders; the encoders here add
// the rounding modes of Cast. They only rely on the IEEE bit layouts (binary16, and the upper half
// of binary32), not on how the runtime's classes for those types look.
#ifndef ASCEND_MODEL_OPS_COMMON_H
#define ASCEND_MODEL_OPS_COMMON_H

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "model_hooks.h"
#include "runtime_types.h"

namespace ascend_model {
namespace ops {

// ---- sizes fixed by the hardware (Atlas A2/A3) ----------------------------------------------------
constexpr uint64_t kBlockBytes = 32;      // one UB / L1 data block
constexpr uint64_t kRepeatBytes = 256;    // one vector repeat: 8 blocks
constexpr uint64_t kBlocksPerRepeat = 8;
constexpr uint64_t kFractalBytes = 512;   // one L0A / L0B fractal
constexpr uint64_t kCubeEdge = 16;        // M0 = N0 = 16

inline std::string Num(uint64_t v) { return std::to_string(v); }

// Fails unless `span` lies in `want`; `what` names the operand ("dst", "src0", ...).
inline void RequireSpace(const char *api, const Site &site, const Span &span, Space want, const char *what) {
  if (span.space != want) {
    Fail(api, site, std::string(what) + " ('" + span.buffer + "') must be in " + SpaceName(want) + ", not " +
                        SpaceName(span.space));
  }
}

inline void RequireAlign(const char *api, const Site &site, const Span &span, uint64_t align, const char *what) {
  if (span.offset % align != 0) {
    Fail(api, site, std::string(what) + " ('" + span.buffer + "') must be " + Num(align) +
                        "-byte aligned; it starts at byte " + Num(span.offset) + " of its buffer");
  }
}

inline void RequireRange(const char *api, const Site &site, const char *param, uint64_t value, uint64_t lo,
                         uint64_t hi) {
  if (value < lo || value > hi) {
    Fail(api, site, std::string(param) + " = " + Num(value) + " is outside its documented range [" + Num(lo) +
                        ", " + Num(hi) + "]");
  }
}

// ---- exact byte ranges ---------------------------------------------------------------------------
// Collects the byte ranges one operand of one instruction reads or writes, merging a range that
// touches or overlaps the previous one, then reports them all to ascend_model::Touch. Every
// instruction reports all ranges of all operands before it reads or writes a byte, so a range
// the runtime rejects stops the run before anything is touched.
class RangeSet {
 public:
  RangeSet(const Span &span, Pipe pipe, Access access, const char *api, const Site &site)
      : span_(span), pipe_(pipe), access_(access), api_(api), site_(site) {}

  void Add(uint64_t offset, uint64_t bytes) {
    if (bytes == 0) return;
    if (!ranges_.empty()) {
      auto &last = ranges_.back();
      if (offset <= last.second && offset + bytes >= last.first) {  // touching or overlapping
        last.first = std::min(last.first, offset);
        last.second = std::max(last.second, offset + bytes);
        return;
      }
    }
    ranges_.emplace_back(offset, offset + bytes);
  }

  // Sorts and merges first: for gathers, whose element order is not address order.
  void Normalize() {
    std::sort(ranges_.begin(), ranges_.end());
    std::vector<std::pair<uint64_t, uint64_t>> merged;
    for (const auto &r : ranges_) {
      if (!merged.empty() && r.first <= merged.back().second) {
        merged.back().second = std::max(merged.back().second, r.second);
      } else {
        merged.push_back(r);
      }
    }
    ranges_.swap(merged);
  }

  void Report() const {
    for (const auto &r : ranges_) Touch(span_, r.first, r.second - r.first, pipe_, access_, api_, site_);
  }

  bool Intersects(const RangeSet &other) const {
    for (const auto &a : ranges_) {
      for (const auto &b : other.ranges_) {
        if (a.first < b.second && b.first < a.second) return true;
      }
    }
    return false;
  }

  const std::vector<std::pair<uint64_t, uint64_t>> &ranges() const { return ranges_; }
  uint64_t Bytes() const {  // the bytes of the ranges (after Normalize: each byte once)
    uint64_t n = 0;
    for (const auto &r : ranges_) n += r.second - r.first;
    return n;
  }
  uint8_t *Host(uint64_t offset) const { return span_.host + offset; }

 private:
  Span span_;
  Pipe pipe_;
  Access access_;
  const char *api_;
  const Site &site_;
  std::vector<std::pair<uint64_t, uint64_t>> ranges_;
};

// Whether two spans' host bytes [a, a+na) and [b, b+nb) overlap (same buffer or not).
inline bool HostOverlap(const uint8_t *a, uint64_t na, const uint8_t *b, uint64_t nb) {
  return a < b + nb && b < a + na;
}

// ---- element codecs ------------------------------------------------------------------------------
enum class Kind { kF32, kF16, kBF16, kI8, kU8, kI16, kU16, kI32, kU32, kOther };

template <typename T>
constexpr Kind KindOf() {
  if (std::is_same<T, float>::value) return Kind::kF32;
  if (std::is_same<T, ::half>::value) return Kind::kF16;
  if (std::is_same<T, ::bfloat16_t>::value) return Kind::kBF16;
  if (std::is_same<T, int8_t>::value) return Kind::kI8;
  if (std::is_same<T, uint8_t>::value) return Kind::kU8;
  if (std::is_same<T, int16_t>::value) return Kind::kI16;
  if (std::is_same<T, uint16_t>::value) return Kind::kU16;
  if (std::is_same<T, int32_t>::value) return Kind::kI32;
  if (std::is_same<T, uint32_t>::value) return Kind::kU32;
  return Kind::kOther;
}

inline const char *KindName(Kind k) {
  switch (k) {
    case Kind::kF32: return "float";
    case Kind::kF16: return "half";
    case Kind::kBF16: return "bfloat16_t";
    case Kind::kI8: return "int8_t";
    case Kind::kU8: return "uint8_t";
    case Kind::kI16: return "int16_t";
    case Kind::kU16: return "uint16_t";
    case Kind::kI32: return "int32_t";
    case Kind::kU32: return "uint32_t";
    case Kind::kOther: break;
  }
  return "an unmodelled type";
}

// Loads / stores one element of T as float (the types the modelled arithmetic supports).
template <typename T>
inline float LoadFloat(const uint8_t *p) {
  constexpr Kind k = KindOf<T>();
  if (k == Kind::kF32) {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  } else if (k == Kind::kF16 || k == Kind::kBF16) {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return k == Kind::kF16 ? ascend_model::HalfBitsToFloat(h) : ascend_model::Bf16BitsToFloat(h);
  } else if (k == Kind::kI8) {
    return static_cast<float>(static_cast<int8_t>(*p));
  } else if (k == Kind::kU8) {
    return static_cast<float>(*p);
  }
  return 0.0f;
}

template <typename T>
inline void StoreFloat(uint8_t *p, float v, Rounding r) {
  constexpr Kind k = KindOf<T>();
  if (k == Kind::kF32) {
    std::memcpy(p, &v, 4);
  } else if (k == Kind::kF16) {
    const uint16_t h = FloatToHalfBits(v, r);
    std::memcpy(p, &h, 2);
  } else if (k == Kind::kBF16) {
    const uint16_t h = FloatToBf16Bits(v, r);
    std::memcpy(p, &h, 2);
  }
}

// NaN-propagating maximum (an assumption: the AscendC documents do not say what Max returns for
// a NaN operand; NaN-propagating makes a NaN score visible instead of hiding it).
inline float MaxPropagatingNaN(float a, float b) {
  if (std::isnan(a)) return a;
  if (std::isnan(b)) return b;
  return a > b ? a : b;
}

// ---- vector addressing ----------------------------------------------------------------------------
// The lanes of one repeat a mask enables: `continuous` = the first n lanes (clamped to the lanes
// of a repeat, as documented), or a 128-bit map (mask[0] = lanes 0..63).
struct LaneMask {
  uint64_t bits[2] = {0, 0};
  bool Enabled(uint64_t lane) const { return (bits[lane / 64] >> (lane % 64)) & 1; }
  bool Empty() const { return bits[0] == 0 && bits[1] == 0; }
};

inline LaneMask ContinuousMask(uint64_t n, uint64_t lanes) {
  if (n > lanes) n = lanes;
  LaneMask m;
  m.bits[0] = n >= 64 ? ~uint64_t{0} : ((uint64_t{1} << n) - 1);
  m.bits[1] = n <= 64 ? 0 : (n - 64 >= 64 ? ~uint64_t{0} : ((uint64_t{1} << (n - 64)) - 1));
  return m;
}

// The bit-map mask of AscendC: for 32-bit (and wider) types only mask[0] is valid and mask[1]
// must be 0; for 16-bit types both words are lanes.
inline LaneMask BitMask(const char *api, const Site &site, const uint64_t mask[], uint64_t elemBytes) {
  LaneMask m;
  m.bits[0] = mask[0];
  m.bits[1] = mask[1];
  if (elemBytes >= 4 && mask[1] != 0) {
    Fail(api, site, "mask[1] must be 0 for " + Num(elemBytes * 8) + "-bit elements (one repeat has only " +
                        Num(kRepeatBytes / elemBytes) + " lanes)");
  }
  return m;
}

// Byte offset of lane `lane` in repeat `rep` of a strided vector operand (strides in 32-byte blocks).
inline uint64_t LaneOffset(uint64_t rep, uint64_t lane, uint64_t elemBytes, uint64_t blkStride, uint64_t repStride) {
  const uint64_t perBlock = kBlockBytes / elemBytes;
  return (rep * repStride + (lane / perBlock) * blkStride) * kBlockBytes + (lane % perBlock) * elemBytes;
}

// Within one repeat a source must either coincide with the destination lane by lane or not meet it
// at all (AscendC's address-overlap rule; partial overlap gives undefined results on hardware).
inline void CheckRepeatOverlap(const char *api, const Site &site, const uint8_t *dst, const uint8_t *src,
                               const char *srcName, uint64_t repeats, uint64_t dstBlk, uint64_t dstRep,
                               uint64_t srcBlk, uint64_t srcRep) {
  for (uint64_t r = 0; r < repeats; ++r) {
    for (uint64_t b = 0; b < kBlocksPerRepeat; ++b) {
      const uint8_t *s = src + (r * srcRep + b * srcBlk) * kBlockBytes;
      for (uint64_t bd = 0; bd < kBlocksPerRepeat; ++bd) {
        const uint8_t *d = dst + (r * dstRep + bd * dstBlk) * kBlockBytes;
        if (!HostOverlap(s, kBlockBytes, d, kBlockBytes)) continue;
        if (b == bd && s == d) continue;
        Fail(api, site, std::string(srcName) + " overlaps dst partially in repeat " + Num(r) +
                            " (block " + Num(b) + " of " + srcName + " meets block " + Num(bd) +
                            " of dst); operands must coincide exactly or not overlap");
      }
    }
  }
}

// Across repeats, the destination of a repeat must not be a source of a later one (the same
// overlap rule; hardware may read before the earlier write lands). Binary arithmetic documents one
// exception, which the caller passes as `allowed`: dst feeding src1 with a repeat stride of 0.
inline void CheckCrossRepeatOverlap(const char *api, const Site &site, const uint8_t *dst, const uint8_t *src,
                                    const char *srcName, uint64_t repeats, uint64_t dstBlk, uint64_t dstRep,
                                    uint64_t srcBlk, uint64_t srcRep, bool allowed) {
  if (allowed || repeats < 2) return;
  auto span = [](const uint8_t *base, uint64_t r, uint64_t blk, uint64_t rep) {
    const uint8_t *first = base + r * rep * kBlockBytes;
    return std::make_pair(first, first + ((kBlocksPerRepeat - 1) * blk + 1) * kBlockBytes);
  };
  for (uint64_t r = 0; r + 1 < repeats; ++r) {
    const auto d = span(dst, r, dstBlk, dstRep);
    for (uint64_t later = r + 1; later < repeats; ++later) {
      const auto s = span(src, later, srcBlk, srcRep);
      if (!(d.first < s.second && s.first < d.second)) continue;  // bounding ranges apart
      for (uint64_t bd = 0; bd < kBlocksPerRepeat; ++bd) {
        const uint8_t *db = dst + (r * dstRep + bd * dstBlk) * kBlockBytes;
        for (uint64_t bs = 0; bs < kBlocksPerRepeat; ++bs) {
          const uint8_t *sb = src + (later * srcRep + bs * srcBlk) * kBlockBytes;
          if (HostOverlap(db, kBlockBytes, sb, kBlockBytes)) {
            Fail(api, site, "dst of repeat " + Num(r) + " overlaps " + srcName + " of the later repeat " + Num(later) +
                                " (not supported: results undefined)");
          }
        }
      }
    }
  }
}

}  // namespace ops
}  // namespace ascend_model

#endif  // ASCEND_MODEL_OPS_COMMON_H
