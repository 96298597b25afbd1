// Kernels and their host program for tests/test_ascend_model_block_sync.py: synchronisation between blocks
// through GM on the CPU model (ascendc/cpu_model/sync_block.h): IBSet / IBWait, InitDetermineComputeWorkspace /
// WaitPreBlock / NotifyNextBlock, DataSyncBarrier with WriteGmByPassDCache / ReadGmByPassDCache, GroupBarrier
// with InitOutput, and the Mutex API A2/A3 lacks. Built once for the host by ascendc/cpu_model/build_cpu_debug.sh.
// `ascend_model_block_sync_test <scenario> [variant]` runs one scenario and prints "name v0 v1 ..."; the test
// computes the expected values with numpy. A run the model stops exits 1 with the message on stderr.
//
// Every sync call stands alone on its line, so that a test can drop it by its call site
// (ASCEND_MODEL_SKIP_SYNC_SITE=file:line:api).
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

constexpr int32_t kN = 64;         // floats per block
constexpr int32_t kBlocks = 4;     // blocks of the chained scenarios
constexpr int32_t kRounds = 2;     // rounds of the ordered-blocks scenario

float XValue(int i) { return static_cast<float>((i * 7) % 13) * 0.25f - 1.0f; }



// acc = acc * 2 + x on the vector unit: GM -> UB (MTE2), V, UB -> GM (MTE3).
struct Horner {
  TBuf<TPosition::VECCALC> accBuf, xBuf;
  LocalTensor<float> a, xl;
  void Init(TPipe &pipe) {
    pipe.InitBuffer(accBuf, kN * sizeof(float));
    pipe.InitBuffer(xBuf, kN * sizeof(float));
    a = accBuf.Get<float>();
    xl = xBuf.Get<float>();
  }
  void Compute(const GlobalTensor<float> &accg) {
    DataCopy(a, accg, kN);
    SetFlag<HardEvent::MTE2_V>(0);
    WaitFlag<HardEvent::MTE2_V>(0);
    Muls(a, a, 2.0f, kN);
    PipeBarrier<PIPE_V>();
    Add(a, a, xl, kN);
    SetFlag<HardEvent::V_MTE3>(0);
    WaitFlag<HardEvent::V_MTE3>(0);
  }
};

// ---- IBSet / IBWait: block b waits for flag b, folds its x into acc, sets flag b + 1 ------------------------
extern "C" __global__ __aicore__ void ib_chain(GM_ADDR x, GM_ADDR acc, GM_ADDR ws) {
  TPipe pipe;
  Horner h;
  h.Init(pipe);
  TBuf<TPosition::VECCALC> syncBuf;
  pipe.InitBuffer(syncBuf, 32);
  LocalTensor<int32_t> s = syncBuf.Get<int32_t>();
  GlobalTensor<float> xg, accg;
  GlobalTensor<int32_t> wsg;
  xg.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(x));
  accg.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(acc));
  wsg.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t *>(ws));
  const int32_t b = static_cast<int32_t>(GetBlockIdx());
  const int32_t n = static_cast<int32_t>(GetBlockNum());
  DataCopy(h.xl, xg[b * kN], kN);
  if (b > 0) {
    IBWait(wsg, s, b, 0);
  }
  h.Compute(accg);
  if (g_variant == "early" && b + 1 < n) {
    IBSet(wsg, s, b + 1, 0);
  }
  DataCopy(accg, h.a, kN);
  if (g_variant != "early" && b + 1 < n) {
    IBSet(wsg, s, b + 1, 0);
  }
}

// The rules: "range" (blockIdx = core count), "small" (a workspace too small for blockIdx 3), "unpaired"
// (IBSet without IBWait).
extern "C" __global__ __aicore__ void ib_rules(GM_ADDR ws) {
  TPipe pipe;
  TBuf<TPosition::VECCALC> syncBuf;
  pipe.InitBuffer(syncBuf, 32);
  LocalTensor<int32_t> s = syncBuf.Get<int32_t>();
  GlobalTensor<int32_t> wsg;
  wsg.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t *>(ws));
  if (GetBlockIdx() != 0) return;
  if (g_variant == "range") IBSet(wsg, s, static_cast<int32_t>(GetBlockNum()), 0);
  if (g_variant == "small") IBSet(wsg, s, 3, 0);
  if (g_variant == "unpaired") IBSet(wsg, s, 1, 0);
  if (g_variant == "nonzero") IBWait(wsg, s, 1, 0);
}

// ---- blocks in blockIdx order: kRounds rounds of every block, acc = acc * 2 + x[round][block] ---------------
extern "C" __global__ __aicore__ void ordered_blocks(GM_ADDR x, GM_ADDR acc, GM_ADDR ws) {
  if ASCEND_IS_AIC {
    return;
  }
  TPipe pipe;
  Horner h;
  h.Init(pipe);
  const int32_t n = static_cast<int32_t>(GetBlockNum());
  TBuf<TPosition::VECCALC> ubWs;
  pipe.InitBuffer(ubWs, g_variant == "small_ub" ? n * 32 : n * 32 + 32);
  LocalTensor<int32_t> u = ubWs.Get<int32_t>();
  GlobalTensor<float> xg, accg;
  GlobalTensor<int32_t> wsg;
  xg.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(x));
  accg.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(acc));
  wsg.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t *>(ws));
  const int32_t b = static_cast<int32_t>(GetBlockIdx());
  if (g_variant != "no_init") {
    InitDetermineComputeWorkspace(wsg, u);
  }
  for (int32_t r = 0; r < kRounds; ++r) {
    DataCopy(h.xl, xg[(r * n + b) * kN], kN);
    WaitPreBlock(wsg, u);
    h.Compute(accg);
    if (g_variant == "early") {
      NotifyNextBlock(wsg, u);
    }
    DataCopy(accg, h.a, kN);
    if (g_variant != "early") {
      NotifyNextBlock(wsg, u);
    }
  }
}

// ---- DataSyncBarrier: block 0 publishes data then a flag, block 1 polls the flag and doubles the data -------
extern "C" __global__ __aicore__ void dsb_flag(GM_ADDR src, GM_ADDR dst) {
  InitSocState();
  __gm__ int32_t *s = reinterpret_cast<__gm__ int32_t *>(src);
  __gm__ int32_t *d = reinterpret_cast<__gm__ int32_t *>(dst);
  if (GetBlockIdx() == 0) {
    WriteGmByPassDCache<int32_t>(s + 1, 7);
    if (g_variant != "late") {
      DataSyncBarrier<MemDsbT::DDR>();
    }
    WriteGmByPassDCache<int32_t>(s, g_variant == "never" ? 5 : 6);
    if (g_variant == "late") {
      DataSyncBarrier<MemDsbT::DDR>();
    }
  } else {
    if (g_variant == "blind_reset") {  // clears the flag without having read it: unordered with block 0's write
      WriteGmByPassDCache<int32_t>(s, 0);
      return;
    }
    while (true) {
      if (ReadGmByPassDCache<int32_t>(s) == 6) {
        const int32_t v = ReadGmByPassDCache<int32_t>(s + 1);
        WriteGmByPassDCache<int32_t>(d, 2 * v);
        // hands the flag back, as CANN's set_atomic_deterministic_computation example does: after the read
        // that saw block 0's write, this write to the same bytes comes after it
        if (g_variant == "reset") WriteGmByPassDCache<int32_t>(s, 0);
        break;
      }
    }
  }
}

// The same with the data stored by DMA: block 0's MTE3 store is published by the flag once the scalar unit has
// waited for it (MTE3 -> S); block 1 copies the data after its poll.
extern "C" __global__ __aicore__ void dsb_dma(GM_ADDR src, GM_ADDR dst) {
  TPipe pipe;
  TBuf<TPosition::VECCALC> buf;
  pipe.InitBuffer(buf, 32);
  LocalTensor<int32_t> l = buf.Get<int32_t>();
  GlobalTensor<int32_t> sg, dg;
  sg.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t *>(src));
  dg.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t *>(dst));
  __gm__ int32_t *s = reinterpret_cast<__gm__ int32_t *>(src);
  if (GetBlockIdx() == 0) {
    Duplicate(l, 7, 8);
    SetFlag<HardEvent::V_MTE3>(0);
    WaitFlag<HardEvent::V_MTE3>(0);
    DataCopy(sg[8], l, 8);
    if (g_variant != "dma_no_mte3_s") {
      SetFlag<HardEvent::MTE3_S>(0);
      WaitFlag<HardEvent::MTE3_S>(0);
    }
    WriteGmByPassDCache<int32_t>(s, 6);
  } else {
    while (ReadGmByPassDCache<int32_t>(s) != 6) {
    }
    DataCopy(l, sg[8], 8);
    SetFlag<HardEvent::MTE2_MTE3>(0);
    WaitFlag<HardEvent::MTE2_MTE3>(0);
    DataCopy(dg, l, 8);
  }
}

// ---- GroupBarrier: 2 AIVs fill their part of a buffer (InitOutput), 3 AIVs wait and sum both parts ---------
constexpr uint32_t kArrive = 2, kWait = 3, kPart = 8;
extern "C" __global__ __aicore__ void group_sum(GM_ADDR ws, GM_ADDR data, GM_ADDR out) {
  TPipe pipe;
  GroupBarrier<PipeMode::MTE3_MODE> bar(ws, kArrive, g_variant == "index" ? 2 : kWait);
  const uint32_t b = static_cast<uint32_t>(GetBlockIdx());
  GlobalTensor<int32_t> dg, og;
  dg.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t *>(data));
  og.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t *>(out));
  for (uint32_t r = 0; r < 2; ++r) {
    if (b < kArrive && g_variant == "early") {
      bar.Arrive(b);
      InitOutput<int32_t>(dg[(r * kArrive + b) * kPart], kPart, static_cast<int32_t>((r + 1) * 10 + b));
    } else if (b < kArrive) {
      InitOutput<int32_t>(dg[(r * kArrive + b) * kPart], kPart, static_cast<int32_t>((r + 1) * 10 + b));
      bar.Arrive(b);
    } else {
      bar.Wait(b - kArrive);
      for (uint32_t k = 0; k < kPart; ++k) {
        int32_t sum = 0;
        for (uint32_t a = 0; a < kArrive; ++a) sum += dg.GetValue((r * kArrive + a) * kPart + k);
        og.SetValue((r * kWait + b - kArrive) * kPart + k, sum);
      }
    }
  }
}

extern "C" __global__ __aicore__ void group_scalar_mode(GM_ADDR ws) {
  TPipe pipe;
  GroupBarrier<PipeMode::SCALAR_MODE> bar(ws, 1, 1);
  (void)bar;
}

extern "C" __global__ __aicore__ void mutex_lock(GM_ADDR unused) {
  (void)unused;
  TPipe pipe;
  MutexID id = AllocMutexID();
  Mutex::Lock<PIPE_V>(id);
  Mutex::Unlock<PIPE_V>(id);
  ReleaseMutexID(id);
}

int Ib() {
  float *x = Gm<float>(kBlocks * kN), *acc = Gm<float>(kN);
  for (int i = 0; i < kBlocks * kN; ++i) x[i] = XValue(i);
  // core count * 32 * eventID_max + blockIdx_max * 32 + 32 bytes, eventID_max 0, blockIdx_max kBlocks - 1
  int32_t *ws = Gm<int32_t>(kBlocks * 8);
  SetKernelMode(KernelMode::AIV_MODE);
  ICPU_RUN_KF(ib_chain, kBlocks, reinterpret_cast<GM_ADDR>(x), reinterpret_cast<GM_ADDR>(acc),
              reinterpret_cast<GM_ADDR>(ws));
  Print("acc", acc, kN);
  return 0;
}

int IbRules() {
  int32_t *ws = Gm<int32_t>(g_variant == "small" ? 8 : kBlocks * 8);
  if (g_variant == "nonzero") ws[8] = 1;
  SetKernelMode(KernelMode::AIV_MODE);
  ICPU_RUN_KF(ib_rules, kBlocks, reinterpret_cast<GM_ADDR>(ws));
  return 0;
}

int Ordered() {
  float *x = Gm<float>(kRounds * kBlocks * kN), *acc = Gm<float>(kN);
  for (int i = 0; i < kRounds * kBlocks * kN; ++i) x[i] = XValue(i);
  int32_t *ws = Gm<int32_t>(kBlocks * 8);
  for (int i = 0; i < kBlocks * 8; ++i) ws[i] = 12345;  // need not be zeroed (InitDetermineComputeWorkspace.md)
  SetKernelMode(g_variant == "mix" ? KernelMode::MIX_MODE : KernelMode::AIV_MODE);
  ICPU_RUN_KF(ordered_blocks, kBlocks, reinterpret_cast<GM_ADDR>(x), reinterpret_cast<GM_ADDR>(acc),
              reinterpret_cast<GM_ADDR>(ws));
  Print("acc", acc, kN);
  return 0;
}

int Dsb() {
  int32_t *src = Gm<int32_t>(16), *dst = Gm<int32_t>(8);
  SetKernelMode(KernelMode::AIV_MODE);
  if (g_variant.rfind("dma", 0) == 0) {
    ICPU_RUN_KF(dsb_dma, 2, reinterpret_cast<GM_ADDR>(src), reinterpret_cast<GM_ADDR>(dst));
  } else {
    ICPU_RUN_KF(dsb_flag, 2, reinterpret_cast<GM_ADDR>(src), reinterpret_cast<GM_ADDR>(dst));
  }
  std::printf("dst %d\n", dst[0]);
  return 0;
}

int Group() {
  uint8_t *ws = Gm<uint8_t>(kWait * 512);
  if (g_variant == "dirty") ws[5] = 1;
  int32_t *data = Gm<int32_t>(2 * kArrive * kPart), *out = Gm<int32_t>(2 * kWait * kPart);
  SetKernelMode(KernelMode::AIV_MODE);
  ICPU_RUN_KF(group_sum, kArrive + kWait, ws, reinterpret_cast<GM_ADDR>(data), reinterpret_cast<GM_ADDR>(out));
  std::printf("out");
  for (uint32_t i = 0; i < 2 * kWait * kPart; ++i) std::printf(" %d", out[i]);
  std::printf("\n");
  return 0;
}

int RunScenario(const std::string &name) {
  if (name == "ib") return Ib();
  if (name == "ib_rules") return IbRules();
  if (name == "ordered") return Ordered();
  if (name == "dsb") return Dsb();
  if (name == "group") return Group();
  if (name == "group_scalar_mode") {
    uint8_t *ws = Gm<uint8_t>(512);
    SetKernelMode(KernelMode::AIV_MODE);
    ICPU_RUN_KF(group_scalar_mode, 1, ws);
    return 0;
  }
  if (name == "mutex") {
    SetKernelMode(KernelMode::AIV_MODE);
    ICPU_RUN_KF(mutex_lock, 1, Gm<uint8_t>(32));
    return 0;
  }
  std::fprintf(stderr, "unknown scenario %s\n", name.c_str());
  return 2;
}

}  // namespace

int main(int argc, char **argv) { return cpu_debug_program::Main(argc, argv, RunScenario); }
