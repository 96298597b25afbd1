// The inner step of the fused kernel: a tile of query rows against one KV block, reduced at once to
// one max per row. The [rows x keys] scores live only in registers.
#pragma once
#include <cstdint>

namespace msa {
namespace cpu {

constexpr int64_t kRowBlock = 4;   // query rows per register tile
constexpr int64_t kKeyBlock = 16;  // keys per register tile; every block size is a multiple of it

// q: rows x d (row stride d), rows a multiple of kRowBlock (padding rows have limit 0).
// kt: the block's keys transposed, d x ldk, zero beyond `keys`. col_scale: a multiplier per key or null.
// limit[r]: visible keys of row r in this block (0..keys). out_max[r]: the NaN-propagating max over
// keys [0, limit[r]) of <q_r, k_j> * col_scale[j]; left untouched when limit[r] == 0.
using BlockMaxFn = void (*)(const float *q, int64_t rows, int64_t d, const float *kt, int64_t ldk,
                            const float *col_scale, const int64_t *limit, float *out_max);

struct BlockMaxImpl {
  const char *isa;
  BlockMaxFn fn;
};

// The implementations this CPU can run, best first ("avx2" where supported, then "generic").
int AvailableBlockMax(BlockMaxImpl *out, int cap);

// The implementation to use: MS_MSA_CPU_ISA=<name> forces one (an unknown or unsupported name
// falls back to the best), otherwise the best.
BlockMaxImpl SelectBlockMax();

}  // namespace cpu
}  // namespace msa
