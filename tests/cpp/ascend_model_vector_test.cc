// Runs the modelled AscendC vector instructions (ascendc/cpu_model/ops_vector*.h) on random data in each of
// their forms and dumps every operand before and after, one JSON object a line, for
// tests/test_ascend_model_vector.py to compare with numpy implementations of the documented semantics.
// Nothing is checked here but that the run does not stop where it must not; cases that must stop the run
// are recorded with the model's message. The seam (Touch / Fail / counters) is a small fake: Touch checks
// bounds and records the access, Fail throws.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime_types.h"
#include "ops_vector.h"

using namespace AscendC;
using ascend_model::Space;

namespace ascend_model {
struct Failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};
uint64_t g_touched = 0;
uint8_t *Touch(const Span &span, uint64_t offset, uint64_t bytes, Pipe pipe, Access, const char *api, const Site &) {
  if (span.host == nullptr || offset + bytes > span.bytes) {
    throw Failure(std::string(api) + ": bytes [" + std::to_string(offset) + ", " + std::to_string(offset + bytes) +
                  ") outside '" + span.buffer + "'");
  }
  if (pipe != Pipe::kV) throw Failure(std::string(api) + ": not on pipe V");
  g_touched += bytes;
  return span.host + offset;
}
[[noreturn]] void Fail(const char *api, const Site &, const std::string &message) {
  throw Failure(std::string(api) + ": " + message);
}
void CountCubeFractalMacs(uint64_t) {}
void CountVectorRepeats(uint64_t, const std::string &) {}
const GmAllocation *FindGm(const void *) { return nullptr; }
}  // namespace ascend_model

// ---- buffers -------------------------------------------------------------------------------------------
struct Storage {
  ascend_model::LocalBuffer buffer;
  std::vector<uint8_t> bytes;
};
static std::deque<std::unique_ptr<Storage>> g_storage;
static const uint32_t kBuf = 8192;

template <typename T>
static LocalTensor<T> Buf(const char *name, uint32_t bytes = kBuf) {
  auto s = std::make_unique<Storage>();
  s->bytes.assign(bytes, 0xAB);
  s->buffer = ascend_model::LocalBuffer{Space::kUB, TPosition::VECCALC, s->bytes.data(), bytes, 0, 0,
                                        ascend_model::Site(), name};
  LocalTensor<T> t = LocalTensor<T>::ModelMake(&s->buffer, bytes / sizeof(T));
  g_storage.push_back(std::move(s));
  return t;
}
template <typename T>
static uint8_t *HostOf(const LocalTensor<T> &t) {
  return t.ModelSpan().host;
}

static std::mt19937_64 g_rng(20240534);

// Random elements: floats in [-lo, hi] with some specials, integers over their whole range.
template <typename T>
static void Fill(const LocalTensor<T> &t, double lo, double hi, bool specials, uint32_t bytes = kBuf) {
  uint8_t *p = HostOf(t);
  std::uniform_real_distribution<double> u(lo, hi);
  std::uniform_int_distribution<int> pick(0, 39);
  for (uint32_t i = 0; i < bytes / sizeof(T); ++i) {
    if constexpr (std::is_same<T, float>::value || std::is_same<T, half>::value || std::is_same<T, bfloat16_t>::value) {
      double v = u(g_rng);
      if (specials) {
        switch (pick(g_rng)) {
          case 0: v = NAN; break;
          case 1: v = INFINITY; break;
          case 2: v = -INFINITY; break;
          case 3: v = 0.0; break;
          case 4: v = -0.0; break;
          default: break;
        }
      }
      const T x = T(static_cast<float>(v));
      std::memcpy(p + i * sizeof(T), &x, sizeof(T));
    } else {
      const uint64_t r = g_rng();
      std::memcpy(p + i * sizeof(T), &r, sizeof(T));
    }
  }
}

// ---- the dump ----------------------------------------------------------------------------------------
static std::string Hex(const uint8_t *p, size_t n) {
  static const char *d = "0123456789abcdef";
  std::string s(2 * n, '0');
  for (size_t i = 0; i < n; ++i) {
    s[2 * i] = d[p[i] >> 4];
    s[2 * i + 1] = d[p[i] & 15];
  }
  return s;
}
struct Arr {
  const char *name;
  const uint8_t *host;
  size_t bytes;
};
static std::vector<uint8_t> Snap(const uint8_t *p, size_t n = kBuf) { return std::vector<uint8_t>(p, p + n); }

// Runs `body` and writes one line: {"case", params..., "arrays": {...}} or {"case", "error": message}.
static void Case(const std::string &name, const std::string &params, const std::function<std::vector<Arr>()> &body) {
  std::string line = "{\"case\": \"" + name + "\"" + (params.empty() ? "" : ", " + params);
  try {
    const std::vector<Arr> arrays = body();
    line += ", \"arrays\": {";
    for (size_t i = 0; i < arrays.size(); ++i) {
      line += std::string(i ? ", " : "") + "\"" + arrays[i].name + "\": \"" + Hex(arrays[i].host, arrays[i].bytes) + "\"";
    }
    line += "}";
  } catch (const ascend_model::Failure &e) {
    std::string m;
    for (const char c : std::string(e.what())) {
      if (c == '"' || c == '\\') m += '\\';
      m += c;
    }
    line += ", \"error\": \"" + m + "\"";
  }
  std::printf("%s}\n", line.c_str());
}

static std::string Q(const char *k, const std::string &v) { return std::string("\"") + k + "\": \"" + v + "\""; }
static std::string N(const char *k, uint64_t v) { return std::string("\"") + k + "\": " + std::to_string(v); }
static std::string S(const char *k, const std::string &json) { return std::string("\"") + k + "\": " + json; }
static std::string L(std::initializer_list<uint64_t> v) {
  std::string s = "[";
  bool first = true;
  for (uint64_t x : v) {
    s += (first ? "" : ", ") + std::to_string(x);
    first = false;
  }
  return s + "]";
}
static std::string Join(std::initializer_list<std::string> parts) {
  std::string s;
  for (const auto &p : parts) {
    if (!p.empty()) s += (s.empty() ? "" : ", ") + p;
  }
  return s;
}

template <typename T>
static const char *Dt() {
  if (std::is_same<T, float>::value) return "float32";
  if (std::is_same<T, half>::value) return "float16";
  if (std::is_same<T, bfloat16_t>::value) return "bfloat16";
  if (std::is_same<T, int8_t>::value) return "int8";
  if (std::is_same<T, uint8_t>::value) return "uint8";
  if (std::is_same<T, int16_t>::value) return "int16";
  if (std::is_same<T, uint16_t>::value) return "uint16";
  if (std::is_same<T, int32_t>::value) return "int32";
  if (std::is_same<T, uint32_t>::value) return "uint32";
  if (std::is_same<T, int64_t>::value) return "int64";
  return "?";
}

// The value ranges each API's random inputs come from.
struct Range {
  double lo, hi;
  bool specials;
};

// ---- binary ------------------------------------------------------------------------------------------
#define BINARY_FORMS(NAME)                                                                                          \
  template <typename T>                                                                                             \
  static void Binary_##NAME(Range rg) {                                                                             \
    const uint64_t lanes = 256 / sizeof(T);                                                                         \
    const std::string base = Join({Q("api", #NAME), Q("dtype", Dt<T>())});                                          \
    auto run = [&](const std::string &form, const std::string &params, auto call) {                                 \
      Case(std::string(#NAME) + "/" + Dt<T>() + "/" + form, base + ", " + Q("form", form) + ", " + params, [&] {   \
        auto a = Buf<T>("src0"), b = Buf<T>("src1"), d = Buf<T>("dst");                                             \
        Fill(a, rg.lo, rg.hi, rg.specials);                                                                         \
        Fill(b, rg.lo, rg.hi, rg.specials);                                                                         \
        call(d, a, b);                                                                                              \
        return std::vector<Arr>{{"src0", HostOf(a), kBuf}, {"src1", HostOf(b), kBuf}, {"dst", HostOf(d), kBuf}};    \
      });                                                                                                           \
    };                                                                                                              \
    const int32_t n = static_cast<int32_t>(2 * lanes + 37);                                                         \
    run("count", N("count", n), [&](auto d, auto a, auto b) { NAME(d, a, b, n); });                                \
    run("cont", Join({N("mask", lanes - 5), N("repeat", 3), S("blk", L({2, 1, 2})), S("rep", L({20, 8, 17}))}),     \
        [&](auto d, auto a, auto b) { NAME(d, a, b, lanes - 5, 3, BinaryRepeatParams(2, 1, 2, 20, 8, 17)); });     \
    uint64_t m[2] = {0x9C3F00FF1234ABCDull, sizeof(T) == 2 ? 0xF0F0000FFFF00001ull : 0};                           \
    run("bits", Join({S("bits", L({m[0], m[1]})), N("repeat", 2), S("blk", L({1, 3, 1})), S("rep", L({9, 24, 0}))}), \
        [&](auto d, auto a, auto b) { NAME(d, a, b, m, 2, BinaryRepeatParams(1, 3, 1, 9, 24, 0)); });              \
    run("rep0", Join({N("mask", lanes), N("repeat", 0), S("blk", L({1, 1, 1})), S("rep", L({8, 8, 8}))}),           \
        [&](auto d, auto a, auto b) { NAME(d, a, b, lanes, 0, BinaryRepeatParams()); });                           \
  }
BINARY_FORMS(Add)
BINARY_FORMS(Sub)
BINARY_FORMS(Mul)
BINARY_FORMS(Div)
BINARY_FORMS(Max)
BINARY_FORMS(Min)
BINARY_FORMS(And)
BINARY_FORMS(Or)

// ---- vector-scalar -------------------------------------------------------------------------------------
#define SCALAR_FORMS(NAME)                                                                                          \
  template <typename T>                                                                                             \
  static void Scalar_##NAME(Range rg, T scalar) {                                                                   \
    const uint64_t lanes = 256 / sizeof(T);                                                                         \
    uint8_t sb[sizeof(T)];                                                                                          \
    std::memcpy(sb, &scalar, sizeof(T));                                                                            \
    const std::string base = Join({Q("api", #NAME), Q("dtype", Dt<T>()), Q("scalar", Hex(sb, sizeof(T)))});        \
    auto run = [&](const std::string &form, const std::string &params, auto call) {                                 \
      Case(std::string(#NAME) + "/" + Dt<T>() + "/" + form, base + ", " + Q("form", form) + ", " + params, [&] {   \
        auto a = Buf<T>("src"), d = Buf<T>("dst");                                                                  \
        Fill(a, rg.lo, rg.hi, rg.specials);                                                                         \
        call(d, a);                                                                                                 \
        return std::vector<Arr>{{"src0", HostOf(a), kBuf}, {"dst", HostOf(d), kBuf}};                               \
      });                                                                                                           \
    };                                                                                                              \
    const int32_t n = static_cast<int32_t>(lanes + 11);                                                             \
    run("count", N("count", n), [&](auto d, auto a) { NAME(d, a, scalar, n); });                                   \
    run("cont", Join({N("mask", lanes / 2 + 3), N("repeat", 3), S("blk", L({1, 2})), S("rep", L({8, 18}))}),        \
        [&](auto d, auto a) { NAME(d, a, scalar, lanes / 2 + 3, 3, UnaryRepeatParams(1, 2, 8, 18)); });            \
    uint64_t m[2] = {0xFFFF0000F0F0F0F1ull, sizeof(T) == 2 ? 0x8000000000000001ull : 0};                           \
    run("bits", Join({S("bits", L({m[0], m[1]})), N("repeat", 2), S("blk", L({2, 1})), S("rep", L({16, 0}))}),      \
        [&](auto d, auto a) { NAME(d, a, scalar, m, 2, UnaryRepeatParams(2, 1, 16, 0)); });                        \
  }
SCALAR_FORMS(Adds)
SCALAR_FORMS(Muls)
SCALAR_FORMS(Maxs)
SCALAR_FORMS(Mins)
SCALAR_FORMS(LeakyRelu)

// ---- unary -------------------------------------------------------------------------------------------------
#define UNARY_FORMS(NAME)                                                                                           \
  template <typename T>                                                                                             \
  static void Unary_##NAME(Range rg) {                                                                              \
    const uint64_t lanes = 256 / sizeof(T);                                                                         \
    const std::string base = Join({Q("api", #NAME), Q("dtype", Dt<T>())});                                          \
    auto run = [&](const std::string &form, const std::string &params, auto call) {                                 \
      Case(std::string(#NAME) + "/" + Dt<T>() + "/" + form, base + ", " + Q("form", form) + ", " + params, [&] {   \
        auto a = Buf<T>("src"), d = Buf<T>("dst");                                                                  \
        Fill(a, rg.lo, rg.hi, rg.specials);                                                                         \
        call(d, a);                                                                                                 \
        return std::vector<Arr>{{"src0", HostOf(a), kBuf}, {"dst", HostOf(d), kBuf}};                               \
      });                                                                                                           \
    };                                                                                                              \
    const int32_t n = static_cast<int32_t>(3 * lanes - 1);                                                          \
    run("count", N("count", n), [&](auto d, auto a) { NAME(d, a, n); });                                           \
    run("cont", Join({N("mask", lanes), N("repeat", 2), S("blk", L({1, 1})), S("rep", L({8, 8}))}),                 \
        [&](auto d, auto a) { NAME(d, a, lanes, 2, UnaryRepeatParams()); });                                       \
    uint64_t m[2] = {0x0123456789ABCDEFull, sizeof(T) == 2 ? 0xFEDCBA9876543210ull : 0};                           \
    run("bits", Join({S("bits", L({m[0], m[1]})), N("repeat", 3), S("blk", L({3, 1})), S("rep", L({25, 10}))}),     \
        [&](auto d, auto a) { NAME(d, a, m, 3, UnaryRepeatParams(3, 1, 25, 10)); });                               \
  }
UNARY_FORMS(Abs)
UNARY_FORMS(Exp)
UNARY_FORMS(Ln)
UNARY_FORMS(Relu)

// ---- Duplicate -------------------------------------------------------------------------------------------
template <typename T>
static void DuplicateForms() {
  const uint64_t lanes = 256 / sizeof(T);
  T scalar;
  const uint64_t r = g_rng();
  std::memcpy(&scalar, &r, sizeof(T));
  uint8_t sb[sizeof(T)];
  std::memcpy(sb, &scalar, sizeof(T));
  const std::string base = Join({Q("api", "Duplicate"), Q("dtype", Dt<T>()), Q("scalar", Hex(sb, sizeof(T)))});
  auto run = [&](const std::string &form, const std::string &params, auto call) {
    Case(std::string("Duplicate/") + Dt<T>() + "/" + form, base + ", " + Q("form", form) + ", " + params, [&] {
      auto d = Buf<T>("dst");
      call(d);
      return std::vector<Arr>{{"dst", HostOf(d), kBuf}};
    });
  };
  const int32_t n = static_cast<int32_t>(lanes + 3);
  run("count", N("count", n), [&](auto d) { Duplicate(d, scalar, n); });
  run("cont", Join({N("mask", 7), N("repeat", 4), S("blk", L({2})), S("rep", L({17}))}),
      [&](auto d) { Duplicate(d, scalar, static_cast<uint64_t>(7), 4, 2, 17); });
  uint64_t m[2] = {0x00000000FFFF0001ull, sizeof(T) == 2 ? 0x1ull : 0};
  run("bits", Join({S("bits", L({m[0], m[1]})), N("repeat", 2), S("blk", L({1})), S("rep", L({8}))}),
      [&](auto d) { Duplicate(d, scalar, m, 2, 1, 8); });
}

// ---- the mask register: SetVectorMask / ResetMask / SetMaskCount / SetMaskNorm, isSetMask = false ------
static void MaskRegisterCases() {
  const half one(1.0f);
  auto adds = [&](const char *name, const std::string &params, const std::function<void(LocalTensor<half>, LocalTensor<half>)> &f) {
    Case(name, Join({Q("api", "Adds"), Q("dtype", "float16"), Q("scalar", "003c"), params}), [&] {
      auto a = Buf<half>("src"), d = Buf<half>("dst");
      Fill(a, -4, 4, false);
      f(d, a);
      return std::vector<Arr>{{"src0", HostOf(a), kBuf}, {"dst", HostOf(d), kBuf}};
    });
  };
  // 掩码.md, 接口外设置Mask / Counter模式: 130 elements, repeatTime ignored, strides apply.
  adds("mask/counter-register", Join({Q("form", "counter"), N("count", 130), S("blk", L({2, 2})), S("rep", L({16, 16}))}),
       [&](LocalTensor<half> d, LocalTensor<half> a) {
         SetMaskCount();
         SetVectorMask<half, MaskMode::COUNTER>(130);
         Adds<half, false>(d, a, one, MASK_PLACEHOLDER, 1, UnaryRepeatParams(2, 2, 16, 16));
         SetMaskNorm();
         ResetMask();
       });
  // 接口内设置Mask / Counter模式 / 高维切分: mask[0] is the element count.
  adds("mask/counter-inline", Join({Q("form", "counter"), N("count", 130), S("blk", L({2, 2})), S("rep", L({16, 16}))}),
       [&](LocalTensor<half> d, LocalTensor<half> a) {
         uint64_t m[2] = {130, 0};
         SetMaskCount();
         Adds<half, true>(d, a, one, m, 1, UnaryRepeatParams(2, 2, 16, 16));
         SetMaskNorm();
       });
  // 接口外设置Mask / Counter模式 / 前n个数据计算: the count argument is ignored.
  adds("mask/counter-count-form", Join({Q("form", "count"), N("count", 128)}),
       [&](LocalTensor<half> d, LocalTensor<half> a) {
         SetMaskCount();
         SetVectorMask<half, MaskMode::COUNTER>(128);
         Adds<half, false>(d, a, one, 1);
         SetMaskNorm();
         ResetMask();
       });
  // Normal mode, bit mask in the register, used by two repeats.
  adds("mask/normal-register-bits",
       Join({Q("form", "bits"), S("bits", L({0x69A569A569A569A5ull, 0x69A569A569A569A5ull})), N("repeat", 2),
             S("blk", L({1, 1})), S("rep", L({8, 8}))}),
       [&](LocalTensor<half> d, LocalTensor<half> a) {
         SetMaskNorm();
         SetVectorMask<half, MaskMode::NORMAL>(0x69A569A569A569A5ull, 0x69A569A569A569A5ull);
         Adds<half, false>(d, a, one, MASK_PLACEHOLDER, 2, UnaryRepeatParams());
         ResetMask();
       });
  // Normal mode, continuous mask in the register.
  adds("mask/normal-register-len",
       Join({Q("form", "cont"), N("mask", 100), N("repeat", 2), S("blk", L({1, 1})), S("rep", L({8, 8}))}),
       [&](LocalTensor<half> d, LocalTensor<half> a) {
         SetVectorMask<half>(100);
         uint64_t placeholder[2] = {0, 0};
         Adds<half, false>(d, a, one, placeholder, 2, UnaryRepeatParams());
         ResetMask();
       });
  // After ResetMask: all lanes.
  adds("mask/reset", Join({Q("form", "cont"), N("mask", 128), N("repeat", 1), S("blk", L({1, 1})), S("rep", L({8, 8}))}),
       [&](LocalTensor<half> d, LocalTensor<half> a) {
         SetVectorMask<half>(3);
         ResetMask();
         Adds<half, false>(d, a, one, MASK_PLACEHOLDER, 1, UnaryRepeatParams());
       });
  // Errors.
  adds("error/mask-not-set", "", [&](LocalTensor<half> d, LocalTensor<half> a) {
    Adds(d, a, one, 64);  // an API with isSetMask = true overwrites the register
    Adds<half, false>(d, a, one, MASK_PLACEHOLDER, 1, UnaryRepeatParams());
  });
  adds("error/mode-mismatch", "", [&](LocalTensor<half> d, LocalTensor<half> a) {
    SetMaskCount();
    SetVectorMask<half, MaskMode::NORMAL>(64);
    try {
      Adds<half, false>(d, a, one, MASK_PLACEHOLDER, 1, UnaryRepeatParams());
    } catch (...) {
      SetMaskNorm();
      throw;
    }
  });
  adds("error/count-form-normal-mode", "", [&](LocalTensor<half> d, LocalTensor<half> a) {
    SetVectorMask<half>(64);
    Adds<half, false>(d, a, one, 1);
  });
  Case("error/setvectormask-float-high", "", [&] {
    SetVectorMask<float>(1, 0);
    return std::vector<Arr>{};
  });
  Case("error/setvectormask-len-range", "", [&] {
    SetVectorMask<float>(65);
    return std::vector<Arr>{};
  });
  ResetMask();
  SetMaskNorm();
}

// ---- Cast --------------------------------------------------------------------------------------------------
static const char *ModeName(RoundMode m) {
  switch (m) {
    case RoundMode::CAST_NONE: return "none";
    case RoundMode::CAST_RINT: return "rint";
    case RoundMode::CAST_FLOOR: return "floor";
    case RoundMode::CAST_CEIL: return "ceil";
    case RoundMode::CAST_ROUND: return "round";
    case RoundMode::CAST_TRUNC: return "trunc";
    case RoundMode::CAST_ODD: return "odd";
    default: return "?";
  }
}
static const RoundMode kAllModes[] = {RoundMode::CAST_NONE,  RoundMode::CAST_RINT,  RoundMode::CAST_FLOOR,
                                      RoundMode::CAST_CEIL,  RoundMode::CAST_ROUND, RoundMode::CAST_TRUNC,
                                      RoundMode::CAST_ODD};

// Inputs that probe the rounding: random values in [lo, hi], halves (ties), and for float sources values
// with random low bits; plus a few specials where the source is floating.
template <typename U>
static void CastInputs(const LocalTensor<U> &s, double lo, double hi, bool nonNegative) {
  Fill(s, lo, hi, false);
  uint8_t *p = HostOf(s);
  const size_t n = kBuf / sizeof(U);
  std::uniform_real_distribution<double> u(lo, hi);
  for (size_t i = 0; i < n; ++i) {
    if constexpr (std::is_same<U, float>::value) {
      float v;
      std::memcpy(&v, p + 4 * i, 4);
      if (i % 4 == 1) v = std::floor(v) + 0.5f;  // a tie for the integer conversions
      if (i % 4 == 2) {  // random low bits (ties and near-ties for float -> half / bfloat16)
        uint32_t b;
        std::memcpy(&b, &v, 4);
        b = (b & 0xFFFF0000u) | ((i & 8) ? 0x8000u : static_cast<uint32_t>(g_rng() & 0xFFFF));
        std::memcpy(&v, &b, 4);
      }
      if (i == 3) v = NAN;
      if (i == 5) v = INFINITY;
      if (i == 7) v = nonNegative ? 0.0f : -INFINITY;
      if (i == 9) v = nonNegative ? 1e30f : -1e30f;
      if (i == 11) v = 70000.0f;  // past the largest half
      if (nonNegative && v < 0) v = -v;
      std::memcpy(p + 4 * i, &v, 4);
    } else if constexpr (std::is_same<U, half>::value || std::is_same<U, bfloat16_t>::value) {
      double v = u(g_rng);
      if (i % 3 == 1) v = std::floor(v) + 0.5;
      if (nonNegative && v < 0) v = -v;
      U x = U(static_cast<float>(v));
      if (i == 3) x = U(NAN);
      if (i == 5) x = U(INFINITY);
      if (i == 7) x = U(nonNegative ? 0.0f : -INFINITY);
      std::memcpy(p + sizeof(U) * i, &x, sizeof(U));
    }
  }
}

template <typename T, typename U>
static void CastPair(double lo, double hi, bool nonNegative = false) {
  for (RoundMode mode : kAllModes) {
    const std::string name = std::string("Cast/") + Dt<U>() + "->" + Dt<T>() + "/" + ModeName(mode);
    const std::string base = Join({Q("api", "Cast"), Q("src", Dt<U>()), Q("dst", Dt<T>()), Q("mode", ModeName(mode))});
    const uint64_t lanes = 256 / (sizeof(T) > sizeof(U) ? sizeof(T) : sizeof(U));
    const uint32_t n = static_cast<uint32_t>(kBuf / 2 / (sizeof(T) > sizeof(U) ? sizeof(T) : sizeof(U)));
    Case(name + "/count", base + ", " + Q("form", "count") + ", " + N("count", n), [&] {
      auto s = Buf<U>("src");
      auto d = Buf<T>("dst");
      CastInputs(s, lo, hi, nonNegative);
      Cast(d, s, mode, n);
      return std::vector<Arr>{{"src0", HostOf(s), kBuf}, {"dst", HostOf(d), kBuf}};
    });
    // A bit mask with strides: one mode is enough to check the addressing (the values are the same code).
    if (mode == RoundMode::CAST_RINT || (mode == RoundMode::CAST_NONE && sizeof(T) != sizeof(U))) {
      uint64_t m[2] = {0xF00FF00FF00FF00Full & (lanes >= 64 ? ~0ull : (1ull << lanes) - 1),
                       lanes == 128 ? 0x0123456789ABCDEFull : 0};
      const uint16_t dstRep = static_cast<uint16_t>(8 * sizeof(T) / (sizeof(T) > sizeof(U) ? sizeof(T) : sizeof(U)));
      const uint16_t srcRep = static_cast<uint16_t>(8 * sizeof(U) / (sizeof(T) > sizeof(U) ? sizeof(T) : sizeof(U)));
      Case(name + "/bits",
           Join({base, Q("form", "bits"), S("bits", L({m[0], m[1]})), N("repeat", 3), S("blk", L({1, 2})),
                 S("rep", L({static_cast<uint64_t>(dstRep + 1), static_cast<uint64_t>(2 * srcRep + 2)}))}),
           [&] {
             auto s = Buf<U>("src");
             auto d = Buf<T>("dst");
             CastInputs(s, lo, hi, nonNegative);
             Cast(d, s, mode, m, 3, UnaryRepeatParams(1, 2, static_cast<uint8_t>(dstRep + 1),
                                                        static_cast<uint8_t>(2 * srcRep + 2)));
             return std::vector<Arr>{{"src0", HostOf(s), kBuf}, {"dst", HostOf(d), kBuf}};
           });
      Case(name + "/cont",
           Join({base, Q("form", "cont"), N("mask", lanes - 3), N("repeat", 2), S("blk", L({1, 1})),
                 S("rep", L({dstRep, srcRep}))}),
           [&] {
             auto s = Buf<U>("src");
             auto d = Buf<T>("dst");
             CastInputs(s, lo, hi, nonNegative);
             Cast(d, s, mode, lanes - 3, 2, UnaryRepeatParams(1, 1, static_cast<uint8_t>(dstRep),
                                                              static_cast<uint8_t>(srcRep)));
             return std::vector<Arr>{{"src0", HostOf(s), kBuf}, {"dst", HostOf(d), kBuf}};
           });
    }
  }
}

static void CastCases() {
  CastPair<half, int8_t>(0, 0);
  CastPair<half, uint8_t>(0, 0);
  CastPair<half, int16_t>(0, 0);
  CastPair<float, int16_t>(0, 0);
  CastPair<int8_t, half>(-200, 200);
  CastPair<uint8_t, half>(0, 300, true);
  CastPair<int16_t, half>(-40000, 40000);
  CastPair<int32_t, half>(-70000, 70000);
  CastPair<float, half>(-100, 100);
  CastPair<int32_t, bfloat16_t>(-3e9, 3e9);
  CastPair<float, bfloat16_t>(-100, 100);
  CastPair<int16_t, int32_t>(0, 0);
  CastPair<float, int32_t>(0, 0);
  CastPair<int64_t, int32_t>(0, 0);
  CastPair<int16_t, float>(-40000, 40000);
  CastPair<half, float>(-70000, 70000);
  CastPair<bfloat16_t, float>(-3e38, 3e38);
  CastPair<int32_t, float>(-3e9, 3e9);
  CastPair<float, float>(-1000, 1000);
  CastPair<int64_t, float>(-1e19, 1e19);
  CastPair<int32_t, int64_t>(0, 0);
  CastPair<float, int64_t>(0, 0);
  // Not modelled / not documented.
  Case("error/cast-int32-half", "", [&] {
    auto s = Buf<int32_t>("src");
    auto d = Buf<half>("dst");
    Cast(d, s, RoundMode::CAST_NONE, 64);
    return std::vector<Arr>{};
  });
  Case("error/cast-half-int16-none", "", [&] {
    auto s = Buf<half>("src");
    auto d = Buf<int16_t>("dst");
    Cast(d, s, RoundMode::CAST_NONE, 64);
    return std::vector<Arr>{};
  });
  Case("error/cast-half-uint8-negative", "", [&] {
    auto s = Buf<half>("src");
    auto d = Buf<uint8_t>("dst");
    Fill(s, 1, 2, false);
    reinterpret_cast<half *>(HostOf(s))[5] = half(-1.0f);
    Cast(d, s, RoundMode::CAST_RINT, 64);
    return std::vector<Arr>{};
  });
  Case("error/cast-uint8-float", "", [&] {
    auto s = Buf<uint8_t>("src");
    auto d = Buf<float>("dst");
    Cast(d, s, RoundMode::CAST_NONE, 64);
    return std::vector<Arr>{};
  });
  Case("error/cast-widen-in-place", "", [&] {
    auto s = Buf<half>("src");
    Cast(s.ReinterpretCast<float>(), s, RoundMode::CAST_NONE, 128);
    return std::vector<Arr>{};
  });
}

// ---- reductions -------------------------------------------------------------------------------------------
template <typename T>
static void ReductionCases() {
  const uint64_t lanes = 256 / sizeof(T);
  const char *dt = Dt<T>();
  auto whole = [&](const char *api, auto fn, ReduceOrder order, const char *orderName, bool specials) {
    const std::string base = Join({Q("api", api), Q("dtype", dt), Q("order", orderName)});
    Case(std::string(api) + "/" + dt + "/" + orderName + "/cont",
         Join({base, Q("form", "cont"), N("mask", lanes - 9), N("repeat", 5), N("dstRep", 3), N("srcBlk", 2),
               N("srcRep", 17)}),
         [&] {
           auto s = Buf<T>("src"), d = Buf<T>("dst");
           Fill(s, -50, 50, specials);
           fn(d, s, static_cast<int32_t>(lanes - 9), 5, 3, 2, 17, order);
           return std::vector<Arr>{{"src0", HostOf(s), kBuf}, {"dst", HostOf(d), kBuf}};
         });
    uint64_t m[2] = {0xFFFF0000000000F0ull, sizeof(T) == 2 ? 0x0000FFFF00000001ull : 0};
    Case(std::string(api) + "/" + dt + "/" + orderName + "/bits",
         Join({base, Q("form", "bits"), S("bits", L({m[0], m[1]})), N("repeat", 4), N("dstRep", 1), N("srcBlk", 1),
               N("srcRep", 8)}),
         [&] {
           auto s = Buf<T>("src"), d = Buf<T>("dst");
           Fill(s, -50, 50, specials);
           fn(d, s, m, 4, 1, 1, 8, order);
           return std::vector<Arr>{{"src0", HostOf(s), kBuf}, {"dst", HostOf(d), kBuf}};
         });
  };
  const std::pair<ReduceOrder, const char *> orders[] = {{ReduceOrder::ORDER_VALUE_INDEX, "value_index"},
                                                         {ReduceOrder::ORDER_INDEX_VALUE, "index_value"},
                                                         {ReduceOrder::ORDER_ONLY_VALUE, "only_value"},
                                                         {ReduceOrder::ORDER_ONLY_INDEX, "only_index"}};
  for (const auto &o : orders) {
    whole("WholeReduceMax", [](auto d, auto s, auto m, int32_t r, int32_t dr, int32_t sb, int32_t sr, ReduceOrder od) {
      WholeReduceMax(d, s, m, r, dr, sb, sr, od);
    }, o.first, o.second, o.first == ReduceOrder::ORDER_ONLY_VALUE);
    whole("WholeReduceMin", [](auto d, auto s, auto m, int32_t r, int32_t dr, int32_t sb, int32_t sr, ReduceOrder od) {
      WholeReduceMin(d, s, m, r, dr, sb, sr, od);
    }, o.first, o.second, false);
  }
  whole("WholeReduceSum", [](auto d, auto s, auto m, int32_t r, int32_t dr, int32_t sb, int32_t sr, ReduceOrder) {
    WholeReduceSum(d, s, m, r, dr, sb, sr);
  }, ReduceOrder::ORDER_ONLY_VALUE, "sum", false);

  auto group = [&](const char *api, auto fn) {
    const std::string base = Join({Q("api", api), Q("dtype", dt)});
    Case(std::string(api) + "/" + dt + "/cont",
         Join({base, Q("form", "cont"), N("mask", lanes / 2 - 3), N("repeat", 3), N("dstRep", 2), N("srcBlk", 1),
               N("srcRep", 9)}),
         [&] {
           auto s = Buf<T>("src"), d = Buf<T>("dst");
           Fill(s, -50, 50, false);
           fn(d, s, 3, static_cast<int32_t>(lanes / 2 - 3), 2, 1, 9);
           return std::vector<Arr>{{"src0", HostOf(s), kBuf}, {"dst", HostOf(d), kBuf}};
         });
    uint64_t m[2] = {0x00FF00000000F00Full, sizeof(T) == 2 ? 0x8000000000000003ull : 0};
    Case(std::string(api) + "/" + dt + "/bits",
         Join({base, Q("form", "bits"), S("bits", L({m[0], m[1]})), N("repeat", 2), N("dstRep", 1), N("srcBlk", 2),
               N("srcRep", 16)}),
         [&] {
           auto s = Buf<T>("src"), d = Buf<T>("dst");
           Fill(s, -50, 50, false);
           fn(d, s, 2, m, 1, 2, 16);
           return std::vector<Arr>{{"src0", HostOf(s), kBuf}, {"dst", HostOf(d), kBuf}};
         });
  };
  group("BlockReduceMax", [](auto d, auto s, int32_t r, auto m, int32_t dr, int32_t sb, int32_t sr) {
    BlockReduceMax(d, s, r, m, dr, sb, sr);
  });
  group("BlockReduceMin", [](auto d, auto s, int32_t r, auto m, int32_t dr, int32_t sb, int32_t sr) {
    BlockReduceMin(d, s, r, m, dr, sb, sr);
  });
  group("BlockReduceSum", [](auto d, auto s, int32_t r, auto m, int32_t dr, int32_t sb, int32_t sr) {
    BlockReduceSum(d, s, r, m, dr, sb, sr);
  });
  group("PairReduceSum", [](auto d, auto s, int32_t r, auto m, int32_t dr, int32_t sb, int32_t sr) {
    PairReduceSum(d, s, r, m, dr, sb, sr);
  });

  // ReduceMax / ReduceMin / ReduceSum: count and mask forms (tmp separate, and tmp = src).
  for (int calIndex = 0; calIndex < 2; ++calIndex) {
    for (const char *api : {"ReduceMax", "ReduceMin"}) {
      const bool isMax = std::string(api) == "ReduceMax";
      const std::string base = Join({Q("api", api), Q("dtype", dt), N("calIndex", calIndex)});
      const int32_t n = static_cast<int32_t>(5 * lanes + 17);
      Case(std::string(api) + "/" + dt + "/count/" + std::to_string(calIndex), base + ", " + Q("form", "count") + ", " + N("count", n), [&] {
        auto s = Buf<T>("src"), d = Buf<T>("dst"), t = Buf<T>("tmp");
        Fill(s, -50, 50, false);
        reinterpret_cast<T *>(HostOf(s))[n - 3] = T(isMax ? 60.0f : -60.0f);  // the extreme twice: lowest index wins
        reinterpret_cast<T *>(HostOf(s))[n - 1] = T(isMax ? 60.0f : -60.0f);
        if (isMax) ReduceMax(d, s, t, n, calIndex != 0); else ReduceMin(d, s, t, n, calIndex != 0);
        return std::vector<Arr>{{"src0", HostOf(s), kBuf}, {"dst", HostOf(d), kBuf}};
      });
      Case(std::string(api) + "/" + dt + "/cont/" + std::to_string(calIndex),
           Join({base, Q("form", "cont"), N("mask", lanes - 7), N("repeat", 9), N("srcRep", 8)}), [&] {
             auto s = Buf<T>("src"), d = Buf<T>("dst");
             Fill(s, -50, 50, false);
             const std::vector<uint8_t> before = Snap(HostOf(s));
             // sharedTmpBuffer reusing src (documented), dst overlapping it (documented)
             if (isMax) ReduceMax(d, s, s, static_cast<int32_t>(lanes - 7), 9, 8, calIndex != 0);
             else ReduceMin(d, s, s, static_cast<int32_t>(lanes - 7), 9, 8, calIndex != 0);
             static std::vector<uint8_t> keep;
             keep = before;
             return std::vector<Arr>{{"src0", keep.data(), kBuf}, {"dst", HostOf(d), kBuf}};
           });
      uint64_t m[2] = {0xFFFFFFFF0000FFFFull, sizeof(T) == 2 ? 0xFF00000000000000ull : 0};
      Case(std::string(api) + "/" + dt + "/bits/" + std::to_string(calIndex),
           Join({base, Q("form", "bits"), S("bits", L({m[0], m[1]})), N("repeat", 3), N("srcRep", 16)}), [&] {
             auto s = Buf<T>("src"), d = Buf<T>("dst"), t = Buf<T>("tmp");
             Fill(s, -50, 50, false);
             if (isMax) ReduceMax(d, s, t, m, 3, 16, calIndex != 0); else ReduceMin(d, s, t, m, 3, 16, calIndex != 0);
             return std::vector<Arr>{{"src0", HostOf(s), kBuf}, {"dst", HostOf(d), kBuf}};
           });
    }
  }
  const std::string base = Join({Q("api", "ReduceSum"), Q("dtype", dt)});
  const int32_t n = static_cast<int32_t>(7 * lanes + 5);
  Case(std::string("ReduceSum/") + dt + "/count", base + ", " + Q("form", "count") + ", " + N("count", n), [&] {
    auto s = Buf<T>("src"), d = Buf<T>("dst");
    Fill(s, -4, 4, false);
    ReduceSum(d, s, s[0], n);  // 方式一: the tmp buffer is not used
    return std::vector<Arr>{{"src0", HostOf(s), kBuf}, {"dst", HostOf(d), kBuf}};
  });
  Case(std::string("ReduceSum/") + dt + "/cont",
       Join({base, Q("form", "cont"), N("mask", lanes - 1), N("repeat", 12), N("srcRep", 10)}), [&] {
         auto s = Buf<T>("src"), d = Buf<T>("dst"), t = Buf<T>("tmp");
         Fill(s, -4, 4, false);
         ReduceSum(d, s, t, static_cast<int32_t>(lanes - 1), 12, 10);
         return std::vector<Arr>{{"src0", HostOf(s), kBuf}, {"dst", HostOf(d), kBuf}};
       });
  uint64_t m[2] = {0x5555555555555555ull, sizeof(T) == 2 ? 0xAAAAAAAAAAAAAAAAull : 0};
  Case(std::string("ReduceSum/") + dt + "/bits",
       Join({base, Q("form", "bits"), S("bits", L({m[0], m[1]})), N("repeat", 2), N("srcRep", 8)}), [&] {
         auto s = Buf<T>("src"), d = Buf<T>("dst"), t = Buf<T>("tmp");
         Fill(s, -4, 4, false);
         ReduceSum(d, s, t, m, 2, 8);
         return std::vector<Arr>{{"src0", HostOf(s), kBuf}, {"dst", HostOf(d), kBuf}};
       });
}

static void ReductionErrors() {
  Case("error/reducemax-tmp-too-small", "", [&] {
    auto s = Buf<half>("src"), d = Buf<half>("dst"), t = Buf<half>("tmp", 320);
    ReduceMax(d, s, t, 128, 65, 8, true);  // ReduceMax.md example 1: 176 elements = 352 bytes
    return std::vector<Arr>{};
  });
  Case("ok/reducemax-tmp-exact", "", [&] {
    auto s = Buf<half>("src", 65 * 256), d = Buf<half>("dst"), t = Buf<half>("tmp", 352);
    ReduceMax(d, s, t, 128, 65, 8, true);
    return std::vector<Arr>{};
  });
  Case("error/wholereducesum-later-repeat", "", [&] {
    auto s = Buf<float>("src");
    WholeReduceSum(s[64], s, 64, 3, 1, 1, 8);  // repeat 0 writes what repeat 1 reads
    return std::vector<Arr>{};
  });
  Case("error/blockreduce-int32", "", [&] {
    auto s = Buf<int32_t>("src");
    BlockReduceSum(s, s, 1, 64, 1, 1, 8);
    return std::vector<Arr>{};
  });
  Case("error/reduce-counter-mode", "", [&] {  // Counter mode is modelled for the per-repeat reductions only
    auto s = Buf<float>("src"), d = Buf<float>("dst"), t = Buf<float>("tmp");
    SetMaskCount();
    try {
      ReduceSum(d, s, t, 64, 1, 8);
    } catch (...) {
      SetMaskNorm();
      throw;
    }
    return std::vector<Arr>{};
  });
}

// ---- compare / select / gather-mask / layout / 9.1.0 reduction names (ops_vector_cmpsel.h, _layout.h) ---
template <typename T>
static const char *DtName() {
  if (std::is_same<T, float>::value) return "float32";
  if (std::is_same<T, half>::value) return "float16";
  if (std::is_same<T, int32_t>::value) return "int32";
  if (std::is_same<T, uint32_t>::value) return "uint32";
  if (std::is_same<T, int16_t>::value) return "int16";
  if (std::is_same<T, uint16_t>::value) return "uint16";
  if (std::is_same<T, uint8_t>::value) return "uint8";
  return "?";
}

template <typename T>
static void CmpSelCases() {
  const char *dt = DtName<T>();
  const uint32_t n = 2 * 256 / sizeof(T);  // two repeats
  for (CMPMODE m : {CMPMODE::LT, CMPMODE::GT, CMPMODE::EQ, CMPMODE::LE, CMPMODE::GE, CMPMODE::NE}) {
    const std::string mode = model_vec::CmpName(m);
    Case("Compare/" + std::string(dt) + "/" + mode, Join({Q("dtype", dt), Q("mode", mode)}), [&] {
      auto a = Buf<T>("a"), b = Buf<T>("b");
      auto d = Buf<uint8_t>("dst");
      Fill(a, -3, 3, true);
      Fill(b, -3, 3, true);
      // equal elements for EQ / LE / GE: every fourth element of b copies a
      for (uint32_t i = 0; i < n; i += 4) std::memcpy(HostOf(b) + i * sizeof(T), HostOf(a) + i * sizeof(T), sizeof(T));
      Compare(d, a, b, m, n);
      return std::vector<Arr>{{"a", HostOf(a), kBuf}, {"b", HostOf(b), kBuf}, {"dst", HostOf(d), kBuf}};
    });
    Case("Compares/" + std::string(dt) + "/" + mode, Join({Q("dtype", dt), Q("mode", mode)}), [&] {
      auto a = Buf<T>("a");
      auto d = Buf<uint8_t>("dst");
      Fill(a, -3, 3, true);
      const T s = HostOf(a)[0] == 0 ? T(0.5f) : *reinterpret_cast<const T *>(HostOf(a) + 4 * sizeof(T));
      static std::vector<uint8_t> sv;
      sv.assign(reinterpret_cast<const uint8_t *>(&s), reinterpret_cast<const uint8_t *>(&s) + sizeof(T));
      Compares(d, a, s, m, n);
      return std::vector<Arr>{{"a", HostOf(a), kBuf}, {"scalar", sv.data(), sizeof(T)}, {"dst", HostOf(d), kBuf}};
    });
  }
  // Compare to the register, then GetCmpMask (Compare（结果存入寄存器）.md, GetCmpMask(ISASI).md)
  Case("CompareReg/" + std::string(dt), Join({Q("dtype", dt), Q("mask", "37")}), [&] {
    auto a = Buf<T>("a"), b = Buf<T>("b");
    auto d = Buf<uint8_t>("dst");
    Fill(a, -3, 3, false);
    Fill(b, -3, 3, false);
    Compare(a, b, CMPMODE::LT, uint64_t{37}, BinaryRepeatParams());
    GetCmpMask(d);
    return std::vector<Arr>{{"a", HostOf(a), kBuf}, {"b", HostOf(b), kBuf}, {"dst", HostOf(d), kBuf}};
  });
  // Select, count form, modes 0 / 1 / 2 (Select.md)
  for (int mode = 0; mode < 3; ++mode) {
    const uint32_t count = n - 5;
    Case("Select/" + std::string(dt) + "/mode" + std::to_string(mode),
         Join({Q("dtype", dt), "\"mode\": " + std::to_string(mode), "\"count\": " + std::to_string(count)}), [&] {
           auto a = Buf<T>("a"), b = Buf<T>("b"), d = Buf<T>("dst");
           auto sel = Buf<uint8_t>("sel");
           Fill(a, -3, 3, false);
           Fill(b, -3, 3, false);
           Fill(sel, 0, 0, false);
           const T s = T(1.25f);
           static std::vector<uint8_t> sv;
           sv.assign(reinterpret_cast<const uint8_t *>(&s), reinterpret_cast<const uint8_t *>(&s) + sizeof(T));
           if (mode == 1) Select(d, sel, a, s, SELMODE::VSEL_TENSOR_SCALAR_MODE, count);
           else Select(d, sel, a, b, static_cast<SELMODE>(mode), count);
           return std::vector<Arr>{{"a", HostOf(a), kBuf}, {"b", HostOf(b), kBuf}, {"sel", HostOf(sel), kBuf},
                                   {"scalar", sv.data(), sizeof(T)}, {"dst", HostOf(d), kBuf}};
         });
  }
  // Select, continuous-mask form, mode 2, two repeats with dst repeat stride 16 blocks
  Case("SelectMask/" + std::string(dt), Join({Q("dtype", dt), "\"mask\": 20", "\"repeats\": 2"}), [&] {
    auto a = Buf<T>("a"), b = Buf<T>("b"), d = Buf<T>("dst");
    auto sel = Buf<uint8_t>("sel");
    Fill(a, -3, 3, false);
    Fill(b, -3, 3, false);
    Fill(sel, 0, 0, false);
    Select(d, sel, a, b, SELMODE::VSEL_TENSOR_TENSOR_MODE, uint64_t{20}, 2, BinaryRepeatParams(1, 1, 1, 16, 8, 8));
    return std::vector<Arr>{{"a", HostOf(a), kBuf}, {"b", HostOf(b), kBuf}, {"sel", HostOf(sel), kBuf},
                            {"dst", HostOf(d), kBuf}};
  });
}

template <typename T>
static void LayoutCases() {
  using U = typename std::conditional<sizeof(T) == 2, uint16_t, uint32_t>::type;
  const char *dt = DtName<T>();
  // GatherMask: built-in patterns (Normal mode, 3 repeats, src0RepeatStride 8) and a user pattern (Counter)
  for (int pattern = 1; pattern <= 7; ++pattern) {
    Case("GatherMask/" + std::string(dt) + "/p" + std::to_string(pattern),
         Join({Q("dtype", dt), "\"pattern\": " + std::to_string(pattern), "\"repeats\": 3"}), [&] {
           auto a = Buf<T>("a"), d = Buf<T>("dst");
           Fill(a, -8, 8, false);
           uint64_t cnt = 0;
           GatherMask(d, a, static_cast<uint8_t>(pattern), false, 0, GatherMaskParams(1, 3, 8, 0), cnt);
           static uint64_t c;
           c = cnt;
           return std::vector<Arr>{{"a", HostOf(a), kBuf}, {"dst", HostOf(d), kBuf},
                                   {"rsvdCnt", reinterpret_cast<const uint8_t *>(&c), 8}};
         });
  }
  Case("GatherMaskUser/" + std::string(dt), Join({Q("dtype", dt), "\"mask\": 70", "\"repeats\": 2",
                                                  "\"src0RepStride\": 8", "\"src1RepStride\": 1"}), [&] {
    auto a = Buf<T>("a"), d = Buf<T>("dst");
    auto p = Buf<U>("pattern");
    Fill(a, -8, 8, false);
    Fill(p, 0, 0, false);
    uint64_t cnt = 0;
    GatherMask(d, a, p, true, 70, GatherMaskParams(1, 2, 8, 1), cnt);
    static uint64_t c;
    c = cnt;
    return std::vector<Arr>{{"a", HostOf(a), kBuf}, {"pattern", HostOf(p), kBuf}, {"dst", HostOf(d), kBuf},
                            {"rsvdCnt", reinterpret_cast<const uint8_t *>(&c), 8}};
  });
  // Brcb: 3 repeats, dstBlkStride 2, dstRepStride 16 (Brcb.md 目的操作数非连续)
  Case("Brcb/" + std::string(dt), Join({Q("dtype", dt), "\"repeats\": 3", "\"blk\": 2", "\"rep\": 16"}), [&] {
    auto a = Buf<T>("a"), d = Buf<T>("dst");
    Fill(a, -8, 8, false);
    Brcb(d, a, 3, BrcbRepeatParams(2, 16));
    return std::vector<Arr>{{"a", HostOf(a), kBuf}, {"dst", HostOf(d), kBuf}};
  });
  // Copy: continuous mask 20, 3 repeats, strides {dst 2, src 1, dstRep 16, srcRep 8}
  Case("Copy/" + std::string(dt), Join({Q("dtype", dt), "\"mask\": 20", "\"repeats\": 3"}), [&] {
    auto a = Buf<T>("a"), d = Buf<T>("dst");
    Fill(a, -8, 8, false);
    Copy(d, a, uint64_t{20}, 3, CopyRepeatParams(2, 1, 16, 8));
    return std::vector<Arr>{{"a", HostOf(a), kBuf}, {"dst", HostOf(d), kBuf}};
  });
  Case("CopyCounter/" + std::string(dt), Join({Q("dtype", dt), "\"mask\": 13", "\"repeats\": 2"}), [&] {
    auto a = Buf<T>("a"), d = Buf<T>("dst");
    Fill(a, -8, 8, false);
    SetMaskCount();
    SetVectorMask<T, MaskMode::COUNTER>(13);
    Copy<T, false>(d, a, MASK_PLACEHOLDER, 2, CopyRepeatParams(1, 1, 8, 8));
    SetMaskNorm();
    ResetMask();
    return std::vector<Arr>{{"a", HostOf(a), kBuf}, {"dst", HostOf(d), kBuf}};
  });
}

static void TransposeCases() {
  Case("Transpose/16x16", Join({Q("dtype", "float16")}), [&] {
    auto a = Buf<half>("a"), d = Buf<half>("dst");
    Fill(a, -8, 8, false);
    Transpose(d, a);
    return std::vector<Arr>{{"a", HostOf(a), kBuf}, {"dst", HostOf(d), kBuf}};
  });
  for (int type = 0; type < 2; ++type) {
    const std::string name = type == 0 ? "nchw2nhwc" : "nhwc2nchw";
    Case("TransposeExt/" + name, Join({Q("dtype", "float32"), "\"n\": 2", "\"c\": 3", "\"h\": 2", "\"w\": 8"}),
         [&] {
           auto a = Buf<float>("a"), d = Buf<float>("dst");
           auto t = Buf<uint8_t>("tmp");
           Fill(a, -8, 8, false);
           Transpose(d, a, t,
                     TransposeParamsExt(2, 3, 2, 8,
                                        type == 0 ? TransposeType::TRANSPOSE_NCHW2NHWC
                                                  : TransposeType::TRANSPOSE_NHWC2NCHW));
           return std::vector<Arr>{{"a", HostOf(a), kBuf}, {"dst", HostOf(d), kBuf}};
         });
  }
}

template <typename T>
static void NewReduceCases() {
  const char *dt = DtName<T>();
  const uint64_t lanes = 256 / sizeof(T);
  const uint64_t count = 2 * lanes + 7;  // three repeats, the last one partial
  Case("ReduceRepeatCounter/" + std::string(dt), Join({Q("dtype", dt), "\"count\": " + std::to_string(count)}), [&] {
    auto a = Buf<T>("a"), d = Buf<T>("dst");
    Fill(a, -4, 4, false);
    SetMaskCount();
    SetVectorMask<T, MaskMode::COUNTER>(static_cast<int32_t>(count));
    ReduceRepeat<ReduceType::SUM, T, T, false>(d, a, MASK_PLACEHOLDER, 1, 1, 1, 8);
    SetMaskNorm();
    ResetMask();
    return std::vector<Arr>{{"a", HostOf(a), kBuf}, {"dst", HostOf(d), kBuf}};
  });
  Case("ReduceRepeatMax/" + std::string(dt), Join({Q("dtype", dt), "\"mask\": 50", "\"repeats\": 2"}), [&] {
    auto a = Buf<T>("a"), d = Buf<T>("dst");
    Fill(a, -4, 4, false);
    ReduceRepeat<ReduceType::MAX, T>(d, a, 50, 2, 1, 1, 8, ReduceOrder::ORDER_VALUE_INDEX);
    return std::vector<Arr>{{"a", HostOf(a), kBuf}, {"dst", HostOf(d), kBuf}};
  });
  Case("ReduceDataBlockCounter/" + std::string(dt), Join({Q("dtype", dt), "\"count\": " + std::to_string(count)}),
       [&] {
         auto a = Buf<T>("a"), d = Buf<T>("dst");
         Fill(a, -4, 4, false);
         SetMaskCount();
         SetVectorMask<T>(0, count);
         ReduceDataBlock<ReduceType::SUM, T, T, false>(d, a, MASK_PLACEHOLDER, 1, 1, 1, 8);
         SetMaskNorm();
         ResetMask();
         return std::vector<Arr>{{"a", HostOf(a), kBuf}, {"dst", HostOf(d), kBuf}};
       });
  Case("ReducePairElem/" + std::string(dt), Join({Q("dtype", dt), "\"mask\": 9", "\"repeats\": 2"}), [&] {
    auto a = Buf<T>("a"), d = Buf<T>("dst");
    Fill(a, -4, 4, false);
    ReducePairElem<ReduceType::SUM, T>(d, a, 9, 2, 1, 1, 8);
    return std::vector<Arr>{{"a", HostOf(a), kBuf}, {"dst", HostOf(d), kBuf}};
  });
}

static void CmpSelErrors() {
  Case("error/compare-count-unaligned", "", [&] {
    auto a = Buf<float>("a");
    auto d = Buf<uint8_t>("dst");
    Compare(d, a, a, CMPMODE::LT, 100);
    return std::vector<Arr>{};
  });
  Case("error/compare-int32-lt", "", [&] {
    auto a = Buf<int32_t>("a");
    auto d = Buf<uint8_t>("dst");
    Compare(d, a, a, CMPMODE::LT, 64);
    return std::vector<Arr>{};
  });
  Case("error/select-int32", "", [&] {
    auto a = Buf<int32_t>("a");
    auto s = Buf<uint8_t>("sel");
    Select(a, s, a, a, SELMODE::VSEL_TENSOR_TENSOR_MODE, 64);
    return std::vector<Arr>{};
  });
  Case("error/getcmpmask-small", "", [&] {
    auto a = Buf<float>("a");
    auto d = Buf<uint8_t>("dst", 64);
    Compare(a, a, CMPMODE::EQ, uint64_t{64}, BinaryRepeatParams());
    GetCmpMask(d);
    return std::vector<Arr>{};
  });
  Case("error/brcb-blkstride-0", "", [&] {
    auto a = Buf<half>("a"), d = Buf<half>("dst");
    Brcb(d, a, 1, BrcbRepeatParams(0, 8));
    return std::vector<Arr>{};
  });
  Case("error/brcb-shared", "", [&] {
    auto a = Buf<half>("a");
    Brcb(a, a[64], 1, BrcbRepeatParams(1, 8));
    return std::vector<Arr>{};
  });
  Case("error/gathermask-int8", "", [&] {
    auto a = Buf<int8_t>("a");
    uint64_t c = 0;
    GatherMask(a, a, static_cast<uint8_t>(1), false, 0, GatherMaskParams(1, 1, 8, 0), c);
    return std::vector<Arr>{};
  });
  Case("error/transpose-float", "", [&] {
    auto a = Buf<float>("a"), d = Buf<float>("dst");
    Transpose(d, a);
    return std::vector<Arr>{};
  });
  Case("error/reducepair-max", "", [&] {
    auto a = Buf<float>("a"), d = Buf<float>("dst");
    ReducePairElem<ReduceType::MAX, float>(d, a, 64, 1, 1, 1, 8);
    return std::vector<Arr>{};
  });
  Case("error/reducerepeat-mixed-types", "", [&] {
    auto a = Buf<half>("a");
    auto d = Buf<float>("dst");
    ReduceRepeat<ReduceType::SUM, float, half>(d, a, 64, 1, 1, 1, 8);
    return std::vector<Arr>{};
  });
}

// ---- element-wise errors ----------------------------------------------------------------------------------
static void ElementwiseErrors() {
  Case("error/div-int32", "", [&] {
    auto a = Buf<int32_t>("src");
    Div(a, a, a, 64);
    return std::vector<Arr>{};
  });
  Case("error/and-int32", "", [&] {  // And.md: int16_t / uint16_t on A2/A3 (32-bit words via ReinterpretCast)
    auto a = Buf<int32_t>("src");
    And(a, a, a, 64);
    return std::vector<Arr>{};
  });
  Case("error/exp-int16", "", [&] {
    auto a = Buf<int16_t>("src");
    Exp(a, a, 64);
    return std::vector<Arr>{};
  });
  Case("error/add-partial-overlap", "", [&] {
    auto a = Buf<float>("src");
    Add(a[8], a, a, 64u, 1, BinaryRepeatParams());
    return std::vector<Arr>{};
  });
  Case("error/sub-int16-feed", "", [&] {  // dst -> src1 chaining is documented for half/int32/float only
    auto a = Buf<int16_t>("a"), b = Buf<int16_t>("b");
    Sub(a, b, a, 128u, 2, BinaryRepeatParams(1, 1, 1, 8, 8, 0));
    return std::vector<Arr>{};
  });
  Case("error/adds-later-repeat", "", [&] {
    auto a = Buf<float>("a");
    Adds(a[64], a, 1.0f, 64u, 2, UnaryRepeatParams());  // repeat 0 writes what repeat 1 reads
    return std::vector<Arr>{};
  });
  Case("error/relu-halfblock", "", [&] {
    auto a = Buf<float>("a");
    Relu(a, a, 64u, 1, UnaryRepeatParams(1, 1, 8, 8, true));
    return std::vector<Arr>{};
  });
  Case("error/count-negative", "", [&] {
    auto a = Buf<float>("a");
    Abs(a, a, -1);
    return std::vector<Arr>{};
  });
  // dst -> src1 chaining (documented for Add/Sub/Mul/Max/Min on half/int32/float): repeat 1 sees repeat 0.
  Case("Add/chain", Join({Q("api", "Add"), Q("dtype", "float32")}), [&] {
    auto a = Buf<float>("a"), b = Buf<float>("b");
    Fill(a, -4, 4, false);
    Fill(b, -4, 4, false);
    static std::vector<uint8_t> a0, b0;
    a0 = Snap(HostOf(a));
    b0 = Snap(HostOf(b));
    Add(a, b, a, 64u, 3, BinaryRepeatParams(1, 1, 1, 8, 8, 0));
    return std::vector<Arr>{{"a0", a0.data(), kBuf}, {"b0", b0.data(), kBuf}, {"a", HostOf(a), kBuf}};
  });
}

int main() {
  const Range wide{-8, 8, true}, plain{-8, 8, false};
  Binary_Add<half>(wide); Binary_Add<float>(wide); Binary_Add<int16_t>(plain); Binary_Add<int32_t>(plain);
  Binary_Sub<half>(wide); Binary_Sub<float>(wide); Binary_Sub<int16_t>(plain); Binary_Sub<int32_t>(plain);
  Binary_Mul<half>(wide); Binary_Mul<float>(wide); Binary_Mul<int16_t>(plain); Binary_Mul<int32_t>(plain);
  Binary_Div<half>(wide); Binary_Div<float>(wide);
  Binary_Max<half>(wide); Binary_Max<float>(wide); Binary_Max<int16_t>(plain); Binary_Max<int32_t>(plain);
  Binary_Min<half>(wide); Binary_Min<float>(wide); Binary_Min<int16_t>(plain); Binary_Min<int32_t>(plain);
  Binary_And<int16_t>(plain); Binary_And<uint16_t>(plain); Binary_Or<int16_t>(plain); Binary_Or<uint16_t>(plain);
  Scalar_Adds<half>(wide, half(1.5f)); Scalar_Adds<float>(wide, -2.25f);
  Scalar_Adds<int16_t>(plain, int16_t(-12345)); Scalar_Adds<int32_t>(plain, int32_t(2000000000));
  Scalar_Muls<half>(wide, half(-3.0f)); Scalar_Muls<float>(wide, 0.1f);
  Scalar_Muls<int16_t>(plain, int16_t(7)); Scalar_Muls<int32_t>(plain, int32_t(-99991));
  Scalar_Maxs<half>(wide, half(0.5f)); Scalar_Maxs<float>(wide, -1.0f);
  Scalar_Maxs<int16_t>(plain, int16_t(0)); Scalar_Maxs<int32_t>(plain, int32_t(5));
  Scalar_Mins<half>(wide, half(0.5f)); Scalar_Mins<float>(wide, -1.0f);
  Scalar_Mins<int16_t>(plain, int16_t(0)); Scalar_Mins<int32_t>(plain, int32_t(5));
  Scalar_LeakyRelu<half>(wide, half(0.1f)); Scalar_LeakyRelu<float>(wide, 0.01f);
  Unary_Abs<half>(wide); Unary_Abs<float>(wide);
  Unary_Relu<half>(wide); Unary_Relu<float>(wide); Unary_Relu<int32_t>(plain);
  Unary_Exp<half>(Range{-12, 12, true}); Unary_Exp<float>(Range{-90, 90, true});
  Unary_Ln<half>(Range{0, 1000, false}); Unary_Ln<float>(Range{0, 1e6, false});
  DuplicateForms<int16_t>(); DuplicateForms<uint16_t>(); DuplicateForms<half>(); DuplicateForms<bfloat16_t>();
  DuplicateForms<int32_t>(); DuplicateForms<uint32_t>(); DuplicateForms<float>();
  MaskRegisterCases();
  CastCases();
  ReductionCases<half>();
  ReductionCases<float>();
  ReductionErrors();
  ElementwiseErrors();
  CmpSelCases<float>();
  CmpSelCases<half>();
  LayoutCases<float>();
  LayoutCases<half>();
  LayoutCases<int16_t>();
  TransposeCases();
  NewReduceCases<float>();
  NewReduceCases<half>();
  CmpSelErrors();
  return 0;
}
