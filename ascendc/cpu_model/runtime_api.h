// The AscendC runtime API of the CPU model: TPipe / TQue / TBuf, synchronisation (SetFlag, WaitFlag,
// PipeBarrier, CrossCoreSetFlag, CrossCoreWaitFlag), the core indices, the workspace and the kernel
// entry macros. Declared as in CANN's public headers (kernel_tpipe.h, kernel_operator_block_sync_intf.h,
// kernel_operator_sys_var_intf.h, kernel_utils_macros.h) with a defaulted Site last parameter; the
// behaviour lives in runtime.cc.
#ifndef ASCEND_MODEL_RUNTIME_API_H
#define ASCEND_MODEL_RUNTIME_API_H

// The model's symbols are exported (the library is built with -fvisibility=hidden): a kernel built
// separately (ms_msa.testing.ascend_model.kernel_variant) runs on the machine of the main library.
#pragma GCC visibility push(default)

#include <cstdint>

#include "runtime_types.h"

// The kernel's core type: the kernel is compiled once for the Cube (AIC) and once for the Vector
// cores (AIV), as CANN's compiler does for a MIX kernel; `if ASCEND_IS_AIC` is an `if constexpr`.
#if defined(ASCEND_MODEL_AIC)
constexpr int32_t g_coreType = AscendC::AIC;
#elif defined(ASCEND_MODEL_AIV)
constexpr int32_t g_coreType = AscendC::AIV;
#else
constexpr int32_t g_coreType = AscendC::MIX;
#endif
#define ASCEND_IS_AIV constexpr(g_coreType == AscendC::AIV)
#define ASCEND_IS_AIC constexpr(g_coreType == AscendC::AIC)
#define ASCEND_IS_NOT_AIV constexpr(g_coreType != AscendC::AIV)
#define ASCEND_IS_NOT_AIC constexpr(g_coreType != AscendC::AIC)

// Kernel types of KERNEL_TASK_TYPE_DEFAULT (global, as in kernel_utils_macros.h).
enum KernelMetaType : uint8_t {
  KERNEL_TYPE_AIV_ONLY,
  KERNEL_TYPE_AIC_ONLY,
  KERNEL_TYPE_MIX_AIV_1_0,
  KERNEL_TYPE_MIX_AIC_1_0,
  KERNEL_TYPE_MIX_AIC_1_1,
  KERNEL_TYPE_MIX_AIC_1_2,
  KERNEL_TYPE_AICORE,
  KERNEL_TYPE_VECTORCORE,
  KERNEL_TYPE_MIX_AICORE,
  KERNEL_TYPE_MIX_VECTOR_CORE,
  KERNEL_TYPE_MAX,
};

namespace ascend_model {

// Runtime entry points behind the API (runtime.cc). Not part of the AscendC API.
void CheckKernelType(KernelMetaType type, const Site &site);
void CopyTiling(void *dst, const uint8_t *tiling, uint64_t bytes, const Site &site);
const LocalBuffer *AllocBuffer(AscendC::TPosition pos, uint32_t bytes, const Site &site);
void SetFlagOn(AscendC::HardEvent event, int32_t id, const Site &site);
void WaitFlagOn(AscendC::HardEvent event, int32_t id, const Site &site);
void Barrier(pipe_t pipe, const Site &site);
void CrossCoreSet(uint8_t mode, pipe_t pipe, uint16_t flagId, const Site &site);
void CrossCoreWait(uint8_t mode, pipe_t pipe, uint16_t flagId, const Site &site);
int64_t BlockIdx();
int64_t BlockNum();
int64_t SubBlockIdx();
int64_t SubBlockNum();
AscendC::TEventID FetchEvent(AscendC::HardEvent event, const Site &site);
AscendC::TEventID AllocEvent(AscendC::HardEvent event, const Site &site);
void ReleaseEvent(AscendC::HardEvent event, AscendC::TEventID id, const Site &site);
GM_ADDR UserWorkspace(GM_ADDR workspace, const Site &site);

// Queue bookkeeping (TQue auto-synchronisation, see runtime.cc).
struct QueueState;
QueueState *NewQueue(AscendC::TPosition pos, int32_t depth, const Site &site);
void QueueInit(QueueState *q, uint8_t num, uint32_t len, const Site &site);
const LocalBuffer *QueueAlloc(QueueState *q, const Site &site);
void QueueEnQue(QueueState *q, const LocalBuffer *buffer, const Site &site);
const LocalBuffer *QueueDeQue(QueueState *q, const Site &site);
void QueueFree(QueueState *q, const LocalBuffer *buffer, const Site &site);
[[noreturn]] void FailUninitialised(const char *api, const Site &site);

}  // namespace ascend_model

namespace AscendC {

template <TPosition pos, int32_t depth, auto mask = 0>
class TQue {
 public:
  __aicore__ inline TQue() = default;
  template <typename T>
  __aicore__ inline LocalTensor<T> AllocTensor(const ascend_model::Site &site = ascend_model::Site()) {
    const ascend_model::LocalBuffer *b = ascend_model::QueueAlloc(State(site), site);
    return LocalTensor<T>::ModelMake(b, static_cast<uint32_t>(b->bytes / sizeof(T)));
  }
  template <typename T>
  __aicore__ inline bool EnQue(const LocalTensor<T> &tensor, const ascend_model::Site &site = ascend_model::Site()) {
    CheckWhole(tensor, "TQue::EnQue", site);
    ascend_model::QueueEnQue(State(site), tensor.ModelBuffer(), site);
    return true;
  }
  template <typename T>
  __aicore__ inline LocalTensor<T> DeQue(const ascend_model::Site &site = ascend_model::Site()) {
    const ascend_model::LocalBuffer *b = ascend_model::QueueDeQue(State(site), site);
    return LocalTensor<T>::ModelMake(b, static_cast<uint32_t>(b->bytes / sizeof(T)));
  }
  template <typename T>
  __aicore__ inline void FreeTensor(LocalTensor<T> &tensor, const ascend_model::Site &site = ascend_model::Site()) {
    CheckWhole(tensor, "TQue::FreeTensor", site);
    ascend_model::QueueFree(State(site), tensor.ModelBuffer(), site);
  }

  ascend_model::QueueState *ModelState() { return state_; }
  void ModelBind(ascend_model::QueueState *state) { state_ = state; }

 private:
  // A queue takes back the tensor AllocTensor/DeQue gave out, not a slice of it.
  template <typename T>
  static void CheckWhole(const LocalTensor<T> &tensor, const char *api, const ascend_model::Site &site) {
    if (tensor.ModelOffsetBytes() != 0) ascend_model::Fail(api, site, "the tensor is a slice, not the queue's buffer");
  }
  ascend_model::QueueState *State(const ascend_model::Site &site) {
    if (state_ == nullptr) ascend_model::FailUninitialised("TQue (no InitBuffer)", site);
    return state_;
  }
  ascend_model::QueueState *state_ = nullptr;
};

template <TPosition pos = TPosition::LCM>
class TBuf {
 public:
  __aicore__ inline TBuf() = default;
  template <typename T>
  __aicore__ inline LocalTensor<T> Get(const ascend_model::Site &site = ascend_model::Site()) {
    if (buffer_ == nullptr) ascend_model::FailUninitialised("TBuf::Get (no InitBuffer)", site);
    return LocalTensor<T>::ModelMake(buffer_, static_cast<uint32_t>(buffer_->bytes / sizeof(T)));
  }
  template <typename T>
  __aicore__ inline LocalTensor<T> Get(uint32_t len, const ascend_model::Site &site = ascend_model::Site()) {
    if (buffer_ == nullptr) ascend_model::FailUninitialised("TBuf::Get (no InitBuffer)", site);
    if (static_cast<uint64_t>(len) * sizeof(T) > buffer_->bytes) {
      ascend_model::Fail("TBuf::Get", site, "len exceeds the buffer's InitBuffer length");
    }
    return LocalTensor<T>::ModelMake(buffer_, len);
  }
  void ModelBind(const ascend_model::LocalBuffer *buffer) { buffer_ = buffer; }
  bool ModelBound() const { return buffer_ != nullptr; }

 private:
  const ascend_model::LocalBuffer *buffer_ = nullptr;
};

class TPipe {
 public:
  __aicore__ inline TPipe() {}
  __aicore__ inline ~TPipe() {}
  __aicore__ inline void Init() {}

  template <class T>
  __aicore__ inline bool InitBuffer(T &que, uint8_t num, uint32_t len,
                                    const ascend_model::Site &site = ascend_model::Site()) {
    if (que.ModelState() != nullptr) ascend_model::Fail("TPipe::InitBuffer", site, "the queue is already initialised");
    ascend_model::QueueState *q = ascend_model::NewQueue(QueuePos(que), QueueDepth(que), site);
    ascend_model::QueueInit(q, num, len, site);
    que.ModelBind(q);
    return true;
  }
  template <TPosition pos>
  __aicore__ inline bool InitBuffer(TBuf<pos> &buf, uint32_t len,
                                    const ascend_model::Site &site = ascend_model::Site()) {
    if (buf.ModelBound()) ascend_model::Fail("TPipe::InitBuffer", site, "the buffer is already initialised");
    buf.ModelBind(ascend_model::AllocBuffer(pos, len, site));
    return true;
  }

  template <HardEvent evt>
  __aicore__ inline TEventID AllocEventID(const ascend_model::Site &site = ascend_model::Site()) {
    return ascend_model::AllocEvent(evt, site);
  }
  template <HardEvent evt>
  __aicore__ inline void ReleaseEventID(TEventID id, const ascend_model::Site &site = ascend_model::Site()) {
    ascend_model::ReleaseEvent(evt, id, site);
  }
  template <HardEvent evt>
  __aicore__ inline TEventID FetchEventID(const ascend_model::Site &site = ascend_model::Site()) {
    return ascend_model::FetchEvent(evt, site);
  }
  __aicore__ inline TEventID FetchEventID(HardEvent evt, const ascend_model::Site &site = ascend_model::Site()) {
    return ascend_model::FetchEvent(evt, site);
  }

 private:
  template <TPosition pos, int32_t depth, auto mask>
  static constexpr TPosition QueuePos(const TQue<pos, depth, mask> &) { return pos; }
  template <TPosition pos, int32_t depth, auto mask>
  static constexpr int32_t QueueDepth(const TQue<pos, depth, mask> &) { return depth; }
};

// ---- synchronisation inside a core ---------------------------------------------------------------------
template <HardEvent event>
__aicore__ inline void SetFlag(int32_t eventID, const ascend_model::Site &site = ascend_model::Site()) {
  ascend_model::SetFlagOn(event, eventID, site);
}
template <HardEvent event>
__aicore__ inline void WaitFlag(int32_t eventID, const ascend_model::Site &site = ascend_model::Site()) {
  ascend_model::WaitFlagOn(event, eventID, site);
}
template <pipe_t pipe>
__aicore__ inline void PipeBarrier(const ascend_model::Site &site = ascend_model::Site()) {
  ascend_model::Barrier(pipe, site);
}

// ---- synchronisation between the cores of an AI core (A2/A3: modes 0, 1, 2; flag ids 0-15) ------------
template <uint8_t modeId, pipe_t pipe>
__aicore__ inline void CrossCoreSetFlag(uint16_t flagId, const ascend_model::Site &site = ascend_model::Site()) {
  static_assert(modeId <= 2, "CrossCoreSetFlag: Atlas A2/A3 support modes 0, 1 and 2");
  static_assert(pipe != PIPE_S && pipe != PIPE_ALL, "CrossCoreSetFlag: pipe must not be PIPE_S or PIPE_ALL");
  ascend_model::CrossCoreSet(modeId, pipe, flagId, site);
}
template <uint8_t modeId = 0, pipe_t pipe = PIPE_S>
__aicore__ inline void CrossCoreWaitFlag(uint16_t flagId, const ascend_model::Site &site = ascend_model::Site()) {
  ascend_model::CrossCoreWait(modeId, pipe, flagId, site);
}

// ---- system variables --------------------------------------------------------------------------------
__aicore__ inline int64_t GetBlockNum() { return ascend_model::BlockNum(); }
__aicore__ inline int64_t GetBlockIdx() { return ascend_model::BlockIdx(); }
__aicore__ inline int64_t GetSubBlockIdx() { return ascend_model::SubBlockIdx(); }
__aicore__ inline int64_t GetSubBlockNum() { return ascend_model::SubBlockNum(); }

__aicore__ inline GM_ADDR GetUserWorkspace(GM_ADDR workspace, const ascend_model::Site &site = ascend_model::Site()) {
  return ascend_model::UserWorkspace(workspace, site);
}

}  // namespace AscendC

// ---- kernel entry macros --------------------------------------------------------------------------------
// REGISTER_TILING_DEFAULT names the kernel's standard C++ tiling struct; GET_TILING_DATA copies the
// tiling bytes from global memory into a local of that type (a scalar read of the tiling buffer).
#define REGISTER_TILING_DEFAULT(tiling_struct) using AscendModelTilingType_ = tiling_struct
#define GET_TILING_DATA(tiling_data, tiling_arg)                                                         \
  AscendModelTilingType_ tiling_data;                                                                   \
  ascend_model::CopyTiling(&tiling_data, reinterpret_cast<const uint8_t *>(tiling_arg), sizeof(tiling_data), \
                           ascend_model::Site())
#define KERNEL_TASK_TYPE_DEFAULT(value) ascend_model::CheckKernelType(value, ascend_model::Site())

#pragma GCC visibility pop

#endif  // ASCEND_MODEL_RUNTIME_API_H
