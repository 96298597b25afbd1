// The modelled machine behind the AscendC API of this folder.
//
// Execution. Every AI core is three host threads: its Cube core (AIC) and its two Vector cores (AIV,
// sub-blocks 0 and 1). The threads take turns under one lock and hand over only when they block on a
// cross-core flag or finish, so a run is deterministic; hazards do not depend on that order anyway:
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
//   * TQue auto-sync: VECIN EnQue/DeQue = MTE2 -> V, FreeTensor/AllocTensor = V -> MTE2; VECOUT
//     EnQue/DeQue = V -> MTE3, FreeTensor/AllocTensor = MTE3 -> V;
//   * CrossCoreSetFlag<2, pipe> (after the pipe's earlier instructions) / CrossCoreWaitFlag, which on
//     Atlas A2/A3 blocks the issue of all later instructions of the waiting core. Mode 2: an AIC set
//     counts once on each of its two AIVs; the AIC's counter counts once both AIVs have set. Counters
//     hold 0-15.
// Scalar accesses (GetValue/SetValue) are on PIPE_S: ordering them against a pipe needs S_V, V_S, ...
//
// Shadow memory. Every byte of every local buffer and of every writable GM allocation records its
// last write and the reads since (which instruction, agent, clock). An access that is not ordered
// after a conflicting one (RAW, WAR, WAW) of another agent stops the run with a message naming the
// buffer, both calls (file:line) and the synchronisation that would order them.
#include <algorithm>
#include <array>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

#include "runtime_api.h"  // first: it exports the model's declarations (model_hooks.h too)
#include "machine.h"

namespace ascend_model {
namespace {

using AscendC::HardEvent;
using AscendC::TPosition;

constexpr int kPipes = 7;                 // Pipe: S, V, M, MTE1, MTE2, MTE3, FIX
constexpr int kThreadsPerCore = 3;        // AIC, AIV0, AIV1
constexpr int kEventIds = 8;              // EVENT_ID0..7 per HardEvent
constexpr int kCrossFlags = 16;           // flag ids 0-15 (modes 0, 1, 2)
constexpr int kCrossCounterMax = 15;      // a counter holds 0-15
constexpr uint32_t kUbBlock = 32;         // UB / L1 allocation granule
constexpr uint64_t kSystemWorkspace = 16ull * 1024 * 1024;  // RESERVED_WORKSPACE on Atlas A2/A3

// Capacities of one AI core (Atlas A2/A3): UB per Vector core, L1/L0 per Cube core.
uint32_t Capacity(Space s) {
  switch (s) {
    case Space::kUB: return 192 * 1024;
    case Space::kL1: return 512 * 1024;
    case Space::kL0A: return 64 * 1024;
    case Space::kL0B: return 64 * 1024;
    case Space::kL0C: return 128 * 1024;
    default: return 0;
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
    case Pipe::kV:
    case Pipe::kMTE3: return !aic;
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
    case Space::kL1: return (p == Pipe::kMTE2 && !rd) || (p == Pipe::kMTE1 && rd) || (p == Pipe::kFIX && !rd);
    case Space::kL0A:
    case Space::kL0B: return (p == Pipe::kMTE1 && !rd) || (p == Pipe::kMTE2 && !rd) || (p == Pipe::kM && rd);
    case Space::kL0C: return p == Pipe::kM || (p == Pipe::kFIX && rd);
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
};

namespace {

struct ThreadCtx {
  int thread = 0, core = 0, role = 0;  // role 0 = AIC, 1/2 = AIV sub-block 0/1
  bool aic() const { return role == 0; }
  Region *local[6] = {nullptr};  // by Space
  uint32_t used[6] = {0};
  std::deque<LocalBuffer> buffers;
  std::deque<QueueState> queues;
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
  int waitFlag = -1;
  Site waitSite;
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
  std::vector<CoreCounters> counters;
  // Cross-core counters: [core][role][flag]; AIV sets of mode 2 wait in aivSets until both have set.
  std::vector<std::array<std::array<CrossQueue, kCrossFlags>, kThreadsPerCore>> cross;
  std::vector<std::array<std::array<CrossQueue, kCrossFlags>, 2>> aivSets;
  std::set<std::string> syncSites;
  bool runDone = true;
  std::vector<std::unique_ptr<std::vector<uint8_t>>> localMemory;

  void Reset() {
    ctx.clear();
    vc.clear();
    selfDone.clear();
    records.assign(1, Record{});
    readSets.clear();
    regions.clear();
    byAddress.clear();
    gm.clear();
    counters.clear();
    cross.clear();
    aivSets.clear();
    syncSites.clear();
    localMemory.clear();
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
  const int core = thread / kThreadsPerCore, role = thread % kThreadsPerCore;
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
  m.records.push_back(Record{static_cast<uint32_t>(agent), m.vc[agent][agent], c.epoch[static_cast<int>(pipe)], api,
                             site});
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
  if (prev.agent == cur.agent) {
    const Pipe p = static_cast<Pipe>(cur.agent % kPipes);
    if (kind == Conflict::kNone || prev.epoch != c.epoch[static_cast<int>(p)]) return true;
    if (prev.clock <= M().selfDone[cur.agent]) return true;  // seen complete through another pipe
    if (p == Pipe::kV) return false;
    return !((p == Pipe::kMTE2 || p == Pipe::kMTE3) && kind == Conflict::kWAW);
  }
  return M().vc[cur.agent][prev.agent] >= prev.clock;
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
  const uint32_t rec = CurrentRecord(c, pipe, access, api, site);
  if (access == Access::kRead) {
    CoreCounters &k = m.counters[c.core];
    switch (pipe) {
      case Pipe::kMTE1: k.mte1Bytes += bytes; break;
      case Pipe::kMTE2: k.mte2Bytes += bytes; break;
      case Pipe::kMTE3: k.mte3Bytes += bytes; break;
      case Pipe::kFIX: k.fixBytes += bytes; break;
      default: break;
    }
  }
  if (region->kind == GmKind::kReadOnly) {
    if (access == Access::kWrite) Fail(api, site, "writes " + region->name + ", an input of the kernel");
    return host;
  }
  // Shadow: consecutive cells in the same state get the same verdict and the same new state.
  const uint64_t first = static_cast<uint64_t>(host - region->host);
  Cell *cells = region->cells.data() + first;
  uint32_t lastW = 0xffffffffu, lastR = 0xffffffffu, newR = 0;
  for (uint64_t i = 0; i < bytes; ++i) {
    Cell &cell = cells[i];
    if (cell.w == lastW && cell.r == lastR) {
      if (access == Access::kWrite) {
        cell.w = rec;
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
      if (cell.r & kMulti) {
        for (uint32_t id : m.readSets[cell.r & ~kMulti]) {
          if (!Ordered(m.records[id], id, rec, Conflict::kWAR, c)) Hazard("WAR", *region, span, first + i, id, rec);
        }
      } else if (cell.r != 0 && !Ordered(m.records[cell.r], cell.r, rec, Conflict::kWAR, c)) {
        Hazard("WAR", *region, span, first + i, cell.r, rec);
      }
      if (cell.w != 0 && !Ordered(m.records[cell.w], cell.w, rec, Conflict::kWAW, c)) {
        Hazard("WAW", *region, span, first + i, cell.w, rec);
      }
      cell.w = rec;
      cell.r = 0;
    } else {
      if (cell.w != 0 && !Ordered(m.records[cell.w], cell.w, rec, Conflict::kRAW, c)) {
        Hazard("RAW", *region, span, first + i, cell.w, rec);
      }
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

void CountVectorRepeats(uint64_t repeats) {
  ThreadCtx &c = Ctx("vector instruction", Site());
  M().counters[c.core].vectorRepeats += repeats;
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
  Ctx("KERNEL_TASK_TYPE_DEFAULT", site);
  if (type != KERNEL_TYPE_MIX_AIC_1_2) {
    Fail("KERNEL_TASK_TYPE_DEFAULT", site, "the model launches MIX kernels with 1 AIC : 2 AIV only");
  }
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

bool SpaceOf(TPosition pos, Space *out) {
  switch (pos) {
    case TPosition::A1:
    case TPosition::B1:
    case TPosition::C1: *out = Space::kL1; return true;
    case TPosition::A2: *out = Space::kL0A; return true;
    case TPosition::B2: *out = Space::kL0B; return true;
    case TPosition::CO1: *out = Space::kL0C; return true;
    case TPosition::VECIN:
    case TPosition::VECOUT:
    case TPosition::VECCALC: *out = Space::kUB; return true;
    default: return false;
  }
}

}  // namespace

const LocalBuffer *AllocBuffer(TPosition pos, uint32_t bytes, const Site &site) {
  ThreadCtx &c = Ctx("TPipe::InitBuffer", site);
  MachineImpl &m = M();
  Space space;
  if (!SpaceOf(pos, &space)) Fail("TPipe::InitBuffer", site, "this TPosition is not modelled");
  const bool cubeSpace = space != Space::kUB;
  if (cubeSpace != c.aic()) {
    Fail("TPipe::InitBuffer", site,
         std::string(SpaceName(space)) + " does not exist on the " + (c.aic() ? "AIC" : "AIV"));
  }
  if (bytes == 0) Fail("TPipe::InitBuffer", site, "len is 0");
  const int s = static_cast<int>(space);
  const uint32_t len = (bytes + kUbBlock - 1) / kUbBlock * kUbBlock;
  const uint32_t cap = Capacity(space);
  if (static_cast<uint64_t>(c.used[s]) + len > cap) {
    std::ostringstream os;
    os << "over capacity: " << len << " bytes on top of " << c.used[s] << " already used exceed the " << cap
       << " bytes of " << SpaceName(space) << " of the " << ThreadName(c.thread);
    Fail("TPipe::InitBuffer", site, os.str());
  }
  if (c.local[s] == nullptr) {
    m.localMemory.push_back(std::make_unique<std::vector<uint8_t>>(cap, 0xA5));
    c.local[s] = m.AddRegion(m.localMemory.back()->data(), cap, space,
                             std::string(SpaceName(space)) + " of " + ThreadName(c.thread), GmKind::kReadWrite,
                             c.thread);
  }
  Region *r = c.local[s];
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
  if (pos == TPosition::VECIN) {
    q.producer = Pipe::kMTE2;
    q.consumer = Pipe::kV;
  } else if (pos == TPosition::VECOUT) {
    q.producer = Pipe::kV;
    q.consumer = Pipe::kMTE3;
  } else {
    Fail("TPipe::InitBuffer", site, "queues are modelled for VECIN and VECOUT only");
  }
  if (depth < 1) Fail("TPipe::InitBuffer", site, "queue depth must be at least 1");
  c.queues.push_back(std::move(q));
  return &c.queues.back();
}

void QueueInit(QueueState *q, uint8_t num, uint32_t len, const Site &site) {
  if (num == 0) Fail("TPipe::InitBuffer", site, "num is 0");
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
  if (slot->state != QueueState::Slot::kDequeued) Fail("TQue::FreeTensor", site, "the tensor was not dequeued");
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

void Barrier(pipe_t pipe, const Site &site) {
  ThreadCtx &c = Ctx("PipeBarrier", site);
  CheckAbort();
  MachineImpl &m = M();
  Pipe p;
  if (pipe == PIPE_ALL) {
    if (Skipped("PipeBarrier", site)) return;
    Clock all(m.agents, 0);
    for (int i = 0; i < kPipes; ++i) Join(&all, m.vc[m.Agent(c.thread, static_cast<Pipe>(i))]);
    for (int i = 0; i < kPipes; ++i) {
      const int a = m.Agent(c.thread, static_cast<Pipe>(i));
      m.selfDone[a] = all[a];
      m.vc[a] = all;
      ++m.vc[a][a];
      ++c.epoch[i];
    }
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

// ---- cross-core flags and scheduling ---------------------------------------------------------------------
namespace {

// Hands the turn to the next thread that can run (round robin after `self`), or reports the
// deadlock when every live thread is blocked. Called with the lock held.
void HandOver(MachineImpl &m, int self) {
  for (int k = 1; k <= m.threads; ++k) {
    const int t = m.options.reverseTurns ? (self - k + 2 * m.threads) % m.threads : (self + k) % m.threads;
    ThreadCtx &o = m.ctx[t];
    if (o.state == ThreadCtx::kDone) continue;
    if (o.state == ThreadCtx::kBlocked && !m.aborted) {
      const auto &q = m.cross[o.core][o.role][o.waitFlag];
      if (q.sets.empty()) continue;
    }
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
      os << " " << ThreadName(o.thread) << " in CrossCoreWaitFlag(" << o.waitFlag << ") at " << Where(o.waitSite)
         << ";";
    }
  }
  return os.str();
}

void Push(MachineImpl &m, CrossQueue &q, Clock clock, const Site &site, const std::string &who) {
  if (static_cast<int>(q.sets.size()) >= kCrossCounterMax) {
    Stop("CrossCoreSetFlag at " + Where(site) + ": the flag counter of " + who + " would exceed 15");
  }
  q.sets.emplace_back(std::move(clock), site);
}

}  // namespace

void CrossCoreSet(uint8_t mode, pipe_t pipe, uint16_t flagId, const Site &site) {
  ThreadCtx &c = Ctx("CrossCoreSetFlag", site);
  CheckAbort();
  MachineImpl &m = M();
  Pipe p;
  if (!ToPipe(pipe, &p) || !PipeOnCore(p, c.aic())) Fail("CrossCoreSetFlag", site, "pipe not on this core");
  if (flagId >= kCrossFlags) Fail("CrossCoreSetFlag", site, "flagId outside 0-15");
  if (mode != 2) Fail("CrossCoreSetFlag", site, "only mode 2 (AIC <-> its AIVs) is modelled");
  if (Skipped("CrossCoreSetFlag", site)) return;
  Clock snap;
  Release(c, p, &snap);
  ++m.counters[c.core].crossCoreSets;
  if (c.aic()) {
    for (int role = 1; role < kThreadsPerCore; ++role) {
      Push(m, m.cross[c.core][role][flagId], snap, site, ThreadName(c.core * kThreadsPerCore + role));
    }
  } else {
    auto &mine = m.aivSets[c.core][c.role - 1][flagId];
    Push(m, mine, snap, site, "the AIC of core " + std::to_string(c.core) + " (pending AIV sets)");
    auto &a = m.aivSets[c.core][0][flagId];
    auto &b = m.aivSets[c.core][1][flagId];
    while (!a.sets.empty() && !b.sets.empty()) {  // both AIVs have set: the AIC's counter counts one
      Clock joined = a.sets.front().first;
      Join(&joined, b.sets.front().first);
      a.sets.pop_front();
      b.sets.pop_front();
      Push(m, m.cross[c.core][0][flagId], std::move(joined), site, ThreadName(c.core * kThreadsPerCore));
    }
  }
}

void CrossCoreWait(uint8_t mode, pipe_t pipe, uint16_t flagId, const Site &site) {
  ThreadCtx &c = Ctx("CrossCoreWaitFlag", site);
  CheckAbort();
  MachineImpl &m = M();
  (void)mode;  // A2/A3: modeId and pipe have no effect on the wait; it blocks every later instruction
  (void)pipe;
  if (flagId >= kCrossFlags) Fail("CrossCoreWaitFlag", site, "flagId outside 0-15");
  if (Skipped("CrossCoreWaitFlag", site)) return;
  auto &q = m.cross[c.core][c.role][flagId];
  if (q.sets.empty()) {
    std::unique_lock<std::mutex> lock(m.mu, std::adopt_lock);
    c.state = ThreadCtx::kBlocked;
    c.waitFlag = flagId;
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

int64_t BlockIdx() {
  // CANN, MIX 1:2: on the AIC the AI core index; on an AIV core * 2 + sub-block.
  ThreadCtx &c = Ctx("GetBlockIdx", Site());
  return c.aic() ? c.core : c.core * 2 + (c.role - 1);
}
int64_t BlockNum() {
  Ctx("GetBlockNum", Site());
  return M().options.cores;  // the launch's block dim (AI cores)
}
int64_t SubBlockIdx() {
  ThreadCtx &c = Ctx("GetSubBlockIdx", Site());
  return c.aic() ? 0 : c.role - 1;
}
int64_t SubBlockNum() {
  ThreadCtx &c = Ctx("GetSubBlockNum", Site());
  return c.aic() ? 1 : 2;
}

GM_ADDR UserWorkspace(GM_ADDR workspace, const Site &site) {
  Ctx("GetUserWorkspace", site);
  if (workspace == nullptr) Fail("GetUserWorkspace", site, "workspace is nullptr");
  return workspace + kSystemWorkspace;
}

// ---- the driver's side -----------------------------------------------------------------------------------
void Machine::AddGm(uint8_t *host, uint64_t bytes, const char *name, GmKind kind) {
  MachineImpl &m = M();
  if (m.runDone) m.Reset();
  if (host == nullptr || bytes == 0) return;
  auto a = std::make_unique<GmAllocation>();
  a->host = host;
  a->bytes = bytes;
  a->name = name;
  Region *r = m.AddRegion(host, bytes, Space::kGM, name, kind, -1);
  if (kind == GmKind::kReadWrite) r->cells.resize(bytes);
  m.gm.push_back(std::move(a));
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

RunResult Machine::Run(const LaunchOptions &options, const std::function<void(bool isAic)> &entry) {
  static std::mutex runMu;  // one run at a time
  std::lock_guard<std::mutex> runLock(runMu);
  MachineImpl &m = M();
  if (m.runDone) m.Reset();
  m.options = options;
  m.threads = static_cast<int>(options.cores) * kThreadsPerCore;
  m.agents = m.threads * kPipes;
  m.ctx.assign(m.threads, ThreadCtx());
  m.vc.assign(m.agents, Clock(m.agents, 0));
  m.selfDone.assign(m.agents, 0);
  for (int a = 0; a < m.agents; ++a) m.vc[a][a] = 1;
  m.counters.assign(options.cores, CoreCounters());
  m.cross.assign(options.cores, {});
  m.aivSets.assign(options.cores, {});
  for (int t = 0; t < m.threads; ++t) {
    ThreadCtx &c = m.ctx[t];
    c.thread = t;
    c.core = t / kThreadsPerCore;
    c.role = t % kThreadsPerCore;
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
      if (!m.aborted) {
        l.release();  // the turn is ours; the lock stays held by this thread while it runs
        try {
          entry(c.aic());
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
  // Every cross-core set must have been waited.
  if (!m.aborted) {
    for (uint32_t core = 0; core < options.cores && m.error.empty(); ++core) {
      for (int role = 0; role < kThreadsPerCore && m.error.empty(); ++role) {
        for (int f = 0; f < kCrossFlags; ++f) {
          const auto &q = m.cross[core][role][f];
          if (!q.sets.empty()) {
            m.error = "flag still set when the kernel ends: cross-core flag " + std::to_string(f) + " of the " +
                      ThreadName(static_cast<int>(core) * kThreadsPerCore + role) + " holds " +
                      std::to_string(q.sets.size()) + " set(s), the first from " + Where(q.sets.front().second);
            break;
          }
        }
      }
      for (int sub = 0; sub < 2 && m.error.empty(); ++sub) {
        for (int f = 0; f < kCrossFlags; ++f) {
          if (!m.aivSets[core][sub][f].sets.empty()) {
            m.error = "flag still set when the kernel ends: AIV" + std::to_string(sub) + " of core " +
                      std::to_string(core) + " set cross-core flag " + std::to_string(f) + " at " +
                      Where(m.aivSets[core][sub][f].sets.front().second) + " and its partner AIV never did";
            break;
          }
        }
      }
    }
  }
  RunResult result;
  result.ok = m.error.empty();
  result.error = m.error;
  result.counters = m.counters;
  result.syncSites.assign(m.syncSites.begin(), m.syncSites.end());
  m.runDone = true;  // the shadow stays for FirstUnwritten until the next AddGm / Run
  return result;
}

}  // namespace ascend_model
