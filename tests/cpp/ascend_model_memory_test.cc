// Kernels for tests/test_ascend_model_memory.py: the memory-management APIs of the CPU model against CANN's
// documents (asc-devkit docs/zh/api/SIMD-API/基础API/资源管理/TPipe/*.md, TBufPool/*.md, 自定义TBufPool/*.md,
// 数据结构/GlobalTensor/SetL2CacheHint.md, 工具接口/系统资源与变量/GetUBSizeInBytes.md, GetRuntimeUBSize.md).
// Built with ascendc/cpu_model/build_cpu_debug.sh (auto-sync on, as CANN builds a <<<>>> launch); run as
// `<program> <scenario> [variant]`; every kernel runs on one AIV (AIV_MODE). Results are printed as lines
// "<name> v0 v1 ..." for the test to check with numpy; a stopped run prints ICPU_RUN_KF(...): <message>.
#include <cstdio>
#include <cstring>
#include <string>

#include "kernel_operator.h"
#include "cpu_debug_program.h"
#include "tikicpulib.h"

using namespace AscendC;
using cpu_debug_program::g_variant;
using cpu_debug_program::Gm;
using cpu_debug_program::Print;

namespace {

constexpr uint32_t kN = 256;  // floats per vector of the scenarios (1 KB)
constexpr uint32_t kBytes = kN * sizeof(float);


// The byte offset of a tensor's first element from a reference tensor's (both in UB).
template <typename T, typename U>
long Offset(const LocalTensor<T> &t, const LocalTensor<U> &ref) {
  return static_cast<long>(reinterpret_cast<const uint8_t *>(t.GetPhyAddr()) -
                           reinterpret_cast<const uint8_t *>(ref.GetPhyAddr()));
}

// z = x (op) y through queues in, in, out: CopyIn / Compute / CopyOut as CANN's examples write them. With a
// label, prints the UB byte offsets of the three buffers from `ref`'s.
template <class QIn, class QOut>
void AddOrMul(QIn &qx, QIn &qy, QOut &qz, const GlobalTensor<float> &x, const GlobalTensor<float> &y,
              const GlobalTensor<float> &z, bool mul, const char *label = nullptr,
              const LocalTensor<float> *ref = nullptr) {
  LocalTensor<float> a = qx.template AllocTensor<float>();
  LocalTensor<float> b = qy.template AllocTensor<float>();
  DataCopy(a, x, kN);
  DataCopy(b, y, kN);
  qx.EnQue(a);
  qy.EnQue(b);
  a = qx.template DeQue<float>();
  b = qy.template DeQue<float>();
  LocalTensor<float> c = qz.template AllocTensor<float>();
  if (label != nullptr) std::printf("%s %ld %ld %ld\n", label, Offset(a, *ref), Offset(b, *ref), Offset(c, *ref));
  if (mul) {
    Mul(c, a, b, kN);
  } else {
    Add(c, a, b, kN);
  }
  qz.EnQue(c);
  qx.FreeTensor(a);
  qy.FreeTensor(b);
  c = qz.template DeQue<float>();
  DataCopy(z, c, kN);
  qz.FreeTensor(c);
}

}  // namespace

// ---- TBufPool: two pools on one start and length (TPipe/InitBufPool.md's example) ------------------------------
extern "C" __global__ __aicore__ void pool_share_kernel(GM_ADDR xg, GM_ADDR yg, GM_ADDR zg) {
  GlobalTensor<float> x, y, z;
  x.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(xg), kN);
  y.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(yg), kN);
  z.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(zg), 2 * kN);
  TPipe pipe;
  TBuf<TPosition::VECCALC> first;  // a buffer before the pools: they start after it
  pipe.InitBuffer(first, 64);
  const LocalTensor<float> ref = first.Get<float>();
  TBufPool<TPosition::VECCALC> pool1, pool2;
  TQue<TPosition::VECIN, 1> in0, in1, in2, in3;
  TQue<TPosition::VECOUT, 1> out0, out1;
  pipe.InitBufPool(pool1, kBytes * 3);
  pipe.InitBufPool(pool2, kBytes * 3, pool1);
  pool1.InitBuffer(in0, 1, kBytes);
  pool1.InitBuffer(in1, 1, kBytes);
  pool1.InitBuffer(out0, 1, kBytes);
  AddOrMul(in0, in1, out0, x, y, z, false, "SHARE_POOL1", &ref);
  pool1.Reset();
  pool2.InitBuffer(in2, 1, kBytes);
  pool2.InitBuffer(in3, 1, kBytes);
  pool2.InitBuffer(out1, 1, kBytes);
  AddOrMul(in2, in3, out1, x, y, z[kN], true, "SHARE_POOL2", &ref);
  pool2.Reset();
}

// ---- TBufPool: a pool carved into a pool and a queue, and a pool sharing the inner one (TBufPool/InitBufPool-55.md)
extern "C" __global__ __aicore__ void pool_nested_kernel(GM_ADDR xg, GM_ADDR yg, GM_ADDR zg) {
  GlobalTensor<float> x, y, z;
  x.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(xg), kN);
  y.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(yg), kN);
  z.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(zg), 2 * kN);
  TPipe pipe;
  TBuf<TPosition::VECCALC> first;  // a buffer before the pool: the pool starts after it
  pipe.InitBuffer(first, 64);
  TBufPool<TPosition::VECCALC> pool0, pool1, pool2;
  TQue<TPosition::VECIN, 1> in0, in1, in2;
  TQue<TPosition::VECOUT, 1> out0, out1;
  pipe.InitBufPool(pool0, kBytes * 4);
  pool0.InitBufPool(pool1, kBytes * 2);
  pool0.InitBuffer(in0, 1, kBytes * 2);
  pool0.InitBufPool(pool2, kBytes * 2, pool1);
  pool1.InitBuffer(in1, 1, kBytes);
  pool1.InitBuffer(out0, 1, kBytes);
  const LocalTensor<float> f = first.Get<float>();
  AddOrMul(in0, in1, out0, x, y, z, false, "NESTED_1", &f);
  pool1.Reset();
  pool2.InitBuffer(in2, 1, kBytes);
  pool2.InitBuffer(out1, 1, kBytes);
  AddOrMul(in0, in2, out1, x, y, z[kN], true, "NESTED_2", &f);
  pool2.Reset();
  pool0.Reset();
  pipe.Reset();
}

// ---- a user-defined pool (自定义TBufPool/EXTERN_IMPL_BUFPOOL宏.md) -----------------------------------------------
class MyPool {
 public:
  __aicore__ inline MyPool() { Init(); }
  template <class T>
  __aicore__ inline bool InitBuffer(T &que, uint8_t num, uint32_t len) {
    len = (len + 31) / 32 * 32;
    TBufHandle h = GetBufHandle(GetCurBufSize());
    const uint32_t addr = GetCurAddr();
    que.InitStartBufHandle(h, num, len);
    for (uint32_t i = 0; i < num; ++i) que.InitBufHandle(this, i, h, addr + i * len, len);
    SetCurAddr(addr + num * len + (g_variant == "custom_outside" ? kBytes * 4 : 0));
    SetCurBufSize(GetCurBufSize() + num);
    return true;
  }
  template <TPosition bufPos>
  __aicore__ inline bool InitBuffer(TBuf<bufPos> &buf, uint32_t len) {
    len = (len + 31) / 32 * 32;
    TBufHandle h = GetBufHandle(GetCurBufSize());
    const uint32_t addr = GetCurAddr();
    buf.InitStartBufHandle(h, 1, len);
    buf.InitBufHandle(this, 0, h, addr, len);
    SetCurAddr(addr + len);
    SetCurBufSize(GetCurBufSize() + 1);
    return true;
  }
  EXTERN_IMPL_BUFPOOL(MyPool, TPosition::VECCALC, 3);
};

extern "C" __global__ __aicore__ void pool_custom_kernel(GM_ADDR xg, GM_ADDR yg, GM_ADDR zg) {
  GlobalTensor<float> x, y, z;
  x.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(xg), kN);
  y.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(yg), kN);
  z.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(zg), kN);
  TPipe pipe;
  TBuf<TPosition::VECCALC> first;
  pipe.InitBuffer(first, 96);
  MyPool pool;
  pipe.InitBufPool(pool, kBytes * 3);
  const uint32_t start = pool.GetCurAddr();
  TQue<TPosition::VECIN, 1> in0;
  TBuf<TPosition::VECIN> buf1;
  TQue<TPosition::VECOUT, 1> out0;
  pool.InitBuffer(in0, 1, kBytes);
  pool.InitBuffer(buf1, kBytes);
  if (g_variant == "custom_bufids") {
    TBuf<TPosition::VECCALC> extra1, extra2;
    pool.InitBuffer(extra1, 32);  // the pool's 4th handle (BUFID_SIZE 3)
  }
  pool.InitBuffer(out0, 1, kBytes);
  std::printf("CUSTOM_POOL %u %u %u\n", start, pool.GetCurAddr(), static_cast<unsigned>(pool.GetCurBufSize()));
  LocalTensor<float> a = in0.AllocTensor<float>();
  LocalTensor<float> b = buf1.Get<float>();
  std::printf("CUSTOM_OFFSETS %ld %ld\n", Offset(a, first.Get<float>()), Offset(b, first.Get<float>()));
  DataCopy(a, x, kN);
  DataCopy(b, y, kN);
  in0.EnQue(a);
  a = in0.DeQue<float>();
  LocalTensor<float> c = out0.AllocTensor<float>();
  Sub(c, a, b, kN);
  out0.EnQue(c);
  in0.FreeTensor(a);
  c = out0.DeQue<float>();
  DataCopy(z, c, kN);
  out0.FreeTensor(c);
  pool.Reset();
  if (g_variant == "custom_use_after_reset") {
    Duplicate(b, 1.0f, kN);  // the pool's buffer after its Reset
  }
  if (g_variant == "custom_que_after_reset") {
    LocalTensor<float> again = in0.AllocTensor<float>();
    (void)again;
  }
  pipe.Reset();
}

// ---- capacity rules of TBufPool and TPipe::InitBufPool: each variant stops the run ------------------------------
extern "C" __global__ __aicore__ void pool_error_kernel(GM_ADDR unused) {
  (void)unused;
  TPipe pipe;
  TBufPool<TPosition::VECCALC> p1, p2;
  TBufPool<TPosition::VECCALC, 2> small;
  TBuf<TPosition::VECCALC> b1, b2, b3;
  TBuf<TPosition::A1> l1buf;
  TQue<TPosition::VECIN, 1> q;
  if (g_variant == "pool_over") {
    pipe.InitBufPool(p1, 1024);
    p1.InitBuffer(b1, 512);
    p1.InitBuffer(q, 1, 1024);  // 512 + 1024 > 1024
  } else if (g_variant == "pipe_over") {
    pipe.InitBuffer(b1, 100 * 1024);
    pipe.InitBufPool(p1, 100 * 1024);  // 200 KB > 188,160 bytes
  } else if (g_variant == "nested_over") {
    pipe.InitBufPool(p1, 2048);
    p1.InitBufPool(p2, 4096);
  } else if (g_variant == "bufids") {
    pipe.InitBufPool(small, 4096);
    small.InitBuffer(b1, 32);
    small.InitBuffer(b2, 32);
    small.InitBuffer(b3, 32);  // a third buffer in a pool of bufIDSize 2
  } else if (g_variant == "nested_bufids") {
    pipe.InitBufPool(p1, 4096);
    p1.InitBuffer(b1, 32);
    p1.InitBufPool(p2, 1024);  // p2 wants 4 buffer ids, p1 has 3 left
  } else if (g_variant == "share_len") {
    pipe.InitBufPool(p1, 1024);
    pipe.InitBufPool(p2, 2048, p1);
  } else if (g_variant == "after_reset") {
    pipe.InitBufPool(p1, 4096);
    p1.InitBuffer(b1, 32);
    p1.Reset();
    p1.InitBuffer(b2, 32);
  } else if (g_variant == "memory") {
    pipe.InitBufPool(p1, 4096);
    p1.InitBuffer(l1buf, 32);  // L1 buffer in a UB pool
  } else if (g_variant == "uninit") {
    p1.InitBuffer(b1, 32);
  }
  std::printf("POOL_ERROR none\n");
}

// ---- TPipe::Destroy / Init / Reset (TPipe/Destroy.md, Init.md, Reset.md; tpipe_reuse) ----------------------------
constexpr uint32_t kBig = 120 * 1024;  // two of them exceed the 188,160 bytes of UB a kernel may use

template <typename T>
void Scale(TPipe *pipe, const GlobalTensor<T> &x, const GlobalTensor<T> &z, float s) {
  TQue<TPosition::VECIN, 1> in;
  TQue<TPosition::VECOUT, 1> out;
  pipe->InitBuffer(in, 1, kBig);
  pipe->InitBuffer(out, 1, kBytes);
  LocalTensor<T> a = in.AllocTensor<T>();
  DataCopy(a, x, kN);
  in.EnQue(a);
  a = in.DeQue<T>();
  LocalTensor<T> c = out.AllocTensor<T>();
  Muls(c, a, static_cast<T>(s), kN);
  out.EnQue(c);
  in.FreeTensor(a);
  c = out.DeQue<T>();
  DataCopy(z, c, kN);
  out.FreeTensor(c);
}

extern "C" __global__ __aicore__ void pipe_reuse_kernel(GM_ADDR xg, GM_ADDR zg) {
  GlobalTensor<float> x, z;
  x.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(xg), kN);
  z.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(zg), 4 * kN);
  {
    TPipe pipe1;
    Scale(&pipe1, x, z, 2.0f);
    pipe1.Destroy();
    TPipe pipe2;  // the memory pipe1 held is free again
    Scale(&pipe2, x, z[kN], 3.0f);
    pipe2.Destroy();
  }
  TPipe pipe;
  Scale(&pipe, x, z[2 * kN], 4.0f);
  pipe.Destroy();
  pipe.Init();  // reuse of one TPipe: Destroy, then Init
  TQue<TPosition::VECIN, 1> que;
  for (int i = 0; i < 2; ++i) {  // TPipe/Reset.md: InitBuffer of one queue again after each Reset
    pipe.InitBuffer(que, 1, kBig);
    LocalTensor<float> a = que.AllocTensor<float>();
    DataCopy(a, x, kN);
    que.EnQue(a);
    a = que.DeQue<float>();
    Adds(a, a, static_cast<float>(i + 1), kN);
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(z[3 * kN], a, kN);
    que.FreeTensor(a);
    SetFlag<HardEvent::MTE3_MTE2>(EVENT_ID0);  // the next round's DataCopy into the same bytes
    WaitFlag<HardEvent::MTE3_MTE2>(EVENT_ID0);
    pipe.Reset();
  }
}

extern "C" __global__ __aicore__ void pipe_error_kernel(GM_ADDR xg) {
  GlobalTensor<float> x;
  x.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(xg), kN);
  TPipe pipe;
  TQue<TPosition::VECIN, 1> in;
  TBuf<TPosition::VECCALC> buf;
  pipe.InitBuffer(in, 1, kBytes);
  pipe.InitBuffer(buf, kBytes);
  LocalTensor<float> t = buf.Get<float>();
  if (g_variant == "init_live") {
    pipe.Init();  // still holds its buffers
  }
  if (g_variant == "without_init") {
    pipe.Destroy();
    pipe.InitBuffer(buf, kBytes);
  }
  if (g_variant == "tensor_after_destroy") {
    pipe.Destroy();
    Duplicate(t, 2.0f, kN);
  }
  if (g_variant == "que_after_destroy") {
    pipe.DestroyWithoutPipeAll();
    LocalTensor<float> a = in.AllocTensor<float>();
    (void)a;
  }
  if (g_variant == "get_after_reset") {
    pipe.Reset();
    LocalTensor<float> u = buf.Get<float>();
    (void)u;
  }
  if (g_variant == "pipe_over") {
    TBuf<TPosition::VECCALC> big;
    pipe.InitBuffer(big, 188160);  // on top of 2 KB
  }
  std::printf("PIPE_ERROR none\n");
}

// ---- SetL2CacheHint, GetUBSizeInBytes / GetRuntimeUBSize, constants, assert ---------------------------------
extern "C" __global__ __aicore__ void l2_hint_kernel(GM_ADDR xg, GM_ADDR yg, GM_ADDR zg) {
  GlobalTensor<float> x, y, z;
  x.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(xg), kN);
  y.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(yg), kN);
  z.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(zg), kN);
  x.SetL2CacheHint(CacheMode::CACHE_MODE_DISABLE);
  y.SetL2CacheHint<CacheRwMode::READ>(CacheMode::CACHE_MODE_NORMAL);
  if (g_variant == "persistent") z.SetL2CacheHint(CacheMode::CACHE_MODE_PERSISTENT);
  if (g_variant == "last") z.SetL2CacheHint(CacheMode::CACHE_MODE_LAST);
  TPipe pipe;
  TQue<TPosition::VECIN, 1> qx, qy;
  TQue<TPosition::VECOUT, 1> qz;
  pipe.InitBuffer(qx, 1, kBytes);
  pipe.InitBuffer(qy, 1, kBytes);
  pipe.InitBuffer(qz, 1, kBytes);
  AddOrMul(qx, qy, qz, x, y, z, false);
  std::printf("L2_MODES %d %d %d\n", static_cast<int>(x.ModelCacheMode()), static_cast<int>(y.ModelCacheMode()),
              static_cast<int>(z.ModelCacheMode()));
}

extern "C" __global__ __aicore__ void sizes_kernel(GM_ADDR unused) {
  (void)unused;
  static_assert(ONE_BLK_SIZE == 32, "ONE_BLK_SIZE");
  static_assert(GetDataBlockSizeInBytes() == 32, "GetDataBlockSizeInBytes");
  assert(ONE_BLK_SIZE == 32 && "assert from kernel_operator.h");
  std::printf("SIZES %u %d\n", ONE_BLK_SIZE, static_cast<int>(GetDataBlockSizeInBytes()));
  if (g_variant == "ub_size") std::printf("UB %u\n", GetUBSizeInBytes());
  if (g_variant == "runtime_ub_size") std::printf("UB %u\n", GetRuntimeUBSize());
}

namespace {


void Fill(float *x, float *y) {
  for (uint32_t i = 0; i < kN; ++i) {
    x[i] = static_cast<float>(i) * 0.5f - 17.0f;
    y[i] = static_cast<float>(i % 13) - 3.25f;
  }
}

int Run(const std::string &name) {
  float *x = Gm<float>(kN), *y = Gm<float>(kN), *z = Gm<float>(4 * kN);
  Fill(x, y);
  std::memset(z, 0, 4 * kBytes);
  SetKernelMode(KernelMode::AIV_MODE);
  auto X = reinterpret_cast<uint8_t *>(x), Y = reinterpret_cast<uint8_t *>(y), Z = reinterpret_cast<uint8_t *>(z);
  if (name == "share") {
    ICPU_RUN_KF(pool_share_kernel, 1, X, Y, Z);
    Print("z", z, 2 * kN);
  } else if (name == "nested") {
    ICPU_RUN_KF(pool_nested_kernel, 1, X, Y, Z);
    Print("z", z, 2 * kN);
  } else if (name == "custom") {
    ICPU_RUN_KF(pool_custom_kernel, 1, X, Y, Z);
    Print("z", z, kN);
  } else if (name == "pool_error") {
    ICPU_RUN_KF(pool_error_kernel, 1, X);
  } else if (name == "pipe_reuse") {
    ICPU_RUN_KF(pipe_reuse_kernel, 1, X, Z);
    Print("z", z, 4 * kN);
  } else if (name == "pipe_error") {
    ICPU_RUN_KF(pipe_error_kernel, 1, X);
  } else if (name == "l2") {
    ICPU_RUN_KF(l2_hint_kernel, 1, X, Y, Z);
    Print("z", z, kN);
  } else if (name == "sizes") {
    ICPU_RUN_KF(sizes_kernel, 1, X);
  } else {
    std::fprintf(stderr, "unknown scenario %s\n", name.c_str());
    return 2;
  }
  Print("x", x, kN);
  Print("y", y, kN);
  return 0;
}

}  // namespace

int main(int argc, char **argv) { return cpu_debug_program::Main(argc, argv, Run); }
