#include <cstdlib>
#include <cstring>
#include <string>
#if defined(MSA_HAVE_X86_KERNELS) && defined(__linux__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "isa_kernels.h"

namespace msa {
namespace cpu {

IsaKernels GenericKernels();
#if defined(MSA_HAVE_X86_KERNELS)
IsaKernels Avx2Kernels();
IsaKernels Avx512Kernels();
IsaKernels Avx512Bf16Kernels();
IsaKernels Avx512AmxKernels();
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

// AMX-BF16 tiles: CPUID says the core has them, and Linux grants this process their state (asked once: the tile
// data is not part of a thread's saved state until a process asks, ARCH_REQ_XCOMP_PERM, Linux 5.16 and later; a
// process that has not asked dies of SIGILL at its first tile instruction).
static bool HaveAvx512AmxSet() {
#if defined(MSA_HAVE_X86_KERNELS) && defined(__linux__) && defined(SYS_arch_prctl)
  static const bool granted = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;  // (GCC 12's __builtin_cpu_supports does not know AMX)
    if (!HaveAvx512Bf16Set() || !__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
    constexpr unsigned kAmxBf16 = 1u << 22, kAmxTile = 1u << 24;  // CPUID.(7, 0):EDX
    if ((edx & kAmxBf16) == 0 || (edx & kAmxTile) == 0) return false;
    constexpr long kReqXcompPerm = 0x1023, kXtileData = 18;
    return syscall(SYS_arch_prctl, kReqXcompPerm, kXtileData) == 0;
  }();
  return granted;
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
  if (HaveAvx512AmxSet() && n < cap) out[n++] = Avx512AmxKernels();
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
