// Unit test of the modelled AscendC instructions (ascendc/cpu_model/ops_*.h) against the documented
// semantics, with the runtime's tensor types (runtime_types.h) and a small fake of the seam
// (model_hooks.h: Touch / Fail / counters, and FindGm): Touch records every range and checks only
// bounds, Fail throws. Expected values come from the documents' formulas written out here, from
// plain loops, or from hand-worked numbers; never from the model's own helpers.
// Built and run by tests/test_ascend_kernel_ops.py; prints "<passed> passed, <failed> failed".
#include <cmath>
#include <cstdio>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime_types.h"
#include "ops_data_copy.h"
#include "ops_cube.h"
#include "ops_fixpipe.h"
#include "ops_vector.h"

using namespace AscendC;
using ascend_model::Access;
using ascend_model::Pipe;
using ascend_model::Space;

// ---- the fake seam -------------------------------------------------------------------------------
namespace ascend_model {

struct Failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct TouchRecord {
  std::string buffer;
  uint64_t offset;  // from the buffer's (or allocation's) first byte
  uint64_t bytes;
  Pipe pipe;
  Access access;
};
std::vector<TouchRecord> g_touches;
uint64_t g_macs = 0;
uint64_t g_repeats = 0;
std::deque<GmAllocation> g_gm;  // stable addresses: GlobalTensor keeps a pointer

uint8_t *Touch(const Span &span, uint64_t offset, uint64_t bytes, Pipe pipe, Access access, const char *api,
               const Site &) {
  if (span.host == nullptr || offset + bytes > span.bytes) {
    throw Failure(std::string(api) + ": bytes [" + std::to_string(offset) + ", " + std::to_string(offset + bytes) +
                  ") outside '" + span.buffer + "' (" + std::to_string(span.bytes) + " bytes)");
  }
  g_touches.push_back({span.buffer, span.offset + offset, bytes, pipe, access});
  return span.host + offset;
}
[[noreturn]] void Fail(const char *api, const Site &, const std::string &message) {
  throw Failure(std::string(api) + ": " + message);
}
// Stores and padding without the runtime's per-core state: plain copies, no SetPadValue value.
void StoreGm(uint8_t *dst, const uint8_t *src, uint64_t bytes, uint64_t, const char *, const Site &) {
  std::memmove(dst, src, bytes);
}
bool PadValue(void *, uint64_t, const char *, const Site &) { return false; }
bool FloatSaturation(const char *, const Site &) { return true; }  // CTRL[48] = 0, the A2/A3 default
void CountCubeFractalMacs(uint64_t n) { g_macs += n; }
void CountFixIntoL1(uint64_t) {}
std::map<std::string, uint64_t> g_vectorOps;  // the repeats per instruction key
void CountVectorRepeats(uint64_t n, const std::string &op) {
  g_repeats += n;
  g_vectorOps[op] += n;
}
const GmAllocation *FindGm(const void *p) {
  const uint8_t *b = static_cast<const uint8_t *>(p);
  for (const auto &a : g_gm) {
    if (b >= a.host && b < a.host + a.bytes) return &a;
  }
  return nullptr;
}

}  // namespace ascend_model

// ---- test scaffolding ----------------------------------------------------------------------------
static int g_passed = 0, g_failed = 0;
#define CHECK(cond)                                                         \
  do {                                                                      \
    if (cond) {                                                             \
      ++g_passed;                                                           \
    } else {                                                                \
      ++g_failed;                                                           \
      std::printf("FAILED %s:%d: %s\n", __FILE__, __LINE__, #cond);          \
    }                                                                       \
  } while (0)

// Runs `f`, which must stop the run with a message containing `needle`.
static void ExpectFail(const char *what, const std::function<void()> &f, const char *needle) {
  try {
    f();
  } catch (const ascend_model::Failure &e) {
    if (std::string(e.what()).find(needle) != std::string::npos) {
      ++g_passed;
    } else {
      ++g_failed;
      std::printf("FAILED %s: message '%s' lacks '%s'\n", what, e.what(), needle);
    }
    return;
  }
  ++g_failed;
  std::printf("FAILED %s: did not stop the run\n", what);
}

// Local buffers: a LocalBuffer record plus host memory, kept alive for the whole program.
struct Storage {
  ascend_model::LocalBuffer buffer;
  std::vector<uint8_t> bytes;
};
static std::deque<std::unique_ptr<Storage>> g_storage;

template <typename T>
static LocalTensor<T> Local(Space space, TPosition pos, uint32_t bytes, const char *name, uint32_t address = 0) {
  auto s = std::make_unique<Storage>();
  s->bytes.assign(bytes, 0xAB);  // a sentinel: untouched bytes keep it
  s->buffer = ascend_model::LocalBuffer{space, pos, s->bytes.data(), bytes, address, 0, ascend_model::Site(), name};
  LocalTensor<T> t = LocalTensor<T>::ModelMake(&s->buffer, bytes / sizeof(T));
  g_storage.push_back(std::move(s));
  return t;
}

struct GmStorage {
  std::vector<uint8_t> bytes;
};
static std::deque<std::unique_ptr<GmStorage>> g_gmStorage;

template <typename T>
static GlobalTensor<T> Global(uint64_t bytes, const char *name) {
  auto s = std::make_unique<GmStorage>();
  s->bytes.assign(bytes, 0xCD);
  ascend_model::g_gm.push_back(ascend_model::GmAllocation{s->bytes.data(), bytes, name});
  GlobalTensor<T> g;
  g.SetGlobalBuffer(reinterpret_cast<T *>(s->bytes.data()));
  g_gmStorage.push_back(std::move(s));
  return g;
}

template <typename T>
static T *Host(const LocalTensor<T> &t) {
  return reinterpret_cast<T *>(t.ModelSpan().host);
}
template <typename T>
static T *Host(const GlobalTensor<T> &t) {
  return reinterpret_cast<T *>(t.ModelSpan().host);
}

static bool Untouched(const void *p, size_t n, uint8_t sentinel) {
  const uint8_t *b = static_cast<const uint8_t *>(p);
  for (size_t i = 0; i < n; ++i) {
    if (b[i] != sentinel) return false;
  }
  return true;
}

static std::vector<ascend_model::TouchRecord> TouchesOf(const char *buffer, Access access) {
  std::vector<ascend_model::TouchRecord> out;
  for (const auto &t : ascend_model::g_touches) {
    if (t.buffer == buffer && t.access == access) out.push_back(t);
  }
  return out;
}

static uint16_t HalfBitsOf(half h) {
  uint16_t b;
  std::memcpy(&b, &h, 2);
  return b;
}

// ---- DataCopy with Nd2NzParams ---------------------------------------------------------------------
static void TestNd2Nz() {
  // A 5 x 20 half matrix inside rows of 24: C0 = 16, so two column groups, the second padded.
  GlobalTensor<half> gm = Global<half>(5 * 24 * 2, "GM:nd");
  for (int n = 0; n < 5; ++n) {
    for (int d = 0; d < 24; ++d) Host(gm)[n * 24 + d] = half(static_cast<float>(n * 100 + d));
  }
  LocalTensor<half> l1 = Local<half>(Space::kL1, TPosition::A1, 2 * 16 * 32, "l1");
  Nd2NzParams p;
  p.ndNum = 1;
  p.nValue = 5;
  p.dValue = 20;
  p.srcNdMatrixStride = 0;
  p.srcDValue = 24;
  p.dstNzC0Stride = 16;  // the next column group starts 16 rows (of 32 bytes) further
  p.dstNzNStride = 1;
  p.dstNzMatrixStride = 0;
  ascend_model::g_touches.clear();
  DataCopy(l1, gm, p);
  bool ok = true;
  for (int g = 0; g < 2; ++g) {
    for (int n = 0; n < 5; ++n) {
      for (int c = 0; c < 16; ++c) {
        const int d = g * 16 + c;
        const float want = d < 20 ? static_cast<float>(n * 100 + d) : 0.0f;
        ok = ok && static_cast<float>(Host(l1)[g * 16 * 16 + n * 16 + c]) == want;
      }
    }
  }
  CHECK(ok);
  // Rows 5..15 of each group are not written.
  CHECK(Untouched(Host(l1) + 5 * 16, 11 * 32, 0xAB));
  CHECK(Untouched(Host(l1) + 16 * 16 + 5 * 16, 11 * 32, 0xAB));
  const auto w = TouchesOf("l1", Access::kWrite);
  CHECK(w.size() == 2 && w[0].offset == 0 && w[0].bytes == 5 * 32 && w[1].offset == 16 * 32 && w[1].bytes == 5 * 32);
  const auto r = TouchesOf("GM:nd", Access::kRead);
  CHECK(r.size() == 5 && r[1].offset == 48 && r[1].bytes == 40);
  CHECK(!w.empty() && w[0].pipe == Pipe::kMTE2);

  // Two ND matrices (ndNum 2) with matrix strides, and a row stride of 2 blocks (dstNzNStride).
  GlobalTensor<half> gm2 = Global<half>(2 * 3 * 16 * 2, "GM:nd2");
  for (int i = 0; i < 2 * 3 * 16; ++i) Host(gm2)[i] = half(static_cast<float>(i));
  LocalTensor<half> l1b = Local<half>(Space::kL1, TPosition::B1, 4096, "l1b");
  Nd2NzParams q;
  q.ndNum = 2;
  q.nValue = 3;
  q.dValue = 16;
  q.srcNdMatrixStride = 48;   // elements
  q.srcDValue = 16;
  q.dstNzC0Stride = 8;
  q.dstNzNStride = 2;
  q.dstNzMatrixStride = 512;  // elements
  DataCopy(l1b, gm2, q);
  ok = true;
  for (int i = 0; i < 2; ++i) {
    for (int n = 0; n < 3; ++n) {
      for (int c = 0; c < 16; ++c) {
        ok = ok && static_cast<float>(Host(l1b)[i * 512 + n * 2 * 16 + c]) == static_cast<float>(i * 48 + n * 16 + c);
      }
    }
  }
  CHECK(ok);
  CHECK(Untouched(Host(l1b) + 16, 32, 0xAB));  // the skipped block between rows 0 and 1

  // Checks: overlapping rows, out-of-range and misaligned parameters, a wrong position.
  Nd2NzParams bad = p;
  bad.dstNzC0Stride = 3;  // the second group's rows land on rows 3, 4 of the first
  ExpectFail("Nd2Nz overlapping groups", [&] { DataCopy(l1, gm, bad); }, "overlap");
  bad = p;
  bad.nValue = 16385;
  ExpectFail("Nd2Nz nValue range", [&] { DataCopy(l1, gm, bad); }, "nValue = 16385");
  bad = p;
  bad.dstNzNStride = 0;
  ExpectFail("Nd2Nz dstNzNStride 0", [&] { DataCopy(l1, gm, bad); }, "dstNzNStride = 0");
  ExpectFail("Nd2Nz misaligned dst", [&] { DataCopy(l1[8], gm, p); }, "32-byte aligned");
  LocalTensor<half> ub = Local<half>(Space::kUB, TPosition::VECIN, 4096, "ubNd");
  ExpectFail("Nd2Nz into UB", [&] { DataCopy(ub, gm, p); }, "must be in L1");
  bad = p;
  bad.nValue = 0;
  ascend_model::g_touches.clear();
  DataCopy(l1, gm, bad);  // NOP
  CHECK(ascend_model::g_touches.empty());
  // A copy past the end of the L1 buffer is caught at Touch (bounds), before anything is written.
  bad = p;
  bad.dstNzC0Stride = 64;  // group 1 at 64 rows of 32 bytes: past the 1 KiB buffer
  ExpectFail("Nd2Nz past its buffer", [&] { DataCopy(l1, gm, bad); }, "outside 'l1'");
}

// ---- LoadData ----------------------------------------------------------------------------------------
static void TestLoadData() {
  LocalTensor<half> l1 = Local<half>(Space::kL1, TPosition::A1, 4 * 512, "l1ld");
  for (int i = 0; i < 4 * 256; ++i) Host(l1)[i] = half(static_cast<float>(i));
  LocalTensor<half> l0a = Local<half>(Space::kL0A, TPosition::A2, 4 * 512, "l0a");
  LoadData2DParams p;
  p.startIndex = 1;
  p.repeatTimes = 2;
  p.srcStride = 2;
  p.dstGap = 1;
  p.ifTranspose = false;
  ascend_model::g_touches.clear();
  LoadData(l0a, l1, p);
  bool ok = true;
  for (int e = 0; e < 256; ++e) {
    ok = ok && static_cast<float>(Host(l0a)[e]) == static_cast<float>(256 + e);            // src fractal 1
    ok = ok && static_cast<float>(Host(l0a)[2 * 256 + e]) == static_cast<float>(3 * 256 + e);  // src fractal 3
  }
  CHECK(ok);
  CHECK(Untouched(Host(l0a) + 256, 512, 0xAB));  // the dstGap fractal
  CHECK(Untouched(Host(l0a) + 3 * 256, 512, 0xAB));
  const auto w = TouchesOf("l0a", Access::kWrite);
  CHECK(w.size() == 2 && w[0].pipe == Pipe::kMTE1 && w[1].offset == 1024);

  // Transposed: each 16 x 16 fractal flips (b16 only).
  LocalTensor<half> l0b = Local<half>(Space::kL0B, TPosition::B2, 2 * 512, "l0b");
  LoadData2DParams t;
  t.startIndex = 0;
  t.repeatTimes = 2;
  t.srcStride = 1;
  t.ifTranspose = true;
  LoadData(l0b, l1, t);
  ok = true;
  for (int f = 0; f < 2; ++f) {
    for (int r = 0; r < 16; ++r) {
      for (int c = 0; c < 16; ++c) {
        ok = ok && static_cast<float>(Host(l0b)[f * 256 + r * 16 + c]) == static_cast<float>(f * 256 + c * 16 + r);
      }
    }
  }
  CHECK(ok);

  // From GM (MTE2): the same fractal walk.
  GlobalTensor<half> gm = Global<half>(4 * 512, "GM:ld");
  for (int i = 0; i < 4 * 256; ++i) Host(gm)[i] = half(static_cast<float>(-i));
  LoadData2DParams g;
  g.startIndex = 3;
  g.repeatTimes = 1;
  ascend_model::g_touches.clear();
  LoadData(l0b, gm, g);
  CHECK(static_cast<float>(Host(l0b)[5]) == static_cast<float>(-(3 * 256 + 5)));
  CHECK(TouchesOf("l0b", Access::kWrite).size() == 1 && TouchesOf("l0b", Access::kWrite)[0].pipe == Pipe::kMTE2);
  ExpectFail("LoadData transpose from GM", [&] { LoadData(l0b, gm, t); }, "L1 source");

  ExpectFail("LoadData dst not 512-aligned", [&] { LoadData(l0a[128], l1, p); }, "512-byte aligned");
  LocalTensor<half> ub = Local<half>(Space::kUB, TPosition::VECCALC, 4096, "ubLd");
  ExpectFail("LoadData into a VEC buffer", [&] { LoadData(ub, l1, p); }, "must be in L0A (A2) or L0B (B2)");
  LocalTensor<float> l1f = Local<float>(Space::kL1, TPosition::A1, 4 * 512, "l1f");
  LocalTensor<float> l0af = Local<float>(Space::kL0A, TPosition::A2, 4 * 512, "l0af");
  ExpectFail("LoadData transpose of b32", [&] { LoadData(l0af, l1f, t); }, "16-bit");
  LoadData2DParams big = p;
  big.repeatTimes = 4;  // fractals 1, 3, 5, 7: past the 4-fractal L1 buffer
  ExpectFail("LoadData past its buffer", [&] { LoadData(l0a, l1, big); }, "outside 'l1ld'");
}

// ---- Mmad ----------------------------------------------------------------------------------------------
// Packs a row-major M x K matrix into Zz (L0A) and a row-major K x N matrix into Zn (L0B) by the
// documented reshape / transpose chains, then compares Mmad's L0C (Nz) with a plain loop.
static void MmadCase(int m, int n, int k, bool accumulate) {
  const int m1 = (m + 15) / 16, n1 = (n + 15) / 16, k1 = (k + 15) / 16;
  std::mt19937 rng(static_cast<unsigned>(m * 131 + n * 7 + k));
  std::uniform_int_distribution<int> val(-8, 8);
  std::vector<float> a(m * k), b(k * n), c0(m * n);
  for (auto &v : a) v = static_cast<float>(val(rng));
  for (auto &v : b) v = static_cast<float>(val(rng));
  for (auto &v : c0) v = static_cast<float>(val(rng));
  LocalTensor<half> l0a = Local<half>(Space::kL0A, TPosition::A2, 65536, "mmA");
  LocalTensor<half> l0b = Local<half>(Space::kL0B, TPosition::B2, 65536, "mmB");
  LocalTensor<float> l0c = Local<float>(Space::kL0C, TPosition::CO1, 131072, "mmC");
  // (M, K) -> (M1, M0, K1, K0) -> (M1, K1, M0, K0); padding positions hold NaN: Mmad must ignore them.
  for (int i = 0; i < m1 * 16; ++i) {
    for (int kk = 0; kk < k1 * 16; ++kk) {
      const float v = (i < m && kk < k) ? a[i * k + kk] : NAN;
      if (m == 1) {
        if (i == 0 && kk < k) Host(l0a)[kk] = half(v);  // GEMV: A as one ND row
      } else {
        Host(l0a)[(((i / 16) * k1 + kk / 16) * 16 + i % 16) * 16 + kk % 16] = half(v);
      }
    }
  }
  // (K, N) -> (K1, K0, N1, N0) -> (K1, N1, N0, K0)
  for (int kk = 0; kk < k1 * 16; ++kk) {
    for (int j = 0; j < n1 * 16; ++j) {
      const float v = (kk < k && j < n) ? b[kk * n + j] : NAN;
      Host(l0b)[(((kk / 16) * n1 + j / 16) * 16 + j % 16) * 16 + kk % 16] = half(v);
    }
  }
  // C in Nz: (M, N) -> (M1, M0, N1, N0) -> (N1, M1, M0, N0)
  auto cAt = [&](int i, int j) { return ((j / 16) * m1 + i / 16) * 256 + (i % 16) * 16 + j % 16; };
  if (accumulate) {
    for (int i = 0; i < m; ++i) {
      for (int j = 0; j < n; ++j) Host(l0c)[cAt(i, j)] = c0[i * n + j];
    }
  }
  MmadParams p;
  p.m = static_cast<uint16_t>(m);
  p.n = static_cast<uint16_t>(n);
  p.k = static_cast<uint16_t>(k);
  p.cmatrixInitVal = !accumulate;
  ascend_model::g_macs = 0;
  Mmad(l0c, l0a, l0b, p);
  bool ok = true;
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      float want = accumulate ? c0[i * n + j] : 0.0f;  // small integers: every fp32 sum is exact
      for (int kk = 0; kk < k; ++kk) want += a[i * k + kk] * b[kk * n + j];
      ok = ok && Host(l0c)[cAt(i, j)] == want;
    }
  }
  if (!ok) std::printf("Mmad m=%d n=%d k=%d accumulate=%d\n", m, n, k, accumulate);
  CHECK(ok);
  CHECK(ascend_model::g_macs == static_cast<uint64_t>(m1 * n1 * k1));
}

static void TestMmad() {
  MmadCase(16, 16, 16, false);
  MmadCase(30, 40, 70, false);  // none a multiple of 16
  MmadCase(128, 128, 128, false);
  MmadCase(1, 32, 48, false);  // GEMV
  MmadCase(20, 48, 32, true);  // C += A * B
  LocalTensor<half> a = Local<half>(Space::kL0A, TPosition::A2, 8192, "mA");
  LocalTensor<half> b = Local<half>(Space::kL0B, TPosition::B2, 8192, "mB");
  LocalTensor<float> c = Local<float>(Space::kL0C, TPosition::CO1, 16384, "mC");
  MmadParams p;
  p.m = 16;
  p.n = 16;
  p.k = 16;
  MmadParams bad = p;
  bad.m = 5000;
  ExpectFail("Mmad m range", [&] { Mmad(c, a, b, bad); }, "m = 5000");
  ExpectFail("Mmad operands swapped", [&] { Mmad(c, b, a, p); }, "fm ('mB') must be in L0A");
  ExpectFail("Mmad fm misaligned", [&] { Mmad(c, a[16], b, p); }, "512-byte aligned");
  bad = p;
  bad.k = 48;  // 3 x 1 fractals of B = 1536 bytes: fine; A: 1 x 3 fractals fine; make it too big:
  bad.n = 272;  // 17 column blocks of B: 3 * 17 * 512 bytes > 8 KiB
  ExpectFail("Mmad past L0B", [&] { Mmad(c, a, b, bad); }, "outside 'mB'");
}

// ---- the Cube chain as the kernel uses it: Nd2Nz -> LoadData -> Mmad -> Fixpipe = Q * K^T ------------
static void CubeChain(int rows, int keys, int d, bool wrongFixStride, std::vector<float> *out,
                      std::vector<float> *want) {
  const int rowsAligned = (rows + 15) / 16 * 16, pageKeys = 128;
  std::mt19937 rng(static_cast<unsigned>(rows * 1000 + keys + d));
  std::uniform_int_distribution<int> val(-8, 8);
  // Query rows with a row pitch larger than d (several heads per token), keys likewise.
  const int qPitch = d + 16, kPitch = d + 32;
  GlobalTensor<half> q = Global<half>(static_cast<uint64_t>(rows) * qPitch * 2, "GM:q");
  GlobalTensor<half> kg = Global<half>(static_cast<uint64_t>(keys) * kPitch * 2, "GM:k");
  std::vector<float> qf(rows * d), kf(keys * d);
  for (int r = 0; r < rows; ++r) {
    for (int j = 0; j < d; ++j) Host(q)[r * qPitch + j] = half(qf[r * d + j] = static_cast<float>(val(rng)) * 0.25f);
  }
  for (int n = 0; n < keys; ++n) {
    for (int j = 0; j < d; ++j) Host(kg)[n * kPitch + j] = half(kf[n * d + j] = static_cast<float>(val(rng)) * 0.25f);
  }
  LocalTensor<half> qL1 = Local<half>(Space::kL1, TPosition::A1, 128 * 128 * 2, "qL1");
  LocalTensor<half> kL1 = Local<half>(Space::kL1, TPosition::B1, 128 * 128 * 2, "kL1");
  LocalTensor<half> qL0a = Local<half>(Space::kL0A, TPosition::A2, 128 * 128 * 2, "qL0a");
  LocalTensor<half> kL0b = Local<half>(Space::kL0B, TPosition::B2, 128 * 128 * 2, "kL0b");
  LocalTensor<float> cL0c = Local<float>(Space::kL0C, TPosition::CO1, 128 * 128 * 4, "cL0c");
  GlobalTensor<float> res = Global<float>(static_cast<uint64_t>(rows) * pageKeys * 4, "GM:result");

  Nd2NzParams qc;
  qc.ndNum = 1;
  qc.nValue = static_cast<uint16_t>(rows);
  qc.dValue = static_cast<uint16_t>(d);
  qc.srcDValue = static_cast<uint16_t>(qPitch);
  qc.dstNzC0Stride = static_cast<uint16_t>(rowsAligned);
  qc.dstNzNStride = 1;
  DataCopy(qL1, q, qc);
  LoadData2DParams ql;
  ql.repeatTimes = static_cast<uint8_t>(d / 16);
  ql.srcStride = static_cast<uint16_t>(rowsAligned / 16);
  for (int band = 0; band < rowsAligned / 16; ++band) LoadData(qL0a[band * 16 * d], qL1[band * 16 * 16], ql);

  Nd2NzParams kc;
  kc.ndNum = 1;
  kc.nValue = static_cast<uint16_t>(keys);
  kc.dValue = static_cast<uint16_t>(d);
  kc.srcDValue = static_cast<uint16_t>(kPitch);
  kc.dstNzC0Stride = static_cast<uint16_t>(pageKeys);
  kc.dstNzNStride = 1;
  // Keys past `keys` are stale: zero them so the check below can include them.
  std::memset(Host(kL1), 0, 128 * 128 * 2);
  DataCopy(kL1, kg, kc);
  LoadData2DParams kl;
  kl.repeatTimes = static_cast<uint8_t>((pageKeys / 16) * (d / 16));
  kl.srcStride = 1;
  LoadData(kL0b, kL1, kl);

  MmadParams mm;
  mm.m = static_cast<uint16_t>(rowsAligned);
  mm.n = static_cast<uint16_t>(pageKeys);
  mm.k = static_cast<uint16_t>(d);
  Mmad(cL0c, qL0a, kL0b, mm);

  FixpipeParamsV220 fix;
  fix.nSize = static_cast<uint16_t>(pageKeys);
  fix.mSize = static_cast<uint16_t>(rows);
  fix.srcStride = static_cast<uint16_t>(wrongFixStride ? rows : rowsAligned);
  fix.dstStride = static_cast<uint32_t>(pageKeys);
  fix.quantPre = QuantMode_t::NoQuant;
  fix.ndNum = 1;
  Fixpipe(res, cL0c, fix);

  out->assign(Host(res), Host(res) + rows * pageKeys);
  want->assign(rows * pageKeys, 0.0f);
  for (int r = 0; r < rows; ++r) {
    for (int n = 0; n < keys; ++n) {
      float s = 0.0f;  // multiples of 1/16 below 2^10: exact in fp32 in any order
      for (int j = 0; j < d; ++j) s += qf[r * d + j] * kf[n * d + j];
      (*want)[r * pageKeys + n] = s;
    }
  }
}

static void TestCubeChain() {
  std::vector<float> out, want;
  CubeChain(20, 128, 64, false, &out, &want);
  CHECK(out == want);
  CubeChain(128, 100, 128, false, &out, &want);  // a full tile and a partial page
  CHECK(out == want);
  CubeChain(4, 128, 16, false, &out, &want);  // decode: one token x 4 heads, D 16
  CHECK(out == want);
  CubeChain(20, 128, 64, true, &out, &want);  // a wrong Fixpipe srcStride changes the result
  CHECK(out != want);

  LocalTensor<float> c = Local<float>(Space::kL0C, TPosition::CO1, 16384, "fixC");
  GlobalTensor<float> g = Global<float>(16384, "GM:fix");
  FixpipeParamsV220 f;
  f.nSize = 20;
  f.mSize = 16;
  f.srcStride = 16;
  f.dstStride = 32;
  ExpectFail("Fixpipe nSize not a multiple of 16", [&] { Fixpipe(g, c, f); }, "nSize = 20");
  f.nSize = 16;
  f.dstStride = 0;
  ExpectFail("Fixpipe dstStride 0", [&] { Fixpipe(g, c, f); }, "dstStride");
  f.dstStride = 16;
  ExpectFail("Fixpipe src misaligned", [&] { Fixpipe(g, c[4], f); }, "64-byte aligned");
  f.quantPre = QuantMode_t::F322F16;
  ExpectFail("Fixpipe quant mismatch", [&] { Fixpipe(g, c, f); }, "not modelled");
  ascend_model::g_touches.clear();
  f.quantPre = QuantMode_t::NoQuant;
  Fixpipe(g, c, f);
  CHECK(!ascend_model::g_touches.empty() && ascend_model::g_touches.back().pipe == Pipe::kFIX);
  // F322BF16 with ReLU: (m, n) = (1, 2) of a 16 x 16 NZ block, rounded to nearest even, negatives 0.
  Host(c)[1 * 16 + 2] = 1.0f + 0x1p-8f + 0x1p-20f;
  Host(c)[1 * 16 + 3] = -5.0f;
  GlobalTensor<bfloat16_t> gb = Global<bfloat16_t>(1024, "GM:fixBf16");
  FixpipeParamsV220 fb(16, 2, 16, 16, true);
  fb.quantPre = QuantMode_t::F322BF16;
  Fixpipe(gb, c, fb);
  uint16_t bits[2];
  std::memcpy(bits, Host(gb) + 16 + 2, 4);
  CHECK(bits[0] == 0x3F81 && bits[1] == 0x0000);
}

// ---- DataCopy (count) and DataCopyPad ------------------------------------------------------------------
static void TestDataCopyPad() {
  GlobalTensor<float> g = Global<float>(16384, "GM:pad");
  for (int i = 0; i < 1024; ++i) Host(g)[i] = static_cast<float>(i);
  LocalTensor<float> ub = Local<float>(Space::kUB, TPosition::VECIN, 4096, "ubPad");

  // 3 rows of 5 floats, 2 floats apart in GM (srcStride 8 bytes), one spare block between UB rows.
  DataCopyExtParams p{3, 5 * 4, 8, 1, 0};
  DataCopyPadExtParams<float> none{false, 0, 0, 0.0f};
  ascend_model::g_touches.clear();
  DataCopyPad(ub, g, p, none);
  bool ok = true;
  for (int r = 0; r < 3; ++r) {
    for (int e = 0; e < 5; ++e) ok = ok && Host(ub)[r * 16 + e] == static_cast<float>(r * 7 + e);
    for (int e = 5; e < 8; ++e) ok = ok && Host(ub)[r * 16 + e] == static_cast<float>(r * 7);  // dummy = first
  }
  CHECK(ok);
  CHECK(Untouched(Host(ub) + 8, 32, 0xAB) && Untouched(Host(ub) + 24, 32, 0xAB));  // the dstStride blocks
  const auto rd = TouchesOf("GM:pad", Access::kRead);
  CHECK(rd.size() == 3 && rd[1].offset == 28 && rd[1].bytes == 20 && rd[0].pipe == Pipe::kMTE2);
  const auto wr = TouchesOf("ubPad", Access::kWrite);
  CHECK(wr.size() == 3 && wr[2].offset == 128 && wr[2].bytes == 32);

  // Left / right padding with a value: [-7, d0..d4, -7, -7] fills exactly one block per row.
  DataCopyExtParams p2{2, 5 * 4, 0, 0, 0};
  DataCopyPadExtParams<float> pad{true, 1, 2, -7.0f};
  DataCopyPad(ub, g, p2, pad);
  ok = true;
  for (int r = 0; r < 2; ++r) {
    ok = ok && Host(ub)[r * 8] == -7.0f && Host(ub)[r * 8 + 6] == -7.0f && Host(ub)[r * 8 + 7] == -7.0f;
    for (int e = 0; e < 5; ++e) ok = ok && Host(ub)[r * 8 + 1 + e] == static_cast<float>(r * 5 + e);
  }
  CHECK(ok);

  // int8 rows of 128 bytes: aligned, so UB rows are contiguous.
  GlobalTensor<int8_t> g8 = Global<int8_t>(1024, "GM:pad8");
  for (int i = 0; i < 1024; ++i) Host(g8)[i] = static_cast<int8_t>(i % 251 - 125);
  LocalTensor<int8_t> u8 = Local<int8_t>(Space::kUB, TPosition::VECIN, 1024, "ubPad8");
  DataCopyExtParams p8{3, 128, 64, 0, 0};
  DataCopyPadExtParams<int8_t> pad8{false, 0, 0, 0};
  DataCopyPad(u8, g8, p8, pad8);
  ok = true;
  for (int r = 0; r < 3; ++r) {
    for (int e = 0; e < 128; ++e) ok = ok && Host(u8)[r * 128 + e] == Host(g8)[r * 192 + e];
  }
  CHECK(ok);

  // UB -> GM: only blockLen bytes per row reach GM; UB rows are 32-byte aligned plus srcStride blocks.
  GlobalTensor<float> out = Global<float>(256, "GM:padOut");
  for (int i = 0; i < 32; ++i) Host(ub)[i] = static_cast<float>(100 + i);
  DataCopyExtParams po{2, 3 * 4, 1, 4, 0};
  DataCopyPad(out, ub, po);
  CHECK(Host(out)[0] == 100.0f && Host(out)[2] == 102.0f);
  CHECK(Host(out)[4] == 116.0f && Host(out)[6] == 118.0f);  // row 1: UB pitch 32 + 32 bytes; GM 12 + 4 bytes
  CHECK(Untouched(Host(out) + 3, 4, 0xCD) && Untouched(Host(out) + 7, 4, 0xCD));
  const auto gw = TouchesOf("GM:padOut", Access::kWrite);
  CHECK(gw.size() == 2 && gw[1].offset == 16 && gw[1].bytes == 12 && gw[1].pipe == Pipe::kMTE3);

  DataCopyExtParams odd{1, 6, 0, 0, 0};
  ExpectFail("DataCopyPad blockLen not element-sized", [&] { DataCopyPad(ub, g, odd, none); }, "blockLen = 6");
  ExpectFail("DataCopyPad misaligned UB", [&] { DataCopyPad(ub[2], g, p, none); }, "32-byte aligned");
  DataCopyExtParams many{4096, 4, 0, 0, 0};
  ExpectFail("DataCopyPad blockCount range", [&] { DataCopyPad(ub, g, many, none); }, "blockCount = 4096");
  DataCopyExtParams tooBig{1, 8192, 0, 0, 0};
  ExpectFail("DataCopyPad past its UB buffer", [&] { DataCopyPad(ub, g, tooBig, none); }, "outside 'ubPad'");

  // Contiguous DataCopy: count * sizeof(T) rounds down to whole 32-byte blocks (documented).
  LocalTensor<float> ub2 = Local<float>(Space::kUB, TPosition::VECIN, 256, "ubCopy");
  DataCopy(ub2, g, 12u);  // 48 bytes -> 32
  CHECK(Host(ub2)[7] == 7.0f && Untouched(Host(ub2) + 8, 4, 0xAB));
  ExpectFail("DataCopy past its buffer", [&] { DataCopy(ub2, g, 128u); }, "outside 'ubCopy'");
}

// ---- Duplicate -----------------------------------------------------------------------------------------
static void TestDuplicate() {
  LocalTensor<float> ub = Local<float>(Space::kUB, TPosition::VECCALC, 1024, "ubDup");
  uint64_t mask[2] = {0xBull | (1ull << 40), 0};  // lanes 0, 1, 3 and 40
  ascend_model::g_touches.clear();
  Duplicate(ub, 5.0f, mask, 2, 1, 8);
  bool ok = true;
  for (int r = 0; r < 2; ++r) {
    for (int l = 0; l < 64; ++l) {
      const bool on = l == 0 || l == 1 || l == 3 || l == 40;
      ok = ok && (on ? Host(ub)[r * 64 + l] == 5.0f : Untouched(Host(ub) + r * 64 + l, 4, 0xAB));
    }
  }
  CHECK(ok);
  const auto w = TouchesOf("ubDup", Access::kWrite);
  uint64_t bytes = 0;
  for (const auto &t : w) bytes += t.bytes;
  CHECK(bytes == 2 * 4 * 4 && w.size() == 6 && w[0].pipe == Pipe::kV);  // lanes 0-1 merge; masked lanes untouched

  // half: lanes 64..127 are mask[1].
  LocalTensor<half> uh = Local<half>(Space::kUB, TPosition::VECCALC, 512, "ubDupH");
  uint64_t mh[2] = {0, 1ull << 5};
  Duplicate(uh, half(2.0f), mh, 1, 1, 8);
  CHECK(static_cast<float>(Host(uh)[69]) == 2.0f && Untouched(Host(uh), 138, 0xAB));

  // Block and repeat strides: 2 repeats, blocks 2 apart, repeats 16 blocks apart.
  LocalTensor<float> us = Local<float>(Space::kUB, TPosition::VECCALC, 4096, "ubDupS");
  Duplicate(us, 1.0f, static_cast<uint64_t>(16), 2, 2, 16);  // lanes 0..15: blocks 0, 1 of each repeat
  CHECK(Host(us)[0] == 1.0f && Host(us)[7] == 1.0f && Host(us)[16] == 1.0f && Host(us)[23] == 1.0f);
  CHECK(Untouched(Host(us) + 8, 32, 0xAB) && Untouched(Host(us) + 24, 4, 0xAB));
  CHECK(Host(us)[128] == 1.0f && Host(us)[144] == 1.0f && Untouched(Host(us) + 136, 32, 0xAB));

  // Count form: exactly `count` elements.
  ascend_model::g_repeats = 0;
  Duplicate(ub, -1.0f, 70);
  CHECK(Host(ub)[69] == -1.0f && Untouched(Host(ub) + 70, 4, 0xAB));
  CHECK(ascend_model::g_repeats == 2);

  ExpectFail("Duplicate with the mask register",
             [&] { Duplicate<float, false>(ub, 1.0f, static_cast<uint64_t>(64), 1, 1, 8); },
             "isSetMask = false");
  uint64_t wide[2] = {1, 1};
  ExpectFail("Duplicate mask[1] on 32-bit", [&] { Duplicate(ub, 1.0f, wide, 1, 1, 8); }, "mask[1] must be 0");
  ExpectFail("Duplicate misaligned dst", [&] { Duplicate(ub[3], 1.0f, 8); }, "32-byte aligned");
  ExpectFail("Duplicate block stride 0", [&] { Duplicate(ub, 1.0f, static_cast<uint64_t>(64), 1, 0, 8); },
             "dstBlockStride");
  ExpectFail("Duplicate past its buffer", [&] { Duplicate(ub, 1.0f, 300); }, "outside 'ubDup'");
}

// ---- Mul / Max -------------------------------------------------------------------------------------------
static void TestMulMax() {
  // The kernel's dequant: rows of 128 floats, each half times the matching half of one scale row
  // (repeat strides 16, 16, 0).
  const int rows = 3;
  LocalTensor<float> res = Local<float>(Space::kUB, TPosition::VECIN, rows * 128 * 4, "ubRes");
  LocalTensor<float> scale = Local<float>(Space::kUB, TPosition::VECCALC, 128 * 4, "ubScale");
  for (int i = 0; i < rows * 128; ++i) Host(res)[i] = static_cast<float>(i % 17) - 8.0f;
  for (int i = 0; i < 128; ++i) Host(scale)[i] = 0.5f + static_cast<float>(i) * 0.25f;
  std::vector<float> before(Host(res), Host(res) + rows * 128);
  ascend_model::g_repeats = 0;
  ascend_model::g_vectorOps.clear();
  Mul(res, res, scale, 64, rows, BinaryRepeatParams(1, 1, 1, 16, 16, 0));
  Mul(res[64], res[64], scale[64], 64, rows, BinaryRepeatParams(1, 1, 1, 16, 16, 0));
  bool ok = true;
  for (int i = 0; i < rows * 128; ++i) ok = ok && Host(res)[i] == before[i] * Host(scale)[i % 128];
  CHECK(ok);
  CHECK(ascend_model::g_repeats == 2 * rows);
  CHECK(ascend_model::g_vectorOps.size() == 1 && ascend_model::g_vectorOps["Mul/4/4"] == 2 * rows);

  // The kernel's pairwise max: dst contiguous 64-float rows, sources interleaved halves.
  LocalTensor<float> half64 = Local<float>(Space::kUB, TPosition::VECCALC, rows * 64 * 4, "ubHalfMax");
  Host(res)[64 + 5] = NAN;   // row 0, lane 5 of the right half (src1)
  Host(res)[128 + 3] = NAN;  // row 1, lane 3 of the left half (src0)
  Max(half64, res, res[64], 64, rows, BinaryRepeatParams(1, 1, 1, 8, 16, 16));
  ok = true;
  for (int r = 0; r < rows; ++r) {
    for (int l = 0; l < 64; ++l) {
      const float x = Host(res)[r * 128 + l], y = Host(res)[r * 128 + 64 + l];
      const float got = Host(half64)[r * 64 + l];
      ok = ok && ((r == 0 && l == 5) || (r == 1 && l == 3) ? std::isnan(got) : got == (x > y ? x : y));
    }
  }
  CHECK(ok);

  // A continuous mask of 10 lanes: lanes 10..63 are neither computed nor touched.
  LocalTensor<float> d = Local<float>(Space::kUB, TPosition::VECCALC, 512, "ubMulD");
  ascend_model::g_touches.clear();
  Mul(d, scale, scale, 10, 1, BinaryRepeatParams());
  CHECK(Host(d)[9] == Host(scale)[9] * Host(scale)[9] && Untouched(Host(d) + 10, 54 * 4, 0xAB));
  const auto w = TouchesOf("ubMulD", Access::kWrite);
  CHECK(w.size() == 1 && w[0].bytes == 40);
  // Count form: 100 elements = one full repeat + 36 lanes.
  Max(d, scale, scale, 100);
  CHECK(Host(d)[99] == Host(scale)[99] && Untouched(Host(d) + 100, 4, 0xAB));

  // half arithmetic rounds once to nearest even: 1.5 * (1 + 2^-10) = 1.5 + 1.5 ulp (a tie between
  // mantissas 0x201 and 0x202) -> 0x202 = 1.5 + 2^-9
  LocalTensor<half> h = Local<half>(Space::kUB, TPosition::VECCALC, 512, "ubMulH");
  Host(h)[0] = half(1.5f);
  Host(h)[128] = half(1.0009765625f);
  Mul(h, h, h[128], 1, 1, BinaryRepeatParams());
  CHECK(HalfBitsOf(Host(h)[0]) == 0x3E02 && static_cast<float>(Host(h)[0]) == 1.501953125f);

  // Across repeats: repeat 0 writes what repeat 1 reads as src0 (not allowed) ...
  LocalTensor<float> x = Local<float>(Space::kUB, TPosition::VECCALC, 512, "ubChainX");
  LocalTensor<float> y = Local<float>(Space::kUB, TPosition::VECCALC, 512, "ubChainY");
  for (int i = 0; i < 128; ++i) {
    Host(x)[i] = static_cast<float>(i % 7 + 1);
    Host(y)[i] = static_cast<float>(i % 5 + 2);
  }
  ExpectFail("Mul dst feeding a later src0", [&] { Mul(x, x, y, 64, 2, BinaryRepeatParams(1, 1, 1, 8, 0, 8)); },
             "later repeat 1");
  // ... but dst may feed src1 when src1RepStride is 0 (documented): repeat 1 sees repeat 0's result.
  std::vector<float> x0(Host(x), Host(x) + 128);
  Mul(x, y, x, 64, 2, BinaryRepeatParams(1, 1, 1, 8, 8, 0));
  ok = true;
  for (int l = 0; l < 64; ++l) {
    const float first = Host(y)[l] * x0[l];
    ok = ok && Host(x)[l] == first && Host(x)[64 + l] == Host(y)[64 + l] * first;
  }
  CHECK(ok);
  ExpectFail("Mul partial overlap", [&] { Mul(res[8], res, scale, 64, 1, BinaryRepeatParams()); },
             "overlaps dst partially");
  ExpectFail("Max misaligned src1", [&] { Max(d, scale, scale[1], 64, 1, BinaryRepeatParams()); },
             "32-byte aligned");
  ExpectFail("Mul past its buffer", [&] { Mul(d, d, d, 64, 3, BinaryRepeatParams()); }, "outside 'ubMulD'");
  // Mul takes int16_t, half, int32_t and float on A2/A3 (tests/test_ascend_model_vector.py covers them).
  LocalTensor<uint32_t> du = Local<uint32_t>(Space::kUB, TPosition::VECCALC, 512, "ubMulU");
  ExpectFail("Mul uint32 not documented", [&] { Mul(du, du, du, 64, 1, BinaryRepeatParams()); }, "not uint32_t");
}

// ---- WholeReduceMax -------------------------------------------------------------------------------------
static void TestWholeReduceMax() {
  const int rows = 4;
  LocalTensor<float> src = Local<float>(Space::kUB, TPosition::VECCALC, rows * 64 * 4, "ubRedSrc");
  LocalTensor<float> dst = Local<float>(Space::kUB, TPosition::VECCALC, 256, "ubRedDst");
  for (int r = 0; r < rows; ++r) {
    for (int l = 0; l < 64; ++l) Host(src)[r * 64 + l] = static_cast<float>((l * 37 + r * 11) % 64) - 30.0f;
  }
  Host(src)[2 * 64 + 50] = 1000.0f;
  Host(src)[3 * 64 + 7] = NAN;
  WholeReduceMax(dst, src, 64, rows, 1, 1, 8, ReduceOrder::ORDER_ONLY_VALUE);
  CHECK(Host(dst)[0] == 33.0f && Host(dst)[1] == 33.0f && Host(dst)[2] == 1000.0f && std::isnan(Host(dst)[3]));
  CHECK(Untouched(Host(dst) + 4, 4, 0xAB));
  // Mask 10: only lanes 0..9; dstRepStride 2 (units of one float for ORDER_ONLY_VALUE).
  WholeReduceMax(dst, src, 10, 2, 2, 1, 8, ReduceOrder::ORDER_ONLY_VALUE);
  float want0 = -1e9f, want1 = -1e9f;
  for (int l = 0; l < 10; ++l) {
    want0 = std::max(want0, Host(src)[l]);
    want1 = std::max(want1, Host(src)[64 + l]);
  }
  CHECK(Host(dst)[0] == want0 && Host(dst)[2] == want1 && Host(dst)[1] == 33.0f);
  // [value, index] pairs: the index in the bits of a float.
  WholeReduceMax(dst, src, 64, 3, 1, 1, 8, ReduceOrder::ORDER_VALUE_INDEX);
  uint32_t idx;
  std::memcpy(&idx, &Host(dst)[5], 4);
  CHECK(Host(dst)[4] == 1000.0f && idx == 50);
  ExpectFail("WholeReduceMax repeatTime range", [&] { WholeReduceMax(dst, src, 64, 300, 1, 1, 8); },
             "repeatTime = 300");
  ExpectFail("WholeReduceMax src past its buffer",
             [&] { WholeReduceMax(dst, src, 64, rows + 1, 1, 1, 8, ReduceOrder::ORDER_ONLY_VALUE); },
             "outside 'ubRedSrc'");
}

// ---- Gather --------------------------------------------------------------------------------------------
static void TestGather() {
  // The kernel's transpose: colMax is column-major [cols][rows]; offsets pick row-major order.
  const int rows = 5, cols = 3, colPitch = 8;
  LocalTensor<float> colMax = Local<float>(Space::kUB, TPosition::VECCALC, 1024, "ubColMax");
  LocalTensor<float> out = Local<float>(Space::kUB, TPosition::VECOUT, 1024, "ubRows");
  LocalTensor<uint32_t> off = Local<uint32_t>(Space::kUB, TPosition::VECCALC, 1024, "ubOffsets");
  for (int c = 0; c < cols; ++c) {
    for (int r = 0; r < rows; ++r) Host(colMax)[c * colPitch + r] = static_cast<float>(r * 10 + c);
  }
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) Host(off)[r * cols + c] = static_cast<uint32_t>((c * colPitch + r) * 4);
  }
  ascend_model::g_touches.clear();
  Gather(out, colMax, off, 0, rows * cols);
  bool ok = true;
  for (int i = 0; i < rows * cols; ++i) ok = ok && Host(out)[i] == static_cast<float>((i / cols) * 10 + i % cols);
  CHECK(ok);
  CHECK(Untouched(Host(out) + rows * cols, 4, 0xAB));
  const auto rd = TouchesOf("ubColMax", Access::kRead);
  CHECK(rd.size() == 3 && rd[0].bytes == rows * 4 && rd[1].offset == colPitch * 4);  // the columns only
  // srcBaseAddr shifts every offset (bytes).
  Gather(out, colMax, off, colPitch * 4, 1);
  CHECK(Host(out)[0] == 1.0f);
  Host(off)[0] = 2;
  ExpectFail("Gather misaligned offset", [&] { Gather(out, colMax, off, 0, 1); }, "not element-aligned");
  Host(off)[0] = 0;
  ExpectFail("Gather into its own source", [&] { Gather(colMax, colMax, off, 0, 4); }, "share memory");
  Host(off)[0] = 4096;
  ExpectFail("Gather offset past its source", [&] { Gather(out, colMax, off, 0, 1); }, "outside 'ubColMax'");
}

// ---- Cast ----------------------------------------------------------------------------------------------
static uint16_t CastToBf16(float v, RoundMode mode) {
  LocalTensor<float> s = Local<float>(Space::kUB, TPosition::VECCALC, 32, "ubCastS");
  LocalTensor<bfloat16_t> d = Local<bfloat16_t>(Space::kUB, TPosition::VECCALC, 32, "ubCastD");
  Host(s)[0] = v;
  Cast(d, s, mode, 1);
  uint16_t b;
  std::memcpy(&b, Host(d), 2);
  return b;
}

static void TestCast() {
  // float -> bfloat16_t, CAST_RINT: ties go to the even mantissa.
  CHECK(CastToBf16(1.0f + 0x1p-8f, RoundMode::CAST_RINT) == 0x3F80);              // tie -> 1.0 (even)
  CHECK(CastToBf16(1.0f + 3 * 0x1p-8f, RoundMode::CAST_RINT) == 0x3F82);          // tie -> 1 + 2^-6 (even)
  CHECK(CastToBf16(1.0f + 0x1p-8f + 0x1p-20f, RoundMode::CAST_RINT) == 0x3F81);   // above the tie: up
  CHECK(CastToBf16(-1.0f - 0x1p-8f, RoundMode::CAST_RINT) == 0xBF80);
  CHECK(CastToBf16(3.3963e38f, RoundMode::CAST_RINT) == 0x7F80);                  // past max + ulp/2: inf
  CHECK(CastToBf16(3.3961e38f, RoundMode::CAST_RINT) == 0x7F7F);                  // below it: the largest
  CHECK((CastToBf16(NAN, RoundMode::CAST_RINT) & 0x7FC0) == 0x7FC0);              // stays a (quiet) NaN
  CHECK(CastToBf16(-1.0f - 0x1p-8f, RoundMode::CAST_FLOOR) == 0xBF81);
  CHECK(CastToBf16(-1.0f - 0x1p-8f, RoundMode::CAST_TRUNC) == 0xBF80);
  CHECK(CastToBf16(1.0f + 0x1p-9f, RoundMode::CAST_CEIL) == 0x3F81);
  CHECK(CastToBf16(1.0f + 0x1p-8f, RoundMode::CAST_ROUND) == 0x3F81);              // tie away from zero

  // int8_t -> half -> float -> bfloat16_t, as the kernel widens int8 keys: exact for all 256 values.
  LocalTensor<int8_t> i8 = Local<int8_t>(Space::kUB, TPosition::VECIN, 256, "ubI8");
  LocalTensor<half> h = Local<half>(Space::kUB, TPosition::VECCALC, 512, "ubH");
  LocalTensor<float> f = Local<float>(Space::kUB, TPosition::VECCALC, 1024, "ubF");
  LocalTensor<bfloat16_t> b = Local<bfloat16_t>(Space::kUB, TPosition::VECOUT, 512, "ubB");
  for (int i = 0; i < 256; ++i) Host(i8)[i] = static_cast<int8_t>(i - 128);
  ascend_model::g_repeats = 0;
  ascend_model::g_vectorOps.clear();
  Cast(h, i8, RoundMode::CAST_NONE, 256);
  Cast(f, h, RoundMode::CAST_NONE, 256);
  Cast(b, f, RoundMode::CAST_RINT, 256);
  bool ok = true;
  for (int i = 0; i < 256; ++i) {
    const float want = static_cast<float>(i - 128);
    ok = ok && static_cast<float>(Host(h)[i]) == want && Host(f)[i] == want && static_cast<float>(Host(b)[i]) == want;
  }
  CHECK(ok);
  CHECK(ascend_model::g_repeats == 2 + 4 + 4);  // repeats count the wider type: 512, 1024, 1024 bytes
  // ... and per instruction, keyed by the API and its dst / src element bytes
  CHECK(ascend_model::g_vectorOps.size() == 3 && ascend_model::g_vectorOps["Cast/2/1"] == 2 &&
        ascend_model::g_vectorOps["Cast/4/2"] == 4 && ascend_model::g_vectorOps["Cast/2/4"] == 4);

  // float -> half rounding agrees with the compiler's IEEE conversion to _Float16 (round to nearest even).
  LocalTensor<float> fs = Local<float>(Space::kUB, TPosition::VECCALC, 4096, "ubFS");
  LocalTensor<half> hd = Local<half>(Space::kUB, TPosition::VECCALC, 2048, "ubHD");
  std::mt19937 rng(7);
  std::uniform_int_distribution<uint32_t> bits(0, 0xFFFFFFFFu);
  ok = true;
  for (int round = 0; round < 64; ++round) {
    for (int i = 0; i < 1024; ++i) {
      uint32_t u = bits(rng);
      if (i % 4 == 0) u = (u & 0x807FFFFFu) | ((102u + (u >> 24) % 40) << 23);  // near the half range
      std::memcpy(&Host(fs)[i], &u, 4);
    }
    Cast(hd, fs, RoundMode::CAST_RINT, 1024);
    for (int i = 0; i < 1024; ++i) {
      const _Float16 ieee = static_cast<_Float16>(Host(fs)[i]);
      uint16_t want;
      std::memcpy(&want, &ieee, sizeof(want));
      const uint16_t got = HalfBitsOf(Host(hd)[i]);
      ok = ok && (got == want || (std::isnan(Host(fs)[i]) && (got & 0x7C00) == 0x7C00 && (got & 0x3FF)));
    }
  }
  CHECK(ok);
  Host(fs)[0] = 0x1p-25f;      // halfway between 0 and the smallest subnormal: even -> 0
  Host(fs)[1] = 3 * 0x1p-25f;  // halfway between 2^-24 and 2^-23: even -> 2^-23
  Host(fs)[2] = 65520.0f;      // halfway past the largest half: inf
  Cast(hd, fs, RoundMode::CAST_NONE, 3);
  CHECK(HalfBitsOf(Host(hd)[0]) == 0x0000 && HalfBitsOf(Host(hd)[1]) == 0x0002 && HalfBitsOf(Host(hd)[2]) == 0x7C00);

  ExpectFail("Cast float->bf16 CAST_NONE", [&] { Cast(b, f, RoundMode::CAST_NONE, 16); }, "not a supported");
  ExpectFail("Cast int8->half CAST_RINT", [&] { Cast(h, i8, RoundMode::CAST_RINT, 16); }, "not a supported");
  ExpectFail("Cast partial overlap", [&] { Cast(f.ReinterpretCast<bfloat16_t>()[16], f, RoundMode::CAST_RINT, 64); },
             "overlap");
  ExpectFail("Cast past its buffer", [&] { Cast(h, i8, RoundMode::CAST_NONE, 300); }, "outside 'ubI8'");
}

int main() {
  TestNd2Nz();
  TestLoadData();
  TestMmad();
  TestCubeChain();
  TestDataCopyPad();
  TestDuplicate();
  TestMulMax();
  TestWholeReduceMax();
  TestGather();
  TestCast();
  std::printf("%d passed, %d failed\n", g_passed, g_failed);
  return g_failed == 0 ? 0 : 1;
}
