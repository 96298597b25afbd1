// The seam between the modelled AscendC instructions (ops_*.h) and the modelled machine
// (runtime): every instruction reports each byte range it reads or writes, on the pipe that
// executes it, before it touches the bytes. The runtime checks bounds, alignment, capacity and
// happens-before there, counts traffic, and hands back the host address of the range.
//
// Nothing here is part of the AscendC API: these names live in namespace ascend_model and the
// kernel never names them.
#ifndef ASCEND_MODEL_MODEL_HOOKS_H
#define ASCEND_MODEL_MODEL_HOOKS_H

#include <cstdint>
#include <string>

namespace ascend_model {

// The separate address spaces of an Atlas A2/A3 AI core (capacities in the runtime). kBT is the
// BiasTable Buffer of the Cube core (TPosition C2), kFB its Fixpipe Buffer (TPosition C2PIPE2GM).
enum class Space : uint8_t { kGM, kUB, kL1, kL0A, kL0B, kL0C, kBT, kFB };

inline const char *SpaceName(Space s) {
  switch (s) {
    case Space::kGM: return "GM";
    case Space::kUB: return "UB";
    case Space::kL1: return "L1";
    case Space::kL0A: return "L0A";
    case Space::kL0B: return "L0B";
    case Space::kL0C: return "L0C";
    case Space::kBT: return "BiasTable";
    case Space::kFB: return "FixpipeBuffer";
  }
  return "?";
}

// The pipes that execute instructions (AscendC's pipe_t, without PIPE_ALL).
enum class Pipe : uint8_t { kS, kV, kM, kMTE1, kMTE2, kMTE3, kFIX };

// Where an API call stands in the kernel source. Every modelled API function takes one as its
// last, defaulted parameter. The constructor's first parameter is a type the kernel cannot name
// or convert to, so no argument list the real headers reject is accepted because of it.
struct Site {
  struct Here {};
  const char *file;
  int line;
  constexpr Site(Here = Here(), const char *f = __builtin_FILE(), int l = __builtin_LINE()) : file(f), line(l) {}
};

// The bytes a tensor can reach: from its first element to the end of its buffer (local) or of the
// allocation it points into (global). `buffer` names the buffer for messages ("keyL1_", "GM:key").
struct Span {
  Space space;
  uint8_t *host;      // host address of the tensor's first byte
  uint64_t bytes;     // bytes from there to the end of the buffer / allocation
  uint64_t offset;    // byte offset of the first byte inside its buffer (for alignment checks)
  const char *buffer;
};

enum class Access : uint8_t { kRead, kWrite };

// Records that `api` at `site` accesses bytes [offset, offset + bytes) of `span` on `pipe`.
// Stops the run with a message on an out-of-bounds range or an unordered conflicting access
// (RAW, WAR, WAW) by another pipe or core. Returns the host address of the first byte.
uint8_t *Touch(const Span &span, uint64_t offset, uint64_t bytes, Pipe pipe, Access access, const char *api,
               const Site &site);

// The store of a DMA instruction (MTE3 from UB, FIX from L0C) into GM bytes it has Touched: a plain
// copy of `bytes` bytes from `src` to `dst`, or, after SetAtomicAdd / Max / Min of the calling core,
// that operation on elements of `elemBytes` bytes (the run stops when they are not the atomic type's).
void StoreGm(uint8_t *dst, const uint8_t *src, uint64_t bytes, uint64_t elemBytes, const char *api, const Site &site);

// The padding value SetPadValue set on the calling core for DataCopyPad (GM -> UB, isPad false):
// copies its `elemBytes` bytes to `out` and returns true, or false when none was set. The run stops
// when the value's type has another size than the copy's elements.
bool PadValue(void *out, uint64_t elemBytes, const char *api, const Site &site);
// SetPadValue: records the calling core's padding value (`supported`: a type the A2/A3 document lists).
void SetPadValueBytes(const void *value, uint64_t bytes, bool supported, const Site &site);

// CTRL[48] of the calling core, the floating saturation mode (SetSaturationFlag<SaturationMode::FLOAT>):
// true (the A2/A3 default, CTRL[48] = 0) saturates a half or bfloat16_t conversion result that is inf
// to +-MAX of its type and one that is NaN to 0; false keeps inf / NaN.
bool FloatSaturation(const char *api, const Site &site);
void SetFloatSaturation(bool on, const Site &site);

// Stops the run: a parameter the hardware rejects (misaligned, over capacity, out of range).
[[noreturn]] void Fail(const char *api, const Site &site, const std::string &message);

// Work counters of the calling core (bytes per MTE pipe are counted by Touch).
void CountCubeFractalMacs(uint64_t fractalMacs);  // 16x16x16 (16-bit) multiply-accumulate blocks
// Vector repeats, also per instruction: `op` is "<API>/<dst element bytes>[/<src element bytes>]" (the
// instruction and its types: a cost model prices each by its own cycles per repeat).
void CountVectorRepeats(uint64_t repeats, const std::string &op);
// The L0C bytes a Fixpipe into L1 reads (FIX's reads of L0C are all counted by Touch; these are the
// share of them whose destination is L1, which a cost model may price at another rate).
void CountFixIntoL1(uint64_t l0cBytes);

}  // namespace ascend_model

#endif  // ASCEND_MODEL_MODEL_HOOKS_H
