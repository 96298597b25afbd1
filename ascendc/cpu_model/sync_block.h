// Synchronisation between blocks through global memory, and the scalar unit's uncached GM accesses, in the
// CPU model: DataSyncBarrier / MemDsbT, WriteGmByPassDCache / ReadGmByPassDCache, IBSet / IBWait,
// InitDetermineComputeWorkspace / WaitPreBlock / NotifyNextBlock, GroupBarrier / PipeMode, InitOutput, and
// the Mutex API (AllocMutexID, ReleaseMutexID, Mutex::Lock / Unlock), which Atlas A2/A3 does not have.
// Declared as in CANN's public headers (kernel_operator_block_sync_intf.h, kernel_operator_scalar_intf.h,
// kernel_operator_determine_compute_sync_intf.h, core_mng/roc/kernel_operator_group_barrier_intf.h,
// kernel_operator_common_intf.h, kernel_common.h, kernel_event.h) with a defaulted Site last parameter; the
// behaviour lives in runtime.cc (section "blocks through GM").
#ifndef ASCEND_MODEL_SYNC_BLOCK_H
#define ASCEND_MODEL_SYNC_BLOCK_H

#pragma GCC visibility push(default)

#include <cstdint>
#include <type_traits>
#include <vector>

#include "runtime_types.h"
#include "runtime_api.h"

namespace ascend_model {

// Runtime entry points (runtime.cc). Not part of the AscendC API.
void DataSyncBarrierOn(uint8_t mem, const Site &site);
void BypassWrite(void *addr, const void *value, uint64_t bytes, bool supported, const Site &site);
void BypassRead(const void *addr, void *value, uint64_t bytes, bool supported, const Site &site);
void IbSetWait(bool set, bool aivOnly, const void *gm, const Span &gmSpan, const Span &ubSpan, int32_t ubPos,
               int32_t blockIdx, int32_t eventID, const Site &site);
void DetermineInit(const void *gm, const Span &gmSpan, const Span &ubSpan, const Site &site);
void DetermineWait(const void *gm, const Span &gmSpan, const Span &ubSpan, const Site &site);
void DetermineNotify(const void *gm, const Span &gmSpan, const Span &ubSpan, const Site &site);
void GroupBarrierInit(uint8_t *workspace, uint8_t pipeMode, uint32_t arriveSize, uint32_t waitSize, const Site &site);
void GroupBarrierArrive(uint8_t *workspace, uint32_t arriveSize, uint32_t waitSize, uint32_t round,
                        uint32_t arriveIndex, const Site &site);
void GroupBarrierWait(uint8_t *workspace, uint32_t arriveSize, uint32_t waitSize, uint32_t round, uint32_t waitIndex,
                      const Site &site);
bool InitOutputOnThisCore(const Site &site);  // false on an AIC (CANN's implementation returns there)
[[noreturn]] void MutexUnsupported(const char *api, const Site &site);

}  // namespace ascend_model

namespace AscendC {

// ---- DataSyncBarrier (同步控制/核内同步/DataSyncBarrier(ISASI).md) -------------------------------------------
// Blocks the core's later instructions until its earlier memory accesses of the chosen location are done
// (ALL: GM and UB, DDR: GM, UB: UB, SEQ). In the model: DDR / ALL make the scalar unit's earlier GM accesses
// visible to another core that observes a later WriteGmByPassDCache of this core (the release of the
// flag-then-data pattern); UB / SEQ order the scalar unit's own accesses, which the model already runs in
// program order.
enum class MemDsbT : uint8_t { ALL = 0, DDR, UB, SEQ };

template <MemDsbT arg0>
__aicore__ inline void DataSyncBarrier(const ascend_model::Site &site = ascend_model::Site()) {
  ascend_model::DataSyncBarrierOn(static_cast<uint8_t>(arg0), site);
}

// ---- the scalar unit's GM accesses that bypass the DCache (标量计算/WriteGmByPassDCache(ISASI).md) --------
// int8_t .. uint64_t, on the scalar unit (PIPE_S). A write publishes what the scalar unit has seen complete
// (DMA work it waited for with SetFlag / WaitFlag X_S, what it acquired from other cores) and, of its own GM
// writes, those before its last DataSyncBarrier<DDR / ALL>. A read of another core's unordered
// WriteGmByPassDCache is a poll: it acquires what that write published; reading an older bypass write of that
// core that nothing published stops the run (missing DataSyncBarrier). A poll hands the turn to the other cores
// (a spin loop waits for them); 1000 polls in a row while no core can change anything stop the run (a hang).
template <typename T>
constexpr bool ByPassDCacheType() {
  return std::is_same<T, int8_t>::value || std::is_same<T, uint8_t>::value || std::is_same<T, int16_t>::value ||
         std::is_same<T, uint16_t>::value || std::is_same<T, int32_t>::value || std::is_same<T, uint32_t>::value ||
         std::is_same<T, int64_t>::value || std::is_same<T, uint64_t>::value;
}
template <typename T>
__aicore__ inline void WriteGmByPassDCache(__gm__ T *addr, T value,
                                           const ascend_model::Site &site = ascend_model::Site()) {
  ascend_model::BypassWrite(addr, &value, sizeof(T), ByPassDCacheType<T>(), site);
}
template <typename T>
__aicore__ inline T ReadGmByPassDCache(__gm__ T *addr, const ascend_model::Site &site = ascend_model::Site()) {
  T value{};
  ascend_model::BypassRead(addr, &value, sizeof(T), ByPassDCacheType<T>(), site);
  return value;
}

// ---- IBSet / IBWait (同步控制/核间同步/IBSet.md, IBWait.md) ------------------------------------------------
// IBSet waits until the int32 flag at gmWorkspace[blockNum * 8 * eventID + blockIdx * 8] is 0 and writes 1;
// IBWait waits until it is 1 and writes 0 (blockNum: GetBlockNum(), doubled when isAIVOnly is false). Both
// run between two PipeBarrier<PIPE_ALL>: everything the setting core did before IBSet happens before
// everything the waiting core does after IBWait. AIV only (an AIC returns, as CANN's implementation does).
template <bool isAIVOnly = true>
__aicore__ inline void IBSet(const GlobalTensor<int32_t> &gmWorkspace, const LocalTensor<int32_t> &ubWorkspace,
                             int32_t blockIdx, int32_t eventID,
                             const ascend_model::Site &site = ascend_model::Site()) {
  ascend_model::IbSetWait(true, isAIVOnly, gmWorkspace.GetPhyAddr(), gmWorkspace.ModelSpan(),
                          ubWorkspace.ModelSpan(), ubWorkspace.GetPosition(), blockIdx, eventID, site);
}
template <bool isAIVOnly = true>
__aicore__ inline void IBWait(const GlobalTensor<int32_t> &gmWorkspace, const LocalTensor<int32_t> &ubWorkspace,
                              int32_t blockIdx, int32_t eventID,
                              const ascend_model::Site &site = ascend_model::Site()) {
  ascend_model::IbSetWait(false, isAIVOnly, gmWorkspace.GetPhyAddr(), gmWorkspace.ModelSpan(),
                          ubWorkspace.ModelSpan(), ubWorkspace.GetPosition(), blockIdx, eventID, site);
}

// ---- blocks in blockIdx order (同步控制/核间同步/InitDetermineComputeWorkspace.md, WaitPreBlock.md,
// NotifyNextBlock.md) ------------------------------------------------------------------------------------------
// Round k of block i (its k-th WaitPreBlock) starts after block i - 1's k-th NotifyNextBlock (block 0: after
// the last block's (k-1)-th), each between PipeBarrier<PIPE_ALL>s. Vector-only launches (AIV_MODE).
__aicore__ inline void InitDetermineComputeWorkspace(GlobalTensor<int32_t> &gmWorkspace,
                                                     LocalTensor<int32_t> &ubWorkspace,
                                                     const ascend_model::Site &site = ascend_model::Site()) {
  ascend_model::DetermineInit(gmWorkspace.GetPhyAddr(), gmWorkspace.ModelSpan(), ubWorkspace.ModelSpan(), site);
}
__aicore__ inline void WaitPreBlock(GlobalTensor<int32_t> &gmWorkspace, LocalTensor<int32_t> &ubWorkspace,
                                    const ascend_model::Site &site = ascend_model::Site()) {
  ascend_model::DetermineWait(gmWorkspace.GetPhyAddr(), gmWorkspace.ModelSpan(), ubWorkspace.ModelSpan(), site);
}
__aicore__ inline void NotifyNextBlock(GlobalTensor<int32_t> &gmWorkspace, LocalTensor<int32_t> &ubWorkspace,
                                       const ascend_model::Site &site = ascend_model::Site()) {
  ascend_model::DetermineNotify(gmWorkspace.GetPhyAddr(), gmWorkspace.ModelSpan(), ubWorkspace.ModelSpan(), site);
}

// ---- GroupBarrier (Cube分组管理（ISASI）/GroupBarrier/*.md) ---------------------------------------------------
// arriveSize AIVs Arrive, waitSize AIVs Wait for all of them (per round); the message goes out on MTE3 after
// the scalar unit: an arriving AIV's earlier MTE3 and scalar work happens before everything a waiting AIV
// does after Wait. Arrive in round k > 1 waits until every Wait of round k - 1 is done. The workspace is
// 512-byte aligned GM of GetWorkspaceLen() bytes, zeroed by the user. Both calls leave the core's DMA atomic
// state off (they store the message with atomic add).
enum class PipeMode : uint8_t { SCALAR_MODE = 0, MTE3_MODE = 1, MAX };

template <PipeMode pipeMode>
class GroupBarrier {
 public:
  __aicore__ inline GroupBarrier(GM_ADDR groupWorkspace, uint32_t arriveSizeIn, uint32_t waitSizeIn,
                                 const ascend_model::Site &site = ascend_model::Site())
      : workspace_(groupWorkspace), arriveSize_(arriveSizeIn), waitSize_(waitSizeIn) {
    ascend_model::GroupBarrierInit(workspace_, static_cast<uint8_t>(pipeMode), arriveSize_, waitSize_, site);
  }
  __aicore__ inline void Arrive(uint32_t arriveIndex, const ascend_model::Site &site = ascend_model::Site()) {
    ascend_model::GroupBarrierArrive(workspace_, arriveSize_, waitSize_, counter_, arriveIndex, site);
    counter_ += 1;
    hasArrive_ = true;
  }
  __aicore__ inline void Wait(uint32_t waitIndex, const ascend_model::Site &site = ascend_model::Site()) {
    const uint32_t round = hasArrive_ ? counter_ - 1 : counter_;
    ascend_model::GroupBarrierWait(workspace_, arriveSize_, waitSize_, round, waitIndex, site);
    if (!hasArrive_) counter_ += 1;
    hasArrive_ = false;
  }
  __aicore__ inline uint64_t GetWorkspaceLen() {
    return static_cast<uint64_t>(arriveSize_ > waitSize_ ? arriveSize_ : waitSize_) * 512;
  }

 private:
  __aicore__ inline GroupBarrier() = delete;
  uint8_t *workspace_;
  uint32_t arriveSize_;
  uint32_t waitSize_;
  uint32_t counter_ = 1;
  bool hasArrive_ = false;
};

// ---- InitOutput (kernel_operator_common_intf.h; deprecated there in favour of Fill) -------------------------
// Fills size elements of GM with value: a vector Duplicate into a UB scratch buffer, then MTE3 stores after
// the vector unit (V -> MTE3), through the core's DMA atomic state. An AIC returns (as CANN's implementation).
template <typename T>
__aicore__ inline void InitOutput(GlobalTensor<T> gmWorkspaceAddr, uint32_t size, T value = 0,
                                  const ascend_model::Site &site = ascend_model::Site()) {
  if (!ascend_model::InitOutputOnThisCore(site)) return;
  const uint64_t bytes = static_cast<uint64_t>(size) * sizeof(T);
  uint8_t *dst = ascend_model::Touch(gmWorkspaceAddr.ModelSpan(), 0, bytes, ascend_model::Pipe::kMTE3,
                                     ascend_model::Access::kWrite, "InitOutput", site);
  std::vector<T> fill(size, value);
  ascend_model::StoreGm(dst, reinterpret_cast<const uint8_t *>(fill.data()), bytes, sizeof(T), "InitOutput", site);
}

// ---- Mutex (同步控制/核内同步/Mutex(ISASI).md, Lock.md, Unlock.md, AllocMutexID-(ISASI).md,
// ReleaseMutexID-(ISASI).md) ------------------------------------------------------------------------------------
// Ascend 950PR/950DT only: the documents list Atlas A2/A3 as unsupported (CANN's header compiles the calls to
// nothing there, so they would order nothing). Each call stops the run.
using MutexID = uint8_t;

class Mutex {
 public:
  template <pipe_t pipe>
  static __aicore__ inline void Lock(MutexID id, const ascend_model::Site &site = ascend_model::Site()) {
    (void)id;
    ascend_model::MutexUnsupported("Mutex::Lock", site);
  }
  template <pipe_t pipe>
  static __aicore__ inline void Unlock(MutexID id, const ascend_model::Site &site = ascend_model::Site()) {
    (void)id;
    ascend_model::MutexUnsupported("Mutex::Unlock", site);
  }
};

__aicore__ inline MutexID AllocMutexID(const ascend_model::Site &site = ascend_model::Site()) {
  ascend_model::MutexUnsupported("AllocMutexID", site);
}
__aicore__ inline void ReleaseMutexID(MutexID id, const ascend_model::Site &site = ascend_model::Site()) {
  (void)id;
  ascend_model::MutexUnsupported("ReleaseMutexID", site);
}

}  // namespace AscendC

#pragma GCC visibility pop

#endif  // ASCEND_MODEL_SYNC_BLOCK_H
