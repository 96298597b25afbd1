// Kernels and their host program for tests/test_ascend_model_cpu_debug.py: the CPU model's CPU-debug
// interface (tikicpulib.h: GmAlloc, SetKernelMode, ICPU_RUN_KF, ICPU_SET_TILING_KEY) and the APIs
// beyond the basic vector family, each run as a user's kernel is: compiled once for the host by
// ascendc/cpu_model/build_cpu_debug.sh. `ascend_model_cpu_debug_test <scenario> [variant]` runs one
// scenario and prints its results ("name v0 v1 ..."); the test computes the documented results with
// numpy from the same input formulas. A scenario the model stops exits 1 with the message on stderr.
//
// Every sync call stands alone on its line, so that the strictness test can drop each one by its
// call site (ASCEND_MODEL_SKIP_SYNC_SITE=file:line:api).
#include <chrono>
#include <cstdio>
#include <thread>
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

int g_case = 0;         // the error scenario

constexpr int32_t kN = 64;  // elements per block in the vector scenarios



float HalfToFloat(uint16_t bits) {
  half h;
  h.bits = bits;
  return static_cast<float>(h);
}

}  // namespace

// ---- system variables in each mode ("GetBlockNum", "GetBlockIdx", "GetSubBlockIdx", ...) -----------------
extern "C" __global__ __aicore__ void sysvar_kernel(GM_ADDR unused) {
  (void)unused;
  // Each core prints its view; the cores take turns, so the lines do not interleave.
  // Then CANN's CPU-debug system variables: block_idx, block_num, sub_block_idx, g_taskRation.
  std::printf("SV %s %ld %ld %ld %ld %ld %ld %ld %ld %ld %ld\n", ASCEND_IS_AIC ? "AIC" : "AIV",
              static_cast<long>(GetBlockNum()), static_cast<long>(GetBlockIdx()), static_cast<long>(GetSubBlockIdx()),
              static_cast<long>(GetSubBlockNum()), static_cast<long>(GetTaskRatio()), static_cast<long>(block_idx),
              static_cast<long>(block_num), static_cast<long>(sub_block_idx), static_cast<long>(g_taskRation),
              static_cast<long>(GetTaskRation()));
}

// ---- AscendC::printf from each core, and the architecture the build selects (__NPU_ARCH__) -------------
extern "C" __global__ __aicore__ __vector__ void printf_kernel(GM_ADDR unused) {
  (void)unused;
#if defined(__NPU_ARCH__) && (__NPU_ARCH__ == 2201)
  AscendC::printf("PF block %d of %d, x = %.2f, arch 2201\n", static_cast<int>(GetBlockIdx()),
                  static_cast<int>(GetBlockNum()), 0.5 * static_cast<double>(GetBlockIdx()));
#else
  AscendC::printf("PF no A2/A3 architecture\n");
#endif
  AscendC::printf("PF plain\n");
}

// ---- arguments by value and the block_idx variable ("<<<>>>" launches pass scalars and structs) --------
struct AffineArgs {
  float mul;
  float add;
};

// y = x * args.mul + args.add on each block's `perBlock` floats, the block's slice found with block_idx.
extern "C" __global__ __aicore__ __vector__ void affine_kernel(GM_ADDR x, GM_ADDR y, uint32_t perBlock,
                                                               AffineArgs args) {
  InitSocState();
  GlobalTensor<float> xGm, yGm;
  xGm.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(x) + block_idx * perBlock, perBlock);
  yGm.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(y) + block_idx * perBlock, perBlock);
  LocalMemAllocator<Hardware::UB> ub;
  LocalTensor<float> a = ub.Alloc<float>(perBlock);
  LocalTensor<float> b = ub.Alloc<float>(perBlock);
  DataCopy(a, xGm, perBlock);
  PipeBarrier<PIPE_ALL>();
  Muls(b, a, args.mul, static_cast<int32_t>(perBlock));
  PipeBarrier<PIPE_V>();
  Adds(a, b, args.add, static_cast<int32_t>(perBlock));
  PipeBarrier<PIPE_ALL>();
  DataCopy(yGm, a, perBlock);
}

// ---- a plain initialisation, the hard SyncAll, then atomic stores from every block ("SetAtomicAdd",
// "SetAtomicMax", "DisableDmaAtomic", "SyncAll") -----------------------------------------------------------
extern "C" __global__ __aicore__ __mix__(0, 1) void atomic_kernel(GM_ADDR init, GM_ADDR accF, GM_ADDR accH,
                                                                  GM_ADDR maxI) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIV_1_0);
  TPipe pipe;
  TBuf<TPosition::VECCALC> buf;
  pipe.InitBuffer(buf, kN * 10);
  LocalTensor<float> f = buf.Get<float>();
  LocalTensor<half> h = buf.Get<half>()[2 * kN];
  LocalTensor<int32_t> iv = buf.Get<int32_t>()[3 * kN / 2];
  GlobalTensor<float> initGm, accFGm;
  GlobalTensor<half> accHGm;
  GlobalTensor<int32_t> maxGm;
  initGm.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(init), kN);
  accFGm.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(accF), kN);
  accHGm.SetGlobalBuffer(reinterpret_cast<__gm__ half *>(accH), kN);
  maxGm.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t *>(maxI), kN);
  const int64_t b = GetBlockIdx();
  if (b == 0) {  // accF = init, a plain store
    DataCopy(f, initGm, kN);
    SetFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
    DataCopy(accFGm, f, kN);
  }
  SyncAll();
  for (int32_t i = 0; i < kN; ++i) {
    f.SetValue(i, static_cast<float>(b + 1) * 0.25f * static_cast<float>(i % 7));
    h.SetValue(i, half(static_cast<float>(b + 1) * 0.5f * static_cast<float>(i % 5)));
    iv.SetValue(i, static_cast<int32_t>((b * 37 + i * 11) % 23) - 11);
  }
  SetFlag<HardEvent::S_MTE3>(EVENT_ID0);
  WaitFlag<HardEvent::S_MTE3>(EVENT_ID0);
  SetAtomicAdd<float>();
  DataCopy(accFGm, f, kN);
  SetAtomicAdd<half>();
  DataCopyPad(accHGm, h, DataCopyExtParams{1, kN * sizeof(half), 0, 0, 0});
  SetAtomicMax<int32_t>();
  DataCopy(maxGm, iv, kN);
  DisableDmaAtomic();
}

// ---- mode 0 among the AIVs: atomic partial sums, then block 0 reads the total ("CrossCoreSetFlag") --------
extern "C" __global__ __aicore__ __mix__(0, 1) void mode0_aiv_kernel(GM_ADDR acc, GM_ADDR out) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIV_1_0);
  TPipe pipe;
  TBuf<TPosition::VECCALC> buf;
  pipe.InitBuffer(buf, kN * sizeof(float));
  LocalTensor<float> f = buf.Get<float>();
  GlobalTensor<float> accGm, outGm;
  accGm.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(acc), kN);
  outGm.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(out), kN);
  const int64_t b = GetBlockIdx();
  const bool early = g_variant == "early";
  for (int32_t i = 0; i < kN; ++i) f.SetValue(i, static_cast<float>(b + 1) * 0.5f * static_cast<float>(i));
  SetFlag<HardEvent::S_MTE3>(EVENT_ID0);
  WaitFlag<HardEvent::S_MTE3>(EVENT_ID0);
  SetAtomicAdd<float>();
  if (early) CrossCoreSetFlag<0, PIPE_MTE3>(0);
  DataCopy(accGm, f, kN);
  if (!early) CrossCoreSetFlag<0, PIPE_MTE3>(0);
  CrossCoreWaitFlag(0);
  DisableDmaAtomic();
  if (b == 0) {
    DataCopy(f, accGm, kN);
    SetFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
    DataCopy(outGm, f, kN);
  }
}

// ---- mode 1: the two AIVs of an AI core exchange halves through GM ----------------------------------------
extern "C" __global__ __aicore__ __mix__(1, 2) void mode1_kernel(GM_ADDR work, GM_ADDR out) {
  if ASCEND_IS_AIC {
    return;
  }
  TPipe pipe;
  TBuf<TPosition::VECCALC> buf;
  pipe.InitBuffer(buf, kN * sizeof(float));
  LocalTensor<float> f = buf.Get<float>();
  GlobalTensor<float> workGm, outGm;
  workGm.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(work));
  outGm.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(out));
  const int64_t core = GetBlockIdx() / GetSubBlockNum(), sub = GetSubBlockIdx();
  const bool early = g_variant == "early";
  for (int32_t i = 0; i < kN; ++i) f.SetValue(i, static_cast<float>(core * 100 + sub * 10 + i));
  SetFlag<HardEvent::S_MTE3>(EVENT_ID0);
  WaitFlag<HardEvent::S_MTE3>(EVENT_ID0);
  if (early) CrossCoreSetFlag<1, PIPE_MTE3>(2);
  DataCopy(workGm[(core * 2 + sub) * kN], f, kN);
  if (!early) CrossCoreSetFlag<1, PIPE_MTE3>(2);
  CrossCoreWaitFlag(2);
  DataCopy(f, workGm[(core * 2 + 1 - sub) * kN], kN);
  SetFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
  WaitFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
  DataCopy(outGm[(core * 2 + sub) * kN], f, kN);
}

// ---- mode 2 (AIV -> AIC -> AIV): the AIC sums what its AIVs stored, they read the sum back ----------------
extern "C" __global__ __aicore__ __mix__(1, 2) void mode2_kernel(GM_ADDR work, GM_ADDR total, GM_ADDR out) {
  GlobalTensor<float> workGm, totalGm, outGm;
  workGm.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(work));
  totalGm.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(total));
  outGm.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(out));
  const bool early = g_variant == "early";
  if ASCEND_IS_AIC {
    const int64_t core = GetBlockIdx();
    CrossCoreWaitFlag(3);
    for (int32_t i = 0; i < kN; ++i) {
      totalGm.SetValue(core * kN + i, workGm.GetValue((core * 2) * kN + i) + workGm.GetValue((core * 2 + 1) * kN + i));
    }
    PipeBarrier<PIPE_ALL>();  // the scalar stores complete before the FIX pipe's set
    CrossCoreSetFlag<2, PIPE_FIX>(4);
    return;
  }
  TPipe pipe;
  TBuf<TPosition::VECCALC> buf;
  pipe.InitBuffer(buf, kN * sizeof(float));
  LocalTensor<float> f = buf.Get<float>();
  const int64_t v = GetBlockIdx(), core = v / 2;
  for (int32_t i = 0; i < kN; ++i) f.SetValue(i, static_cast<float>((v + 1) * i));
  SetFlag<HardEvent::S_MTE3>(EVENT_ID0);
  WaitFlag<HardEvent::S_MTE3>(EVENT_ID0);
  if (early) CrossCoreSetFlag<2, PIPE_MTE3>(3);
  DataCopy(workGm[v * kN], f, kN);
  if (!early) CrossCoreSetFlag<2, PIPE_MTE3>(3);
  CrossCoreWaitFlag(4);
  DataCopy(f, totalGm[core * kN], kN);
  SetFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
  WaitFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
  DataCopy(outGm[v * kN], f, kN);
}

// ---- the hard SyncAll of a MIX kernel: AIVs store, the AIC of core 0 sums all, the AIVs read the sum ------
extern "C" __global__ __aicore__ __mix__(1, 2) void syncall_mix_kernel(GM_ADDR work, GM_ADDR total, GM_ADDR out) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
  GlobalTensor<float> workGm, totalGm, outGm;
  workGm.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(work));
  totalGm.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(total), kN);
  outGm.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(out));
  const int64_t aivs = GetBlockNum() * 2;
  if ASCEND_IS_AIC {
    SyncAll<false>();
    if (GetBlockIdx() == 0) {
      for (int32_t i = 0; i < kN; ++i) {
        float sum = 0.0f;
        for (int64_t v = 0; v < aivs; ++v) sum += workGm.GetValue(v * kN + i);
        totalGm.SetValue(i, sum);
      }
    }
    SyncAll<false>();
    return;
  }
  TPipe pipe;
  TBuf<TPosition::VECCALC> buf;
  pipe.InitBuffer(buf, kN * sizeof(float));
  LocalTensor<float> f = buf.Get<float>();
  const int64_t v = GetBlockIdx();
  for (int32_t i = 0; i < kN; ++i) f.SetValue(i, static_cast<float>((v + 1) * i));
  SetFlag<HardEvent::S_MTE3>(EVENT_ID0);
  WaitFlag<HardEvent::S_MTE3>(EVENT_ID0);
  DataCopy(workGm[v * kN], f, kN);
  SyncAll<false>();
  SyncAll<false>();
  DataCopy(f, totalGm, kN);
  SetFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
  WaitFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
  DataCopy(outGm[v * kN], f, kN);
}

// ---- the soft SyncAll of a vector-only kernel: store, synchronise, read the next block's data ------------
extern "C" __global__ __aicore__ __vector__ void syncall_soft_kernel(GM_ADDR sync, GM_ADDR work, GM_ADDR out) {
  TPipe pipe;
  TBuf<TPosition::VECCALC> buf, syncBuf;
  pipe.InitBuffer(buf, kN * sizeof(float));
  pipe.InitBuffer(syncBuf, GetBlockNum() * 32);
  LocalTensor<float> f = buf.Get<float>();
  GlobalTensor<int32_t> syncGm;
  GlobalTensor<float> workGm, outGm;
  syncGm.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t *>(sync));
  workGm.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(work));
  outGm.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(out));
  const int64_t b = GetBlockIdx(), n = GetBlockNum();
  for (int round = 0; round < 2; ++round) {  // two rounds: the workspace's counts go on
    for (int32_t i = 0; i < kN; ++i) f.SetValue(i, static_cast<float>((b + 1) * i + round));
    SetFlag<HardEvent::S_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::S_MTE3>(EVENT_ID0);
    DataCopy(workGm[(round * n + b) * kN], f, kN);
    SyncAll(syncGm, syncBuf.Get<int32_t>());
    DataCopy(f, workGm[(round * n + (b + 1) % n) * kN], kN);
    SetFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
    DataCopy(outGm[(round * n + b) * kN], f, kN);
    SetFlag<HardEvent::MTE3_S>(EVENT_ID0);
    WaitFlag<HardEvent::MTE3_S>(EVENT_ID0);
  }
}

// ---- SetPadValue with DataCopyPad (GM -> UB, isPad false) ---------------------------------------------------
extern "C" __global__ __aicore__ __vector__ void pad_kernel(GM_ADDR src, GM_ADDR dst) {
  TPipe pipe;
  TBuf<TPosition::VECIN> buf;
  pipe.InitBuffer(buf, 32 * sizeof(half));
  LocalTensor<half> ub = buf.Get<half>();
  GlobalTensor<half> srcGm, dstGm;
  srcGm.SetGlobalBuffer(reinterpret_cast<__gm__ half *>(src), 20);
  dstGm.SetGlobalBuffer(reinterpret_cast<__gm__ half *>(dst), 32);
  SetPadValue(half(-2.0f));
  DataCopyPad(ub, srcGm, DataCopyExtParams{1, 20 * sizeof(half), 0, 0, 0},
              DataCopyPadExtParams<half>{false, 2, 10, half(0.0f)});
  SetFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
  WaitFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
  DataCopy(dstGm, ub, 32);
}

// ---- static Tensor programming: InitSocState, LocalMemAllocator, LocalTensor(pos, addr, len) ---------------
extern "C" __global__ __aicore__ __vector__ void static_kernel(GM_ADDR src, GM_ADDR dst) {
  InitSocState();
  LocalMemAllocator<Hardware::UB> alloc;
  const uint32_t at0 = alloc.GetCurAddr();
  LocalTensor<float> a = alloc.Alloc<TPosition::VECIN, float, kN>();
  const uint32_t at1 = alloc.GetCurAddr();
  LocalTensor<float> b = alloc.Alloc<float>(kN);
  const uint32_t at2 = alloc.GetCurAddr();
  LocalTensor<float> alias(TPosition::VECCALC, at1, kN);  // the bytes of b
  if (GetBlockIdx() == 0) std::printf("ADDR %u %u %u %u %u\n", at0, at1, at2, a.GetSize(), b.GetSize());
  GlobalTensor<float> srcGm, dstGm;
  srcGm.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(src) + GetBlockIdx() * kN, kN);
  dstGm.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(dst) + GetBlockIdx() * kN, kN);
  DataCopy(a, srcGm, kN);
  SetFlag<HardEvent::MTE2_S>(EVENT_ID0);
  WaitFlag<HardEvent::MTE2_S>(EVENT_ID0);
  for (int32_t i = 0; i < kN; ++i) alias.SetValue(i, a.GetValue(i) * 2.0f);
  SetFlag<HardEvent::S_MTE3>(EVENT_ID0);
  WaitFlag<HardEvent::S_MTE3>(EVENT_ID0);
  DataCopy(dstGm, b, kN);
}

// ---- the Cube pipeline through TQue at A1, B1, A2, B2, CO1, then mode 0 among the AICs -----------------------
extern "C" __global__ __aicore__ __mix__(1, 0) void cube_kernel(GM_ADDR a, GM_ADDR w, GM_ADDR out, GM_ADDR total,
                                                                GM_ADDR acc) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_0);
  TPipe pipe;
  TQue<TPosition::A1, 1> qa1;
  TQue<TPosition::B1, 1> qb1;
  TQue<TPosition::A2, 1> qa2;
  TQue<TPosition::B2, 1> qb2;
  TQue<TPosition::CO1, 1> qc;
  pipe.InitBuffer(qa1, 1, 256 * sizeof(half));
  pipe.InitBuffer(qb1, 1, 256 * sizeof(half));
  pipe.InitBuffer(qa2, 1, 256 * sizeof(half));
  pipe.InitBuffer(qb2, 1, 256 * sizeof(half));
  pipe.InitBuffer(qc, 1, 256 * sizeof(float));
  const int64_t blk = GetBlockIdx();
  GlobalTensor<half> aGm, wGm;
  GlobalTensor<float> outGm, totalGm;
  aGm.SetGlobalBuffer(reinterpret_cast<__gm__ half *>(a) + blk * 256, 256);
  wGm.SetGlobalBuffer(reinterpret_cast<__gm__ half *>(w), 256);
  outGm.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(out));
  totalGm.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(total), 256);
  Nd2NzParams nd(1, 16, 16, 0, 16, 16, 1, 0);
  LoadData2DParams ld;
  ld.startIndex = 0;
  ld.repeatTimes = 1;
  ld.srcStride = 1;
  ld.dstGap = 0;
  ld.ifTranspose = false;
  LocalTensor<half> a1 = qa1.AllocTensor<half>();
  DataCopy(a1, aGm, nd);
  qa1.EnQue(a1);
  LocalTensor<half> b1 = qb1.AllocTensor<half>();
  DataCopy(b1, wGm, nd);
  qb1.EnQue(b1);
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
  a2 = qa2.DeQue<half>();
  b2 = qb2.DeQue<half>();
  LocalTensor<float> c = qc.AllocTensor<float>();
  MmadParams mm;
  mm.m = 16;
  mm.n = 16;
  mm.k = 16;
  mm.cmatrixInitVal = true;
  mm.cmatrixSource = false;
  Mmad(c, a2, b2, mm);
  qc.EnQue(c);
  qa2.FreeTensor(a2);
  qb2.FreeTensor(b2);
  c = qc.DeQue<float>();
  FixpipeParamsV220 fix;
  fix.nSize = 16;
  fix.mSize = 16;
  fix.srcStride = 16;
  fix.dstStride = 16;
  fix.quantPre = QuantMode_t::NoQuant;
  fix.ndNum = 1;
  Fixpipe(outGm[blk * 256], c, fix);
  GlobalTensor<float> accGm;  // every AIC's result accumulated by atomic Fixpipe stores
  accGm.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(acc), 256);
  SetAtomicAdd<float>();
  Fixpipe(accGm, c, fix);
  DisableDmaAtomic();
  qc.FreeTensor(c);
  CrossCoreSetFlag<0, PIPE_FIX>(1);
  CrossCoreWaitFlag(1);
  if (blk == 0) {
    for (int32_t i = 0; i < 256; ++i) {
      float sum = 0.0f;
      for (int64_t k = 0; k < GetBlockNum(); ++k) sum += outGm.GetValue(k * 256 + i);
      totalGm.SetValue(i, sum);
    }
  }
}

// ---- the tiling key ("ICPU_SET_TILING_KEY", "TILING_KEY_IS") ------------------------------------------------
extern "C" __global__ __aicore__ __vector__ void tiling_key_kernel(GM_ADDR unused) {
  (void)unused;
  if (GetBlockIdx() != 0) return;
  if (TILING_KEY_IS(1)) {
    std::printf("KEY 1\n");
  } else if (TILING_KEY_IS(2)) {
    std::printf("KEY 2\n");
  }
}

// ---- rules the model enforces: each case stops the run --------------------------------------------------------
extern "C" __global__ __aicore__ void error_kernel(GM_ADDR gm) {
  GlobalTensor<float> fGm;
  GlobalTensor<half> hGm;
  fGm.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(gm), 4096);
  hGm.SetGlobalBuffer(reinterpret_cast<__gm__ half *>(gm), 8192);
  switch (g_case) {
    case 1: {  // two allocators of one memory
      InitSocState();
      LocalMemAllocator<Hardware::UB> one;
      LocalMemAllocator<Hardware::UB> two;
      break;
    }
    case 2: {  // an address not 32-byte aligned
      LocalTensor<float> t(TPosition::VECCALC, 16, 8);
      break;
    }
    case 3: {  // past the end of UB
      LocalTensor<float> t(TPosition::VECCALC, 192 * 1024 - 32, 16);
      break;
    }
    case 4: {  // static tensors on a core with TPipe buffers
      TPipe pipe;
      TBuf<TPosition::VECCALC> buf;
      pipe.InitBuffer(buf, 256);
      LocalTensor<float> t(TPosition::VECCALC, 1024, 8);
      break;
    }
    case 5: {  // a DMA store to GM before InitSocState (static Tensor programming)
      LocalMemAllocator<Hardware::UB> alloc;
      LocalTensor<float> t = alloc.Alloc<float, 8>();
      DataCopy(fGm, t, 8);
      break;
    }
    case 6: {  // an atomic type A2/A3 do not take
      InitSocState();
      SetAtomicAdd<double>();
      break;
    }
    case 7: {  // atomic float, store of halfs
      TPipe pipe;
      TBuf<TPosition::VECCALC> buf;
      pipe.InitBuffer(buf, 256);
      SetAtomicAdd<float>();
      DataCopy(hGm, buf.Get<half>(), 16);
      break;
    }
    case 8:  // mode 1 in an AIV_MODE launch
      CrossCoreSetFlag<1, PIPE_MTE3>(0);
      break;
    case 9:  // cross-core synchronisation in an AIV_ONLY kernel
      KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
      CrossCoreSetFlag<0, PIPE_MTE3>(0);
      break;
    case 10:  // TILING_KEY_IS without a tiling key
      if (TILING_KEY_IS(1)) std::printf("never\n");
      break;
    case 11:  // SyncAll<true> on an AIC (MIX launch)
      SyncAll<true>();
      break;
    case 12: {  // a TQue at C2 (BiasTable)
      TPipe pipe;
      TQue<TPosition::C2, 1> q;
      pipe.InitBuffer(q, 1, 256);
      break;
    }
    case 13: {  // two 40 KiB buffers in the 64 KiB L0A (AIC_MODE)
      TPipe pipe;
      TQue<TPosition::A2, 1> q;
      pipe.InitBuffer(q, 2, 40 * 1024);
      break;
    }
    case 14: {  // SetPadValue's type is not the copy's
      TPipe pipe;
      TBuf<TPosition::VECIN> buf;
      pipe.InitBuffer(buf, 64);
      SetPadValue(1.0f);
      DataCopyPad(buf.Get<half>(), hGm, DataCopyExtParams{1, 20, 0, 0, 0},
                  DataCopyPadExtParams<half>{false, 0, 6, half(0.0f)});
      break;
    }
    case 15: {  // an L1 allocator on an AIV
      LocalMemAllocator<Hardware::L1> alloc;
      LocalTensor<half> t = alloc.Alloc<half, 16>();
      (void)t;
      break;
    }
    case 16: {  // the soft SyncAll on a workspace not zeroed
      TPipe pipe;
      TBuf<TPosition::VECCALC> ub;
      pipe.InitBuffer(ub, 32 * GetBlockNum());
      GlobalTensor<int32_t> s;
      s.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t *>(gm));
      s.SetValue(GetBlockIdx() * 8, 7);
      SyncAll(s, ub.Get<int32_t>());
      break;
    }
    case 17: {  // an atomic store racing a plain store of another core
      TPipe pipe;
      TBuf<TPosition::VECCALC> buf;
      pipe.InitBuffer(buf, 256);
      if (GetBlockIdx() != 0) SetAtomicAdd<float>();
      DataCopy(fGm, buf.Get<float>(), 64);
      break;
    }
    default:
      break;
  }
}

// ---- the compiler's auto-sync (同步控制/核内同步/关键特性说明.md, 表3) ------------------------------------
// Each variant leaves out exactly one synchronisation. Built with build_cpu_debug.sh's default
// (--cce-auto-sync=on) the Bisheng compiler would insert those of PIPE_V -> PIPE_V and PIPE_S <-> PIPE_V /
// MTE2 / MTE3 on a Vector core, so those variants run; MTE2 -> V, two MTE3 stores to overlapping GM and
// anything on the Cube core are the kernel's to synchronise in either build.
extern "C" __global__ __aicore__ __vector__ void autosync_kernel(GM_ADDR src, GM_ADDR dst) {
  TPipe pipe;
  TBuf<TPosition::VECCALC> buf;
  pipe.InitBuffer(buf, 3 * kN * sizeof(float));
  LocalTensor<float> a = buf.Get<float>();
  LocalTensor<float> b = a[kN];
  LocalTensor<float> c = a[2 * kN];
  GlobalTensor<float> srcGm, dstGm;
  srcGm.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(src), kN);
  dstGm.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(dst), 2 * kN);
  const std::string &v = g_variant;
  DataCopy(a, srcGm, kN);
  if (v == "mte2_s") {  // MTE2 -> S: a scalar read of what the copy brought in
    a.SetValue(0, a.GetValue(0) + 100.0f);
  } else if (v != "mte2_v") {
    SetFlag<HardEvent::MTE2_S>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_S>(EVENT_ID0);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
  }
  if (v == "s_v") a.SetValue(1, 50.0f);  // S -> V: the Add below reads it
  Add(b, a, a, kN);                      // b = 2a
  if (v != "v_v") PipeBarrier<PIPE_V>();
  Muls(c, b, 3.0f, kN);  // V -> V: c = 6a
  if (v != "v_s") {
    SetFlag<HardEvent::V_S>(EVENT_ID0);
    WaitFlag<HardEvent::V_S>(EVENT_ID0);
  }
  c.SetValue(2, c.GetValue(2) + 1.0f);  // V -> S
  if (v != "s_mte3") {
    SetFlag<HardEvent::S_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::S_MTE3>(EVENT_ID0);
  }
  SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
  WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
  DataCopy(dstGm, c, kN);  // S -> MTE3
  if (v != "mte3_mte3") PipeBarrier<PIPE_MTE3>();
  DataCopy(dstGm[kN / 2], b, kN);  // overlaps the first store's second half
}

// On the Cube core the compiler inserts nothing: a scalar store to GM, then MTE2 reading it, needs S_MTE2.
extern "C" __global__ __aicore__ __cube__ void autosync_cube_kernel(GM_ADDR src) {
  LocalMemAllocator<Hardware::L1> l1;
  LocalTensor<half> a1 = l1.Alloc<TPosition::A1, half, 128>();
  GlobalTensor<half> srcGm;
  srcGm.SetGlobalBuffer(reinterpret_cast<__gm__ half *>(src), 128);
  srcGm.SetValue(0, half(2.0f));
  if (g_variant != "cube_s_mte2") {
    SetFlag<HardEvent::S_MTE2>(EVENT_ID0);
    WaitFlag<HardEvent::S_MTE2>(EVENT_ID0);
  }
  DataCopy(a1, srcGm, 128);
}

// ---- what a kernel may allocate (NPU架构版本2201.md: 各存储单元的参数规格) ---------------------------------------
// A static tensor at a given address of UB (on the AIVs) and of L1 (on the AIC), both passed by value.
extern "C" __global__ __aicore__ void capacity_kernel(GM_ADDR unused, uint32_t ubAddr, uint32_t l1Addr) {
  (void)unused;
  if ASCEND_IS_AIV {
    LocalTensor<float> t(TPosition::VECCALC, ubAddr, 16);  // 64 bytes
    (void)t;
  } else {
    LocalTensor<half> t(TPosition::A1, l1Addr, 32);  // 64 bytes
    (void)t;
  }
}

// ---- utilities CANN's examples use: GetTPipePtr, GetSystemCycle, DivCeil, LocalTensor::GetPhyAddr ----------
extern "C" __global__ __aicore__ __vector__ void utils_kernel(GM_ADDR unused) {
  (void)unused;
  const bool before = GetTPipePtr() == nullptr;
  {
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    GetTPipePtr()->InitBuffer(buf, 64 * sizeof(float));  // through the pointer the TPipe set
    LocalTensor<float> t = buf.Get<float>();
    t.SetValue(5, 2.5f);
    const int64_t c0 = GetSystemCycle();
    std::this_thread::sleep_for(std::chrono::milliseconds(4));
    const int64_t c1 = GetSystemCycle();
    std::printf("UTIL %d %d %ld %u %ld %g\n", before ? 1 : 0, GetTPipePtr() == &pipe ? 1 : 0,
                static_cast<long>(c1 - c0), DivCeil(7, 2), static_cast<long>(t.GetPhyAddr(5) - t.GetPhyAddr()),
                static_cast<double>(*t.GetPhyAddr(5)));
  }
  std::printf("UTIL_AFTER %d\n", GetTPipePtr() == nullptr ? 1 : 0);
}

namespace {

int RunScenario(const std::string &name) {
  if (name == "autosync") {  // variant: the synchronisation left out ("none": all there)
    float *src = Gm<float>(kN), *dst = Gm<float>(2 * kN);
    for (int i = 0; i < kN; ++i) src[i] = static_cast<float>(i) - 20.0f;
    if (g_variant.rfind("cube", 0) == 0) {
      SetKernelMode(KernelMode::AIC_MODE);
      ICPU_RUN_KF(autosync_cube_kernel, 1, reinterpret_cast<uint8_t *>(src));
      return 0;
    }
    SetKernelMode(KernelMode::AIV_MODE);
    ICPU_RUN_KF(autosync_kernel, 1, reinterpret_cast<uint8_t *>(src), reinterpret_cast<uint8_t *>(dst));
    Print("dst", dst, 2 * kN);
    return 0;
  }
  if (name == "capacity") {  // variant: "<mix|aiv|aic>:<UB address>:<L1 address>"
    const size_t a = g_variant.find(':'), b = g_variant.rfind(':');
    const std::string mode = g_variant.substr(0, a);
    const uint32_t ubAddr = static_cast<uint32_t>(std::stoul(g_variant.substr(a + 1, b - a - 1)));
    const uint32_t l1Addr = static_cast<uint32_t>(std::stoul(g_variant.substr(b + 1)));
    uint8_t *gm = Gm<uint8_t>(32);
    SetKernelMode(mode == "aiv" ? KernelMode::AIV_MODE : mode == "aic" ? KernelMode::AIC_MODE : KernelMode::MIX_MODE);
    ICPU_RUN_KF(capacity_kernel, 1, gm, ubAddr, l1Addr);
    std::printf("CAPACITY ok\n");
    return 0;
  }
  if (name == "utils") {
    uint8_t *gm = Gm<uint8_t>(32);
    SetKernelMode(KernelMode::AIV_MODE);
    ICPU_RUN_KF(utils_kernel, 1, gm);
    return 0;
  }
  if (name == "sysvars") {  // variant: mix, aiv or aic
    uint8_t *gm = Gm<uint8_t>(32);
    SetKernelMode(g_variant == "aiv" ? KernelMode::AIV_MODE : g_variant == "aic" ? KernelMode::AIC_MODE
                                                                                  : KernelMode::MIX_MODE);
    ICPU_RUN_KF(sysvar_kernel, 3, gm);
    GmFree(gm);
    return 0;
  }
  if (name == "printf") {
    uint8_t *gm = Gm<uint8_t>(32);
    SetKernelMode(KernelMode::AIV_MODE);
    ICPU_RUN_KF(printf_kernel, 2, gm);
    GmFree(gm);
    return 0;
  }
  if (name == "by_value") {  // 4 blocks of kN floats; x[i] = i * 0.5 - 7
    float *x = Gm<float>(4 * kN), *y = Gm<float>(4 * kN);
    for (int i = 0; i < 4 * kN; ++i) x[i] = static_cast<float>(i) * 0.5f - 7.0f;
    SetKernelMode(KernelMode::AIV_MODE);
    const uint32_t perBlock = kN;
    ICPU_RUN_KF(affine_kernel, 4, reinterpret_cast<uint8_t *>(x), reinterpret_cast<uint8_t *>(y), perBlock,
                AffineArgs{3.0f, 1.25f});
    Print("y", y, 4 * kN);
    GmFree(x);
    GmFree(y);
    return 0;
  }
  if (name == "atomic") {
    float *init = Gm<float>(kN), *accF = Gm<float>(kN);
    uint16_t *accH = Gm<uint16_t>(kN);
    int32_t *maxI = Gm<int32_t>(kN);
    for (int i = 0; i < kN; ++i) {
      init[i] = 1.5f * static_cast<float>(i);
      accF[i] = 1000.0f;  // overwritten by block 0's plain store
      accH[i] = half(0.25f * static_cast<float>(i)).bits;
      maxI[i] = -5;
    }
    SetKernelMode(KernelMode::AIV_MODE);
    ICPU_RUN_KF(atomic_kernel, 4, reinterpret_cast<uint8_t *>(init), reinterpret_cast<uint8_t *>(accF),
                reinterpret_cast<uint8_t *>(accH), reinterpret_cast<uint8_t *>(maxI));
    std::vector<float> h(kN), m(kN);
    for (int i = 0; i < kN; ++i) {
      h[i] = HalfToFloat(accH[i]);
      m[i] = static_cast<float>(maxI[i]);
    }
    Print("accF", accF, kN);
    Print("accH", h.data(), kN);
    Print("maxI", m.data(), kN);
    return 0;
  }
  if (name == "mode0_aiv") {
    float *acc = Gm<float>(kN), *out = Gm<float>(kN);
    SetKernelMode(KernelMode::AIV_MODE);
    ICPU_RUN_KF(mode0_aiv_kernel, 4, reinterpret_cast<uint8_t *>(acc), reinterpret_cast<uint8_t *>(out));
    Print("out", out, kN);
    return 0;
  }
  if (name == "mode1") {
    float *work = Gm<float>(4 * kN), *out = Gm<float>(4 * kN);
    SetKernelMode(KernelMode::MIX_MODE);
    ICPU_RUN_KF(mode1_kernel, 2, reinterpret_cast<uint8_t *>(work), reinterpret_cast<uint8_t *>(out));
    Print("out", out, 4 * kN);
    return 0;
  }
  if (name == "mode2") {
    float *work = Gm<float>(4 * kN), *total = Gm<float>(2 * kN), *out = Gm<float>(4 * kN);
    SetKernelMode(KernelMode::MIX_MODE);
    ICPU_RUN_KF(mode2_kernel, 2, reinterpret_cast<uint8_t *>(work), reinterpret_cast<uint8_t *>(total),
                reinterpret_cast<uint8_t *>(out));
    Print("out", out, 4 * kN);
    return 0;
  }
  if (name == "syncall_mix") {
    float *work = Gm<float>(4 * kN), *total = Gm<float>(kN), *out = Gm<float>(4 * kN);
    SetKernelMode(KernelMode::MIX_MODE);
    ICPU_RUN_KF(syncall_mix_kernel, 2, reinterpret_cast<uint8_t *>(work), reinterpret_cast<uint8_t *>(total),
                reinterpret_cast<uint8_t *>(out));
    Print("out", out, 4 * kN);
    return 0;
  }
  if (name == "syncall_soft") {
    int32_t *sync = Gm<int32_t>(4 * 8);
    float *work = Gm<float>(2 * 4 * kN), *out = Gm<float>(2 * 4 * kN);
    SetKernelMode(KernelMode::AIV_MODE);
    ICPU_RUN_KF(syncall_soft_kernel, 4, reinterpret_cast<uint8_t *>(sync), reinterpret_cast<uint8_t *>(work),
                reinterpret_cast<uint8_t *>(out));
    Print("out", out, 2 * 4 * kN);
    std::vector<float> s(4);
    for (int b = 0; b < 4; ++b) s[b] = static_cast<float>(sync[b * 8]);
    Print("sync", s.data(), 4);
    return 0;
  }
  if (name == "pad") {
    uint16_t *src = Gm<uint16_t>(20), *dst = Gm<uint16_t>(32);
    for (int i = 0; i < 20; ++i) src[i] = half(static_cast<float>(i + 1)).bits;
    SetKernelMode(KernelMode::AIV_MODE);
    ICPU_RUN_KF(pad_kernel, 1, reinterpret_cast<uint8_t *>(src), reinterpret_cast<uint8_t *>(dst));
    std::vector<float> v(32);
    for (int i = 0; i < 32; ++i) v[i] = HalfToFloat(dst[i]);
    Print("row", v.data(), 32);
    return 0;
  }
  if (name == "static") {
    float *src = Gm<float>(2 * kN), *dst = Gm<float>(2 * kN);
    for (int i = 0; i < 2 * kN; ++i) src[i] = 0.5f * static_cast<float>(i) - 3.0f;
    SetKernelMode(KernelMode::AIV_MODE);
    ICPU_RUN_KF(static_kernel, 2, reinterpret_cast<uint8_t *>(src), reinterpret_cast<uint8_t *>(dst));
    Print("dst", dst, 2 * kN);
    return 0;
  }
  if (name == "cube") {
    uint16_t *a = Gm<uint16_t>(2 * 256), *w = Gm<uint16_t>(256);
    float *out = Gm<float>(2 * 256), *total = Gm<float>(256), *acc = Gm<float>(256);
    for (int i = 0; i < 256; ++i) acc[i] = 0.5f * static_cast<float>(i);
    for (int i = 0; i < 2 * 256; ++i) a[i] = half(static_cast<float>((i * 7) % 5 - 2)).bits;
    for (int i = 0; i < 256; ++i) w[i] = half(static_cast<float>((i * 3) % 7 - 3)).bits;
    SetKernelMode(KernelMode::AIC_MODE);
    ICPU_RUN_KF(cube_kernel, 2, reinterpret_cast<uint8_t *>(a), reinterpret_cast<uint8_t *>(w),
                reinterpret_cast<uint8_t *>(out), reinterpret_cast<uint8_t *>(total), reinterpret_cast<uint8_t *>(acc));
    Print("out", out, 2 * 256);
    Print("total", total, 256);
    Print("acc", acc, 256);
    return 0;
  }
  if (name == "tiling_key") {
    uint8_t *gm = Gm<uint8_t>(32);
    SetKernelMode(KernelMode::AIV_MODE);
    ICPU_SET_TILING_KEY(2);
    ICPU_RUN_KF(tiling_key_kernel, 2, gm);
    return 0;
  }
  if (name == "error") {  // variant: the case number
    g_case = std::stoi(g_variant);
    uint8_t *gm = Gm<uint8_t>(4 * 8192);
    const bool aic = g_case == 13;
    const bool mix = g_case == 11;
    SetKernelMode(aic ? KernelMode::AIC_MODE : mix ? KernelMode::MIX_MODE : KernelMode::AIV_MODE);
    ICPU_RUN_KF(error_kernel, 2, gm);
    return 0;
  }
  if (name == "not_gmalloc") {
    static uint8_t host[64];
    SetKernelMode(KernelMode::AIV_MODE);
    ICPU_RUN_KF(sysvar_kernel, 1, host);
    return 0;
  }
  std::fprintf(stderr, "unknown scenario %s\n", name.c_str());
  return 2;
}

}  // namespace

int main(int argc, char **argv) { return cpu_debug_program::Main(argc, argv, RunScenario); }
