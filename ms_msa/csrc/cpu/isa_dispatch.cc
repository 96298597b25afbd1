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
double Bf16PairMacRateOverFma();
#endif

static bool HaveAvx512Set() {
#if defined(MSA_HAVE_X86_KERNELS)
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
#else
  return false;
#endif
}

// (VBMI: int8 keys become bf16 by byte table; every CPU with AVX512-BF16 has it but Intel's Cooper Lake, which
// then runs the avx512 set)
static bool HaveAvx512Bf16Set() {
#if defined(MSA_HAVE_X86_KERNELS)
  return HaveAvx512Set() && __builtin_cpu_supports("avx512bf16") && __builtin_cpu_supports("avx512vbmi");
#else
  return false;
#endif
}

// vdpbf16ps against the fp32 FMA on this CPU, measured once per process (0 without AVX512-BF16): the avx512-bf16
// set leads only where its pair instruction outruns the FMA. Measured: 2.0x on Zen 4 and Zen 5, 0.5x on an Intel
// Xeon (family 6 model 207), where bf16 prefill took 66.7 ms on the pair path against 37.2 ms widened to fp32
// (docs/performance.md). The two rates are 4x apart, far beyond the probe's noise, so the order is stable.
double Bf16PairRateRatio() {
#if defined(MSA_HAVE_X86_KERNELS)
  static const double ratio = HaveAvx512Bf16Set() ? Bf16PairMacRateOverFma() : 0.0;
  return ratio;
#else
  return 0.0;
#endif
}

int AvailableIsaKernels(IsaKernels *out, int cap) {
  int n = 0;
#if defined(MSA_HAVE_X86_KERNELS)
  const bool avx512 = HaveAvx512Set();
  const bool pairs = HaveAvx512Bf16Set();
  const bool pairs_lead = pairs && Bf16PairRateRatio() >= 1.0;
  if (pairs_lead && n < cap) out[n++] = Avx512Bf16Kernels();
  if (avx512 && n < cap) out[n++] = Avx512Kernels();
  if (pairs && !pairs_lead && n < cap) out[n++] = Avx512Bf16Kernels();
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

// vdpbf16ps's multiply-add rate over the fp32 FMA's as this process measured it (0 without AVX512-BF16): the
// avx512-bf16 set leads the order above where it is at least 1.
extern "C" MSA_EXPORT double MsaCpuBf16PairRateRatio() { return msa::cpu::Bf16PairRateRatio(); }
