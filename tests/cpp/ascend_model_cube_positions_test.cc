// Kernels and their host program for tests/test_ascend_model_cube_positions.py: the Cube core's TQue / TBuf
// positions beyond A1/B1/A2/B2/CO1 (C1 = L1, C2 = BiasTable Buffer) and the instructions that use them,
// DataCopy L1 -> BiasTable ("DataCopy（L1ToBiasTable Buffer数据搬运）") and Mmad with a bias tensor ("Mmad",
// 传入bias的原型), built with ascendc/cpu_model/build_cpu_debug.sh --cce-auto-sync=off.
// `ascend_model_cube_positions_test <scenario> [variant]` runs one scenario and prints its results
// ("name v0 v1 ..."); the test computes the documented results with numpy from the same input formulas.
// A scenario the model stops exits 1 with the message on stderr.
//
// Every sync call stands alone on its line, so that the strictness test can drop each one by its call
// site (ASCEND_MODEL_SKIP_SYNC_SITE=file:line:api).
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cpu_debug_program.h"
#include "tikicpulib.h"

using namespace AscendC;
using cpu_debug_program::g_variant;
using cpu_debug_program::Gm;
using cpu_debug_program::Print;

namespace {

int g_case = 0;



// A 16 x 16 tile of A (ND in GM) and of W (ND, rows of W are columns of B: C = A @ W.T).
const Nd2NzParams kNd(1, 16, 16, 0, 16, 16, 1, 0);

LoadData2DParams OneFractal() {
  LoadData2DParams ld;
  ld.startIndex = 0;
  ld.repeatTimes = 1;
  ld.srcStride = 1;
  ld.dstGap = 0;
  ld.ifTranspose = false;
  return ld;
}

FixpipeParamsV220 Fix16() {
  FixpipeParamsV220 fix;
  fix.nSize = 16;
  fix.mSize = 16;
  fix.srcStride = 16;
  fix.dstStride = 16;
  fix.quantPre = QuantMode_t::NoQuant;
  fix.ndNum = 1;
  return fix;
}

MmadParams Mm16() {
  MmadParams mm;
  mm.m = 16;
  mm.n = 16;
  mm.k = 16;
  mm.cmatrixInitVal = false;  // C starts from the bias ("通过BT Buffer实现高效的bias计算")
  return mm;
}

}  // namespace

// ---- TQue at A1, B1, C1, A2, B2, C2, CO1: C = A @ W.T + bias (as "通过BT Buffer实现高效的bias计算") -----------
// Variants: "c1_unqueued" / "c2_unqueued" use the bias tensor without its queue's EnQue / DeQue.
extern "C" __global__ __aicore__ __cube__ void bias_queue_kernel(GM_ADDR a, GM_ADDR w, GM_ADDR bias, GM_ADDR out) {
  TPipe pipe;
  TQue<TPosition::A1, 1> qa1;
  TQue<TPosition::B1, 1> qb1;
  TQue<TPosition::C1, 1> qc1;
  TQue<TPosition::A2, 1> qa2;
  TQue<TPosition::B2, 1> qb2;
  TQue<TPosition::C2, 1> qc2;
  TQue<TPosition::CO1, 1> qco1;
  pipe.InitBuffer(qa1, 1, 256 * sizeof(half));
  pipe.InitBuffer(qb1, 1, 256 * sizeof(half));
  pipe.InitBuffer(qc1, 1, 16 * sizeof(float));
  pipe.InitBuffer(qa2, 1, 256 * sizeof(half));
  pipe.InitBuffer(qb2, 1, 256 * sizeof(half));
  pipe.InitBuffer(qc2, 1, 16 * sizeof(float));
  pipe.InitBuffer(qco1, 1, 256 * sizeof(float));
  GlobalTensor<half> aGm, wGm;
  GlobalTensor<float> biasGm, outGm;
  aGm.SetGlobalBuffer(reinterpret_cast<__gm__ half *>(a), 256);
  wGm.SetGlobalBuffer(reinterpret_cast<__gm__ half *>(w), 256);
  biasGm.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(bias), 16);
  outGm.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(out), 256);
  const LoadData2DParams ld = OneFractal();
  // CopyIn: GM -> L1 (MTE2)
  LocalTensor<half> a1 = qa1.AllocTensor<half>();
  DataCopy(a1, aGm, kNd);
  qa1.EnQue(a1);
  LocalTensor<half> b1 = qb1.AllocTensor<half>();
  DataCopy(b1, wGm, kNd);
  qb1.EnQue(b1);
  LocalTensor<float> bias1 = qc1.AllocTensor<float>();
  DataCopy(bias1, biasGm, 16);
  LocalTensor<float> bias1In = bias1;
  if (g_variant != "c1_unqueued") {
    qc1.EnQue(bias1);
    bias1In = qc1.DeQue<float>();
  }
  // Split: L1 -> L0A / L0B / BiasTable (MTE1)
  a1 = qa1.DeQue<half>();
  LocalTensor<half> a2 = qa2.AllocTensor<half>();
  LoadData(a2, a1, ld);
  qa2.EnQue(a2);
  qa1.FreeTensor(a1);
  b1 = qb1.DeQue<half>();
  LocalTensor<half> b2 = qb2.AllocTensor<half>();
  LoadData(b2, b1, ld);
  qb2.EnQue(b2);
  qb1.FreeTensor(b1);
  LocalTensor<float> bias2 = qc2.AllocTensor<float>();
  DataCopy(bias2, bias1In, 16);  // the count form: 16 floats, one 64-byte unit
  LocalTensor<float> bias2In = bias2;
  if (g_variant != "c2_unqueued") {
    qc2.EnQue(bias2);
    bias2In = qc2.DeQue<float>();
  }
  if (g_variant != "c1_unqueued") qc1.FreeTensor(bias1In);
  // Compute (M)
  a2 = qa2.DeQue<half>();
  b2 = qb2.DeQue<half>();
  LocalTensor<float> c = qco1.AllocTensor<float>();
  Mmad(c, a2, b2, bias2In, Mm16());
  qco1.EnQue(c);
  qa2.FreeTensor(a2);
  qb2.FreeTensor(b2);
  if (g_variant != "c2_unqueued") qc2.FreeTensor(bias2In);
  // CopyOut (FIX)
  c = qco1.DeQue<float>();
  Fixpipe(outGm, c, Fix16());
  qco1.FreeTensor(c);
}

// ---- TBuf at A1, B1, C1, A2, B2, C2, CO1 with the kernel's own flags, two rounds with a new bias each ------
// Variant "half": the bias is half in GM and L1 and becomes float on its way into the BiasTable (DataCopy
// with T = float, U = half), 32 values in one 64-byte source unit; Mmad reads the first 16.
extern "C" __global__ __aicore__ __cube__ void bias_flags_kernel(GM_ADDR a, GM_ADDR w, GM_ADDR bias, GM_ADDR out) {
  constexpr int32_t kRounds = 2;
  const bool halfBias = g_variant == "half";
  TPipe pipe;
  TBuf<TPosition::A1> ta1;
  TBuf<TPosition::B1> tb1;
  TBuf<TPosition::C1> tc1;
  TBuf<TPosition::A2> ta2;
  TBuf<TPosition::B2> tb2;
  TBuf<TPosition::C2> tc2;
  TBuf<TPosition::CO1> tco1;
  pipe.InitBuffer(ta1, 256 * sizeof(half));
  pipe.InitBuffer(tb1, 256 * sizeof(half));
  pipe.InitBuffer(tc1, 64);
  pipe.InitBuffer(ta2, 256 * sizeof(half));
  pipe.InitBuffer(tb2, 256 * sizeof(half));
  pipe.InitBuffer(tc2, halfBias ? 128 : 64);
  pipe.InitBuffer(tco1, 256 * sizeof(float));
  LocalTensor<half> a1 = ta1.Get<half>(), b1 = tb1.Get<half>(), a2 = ta2.Get<half>(), b2 = tb2.Get<half>();
  LocalTensor<float> c = tco1.Get<float>(), bias2 = tc2.Get<float>();
  GlobalTensor<half> aGm, wGm;
  GlobalTensor<float> outGm;
  aGm.SetGlobalBuffer(reinterpret_cast<__gm__ half *>(a), kRounds * 256);
  wGm.SetGlobalBuffer(reinterpret_cast<__gm__ half *>(w), 256);
  outGm.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(out), kRounds * 256);
  const LoadData2DParams ld = OneFractal();
  for (int32_t r = 0; r < kRounds; ++r) {
    if (r > 0) {
      WaitFlag<HardEvent::MTE1_MTE2>(EVENT_ID0);  // the last round's L1 reads before this round's L1 writes
    }
    if (halfBias) {  // the bias first, so that a missing flag shows on its buffers first
      GlobalTensor<half> biasGm;
      biasGm.SetGlobalBuffer(reinterpret_cast<__gm__ half *>(bias) + r * 32, 32);
      DataCopy(tc1.Get<half>(), biasGm, 32);
    } else {
      GlobalTensor<float> biasGm;
      biasGm.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(bias) + r * 16, 16);
      DataCopy(tc1.Get<float>(), biasGm, 16);
    }
    DataCopy(a1, aGm[r * 256], kNd);
    DataCopy(b1, wGm, kNd);
    SetFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
    if (r > 0) {
      WaitFlag<HardEvent::M_MTE1>(EVENT_ID0);  // the last Mmad's L0A / L0B / BiasTable reads first
    }
    DataCopyParams toBt(1, 1, 0, 0);  // one 64-byte unit of the source
    if (halfBias) {
      DataCopy(bias2, tc1.Get<half>(), toBt);
    } else {
      DataCopy(bias2, tc1.Get<float>(), toBt);
    }
    LoadData(a2, a1, ld);
    LoadData(b2, b1, ld);
    if (r + 1 < kRounds) {
      SetFlag<HardEvent::MTE1_MTE2>(EVENT_ID0);
    }
    SetFlag<HardEvent::MTE1_M>(EVENT_ID0);
    WaitFlag<HardEvent::MTE1_M>(EVENT_ID0);
    if (r > 0) {
      WaitFlag<HardEvent::FIX_M>(EVENT_ID0);  // the last Fixpipe's L0C read first
    }
    Mmad(c, a2, b2, bias2, Mm16());
    if (r + 1 < kRounds) {
      SetFlag<HardEvent::M_MTE1>(EVENT_ID0);
    }
    SetFlag<HardEvent::M_FIX>(EVENT_ID0);
    WaitFlag<HardEvent::M_FIX>(EVENT_ID0);
    Fixpipe(outGm[r * 256], c, Fix16());
    if (r + 1 < kRounds) {
      SetFlag<HardEvent::FIX_M>(EVENT_ID0);
    }
  }
}

// ---- rules that stop a run -------------------------------------------------------------------------------
// ---- DataCopy L1 -> GM on the Cube core ("DataCopy（L1ToGM连续数据搬运）"), plain or atomic ----------------------
// Each block copies its 64 floats GM -> L1 (MTE2), then `count` of them L1 -> GM (MTE3): to its own 64 slots, or
// (variant "atomic") added into the same 64 slots by every block under SetAtomicAdd<float>.
extern "C" __global__ __aicore__ __cube__ void l1_to_gm_kernel(GM_ADDR x, GM_ADDR out, uint32_t count) {
  TPipe pipe;
  TBuf<TPosition::A1> l1;
  pipe.InitBuffer(l1, 64 * sizeof(float));
  const bool atomic = g_variant == "atomic";
  GlobalTensor<float> xGm, outGm;
  xGm.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(x) + GetBlockIdx() * 64, 64);
  outGm.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(out) + (atomic ? 0 : GetBlockIdx() * 64), 64);
  LocalTensor<float> t = l1.Get<float>();
  DataCopy(t, xGm, 64);
  SetFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
  WaitFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
  if (atomic) SetAtomicAdd<float>();
  DataCopy(outGm, t, count);
  if (atomic) SetAtomicNone();
}

extern "C" __global__ __aicore__ void error_kernel(GM_ADDR gm) {
  (void)gm;
  TPipe pipe;
  MmadParams mm = Mm16();
  switch (g_case) {
    case 1: {  // over the BiasTable's 1 KB
      TBuf<TPosition::C2> t;
      pipe.InitBuffer(t, 1056);
      break;
    }
    case 2: {  // two BiasTable buffers over 1 KB together
      TBuf<TPosition::C2> t0, t1;
      pipe.InitBuffer(t0, 512);
      pipe.InitBuffer(t1, 544);
      break;
    }
    case 3: {  // DataCopy L1 -> BiasTable with a dst that is not 64-byte aligned
      TBuf<TPosition::C1> l1;
      TBuf<TPosition::C2> pad, bt;
      pipe.InitBuffer(l1, 64);
      pipe.InitBuffer(pad, 32);
      pipe.InitBuffer(bt, 64);
      DataCopy(bt.Get<float>(), l1.Get<float>(), DataCopyParams(1, 1, 0, 0));
      break;
    }
    case 4: {  // a copy past the end of the BiasTable buffer
      TBuf<TPosition::C1> l1;
      TBuf<TPosition::C2> bt;
      pipe.InitBuffer(l1, 256);
      pipe.InitBuffer(bt, 64);
      DataCopy(bt.Get<float>(), l1.Get<float>(), DataCopyParams(1, 2, 0, 0));
      break;
    }
    case 5: {  // Mmad's bias not 64-byte aligned
      TBuf<TPosition::A2> a2;
      TBuf<TPosition::B2> b2;
      TBuf<TPosition::C2> bt;
      TBuf<TPosition::CO1> co1;
      pipe.InitBuffer(a2, 512);
      pipe.InitBuffer(b2, 512);
      pipe.InitBuffer(bt, 128);
      pipe.InitBuffer(co1, 1024);
      Mmad(co1.Get<float>(), a2.Get<half>(), b2.Get<half>(), bt.Get<float>()[8], mm);
      break;
    }
    case 6: {  // Mmad's bias in L0C (CO1): not in the document
      TBuf<TPosition::A2> a2;
      TBuf<TPosition::B2> b2;
      TBuf<TPosition::CO1> co1, bias;
      pipe.InitBuffer(a2, 512);
      pipe.InitBuffer(b2, 512);
      pipe.InitBuffer(co1, 1024);
      pipe.InitBuffer(bias, 1024);
      Mmad(co1.Get<float>(), a2.Get<half>(), b2.Get<half>(), bias.Get<float>(), mm);
      break;
    }
    case 7: {  // Mmad with a bias tensor and cmatrixInitVal = true
      TBuf<TPosition::A2> a2;
      TBuf<TPosition::B2> b2;
      TBuf<TPosition::C2> bt;
      TBuf<TPosition::CO1> co1;
      pipe.InitBuffer(a2, 512);
      pipe.InitBuffer(b2, 512);
      pipe.InitBuffer(bt, 64);
      pipe.InitBuffer(co1, 1024);
      mm.cmatrixInitVal = true;
      Mmad(co1.Get<float>(), a2.Get<half>(), b2.Get<half>(), bt.Get<float>(), mm);
      break;
    }
    case 8: {  // cmatrixSource = true without a bias tensor
      TBuf<TPosition::A2> a2;
      TBuf<TPosition::B2> b2;
      TBuf<TPosition::CO1> co1;
      pipe.InitBuffer(a2, 512);
      pipe.InitBuffer(b2, 512);
      pipe.InitBuffer(co1, 1024);
      mm.cmatrixSource = true;
      Mmad(co1.Get<float>(), a2.Get<half>(), b2.Get<half>(), mm);
      break;
    }
    case 9: {  // a TQue at CO2 (Global Memory on A2/A3)
      TQue<TPosition::CO2, 1> q;
      pipe.InitBuffer(q, 1, 1024);
      break;
    }
    case 10: {  // a TBuf at CO2
      TBuf<TPosition::CO2> t;
      pipe.InitBuffer(t, 1024);
      break;
    }
    case 11: {  // a TBuf at C2PIPE2GM (Fixpipe Buffer) past its 2 KB
      TBuf<TPosition::C2PIPE2GM> t;
      pipe.InitBuffer(t, 4096);
      break;
    }
    case 12: {  // half -> half into the BiasTable: dst must be float or int32_t
      TBuf<TPosition::C1> l1;
      TBuf<TPosition::C2> bt;
      pipe.InitBuffer(l1, 64);
      pipe.InitBuffer(bt, 64);
      DataCopy(bt.Get<half>(), l1.Get<half>(), DataCopyParams(1, 1, 0, 0));
      break;
    }
    case 13: {  // the count form with count * sizeof(T) not a multiple of 64
      TBuf<TPosition::C1> l1;
      TBuf<TPosition::C2> bt;
      pipe.InitBuffer(l1, 64);
      pipe.InitBuffer(bt, 64);
      DataCopy(bt.Get<float>(), l1.Get<float>(), 8);
      break;
    }
    case 14: {  // a BiasTable buffer on an AIV (AIV_MODE)
      TBuf<TPosition::C2> t;
      pipe.InitBuffer(t, 64);
      break;
    }
    case 15: {  // a TQue at C2PIPE2GM: two buffers of 1536 bytes exceed the Fixpipe Buffer's 2 KB
      TQue<TPosition::C2PIPE2GM, 2> q;
      pipe.InitBuffer(q, 2, 1536);
      break;
    }
    case 16: {  // DataCopy L1 -> L0A through the local -> local form: only L1 -> BiasTable is modelled
      TBuf<TPosition::C1> l1;
      TBuf<TPosition::A2> a2;
      pipe.InitBuffer(l1, 512);
      pipe.InitBuffer(a2, 512);
      DataCopy(a2.Get<half>(), l1.Get<half>(), DataCopyParams(1, 1, 0, 0));
      break;
    }
    case 17: {  // Load3D v2 (img2col) L1 -> L0A: declared, not modelled
      TBuf<TPosition::A1> l1;
      TBuf<TPosition::A2> a2;
      pipe.InitBuffer(l1, 512);
      pipe.InitBuffer(a2, 512);
      LoadData3DParamsV2<half> p3;
      p3.l1H = 1;
      p3.l1W = 16;
      p3.channelSize = 16;
      p3.kExtension = 16;
      p3.mExtension = 16;
      LoadData(a2.Get<half>(), l1.Get<half>(), p3);
      break;
    }
    default: break;
  }
}

// Static Tensor programming: LocalMemAllocator<Hardware::BIAS> past the BiasTable's 1 KB, and a
// LocalTensor at C2PIPE2GM past the Fixpipe Buffer's 2 KB.
extern "C" __global__ __aicore__ __cube__ void static_error_kernel(GM_ADDR gm) {
  (void)gm;
  InitSocState();
  if (g_case == 1) {
    LocalMemAllocator<Hardware::BIAS> bt;
    LocalTensor<float> x = bt.Alloc<float>(128);
    LocalTensor<float> y = bt.Alloc<float>(160);  // bytes [512, 1152): past 1 KB
    (void)x;
    (void)y;
  } else {
    LocalTensor<uint64_t> fb(TPosition::C2PIPE2GM, 0, 512);  // 4096 bytes
    (void)fb;
  }
}

namespace {

void FillInputs(uint16_t *a, int rounds, uint16_t *w) {
  for (int i = 0; i < rounds * 256; ++i) a[i] = half(static_cast<float>((i * 7) % 5 - 2)).bits;
  for (int i = 0; i < 256; ++i) w[i] = half(static_cast<float>((i * 3) % 7 - 3)).bits;
}

int RunScenario(const std::string &name) {
  if (name == "bias_queue") {
    uint16_t *a = Gm<uint16_t>(256), *w = Gm<uint16_t>(256);
    float *bias = Gm<float>(16), *out = Gm<float>(256);
    FillInputs(a, 1, w);
    for (int i = 0; i < 16; ++i) bias[i] = 0.25f * static_cast<float>(i) - 1.5f;
    SetKernelMode(KernelMode::AIC_MODE);
    ICPU_RUN_KF(bias_queue_kernel, 1, reinterpret_cast<uint8_t *>(a), reinterpret_cast<uint8_t *>(w),
                reinterpret_cast<uint8_t *>(bias), reinterpret_cast<uint8_t *>(out));
    Print("out", out, 256);
    return 0;
  }
  if (name == "bias_flags") {
    uint16_t *a = Gm<uint16_t>(2 * 256), *w = Gm<uint16_t>(256);
    float *out = Gm<float>(2 * 256);
    FillInputs(a, 2, w);
    uint8_t *bias;
    if (g_variant == "half") {
      uint16_t *b = Gm<uint16_t>(2 * 32);
      for (int i = 0; i < 2 * 32; ++i) b[i] = half(0.125f * static_cast<float>(i) - 3.0f).bits;
      bias = reinterpret_cast<uint8_t *>(b);
    } else {
      float *b = Gm<float>(2 * 16);
      for (int i = 0; i < 2 * 16; ++i) b[i] = 0.5f * static_cast<float>(i) - 4.0f;
      bias = reinterpret_cast<uint8_t *>(b);
    }
    SetKernelMode(KernelMode::AIC_MODE);
    ICPU_RUN_KF(bias_flags_kernel, 1, reinterpret_cast<uint8_t *>(a), reinterpret_cast<uint8_t *>(w), bias,
                reinterpret_cast<uint8_t *>(out));
    Print("out", out, 2 * 256);
    return 0;
  }
  if (name == "l1_to_gm") {  // l1_to_gm [atomic | count]
    const uint32_t count = g_variant.empty() || g_variant == "atomic" ? 64 : static_cast<uint32_t>(std::stoi(g_variant));
    float *x = Gm<float>(2 * 64), *out = Gm<float>(2 * 64);
    for (int i = 0; i < 2 * 64; ++i) x[i] = 0.375f * static_cast<float>((i * 11) % 23) - 4.0f;
    for (int i = 0; i < 2 * 64; ++i) out[i] = -99.0f;
    SetKernelMode(KernelMode::AIC_MODE);
    ICPU_RUN_KF(l1_to_gm_kernel, 2, reinterpret_cast<uint8_t *>(x), reinterpret_cast<uint8_t *>(out), count);
    Print("out", out, 2 * 64);
    return 0;
  }
  if (name == "error") {  // variant: the case number
    g_case = std::stoi(g_variant);
    uint8_t *gm = Gm<uint8_t>(1024);
    SetKernelMode(g_case == 14 ? KernelMode::AIV_MODE : KernelMode::AIC_MODE);
    ICPU_RUN_KF(error_kernel, 1, gm);
    return 0;
  }
  if (name == "static_error") {
    g_case = std::stoi(g_variant);
    uint8_t *gm = Gm<uint8_t>(64);
    SetKernelMode(KernelMode::AIC_MODE);
    ICPU_RUN_KF(static_error_kernel, 1, gm);
    return 0;
  }
  std::fprintf(stderr, "unknown scenario %s\n", name.c_str());
  return 2;
}

}  // namespace

int main(int argc, char **argv) { return cpu_debug_program::Main(argc, argv, RunScenario); }
