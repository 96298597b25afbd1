// The AVX-512 build with AVX512-BF16 and AVX512-VBMI (compiled with the AVX-512 flags plus -mavx512bf16
// -mavx512vbmi; called only after a CPUID check): the AVX-512 kernel set, plus bf16 queries on vdpbf16ps against
// bf16 keys (PairBlockMax for several rows, Bf16DotMax for decode's few) and int8 keys (Bf16DotMax, the keys
// made bf16 by a byte-table permute, vpermt2b).
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
namespace avx512bf16 {
#include "isa_kernels_impl.inc"
}  // namespace avx512bf16

IsaKernels Avx512Bf16Kernels() {
  return {"avx512-bf16",          avx512bf16::Decode,         avx512bf16::DecodeRows,
          avx512bf16::BlockMaxWide, avx512bf16::DotMax,         avx512bf16::DecodeBlockMax,
          avx512bf16::PairBlockMax, avx512bf16::Bf16DotMax,     avx512bf16::Int8ToBf16};
}

}  // namespace cpu
}  // namespace msa
