// A permissive stand-in for the part of the AscendC API the kernel names, so that g++ can parse and
// instantiate ascendc/.../op_kernel on a machine without CANN (tests/test_ascend_host_logic.py).
// It checks our own code: names, members, types and arithmetic of the kernel and the header it
// shares with the host. It checks nothing about CANN: API calls accept any arguments here.
#pragma once
#include <cstdint>
#include <type_traits>
#define __aicore__
#define __global__
#define __gm__
typedef uint8_t *GM_ADDR;
extern bool g_aic;
#define ASCEND_IS_AIC (g_aic)
#define ASCEND_IS_AIV (!g_aic)
struct half { half() {} half(float) {} };
struct bfloat16_t { bfloat16_t() {} bfloat16_t(float) {} };
typedef int event_t;
enum pipe_t { PIPE_V, PIPE_FIX, PIPE_MTE2, PIPE_MTE3, PIPE_M, PIPE_S };
namespace AscendC {
enum class HardEvent { FIX_M, MTE1_M, MTE2_MTE1, MTE2_V, M_FIX, S_V, V_MTE3, MTE3_V };
enum class TPosition { A1, A2, B1, B2, CO1, VECCALC, VECIN, VECOUT };
enum class QuePosition { VECIN, VECOUT };
enum class RoundMode { CAST_NONE, CAST_RINT };
enum class ReduceOrder { ORDER_ONLY_VALUE };
enum class QuantMode_t { NoQuant };
template <typename A, typename B> struct IsSameType { static constexpr bool value = std::is_same<A, B>::value; };
template <typename T> struct LocalTensor {
  LocalTensor operator[](uint64_t) const { return *this; }
  void SetValue(uint64_t, T) const {}
  T GetValue(uint64_t) const { return T(); }
};
template <typename T> struct GlobalTensor {
  void SetGlobalBuffer(__gm__ T *) {}
  T GetValue(uint64_t) const { return T(); }
  GlobalTensor operator[](uint64_t) const { return *this; }
};
struct TPipe {
  template <typename... A> void InitBuffer(A &&...) {}
  int FetchEventID(HardEvent) { return 0; }
};
template <TPosition P> struct TBuf { template <typename T> LocalTensor<T> Get() { return {}; } };
template <QuePosition P, int N> struct TQue {
  template <typename T> LocalTensor<T> AllocTensor() { return {}; }
  template <typename T> void EnQue(const LocalTensor<T> &) {}
  template <typename T> LocalTensor<T> DeQue() { return {}; }
  template <typename T> void FreeTensor(const LocalTensor<T> &) {}
};
struct Nd2NzParams { uint16_t ndNum, nValue, dValue, srcNdMatrixStride, srcDValue, dstNzC0Stride, dstNzNStride, dstNzMatrixStride; };
struct LoadData2DParams { uint16_t startIndex, repeatTimes, srcStride, dstGap; bool ifTranspose; };
struct MmadParams { uint16_t m, n, k; bool cmatrixInitVal, cmatrixSource; };
struct FixpipeParamsV220 { uint16_t nSize, mSize, srcStride, dstStride; QuantMode_t quantPre; uint16_t ndNum; };
struct DataCopyExtParams { uint16_t blockCount; uint32_t blockLen, srcStride, dstStride, rsv; };
template <typename T> struct DataCopyPadExtParams { bool isPad; uint8_t l, r; T v; };
struct BinaryRepeatParams { BinaryRepeatParams(int, int, int, int, int, int) {} };
template <typename... A> void DataCopy(A &&...) {}
template <typename... A> void DataCopyPad(A &&...) {}
template <typename... A> void LoadData(A &&...) {}
template <typename... A> void Mmad(A &&...) {}
template <typename... A> void Fixpipe(A &&...) {}
template <typename... A> void Duplicate(A &&...) {}
template <typename... A> void Max(A &&...) {}
template <typename... A> void Mul(A &&...) {}
template <typename... A> void Cast(A &&...) {}
template <typename... A> void Gather(A &&...) {}
template <typename... A> void WholeReduceMax(A &&...) {}
template <pipe_t P> void PipeBarrier() {}
template <HardEvent E> void SetFlag(event_t) {}
template <HardEvent E> void WaitFlag(event_t) {}
template <uint8_t M, pipe_t P> void CrossCoreSetFlag(uint16_t) {}
inline void CrossCoreWaitFlag(uint16_t) {}
inline int64_t GetBlockIdx() { return 0; }
inline GM_ADDR GetUserWorkspace(GM_ADDR w) { return w; }
}  // namespace AscendC
#define REGISTER_TILING_DEFAULT(T)
#define GET_TILING_DATA(name, ptr) msa_tiling::MsaIndexScoreTilingData name{}
#define KERNEL_TASK_TYPE_DEFAULT(x)
