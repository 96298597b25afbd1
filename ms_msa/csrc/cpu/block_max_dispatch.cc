#include <cstdlib>
#include <cstring>
#include <string>

#include "../common/msa_config.h"
#include "block_max.h"

namespace msa {
namespace cpu {

BlockMaxFn GenericBlockMax();
#if defined(MSA_HAVE_AVX2_KERNEL)
BlockMaxFn Avx2BlockMax();
#endif

int AvailableBlockMax(BlockMaxImpl *out, int cap) {
  int n = 0;
#if defined(MSA_HAVE_AVX2_KERNEL)
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && n < cap) out[n++] = {"avx2", Avx2BlockMax()};
#endif
  if (n < cap) out[n++] = {"generic", GenericBlockMax()};
  return n;
}

BlockMaxImpl SelectBlockMax() {
  // Read at every launch (cheap) so a process can switch paths, as the tests do.
  BlockMaxImpl all[4];
  const int n = AvailableBlockMax(all, 4);
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

// Comma-separated names of the micro-kernels this CPU can run, best first (for tests and benchmarks).
extern "C" MSA_EXPORT int MsaCpuIsas(char *buf, int cap) {
  msa::cpu::BlockMaxImpl all[4];
  const int n = msa::cpu::AvailableBlockMax(all, 4);
  std::string text;
  for (int i = 0; i < n; ++i) text += (i ? "," : "") + std::string(all[i].isa);
  if (buf != nullptr && cap > 0) {
    std::strncpy(buf, text.c_str(), cap - 1);
    buf[cap - 1] = '\0';
  }
  return n;
}
