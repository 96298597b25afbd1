// The AscendC runtime API of the CPU model: TPipe / TQue / TBuf, LocalMemAllocator, synchronisation
// (SetFlag, WaitFlag, PipeBarrier, CrossCoreSetFlag, CrossCoreWaitFlag, SyncAll), atomic DMA stores
// (SetAtomicAdd, DisableDmaAtomic, ...), InitSocState, the core indices, the workspace, the tiling key
// and the kernel entry macros. Declared as in CANN's public headers (kernel_tpipe.h, kernel_tensor.h,
// kernel_operator_block_sync_intf.h, kernel_operator_set_atomic_intf.h, kernel_operator_common_intf.h,
// kernel_operator_sys_var_intf.h, kernel_utils_macros.h) with a defaulted Site last parameter; the
// behaviour lives in runtime.cc.
#ifndef ASCEND_MODEL_RUNTIME_API_H
#define ASCEND_MODEL_RUNTIME_API_H

// The model's symbols are exported (the library is built with -fvisibility=hidden): a kernel built
// separately (ms_msa.testing.ascend_model.kernel_variant) runs on the machine of the main library.
#pragma GCC visibility push(default)

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <utility>

#include "runtime_types.h"

// The kernel's core type. Two ways to build a kernel:
//  * once for the host, as CANN's CPU twin debug does (tikicpulib.h, ICPU_RUN_KF): g_coreType is the
//    core type of the calling thread (AIC or AIV), set by the machine, and ASCEND_IS_AIV / AIC are
//    run-time tests, as CANN's sys_macros.h defines them under ASCENDC_CPU_DEBUG;
//  * once per core type, as CANN's compiler builds a MIX kernel for the device (-DASCEND_MODEL_AIC or
//    -DASCEND_MODEL_AIV): g_coreType is a constant and `if ASCEND_IS_AIC` an `if constexpr`.
#if defined(ASCEND_MODEL_AIC)
constexpr int32_t g_coreType = AscendC::AIC;
#define ASCEND_IS_AIV constexpr(g_coreType == AscendC::AIV)
#define ASCEND_IS_AIC constexpr(g_coreType == AscendC::AIC)
#define ASCEND_IS_NOT_AIV constexpr(g_coreType != AscendC::AIV)
#define ASCEND_IS_NOT_AIC constexpr(g_coreType != AscendC::AIC)
#elif defined(ASCEND_MODEL_AIV)
constexpr int32_t g_coreType = AscendC::AIV;
#define ASCEND_IS_AIV constexpr(g_coreType == AscendC::AIV)
#define ASCEND_IS_AIC constexpr(g_coreType == AscendC::AIC)
#define ASCEND_IS_NOT_AIV constexpr(g_coreType != AscendC::AIV)
#define ASCEND_IS_NOT_AIC constexpr(g_coreType != AscendC::AIC)
#else
// Per host thread: every modelled core is a thread (CANN's CPU debug forks a process per core).
extern thread_local int32_t g_coreType;
#define ASCEND_IS_AIV (g_coreType == AscendC::AIV)
#define ASCEND_IS_AIC (g_coreType == AscendC::AIC)
#define ASCEND_IS_NOT_AIV (g_coreType != AscendC::AIV)
#define ASCEND_IS_NOT_AIC (g_coreType != AscendC::AIC)
#endif

// The tiling key of the launch (ICPU_SET_TILING_KEY); TILING_KEY_IS(k) selects a kernel branch.
extern uint64_t g_tilingKey;

// The system variables CANN's CPU debug gives a kernel (global, per modelled core, set by the machine
// for every core of a launch; a kernel reads them, e.g. `x + block_idx * blockLength`):
//   block_idx      the core's index: in MIX_MODE the AI core (the same on its AIC and both AIVs), in
//                  AIV_MODE / AIC_MODE the block, in [0, numBlocks)
//   block_num      the launch's numBlocks
//   sub_block_idx  the AIV's index inside its AI core in MIX_MODE (0 or 1); 0 otherwise
//   g_taskRation   AIVs per AI core: 2 in MIX_MODE, 1 in AIV_MODE / AIC_MODE
// So in MIX_MODE GetBlockIdx() on an AIV is block_idx * g_taskRation + sub_block_idx. Outside a launch
// they are 0 (g_taskRation 1).
extern thread_local int64_t block_idx;
extern thread_local int64_t block_num;
extern thread_local int64_t sub_block_idx;
extern thread_local int64_t g_taskRation;

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

namespace AscendC {
class TPipe;
}  // namespace AscendC

namespace ascend_model {
// The calling core's TPipe (资源管理/GetTPipePtr.md: constructing a TPipe sets it); each core is a thread.
inline thread_local AscendC::TPipe *g_currentPipe = nullptr;
}  // namespace ascend_model

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
int64_t TaskRatio();
bool TilingKeyIs(uint64_t key, const Site &site);
void PipeConstructed(const Site &site);
void InitSoc(const Site &site);
void SetAtomic(uint8_t op, uint8_t kind, uint8_t elemBytes, const char *api, const Site &site);
void AllocatorCreated(AscendC::Hardware hard, const Site &site);
AscendC::Hardware HardwareOf(AscendC::TPosition pos);  // the memory a TPosition maps to on A2/A3
void SyncAllHard(bool aivOnly, const Site &site);
void SyncAllSoft(bool aivOnly, const void *gm, const Span &gmSpan, const Span &ubSpan, AscendC::TPosition ubPos,
                 int32_t usedCores, const Site &site);
AscendC::TEventID FetchEvent(AscendC::HardEvent event, const Site &site);
AscendC::TEventID AllocEvent(AscendC::HardEvent event, const Site &site);
void ReleaseEvent(AscendC::HardEvent event, AscendC::TEventID id, const Site &site);
GM_ADDR UserWorkspace(GM_ADDR workspace, const Site &site);

// Queue bookkeeping (TQue auto-synchronisation, see runtime.cc).
struct QueueState;
QueueState *NewQueue(AscendC::TPosition pos, int32_t depth, const Site &site);
// Atomic operations of SetAtomicAdd / Max / Min (the element kind is the ops::Kind of T).
enum AtomicOp : uint8_t { kAtomicNone = 0, kAtomicAdd, kAtomicMax, kAtomicMin, kAtomicTypeOnly };
// The element kinds the atomic registers take (Atlas A2/A3: int8_t, int16_t, half, bfloat16_t,
// int32_t, float); 0 for any other type.
template <typename T>
constexpr uint8_t AtomicKind() {
  return std::is_same<T, float>::value ? 1 : std::is_same<T, ::half>::value ? 2 :
         std::is_same<T, ::bfloat16_t>::value ? 3 : std::is_same<T, int8_t>::value ? 4 :
         std::is_same<T, int16_t>::value ? 5 : std::is_same<T, int32_t>::value ? 6 : 0;
}
void QueueInit(QueueState *q, uint8_t num, uint32_t len, const Site &site);
const LocalBuffer *QueueAlloc(QueueState *q, const Site &site);
void QueueEnQue(QueueState *q, const LocalBuffer *buffer, const Site &site);
const LocalBuffer *QueueDeQue(QueueState *q, const Site &site);
void QueueFree(QueueState *q, const LocalBuffer *buffer, const Site &site);
[[noreturn]] void FailUninitialised(const char *api, const Site &site);

// TPipe's lifetime and its buffer pools (TPipe::Init / Destroy / DestroyWithoutPipeAll / Reset / InitBufPool,
// TBufPool, EXTERN_IMPL_BUFPOOL; see runtime.cc). A TPipe's buffers and pools are owned by it: Destroy and
// Reset release them (their bytes may be handed out again; a later use of one stops the run).
enum PipeRelease : uint8_t { kPipeDestroy, kPipeDestroyWithoutPipeAll, kPipeReset };
struct PoolState;
void PipeCreated(const void *pipe, const Site &site);
void PipeInit(const void *pipe, const Site &site);
void PipeReleaseAll(const void *pipe, PipeRelease how, const Site &site);
const LocalBuffer *PipeAllocBuffer(const void *pipe, AscendC::TPosition pos, uint32_t len, const Site &site);
void PipeQueueInit(const void *pipe, QueueState *q, uint8_t num, uint32_t len, const Site &site);
bool QueueReleased(const QueueState *q);
bool BufferReleased(const LocalBuffer *b);
[[noreturn]] void FailQueueReleased(const char *api, const QueueState *q, const Site &site);
[[noreturn]] void FailReleased(const char *api, const LocalBuffer *b, const Site &site);
// A pool of `pos`'s memory with at most `bufIds` buffers: `len` bytes taken from the pipe (parent null) or from
// the parent pool, or (share non-null) the start and length of `share`.
PoolState *NewPool(const void *pipe, PoolState *parent, AscendC::TPosition pos, uint32_t bufIds, bool custom,
                   uint32_t len, PoolState *share, const char *api, const Site &site);
const LocalBuffer *PoolAllocBuffer(PoolState *pool, AscendC::TPosition pos, uint32_t len, const Site &site);
void PoolQueueInit(PoolState *pool, QueueState *q, uint8_t num, uint32_t len, const Site &site);
void PoolReset(PoolState *pool, bool custom, const char *api, const Site &site);
void PoolWaitFree(PoolState *pool, const Site &site);
uint32_t PoolStart(const PoolState *pool);
// The custom pool's hooks (TQue / TBuf InitStartBufHandle, InitBufHandle): a queue of `num` buffers whose
// buffers the pool places one by one, buffer `index` at byte address `addr` of the memory, `len` bytes, in
// the pool's handle `slot`.
QueueState *CustomQueueStart(AscendC::TPosition pos, int32_t depth, uint8_t num, uint32_t len, const Site &site);
const LocalBuffer *PoolPlaceBuffer(PoolState *pool, QueueState *q, AscendC::TPosition pos, uint32_t index,
                                   int64_t slot, uint32_t addr, uint32_t len, const Site &site);
// Size queries the A2/A3 documents do not support: stop the run.

}  // namespace ascend_model

namespace AscendC {

// A buffer's handle inside a TBufPool (impl/basic_api/kernel_tensor_base.h: a uint8_t pointer).
using TBufHandle = uint8_t *;

// Public constants of CANN's impl/basic_api/utils/kernel_utils_constants.h that kernels use (DEFAULT_BLK_NUM,
// DEFAULT_BLK_STRIDE, DEFAULT_REPEAT_STRIDE are in ops_vector_common.h).
constexpr uint32_t ONE_BLK_SIZE = 32;  // bytes of a data block
const int32_t HALF_FACTOR = 2;
const int32_t DOUBLE_FACTOR = 2;
const int32_t MAX_REPEAT_TIMES = 255;
const int32_t ONE_BYTE_BIT_SIZE = 8;
const int32_t DEFAULT_C0_SIZE = 32;
const int32_t DEFAULT_BLOCK_SIZE = 256;
const uint32_t TOTAL_L0A_SIZE = 64 * 1024;
const uint32_t TOTAL_L0B_SIZE = 64 * 1024;
// 工具接口/系统资源与变量/GetDataBlockSizeInBytes.md: the bytes of a data block.
__aicore__ inline constexpr int16_t GetDataBlockSizeInBytes() { return ONE_BLK_SIZE; }

template <TPosition pos, int32_t depth, auto mask = 0>
class TQue {
 public:
  static constexpr bool isTQue = true;
  static constexpr TPosition modelPos = pos;
  static constexpr int32_t modelDepth = depth;
  __aicore__ inline TQue() = default;
  template <typename T>
  __aicore__ inline LocalTensor<T> AllocTensor(const ascend_model::Site &site = ascend_model::Site()) {
    const ascend_model::LocalBuffer *b = ascend_model::QueueAlloc(State("TQue::AllocTensor", site), site);
    return LocalTensor<T>::ModelMake(b, static_cast<uint32_t>(ascend_model::ElemsIn<T>(b->bytes)));
  }
  template <typename T>
  __aicore__ inline bool EnQue(const LocalTensor<T> &tensor, const ascend_model::Site &site = ascend_model::Site()) {
    CheckWhole(tensor, "TQue::EnQue", site);
    ascend_model::QueueEnQue(State("TQue::EnQue", site), tensor.ModelBuffer(), site);
    return true;
  }
  template <typename T>
  __aicore__ inline LocalTensor<T> DeQue(const ascend_model::Site &site = ascend_model::Site()) {
    const ascend_model::LocalBuffer *b = ascend_model::QueueDeQue(State("TQue::DeQue", site), site);
    return LocalTensor<T>::ModelMake(b, static_cast<uint32_t>(ascend_model::ElemsIn<T>(b->bytes)));
  }
  template <typename T>
  __aicore__ inline void FreeTensor(LocalTensor<T> &tensor, const ascend_model::Site &site = ascend_model::Site()) {
    CheckWhole(tensor, "TQue::FreeTensor", site);
    ascend_model::QueueFree(State("TQue::FreeTensor", site), tensor.ModelBuffer(), site);
  }

  // The hooks a custom pool (EXTERN_IMPL_BUFPOOL) uses to give the queue its buffers: InitStartBufHandle
  // names the queue's num buffers of len bytes, then InitBufHandle places buffer `index` at byte address
  // curPoolAddr of the pool's memory in the pool's handle `bufhandle + index` (GetBufHandle). The model checks
  // what the hardware needs: the buffers lie inside the pool, the handles inside its BUFID_SIZE.
  __aicore__ inline void InitStartBufHandle(TBufHandle startBufhandle, uint8_t num, uint32_t len,
                                            const ascend_model::Site &site = ascend_model::Site()) {
    (void)startBufhandle;
    if (state_ != nullptr && !ascend_model::QueueReleased(state_)) {
      ascend_model::Fail("TQue::InitStartBufHandle", site, "the queue is already initialised");
    }
    state_ = ascend_model::CustomQueueStart(pos, depth, num, len, site);
  }
  template <typename T>
  __aicore__ inline void InitBufHandle(T *bufPool, uint32_t index, TBufHandle bufhandle, uint32_t curPoolAddr,
                                       uint32_t len, const ascend_model::Site &site = ascend_model::Site()) {
    if (state_ == nullptr) ascend_model::Fail("TQue::InitBufHandle", site, "called before InitStartBufHandle");
    ascend_model::PoolPlaceBuffer(bufPool->ModelPoolState(site), state_, pos, index,
                                  (bufhandle - bufPool->ModelHandles()) + static_cast<int64_t>(index), curPoolAddr,
                                  len, site);
  }

  ascend_model::QueueState *ModelState() { return state_; }
  void ModelBind(ascend_model::QueueState *state) { state_ = state; }
  // Whether InitBuffer may (re)initialise the queue: never initialised, or its TPipe released it.
  bool ModelFree() const { return state_ == nullptr || ascend_model::QueueReleased(state_); }

 private:
  // A queue takes back the tensor AllocTensor/DeQue gave out, not a slice of it.
  template <typename T>
  static void CheckWhole(const LocalTensor<T> &tensor, const char *api, const ascend_model::Site &site) {
    if (tensor.ModelOffsetBytes() != 0) ascend_model::Fail(api, site, "the tensor is a slice, not the queue's buffer");
  }
  ascend_model::QueueState *State(const char *api, const ascend_model::Site &site) {
    if (state_ == nullptr) ascend_model::FailUninitialised("TQue (no InitBuffer)", site);
    if (ascend_model::QueueReleased(state_)) ascend_model::FailQueueReleased(api, state_, site);
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
    if (ascend_model::BufferReleased(buffer_)) ascend_model::FailReleased("TBuf::Get", buffer_, site);
    return LocalTensor<T>::ModelMake(buffer_, static_cast<uint32_t>(ascend_model::ElemsIn<T>(buffer_->bytes)));
  }
  template <typename T>
  __aicore__ inline LocalTensor<T> Get(uint32_t len, const ascend_model::Site &site = ascend_model::Site()) {
    if (buffer_ == nullptr) ascend_model::FailUninitialised("TBuf::Get (no InitBuffer)", site);
    if (ascend_model::BufferReleased(buffer_)) ascend_model::FailReleased("TBuf::Get", buffer_, site);
    if (static_cast<uint64_t>(len) * sizeof(T) > buffer_->bytes) {
      ascend_model::Fail("TBuf::Get", site, "len exceeds the buffer's InitBuffer length");
    }
    return LocalTensor<T>::ModelMake(buffer_, len);
  }
  // The custom pool's hooks (see TQue): a TBuf is one buffer.
  __aicore__ inline void InitStartBufHandle(TBufHandle startBufhandle, uint8_t num, uint32_t len,
                                            const ascend_model::Site &site = ascend_model::Site()) {
    (void)startBufhandle;
    (void)len;
    if (ModelBound()) ascend_model::Fail("TBuf::InitStartBufHandle", site, "the buffer is already initialised");
    if (num != 1) ascend_model::Fail("TBuf::InitStartBufHandle", site, "a TBuf has one buffer (num must be 1)");
  }
  template <typename T>
  __aicore__ inline void InitBufHandle(T *bufPool, uint32_t index, TBufHandle bufhandle, uint32_t curPoolAddr,
                                       uint32_t len, const ascend_model::Site &site = ascend_model::Site()) {
    if (index != 0) ascend_model::Fail("TBuf::InitBufHandle", site, "a TBuf has one buffer (index must be 0)");
    if (ModelBound()) ascend_model::Fail("TBuf::InitBufHandle", site, "the buffer is already initialised");
    buffer_ = ascend_model::PoolPlaceBuffer(bufPool->ModelPoolState(site), nullptr, pos, 0,
                                            bufhandle - bufPool->ModelHandles(), curPoolAddr, len, site);
  }
  void ModelBind(const ascend_model::LocalBuffer *buffer) { buffer_ = buffer; }
  // Bound to a live buffer (a buffer its TPipe released may be initialised again).
  bool ModelBound() const { return buffer_ != nullptr && !ascend_model::BufferReleased(buffer_); }

 private:
  const ascend_model::LocalBuffer *buffer_ = nullptr;
};

class TPipe {
 public:
  // Constructing the TPipe initialises the core's state, as InitSocState does ("InitSocState": in
  // TPipe programming the TPipe does it).
  __aicore__ inline TPipe(const ascend_model::Site &site = ascend_model::Site()) {
    ascend_model::PipeConstructed(site);
    ascend_model::PipeCreated(this, site);
    ascend_model::g_currentPipe = this;  // GetTPipePtr()
  }
  __aicore__ inline ~TPipe() {
    if (ascend_model::g_currentPipe == this) ascend_model::g_currentPipe = nullptr;
  }
  // TPipe/Init.md: the constructor initialises the pipe; a TPipe reused after Destroy is initialised again
  // with Init (Init on a pipe that still holds buffers stops the run: Destroy it first).
  __aicore__ inline void Init(const ascend_model::Site &site = ascend_model::Site()) {
    ascend_model::PipeInit(this, site);
  }
  // TPipe/Destroy.md, DestroyWithoutPipeAll.md, Reset.md: release the pipe's buffers and pools (after their
  // pending free events, as CANN's implementation waits them); Destroy then waits for every pipe (PIPE_ALL),
  // DestroyWithoutPipeAll does not; Reset also re-initialises the core state and leaves the pipe usable, a
  // destroyed pipe needs Init. A released buffer's later use stops the run.
  __aicore__ inline void Destroy(const ascend_model::Site &site = ascend_model::Site()) {
    ascend_model::PipeReleaseAll(this, ascend_model::kPipeDestroy, site);
  }
  __aicore__ inline void DestroyWithoutPipeAll(const ascend_model::Site &site = ascend_model::Site()) {
    ascend_model::PipeReleaseAll(this, ascend_model::kPipeDestroyWithoutPipeAll, site);
  }
  __aicore__ inline void Reset(const ascend_model::Site &site = ascend_model::Site()) {
    ascend_model::PipeReleaseAll(this, ascend_model::kPipeReset, site);
  }
  // TPipe/InitBufPool.md: a pool of len bytes (rounded up to 32) of the pool's memory, or, with shareBuf, a
  // pool on shareBuf's start and length (len at most shareBuf's length, the same memory).
  template <class T>
  __aicore__ inline bool InitBufPool(T &bufPool, uint32_t len, const ascend_model::Site &site = ascend_model::Site()) {
    static_assert(T::isTbufPool, "TPipe::InitBufPool takes a TBufPool (or an EXTERN_IMPL_BUFPOOL class)");
    bufPool.ModelAttach(ascend_model::NewPool(this, nullptr, T::poolPos, T::modelBufIds, T::modelCustom, len, nullptr,
                                              "TPipe::InitBufPool", site));
    return true;
  }
  template <class T, class U>
  __aicore__ inline bool InitBufPool(T &bufPool, uint32_t len, U &shareBuf,
                                     const ascend_model::Site &site = ascend_model::Site()) {
    static_assert(T::isTbufPool && U::isTbufPool, "TPipe::InitBufPool takes TBufPools");
    bufPool.ModelAttach(ascend_model::NewPool(this, nullptr, T::poolPos, T::modelBufIds, T::modelCustom, len,
                                              shareBuf.ModelPoolState(site), "TPipe::InitBufPool", site));
    return true;
  }
  __aicore__ inline void InitSocState(const ascend_model::Site &site = ascend_model::Site()) const {
    ascend_model::InitSoc(site);
  }

  template <class T>
  __aicore__ inline bool InitBuffer(T &que, uint8_t num, uint32_t len,
                                    const ascend_model::Site &site = ascend_model::Site()) {
    if (!que.ModelFree()) ascend_model::Fail("TPipe::InitBuffer", site, "the queue is already initialised");
    ascend_model::QueueState *q = ascend_model::NewQueue(QueuePos(que), QueueDepth(que), site);
    ascend_model::PipeQueueInit(this, q, num, len, site);
    que.ModelBind(q);
    return true;
  }
  template <TPosition pos>
  __aicore__ inline bool InitBuffer(TBuf<pos> &buf, uint32_t len,
                                    const ascend_model::Site &site = ascend_model::Site()) {
    if (buf.ModelBound()) ascend_model::Fail("TPipe::InitBuffer", site, "the buffer is already initialised");
    buf.ModelBind(ascend_model::PipeAllocBuffer(this, pos, len, site));
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

// ---- TBufPool (资源管理/TBufPool/*.md) -------------------------------------------------------------------
// A pool of UB (VECIN / VECOUT / VECCALC) or L1 (A1 / B1 / C1) carved from the TPipe (TPipe::InitBufPool) or
// from another pool (InitBufPool), or sharing another pool's start and length. Its queues and buffers are
// consecutive from the pool's start (InitBuffer, lengths rounded up to 32 bytes), at most bufIDSize of them
// (default 4, at most 16), within the pool's length; their memory must be the pool's. Reset waits for the
// pending free events of the pool's buffers and ends the pool's allocation; its buffers stay usable (their
// contents may be overwritten through a sharing pool). Over-capacity allocations stop the run.
template <TPosition pos, uint32_t bufIDSize = 4>
class TBufPool {
  static_assert(pos == TPosition::VECIN || pos == TPosition::VECOUT || pos == TPosition::VECCALC ||
                    pos == TPosition::A1 || pos == TPosition::B1 || pos == TPosition::C1,
                "TBufPool: the position must be VECIN, VECOUT, VECCALC, A1, B1 or C1");
  static_assert(bufIDSize >= 1 && bufIDSize <= 16, "TBufPool: bufIDSize is at most 16");

 public:
  static constexpr TPosition poolPos = pos;
  static constexpr bool isTbufPool = true;
  static constexpr bool modelCustom = false;
  static constexpr uint32_t modelBufIds = bufIDSize;
  __aicore__ inline TBufPool() = default;
  __aicore__ inline ~TBufPool() {
    if (state_ != nullptr) ascend_model::PoolWaitFree(state_, ascend_model::Site());
  }
  template <class T>
  __aicore__ inline bool InitBuffer(T &que, uint8_t num, uint32_t len,
                                    const ascend_model::Site &site = ascend_model::Site()) {
    static_assert(T::isTQue, "TBufPool::InitBuffer(que, num, len) takes a TQue");
    if (!que.ModelFree()) ascend_model::Fail("TBufPool::InitBuffer", site, "the queue is already initialised");
    ascend_model::QueueState *q = ascend_model::NewQueue(T::modelPos, T::modelDepth, site);
    ascend_model::PoolQueueInit(ModelPoolState(site), q, num, len, site);
    que.ModelBind(q);
    return true;
  }
  template <TPosition bufPos>
  __aicore__ inline bool InitBuffer(TBuf<bufPos> &buf, uint32_t len,
                                    const ascend_model::Site &site = ascend_model::Site()) {
    if (buf.ModelBound()) ascend_model::Fail("TBufPool::InitBuffer", site, "the buffer is already initialised");
    buf.ModelBind(ascend_model::PoolAllocBuffer(ModelPoolState(site), bufPos, len, site));
    return true;
  }
  template <class T, class U>
  __aicore__ inline bool InitBufPool(T &bufPool, uint32_t len, U &shareBuf,
                                     const ascend_model::Site &site = ascend_model::Site()) {
    static_assert(T::isTbufPool && U::isTbufPool, "TBufPool::InitBufPool takes TBufPools");
    bufPool.ModelAttach(ascend_model::NewPool(nullptr, ModelPoolState(site), T::poolPos, T::modelBufIds,
                                              T::modelCustom, len, shareBuf.ModelPoolState(site),
                                              "TBufPool::InitBufPool", site));
    return true;
  }
  template <class T>
  __aicore__ inline bool InitBufPool(T &bufPool, uint32_t len, const ascend_model::Site &site = ascend_model::Site()) {
    static_assert(T::isTbufPool, "TBufPool::InitBufPool takes a TBufPool");
    bufPool.ModelAttach(ascend_model::NewPool(nullptr, ModelPoolState(site), T::poolPos, T::modelBufIds,
                                              T::modelCustom, len, nullptr, "TBufPool::InitBufPool", site));
    return true;
  }
  __aicore__ inline void Reset(const ascend_model::Site &site = ascend_model::Site()) {
    ascend_model::PoolReset(ModelPoolState(site), false, "TBufPool::Reset", site);
  }

  // Model only.
  void ModelAttach(ascend_model::PoolState *state) { state_ = state; }
  ascend_model::PoolState *ModelPoolState(const ascend_model::Site &site) {
    if (state_ == nullptr) ascend_model::Fail("TBufPool", site, "used before TPipe::InitBufPool / TBufPool::InitBufPool");
    return state_;
  }

 private:
  ascend_model::PoolState *state_ = nullptr;
};

// ---- tools: UB size (工具接口/系统资源与变量/GetUBSizeInBytes.md, GetRuntimeUBSize.md) ------------------------
// Both documents list Atlas A2/A3 as not supported (CANN's header returns 0 there). The model stops the run
// (GetUBSizeInBytes in a constant expression does not compile).
__aicore__ inline constexpr uint32_t GetUBSizeInBytes(const ascend_model::Site &site = ascend_model::Site()) {
  return site.line >= 0 ? (ascend_model::Fail("GetUBSizeInBytes", site,
                                              "not supported on Atlas A2/A3 (its document supports only "
                                              "Ascend 950PR/950DT)"),
                           0u)
                        : 0u;
}
__aicore__ inline uint32_t GetRuntimeUBSize(const ascend_model::Site &site = ascend_model::Site()) {
  ascend_model::Fail("GetRuntimeUBSize", site,
                     "not supported on Atlas A2/A3 (its document supports only Ascend 950PR/950DT)");
}

// 工具接口/系统资源与变量/GetSystemCycle(ISASI).md: the system counter, 50 MHz on A2/A3. The model has no
// device time: it reads the host's monotonic clock at that rate (differences are host time, not NPU time).
__aicore__ inline int64_t GetSystemCycle() {
  return static_cast<int64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                  std::chrono::steady_clock::now().time_since_epoch()).count() / 20);
}

// The utility CANN's headers give kernels as AscendC::DivCeil (impl/basic_api/utils).
__aicore__ constexpr inline uint32_t DivCeil(uint32_t a, uint32_t b) { return (a + b - 1) / b; }

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

// ---- synchronisation of all cores ("SyncAll") ---------------------------------------------------------
// Hard: every core's earlier instructions (all pipes) before every core's later ones; isAIVOnly for a
// vector-only kernel (all AIVs), false for a MIX kernel (AIVs -> their AIC, all AICs, AIC -> its AIVs).
// Uses cross-core flag ids 11-14, as documented.
template <bool isAIVOnly = true>
__aicore__ inline void SyncAll(const ascend_model::Site &site = ascend_model::Site()) {
  ascend_model::SyncAllHard(isAIVOnly, site);
}
// Soft (vector-only kernels): every AIV of the first usedCores (0: all) marks its 32-byte slot of
// gmWorkspace and waits for the others' marks; gmWorkspace and ubWorkspace hold GetBlockNum() * 32
// bytes, gmWorkspace zeroed before the launch.
template <bool isAIVOnly = true>
__aicore__ inline void SyncAll(const GlobalTensor<int32_t> &gmWorkspace, const LocalTensor<int32_t> &ubWorkspace,
                               const int32_t usedCores = 0, const ascend_model::Site &site = ascend_model::Site()) {
  ascend_model::SyncAllSoft(isAIVOnly, gmWorkspace.GetPhyAddr(), gmWorkspace.ModelSpan(), ubWorkspace.ModelSpan(),
                            static_cast<TPosition>(ubWorkspace.GetPosition()), usedCores, site);
}

// ---- saturation modes (kernel_operator_common_intf.h, SetSaturationFlag(ISASI).md) ----------------------
// FLOAT is CTRL[48]: on (the A2/A3 default) a half / bfloat16_t conversion result that is inf becomes
// +-MAX and NaN becomes 0; the model applies it where Fixpipe / DataCopy L0C -> GM convert (F322F16,
// F322BF16, (V)DEQF16). CAST on is what the model's Cast to integers does (saturation); CAST off
// (truncation to the low bits) is not modelled and stops the run.
enum class SaturationMode : uint8_t { FLOAT, CAST };
template <SaturationMode mode>
__aicore__ inline void SetSaturationFlag(bool enableSat, const ascend_model::Site &site = ascend_model::Site()) {
  if constexpr (mode == SaturationMode::FLOAT) {
    ascend_model::SetFloatSaturation(enableSat, site);
  } else if (!enableSat) {
    ascend_model::Fail("SetSaturationFlag", site,
                       "SaturationMode::CAST off (out-of-range integer results truncated to their low bits) is not "
                       "modelled: the model's Cast saturates");
  }
}
template <SaturationMode mode>
__aicore__ inline bool GetSaturationFlag(const ascend_model::Site &site = ascend_model::Site()) {
  if constexpr (mode == SaturationMode::FLOAT) return ascend_model::FloatSaturation("GetSaturationFlag", site);
  return true;
}

// ---- atomic DMA stores to GM (kernel_operator_set_atomic_intf.h) ----------------------------------------
// After SetAtomicAdd<T> (Max, Min) every DMA store of this core to GM (MTE3 from UB, FIX from L0C)
// combines its T elements with the bytes in GM instead of overwriting them, until DisableDmaAtomic.
template <typename T>
__aicore__ inline void SetAtomicType(const ascend_model::Site &site = ascend_model::Site()) {
  ascend_model::SetAtomic(ascend_model::kAtomicTypeOnly, ascend_model::AtomicKind<T>(), sizeof(T), "SetAtomicType",
                          site);
}
template <typename T>
__aicore__ inline void SetAtomicAdd(const ascend_model::Site &site = ascend_model::Site()) {
  ascend_model::SetAtomic(ascend_model::kAtomicAdd, ascend_model::AtomicKind<T>(), sizeof(T), "SetAtomicAdd", site);
}
template <typename T>
__aicore__ inline void SetAtomicMax(const ascend_model::Site &site = ascend_model::Site()) {
  ascend_model::SetAtomic(ascend_model::kAtomicMax, ascend_model::AtomicKind<T>(), sizeof(T), "SetAtomicMax", site);
}
template <typename T>
__aicore__ inline void SetAtomicMin(const ascend_model::Site &site = ascend_model::Site()) {
  ascend_model::SetAtomic(ascend_model::kAtomicMin, ascend_model::AtomicKind<T>(), sizeof(T), "SetAtomicMin", site);
}
__aicore__ inline void DisableDmaAtomic(const ascend_model::Site &site = ascend_model::Site()) {
  ascend_model::SetAtomic(ascend_model::kAtomicNone, 0, 0, "DisableDmaAtomic", site);
}
// SetAtomicNone has been updated, please use DisableDmaAtomic instead (as CANN's header says).
__aicore__ inline void SetAtomicNone(const ascend_model::Site &site = ascend_model::Site()) {
  ascend_model::SetAtomic(ascend_model::kAtomicNone, 0, 0, "SetAtomicNone", site);
}

// ---- the core's global state ("InitSocState") -----------------------------------------------------------
// Static Tensor programming must call it at the kernel entry (the TPipe constructor does it otherwise):
// until then the atomic state is whatever a previous operator left, and a DMA store to GM stops the run.
__aicore__ inline void InitSocState(const ascend_model::Site &site = ascend_model::Site()) {
  ascend_model::InitSoc(site);
}

// ---- static Tensor programming: LocalMemAllocator (kernel_tensor.h) -------------------------------------
// Hands out consecutive tensors of one physical memory from address 0; one allocator per memory per
// kernel, not mixed with TPipe buffers on the same core. The default TPosition of a memory: UB ->
// VECCALC, L1 -> A1, L0A -> A2, L0B -> B2, L0C -> CO1, BIAS -> C2 (kernel_event.h GetDefaultPosition).
template <Hardware hard = Hardware::UB>
class LocalMemAllocator {
 public:
  __aicore__ inline LocalMemAllocator(const ascend_model::Site &site = ascend_model::Site()) {
    ascend_model::AllocatorCreated(hard, site);
  }
  __aicore__ inline uint32_t GetCurAddr() const { return head_; }
  template <TPosition pos, class DataType, uint32_t tileSize>
  __aicore__ inline LocalTensor<DataType> Alloc(const ascend_model::Site &site = ascend_model::Site()) {
    return Take<DataType>(pos, tileSize, site);
  }
  template <TPosition pos, class DataType>
  LocalTensor<DataType> __aicore__ inline Alloc(uint32_t tileSize,
                                                const ascend_model::Site &site = ascend_model::Site()) {
    return Take<DataType>(pos, tileSize, site);
  }
  template <class DataType, uint32_t tileSize>
  LocalTensor<DataType> __aicore__ inline Alloc(const ascend_model::Site &site = ascend_model::Site()) {
    return Take<DataType>(DefaultPosition(), tileSize, site);
  }
  template <class DataType>
  LocalTensor<DataType> __aicore__ inline Alloc(uint32_t tileSize,
                                                const ascend_model::Site &site = ascend_model::Site()) {
    return Take<DataType>(DefaultPosition(), tileSize, site);
  }

 private:
  static constexpr TPosition DefaultPosition() {
    return hard == Hardware::L1 ? TPosition::A1 : hard == Hardware::L0A ? TPosition::A2 :
           hard == Hardware::L0B ? TPosition::B2 : hard == Hardware::L0C ? TPosition::CO1 :
           hard == Hardware::BIAS ? TPosition::C2 : TPosition::VECCALC;
  }
  template <class DataType>
  LocalTensor<DataType> Take(TPosition pos, uint32_t tileSize, const ascend_model::Site &site) {
    if (ascend_model::HardwareOf(pos) != hard) {
      ascend_model::Fail("LocalMemAllocator::Alloc", site,
                         "the TPosition's memory is not the allocator's Hardware");
    }
    LocalTensor<DataType> t(pos, head_, tileSize, site);
    head_ += static_cast<uint32_t>(static_cast<uint64_t>(tileSize) * sizeof(DataType));
    return t;
  }
  uint32_t head_ = 0;
};

// ---- system variables --------------------------------------------------------------------------------
// Separated A2/A3 architecture, as CANN documents them per launch: MIX (numBlocks AI cores of 1 AIC +
// 2 AIV): GetBlockNum() = numBlocks everywhere, GetBlockIdx() = the AI core on the AIC and core * 2 +
// sub-block on an AIV, GetSubBlockNum() / GetTaskRatio() = 1 on the AIC and 2 on an AIV; AIV_MODE /
// AIC_MODE (numBlocks cores of one type): GetBlockIdx() in [0, numBlocks), sub-block 0 of 1, ratio 1.
__aicore__ inline int64_t GetBlockNum() { return ascend_model::BlockNum(); }
__aicore__ inline int64_t GetBlockIdx() { return ascend_model::BlockIdx(); }
__aicore__ inline int64_t GetSubBlockIdx() { return ascend_model::SubBlockIdx(); }
__aicore__ inline int64_t GetSubBlockNum() { return ascend_model::SubBlockNum(); }
__aicore__ inline int64_t GetTaskRatio() { return ascend_model::TaskRatio(); }
// CANN's headers also declare this spelling (impl/basic_api/kernel_operator_sys_var_intf_impl.h: it returns
// GetTaskRatio()), and its examples call it.
__aicore__ inline int64_t GetTaskRation() { return GetTaskRatio(); }

// ---- printf (Utils-API/调测接口/printf): formatted output from a kernel -----------------------------------
// On the CPU the format and arguments go to the host's stdout as std::printf formats them, one call at
// a time (the modelled cores take turns, so lines of different cores do not interleave); the 30 KB
// per-call limit and the escape-character restriction of the document are not checked.
template <class... Args>
__aicore__ inline void printf(const char *fmt, Args &&...args) {
  if constexpr (sizeof...(Args) == 0) {
    std::fputs(fmt, stdout);
  } else {
    std::printf(fmt, std::forward<Args>(args)...);
  }
  std::fflush(stdout);
}

__aicore__ inline GM_ADDR GetUserWorkspace(GM_ADDR workspace, const ascend_model::Site &site = ascend_model::Site()) {
  return ascend_model::UserWorkspace(workspace, site);
}

}  // namespace AscendC

// basic_api/kernel_common.h declares it outside the namespace.
__aicore__ inline AscendC::TPipe *GetTPipePtr() { return ascend_model::g_currentPipe; }

// ---- a user-defined TBufPool (资源管理/自定义TBufPool/*.md) ---------------------------------------------------
// EXTERN_IMPL_BUFPOOL(EXT_BUFPOOL, POSITION, BUFID_SIZE) inside a class makes it a pool TPipe::InitBufPool
// accepts, with Init (an empty pool; the constructor calls it), Reset (waits for the pending free events of its
// buffers and frees them: after it they must not be used, and the run stops if they are), GetBufHandle(offset)
// (the pool's buffer handle `offset`, below BUFID_SIZE), GetCurAddr / SetCurAddr (the byte address up to which
// the pool has handed out memory; starts at the pool's start) and GetCurBufSize / SetCurBufSize (the handles
// used). The class's own InitBuffer places its queues' buffers with TQue / TBuf InitStartBufHandle and
// InitBufHandle; the model checks each buffer lies inside the pool.
#define EXTERN_IMPL_BUFPOOL(EXT_BUFPOOL, POSITION, BUFID_SIZE)                                                  \
 public:                                                                                                      \
  static constexpr AscendC::TPosition poolPos = POSITION;                                                      \
  static constexpr int bufIDSize = BUFID_SIZE;                                                                 \
  static constexpr bool isTbufPool = true;                                                                     \
  static constexpr bool modelCustom = true;                                                                    \
  static constexpr uint32_t modelBufIds = BUFID_SIZE;                                                          \
  static_assert(poolPos == AscendC::TPosition::VECIN || poolPos == AscendC::TPosition::VECOUT ||               \
                    poolPos == AscendC::TPosition::VECCALC || poolPos == AscendC::TPosition::A1 ||             \
                    poolPos == AscendC::TPosition::B1 || poolPos == AscendC::TPosition::C1,                    \
                "EXTERN_IMPL_BUFPOOL: the position must be VECIN, VECOUT, VECCALC, A1, B1 or C1");             \
  __aicore__ inline ~EXT_BUFPOOL() { Reset(); }                                                                \
  __aicore__ inline void Reset(const ascend_model::Site &modelSite_ = ascend_model::Site()) {                  \
    if (modelPool_ != nullptr) ascend_model::PoolReset(modelPool_, true, #EXT_BUFPOOL "::Reset", modelSite_);   \
    modelPool_ = nullptr;                                                                                      \
    modelCurAddr_ = 0;                                                                                         \
    modelCurBufSize_ = 0;                                                                                      \
  }                                                                                                            \
  __aicore__ inline void Init() {                                                                              \
    modelPool_ = nullptr;                                                                                      \
    modelCurAddr_ = 0;                                                                                         \
    modelCurBufSize_ = 0;                                                                                      \
  }                                                                                                            \
  __aicore__ inline AscendC::TBufHandle GetBufHandle(uint8_t offset) { return modelHandles_ + offset; }        \
  __aicore__ inline void SetCurAddr(uint32_t curAddr) { modelCurAddr_ = curAddr; }                             \
  __aicore__ inline uint32_t GetCurAddr() { return modelCurAddr_; }                                            \
  __aicore__ inline void SetCurBufSize(uint8_t curBufSize) { modelCurBufSize_ = curBufSize; }                  \
  __aicore__ inline uint8_t GetCurBufSize() { return modelCurBufSize_; }                                       \
  void ModelAttach(ascend_model::PoolState *state) {                                                           \
    modelPool_ = state;                                                                                        \
    modelCurAddr_ = ascend_model::PoolStart(state);                                                            \
    modelCurBufSize_ = 0;                                                                                      \
  }                                                                                                            \
  ascend_model::PoolState *ModelPoolState(const ascend_model::Site &modelSite_) {                              \
    if (modelPool_ == nullptr) {                                                                               \
      ascend_model::Fail(#EXT_BUFPOOL, modelSite_, "used before TPipe::InitBufPool (or after its Reset)");      \
    }                                                                                                          \
    return modelPool_;                                                                                         \
  }                                                                                                            \
  AscendC::TBufHandle ModelHandles() { return modelHandles_; }                                                 \
                                                                                                               \
 private:                                                                                                      \
  ascend_model::PoolState *modelPool_ = nullptr;                                                               \
  uint32_t modelCurAddr_ = 0;                                                                                  \
  uint8_t modelCurBufSize_ = 0;                                                                                \
  uint8_t modelHandles_[BUFID_SIZE] = {}

// ---- kernel entry macros --------------------------------------------------------------------------------
// REGISTER_TILING_DEFAULT names the kernel's standard C++ tiling struct; GET_TILING_DATA copies the
// tiling bytes from global memory into a local of that type (a scalar read of the tiling buffer).
#define REGISTER_TILING_DEFAULT(tiling_struct) using AscendModelTilingType_ = tiling_struct
#define GET_TILING_DATA(tiling_data, tiling_arg)                                                         \
  AscendModelTilingType_ tiling_data;                                                                   \
  ascend_model::CopyTiling(&tiling_data, reinterpret_cast<const uint8_t *>(tiling_arg), sizeof(tiling_data), \
                           ascend_model::Site())
#define KERNEL_TASK_TYPE_DEFAULT(value) ascend_model::CheckKernelType(value, ascend_model::Site())
// TILING_KEY_IS(k): whether the launch's tiling key (ICPU_SET_TILING_KEY) is k; the run stops when no
// key was set for the launch.
#define TILING_KEY_VAR g_tilingKey
#define TILING_KEY_IS(k) (ascend_model::TilingKeyIs(static_cast<uint64_t>(k), ascend_model::Site()))

#pragma GCC visibility pop

#endif  // ASCEND_MODEL_RUNTIME_API_H
