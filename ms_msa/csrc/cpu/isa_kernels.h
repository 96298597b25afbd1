// The two inner steps of the fused kernel, compiled once per instruction set and chosen at run time:
//   decode: a row of keys or queries, any input dtype -> fp32;
//   block_max: a tile of query rows against a chunk of keys, reduced at once to a running masked max
//              per row. The [rows x keys] scores only ever live in registers.
#pragma once
#include <cstdint>

#include "../common/msa_config.h"

namespace msa {
namespace cpu {

// Query rows are processed in groups of this many (one SIMD vector of fp32 per group).
constexpr int64_t kRowAlign = 8;
// ... and of this many on the bf16 pair path (16-lane vectors).
constexpr int64_t kPairRowAlign = 16;

using DecodeFn = void (*)(DType dtype, const void *base, int64_t offset, int64_t n, float *dst);

// qt: the query tile transposed, d x ldq fp32 (ldq: rows rounded up to kRowAlign, padding rows zero).
// keys: nkeys x d fp32, row-major. scale: a dequant multiplier per key, or null.
// limit[r]: how many of the keys row r may see (a prefix; <= nkeys).
// run_max[r] / run_nan[r]: a running NaN-propagating max over every visible key seen so far; updated.
using BlockMaxFn = void (*)(const float *qt, int64_t ldq, int64_t d, const float *keys, int64_t nkeys,
                            const float *scale, const int32_t *limit, float *run_max, int32_t *run_nan);

// Tasks with at most this many query rows (decode: one token x the heads of a key head) skip the fp32
// key buffer: keys are read in their own dtype and dotted in registers, so decode runs at memory speed.
constexpr int64_t kDotRows = 4;

// The key dtypes the dot path reads in place (fp8 keys go through the decode table instead).
inline bool DotPathReads(DType key_dtype) {
  return key_dtype == DType::kBFloat16 || key_dtype == DType::kFloat16 || key_dtype == DType::kFloat32 ||
         key_dtype == DType::kInt8;
}

// q: kDotRows x d fp32 row-major (padding rows zero); keys at element offsets key_off[0..nkeys) of
// key_base; other arguments as BlockMaxFn. Returns false (doing nothing) for a key dtype it cannot read
// (exactly those DotPathReads refuses).
using DotMaxFn = bool (*)(DType key_dtype, const void *key_base, const int64_t *key_off, int64_t nkeys,
                          const float *q, int64_t rows, int64_t d, const float *scale, const int32_t *limit,
                          float *run_max, int32_t *run_nan);

// bf16 queries against bf16 keys on an instruction that multiplies bf16 pairs exactly and adds them in
// fp32 (AVX512-BF16's vdpbf16ps): twice the multiply-adds of an fp32 FMA, and no decode pass.
// qp: the query tile as pairs, ceil(d / 2) x ldq uint32 (pair j of row r holds q[r][2j] in its low and
// q[r][2j+1] in its high half; a missing q[r][d] is 0); keys read in place at key_off (bf16 elements);
// limit / run_max / run_nan as BlockMaxFn. The instruction treats subnormal inputs as zero, so the
// caller never passes a query tile with one, and the function returns false (doing nothing) if a key
// of the chunk has one: the caller then takes the fp32 path, whose FMAs keep them.
using PairBlockMaxFn = bool (*)(const uint32_t *qp, int64_t ldq, int64_t d, const void *key_base,
                                const int64_t *key_off, int64_t nkeys, const int32_t *limit, float *run_max,
                                int32_t *run_nan);

struct IsaKernels {
  const char *isa;
  DecodeFn decode;
  BlockMaxFn block_max;
  DotMaxFn dot_max;
  PairBlockMaxFn bf16_block_max;  // null where the CPU has no bf16 pair instruction
};

// True if a bf16 value (its bits) is subnormal: a zero exponent and a non-zero fraction.
inline bool Bf16IsSubnormal(uint16_t bits) { return (bits & 0x7F80u) == 0 && (bits & 0x007Fu) != 0; }

// The kernel sets this CPU can run, best first; the last is always "generic".
constexpr int kMaxIsaKernels = 8;
int AvailableIsaKernels(IsaKernels *out, int cap);

// MS_MSA_CPU_ISA=<name> forces one of them (an unknown or unsupported name means the best).
IsaKernels SelectIsaKernels();

}  // namespace cpu
}  // namespace msa
