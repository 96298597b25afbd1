// A vector-only kernel for the CPU model's CPU-debug interface (see ../../README.md): z = x + y on
// half, 8 blocks of 2048 elements, each block in tiles of 256 through UB. The adds are done by the
// scalar unit (GetValue / SetValue on PIPE_S), so every hand-over between the copy pipes (MTE2 in,
// MTE3 out) and the scalar unit is an explicit event.
#include "kernel_operator.h"

namespace {
constexpr int32_t kBlockLength = 2048;  // elements per block
constexpr int32_t kTileLength = 256;    // elements per tile
constexpr int32_t kTiles = kBlockLength / kTileLength;
}  // namespace

extern "C" __global__ __aicore__ __vector__ void add_custom(GM_ADDR x, GM_ADDR y, GM_ADDR z) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
  using namespace AscendC;
  TPipe pipe;
  TBuf<TPosition::VECCALC> xBuf, yBuf, zBuf;
  pipe.InitBuffer(xBuf, kTileLength * sizeof(half));
  pipe.InitBuffer(yBuf, kTileLength * sizeof(half));
  pipe.InitBuffer(zBuf, kTileLength * sizeof(half));
  LocalTensor<half> xLocal = xBuf.Get<half>();
  LocalTensor<half> yLocal = yBuf.Get<half>();
  LocalTensor<half> zLocal = zBuf.Get<half>();
  GlobalTensor<half> xGm, yGm, zGm;
  const int64_t start = kBlockLength * GetBlockIdx();
  xGm.SetGlobalBuffer(reinterpret_cast<__gm__ half *>(x) + start, kBlockLength);
  yGm.SetGlobalBuffer(reinterpret_cast<__gm__ half *>(y) + start, kBlockLength);
  zGm.SetGlobalBuffer(reinterpret_cast<__gm__ half *>(z) + start, kBlockLength);
  for (int32_t tile = 0; tile < kTiles; ++tile) {
    if (tile > 0) WaitFlag<HardEvent::S_MTE2>(EVENT_ID0);  // the scalar unit has read the last tile
    DataCopy(xLocal, xGm[tile * kTileLength], kTileLength);
    DataCopy(yLocal, yGm[tile * kTileLength], kTileLength);
    SetFlag<HardEvent::MTE2_S>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_S>(EVENT_ID0);
    if (tile > 0) WaitFlag<HardEvent::MTE3_S>(EVENT_ID0);  // MTE3 has read the last tile's sums
    for (int32_t i = 0; i < kTileLength; ++i) {
      zLocal.SetValue(i, half(static_cast<float>(xLocal.GetValue(i)) + static_cast<float>(yLocal.GetValue(i))));
    }
    if (tile + 1 < kTiles) SetFlag<HardEvent::S_MTE2>(EVENT_ID0);
    SetFlag<HardEvent::S_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::S_MTE3>(EVENT_ID0);
    DataCopy(zGm[tile * kTileLength], zLocal, kTileLength);
    if (tile + 1 < kTiles) SetFlag<HardEvent::MTE3_S>(EVENT_ID0);
  }
}
