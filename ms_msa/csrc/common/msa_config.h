// Constants of the MsaIndexScore contract (SPEC.md). The single source of truth: the CPU kernel,
// the Ascend tiling and (through msa_rules_c_api) the Python package all read them from here.
#pragma once
#include <cstdint>

namespace msa {

// Forced scores REPLACE the computed value (SPEC §4). Local wins over init.
constexpr float kInitForceValue = 1e30f;
constexpr float kLocalForceValue = 1e29f;

// The output width is padded to a multiple of this and is never below it.
constexpr int64_t kOutWidthAlign = 16;

// The CANN interface carries an atten_mask of this square size; it is never read.
constexpr int64_t kAttenMaskSize = 2048;

// Block (page) size rules.
constexpr int64_t kBlockSizeAlign = 16;       // every backend
constexpr int64_t kCpuMaxBlockSize = 1024;    // CPU
constexpr int64_t kAscendBlockSize = 128;     // Ascend: exactly this
constexpr int64_t kDefaultBlockSize = 128;

// Head-dim rules on Ascend (Cube fractal is 16 wide; Q tile must fit the L1 budget of the tiling).
constexpr int64_t kAscendHeadDimAlign = 16;
constexpr int64_t kAscendMaxHeadDim = 128;

constexpr int kMaxRank = 8;

// Positions of the tensors in the aclnn interface order (SPEC §8); the AOT kernel receives its
// inputs in the same order, followed by the output.
enum InputIndex : int {
  kQuery = 0,
  kKey = 1,
  kBlockTable = 2,
  kScale = 3,
  kAttenMask = 4,
  kActualSeqQlen = 5,
  kActualSeqKlen = 6,
  kStartLoc = 7,
  kNumInputs = 8,
};

enum class Layout : int32_t { kBBND = 0, kBNBD = 1, kTND = 2 };
enum class LocalWindow : int32_t { kRequest = 0, kToken = 1 };
// Order of an int8 key's paged scale: kBNB [NP, N2, P], kBBN [NP, P, N2] (CANN's "BBN"), kAuto by
// shape (an error when N2 == P makes the two orders the same shape).
enum class ScaleLayout : int32_t { kAuto = 0, kBNB = 1, kBBN = 2 };
enum class Target : int32_t { kCpu = 0, kAscend = 1 };

// Element types as named by MindSpore's AOT dtype strings.
enum class DType : int32_t {
  kNone = 0,
  kFloat16,
  kBFloat16,
  kFloat32,
  kFloat8E4M3FN,
  kFloat8E5M2,
  kInt8,
  kInt32,
  kOther,
};

inline int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
inline int64_t RoundUp(int64_t a, int64_t b) { return CeilDiv(a, b) * b; }

}  // namespace msa

// Symbols the library exports (it is built with -fvisibility=hidden).
#define MSA_EXPORT __attribute__((visibility("default")))
