// Kernels and their host program for tests/test_ascend_model_cube_quant.py: the Cube core's quantising
// output path on the CPU model (ascendc/cpu_model/), built with build_cpu_debug.sh --cce-auto-sync=off:
//   * DataCopy GM -> L1 with DataCopyParams for the uint64_t quantisation words ("DataCopy（GMToL1高维切分
//     数据搬运）"), DataCopy L1 -> Fixpipe Buffer (TPosition C2PIPE2GM, "DataCopy（L1ToFixpipe-Buffer数据搬运）");
//   * Mmad int8_t x int8_t -> int32_t and half x half -> float ("Mmad", table 7);
//   * Fixpipe L0C -> GM with scalar (deqScalar) and vector (cbufWorkspace) quantisation, NZ2ND and NZ2NZ
//     ("Fixpipe（L0C到GM数据搬运）", "随路量化", "随路量化与随路ReLU场景组合", "NZ2NZ");
//   * DataCopy L0C -> GM with DataCopyCO12DstParams and SetFixpipePreQuantFlag / SetFixPipeConfig /
//     SetFixpipeNz2ndFlag ("DataCopy（L0C到GM数据搬运）").
// `ascend_model_cube_quant_test <kernel> <path> <quantPre> <relu> <word>` runs one launch and prints the
// output ("out v0 v1 ..."); the test computes the documented result with numpy from the same inputs.
// A launch the model stops exits 1 with the message on stderr.
//
// Every sync call stands alone on its line, so that the strictness test can drop each one by its call
// site (ASCEND_MODEL_SKIP_SYNC_SITE=file:line:api).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "cpu_debug_program.h"
#include "tikicpulib.h"

using namespace AscendC;
using cpu_debug_program::Gm;

namespace {

constexpr int kM = 16;
constexpr int kN = 32;
std::string g_path;           // fix, fix_nz, dc, dc_nz; l1 (Fixpipe L0C -> L1, NZ), l1_row (CFG_ROW_MAJOR)
QuantMode_t g_quant = NoQuant;
bool g_relu = false;
uint64_t g_word = 0;          // the scalar quantisation word
int g_fbAddr = 0;             // byte address of the quantisation words in the Fixpipe Buffer
bool g_bt = false;            // W in GM is B (K x N, ND), loaded into L0B by LoadDataWithTranspose
int g_nSize = kN;             // nSize of the L0C -> GM copy (NZ2ND: the ND row keeps its pitch kN)
int g_sat = -1;               // CUBE_QUANT_SAT: SetSaturationFlag<FLOAT>(g_sat != 0) first (-1: untouched)
float g_aScale = 1.0f;        // CUBE_QUANT_A_SCALE: A's (floating) elements times this
int g_satSeen = -1;           // GetSaturationFlag<FLOAT>() just before the copy out

bool IsVector(QuantMode_t q) { return q == VDEQF16 || q == VQF322B8_PRE || q == VREQ8; }
bool IsScalar(QuantMode_t q) { return q == DEQF16 || q == QF322B8_PRE || q == REQ8; }

// C (kM x kN) = A (kM x K) * W.T (W: kN x K, ND in GM), then out by g_path. K = 32 bytes of TIn.
template <typename TIn, typename TAcc, typename TOut>
void QuantBody(GM_ADDR a, GM_ADDR w, GM_ADDR words, GM_ADDR out) {
  constexpr bool kInt4 = IsSameType<TIn, int4b_t>::value;
  constexpr int kK = kInt4 ? 64 : 32 / sizeof(TIn);
  // Nd2Nz counts int4b_t columns in bytes (two int4b_t as one int8_t, as CANN's mmad example does).
  constexpr int kKd = kInt4 ? kK / 2 : kK;
  InitSocState();
  if (g_sat >= 0) SetSaturationFlag<SaturationMode::FLOAT>(g_sat != 0);
  GlobalTensor<TIn> aGm, wGm;
  GlobalTensor<uint64_t> wordsGm;
  GlobalTensor<TOut> outGm;
  aGm.SetGlobalBuffer(reinterpret_cast<__gm__ TIn *>(a));
  wGm.SetGlobalBuffer(reinterpret_cast<__gm__ TIn *>(w));
  wordsGm.SetGlobalBuffer(reinterpret_cast<__gm__ uint64_t *>(words));
  outGm.SetGlobalBuffer(reinterpret_cast<__gm__ TOut *>(out));
  LocalTensor<TIn> a1(TPosition::A1, 0, kM * kK);
  LocalTensor<TIn> b1(TPosition::B1, 512, kN * kK);
  LocalTensor<uint64_t> q1(TPosition::C1, 2048, kN);
  LocalTensor<TIn> a2(TPosition::A2, 0, kM * kK);
  LocalTensor<TIn> b2(TPosition::B2, 0, kN * kK);
  LocalTensor<TAcc> c(TPosition::CO1, 0, kM * kN);

  DataCopy(a1, aGm, Nd2NzParams(1, kM, kKd, 0, kKd, kM, 1, 0));
  if (g_bt) {
    DataCopy(b1, wGm, Nd2NzParams(1, kK, kN, 0, kN, kK, 1, 0));  // B (K x N): NZ, column groups of 32 bytes
  } else {
    DataCopy(b1, wGm, Nd2NzParams(1, kN, kKd, 0, kKd, kN, 1, 0));  // W = B.T (N x K): rows n, Zn already
  }
  SetFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
  WaitFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
  // The words after the MTE2 -> MTE1 flag: only MTE2 -> FIX orders them before their FIX reader.
  DataCopy(q1, wordsGm, DataCopyParams(1, kN * sizeof(uint64_t) / 32, 0, 0));
  LoadData(a2, a1, LoadData2DParams(0, 1, 1, 0, 0, false, 0));
  if (g_bt) {
    // half: two 16 x 16 squares (one per 16 columns n); int8_t: one 32 x 32 square.
    LoadDataWithTranspose(b2, b1, LoadData2dTransposeParams(0, sizeof(TIn) == 1 ? 1 : 2, 1, 0, 0));
  } else {
    LoadData(b2, b1, LoadData2DParams(0, 2, 1, 0, 0, false, 0));
  }
  SetFlag<HardEvent::MTE1_M>(EVENT_ID0);
  WaitFlag<HardEvent::MTE1_M>(EVENT_ID0);
  MmadParams mm;
  mm.m = kM;
  mm.n = kN;
  mm.k = kK;
  Mmad(c, a2, b2, mm);
  SetFlag<HardEvent::M_FIX>(EVENT_ID0);
  WaitFlag<HardEvent::M_FIX>(EVENT_ID0);
  SetFlag<HardEvent::MTE2_FIX>(EVENT_ID0);
  WaitFlag<HardEvent::MTE2_FIX>(EVENT_ID0);
  g_satSeen = GetSaturationFlag<SaturationMode::FLOAT>() ? 1 : 0;

  // The Fixpipe's parameters for NZ2ND (dstStride: elements per row) or NZ out (32-byte units: one column
  // group of kM rows).
  FixpipeParamsV220 fp;
  fp.nSize = g_nSize;
  fp.mSize = kM;
  fp.srcStride = 16;
  fp.dstStride = g_path == "fix" ? kN : kM * 16 * sizeof(TOut) / 32;
  fp.quantPre = g_quant;
  fp.deqScalar = g_word;
  fp.reluEn = g_relu;
  fp.ndNum = 1;
  if (g_path == "l1" || g_path == "l1_row") {
    // Into L1 as NZ, then L1 -> GM as it is.
    constexpr uint32_t kOutL1 = 4096;
    LocalTensor<TOut> o1(TPosition::C1, kOutL1, kM * kN);
    if (g_path == "l1_row") {
      Fixpipe<TOut, TAcc, CFG_ROW_MAJOR>(o1, c, fp);
    } else if (IsVector(g_quant)) {
      Fixpipe<TOut, TAcc, CFG_NZ>(o1, c, q1, fp);
    } else {
      Fixpipe<TOut, TAcc, CFG_NZ>(o1, c, fp);
    }
    SetFlag<HardEvent::FIX_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::FIX_MTE3>(EVENT_ID0);
    DataCopy(outGm, o1, kM * kN);
  } else if (g_path == "fix" || g_path == "fix_nz") {
    if (g_path == "fix_nz") {
      Fixpipe<TOut, TAcc, CFG_NZ>(outGm, c, fp);
    } else if (IsVector(g_quant)) {
      Fixpipe<TOut, TAcc, CFG_ROW_MAJOR>(outGm, c, q1, fp);
    } else {
      Fixpipe<TOut, TAcc, CFG_ROW_MAJOR>(outGm, c, fp);
    }
  } else {  // dc, dc_nz
    DataCopyCO12DstParams p;
    p.nSize = g_nSize;
    p.mSize = kM;
    p.srcStride = 16;
    p.dstStride = g_path == "dc" ? kN : kM * 16 * sizeof(TOut) / 32;
    p.quantPre = g_quant;
    p.reluPre = g_relu ? 1 : 0;
    p.nz2ndEn = g_path == "dc";
    if (g_path == "dc") SetFixpipeNz2ndFlag(1, 0, 0);
    if (IsScalar(g_quant)) SetFixpipePreQuantFlag(g_word);
    if (IsVector(g_quant)) {
      LocalTensor<uint64_t> fb(TPosition::C2PIPE2GM, g_fbAddr, kN);
      DataCopy(fb, q1, DataCopyParams(1, kN * sizeof(uint64_t) / 128, 0, 0));
      SetFixPipeConfig(fb);
    }
    DataCopy(outGm, c, p);
  }
}

}  // namespace

extern "C" __global__ __aicore__ __cube__ void q_i8_i8(GM_ADDR a, GM_ADDR w, GM_ADDR q, GM_ADDR out) {
  QuantBody<int8_t, int32_t, int8_t>(a, w, q, out);
}
extern "C" __global__ __aicore__ __cube__ void q_i8_u8(GM_ADDR a, GM_ADDR w, GM_ADDR q, GM_ADDR out) {
  QuantBody<int8_t, int32_t, uint8_t>(a, w, q, out);
}
extern "C" __global__ __aicore__ __cube__ void q_i8_f16(GM_ADDR a, GM_ADDR w, GM_ADDR q, GM_ADDR out) {
  QuantBody<int8_t, int32_t, half>(a, w, q, out);
}
extern "C" __global__ __aicore__ __cube__ void q_i8_i32(GM_ADDR a, GM_ADDR w, GM_ADDR q, GM_ADDR out) {
  QuantBody<int8_t, int32_t, int32_t>(a, w, q, out);
}
extern "C" __global__ __aicore__ __cube__ void q_i4_i32(GM_ADDR a, GM_ADDR w, GM_ADDR q, GM_ADDR out) {
  QuantBody<int4b_t, int32_t, int32_t>(a, w, q, out);
}
extern "C" __global__ __aicore__ __cube__ void q_f16_i8(GM_ADDR a, GM_ADDR w, GM_ADDR q, GM_ADDR out) {
  QuantBody<half, float, int8_t>(a, w, q, out);
}
extern "C" __global__ __aicore__ __cube__ void q_f16_u8(GM_ADDR a, GM_ADDR w, GM_ADDR q, GM_ADDR out) {
  QuantBody<half, float, uint8_t>(a, w, q, out);
}
extern "C" __global__ __aicore__ __cube__ void q_f16_f32(GM_ADDR a, GM_ADDR w, GM_ADDR q, GM_ADDR out) {
  QuantBody<half, float, float>(a, w, q, out);
}
extern "C" __global__ __aicore__ __cube__ void q_f16_f16(GM_ADDR a, GM_ADDR w, GM_ADDR q, GM_ADDR out) {
  QuantBody<half, float, half>(a, w, q, out);
}
extern "C" __global__ __aicore__ __cube__ void q_f16_bf16(GM_ADDR a, GM_ADDR w, GM_ADDR q, GM_ADDR out) {
  QuantBody<half, float, bfloat16_t>(a, w, q, out);
}

// TQue and TBuf at C2PIPE2GM (the Fixpipe Buffer, 2 KB): words GM -> L1 (TBuf<C1>) -> a TQue<C2PIPE2GM>
// tensor and a TBuf<C2PIPE2GM> tensor, then set as the quantisation tensor.
extern "C" __global__ __aicore__ __cube__ void fb_queue(GM_ADDR words) {
  TPipe pipe;
  TBuf<TPosition::C1> l1;
  TQue<TPosition::C2PIPE2GM, 1> qfb;
  TBuf<TPosition::C2PIPE2GM> tfb;
  pipe.InitBuffer(l1, 1024);
  pipe.InitBuffer(qfb, 1, 1024);
  pipe.InitBuffer(tfb, 1024);
  GlobalTensor<uint64_t> wordsGm;
  wordsGm.SetGlobalBuffer(reinterpret_cast<__gm__ uint64_t *>(words));
  LocalTensor<uint64_t> w1 = l1.Get<uint64_t>();
  DataCopy(w1, wordsGm, 128);
  SetFlag<HardEvent::MTE2_FIX>(EVENT_ID0);
  WaitFlag<HardEvent::MTE2_FIX>(EVENT_ID0);
  LocalTensor<uint64_t> f = qfb.AllocTensor<uint64_t>();
  DataCopy(f, w1, 128);
  qfb.EnQue(f);
  LocalTensor<uint64_t> g = qfb.DeQue<uint64_t>();
  SetFixPipeConfig(g);
  DataCopy(tfb.Get<uint64_t>(), w1, 128);
  SetFixPipeConfig(tfb.Get<uint64_t>());
  qfb.FreeTensor(g);
}

// Cast half <-> int4b_t on an AIV ("Cast.md", A2/A3 tables): 256 halves -> int4b_t (count form, or the
// continuous-mask form with 128 lanes, 2 repeats and {1, 1, 2, 8} when g_castMask) -> half; out: the 128
// int4b_t bytes and the 256 halves back.
int g_castMode = 1;
bool g_castMask = false;
uint32_t g_castCount = 256;
extern "C" __global__ __aicore__ __vector__ void cast_i4(GM_ADDR x, GM_ADDR packed, GM_ADDR back) {
  InitSocState();
  GlobalTensor<half> xGm, backGm;
  GlobalTensor<int8_t> packedGm;
  xGm.SetGlobalBuffer(reinterpret_cast<__gm__ half *>(x));
  backGm.SetGlobalBuffer(reinterpret_cast<__gm__ half *>(back));
  packedGm.SetGlobalBuffer(reinterpret_cast<__gm__ int8_t *>(packed));
  LocalTensor<half> xl(TPosition::VECIN, 0, 256);
  LocalTensor<int8_t> yl(TPosition::VECCALC, 512, 128);
  LocalTensor<half> zl(TPosition::VECOUT, 1024, 256);
  DataCopy(xl, xGm, 256);
  SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
  WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
  LocalTensor<int4b_t> y4 = yl.ReinterpretCast<int4b_t>();
  if (g_castMask) {
    Cast<int4b_t, half>(y4, xl, static_cast<RoundMode>(g_castMode), 128, 2, {1, 1, 2, 8});
  } else {
    Cast(y4, xl, static_cast<RoundMode>(g_castMode), g_castCount);
  }
  PipeBarrier<PIPE_V>();
  Cast(zl, y4, RoundMode::CAST_NONE, 256);
  SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
  WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
  DataCopy(packedGm, yl, 128);
  DataCopy(backGm, zl, 256);
}

namespace {

// The inputs the test recomputes: A (kM x K) and W (kN x K), small integers.
template <typename TIn>
void Fill(TIn *a, TIn *w, int k) {
  for (int i = 0; i < kM * k; ++i) a[i] = TIn(static_cast<float>((i * 7) % 9 - 4) * g_aScale);
  for (int i = 0; i < kN * k; ++i) w[i] = TIn(static_cast<float>((i * 5) % 11 - 5));
}
template <>
void Fill<int8_t>(int8_t *a, int8_t *w, int k) {
  for (int i = 0; i < kM * k; ++i) a[i] = static_cast<int8_t>((i * 7) % 9 - 4);
  for (int i = 0; i < kN * k; ++i) w[i] = static_cast<int8_t>((i * 5) % 11 - 5);
}

template <typename TOut>
void PrintOut(const TOut *o, int n) {
  std::printf("out");
  for (int i = 0; i < n; ++i) {
    if constexpr (std::is_same<TOut, half>::value || std::is_same<TOut, bfloat16_t>::value) {
      std::printf(" %.17g", static_cast<double>(static_cast<float>(o[i])));
    } else if constexpr (std::is_same<TOut, float>::value) {
      std::printf(" %.17g", static_cast<double>(o[i]));
    } else {
      std::printf(" %d", static_cast<int>(o[i]));
    }
  }
  std::printf("\n");
}

// The per-column words the test recomputes: column j gets scale 2^(j % 5 - 3) * (1 + (j % 3) / 4), with
// word bits 32-46 (N, MCB, Offset, Sign) from `high`.
void FillWords(uint64_t *q, uint64_t high) {
  for (int j = 0; j < kN; ++j) {
    float s = static_cast<float>(1 << (j % 5)) / 8.0f * (1.0f + static_cast<float>(j % 3) / 4.0f);
    uint32_t bits;
    std::memcpy(&bits, &s, 4);
    q[j] = bits | (high << 32);
  }
}

// int4b_t: the same formulas, two elements per byte (element 2i in the low nibble).
void FillInt4(uint8_t *a, uint8_t *w, int k) {
  for (int i = 0; i < kM * k; ++i) a[i / 2] |= static_cast<uint8_t>(((i * 7) % 9 - 4) & 0xF) << (4 * (i % 2));
  for (int i = 0; i < kN * k; ++i) w[i / 2] |= static_cast<uint8_t>(((i * 5) % 11 - 5) & 0xF) << (4 * (i % 2));
}

template <typename TIn, typename TOut>
int Launch(void (*kernel)(GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR), const char *name, uint64_t high) {
  constexpr bool kInt4 = IsSameType<TIn, int4b_t>::value;
  constexpr int kK = kInt4 ? 64 : 32 / sizeof(TIn);
  TIn *a = Gm<TIn>(kM * kK), *w = Gm<TIn>(kN * kK);
  uint64_t *q = Gm<uint64_t>(kN);
  TOut *out = Gm<TOut>(kM * kN);
  if constexpr (kInt4) {
    std::memset(a, 0, kM * kK);
    std::memset(w, 0, kN * kK);
    FillInt4(reinterpret_cast<uint8_t *>(a), reinterpret_cast<uint8_t *>(w), kK);
  } else {
    Fill<TIn>(a, w, kK);
  }
  FillWords(q, high);
  SetKernelMode(KernelMode::AIC_MODE);
  (void)name;
  ICPU_RUN_KF(kernel, 1, reinterpret_cast<uint8_t *>(a), reinterpret_cast<uint8_t *>(w),
              reinterpret_cast<uint8_t *>(q), reinterpret_cast<uint8_t *>(out));
  PrintOut(out, kM * kN);
  std::printf("sat %d\n", g_satSeen);
  return 0;
}

}  // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s <kernel> <path> <quantPre> <relu> <word hex> [high hex] [fbAddr]\n", argv[0]);
    return 2;
  }
  const std::string kernel = argv[1];
  if (kernel == "cast_i4") {  // cast_i4 <RoundMode> <mask 0/1> [count]
    g_castMode = std::atoi(argv[2]);
    g_castMask = argc > 3 && std::atoi(argv[3]) != 0;
    if (argc > 4) g_castCount = static_cast<uint32_t>(std::atoi(argv[4]));
    half *x = Gm<half>(256), *back = Gm<half>(256);
    int8_t *packed = Gm<int8_t>(128);
    for (int i = 0; i < 256; ++i) x[i] = half(static_cast<float>(i % 41 - 20) * 0.45f);
    SetKernelMode(KernelMode::AIV_MODE);
    ICPU_RUN_KF(cast_i4, 1, reinterpret_cast<uint8_t *>(x), reinterpret_cast<uint8_t *>(packed),
                reinterpret_cast<uint8_t *>(back));
    std::printf("packed");
    for (int i = 0; i < 128; ++i) std::printf(" %d", static_cast<int>(static_cast<uint8_t>(packed[i])));
    std::printf("\n");
    PrintOut(back, 256);
    return 0;
  }
  if (kernel == "fb_queue") {
    uint64_t *q = Gm<uint64_t>(128);
    for (int i = 0; i < 128; ++i) q[i] = 0x3F800000u;
    SetKernelMode(KernelMode::AIC_MODE);
    ICPU_RUN_KF(fb_queue, 1, reinterpret_cast<uint8_t *>(q));
    std::printf("ok\n");
    return 0;
  }
  g_path = argv[2];
  g_quant = static_cast<QuantMode_t>(std::atoi(argv[3]));
  g_relu = std::atoi(argv[4]) != 0;
  g_word = std::strtoull(argv[5], nullptr, 16);
  const uint64_t high = argc > 6 ? std::strtoull(argv[6], nullptr, 16) : 0;
  g_fbAddr = argc > 7 ? std::atoi(argv[7]) : 0;
  g_bt = argc > 8 && std::string(argv[8]) == "bt";
  if (argc > 9) g_nSize = std::atoi(argv[9]);
  if (const char *v = std::getenv("CUBE_QUANT_SAT")) g_sat = std::atoi(v);
  if (const char *v = std::getenv("CUBE_QUANT_A_SCALE")) g_aScale = static_cast<float>(std::atof(v));
  if (kernel == "i8_i8") return Launch<int8_t, int8_t>(q_i8_i8, "q_i8_i8", high);
  if (kernel == "i8_u8") return Launch<int8_t, uint8_t>(q_i8_u8, "q_i8_u8", high);
  if (kernel == "i8_f16") return Launch<int8_t, half>(q_i8_f16, "q_i8_f16", high);
  if (kernel == "i8_i32") return Launch<int8_t, int32_t>(q_i8_i32, "q_i8_i32", high);
  if (kernel == "i4_i32") return Launch<int4b_t, int32_t>(q_i4_i32, "q_i4_i32", high);
  if (kernel == "f16_i8") return Launch<half, int8_t>(q_f16_i8, "q_f16_i8", high);
  if (kernel == "f16_u8") return Launch<half, uint8_t>(q_f16_u8, "q_f16_u8", high);
  if (kernel == "f16_f32") return Launch<half, float>(q_f16_f32, "q_f16_f32", high);
  if (kernel == "f16_f16") return Launch<half, half>(q_f16_f16, "q_f16_f16", high);
  if (kernel == "f16_bf16") return Launch<half, bfloat16_t>(q_f16_bf16, "q_f16_bf16", high);
  std::fprintf(stderr, "unknown kernel %s\n", kernel.c_str());
  return 2;
}
