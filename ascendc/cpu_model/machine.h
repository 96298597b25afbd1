// The modelled machine behind tikicpulib.h (GmAlloc, SetKernelMode, ICPU_RUN_KF): the attributes of
// global-memory allocations, a launch of numBlocks cores in a mode through a kernel entry, the
// counters and the error of a run. Not part of the AscendC API.
#ifndef ASCEND_MODEL_MACHINE_H
#define ASCEND_MODEL_MACHINE_H

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "model_hooks.h"

namespace ascend_model {

// Per-core work counters (issue §8).
struct CoreCounters {
  uint64_t mte1Bytes = 0, mte2Bytes = 0, mte3Bytes = 0, fixBytes = 0;
  uint64_t fixGmBytes = 0;  // bytes FIX writes to GM (fixBytes counts what it reads from L0C)
  uint64_t fixL1Bytes = 0;      // bytes FIX writes to L1 (Fixpipe L0C -> L1)
  uint64_t fixL1ReadBytes = 0;  // the L0C bytes those Fixpipes read (part of fixBytes)
  uint64_t mte3L1Bytes = 0;     // bytes MTE3 reads from L1 (DataCopy L1 -> GM on the Cube core; part of mte3Bytes)
  uint64_t cubeFractalMacs = 0;
  uint64_t vectorRepeats = 0;
  std::map<std::string, uint64_t> vectorOps;  // the same repeats per instruction (CountVectorRepeats)
  uint64_t crossCoreSets = 0;  // CrossCoreSetFlag calls (handshakes) of the core's three threads
};

enum class GmKind : uint8_t {
  kReadOnly,  // an input: reads need no shadow, a write stops the run
  kReadWrite, // output, workspace: every byte shadowed (what GmAlloc gives)
  kNoAccess,  // the system workspace CANN reserves: any access stops the run
};

// The core types of a launch (CANN's SetKernelMode, tikicpulib.h): MIX = numBlocks AI cores of one
// AIC and two AIVs, AIC / AIV = numBlocks cores of one type.
enum class LaunchMode : uint8_t { kMix, kAic, kAiv };

struct LaunchOptions {
  uint32_t cores = 1;  // numBlocks
  LaunchMode mode = LaunchMode::kMix;
  // A sync call site to drop ("file:line:api", file as its basename), for the strictness tests;
  // empty: none.
  std::string skipSyncSite;
  // The order of turns: threads hand over to the next (false) or the previous one (true), starting
  // from the first or the last. Results and reports must not depend on it (happens-before).
  bool reverseTurns = false;
};

struct RunResult {
  bool ok = true;
  std::string error;                   // the first failure of the run
  std::vector<CoreCounters> counters;  // per core
  std::vector<std::string> syncSites;  // every sync call site the run executed ("file:line:api"), sorted
};

// One run at a time: the machine is a process-wide singleton, serialised by Run. Global memory is
// what GmAlloc (tikicpulib.h) registered; every launch sees every live allocation.
class Machine {
 public:
  // Gives [host, host + bytes), inside one GmAlloc'd block, its own name and kind: an allocation of
  // its own for the model's bounds (a GlobalTensor never reaches past it). Model only (the driver).
  static void DescribeGm(uint8_t *host, uint64_t bytes, const char *name, GmKind kind);
  // Runs `entry` on every thread of the launch (g_coreType says which core type calls it).
  static RunResult Run(const LaunchOptions &options, const std::function<void()> &entry);
  // After a run: how many leading bytes of [host, host + bytes) of a read-write allocation the run
  // wrote. Only valid before the next run (the shadow is kept until then).
  static uint64_t FirstUnwritten(const uint8_t *host, uint64_t bytes);
};

// ICPU_RUN_KF's knobs beyond CANN's interface (the driver's; a user's main never needs them).
struct CpuDebugOptions {
  std::string skipSyncSite;    // else $ASCEND_MODEL_SKIP_SYNC_SITE
  bool exitOnFailure = true;   // print the model's message and exit(1) when the run stops
};
CpuDebugOptions &DebugOptions();
// The result of the last ICPU_RUN_KF of the process.
const RunResult &LastRun();

}  // namespace ascend_model

#endif  // ASCEND_MODEL_MACHINE_H
