// The AVX-512 build with AMX-BF16 (compiled with the AVX-512 flags plus -mavx512bf16 -mavx512vbmi -mamx-tile
// -mamx-bf16; called only after a CPUID check and the OS granting the tiles, isa_dispatch.cc): the avx512 kernel set
// (fp32 FMAs: every other dtype keeps them), plus bf16 queries against bf16 keys on the tiles (TileBlockMax: decode,
// speculative decode and prefill, tasks of up to 128 query rows at D 128), and fp16 against fp16 keys on them, each
// value split into two bf16 (TileBlockMaxFp16: speculative decode and prefill).
#include <immintrin.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "dtype_convert.h"
#include "isa_kernels.h"

namespace msa {
namespace cpu {
namespace avx512amx {
#include "isa_kernels_impl.inc"
}  // namespace avx512amx

IsaKernels Avx512AmxKernels() {
  IsaKernels k = {"avx512-amx",      avx512amx::Decode,         avx512amx::DecodeRows, avx512amx::BlockMaxWide,
                  avx512amx::DotMax, avx512amx::DecodeBlockMax, nullptr,               nullptr};
  k.tile_block_max = avx512amx::TileBlockMax;
  k.tile_fp16_block_max = avx512amx::TileBlockMaxFp16;
  k.split_fp16 = avx512amx::SplitFp16;
  return k;
}

}  // namespace cpu
}  // namespace msa
