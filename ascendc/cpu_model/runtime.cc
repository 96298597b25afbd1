// The modelled machine behind the AscendC API of this folder.
//
// Execution. A launch (ICPU_RUN_KF, tikicpulib.h) of numBlocks blocks in a kernel mode: MIX_MODE makes
// every AI core three host threads, its Cube core (AIC) and its two Vector cores (AIV, sub-blocks 0
// and 1); AIV_MODE / AIC_MODE one thread per block. Global memory is what GmAlloc registered. The
// threads take turns under one lock and hand over only when they block on a cross-core flag (or
// SyncAll) or finish, so a run is deterministic; hazards do not depend on that order anyway:
//
// Happens-before. Each (thread, pipe) is an agent with a vector clock. A thread issues its
// instructions in program order to its pipes, which run asynchronously; what orders two accesses of
// different agents is only what CANN documents:
//   * SetFlag<A_B>(id) on pipe A / WaitFlag<A_B>(id) on pipe B (one pending set per event id, and a
//     set must be ordered after the wait that consumed the previous set of its id: flags execute on
//     their pipes, so an unordered set may find the flag still set and be lost);
//   * PipeBarrier<PIPE_ALL> (all pipes of the thread); PipeBarrier<P> orders pipe P with itself:
//     CANN requires it between vector instructions that depend on each other (any overlap of one's
//     reads or writes with the other's writes, the model takes the strict reading) and between
//     MTE2 / MTE3 copies whose destinations overlap; the other pipes execute in order;
//   * TQue auto-sync: EnQue/DeQue = producer -> consumer, FreeTensor/AllocTensor = consumer -> producer
//     (VECIN MTE2 -> V, VECOUT V -> MTE3, A1/B1 MTE2 -> MTE1, A2/B2 MTE1 -> M, CO1 M -> FIX);
//   * CrossCoreSetFlag<mode, pipe> (after the pipe's earlier instructions) / CrossCoreWaitFlag, which
//     on Atlas A2/A3 blocks the issue of all later instructions of the waiting core. Mode 0: a set
//     counts once every core of the caller's type has set, on each of them; mode 1: the same for the
//     two AIVs of an AI core; mode 2: an AIC set counts once on each of its two AIVs, the AIC's
//     counter once both AIVs have set. Counters hold 0-15. SyncAll is built from these (flags 11-14)
//     or, soft, from a GM workspace the participants count in;
//   * atomic DMA stores (SetAtomicAdd, ...) of one operation and type need no order among themselves;
//   * blocks through GM (sync_block.h, section "blocks through GM" below): IBSet -> IBWait, NotifyNextBlock ->
//     the next block's WaitPreBlock, GroupBarrier Arrive -> Wait (and Wait -> the next round's Arrive), and a
//     poll (ReadGmByPassDCache) of another core's WriteGmByPassDCache, which publishes its scalar GM writes
//     only up to its last DataSyncBarrier<DDR / ALL>.
// Scalar accesses (GetValue/SetValue) are on PIPE_S: ordering them against a pipe needs S_V, V_S, ...
//
// The compiler's auto-sync (--cce-auto-sync, on by default for <<<>>> launches, kernel-launch and custom
// operator projects: 同步控制/核内同步/关键特性说明.md, 表3). With it on, the Bisheng compiler inserts, on a
// Vector core of NPU architecture 2201, the synchronisation of every dependency between two PIPE_V
// instructions and between PIPE_S and PIPE_V / MTE2 / MTE3 (both ways); on the Cube core it inserts
// none, and overlapping MTE2 / MTE3 destinations still need PipeBarrier. The model takes such a
// dependency as synchronised where it finds it (the later access then waits for the earlier one, as an
// inserted SetFlag / WaitFlag pair would make it) instead of stopping the run. build_cpu_debug.sh
// compiles with it on (ASCEND_MODEL_CCE_AUTO_SYNC=1) unless given --cce-auto-sync=off; the model of our
// own kernel (ms_msa.testing.ascend_model) compiles with it off, the strict reading, so each of the
// kernel's own sync calls is shown necessary.
//
// Shadow memory. Every byte of every local buffer and of every writable GM allocation records its
// last write and the reads since (which instruction, agent, clock). An access that is not ordered
// after a conflicting one (RAW, WAR, WAW) of another agent stops the run with a message naming the
// buffer, both calls (file:line) and the synchronisation that would order them.
#include <algorithm>
#include <array>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <tuple>
#include <vector>

#include "runtime_api.h"  // first: it exports the model's declarations (model_hooks.h too)
#include "sync_block.h"   // DataSyncBarrier, IBSet / IBWait, WaitPreBlock, GroupBarrier, ... (exported too)
#define ASCEND_MODEL_RUNTIME_ONLY
#include "tikicpulib.h"
#include "machine.h"

// The calling thread's core type (ASCEND_IS_AIV / ASCEND_IS_AIC of a kernel built once for the host)
// and the launch's tiling key (ICPU_SET_TILING_KEY).
thread_local int32_t g_coreType = AscendC::MIX;
thread_local int64_t block_idx = 0;
thread_local int64_t block_num = 0;
thread_local int64_t sub_block_idx = 0;
thread_local int64_t g_taskRation = 1;
uint64_t g_tilingKey = 0;

namespace ascend_model {
namespace {

using AscendC::HardEvent;
using AscendC::TPosition;

constexpr int kPipes = 7;                 // Pipe: S, V, M, MTE1, MTE2, MTE3, FIX
constexpr int kMaxBlocks = 128;           // numBlocks the model launches at most
constexpr int kEventIds = 8;              // EVENT_ID0..7 per HardEvent
constexpr int kCrossFlags = 16;           // flag ids 0-15 (modes 0, 1, 2)
constexpr int kCrossCounterMax = 15;      // a counter holds 0-15
constexpr uint32_t kUbBlock = 32;         // UB / L1 allocation granule
constexpr uint64_t kSystemWorkspace = 16ull * 1024 * 1024;  // RESERVED_WORKSPACE on Atlas A2/A3

// Capacities of one AI core (Atlas A2/A3): UB per Vector core, L1/L0/BiasTable per Cube core
// (NPU架构版本2201.md, 各存储单元的参数规格: BiasTable Buffer 1 KB, 64-byte aligned; the alignment is
// checked by the instructions that address it, DataCopy L1 -> BiasTable and Mmad with bias).
uint32_t Capacity(Space s) {
  switch (s) {
    case Space::kUB: return 192 * 1024;
    case Space::kL1: return 512 * 1024;
    case Space::kL0A: return 64 * 1024;
    case Space::kL0B: return 64 * 1024;
    case Space::kL0C: return 128 * 1024;
    case Space::kBT: return 1024;
    case Space::kFB: return 2048;  // Fixpipe Buffer 2 KB (same table)
    default: return 0;
  }
}

#ifndef ASCEND_MODEL_ASC_RESERVED_UBUF
#define ASCEND_MODEL_ASC_RESERVED_UBUF 1
#endif

// What a kernel may allocate of a memory (TPipe buffers, LocalMemAllocator, LocalTensor(pos, addr, len)), per
// NPU架构版本2201.md (各存储单元的参数规格): Ascend C and the compiler keep 256 bytes of UB, and of L1 in a
// Cube + Vector (MIX) kernel, and 8 KB more of UB for some of its APIs unless the kernel is compiled with
// --cce-disable-asc-reserved-ubuf (build_cpu_debug.sh passes that option on). The reserved bytes are taken
// from the top of the memory (an assumption: the document gives their size, not their place).
uint32_t Usable(Space s, bool mix) {
  switch (s) {
    case Space::kUB: return Capacity(s) - 256 - (ASCEND_MODEL_ASC_RESERVED_UBUF ? 8 * 1024 : 0);
    case Space::kL1: return Capacity(s) - (mix ? 256 : 0);
    default: return Capacity(s);
  }
}

const char *PipeName(Pipe p) {
  static const char *names[kPipes] = {"S", "V", "M", "MTE1", "MTE2", "MTE3", "FIX"};
  return names[static_cast<int>(p)];
}

bool ToPipe(pipe_t p, Pipe *out) {
  switch (p) {
    case PIPE_S: *out = Pipe::kS; return true;
    case PIPE_V: *out = Pipe::kV; return true;
    case PIPE_M: *out = Pipe::kM; return true;
    case PIPE_MTE1: *out = Pipe::kMTE1; return true;
    case PIPE_MTE2: *out = Pipe::kMTE2; return true;
    case PIPE_MTE3: *out = Pipe::kMTE3; return true;
    case PIPE_FIX: *out = Pipe::kFIX; return true;
    default: return false;
  }
}

// Source and destination pipes of a HardEvent (its name is SRC_DST).
struct EventPipes {
  Pipe src, dst;
  const char *name;
};
EventPipes PipesOf(HardEvent e) {
  using P = Pipe;
  switch (e) {
    case HardEvent::MTE2_MTE1: return {P::kMTE2, P::kMTE1, "MTE2_MTE1"};
    case HardEvent::MTE1_MTE2: return {P::kMTE1, P::kMTE2, "MTE1_MTE2"};
    case HardEvent::MTE1_M: return {P::kMTE1, P::kM, "MTE1_M"};
    case HardEvent::M_MTE1: return {P::kM, P::kMTE1, "M_MTE1"};
    case HardEvent::MTE2_V: return {P::kMTE2, P::kV, "MTE2_V"};
    case HardEvent::V_MTE2: return {P::kV, P::kMTE2, "V_MTE2"};
    case HardEvent::MTE3_V: return {P::kMTE3, P::kV, "MTE3_V"};
    case HardEvent::V_MTE3: return {P::kV, P::kMTE3, "V_MTE3"};
    case HardEvent::M_V: return {P::kM, P::kV, "M_V"};
    case HardEvent::V_M: return {P::kV, P::kM, "V_M"};
    case HardEvent::V_V: return {P::kV, P::kV, "V_V"};
    case HardEvent::MTE3_MTE1: return {P::kMTE3, P::kMTE1, "MTE3_MTE1"};
    case HardEvent::MTE1_MTE3: return {P::kMTE1, P::kMTE3, "MTE1_MTE3"};
    case HardEvent::MTE1_V: return {P::kMTE1, P::kV, "MTE1_V"};
    case HardEvent::MTE2_M: return {P::kMTE2, P::kM, "MTE2_M"};
    case HardEvent::M_MTE2: return {P::kM, P::kMTE2, "M_MTE2"};
    case HardEvent::V_MTE1: return {P::kV, P::kMTE1, "V_MTE1"};
    case HardEvent::M_FIX: return {P::kM, P::kFIX, "M_FIX"};
    case HardEvent::FIX_M: return {P::kFIX, P::kM, "FIX_M"};
    case HardEvent::MTE3_MTE2: return {P::kMTE3, P::kMTE2, "MTE3_MTE2"};
    case HardEvent::MTE2_MTE3: return {P::kMTE2, P::kMTE3, "MTE2_MTE3"};
    case HardEvent::S_V: return {P::kS, P::kV, "S_V"};
    case HardEvent::V_S: return {P::kV, P::kS, "V_S"};
    case HardEvent::S_MTE2: return {P::kS, P::kMTE2, "S_MTE2"};
    case HardEvent::MTE2_S: return {P::kMTE2, P::kS, "MTE2_S"};
    case HardEvent::S_MTE3: return {P::kS, P::kMTE3, "S_MTE3"};
    case HardEvent::MTE3_S: return {P::kMTE3, P::kS, "MTE3_S"};
    case HardEvent::MTE2_FIX: return {P::kMTE2, P::kFIX, "MTE2_FIX"};
    case HardEvent::FIX_MTE2: return {P::kFIX, P::kMTE2, "FIX_MTE2"};
    case HardEvent::FIX_S: return {P::kFIX, P::kS, "FIX_S"};
    case HardEvent::M_S: return {P::kM, P::kS, "M_S"};
    case HardEvent::FIX_MTE3: return {P::kFIX, P::kMTE3, "FIX_MTE3"};
    case HardEvent::MTE1_FIX: return {P::kMTE1, P::kFIX, "MTE1_FIX"};
    case HardEvent::FIX_MTE1: return {P::kFIX, P::kMTE1, "FIX_MTE1"};
    case HardEvent::FIX_FIX: return {P::kFIX, P::kFIX, "FIX_FIX"};
    default: return {P::kS, P::kS, nullptr};
  }
}

// The pipes a core type has: the Cube core has no Vector unit and no UB, the Vector core no Cube.
bool PipeOnCore(Pipe p, bool aic) {
  switch (p) {
    case Pipe::kS:
    case Pipe::kMTE2: return true;
    case Pipe::kV: return !aic;
    // MTE3 on the Cube core too: DataCopy L1 -> GM ("DataCopy（L1ToGM连续数据搬运）", A2/A3). The document does not
    // name the pipe; CANN's dav_c220 implementation issues the copy on MTE3, and its example
    // (set_atomic_deterministic_computation) synchronises it with MTE2_MTE3 / MTE3_S on the AIC.
    case Pipe::kMTE3: return true;
    case Pipe::kM:
    case Pipe::kMTE1:
    case Pipe::kFIX: return aic;
  }
  return false;
}

// Which pipe may touch which space, and how (documented data paths of the A2/A3 AI core).
bool PathAllowed(Space s, Pipe p, Access a) {
  const bool rd = a == Access::kRead;
  switch (s) {
    case Space::kGM: return p == Pipe::kS || (p == Pipe::kMTE2 && rd) || (p == Pipe::kMTE3 && !rd) ||
                            (p == Pipe::kFIX && !rd);
    case Space::kUB: return p == Pipe::kS || p == Pipe::kV || (p == Pipe::kMTE2 && !rd) || (p == Pipe::kMTE3 && rd);
    // FIX reads L1 for DataCopy L1 -> Fixpipe Buffer and Fixpipe's cbufWorkspace (quantisation words), MTE3
    // for DataCopy L1 -> GM.
    case Space::kL1: return (p == Pipe::kMTE2 && !rd) || (p == Pipe::kMTE1 && rd) || p == Pipe::kFIX ||
                            (p == Pipe::kMTE3 && rd);
    case Space::kL0A:
    case Space::kL0B: return (p == Pipe::kMTE1 && !rd) || (p == Pipe::kMTE2 && !rd) || (p == Pipe::kM && rd);
    case Space::kL0C: return p == Pipe::kM || (p == Pipe::kFIX && rd);
    // Written by DataCopy L1 -> BiasTable (MTE1, dav_c220 DataCopyL12BTImpl), read by Mmad (M).
    case Space::kBT: return (p == Pipe::kMTE1 && !rd) || (p == Pipe::kM && rd);
    // Written by DataCopy L1 -> Fixpipe Buffer and read by Fixpipe / DataCopy L0C -> GM, both on FIX
    // (dav_c220 DataCopyL12FBImpl is __inout_pipe__(FIX)).
    case Space::kFB: return p == Pipe::kFIX;
  }
  return false;
}

const char *Basename(const char *path) {
  const char *slash = std::strrchr(path, '/');
  return slash ? slash + 1 : path;
}

std::string Where(const Site &s) { return std::string(Basename(s.file)) + ":" + std::to_string(s.line); }

// Thrown through the kernel code of the failing thread (Failure) or of the others (Abort).
struct Failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};
struct Abort {};

using Clock = std::vector<uint32_t>;

void Join(Clock *into, const Clock &from) {
  for (size_t i = 0; i < into->size(); ++i) (*into)[i] = std::max((*into)[i], from[i]);
}

// One instruction (or scalar access) of one agent.
struct Record {
  uint32_t agent;
  uint32_t clock;   // the agent's own clock component when it issued
  uint32_t epoch;   // the thread's PipeBarrier count of this pipe (same-pipe ordering)
  const char *api;
  Site site;
  uint16_t atomic = 0;  // (op << 8) | kind of an atomic DMA store to GM (SetAtomicAdd, ...), else 0
};

struct Cell {
  uint32_t w = 0;  // last write (record id, 0 = never written)
  uint32_t r = 0;  // reads since: a record id, or kMulti | index into readSets
};
constexpr uint32_t kMulti = 0x80000000u;

struct Region {
  uint8_t *host;
  uint64_t bytes;
  Space space;
  std::string name;
  GmKind kind;
  int thread;  // owner of a local memory (-1 for GM)
  std::vector<Cell> cells;  // read-write regions only
};

struct FlagState {
  bool pending = false;
  Clock snapshot;
  Site site;
  // The WaitFlag that consumed the last set: the next SetFlag must be ordered after it, else it may
  // execute first, while the flag is still set (flags execute on their pipes, not when issued).
  int waitAgent = -1;
  uint32_t waitClock = 0;
  Site waitSite;
};

struct CrossQueue {
  std::deque<std::pair<Clock, Site>> sets;  // counted sets not yet consumed by a wait
};

// The sets of a cross-core flag that count only once every member of a group has set (mode 0: all
// cores of a type; mode 1: the two AIVs of an AI core; mode 2: the two AIVs towards their AIC), by
// member thread.
struct GroupSets {
  std::vector<int> members;
  std::vector<int> targets;  // threads whose counter counts once per complete round
  std::map<int, std::deque<std::pair<Clock, Site>>> pending;
  uint8_t mode = 0;
  uint16_t flag = 0;
};

}  // namespace

struct QueueState {
  TPosition pos;
  int32_t depth;
  Pipe producer, consumer;
  struct Slot {
    const LocalBuffer *buffer;
    enum { kFree, kAllocated, kQueued, kDequeued } state = kFree;
    Clock freed;     // consumer clock at FreeTensor (AllocTensor joins it into the producer)
    Clock enqueued;  // producer clock at EnQue (DeQue joins it into the consumer)
  };
  std::vector<Slot> slots;
  std::deque<int> fifo;
  Site site;
  int siblings = 0;  // buffers of earlier queues at the same position
  // TPipe::Destroy / Reset, TBufPool (see "TPipe lifetime and TBufPool" below).
  const void *pipe = nullptr;  // the TPipe that owns the buffers
  bool released = false;       // its TPipe (or custom pool) released the buffers
  std::string releasedBy;
  uint8_t customNum = 0;  // a custom pool's queue: the buffers InitStartBufHandle named
};

// A TBufPool (or EXTERN_IMPL_BUFPOOL pool): [start, start + len) of one memory, handing out buffers from cur.
struct PoolState {
  AscendC::TPosition pos;
  Space space;
  uint32_t start = 0, len = 0, cur = 0;
  uint32_t bufIds = 0, usedIds = 0;
  bool custom = false;
  const void *pipe = nullptr;
  bool reset = false, released = false;
  Site site, resetSite;
  std::vector<QueueState *> queues;
  std::vector<const LocalBuffer *> placed;  // a custom pool's buffers (InitBufHandle)
};

namespace {

struct ThreadCtx {
  int thread = 0, core = 0, role = 0;  // role 0 = AIC, 1/2 = AIV sub-block 0/1
  bool aic() const { return role == 0; }
  int sub() const { return role == 0 ? 0 : role - 1; }
  // Core state (InitSocState): the DMA atomic operation, its element kind and size. Unknown at the
  // kernel entry (a previous operator may have left it on) until InitSocState or a TPipe.
  bool socKnown = false;
  uint8_t atomicOp = kAtomicNone, atomicKind = 0, atomicBytes = 0;
  Site atomicSite;
  std::vector<uint8_t> padValue;  // SetPadValue (empty: none)
  bool floatSaturation = true;     // CTRL[48] = 0 at kernel entry (SetCtrlSpr(ISASI).md, tables 4 and 5)
  // Static Tensor programming: one LocalMemAllocator per memory; not mixed with TPipe buffers.
  bool allocator[static_cast<int>(AscendC::Hardware::MAX)] = {false};
  bool usedPipeBuffers = false, usedStatic = false;
  Site pipeSite, staticSite;
  std::map<std::tuple<int, int, uint64_t, uint64_t>, const LocalBuffer *> staticBuffers;
  std::map<uintptr_t, int32_t> softSyncRounds;  // soft SyncAll rounds done, by gmWorkspace
  int kernelType = -1;                          // KERNEL_TASK_TYPE_DEFAULT, -1: none declared
  Region *local[8] = {nullptr};  // by Space
  uint32_t used[8] = {0};
  std::deque<LocalBuffer> buffers;
  std::deque<QueueState> queues;
  // TPipe lifetime: the memory each TPipe took ([start, end) per Space), its buffers, its destroyed state;
  // the pools.
  struct PipeRange {
    int space;
    uint32_t start, end;
    const void *pipe;
  };
  std::vector<PipeRange> pipeRanges;
  std::vector<std::pair<const void *, LocalBuffer *>> pipeBuffers;
  std::map<const void *, Site> destroyedPipes;
  std::deque<PoolState> pools;
  FlagState flags[static_cast<int>(HardEvent::MAX)][kEventIds];
  uint8_t allocatedEvents[static_cast<int>(HardEvent::MAX)] = {0};
  uint32_t epoch[kPipes] = {0};  // PipeBarrier<P> calls so far, by pipe
  // The instruction being recorded (consecutive Touches of one call, reads before writes).
  uint32_t curRec = 0;
  const char *curApi = nullptr;
  Site curSite;
  Pipe curPipe = Pipe::kS;
  bool curWrote = false;
  // Scheduling.
  enum { kReady, kBlocked, kDone } state = kReady;
  const CrossQueue *waitQueue = nullptr;  // what a blocked thread waits on
  std::string waitWhat;                   // "CrossCoreWaitFlag(3)", "SyncAll", ...
  Site waitSite;
  // Scalar GM accesses that bypass the DCache (sync_block.h): the S clock at the last DataSyncBarrier<DDR /
  // ALL> (what a later WriteGmByPassDCache publishes), the newest bypass write seen per writer agent (its
  // record), and the polls since the machine last made progress.
  Clock dsbRelease;
  std::map<int, uint32_t> bypassObserved;
  // Bypass writes of other cores this core's scalar unit has read: its later scalar accesses to those bytes
  // come after them (per-location coherence), whatever else the write published.
  std::set<uint32_t> coherentWrites;
  uint64_t pollProgress = ~0ull;
  uint32_t pollIdle = 0;
};

// The state of the block synchronisation through GM of one run (sync_block.h, runtime.cc "blocks through GM").
struct BlockSyncState {
  std::map<uint32_t, Clock> release;  // WriteGmByPassDCache record -> the writer's dsbRelease then
  struct IbSlot {                     // one IBSet / IBWait flag of a gmWorkspace
    CrossQueue set, free;             // a set waiting for its IBWait; the flag free (0) for the next IBSet
    std::string what;
  };
  std::map<uintptr_t, IbSlot> ib;
  struct Determine {                  // InitDetermineComputeWorkspace / WaitPreBlock / NotifyNextBlock
    int n = 0;
    std::vector<CrossQueue> token;    // block i may run its next round
    std::vector<int> waits, notifies;
    std::vector<bool> init;
  };
  std::map<uintptr_t, Determine> determine;
  struct Group {                      // GroupBarrier by workspace
    uint32_t arriveSize = 0, waitSize = 0;
    std::vector<Clock> arrivals, waits;
    struct Pending {
      size_t need;
      int thread;
    };
    std::vector<Pending> waitingForArrivals, waitingForWaits;
    std::map<int, CrossQueue> queue;  // by thread
  };
  std::map<uintptr_t, Group> groups;
};

class MachineImpl {
 public:
  std::mutex mu;
  std::condition_variable cv;
  int running = -1;
  bool aborted = false;
  std::string error;

  LaunchOptions options;
  int threads = 0, agents = 0;
  std::vector<ThreadCtx> ctx;
  std::vector<Clock> vc;  // by agent
  // By agent: the highest own clock the agent has seen come back through a synchronisation (its
  // instructions up to there are known complete, which orders them before its later ones).
  std::vector<uint32_t> selfDone;
  std::vector<Record> records{Record{}};  // id 0 = none
  std::vector<std::vector<uint32_t>> readSets;
  std::vector<std::unique_ptr<Region>> regions;
  std::map<uintptr_t, Region *> byAddress;  // region start -> region
  std::vector<std::unique_ptr<GmAllocation>> gm;
  std::vector<std::unique_ptr<std::string>> gmNames;  // the allocations' names (GmAllocation::name)
  std::vector<CoreCounters> counters;
  int perCore = 3;  // threads per block: 3 in MIX mode (AIC, AIV0, AIV1), else 1
  // Cross-core counters: [thread][flag]; group sets (modes 0, 1, AIV -> AIC of 2) by key.
  std::vector<std::array<CrossQueue, kCrossFlags>> cross;
  std::map<std::tuple<int, int, int>, GroupSets> groups;
  std::map<std::pair<int, uintptr_t>, CrossQueue> softSync;  // soft SyncAll releases, by thread
  std::map<uintptr_t, GroupSets> softGroups;                  // soft SyncAll arrivals, by gmWorkspace
  bool tilingKeySet = false;
  std::set<std::string> syncSites;
  bool runDone = true;
  std::vector<std::unique_ptr<std::vector<uint8_t>>> localMemory;
  BlockSyncState blockSync;

  void Reset() {
    ctx.clear();
    vc.clear();
    selfDone.clear();
    records.assign(1, Record{});
    readSets.clear();
    regions.clear();
    byAddress.clear();
    gm.clear();
    gmNames.clear();
    counters.clear();
    cross.clear();
    groups.clear();
    softSync.clear();
    softGroups.clear();
    syncSites.clear();
    localMemory.clear();
    blockSync = BlockSyncState();
    aborted = false;
    error.clear();
    runDone = false;
  }

  Region *AddRegion(uint8_t *host, uint64_t bytes, Space space, std::string name, GmKind kind, int thread) {
    auto r = std::make_unique<Region>();
    r->host = host;
    r->bytes = bytes;
    r->space = space;
    r->name = std::move(name);
    r->kind = kind;
    r->thread = thread;
    Region *raw = r.get();
    regions.push_back(std::move(r));
    if (bytes > 0) byAddress[reinterpret_cast<uintptr_t>(host)] = raw;
    return raw;
  }

  Region *RegionOf(const uint8_t *p) {
    auto it = byAddress.upper_bound(reinterpret_cast<uintptr_t>(p));
    if (it == byAddress.begin()) return nullptr;
    --it;
    Region *r = it->second;
    if (p >= r->host + r->bytes) return nullptr;
    return r;
  }

  int Agent(int thread, Pipe p) const { return thread * kPipes + static_cast<int>(p); }

  // Agent `a` waits for an event that carries `from`.
  void JoinInto(int a, const Clock &from) {
    selfDone[a] = std::max(selfDone[a], from[a]);
    Join(&vc[a], from);
  }
};

MachineImpl &M() {
  static MachineImpl *m = new MachineImpl();  // never destroyed: threads may still unwind at exit
  return *m;
}

thread_local ThreadCtx *tls = nullptr;

ThreadCtx &Ctx(const char *api, const Site &site) {
  if (tls == nullptr) throw Failure(std::string(api) + " at " + Where(site) + ": called outside a kernel run");
  return *tls;
}

std::string ThreadName(int thread) {
  MachineImpl &m = M();
  if (m.options.mode == LaunchMode::kAiv) return "AIV of block " + std::to_string(thread);
  if (m.options.mode == LaunchMode::kAic) return "AIC of block " + std::to_string(thread);
  const int core = thread / 3, role = thread % 3;
  return (role == 0 ? std::string("AIC") : "AIV" + std::to_string(role - 1)) + " of core " + std::to_string(core);
}

std::string AgentName(int agent) {
  return std::string(PipeName(static_cast<Pipe>(agent % kPipes))) + " of " + ThreadName(agent / kPipes);
}

std::string RecordText(const Record &r) {
  return std::string(r.api) + " at " + Where(r.site) + " (" + AgentName(static_cast<int>(r.agent)) + ")";
}

// Ends an instruction: the next Touch starts a new record (after any synchronisation call).
void EndInstruction(ThreadCtx &c) { c.curRec = 0; }

[[noreturn]] void Stop(const std::string &message) { throw Failure(message); }

void CheckAbort() {
  if (M().aborted) throw Abort();
}

// The record of the instruction `api` at `site` on `pipe` of the calling thread.
uint32_t CurrentRecord(ThreadCtx &c, Pipe pipe, Access access, const char *api, const Site &site) {
  const bool same = c.curRec != 0 && c.curApi == api && c.curSite.file == site.file && c.curSite.line == site.line &&
                    c.curPipe == pipe && !(access == Access::kRead && c.curWrote);
  if (same) {
    if (access == Access::kWrite) c.curWrote = true;
    return c.curRec;
  }
  MachineImpl &m = M();
  const int agent = m.Agent(c.thread, pipe);
  const bool atomic = (pipe == Pipe::kMTE3 || pipe == Pipe::kFIX) && c.atomicOp != kAtomicNone &&
                      c.atomicOp != kAtomicTypeOnly;
  m.records.push_back(Record{static_cast<uint32_t>(agent), m.vc[agent][agent], c.epoch[static_cast<int>(pipe)], api,
                             site, static_cast<uint16_t>(atomic ? (c.atomicOp << 8) | c.atomicKind : 0)});
  c.curRec = static_cast<uint32_t>(m.records.size() - 1);
  c.curApi = api;
  c.curSite = site;
  c.curPipe = pipe;
  c.curWrote = access == Access::kWrite;
  return c.curRec;
}

enum class Conflict { kRAW, kWAR, kWAW, kNone };

// Whether the earlier access `prev` is ordered before the current access of record `curId`, given
// how they conflict. Inside one pipe only PipeBarrier orders: every conflict of two vector
// instructions, and overlapping destinations of two MTE2 / MTE3 copies.
bool Ordered(const Record &prev, uint32_t prevId, uint32_t curId, Conflict kind, const ThreadCtx &c) {
  if (prevId == curId) return true;
  const Record &cur = M().records[curId];
  if (!c.coherentWrites.empty() && static_cast<int>(cur.agent) == M().Agent(c.thread, Pipe::kS) &&
      c.coherentWrites.count(prevId) != 0) {
    return true;
  }
  if (prev.agent == cur.agent) {
    const Pipe p = static_cast<Pipe>(cur.agent % kPipes);
    if (kind == Conflict::kNone || prev.epoch != c.epoch[static_cast<int>(p)]) return true;
    if (prev.clock <= M().selfDone[cur.agent]) return true;  // seen complete through another pipe
    if (p == Pipe::kV) return false;
    return !((p == Pipe::kMTE2 || p == Pipe::kMTE3) && kind == Conflict::kWAW);
  }
  return M().vc[cur.agent][prev.agent] >= prev.clock;
}

#ifndef ASCEND_MODEL_CCE_AUTO_SYNC
#define ASCEND_MODEL_CCE_AUTO_SYNC 0
#endif

// With the compiler's auto-sync on (see the top of this file): whether the conflict of the earlier access
// `prev` with the current record is one the compiler synchronises. If so, between two pipes, the current
// pipe now waits for everything the earlier one was given (the compiler's SetFlag / WaitFlag pair before
// this instruction), so later checks see them ordered; two vector instructions are ordered as by a
// PipeBarrier<PIPE_V> between them.
bool AutoSynced(const Record &prev, uint32_t curId, const ThreadCtx &c) {
  if (!ASCEND_MODEL_CCE_AUTO_SYNC || c.aic()) return false;
  MachineImpl &m = M();
  const Record &cur = m.records[curId];
  if (prev.agent / kPipes != cur.agent / kPipes) return false;  // another core: cross-core flags only
  const Pipe pp = static_cast<Pipe>(prev.agent % kPipes), cp = static_cast<Pipe>(cur.agent % kPipes);
  const auto dma = [](Pipe p) { return p == Pipe::kMTE2 || p == Pipe::kMTE3; };
  const bool covered = (pp == Pipe::kV && cp == Pipe::kV) ||
                       (pp == Pipe::kS && (cp == Pipe::kV || dma(cp))) ||
                       (cp == Pipe::kS && (pp == Pipe::kV || dma(pp)));
  if (!covered) return false;
  if (pp != cp) {
    // A SetFlag on prev's pipe placed just before this instruction (after everything that pipe was given
    // so far), and its WaitFlag on this pipe: as SetFlagOn / WaitFlagOn do it.
    const Clock snapshot = m.vc[prev.agent];
    ++m.vc[prev.agent][prev.agent];
    m.JoinInto(static_cast<int>(cur.agent), snapshot);
  }
  return true;
}

[[noreturn]] void Hazard(const char *kind, const Region &region, const Span &span, uint64_t byte, uint32_t prevId,
                         uint32_t curId) {
  MachineImpl &m = M();
  const Record &prev = m.records[prevId];
  const Record &cur = m.records[curId];
  const Pipe pp = static_cast<Pipe>(prev.agent % kPipes), cp = static_cast<Pipe>(cur.agent % kPipes);
  std::ostringstream os;
  // Name the byte inside its buffer (local memory) or allocation (GM).
  std::string where = "byte " + std::to_string(byte) + " of " + region.name;
  if (region.thread >= 0) {
    for (const LocalBuffer &b : m.ctx[region.thread].buffers) {
      if (region.host + byte >= b.host && region.host + byte < b.host + b.bytes) {
        where = "byte " + std::to_string(region.host + byte - b.host) + " of the buffer, " + SpaceName(region.space) +
                " address " + std::to_string(byte) + " of the " + ThreadName(region.thread);
      }
    }
  }
  os << "hazard: " << kind << " on " << span.buffer << " (" << where << "): " << RecordText(cur) << " "
     << (std::string(kind) == "RAW" ? "reads bytes written by" : std::string(kind) == "WAR" ? "writes bytes read by"
                                                                                             : "writes bytes written by")
     << " " << RecordText(prev) << ", and nothing orders them: missing ";
  if (prev.agent / kPipes == cur.agent / kPipes) {
    if (pp == cp) {
      os << "PipeBarrier<PIPE_" << PipeName(cp) << ">";
    } else {
      os << PipeName(pp) << " -> " << PipeName(cp) << " (SetFlag/WaitFlag<HardEvent::" << PipeName(pp) << "_"
         << PipeName(cp) << ">)";
    }
  } else {
    os << "a cross-core flag from " << AgentName(static_cast<int>(prev.agent)) << " to "
       << ThreadName(static_cast<int>(cur.agent) / kPipes) << " (CrossCoreSetFlag after the " << PipeName(pp)
       << " access, CrossCoreWaitFlag before the " << PipeName(cp) << " access)";
  }
  Stop(os.str());
}

// Adds read `rec` to read state `r`, dropping reads ordered before it.
uint32_t AddRead(uint32_t r, uint32_t rec, const ThreadCtx &c) {
  MachineImpl &m = M();
  if (r == 0) return rec;
  std::vector<uint32_t> set;
  if (r & kMulti) {
    set = m.readSets[r & ~kMulti];
  } else {
    set.push_back(r);
  }
  std::vector<uint32_t> kept;
  kept.reserve(set.size() + 1);
  for (uint32_t id : set) {
    if (!Ordered(m.records[id], id, rec, Conflict::kNone, c)) kept.push_back(id);
  }
  if (kept.empty()) return rec;
  kept.push_back(rec);
  m.readSets.push_back(std::move(kept));
  return kMulti | static_cast<uint32_t>(m.readSets.size() - 1);
}

// Calls f(id) for the record ids of a cell's writes or reads (one id, or kMulti | index of a set).
template <typename F>
void ForEachId(uint32_t v, F f) {
  if (v == 0) return;
  if (!(v & kMulti)) {
    f(v);
    return;
  }
  const std::vector<uint32_t> &set = M().readSets[v & ~kMulti];
  for (size_t k = 0; k < set.size(); ++k) f(set[k]);
}

}  // namespace

// ---- Touch: the one entry of every instruction's memory access -------------------------------------
uint8_t *Touch(const Span &span, uint64_t offset, uint64_t bytes, Pipe pipe, Access access, const char *api,
               const Site &site) {
  ThreadCtx &c = Ctx(api, site);
  CheckAbort();
  MachineImpl &m = M();
  if (bytes == 0) return span.host == nullptr ? nullptr : span.host + std::min(offset, span.bytes);
  if (!PipeOnCore(pipe, c.aic())) {
    Fail(api, site, std::string("pipe ") + PipeName(pipe) + " does not exist on the " + (c.aic() ? "AIC" : "AIV"));
  }
  if (span.host == nullptr || offset > span.bytes || bytes > span.bytes - offset) {
    std::ostringstream os;
    os << "out of bounds: " << (access == Access::kRead ? "reads" : "writes") << " bytes [" << offset << ", "
       << offset + bytes << ") of " << span.buffer << " from the tensor's start, which has " << span.bytes
       << " bytes up to the end of its " << (span.space == Space::kGM ? "allocation" : "buffer");
    Fail(api, site, os.str());
  }
  if (!PathAllowed(span.space, pipe, access)) {
    Fail(api, site, std::string(access == Access::kRead ? "pipe " : "pipe ") + PipeName(pipe) + " cannot " +
                        (access == Access::kRead ? "read " : "write ") + SpaceName(span.space) + " (" + span.buffer +
                        ")");
  }
  uint8_t *host = span.host + offset;
  Region *region = m.RegionOf(host);
  if (region == nullptr || host + bytes > region->host + region->bytes) {
    Fail(api, site, std::string("access to memory outside every allocation (") + span.buffer + ")");
  }
  if (region->thread >= 0 && region->thread != c.thread) {
    Fail(api, site, "access to the local memory of another core (" + region->name + ")");
  }
  if (region->kind == GmKind::kNoAccess) Fail(api, site, "access to " + region->name);
  if (access == Access::kWrite && span.space == Space::kGM && (pipe == Pipe::kMTE3 || pipe == Pipe::kFIX) &&
      !c.socKnown) {
    Fail(api, site,
         "a DMA store to GM while the core's atomic state is undefined (a previous operator may have left atomic "
         "accumulation on): static Tensor programming must call InitSocState() at the kernel entry (a TPipe does it)");
  }
  const uint32_t rec = CurrentRecord(c, pipe, access, api, site);
  if (access == Access::kRead) {
    CoreCounters &k = m.counters[c.core];
    switch (pipe) {
      case Pipe::kMTE1: k.mte1Bytes += bytes; break;
      case Pipe::kMTE2: k.mte2Bytes += bytes; break;
      case Pipe::kMTE3:
        k.mte3Bytes += bytes;
        if (span.space == Space::kL1) k.mte3L1Bytes += bytes;
        break;
      case Pipe::kFIX: k.fixBytes += bytes; break;
      default: break;
    }
  } else if (pipe == Pipe::kFIX && span.space == Space::kGM) {
    m.counters[c.core].fixGmBytes += bytes;
  } else if (pipe == Pipe::kFIX && span.space == Space::kL1) {
    m.counters[c.core].fixL1Bytes += bytes;
  }
  if (region->kind == GmKind::kReadOnly) {
    if (access == Access::kWrite) Fail(api, site, "writes " + region->name + ", an input of the kernel");
    return host;
  }
  // Shadow: consecutive cells in the same state get the same verdict and the same new state. The
  // writes of a cell are one record, or a set of atomic stores of one operation and type that need
  // no order among themselves (the hardware combines them), as reads are.
  const uint64_t first = static_cast<uint64_t>(host - region->host);
  Cell *cells = region->cells.data() + first;
  const uint16_t atomic = access == Access::kWrite && span.space == Space::kGM ? m.records[rec].atomic : 0;
  uint32_t lastW = 0xffffffffu, lastR = 0xffffffffu, newR = 0, newW = rec;
  for (uint64_t i = 0; i < bytes; ++i) {
    Cell &cell = cells[i];
    if (cell.w == lastW && cell.r == lastR) {
      if (access == Access::kWrite) {
        cell.w = newW;
        cell.r = 0;
      } else {
        cell.r = newR;
      }
      continue;
    }
    lastW = cell.w;
    lastR = cell.r;
    if (access == Access::kWrite) {
      // Reads first: a missing write-after-read event explains more than the write before them.
      ForEachId(cell.r, [&](uint32_t id) {
        if (!Ordered(m.records[id], id, rec, Conflict::kWAR, c) && !AutoSynced(m.records[id], rec, c)) {
          Hazard("WAR", *region, span, first + i, id, rec);
        }
      });
      std::vector<uint32_t> kept;
      ForEachId(cell.w, [&](uint32_t id) {
        const bool combines = atomic != 0 && m.records[id].atomic == atomic;
        if (Ordered(m.records[id], id, rec, combines ? Conflict::kNone : Conflict::kWAW, c)) return;
        if (!combines && AutoSynced(m.records[id], rec, c)) return;
        if (!combines) Hazard("WAW", *region, span, first + i, id, rec);
        kept.push_back(id);
      });
      newW = rec;
      if (!kept.empty()) {
        kept.push_back(rec);
        m.readSets.push_back(std::move(kept));
        newW = kMulti | static_cast<uint32_t>(m.readSets.size() - 1);
      }
      cell.w = newW;
      cell.r = 0;
    } else {
      ForEachId(cell.w, [&](uint32_t id) {
        if (!Ordered(m.records[id], id, rec, Conflict::kRAW, c) && !AutoSynced(m.records[id], rec, c)) {
          Hazard("RAW", *region, span, first + i, id, rec);
        }
      });
      newR = cell.r == rec ? rec : AddRead(cell.r, rec, c);
      cell.r = newR;
    }
  }
  return host;
}

void Fail(const char *api, const Site &site, const std::string &message) {
  throw Failure(std::string(api) + " at " + Where(site) + ": " + message);
}

void CountCubeFractalMacs(uint64_t fractalMacs) {
  ThreadCtx &c = Ctx("Mmad", Site());
  M().counters[c.core].cubeFractalMacs += fractalMacs;
}

void CountFixIntoL1(uint64_t l0cBytes) {
  ThreadCtx &c = Ctx("Fixpipe", Site());
  M().counters[c.core].fixL1ReadBytes += l0cBytes;
}

void CountVectorRepeats(uint64_t repeats, const std::string &op) {
  ThreadCtx &c = Ctx("vector instruction", Site());
  CoreCounters &k = M().counters[c.core];
  k.vectorRepeats += repeats;
  if (repeats > 0) k.vectorOps[op] += repeats;
}

// ---- GM, buffers, tiling -----------------------------------------------------------------------------
const GmAllocation *FindGm(const void *p) {
  if (p == nullptr) return nullptr;
  MachineImpl &m = M();
  Region *r = m.RegionOf(static_cast<const uint8_t *>(p));
  if (r == nullptr || r->space != Space::kGM) return nullptr;
  for (const auto &a : m.gm) {
    if (a->host == r->host) return a.get();
  }
  return nullptr;
}

void CheckKernelType(KernelMetaType type, const Site &site) {
  ThreadCtx &c = Ctx("KERNEL_TASK_TYPE_DEFAULT", site);
  // The kernel types each launch mode runs ("设置Kernel类型", "SetKernelMode"): MIX mode runs the
  // 1 AIC : 2 AIV ratio; AIV_MODE vector-only kernels, AIC_MODE cube-only ones.
  const LaunchMode mode = M().options.mode;
  bool ok = false;
  const char *wants = "";
  switch (mode) {
    case LaunchMode::kMix:
      ok = type == KERNEL_TYPE_MIX_AIC_1_2;
      wants = "KERNEL_TYPE_MIX_AIC_1_2 (other AIC : AIV ratios are not modelled)";
      break;
    case LaunchMode::kAiv:
      ok = type == KERNEL_TYPE_AIV_ONLY || type == KERNEL_TYPE_MIX_AIV_1_0;
      wants = "KERNEL_TYPE_AIV_ONLY or KERNEL_TYPE_MIX_AIV_1_0";
      break;
    case LaunchMode::kAic:
      ok = type == KERNEL_TYPE_AIC_ONLY || type == KERNEL_TYPE_MIX_AIC_1_0;
      wants = "KERNEL_TYPE_AIC_ONLY or KERNEL_TYPE_MIX_AIC_1_0";
      break;
  }
  if (!ok) {
    Fail("KERNEL_TASK_TYPE_DEFAULT", site,
         std::string("kernel type ") + std::to_string(static_cast<int>(type)) + " in a " +
             (mode == LaunchMode::kMix ? "MIX_MODE" : mode == LaunchMode::kAiv ? "AIV_MODE" : "AIC_MODE") +
             " launch: the model runs " + wants + " there");
  }
  c.kernelType = type;
}

// ---- core state, atomics, padding, tiling key ---------------------------------------------------------------
void PipeConstructed(const Site &site) {
  if (tls == nullptr) return;  // a TPipe outside a kernel run (host code) has no core to initialise
  InitSoc(site);
}

void InitSoc(const Site &site) {
  ThreadCtx &c = Ctx("InitSocState", site);
  c.socKnown = true;
  c.atomicOp = kAtomicNone;  // "InitSocState": atomic accumulation off
  c.atomicKind = 0;
  c.atomicBytes = 0;
}

void SetAtomic(uint8_t op, uint8_t kind, uint8_t elemBytes, const char *api, const Site &site) {
  ThreadCtx &c = Ctx(api, site);
  CheckAbort();
  if (op != kAtomicNone && kind == 0) {
    Fail(api, site, "Atlas A2/A3 take int8_t, int16_t, half, bfloat16_t, int32_t and float for atomic DMA stores");
  }
  if (op == kAtomicNone) {
    c.atomicOp = kAtomicNone;
    c.atomicKind = 0;
    c.atomicBytes = 0;
  } else if (op == kAtomicTypeOnly) {
    c.atomicKind = kind;  // SetAtomicType: the type of the operation in force (or of a later one)
    c.atomicBytes = elemBytes;
    if (c.atomicOp == kAtomicNone) c.atomicOp = kAtomicTypeOnly;
  } else {
    c.atomicOp = op;
    c.atomicKind = kind;
    c.atomicBytes = elemBytes;
  }
  c.atomicSite = site;
  c.socKnown = true;  // the atomic state is now the kernel's own
  EndInstruction(c);
}

namespace {
// One element of an atomic store: dst = dst (op) src, for the element kinds of AtomicKind.
template <typename T>
bool CombineInt(uint8_t *dst, const uint8_t *src, uint8_t op) {
  T a, b;
  std::memcpy(&a, dst, sizeof(T));
  std::memcpy(&b, src, sizeof(T));
  int64_t r = op == kAtomicAdd ? static_cast<int64_t>(a) + b : op == kAtomicMax ? std::max<int64_t>(a, b)
                                                                                 : std::min<int64_t>(a, b);
  if (r < std::numeric_limits<T>::min() || r > std::numeric_limits<T>::max()) return false;
  const T v = static_cast<T>(r);
  std::memcpy(dst, &v, sizeof(T));
  return true;
}
template <typename T>
void CombineFloat(uint8_t *dst, const uint8_t *src, uint8_t op) {
  T a, b;
  std::memcpy(&a, dst, sizeof(T));
  std::memcpy(&b, src, sizeof(T));
  const float x = static_cast<float>(a), y = static_cast<float>(b);
  // Add: the sum of the two values rounded once to T (to nearest even); max / min as IEEE maxNum.
  const float r = op == kAtomicAdd ? x + y : op == kAtomicMax ? std::fmax(x, y) : std::fmin(x, y);
  const T v = static_cast<T>(r);
  std::memcpy(dst, &v, sizeof(T));
}
}  // namespace

void StoreGm(uint8_t *dst, const uint8_t *src, uint64_t bytes, uint64_t elemBytes, const char *api,
             const Site &site) {
  ThreadCtx &c = Ctx(api, site);
  if (c.atomicOp == kAtomicNone || c.atomicOp == kAtomicTypeOnly) {
    std::memmove(dst, src, bytes);
    return;
  }
  if (elemBytes != c.atomicBytes) {
    Fail(api, site, "an atomic store of " + std::to_string(elemBytes) + "-byte elements while the atomic type set at " +
                        Where(c.atomicSite) + " has " + std::to_string(c.atomicBytes) + "-byte elements");
  }
  for (uint64_t off = 0; off + elemBytes <= bytes; off += elemBytes) {
    bool ok = true;
    switch (c.atomicKind) {
      case 1: {  // float: the sum in double rounds to the same float as an exact sum rounded once
        float a, b;
        std::memcpy(&a, dst + off, 4);
        std::memcpy(&b, src + off, 4);
        const float r = c.atomicOp == kAtomicAdd ? static_cast<float>(static_cast<double>(a) + b)
                        : c.atomicOp == kAtomicMax ? std::fmax(a, b) : std::fmin(a, b);
        std::memcpy(dst + off, &r, 4);
        break;
      }
      case 2: CombineFloat<::half>(dst + off, src + off, c.atomicOp); break;
      case 3: CombineFloat<::bfloat16_t>(dst + off, src + off, c.atomicOp); break;
      case 4: ok = CombineInt<int8_t>(dst + off, src + off, c.atomicOp); break;
      case 5: ok = CombineInt<int16_t>(dst + off, src + off, c.atomicOp); break;
      case 6: ok = CombineInt<int32_t>(dst + off, src + off, c.atomicOp); break;
      default: Fail(api, site, "atomic type not modelled");
    }
    if (!ok) {
      Fail(api, site, "an integer atomic accumulation overflows its type: what the hardware does then is not "
                      "documented, so the model stops");
    }
  }
}

void SetPadValueBytes(const void *value, uint64_t bytes, bool supported, const Site &site) {
  ThreadCtx &c = Ctx("SetPadValue", site);
  if (!supported) Fail("SetPadValue", site, "this type is not among the padding types Atlas A2/A3 take");
  c.padValue.assign(static_cast<const uint8_t *>(value), static_cast<const uint8_t *>(value) + bytes);
  EndInstruction(c);
}

bool FloatSaturation(const char *api, const Site &site) { return Ctx(api, site).floatSaturation; }

void SetFloatSaturation(bool on, const Site &site) {
  ThreadCtx &c = Ctx("SetSaturationFlag", site);
  c.floatSaturation = on;
  EndInstruction(c);
}

bool PadValue(void *out, uint64_t elemBytes, const char *api, const Site &site) {
  ThreadCtx &c = Ctx(api, site);
  if (c.padValue.empty()) return false;
  if (c.padValue.size() != elemBytes) {
    Fail(api, site, "SetPadValue's value has " + std::to_string(c.padValue.size()) +
                        " bytes, the copied elements " + std::to_string(elemBytes) +
                        ": the padding value must have the copy's type");
  }
  std::memcpy(out, c.padValue.data(), elemBytes);
  return true;
}

bool TilingKeyIs(uint64_t key, const Site &site) {
  Ctx("TILING_KEY_IS", site);
  if (!M().tilingKeySet) {
    Fail("TILING_KEY_IS", site, "no tiling key was set for this launch (ICPU_SET_TILING_KEY before ICPU_RUN_KF)");
  }
  return g_tilingKey == key;
}

void CopyTiling(void *dst, const uint8_t *tiling, uint64_t bytes, const Site &site) {
  const GmAllocation *a = FindGm(tiling);
  if (a == nullptr) Fail("GET_TILING_DATA", site, "the tiling pointer is not a GM allocation");
  const Span span{Space::kGM, const_cast<uint8_t *>(tiling), static_cast<uint64_t>(a->host + a->bytes - tiling),
                  static_cast<uint64_t>(tiling - a->host), a->name};
  std::memcpy(dst, Touch(span, 0, bytes, Pipe::kS, Access::kRead, "GET_TILING_DATA", site), bytes);
  EndInstruction(*tls);
}

namespace {

// The identifier passed first to InitBuffer on the line of `site` ("keyL1_"), read from the source.
std::string BufferNameAt(const Site &site, Space space) {
  static std::mutex mu;
  static std::map<std::pair<std::string, int>, std::string> cache;
  std::lock_guard<std::mutex> lock(mu);
  const auto key = std::make_pair(std::string(site.file), site.line);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  std::string name;
  std::ifstream in(site.file);
  std::string line;
  for (int i = 0; i < site.line && std::getline(in, line); ++i) {
  }
  const size_t at = line.find("InitBuffer(");
  if (at != std::string::npos) {
    size_t b = at + std::strlen("InitBuffer(");
    size_t e = line.find_first_of(",)", b);
    if (e != std::string::npos) name = line.substr(b, e - b);
  }
  if (name.empty()) name = std::string(SpaceName(space)) + " buffer of " + Where(site);
  cache[key] = name;
  return name;
}

// The local memory of a TPosition on Atlas A2/A3 ("通用说明和约束", TPosition to physical memory;
// kernel_event.h GetPhyType for __NPU_ARCH__ 2201); false for the positions not modelled (see
// UnmodelledPosition).
bool SpaceOf(TPosition pos, Space *out) {
  switch (pos) {
    case TPosition::A1:
    case TPosition::B1:
    case TPosition::C1: *out = Space::kL1; return true;
    case TPosition::A2: *out = Space::kL0A; return true;
    case TPosition::B2: *out = Space::kL0B; return true;
    case TPosition::C2: *out = Space::kBT; return true;
    case TPosition::C2PIPE2GM: *out = Space::kFB; return true;
    case TPosition::CO1: *out = Space::kL0C; return true;
    case TPosition::VECIN:
    case TPosition::VECOUT:
    case TPosition::VECCALC: *out = Space::kUB; return true;
    default: return false;
  }
}

const char *PositionName(TPosition pos) {
  switch (pos) {
    case TPosition::GM: return "GM";
    case TPosition::A1: return "A1";
    case TPosition::A2: return "A2";
    case TPosition::B1: return "B1";
    case TPosition::B2: return "B2";
    case TPosition::C1: return "C1";
    case TPosition::C2: return "C2 (BiasTable Buffer)";
    case TPosition::CO1: return "CO1";
    case TPosition::CO2: return "CO2 (GM on A2/A3)";
    case TPosition::VECIN: return "VECIN";
    case TPosition::VECOUT: return "VECOUT";
    case TPosition::VECCALC: return "VECCALC";
    case TPosition::SPM: return "SPM";
    case TPosition::TSCM: return "TSCM";
    case TPosition::C2PIPE2GM: return "C2PIPE2GM (Fixpipe Buffer)";
    case TPosition::C2PIPE2LOCAL: return "C2PIPE2LOCAL";
    default: return "MAX";
  }
}

// Why a TPosition has no modelled local buffer (TPipe::InitBuffer, LocalTensor(pos, addr, len)).
std::string UnmodelledPosition(TPosition pos) {
  const std::string name = std::string("TPosition ") + PositionName(pos);
  switch (pos) {
    case TPosition::CO2:
    case TPosition::GM:
    case TPosition::SPM:
      // GetPhyType maps CO2 to Hardware::GM on __NPU_ARCH__ 2201, and CANN's TPipe::InitBuffer stops
      // ("buffer pos can not be Hardware::GM") for a TBuf there and for a TQue whose buffer lands there
      // (a TQue<CO2> takes CO2 -> GM, GetBufferPos = GetPhyType(CO2) = GM).
      return name + " is Global Memory on Atlas A2/A3: TPipe::InitBuffer cannot place a local buffer there "
                    "(CANN's own check: 'buffer pos can not be Hardware::GM'); Fixpipe writes a GlobalTensor directly";
    case TPosition::TSCM:
      return name + " is not modelled (TSCM queues are the Matmul high-level API's L1 cache)";
    default: return name + " is not modelled";
  }
}

// The local memory region of the calling core for `space`, created on first use.
Region *LocalRegion(ThreadCtx &c, Space space) {
  MachineImpl &m = M();
  const int s = static_cast<int>(space);
  if (c.local[s] == nullptr) {
    const uint32_t cap = Capacity(space);
    m.localMemory.push_back(std::make_unique<std::vector<uint8_t>>(cap, 0xA5));
    c.local[s] = m.AddRegion(m.localMemory.back()->data(), cap, space,
                             std::string(SpaceName(space)) + " of " + ThreadName(c.thread), GmKind::kReadWrite,
                             c.thread);
  }
  return c.local[s];
}

void CheckNotMixed(ThreadCtx &c, bool pipeBuffers, const char *api, const Site &site) {
  if (pipeBuffers) {
    if (c.usedStatic) {
      Fail(api, site, "TPipe buffers on a core that uses static Tensor programming (LocalMemAllocator / "
                      "LocalTensor(pos, addr, len) at " + Where(c.staticSite) + "): the two do not mix");
    }
    if (!c.usedPipeBuffers) c.pipeSite = site;
    c.usedPipeBuffers = true;
  } else {
    if (c.usedPipeBuffers) {
      Fail(api, site, "static Tensor programming on a core that allocates TPipe buffers (InitBuffer at " +
                          Where(c.pipeSite) + "): the two do not mix");
    }
    if (!c.usedStatic) c.staticSite = site;
    c.usedStatic = true;
  }
}

}  // namespace

AscendC::Hardware HardwareOf(TPosition pos) {
  Space s;
  if (!SpaceOf(pos, &s)) return AscendC::Hardware::MAX;
  switch (s) {
    case Space::kUB: return AscendC::Hardware::UB;
    case Space::kL1: return AscendC::Hardware::L1;
    case Space::kL0A: return AscendC::Hardware::L0A;
    case Space::kL0B: return AscendC::Hardware::L0B;
    case Space::kL0C: return AscendC::Hardware::L0C;
    case Space::kBT: return AscendC::Hardware::BIAS;
    case Space::kFB: return AscendC::Hardware::FIXBUF;
    default: return AscendC::Hardware::MAX;
  }
}

void AllocatorCreated(AscendC::Hardware hard, const Site &site) {
  ThreadCtx &c = Ctx("LocalMemAllocator", site);
  const int h = static_cast<int>(hard);
  if (hard != AscendC::Hardware::UB && hard != AscendC::Hardware::L1 && hard != AscendC::Hardware::L0A &&
      hard != AscendC::Hardware::L0B && hard != AscendC::Hardware::L0C && hard != AscendC::Hardware::BIAS) {
    Fail("LocalMemAllocator", site, "this Hardware (GM, FIXBUF) is not modelled");
  }
  if (c.allocator[h]) {
    Fail("LocalMemAllocator", site, "a second LocalMemAllocator of one Hardware: only one may exist per kernel");
  }
  c.allocator[h] = true;
}

const LocalBuffer *StaticBuffer(TPosition pos, uint64_t addr, uint64_t bytes, const Site &site) {
  const char *api = "LocalTensor(TPosition, addr, tileSize)";
  ThreadCtx &c = Ctx(api, site);
  Space space;
  if (!SpaceOf(pos, &space)) Fail(api, site, UnmodelledPosition(pos));
  if ((space != Space::kUB) != c.aic()) {
    Fail(api, site, std::string(SpaceName(space)) + " does not exist on the " + (c.aic() ? "AIC" : "AIV"));
  }
  CheckNotMixed(c, false, api, site);
  if (addr % kUbBlock != 0) Fail(api, site, "addr = " + std::to_string(addr) + " is not 32-byte aligned");
  const uint32_t cap = Usable(space, M().options.mode == LaunchMode::kMix);
  if (addr + bytes > cap) {
    Fail(api, site, "out of capacity: bytes [" + std::to_string(addr) + ", " + std::to_string(addr + bytes) +
                        ") exceed the " + std::to_string(cap) + " bytes a kernel may use of " + SpaceName(space) +
                        (cap < Capacity(space) ? " (the rest is Ascend C's reserve)" : ""));
  }
  const uint64_t len = std::min<uint64_t>((bytes + kUbBlock - 1) / kUbBlock * kUbBlock, cap - addr);
  const auto key = std::make_tuple(static_cast<int>(space), static_cast<int>(pos), addr, len);
  auto it = c.staticBuffers.find(key);
  if (it != c.staticBuffers.end()) return it->second;
  Region *r = LocalRegion(c, space);
  if (r->cells.size() < addr + len) r->cells.resize(addr + len);
  LocalBuffer b;
  b.space = space;
  b.position = pos;
  b.host = r->host + addr;
  b.bytes = static_cast<uint32_t>(len);
  b.address = static_cast<uint32_t>(addr);
  b.thread = c.thread;
  b.initSite = site;
  static std::mutex namesMu;
  static std::set<std::string> names;
  {
    std::lock_guard<std::mutex> lock(namesMu);
    b.name = names.insert(std::string(PositionName(pos)) + " tensor at " + SpaceName(space) + " address " +
                          std::to_string(addr))
                 .first->c_str();
  }
  c.buffers.push_back(b);
  c.staticBuffers[key] = &c.buffers.back();
  return &c.buffers.back();
}

const LocalBuffer *AllocBuffer(TPosition pos, uint32_t bytes, const Site &site) {
  ThreadCtx &c = Ctx("TPipe::InitBuffer", site);
  Space space;
  if (!SpaceOf(pos, &space)) Fail("TPipe::InitBuffer", site, UnmodelledPosition(pos));
  CheckNotMixed(c, true, "TPipe::InitBuffer", site);
  const bool cubeSpace = space != Space::kUB;
  if (cubeSpace != c.aic()) {
    Fail("TPipe::InitBuffer", site,
         std::string(SpaceName(space)) + " does not exist on the " + (c.aic() ? "AIC" : "AIV"));
  }
  if (bytes == 0) Fail("TPipe::InitBuffer", site, "len is 0");
  const int s = static_cast<int>(space);
  const uint32_t len = (bytes + kUbBlock - 1) / kUbBlock * kUbBlock;
  const uint32_t cap = Usable(space, M().options.mode == LaunchMode::kMix);
  if (static_cast<uint64_t>(c.used[s]) + len > cap) {
    std::ostringstream os;
    os << "over capacity: " << len << " bytes on top of " << c.used[s] << " already used exceed the " << cap
       << " bytes a kernel may use of " << SpaceName(space) << " of the " << ThreadName(c.thread)
       << (cap < Capacity(space) ? " (the rest is Ascend C's reserve)" : "");
    Fail("TPipe::InitBuffer", site, os.str());
  }
  Region *r = LocalRegion(c, space);
  if (r->cells.size() < c.used[s] + len) r->cells.resize(c.used[s] + len);
  LocalBuffer b;
  b.space = space;
  b.position = pos;
  b.host = r->host + c.used[s];
  b.bytes = len;
  b.address = c.used[s];
  b.thread = c.thread;
  b.initSite = site;
  static std::mutex namesMu;
  static std::set<std::string> names;  // stable storage for the names
  {
    std::lock_guard<std::mutex> lock(namesMu);
    b.name = names.insert(BufferNameAt(site, space)).first->c_str();
  }
  c.used[s] += len;
  c.buffers.push_back(b);
  return &c.buffers.back();
}

void FailUninitialised(const char *api, const Site &site) { Fail(api, site, "used before TPipe::InitBuffer"); }

// ---- TQue -----------------------------------------------------------------------------------------------
QueueState *NewQueue(TPosition pos, int32_t depth, const Site &site) {
  ThreadCtx &c = Ctx("TPipe::InitBuffer", site);
  QueueState q;
  q.pos = pos;
  q.depth = depth;
  q.site = site;
  // The pipe that fills a queue's buffers and the one that drains them, by the data flow of its
  // position ("TQue": VECIN, VECOUT, A1, A2, B1, B2, CO1, CO2; the C1 / C2 queues of "通过BT Buffer实现高效
  // 的bias计算"): EnQue/DeQue order producer -> consumer, FreeTensor/AllocTensor consumer -> producer. The
  // events are kernel_event.h's GetQueEvt of the queue's logic source and destination (GetBufferLogicPos:
  // C1 = GM -> C1, MTE2_MTE1; C2 = C1 -> C2, L1 -> BIAS, MTE1_M).
  switch (pos) {
    case TPosition::VECIN: q.producer = Pipe::kMTE2; q.consumer = Pipe::kV; break;     // GM -> UB -> V
    case TPosition::VECOUT: q.producer = Pipe::kV; q.consumer = Pipe::kMTE3; break;    // V -> UB -> GM
    case TPosition::A1:
    case TPosition::B1:
    case TPosition::C1: q.producer = Pipe::kMTE2; q.consumer = Pipe::kMTE1; break;     // GM -> L1 -> L0 / BT
    case TPosition::A2:
    case TPosition::B2: q.producer = Pipe::kMTE1; q.consumer = Pipe::kM; break;        // L1 -> L0A/B -> Mmad
    case TPosition::C2: q.producer = Pipe::kMTE1; q.consumer = Pipe::kM; break;        // L1 -> BT -> Mmad
    // L1 -> Fixpipe Buffer -> Fixpipe / DataCopy L0C -> GM: both on FIX.
    case TPosition::C2PIPE2GM: q.producer = Pipe::kFIX; q.consumer = Pipe::kFIX; break;
    case TPosition::CO1: q.producer = Pipe::kM; q.consumer = Pipe::kFIX; break;        // Mmad -> L0C -> Fixpipe
    default: {
      Space unused;
      Fail("TPipe::InitBuffer", site,
           "TQue: " + (SpaceOf(pos, &unused) ? std::string("a queue at TPosition ") + PositionName(pos) +
                                                   " is not modelled (VECIN, VECOUT, A1, A2, B1, B2, C1, C2, C2PIPE2GM, CO1 are)"
                                             : UnmodelledPosition(pos)));
    }
  }
  if (depth < 1) Fail("TPipe::InitBuffer", site, "queue depth must be at least 1");
  int buffers = 0;  // "TQue Buffer限制": at most 8 queue buffers per position (one event id each)
  for (const QueueState &other : c.queues) {
    buffers += other.pos == pos && !other.released ? static_cast<int>(other.slots.size()) : 0;
  }
  q.siblings = buffers;
  c.queues.push_back(std::move(q));
  return &c.queues.back();
}

void QueueInit(QueueState *q, uint8_t num, uint32_t len, const Site &site) {
  if (num == 0) Fail("TPipe::InitBuffer", site, "num is 0");
  if (q->siblings + num > 8) {
    Fail("TPipe::InitBuffer", site, "more than 8 TQue buffers at one TPosition (one event id each: the documented "
                                    "TQue buffer limit)");
  }
  MachineImpl &m = M();
  for (uint8_t i = 0; i < num; ++i) {
    QueueState::Slot slot;
    slot.buffer = AllocBuffer(q->pos, len, site);
    slot.freed.assign(m.agents, 0);
    slot.enqueued.assign(m.agents, 0);
    q->slots.push_back(std::move(slot));
  }
}

const LocalBuffer *QueueAlloc(QueueState *q, const Site &site) {
  ThreadCtx &c = Ctx("TQue::AllocTensor", site);
  CheckAbort();
  MachineImpl &m = M();
  for (auto &slot : q->slots) {
    if (slot.state != QueueState::Slot::kFree) continue;
    slot.state = QueueState::Slot::kAllocated;
    m.JoinInto(m.Agent(c.thread, q->producer), slot.freed);  // the auto WaitFlag of the free event
    EndInstruction(c);
    return slot.buffer;
  }
  Fail("TQue::AllocTensor", site, "hang: no free buffer in the queue (every buffer allocated and not freed)");
}

namespace {
QueueState::Slot *SlotOf(QueueState *q, const LocalBuffer *b, const char *api, const Site &site) {
  for (auto &slot : q->slots) {
    if (slot.buffer == b) return &slot;
  }
  Fail(api, site, "the tensor is not a buffer of this queue");
}
void Release(ThreadCtx &c, Pipe p, Clock *snapshot) {
  MachineImpl &m = M();
  const int a = m.Agent(c.thread, p);
  *snapshot = m.vc[a];
  ++m.vc[a][a];
  EndInstruction(c);
}
}  // namespace

void QueueEnQue(QueueState *q, const LocalBuffer *buffer, const Site &site) {
  ThreadCtx &c = Ctx("TQue::EnQue", site);
  CheckAbort();
  QueueState::Slot *slot = SlotOf(q, buffer, "TQue::EnQue", site);
  if (slot->state != QueueState::Slot::kAllocated) Fail("TQue::EnQue", site, "the tensor was not allocated by AllocTensor");
  if (static_cast<int32_t>(q->fifo.size()) >= q->depth) Fail("TQue::EnQue", site, "the queue is full");
  slot->state = QueueState::Slot::kQueued;
  Release(c, q->producer, &slot->enqueued);
  q->fifo.push_back(static_cast<int>(slot - q->slots.data()));
}

const LocalBuffer *QueueDeQue(QueueState *q, const Site &site) {
  ThreadCtx &c = Ctx("TQue::DeQue", site);
  CheckAbort();
  MachineImpl &m = M();
  if (q->fifo.empty()) Fail("TQue::DeQue", site, "hang: the queue is empty (no EnQue before this DeQue)");
  QueueState::Slot &slot = q->slots[q->fifo.front()];
  q->fifo.pop_front();
  slot.state = QueueState::Slot::kDequeued;
  m.JoinInto(m.Agent(c.thread, q->consumer), slot.enqueued);
  EndInstruction(c);
  return slot.buffer;
}

void QueueFree(QueueState *q, const LocalBuffer *buffer, const Site &site) {
  ThreadCtx &c = Ctx("TQue::FreeTensor", site);
  CheckAbort();
  QueueState::Slot *slot = SlotOf(q, buffer, "TQue::FreeTensor", site);
  // A tensor dequeued, or allocated and never enqueued (TQue/FreeTensor.md states no constraint; CANN's
  // sequential_block_sync example frees its workspace that way): either way the consumer -> producer event.
  if (slot->state != QueueState::Slot::kDequeued && slot->state != QueueState::Slot::kAllocated) {
    Fail("TQue::FreeTensor", site, "the tensor is not allocated (freed twice) or still in the queue");
  }
  slot->state = QueueState::Slot::kFree;
  Release(c, q->consumer, &slot->freed);
}

// ---- synchronisation inside a core ------------------------------------------------------------------------
namespace {

// Records the sync call site; true when the run drops it (strictness tests).
bool Skipped(const char *api, const Site &site) {
  MachineImpl &m = M();
  const std::string key = Where(site) + ":" + api;
  m.syncSites.insert(key);
  return !m.options.skipSyncSite.empty() && key == m.options.skipSyncSite;
}

EventPipes CheckedEvent(ThreadCtx &c, HardEvent event, int32_t id, const char *api, const Site &site) {
  const EventPipes e = PipesOf(event);
  if (e.name == nullptr) Fail(api, site, "unknown HardEvent");
  if (!PipeOnCore(e.src, c.aic()) || !PipeOnCore(e.dst, c.aic())) {
    Fail(api, site, std::string("HardEvent::") + e.name + " names a pipe the " + (c.aic() ? "AIC" : "AIV") +
                        " does not have");
  }
  if (id < 0 || id >= kEventIds) Fail(api, site, "event id " + std::to_string(id) + " outside EVENT_ID0..7");
  return e;
}

}  // namespace

void SetFlagOn(HardEvent event, int32_t id, const Site &site) {
  ThreadCtx &c = Ctx("SetFlag", site);
  CheckAbort();
  const EventPipes e = CheckedEvent(c, event, id, "SetFlag", site);
  if (Skipped("SetFlag", site)) return;
  FlagState &f = c.flags[static_cast<int>(event)][id];
  if (f.pending) {
    Fail("SetFlag", site, std::string("hang: SetFlag<HardEvent::") + e.name + ">(" + std::to_string(id) +
                              ") while the flag set at " + Where(f.site) +
                              " is still set (no WaitFlag between them: a set is lost, a later wait hangs)");
  }
  MachineImpl &m = M();
  if (f.waitAgent >= 0 && m.vc[m.Agent(c.thread, e.src)][f.waitAgent] < f.waitClock) {
    Fail("SetFlag", site, std::string("hang: SetFlag<HardEvent::") + e.name + ">(" + std::to_string(id) +
                              ") is not ordered after the WaitFlag at " + Where(f.waitSite) +
                              " that consumes the previous set: the set may execute first, while the flag is "
                              "still set, and be lost (use another event id, or order the wait before it)");
  }
  f.pending = true;
  f.site = site;
  Release(c, e.src, &f.snapshot);
}

void WaitFlagOn(HardEvent event, int32_t id, const Site &site) {
  ThreadCtx &c = Ctx("WaitFlag", site);
  CheckAbort();
  const EventPipes e = CheckedEvent(c, event, id, "WaitFlag", site);
  if (Skipped("WaitFlag", site)) return;
  FlagState &f = c.flags[static_cast<int>(event)][id];
  if (!f.pending) {
    Fail("WaitFlag", site, std::string("hang: WaitFlag<HardEvent::") + e.name + ">(" + std::to_string(id) +
                               ") with no SetFlag of that event id before it on this core: the " + PipeName(e.dst) +
                               " pipe would wait forever");
  }
  f.pending = false;
  MachineImpl &m = M();
  const int waiter = m.Agent(c.thread, e.dst);
  m.JoinInto(waiter, f.snapshot);
  f.waitAgent = waiter;
  f.waitClock = m.vc[waiter][waiter];
  f.waitSite = site;
  EndInstruction(c);
}

namespace {
void BarrierAllPipes(ThreadCtx &c);
}  // namespace

#include "runtime_pools.inc"

void Barrier(pipe_t pipe, const Site &site) {
  ThreadCtx &c = Ctx("PipeBarrier", site);
  CheckAbort();
  Pipe p;
  if (pipe == PIPE_ALL) {
    if (Skipped("PipeBarrier", site)) return;
    BarrierAllPipes(c);
  } else if (ToPipe(pipe, &p)) {
    if (!PipeOnCore(p, c.aic())) Fail("PipeBarrier", site, std::string("no pipe ") + PipeName(p) + " on this core");
    if (Skipped("PipeBarrier", site)) return;
    ++c.epoch[static_cast<int>(p)];
  } else {
    Fail("PipeBarrier", site, "pipe not modelled");
  }
  EndInstruction(c);
}

namespace {
uint8_t EventMask(ThreadCtx &c, HardEvent e) { return c.allocatedEvents[static_cast<int>(e)]; }
}  // namespace

AscendC::TEventID FetchEvent(HardEvent event, const Site &site) {
  ThreadCtx &c = Ctx("TPipe::FetchEventID", site);
  for (int id = 0; id < kEventIds; ++id) {
    if (!(EventMask(c, event) & (1u << id)) && !c.flags[static_cast<int>(event)][id].pending) return id;
  }
  Fail("TPipe::FetchEventID", site, "no free event id");
}

AscendC::TEventID AllocEvent(HardEvent event, const Site &site) {
  ThreadCtx &c = Ctx("TPipe::AllocEventID", site);
  for (int id = 0; id < kEventIds; ++id) {
    if (!(EventMask(c, event) & (1u << id))) {
      c.allocatedEvents[static_cast<int>(event)] |= static_cast<uint8_t>(1u << id);
      return id;
    }
  }
  Fail("TPipe::AllocEventID", site, "all 8 event ids of this HardEvent are allocated");
}

void ReleaseEvent(HardEvent event, AscendC::TEventID id, const Site &site) {
  ThreadCtx &c = Ctx("TPipe::ReleaseEventID", site);
  if (id < 0 || id >= kEventIds || !(EventMask(c, event) & (1u << id))) {
    Fail("TPipe::ReleaseEventID", site, "the event id was not allocated");
  }
  c.allocatedEvents[static_cast<int>(event)] &= static_cast<uint8_t>(~(1u << id));
}

// ---- cross-core flags, SyncAll and scheduling --------------------------------------------------------------
namespace {

// Hands the turn to the next thread that can run (round robin after `self`), or reports the
// deadlock when every live thread is blocked. Called with the lock held.
void HandOver(MachineImpl &m, int self) {
  for (int k = 1; k <= m.threads; ++k) {
    const int t = m.options.reverseTurns ? (self - k + 2 * m.threads) % m.threads : (self + k) % m.threads;
    ThreadCtx &o = m.ctx[t];
    if (o.state == ThreadCtx::kDone) continue;
    if (o.state == ThreadCtx::kBlocked && !m.aborted && o.waitQueue->sets.empty()) continue;
    m.running = t;
    m.cv.notify_all();
    return;
  }
  m.running = -1;  // nobody can run
  m.cv.notify_all();
}

std::string DeadlockMessage(MachineImpl &m) {
  std::ostringstream os;
  os << "hang: every live core waits on a cross-core flag that no one will set:";
  for (const ThreadCtx &o : m.ctx) {
    if (o.state == ThreadCtx::kBlocked) {
      os << " " << ThreadName(o.thread) << " in " << o.waitWhat << " at " << Where(o.waitSite) << ";";
    }
  }
  return os.str();
}

void Push(MachineImpl &, CrossQueue &q, Clock clock, const Site &site, const std::string &who) {
  if (static_cast<int>(q.sets.size()) >= kCrossCounterMax) {
    Stop("CrossCoreSetFlag at " + Where(site) + ": the flag counter of " + who + " would exceed 15");
  }
  q.sets.emplace_back(std::move(clock), site);
}

// A set of `self` in a group that counts once all members have set: when every member holds a set,
// one of each is consumed and their joined clock counts once on each target's queue.
void Arrive(MachineImpl &m, GroupSets &g, int self, Clock clock, const Site &site,
            const std::function<CrossQueue &(int)> &queueOf) {
  auto &mine = g.pending[self];
  if (static_cast<int>(mine.size()) >= kCrossCounterMax) {
    Stop("CrossCoreSetFlag at " + Where(site) + ": the pending sets of " + ThreadName(self) + " would exceed 15");
  }
  mine.emplace_back(std::move(clock), site);
  for (;;) {
    for (int t : g.members) {
      if (g.pending[t].empty()) return;
    }
    Clock joined(m.agents, 0);
    for (int t : g.members) {
      Join(&joined, g.pending[t].front().first);
      g.pending[t].pop_front();
    }
    for (int t : g.targets) Push(m, queueOf(t), joined, site, ThreadName(t));
  }
}

// The threads of one core type in the launch.
std::vector<int> ThreadsOf(MachineImpl &m, bool aic) {
  std::vector<int> out;
  for (const ThreadCtx &o : m.ctx) {
    if (o.aic() == aic) out.push_back(o.thread);
  }
  return out;
}

// Blocks the calling thread until `q` holds a set, then consumes it: every pipe of the thread is
// ordered after it (on Atlas A2/A3 a wait blocks every later instruction of the core).
void WaitOn(ThreadCtx &c, CrossQueue &q, const std::string &what, const Site &site) {
  MachineImpl &m = M();
  if (q.sets.empty()) {
    std::unique_lock<std::mutex> lock(m.mu, std::adopt_lock);
    c.state = ThreadCtx::kBlocked;
    c.waitQueue = &q;
    c.waitWhat = what;
    c.waitSite = site;
    HandOver(m, c.thread);
    if (m.running == -1 && !m.aborted) {
      const std::string message = DeadlockMessage(m);
      c.state = ThreadCtx::kReady;
      lock.release();
      Stop(message);
    }
    m.cv.wait(lock, [&] { return m.running == c.thread; });
    lock.release();
    c.state = ThreadCtx::kReady;
    CheckAbort();
  }
  Clock snap = std::move(q.sets.front().first);
  q.sets.pop_front();
  for (int i = 0; i < kPipes; ++i) m.JoinInto(m.Agent(c.thread, static_cast<Pipe>(i)), snap);
  EndInstruction(c);
}

// PipeBarrier<PIPE_ALL>: every pipe of the thread after all of its earlier instructions.
void BarrierAllPipes(ThreadCtx &c) {
  MachineImpl &m = M();
  Clock all(m.agents, 0);
  for (int i = 0; i < kPipes; ++i) Join(&all, m.vc[m.Agent(c.thread, static_cast<Pipe>(i))]);
  for (int i = 0; i < kPipes; ++i) {
    const int a = m.Agent(c.thread, static_cast<Pipe>(i));
    m.selfDone[a] = all[a];
    m.vc[a] = all;
    ++m.vc[a][a];
    ++c.epoch[i];
  }
  EndInstruction(c);
}

bool KernelWithoutScheduler(const ThreadCtx &c) {
  return c.kernelType == KERNEL_TYPE_AIV_ONLY || c.kernelType == KERNEL_TYPE_AIC_ONLY;
}

// A set of cross-core flag `flag` in `mode` by the calling thread, carrying `snap`.
void CrossSet(ThreadCtx &c, uint8_t mode, uint16_t flag, Clock snap, const Site &site) {
  MachineImpl &m = M();
  ++m.counters[c.core].crossCoreSets;
  auto counter = [&m, flag](int t) -> CrossQueue & { return m.cross[t][flag]; };
  if (mode == 0) {  // all cores of the caller's type
    GroupSets &g = m.groups[std::make_tuple(0, c.aic() ? 1 : 0, static_cast<int>(flag))];
    if (g.members.empty()) g.members = g.targets = ThreadsOf(m, c.aic());
    Arrive(m, g, c.thread, std::move(snap), site, counter);
  } else if (mode == 1) {  // the two AIVs of the caller's AI core
    GroupSets &g = m.groups[std::make_tuple(1, c.core, static_cast<int>(flag))];
    if (g.members.empty()) g.members = g.targets = {c.core * 3 + 1, c.core * 3 + 2};
    Arrive(m, g, c.thread, std::move(snap), site, counter);
  } else if (c.aic()) {  // mode 2, AIC -> each of its AIVs
    for (int sub = 0; sub < 2; ++sub) {
      Push(m, m.cross[c.core * 3 + 1 + sub][flag], snap, site, ThreadName(c.core * 3 + 1 + sub));
    }
  } else {  // mode 2, both AIVs -> their AIC
    GroupSets &g = m.groups[std::make_tuple(2, c.core, static_cast<int>(flag))];
    if (g.members.empty()) {
      g.members = {c.core * 3 + 1, c.core * 3 + 2};
      g.targets = {c.core * 3};
    }
    Arrive(m, g, c.thread, std::move(snap), site, counter);
  }
}

}  // namespace

void CrossCoreSet(uint8_t mode, pipe_t pipe, uint16_t flagId, const Site &site) {
  ThreadCtx &c = Ctx("CrossCoreSetFlag", site);
  CheckAbort();
  Pipe p;
  if (!ToPipe(pipe, &p) || !PipeOnCore(p, c.aic())) Fail("CrossCoreSetFlag", site, "pipe not on this core");
  if (flagId >= kCrossFlags) Fail("CrossCoreSetFlag", site, "flagId outside 0-15");
  if (KernelWithoutScheduler(c)) {
    Fail("CrossCoreSetFlag", site, "a KERNEL_TYPE_AIV_ONLY / AIC_ONLY kernel has no cross-core synchronisation (the "
                                   "hardware does not start its scheduler): declare KERNEL_TYPE_MIX_AIV_1_0 / "
                                   "MIX_AIC_1_0 (__mix__(0, 1) / __mix__(1, 0))");
  }
  if (mode != 0 && M().options.mode != LaunchMode::kMix) {
    Fail("CrossCoreSetFlag", site, "mode " + std::to_string(mode) + " synchronises inside an AI core of 1 AIC + 2 AIV: "
                                   "it needs a MIX_MODE launch");
  }
  if (mode == 1 && c.aic()) {
    Fail("CrossCoreSetFlag", site, "mode 1 synchronises the two AIVs of an AI core; the AIC takes no part");
  }
  if (Skipped("CrossCoreSetFlag", site)) return;
  Clock snap;
  Release(c, p, &snap);
  CrossSet(c, mode, flagId, std::move(snap), site);
}

void CrossCoreWait(uint8_t mode, pipe_t pipe, uint16_t flagId, const Site &site) {
  ThreadCtx &c = Ctx("CrossCoreWaitFlag", site);
  CheckAbort();
  (void)mode;  // A2/A3: modeId and pipe have no effect on the wait; it blocks every later instruction
  (void)pipe;
  if (flagId >= kCrossFlags) Fail("CrossCoreWaitFlag", site, "flagId outside 0-15");
  if (KernelWithoutScheduler(c)) {
    Fail("CrossCoreWaitFlag", site, "a KERNEL_TYPE_AIV_ONLY / AIC_ONLY kernel has no cross-core synchronisation");
  }
  if (Skipped("CrossCoreWaitFlag", site)) return;
  WaitOn(c, M().cross[c.thread][flagId], "CrossCoreWaitFlag(" + std::to_string(flagId) + ")", site);
}

// SyncAll, hard ("SyncAll"): after PipeBarrier<PIPE_ALL>, cross-core flags 11-14 as documented.
void SyncAllHard(bool aivOnly, const Site &site) {
  ThreadCtx &c = Ctx("SyncAll", site);
  CheckAbort();
  MachineImpl &m = M();
  if (KernelWithoutScheduler(c)) {
    Fail("SyncAll", site, "the hard SyncAll needs cross-core synchronisation, which a KERNEL_TYPE_AIV_ONLY / "
                          "AIC_ONLY kernel has not: a vector-only kernel is __mix__(0, 1) (KERNEL_TYPE_MIX_AIV_1_0)");
  }
  if (aivOnly && c.aic()) {
    Fail("SyncAll", site, "SyncAll<true> (isAIVOnly) on an AIC: it synchronises the AIVs only; a kernel with AICs "
                          "calls SyncAll<false>");
  }
  if (!aivOnly && m.options.mode != LaunchMode::kMix) {
    Fail("SyncAll", site, "hang: SyncAll<false> synchronises AICs with their AIVs; this launch has only " +
                              std::string(c.aic() ? "AICs" : "AIVs") + " (a vector-only kernel calls SyncAll<true>)");
  }
  if (Skipped("SyncAll", site)) return;
  constexpr uint16_t kAicFlag = 11, kAivFlag = 12, kAicAivFlag = 13, kAivOnlyAll = 14;
  Clock snap;
  BarrierAllPipes(c);
  if (aivOnly) {  // all AIVs (mode 0)
    Release(c, Pipe::kS, &snap);
    CrossSet(c, 0, kAivOnlyAll, std::move(snap), site);
    WaitOn(c, m.cross[c.thread][kAivOnlyAll], "SyncAll<true> (cross-core flag 14)", site);
  } else if (!c.aic()) {  // AIVs -> their AIC (mode 2), then wait for the AIC's release
    Release(c, Pipe::kS, &snap);
    CrossSet(c, 2, kAivFlag, std::move(snap), site);
    WaitOn(c, m.cross[c.thread][kAicAivFlag], "SyncAll<false> (cross-core flag 13)", site);
  } else {  // the AIC: its AIVs, then all AICs (mode 0), then release its AIVs (mode 2)
    WaitOn(c, m.cross[c.thread][kAivFlag], "SyncAll<false> (cross-core flag 12)", site);
    BarrierAllPipes(c);
    Release(c, Pipe::kS, &snap);
    CrossSet(c, 0, kAicFlag, std::move(snap), site);
    WaitOn(c, m.cross[c.thread][kAicFlag], "SyncAll<false> (cross-core flag 11)", site);
    BarrierAllPipes(c);
    Release(c, Pipe::kS, &snap);
    CrossSet(c, 2, kAicAivFlag, std::move(snap), site);
  }
}

// SyncAll, soft ("SyncAll", vector-only kernels): each AIV of the first usedCores blocks adds 1 to its
// 32-byte slot of gmWorkspace and waits until every participant's slot has reached its own count.
void SyncAllSoft(bool aivOnly, const void *gm, const Span &gmSpan, const Span &ubSpan, TPosition ubPos,
                 int32_t usedCores, const Site &site) {
  ThreadCtx &c = Ctx("SyncAll", site);
  CheckAbort();
  MachineImpl &m = M();
  const char *api = "SyncAll(gmWorkspace, ubWorkspace)";
  if (!aivOnly) Fail(api, site, "the soft SyncAll has no isAIVOnly = false (MIX) form");
  if (m.options.mode != LaunchMode::kAiv) {
    Fail(api, site, "the soft SyncAll is modelled for vector-only launches (AIV_MODE), where block i is AIV i");
  }
  const int64_t blocks = m.options.cores;
  if (usedCores < 0 || usedCores > blocks) {
    Fail(api, site, "usedCores = " + std::to_string(usedCores) + " outside [0, GetBlockNum() = " +
                        std::to_string(blocks) + "]");
  }
  const int n = usedCores == 0 ? static_cast<int>(blocks) : usedCores;
  if (c.core >= n) {
    Fail(api, site, "block " + std::to_string(c.core) + " is not among the usedCores = " + std::to_string(n));
  }
  if (ubPos != TPosition::VECIN && ubPos != TPosition::VECCALC && ubPos != TPosition::VECOUT) {
    Fail(api, site, "ubWorkspace must be a VECIN, VECCALC or VECOUT tensor");
  }
  const uint64_t need = static_cast<uint64_t>(blocks) * 32;
  if (gmSpan.space != Space::kGM || gmSpan.bytes < need) {
    Fail(api, site, "gmWorkspace must hold GetBlockNum() * 32 = " + std::to_string(need) + " bytes; it has " +
                        std::to_string(gmSpan.bytes));
  }
  if (ubSpan.space != Space::kUB || ubSpan.bytes < need) {
    Fail(api, site, "ubWorkspace must hold GetBlockNum() * 32 = " + std::to_string(need) + " bytes; it has " +
                        std::to_string(ubSpan.bytes));
  }
  Region *r = m.RegionOf(gmSpan.host);
  if (r == nullptr || r->kind != GmKind::kReadWrite || gmSpan.host + need > r->host + r->bytes) {
    Fail(api, site, "gmWorkspace must be writable GM");
  }
  if (Skipped("SyncAll", site)) return;
  BarrierAllPipes(c);
  const uintptr_t key = reinterpret_cast<uintptr_t>(gm);
  int32_t &rounds = c.softSyncRounds[key];
  uint8_t *slot = gmSpan.host + static_cast<uint64_t>(c.core) * 32;
  int32_t v;
  std::memcpy(&v, slot, sizeof(v));
  if (v != rounds) {
    Fail(api, site, "the gmWorkspace slot of block " + std::to_string(c.core) + " holds " + std::to_string(v) +
                        " after " + std::to_string(rounds) + " SyncAll rounds: the workspace must be zeroed "
                        "before the launch and written by SyncAll only");
  }
  ++v;
  std::memcpy(slot, &v, sizeof(v));
  // The core's scalar unit fills ubWorkspace with the slots it polls (its later use needs S -> V).
  uint8_t *ub = Touch(ubSpan, 0, need, Pipe::kS, Access::kWrite, "SyncAll (soft)", site);
  std::memcpy(ub, gmSpan.host, need);
  EndInstruction(c);
  Clock snap;
  Release(c, Pipe::kS, &snap);
  GroupSets &g = m.softGroups[key];
  if (g.members.empty()) {
    for (int t = 0; t < n; ++t) g.members.push_back(t);
    g.targets = g.members;
  } else if (static_cast<int>(g.members.size()) != n) {
    Fail(api, site, "usedCores differs between the blocks of one SyncAll");
  }
  ++m.counters[c.core].crossCoreSets;
  Arrive(m, g, c.thread, std::move(snap), site,
         [&m, key](int t) -> CrossQueue & { return m.softSync[std::make_pair(t, key)]; });
  WaitOn(c, m.softSync[std::make_pair(c.thread, key)], "SyncAll (soft)", site);
  ++rounds;
}

int64_t BlockIdx() {
  // MIX 1:2: on the AIC the AI core index; on an AIV core * 2 + sub-block. One core type: the block.
  ThreadCtx &c = Ctx("GetBlockIdx", Site());
  if (M().options.mode != LaunchMode::kMix) return c.core;
  return c.aic() ? c.core : c.core * 2 + c.sub();
}
int64_t BlockNum() {
  Ctx("GetBlockNum", Site());
  return M().options.cores;  // the launch's numBlocks in every mode
}
int64_t SubBlockIdx() {
  ThreadCtx &c = Ctx("GetSubBlockIdx", Site());
  return c.sub();
}
int64_t SubBlockNum() {
  ThreadCtx &c = Ctx("GetSubBlockNum", Site());
  return M().options.mode == LaunchMode::kMix && !c.aic() ? 2 : 1;
}
int64_t TaskRatio() {
  ThreadCtx &c = Ctx("GetTaskRatio", Site());
  return M().options.mode == LaunchMode::kMix && !c.aic() ? 2 : 1;
}

GM_ADDR UserWorkspace(GM_ADDR workspace, const Site &site) {
  Ctx("GetUserWorkspace", site);
  if (workspace == nullptr) Fail("GetUserWorkspace", site, "workspace is nullptr");
  return workspace + kSystemWorkspace;
}

#include "runtime_block_sync.inc"

// ---- global memory, launches: the machine behind tikicpulib.h ---------------------------------------------
namespace {

// A GmAlloc'd block, or a part of one the driver described (DescribeGm): one allocation of the model.
struct GmEntry {
  uint64_t bytes;
  std::string name;
  GmKind kind;
  uintptr_t block;  // the GmAlloc'd block it belongs to
};

struct GmRegistry {
  std::mutex mu;
  std::map<uintptr_t, GmEntry> entries;       // by start address
  std::map<uintptr_t, uint64_t> blocks;       // GmAlloc'd blocks: start -> bytes
  int next = 0;
  LaunchMode mode = LaunchMode::kMix;         // SetKernelMode
  bool tilingKeySet = false;                  // ICPU_SET_TILING_KEY
  CpuDebugOptions options;
  RunResult last;
};

GmRegistry &Registry() {
  static GmRegistry *r = new GmRegistry();  // never destroyed (GmFree may run at exit)
  return *r;
}

// The registry entry holding [p, p + bytes), or nullptr.
const GmEntry *EntryOf(GmRegistry &g, const void *p, uintptr_t *start) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  auto it = g.entries.upper_bound(a);
  if (it == g.entries.begin()) return nullptr;
  --it;
  if (a >= it->first + it->second.bytes) return nullptr;
  if (start != nullptr) *start = it->first;
  return &it->second;
}

[[noreturn]] void HostError(const std::string &message) { throw std::invalid_argument(message); }

}  // namespace

void Machine::DescribeGm(uint8_t *host, uint64_t bytes, const char *name, GmKind kind) {
  GmRegistry &g = Registry();
  std::lock_guard<std::mutex> lock(g.mu);
  uintptr_t start = 0;
  const GmEntry *e = EntryOf(g, host, &start);
  if (e == nullptr || bytes == 0 || reinterpret_cast<uintptr_t>(host) + bytes > start + e->bytes) {
    HostError(std::string("DescribeGm(") + name + "): not a range inside one GmAlloc'd block");
  }
  const GmEntry whole = *e;
  const uintptr_t a = reinterpret_cast<uintptr_t>(host), end = a + bytes, wholeEnd = start + whole.bytes;
  g.entries.erase(start);
  if (a > start) g.entries[start] = GmEntry{a - start, whole.name, whole.kind, whole.block};
  g.entries[a] = GmEntry{bytes, name, kind, whole.block};
  if (end < wholeEnd) g.entries[end] = GmEntry{wholeEnd - end, whole.name, whole.kind, whole.block};
}

uint64_t Machine::FirstUnwritten(const uint8_t *host, uint64_t bytes) {
  MachineImpl &m = M();
  Region *r = m.RegionOf(host);
  if (r == nullptr || r->cells.empty()) return 0;
  const uint64_t first = static_cast<uint64_t>(host - r->host);
  for (uint64_t i = 0; i < bytes && first + i < r->bytes; ++i) {
    if (r->cells[first + i].w == 0) return i;
  }
  return bytes;
}

CpuDebugOptions &DebugOptions() { return Registry().options; }
const RunResult &LastRun() { return Registry().last; }

void SetTilingKey(int64_t key) {
  GmRegistry &g = Registry();
  if (key < 0) HostError("ICPU_SET_TILING_KEY(" + std::to_string(key) + "): a negative tiling key is undefined");
  if (key == 0) std::fprintf(stderr, "ascend_model: warning: ICPU_SET_TILING_KEY(0): the kernel runs the branch of key 0\n");
  g_tilingKey = static_cast<uint64_t>(key);
  g.tilingKeySet = true;
}

void IcpuRun(const char *kernel, int64_t numBlocks, const std::function<void()> &entry,
             const std::vector<const void *> &args) {
  GmRegistry &g = Registry();
  LaunchOptions options;
  RunResult result;
  {
    std::lock_guard<std::mutex> lock(g.mu);
    options.mode = g.mode;
    options.skipSyncSite = g.options.skipSyncSite;
    const char *skip = std::getenv("ASCEND_MODEL_SKIP_SYNC_SITE");  // test knob (strictness tests)
    if (options.skipSyncSite.empty() && skip != nullptr) options.skipSyncSite = skip;
    const char *turns = std::getenv("ASCEND_MODEL_TURNS");
    options.reverseTurns = turns != nullptr && std::strcmp(turns, "reverse") == 0;
    if (numBlocks < 1 || numBlocks > kMaxBlocks) {
      result.ok = false;
      result.error = "numBlocks = " + std::to_string(numBlocks) + " outside the model's [1, " +
                     std::to_string(kMaxBlocks) + "]";
    }
    for (size_t i = 0; i < args.size() && result.ok; ++i) {
      if (args[i] != nullptr && EntryOf(g, args[i], nullptr) == nullptr) {
        result.ok = false;
        result.error = "argument " + std::to_string(i + 1) + " is not a pointer into a GmAlloc'd block (ICPU_RUN_KF "
                       "takes GmAlloc'd memory only)";
      }
    }
    options.cores = static_cast<uint32_t>(numBlocks);
  }
  if (result.ok) result = Machine::Run(options, entry);
  if (const char *out = std::getenv("ASCEND_MODEL_SYNC_SITES_OUT")) {  // test knob: the sync sites run
    std::ofstream f(out);
    for (const std::string &site : result.syncSites) f << site << "\n";
  }
  if (const char *out = std::getenv("ASCEND_MODEL_COUNTS_OUT")) {  // test knob: per-core counters, "core name value"
    std::ofstream f(out);
    for (size_t c = 0; c < result.counters.size(); ++c) {
      const CoreCounters &k = result.counters[c];
      const std::pair<const char *, uint64_t> named[] = {
          {"mte1Bytes", k.mte1Bytes},   {"mte2Bytes", k.mte2Bytes},     {"mte3Bytes", k.mte3Bytes},
          {"fixBytes", k.fixBytes},     {"fixGmBytes", k.fixGmBytes},   {"fixL1Bytes", k.fixL1Bytes},
          {"fixL1ReadBytes", k.fixL1ReadBytes}, {"mte3L1Bytes", k.mte3L1Bytes}};
      for (const auto &n : named) f << c << " " << n.first << " " << n.second << "\n";
    }
  }
  bool exitOnFailure;
  {
    std::lock_guard<std::mutex> lock(g.mu);
    g.last = result;
    exitOnFailure = g.options.exitOnFailure;
  }
  if (!result.ok && exitOnFailure) {
    std::fprintf(stderr, "ICPU_RUN_KF(%s): %s\n", kernel, result.error.c_str());
    std::fflush(stderr);
    std::exit(1);
  }
}

RunResult Machine::Run(const LaunchOptions &options, const std::function<void()> &entry) {
  static std::mutex runMu;  // one run at a time
  std::lock_guard<std::mutex> runLock(runMu);
  MachineImpl &m = M();
  m.Reset();
  m.options = options;
  // Global memory: every live GmAlloc'd allocation, with a fresh shadow (the host orders launches).
  {
    GmRegistry &g = Registry();
    std::lock_guard<std::mutex> lock(g.mu);
    m.tilingKeySet = g.tilingKeySet;
    for (const auto &[start, e] : g.entries) {
      auto a = std::make_unique<GmAllocation>();
      a->host = reinterpret_cast<uint8_t *>(start);
      a->bytes = e.bytes;
      m.gmNames.push_back(std::make_unique<std::string>(e.name));
      a->name = m.gmNames.back()->c_str();
      Region *r = m.AddRegion(a->host, e.bytes, Space::kGM, e.name, e.kind, -1);
      if (e.kind == GmKind::kReadWrite) r->cells.resize(e.bytes);
      m.gm.push_back(std::move(a));
    }
  }
  m.perCore = options.mode == LaunchMode::kMix ? 3 : 1;
  m.threads = static_cast<int>(options.cores) * m.perCore;
  m.agents = m.threads * kPipes;
  m.ctx.assign(m.threads, ThreadCtx());
  m.vc.assign(m.agents, Clock(m.agents, 0));
  m.selfDone.assign(m.agents, 0);
  for (int a = 0; a < m.agents; ++a) m.vc[a][a] = 1;
  m.counters.assign(options.cores, CoreCounters());
  m.cross.assign(m.threads, {});
  for (int t = 0; t < m.threads; ++t) {
    ThreadCtx &c = m.ctx[t];
    c.thread = t;
    c.core = t / m.perCore;
    c.role = options.mode == LaunchMode::kMix ? t % 3 : options.mode == LaunchMode::kAiv ? 1 : 0;
    for (auto &row : c.flags) {
      for (auto &f : row) f.snapshot.assign(m.agents, 0);
    }
  }
  auto fail = [&m](const std::string &message) {
    if (m.error.empty()) m.error = message;
    m.aborted = true;
  };
  std::vector<std::thread> pool;
  pool.reserve(m.threads);
  std::unique_lock<std::mutex> lock(m.mu);
  for (int t = 0; t < m.threads; ++t) {
    pool.emplace_back([&m, &entry, &fail, t] {
      std::unique_lock<std::mutex> l(m.mu);
      m.cv.wait(l, [&] { return m.running == t; });
      ThreadCtx &c = m.ctx[t];
      tls = &c;
      g_coreType = c.aic() ? AscendC::AIC : AscendC::AIV;
      // CANN's CPU-debug system variables (runtime_api.h): the raw core index, not GetBlockIdx().
      block_idx = c.core;
      block_num = static_cast<int64_t>(m.options.cores);
      sub_block_idx = c.sub();
      g_taskRation = m.options.mode == LaunchMode::kMix ? 2 : 1;
      if (!m.aborted) {
        l.release();  // the turn is ours; the lock stays held by this thread while it runs
        try {
          entry();
          // A kernel ends with every flag of the core consumed.
          for (int e = 0; e < static_cast<int>(HardEvent::MAX); ++e) {
            for (int id = 0; id < kEventIds; ++id) {
              if (c.flags[e][id].pending) {
                Stop(std::string("flag still set when the kernel ends: SetFlag<HardEvent::") +
                     PipesOf(static_cast<HardEvent>(e)).name + ">(" + std::to_string(id) + ") at " +
                     Where(c.flags[e][id].site) + " on the " + ThreadName(t) + " was never waited");
              }
            }
          }
        } catch (const Failure &f) {
          fail(f.what());
        } catch (const Abort &) {
        } catch (const std::exception &ex) {
          fail(std::string("unexpected C++ exception in the kernel: ") + ex.what());
        }
        l = std::unique_lock<std::mutex>(m.mu, std::adopt_lock);
      }
      tls = nullptr;
      g_coreType = AscendC::MIX;
      block_idx = block_num = sub_block_idx = 0;
      g_taskRation = 1;
      c.state = ThreadCtx::kDone;
      HandOver(m, t);
      if (m.running == -1) {
        bool blocked = false;
        for (const ThreadCtx &o : m.ctx) blocked = blocked || o.state == ThreadCtx::kBlocked;
        if (blocked && !m.aborted) {
          fail(DeadlockMessage(m));
          for (ThreadCtx &o : m.ctx) {
            if (o.state == ThreadCtx::kBlocked) {
              m.running = o.thread;  // wake it to unwind (it sees `aborted`)
              break;
            }
          }
          m.cv.notify_all();
        }
      }
    });
  }
  m.running = options.reverseTurns ? m.threads - 1 : 0;
  m.cv.notify_all();
  lock.unlock();
  for (auto &th : pool) th.join();
  // Every cross-core set must have been waited, and every group set matched by its partners.
  if (!m.aborted) {
    for (int t = 0; t < m.threads && m.error.empty(); ++t) {
      for (int f = 0; f < kCrossFlags; ++f) {
        const auto &q = m.cross[t][f];
        if (!q.sets.empty()) {
          m.error = "flag still set when the kernel ends: cross-core flag " + std::to_string(f) + " of the " +
                    ThreadName(t) + " holds " + std::to_string(q.sets.size()) + " set(s), the first from " +
                    Where(q.sets.front().second);
          break;
        }
      }
    }
    for (const auto &[key, g] : m.groups) {
      for (const auto &[t, sets] : g.pending) {
        if (!sets.empty() && m.error.empty()) {
          m.error = "flag still set when the kernel ends: the " + ThreadName(t) + " set cross-core flag " +
                    std::to_string(std::get<2>(key)) + " (mode " + std::to_string(std::get<0>(key)) + ") at " +
                    Where(sets.front().second) + " and not every partner core did";
        }
      }
    }
  }
  if (!m.aborted && m.error.empty()) m.error = BlockSyncLeftover(m);
  RunResult result;
  result.ok = m.error.empty();
  result.error = m.error;
  result.counters = m.counters;
  result.syncSites.assign(m.syncSites.begin(), m.syncSites.end());
  m.runDone = true;  // the shadow stays for FirstUnwritten until the next Run
  return result;
}

}  // namespace ascend_model

// ---- CANN's CPU twin-debug interface (tikicpulib.h) ------------------------------------------------------
namespace AscendC {

void *GmAlloc(size_t size) {
  using namespace ascend_model;
  if (size == 0) HostError("GmAlloc(0): nothing to allocate");
  // Page-aligned and zeroed, as a fresh shared mapping is.
  const size_t bytes = (size + 4095) / 4096 * 4096;
  void *p = std::aligned_alloc(4096, bytes);
  if (p == nullptr) HostError("GmAlloc(" + std::to_string(size) + "): out of memory");
  std::memset(p, 0, bytes);
  GmRegistry &g = Registry();
  std::lock_guard<std::mutex> lock(g.mu);
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  g.blocks[a] = size;
  g.entries[a] = GmEntry{size, "GM:GmAlloc #" + std::to_string(g.next++), GmKind::kReadWrite, a};
  return p;
}

void GmFree(void *ptr) {
  using namespace ascend_model;
  GmRegistry &g = Registry();
  {
    std::lock_guard<std::mutex> lock(g.mu);
    const uintptr_t a = reinterpret_cast<uintptr_t>(ptr);
    if (g.blocks.erase(a) == 0) HostError("GmFree: the pointer was not returned by GmAlloc (or was freed already)");
    for (auto it = g.entries.begin(); it != g.entries.end();) {
      it = it->second.block == a ? g.entries.erase(it) : std::next(it);
    }
  }
  std::free(ptr);
}

void SetKernelMode(KernelMode mode) {
  using namespace ascend_model;
  GmRegistry &g = Registry();
  std::lock_guard<std::mutex> lock(g.mu);
  switch (mode) {
    case KernelMode::MIX_MODE: g.mode = LaunchMode::kMix; break;
    case KernelMode::AIC_MODE: g.mode = LaunchMode::kAic; break;
    case KernelMode::AIV_MODE: g.mode = LaunchMode::kAiv; break;
    default: HostError("SetKernelMode: not a KernelMode");
  }
}

}  // namespace AscendC
