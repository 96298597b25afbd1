// The modelled machine as the driver sees it: global-memory allocations, a launch of `cores` AI
// cores (one AIC thread and two AIV threads each) through a kernel entry, the counters and the
// error of a run. Not part of the AscendC API.
#ifndef ASCEND_MODEL_MACHINE_H
#define ASCEND_MODEL_MACHINE_H

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "model_hooks.h"

namespace ascend_model {

// Per-core work counters (issue §8).
struct CoreCounters {
  uint64_t mte1Bytes = 0, mte2Bytes = 0, mte3Bytes = 0, fixBytes = 0;
  uint64_t cubeFractalMacs = 0;
  uint64_t vectorRepeats = 0;
  uint64_t crossCoreSets = 0;  // CrossCoreSetFlag calls (handshakes) of the core's three threads
};

enum class GmKind : uint8_t {
  kReadOnly,  // an input: reads need no shadow, a write stops the run
  kReadWrite, // output, workspace: every byte shadowed
  kNoAccess,  // the system workspace CANN reserves: any access stops the run
};

struct LaunchOptions {
  uint32_t cores = 1;
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

// One run at a time: the machine is a process-wide singleton, serialised by Run.
class Machine {
 public:
  // Registers a GM allocation for the next run (the memory stays the caller's).
  static void AddGm(uint8_t *host, uint64_t bytes, const char *name, GmKind kind);
  // Runs `entry(isAic)` on every thread of `cores` AI cores; clears the allocations afterwards.
  static RunResult Run(const LaunchOptions &options, const std::function<void(bool isAic)> &entry);
  // After a run: whether every byte of [host, host + bytes) of a read-write allocation was written.
  // Only valid inside Run's caller before the next run (the shadow is kept until then).
  static uint64_t FirstUnwritten(const uint8_t *host, uint64_t bytes);
};

}  // namespace ascend_model

#endif  // ASCEND_MODEL_MACHINE_H
