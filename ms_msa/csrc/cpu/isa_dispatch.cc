#include <cstdlib>
#include <cstring>
#include <string>

#include "isa_kernels.h"

namespace msa {
namespace cpu {

IsaKernels GenericKernels();
#if defined(MSA_HAVE_X86_KERNELS)
IsaKernels Avx2Kernels();
IsaKernels Avx512Kernels();
IsaKernels Avx512Bf16Kernels();
#endif

int AvailableIsaKernels(IsaKernels *out, int cap) {
  int n = 0;
#if defined(MSA_HAVE_X86_KERNELS)
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  // (VBMI: int8 keys become bf16 by byte table; every CPU with AVX512-BF16 has it but Intel's Cooper Lake,
  // which then runs the avx512 set)
  if (avx512 && __builtin_cpu_supports("avx512bf16") && __builtin_cpu_supports("avx512vbmi") && n < cap) {
    out[n++] = Avx512Bf16Kernels();
  }
  if (avx512 && n < cap) out[n++] = Avx512Kernels();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && n < cap) out[n++] = Avx2Kernels();
#endif
  if (n < cap) out[n++] = GenericKernels();
  return n;
}

IsaKernels SelectIsaKernels() {
  // Read at every launch (cheap) so one process can switch paths, as the tests do.
  IsaKernels all[kMaxIsaKernels];
  const int n = AvailableIsaKernels(all, kMaxIsaKernels);
  const char *want = std::getenv("MS_MSA_CPU_ISA");
  if (want != nullptr) {
    for (int i = 0; i < n; ++i) {
      if (std::strcmp(all[i].isa, want) == 0) return all[i];
    }
  }
  return all[0];
}

}  // namespace cpu
}  // namespace msa

// Comma-separated names of the kernel sets this CPU can run, best first (for tests and benchmarks).
extern "C" MSA_EXPORT int MsaCpuIsas(char *buf, int cap) {
  msa::cpu::IsaKernels all[msa::cpu::kMaxIsaKernels];
  const int n = msa::cpu::AvailableIsaKernels(all, msa::cpu::kMaxIsaKernels);
  std::string text;
  for (int i = 0; i < n; ++i) text += (i ? "," : "") + std::string(all[i].isa);
  if (buf != nullptr && cap > 0) {
    std::strncpy(buf, text.c_str(), cap - 1);
    buf[cap - 1] = '\0';
  }
  return n;
}
