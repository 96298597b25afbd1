// The AscendC basic types and tensors of the CPU model, declared as in CANN's public headers
// (asc-devkit include/basic_api/kernel_tensor.h, impl/basic_api/kernel_event.h, the compiler's
// pipe_t / event_t): the same names, parameter types and defaults, and no catch-all templates, so
// an argument list the real headers reject fails to compile here too. The only additions are the
// defaulted `const ascend_model::Site &` last parameters (see model_hooks.h) and the tensors'
// ModelSpan(), which the modelled instructions (ops_*.h) pass to ascend_model::Touch.
#ifndef ASCEND_MODEL_RUNTIME_TYPES_H
#define ASCEND_MODEL_RUNTIME_TYPES_H

// The model's symbols are exported (the library is built with -fvisibility=hidden): a kernel built
// separately (ms_msa.testing.ascend_model.kernel_variant) runs on the machine of the main library.
#pragma GCC visibility push(default)

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "model_hooks.h"

// Kernel-language qualifiers. As in CANN's CPU twin debug ("CPU域孪生调试": the function execution
// space qualifiers, function marks and address space qualifiers are defined empty), everything runs
// on the host: __global__, __aicore__, the kernel types __vector__ / __cube__ / __mix__(cube, vec),
// __gm__ and __ubuf__. The launch's core types come from SetKernelMode (tikicpulib.h).
#define __aicore__
#define __global__
#define __vector__
#define __cube__
#define __mix__(cube, vec)
#define __gm__
#define __ubuf__
#define __inout_pipe__(pipe)
#define GM_ADDR __gm__ uint8_t *

// ---- 16-bit floating types: host types with exact conversions in every rounding mode of Cast ------
namespace ascend_model {

inline uint32_t FloatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}
inline float BitsFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

// The rounding of a conversion, as AscendC's RoundMode names them (CAST_NONE on a lossy
// conversion is CAST_RINT, as the Cast documentation says).
enum class Rounding { kRint, kFloor, kCeil, kRound, kTrunc, kOdd };

// Whether dropping `rest` (of `restBits` bits) from a magnitude whose kept part is `kept` rounds
// the magnitude up, for a value of sign `negative`.
inline bool RoundsUp(uint64_t kept, uint64_t rest, unsigned restBits, bool negative, Rounding r) {
  if (rest == 0) return false;
  const uint64_t halfway = restBits == 0 ? 0 : (uint64_t{1} << (restBits - 1));
  switch (r) {
    case Rounding::kRint: return rest > halfway || (rest == halfway && (kept & 1));
    case Rounding::kRound: return rest >= halfway;
    case Rounding::kTrunc: return false;
    case Rounding::kFloor: return negative;
    case Rounding::kCeil: return !negative;
    case Rounding::kOdd: return (kept & 1) == 0;  // von Neumann: inexact results get an odd last bit
  }
  return false;
}

inline uint16_t FloatToHalfBits(float f, Rounding r) {
  const uint32_t u = FloatBits(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000);
  const bool negative = sign != 0;
  const uint32_t fexp = (u >> 23) & 0xFF;
  const uint32_t fman = u & 0x7FFFFF;
  if (fexp == 0xFF) return fman ? static_cast<uint16_t>(sign | 0x7E00) : static_cast<uint16_t>(sign | 0x7C00);
  if (fexp == 0 && fman == 0) return sign;
  // magnitude = m * 2^(e - 23) with m holding the implicit bit (float subnormals: e = -126).
  const int e = fexp == 0 ? -126 : static_cast<int>(fexp) - 127;
  const uint64_t m = fexp == 0 ? fman : (fman | 0x800000);
  const uint16_t maxFinite = 0x7BFF;
  if (e > 15) {  // beyond the half range before rounding
    const bool toInf = r == Rounding::kRint || r == Rounding::kRound || (r == Rounding::kFloor && negative) ||
                       (r == Rounding::kCeil && !negative);
    return static_cast<uint16_t>(sign | (toInf ? 0x7C00 : maxFinite));
  }
  uint64_t bits;
  uint64_t rest;
  unsigned shift;
  if (e >= -14) {  // a normal half: 10 mantissa bits, 13 dropped
    shift = 13;
    bits = (static_cast<uint64_t>(e + 15) << 10) | ((m >> shift) & 0x3FF);
  } else {  // a subnormal half: units of 2^-24
    shift = static_cast<unsigned>(-1 - e);
    if (shift > 40) shift = 40;
    bits = m >> shift;
  }
  rest = m & ((uint64_t{1} << shift) - 1);
  if (RoundsUp(bits, rest, shift, negative, r)) {
    if (r == Rounding::kOdd) bits |= 1;
    else ++bits;  // carries into the exponent; 0x7BFF + 1 is inf, as rounding up past max is
  }
  if (bits >= 0x7C00 && !(r == Rounding::kRint || r == Rounding::kRound || (r == Rounding::kFloor && negative) ||
                          (r == Rounding::kCeil && !negative))) {
    bits = maxFinite;
  }
  return static_cast<uint16_t>(sign | bits);
}

inline uint16_t FloatToBf16Bits(float f, Rounding r) {
  const uint32_t u = FloatBits(f);
  if ((u & 0x7F800000) == 0x7F800000 && (u & 0x7FFFFF)) return static_cast<uint16_t>((u >> 16) | 0x0040);  // quiet nan
  const bool negative = (u >> 31) != 0;
  const uint32_t mag = u & 0x7FFFFFFF;
  uint32_t kept = mag >> 16;
  const uint32_t rest = mag & 0xFFFF;
  if ((mag & 0x7F800000) != 0x7F800000 && RoundsUp(kept, rest, 16, negative, r)) {
    if (r == Rounding::kOdd) kept |= 1;
    else ++kept;  // 0x7F7F + 1 = inf: correct for the modes that round up in magnitude
  }
  return static_cast<uint16_t>((negative ? 0x8000 : 0) | kept);
}

// The conversions of the built-in types (and of CAST_NONE): round to nearest even.
inline uint16_t FloatToHalfBits(float f) { return FloatToHalfBits(f, Rounding::kRint); }

inline float HalfBitsToFloat(uint16_t h) {
  const uint32_t sign = (static_cast<uint32_t>(h) & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  if (exp == 0x1fu) return BitsFloat(sign | 0x7f800000u | (mant << 13));
  if (exp == 0) {
    const float v = static_cast<float>(mant) * (1.0f / 16777216.0f);  // mant * 2^-24, exact
    return sign ? -v : v;
  }
  return BitsFloat(sign | ((exp + 112u) << 23) | (mant << 13));
}

// bfloat16: the upper half of a float; NaN stays a (quiet) NaN.
inline uint16_t FloatToBf16Bits(float f) { return FloatToBf16Bits(f, Rounding::kRint); }
inline float Bf16BitsToFloat(uint16_t b) { return BitsFloat(static_cast<uint32_t>(b) << 16); }

}  // namespace ascend_model

// The device compiler's built-in `half` and `bfloat16_t` (global names, as in CANN).
struct half {
  uint16_t bits;
  half() = default;
  half(float f) : bits(ascend_model::FloatToHalfBits(f)) {}  // NOLINT: implicit as the built-in type
  operator float() const { return ascend_model::HalfBitsToFloat(bits); }
};
struct bfloat16_t {
  uint16_t bits;
  bfloat16_t() = default;
  bfloat16_t(float f) : bits(ascend_model::FloatToBf16Bits(f)) {}  // NOLINT
  operator float() const { return ascend_model::Bf16BitsToFloat(bits); }
};
static_assert(sizeof(half) == 2 && sizeof(bfloat16_t) == 2, "16-bit types");
static_assert(std::is_trivially_copyable<half>::value && std::is_trivially_copyable<bfloat16_t>::value, "POD");

// ---- compiler built-in enums (global, as the device compiler declares them) --------------------------
typedef enum {
  PIPE_S = 0,
  PIPE_V,
  PIPE_M,
  PIPE_MTE1,
  PIPE_MTE2,
  PIPE_MTE3,
  PIPE_ALL,
  PIPE_MTE4 = 7,
  PIPE_MTE5 = 8,
  PIPE_V2 = 9,
  PIPE_FIX = 10,
} pipe_t;

typedef enum {
  EVENT_ID0 = 0,
  EVENT_ID1,
  EVENT_ID2,
  EVENT_ID3,
  EVENT_ID4,
  EVENT_ID5,
  EVENT_ID6,
  EVENT_ID7,
} event_t;

namespace AscendC {

constexpr int32_t MIX = 0;
constexpr int32_t AIC = 1;
constexpr int32_t AIV = 2;

enum class TPosition : uint8_t {
  GM,
  A1,
  A2,
  B1,
  B2,
  C1,
  C2,
  CO1,
  CO2,
  VECIN,
  VECOUT,
  VECCALC,
  LCM = VECCALC,
  SPM,
  SHM = SPM,
  TSCM,
  C2PIPE2GM,
  C2PIPE2LOCAL,
  MAX,
};
using QuePosition = TPosition;

// Physical memories (impl/utils/common_types.h): LocalMemAllocator<Hardware>.
enum class Hardware : uint8_t { GM, UB, L1, L0A, L0B, L0C, BIAS, FIXBUF, MAX };

enum class HardEvent : uint8_t {
  // src_dst
  MTE2_MTE1,
  MTE1_MTE2,
  MTE1_M,
  M_MTE1,
  MTE2_V,
  V_MTE2,
  MTE3_V,
  V_MTE3,
  M_V,
  V_M,
  V_V,
  MTE3_MTE1,
  MTE1_MTE3,
  MTE1_V,
  MTE2_M,
  M_MTE2,
  V_MTE1,
  M_FIX,
  FIX_M,
  MTE3_MTE2,
  MTE2_MTE3,
  S_V,
  V_S,
  S_MTE2,
  MTE2_S,
  S_MTE3,
  MTE3_S,
  MTE2_FIX,
  FIX_MTE2,
  FIX_S,
  M_S,
  FIX_MTE3,
  MTE1_FIX,
  FIX_MTE1,
  FIX_FIX,
  MAX,
};

using TEventID = int8_t;

template <typename T, typename U>
struct IsSameType {
  static constexpr bool value = false;
};
template <typename T>
struct IsSameType<T, T> {
  static constexpr bool value = true;
};

}  // namespace AscendC

// ---- what the tensors need from the runtime (runtime.cc) ---------------------------------------------
namespace ascend_model {

// One buffer of a TPipe (InitBuffer) in a core's local memory.
struct LocalBuffer {
  Space space;
  AscendC::TPosition position;
  uint8_t *host;       // first byte
  uint32_t bytes;      // length (rounded up to 32 bytes)
  uint32_t address;    // byte offset inside the core's memory of that space
  int thread;          // the core thread that owns it
  Site initSite;       // where InitBuffer was called
  const char *name;    // for messages: "keyL1_" read from the InitBuffer line, else "L1 buffer at <site>"
};

// A global-memory allocation made by the driver (an input, the output, the workspace).
struct GmAllocation {
  uint8_t *host;
  uint64_t bytes;
  const char *name;  // "GM:query", "GM:workspace", ...
};

// The allocation `p` points into (nullptr if none, e.g. an absent optional input).
const GmAllocation *FindGm(const void *p);

// Static Tensor programming (runtime.cc): the buffer [addr, addr + bytes) of the calling core's
// memory that TPosition `pos` maps to, for LocalTensor(pos, addr, tileSize) and LocalMemAllocator.
const LocalBuffer *StaticBuffer(AscendC::TPosition pos, uint64_t addr, uint64_t bytes, const Site &site);

}  // namespace ascend_model

namespace AscendC {

// A signed 4-bit integer (A2/A3: Mmad int4b_t x int4b_t -> int32_t, LoadData). Tensors of it hold two
// elements per byte, element 2i in the low nibble of byte i and 2i + 1 in the high nibble (CANN's
// kernel_tensor_impl.h GetValue: `byte >> (4 * (offset % 2))`; the documents show the packing only in a
// figure, int4b_example.png); offsets and sizes count elements, an odd offset stops the run.
struct int4b_t {
  uint8_t storage = 0;
  int4b_t() = default;
  int4b_t(int32_t value) : storage(static_cast<uint8_t>(value) & 0xF) {}
  int4b_t(uint32_t value) : storage(static_cast<uint8_t>(value) & 0xF) {}
  operator int32_t() const { return (storage & 0x8) != 0 ? static_cast<int32_t>(storage) - 16 : storage; }
};

}  // namespace AscendC

namespace ascend_model {
template <typename T>
constexpr bool IsInt4() { return std::is_same<T, AscendC::int4b_t>::value; }
// Bytes of `elements` elements of T; elements in `bytes` bytes of T.
template <typename T>
constexpr uint64_t BytesOf(uint64_t elements) { return IsInt4<T>() ? (elements + 1) / 2 : elements * sizeof(T); }
template <typename T>
constexpr uint64_t ElemsIn(uint64_t bytes) { return IsInt4<T>() ? bytes * 2 : bytes / sizeof(T); }
// The byte offset of element `offset`; an odd int4b_t offset (half a byte) stops the run.
template <typename T>
inline uint64_t OffsetBytes(uint64_t offset, const char *api) {
  if (IsInt4<T>() && offset % 2 != 0) {
    Fail(api, Site(), "an odd int4b_t offset (" + std::to_string(offset) + ") starts inside a byte");
  }
  return BytesOf<T>(offset);
}
}  // namespace ascend_model

namespace AscendC {

template <typename T>
class LocalTensor {
 public:
  using PrimType = T;
  __aicore__ inline LocalTensor() {}
  // Static Tensor programming ("LocalTensor构造函数"): tileSize elements at byte address `addr` of
  // the memory `pos` maps to; addr 32-byte aligned, addr + tileSize * sizeof(T) within the memory.
  __aicore__ inline LocalTensor(TPosition pos, uint32_t addr, uint32_t tileSize,
                                const ascend_model::Site &site = ascend_model::Site())
      : buffer_(ascend_model::StaticBuffer(pos, addr, ascend_model::BytesOf<T>(tileSize), site)),
        size_(tileSize) {}

  // Scalar access, executed by the S pipe.
  __aicore__ inline __inout_pipe__(S) T GetValue(const uint32_t index,
                                                 const ascend_model::Site &site = ascend_model::Site()) const {
    if (ascend_model::IsInt4<T>()) ascend_model::Fail("LocalTensor::GetValue", site, "int4b_t elements: not modelled");
    T v;
    std::memcpy(&v, ascend_model::Touch(ModelSpan(), static_cast<uint64_t>(index) * sizeof(T), sizeof(T),
                                        ascend_model::Pipe::kS, ascend_model::Access::kRead,
                                        "LocalTensor::GetValue", site),
                sizeof(T));
    return v;
  }
  template <typename S>
  __aicore__ inline __inout_pipe__(S) void SetValue(const uint32_t index, const S value,
                                                    const ascend_model::Site &site = ascend_model::Site()) const {
    if (ascend_model::IsInt4<T>()) ascend_model::Fail("LocalTensor::SetValue", site, "int4b_t elements: not modelled");
    const T v = static_cast<T>(value);
    std::memcpy(ascend_model::Touch(ModelSpan(), static_cast<uint64_t>(index) * sizeof(T), sizeof(T),
                                    ascend_model::Pipe::kS, ascend_model::Access::kWrite, "LocalTensor::SetValue",
                                    site),
                &v, sizeof(T));
  }
  // A tensor starting `offset` elements further into the same buffer.
  __aicore__ inline LocalTensor operator[](const uint32_t offset) const {
    LocalTensor t = *this;
    t.offsetBytes_ = offsetBytes_ + ascend_model::OffsetBytes<T>(offset, "LocalTensor::operator[]");
    t.size_ = offset < size_ ? size_ - offset : 0;
    return t;
  }
  template <typename U>
  __aicore__ inline LocalTensor<U> ReinterpretCast() const {
    LocalTensor<U> t;
    t.buffer_ = buffer_;
    t.offsetBytes_ = offsetBytes_;
    t.size_ = static_cast<uint32_t>(ascend_model::ElemsIn<U>(ascend_model::BytesOf<T>(size_)));
    return t;
  }
  // CANN's CPU debug returns the tensor's host pointer (数据结构/LocalTensor/GetPhyAddr.md: T* on the CPU, the
  // physical address on the NPU). Accesses through it bypass the model, neither bounds- nor race-checked; a
  // kernel that only passes the value on (an address list) is unaffected.
  __aicore__ inline T *GetPhyAddr() const { return reinterpret_cast<T *>(ModelSpan().host); }
  __aicore__ inline T *GetPhyAddr(const uint32_t offset) const { return GetPhyAddr() + offset; }
  __aicore__ inline uint32_t GetSize() const { return size_; }
  __aicore__ inline void SetSize(const uint32_t size) { size_ = size; }
  __aicore__ inline int32_t GetPosition() const {
    return buffer_ == nullptr ? static_cast<int32_t>(TPosition::MAX) : static_cast<int32_t>(buffer_->position);
  }

  // Model only: the bytes from this tensor's first element to the end of its buffer.
  ascend_model::Span ModelSpan() const {
    if (buffer_ == nullptr) return ascend_model::Span{ascend_model::Space::kUB, nullptr, 0, 0, "an unallocated LocalTensor"};
    const uint64_t rest = offsetBytes_ < buffer_->bytes ? buffer_->bytes - offsetBytes_ : 0;
    return ascend_model::Span{buffer_->space, buffer_->host + offsetBytes_, rest, buffer_->address + offsetBytes_,
                              buffer_->name};
  }
  // Model only (runtime): a tensor over a whole buffer.
  static LocalTensor ModelMake(const ascend_model::LocalBuffer *buffer, uint32_t elements) {
    LocalTensor t;
    t.buffer_ = buffer;
    t.offsetBytes_ = 0;
    t.size_ = elements;
    return t;
  }
  const ascend_model::LocalBuffer *ModelBuffer() const { return buffer_; }
  uint64_t ModelOffsetBytes() const { return offsetBytes_; }

 private:
  template <typename U>
  friend class LocalTensor;
  const ascend_model::LocalBuffer *buffer_ = nullptr;
  uint64_t offsetBytes_ = 0;
  uint32_t size_ = 0;  // elements from here to the end of the tensor
};

// The L2 Cache modes of GlobalTensor::SetL2CacheHint (数据结构/GlobalTensor/SetL2CacheHint.md; the enumerators
// of CANN's impl/basic_api/utils/kernel_utils_macros.h). On Atlas A2/A3 NORMAL (the default) and DISABLE are
// valid; PERSISTENT is documented as not supported yet (planned for Ascend 950), LAST is not documented.
enum class CacheMode { CACHE_MODE_DISABLE = 0, CACHE_MODE_NORMAL = 1, CACHE_MODE_LAST = 2, CACHE_MODE_PERSISTENT = 4 };
// SetL2CacheHint's template parameter, reserved by the document ("预留参数").
enum class CacheRwMode { READ = 1, WRITE = 2, RW = 3 };

template <typename T>
class GlobalTensor {
 public:
  using PrimType = T;
  __aicore__ inline GlobalTensor() {}

  __aicore__ inline void SetGlobalBuffer(__gm__ T *buffer, uint64_t bufferSize,
                                         const ascend_model::Site &site = ascend_model::Site()) {
    (void)site;
    Bind(buffer, bufferSize, true);
  }
  __aicore__ inline void SetGlobalBuffer(__gm__ T *buffer, const ascend_model::Site &site = ascend_model::Site()) {
    (void)site;
    Bind(buffer, 0, false);
  }
  __aicore__ inline const __gm__ T *GetPhyAddr() const { return base_; }
  __aicore__ inline __gm__ T *GetPhyAddr(const uint64_t offset) const { return base_ + offset; }

  // Scalar access, executed by the S pipe.
  __aicore__ inline __inout_pipe__(S) T GetValue(const uint64_t offset,
                                                 const ascend_model::Site &site = ascend_model::Site()) const {
    T v;
    std::memcpy(&v, ascend_model::Touch(ModelSpan(), offset * sizeof(T), sizeof(T), ascend_model::Pipe::kS,
                                        ascend_model::Access::kRead, "GlobalTensor::GetValue", site),
                sizeof(T));
    return v;
  }
  __aicore__ inline void SetValue(const uint64_t offset, T value,
                                  const ascend_model::Site &site = ascend_model::Site()) {
    std::memcpy(ascend_model::Touch(ModelSpan(), offset * sizeof(T), sizeof(T), ascend_model::Pipe::kS,
                                    ascend_model::Access::kWrite, "GlobalTensor::SetValue", site),
                &value, sizeof(T));
  }
  __aicore__ inline uint64_t GetSize() const { return bufferSize_; }
  // Whether the tensor's accesses go through the L2 Cache. The document gives the choice only a performance
  // effect (a tensor read once need not be cached), so the model records the mode and the data are unchanged;
  // PERSISTENT ("暂不支持", planned for Ascend 950) and the undocumented LAST stop the run.
  template <CacheRwMode rwMode = CacheRwMode::RW>
  __aicore__ inline void SetL2CacheHint(CacheMode mode, const ascend_model::Site &site = ascend_model::Site()) {
    if (mode != CacheMode::CACHE_MODE_NORMAL && mode != CacheMode::CACHE_MODE_DISABLE) {
      ascend_model::Fail("GlobalTensor::SetL2CacheHint", site,
                         mode == CacheMode::CACHE_MODE_PERSISTENT
                             ? "CACHE_MODE_PERSISTENT is not supported on Atlas A2/A3 (the document: still in "
                               "development, planned for Ascend 950PR/950DT)"
                             : "the mode is not one the document gives (CACHE_MODE_DISABLE, CACHE_MODE_NORMAL)");
    }
    cacheMode_ = mode;
  }
  CacheMode ModelCacheMode() const { return cacheMode_; }  // model only: the recorded hint
  __aicore__ inline GlobalTensor operator[](const uint64_t offset) const {
    GlobalTensor t = *this;
    t.base_ = ascend_model::IsInt4<T>()
                  ? reinterpret_cast<T *>(reinterpret_cast<uint8_t *>(base_) +
                                          ascend_model::OffsetBytes<T>(offset, "GlobalTensor::operator[]"))
                  : base_ + offset;
    t.bufferSize_ = offset < bufferSize_ ? bufferSize_ - offset : 0;
    return t;
  }

  // Model only: from this tensor's first element to the end of its allocation (or of the size given
  // to SetGlobalBuffer, whichever is first). An address outside every allocation gives 0 bytes, so
  // any access to it stops the run.
  ascend_model::Span ModelSpan() const {
    const ascend_model::GmAllocation *a = ascend_model::FindGm(base_);
    const uint8_t *p = reinterpret_cast<const uint8_t *>(base_);
    if (a == nullptr || alloc_ == nullptr || a != alloc_) {
      return ascend_model::Span{ascend_model::Space::kGM, const_cast<uint8_t *>(p), 0, 0,
                                alloc_ != nullptr ? alloc_->name : "GM outside every allocation"};
    }
    uint64_t rest = static_cast<uint64_t>(a->host + a->bytes - p);
    if (sized_ && ascend_model::BytesOf<T>(bufferSize_) < rest) rest = ascend_model::BytesOf<T>(bufferSize_);
    return ascend_model::Span{ascend_model::Space::kGM, const_cast<uint8_t *>(p), rest,
                              static_cast<uint64_t>(p - a->host), a->name};
  }

 private:
  void Bind(T *buffer, uint64_t elements, bool sized) {
    base_ = buffer;
    alloc_ = ascend_model::FindGm(buffer);
    sized_ = sized;
    bufferSize_ = sized ? elements : (alloc_ != nullptr ? ascend_model::ElemsIn<T>(alloc_->host + alloc_->bytes - reinterpret_cast<uint8_t *>(buffer)) : 0);
  }
  T *base_ = nullptr;
  const ascend_model::GmAllocation *alloc_ = nullptr;  // where SetGlobalBuffer pointed
  uint64_t bufferSize_ = 0;  // elements
  bool sized_ = false;
  CacheMode cacheMode_ = CacheMode::CACHE_MODE_NORMAL;
};

}  // namespace AscendC

#pragma GCC visibility pop

#endif  // ASCEND_MODEL_RUNTIME_TYPES_H
