// What the scenario programs of the CPU model's tests share (ascend_model_*_test.cc, each built with
// ascendc/cpu_model/build_cpu_debug.sh and run by a tests/test_ascend_model_*.py with a scenario name and an
// optional variant): GM from GmAlloc, values printed for the Python side to check, and main.
#ifndef MS_MSA_TESTS_CPU_DEBUG_PROGRAM_H
#define MS_MSA_TESTS_CPU_DEBUG_PROGRAM_H

#include <cstddef>
#include <cstdio>
#include <string>

#include "tikicpulib.h"

namespace cpu_debug_program {

// argv[2]: the scenario's variant (e.g. "early": a flag set before the data it covers), "" without one.
inline std::string g_variant;

// count elements of T in global memory, as a kernel argument must be (ICPU_RUN_KF checks it).
template <typename T>
T *Gm(size_t count) {
  return static_cast<T *>(AscendC::GmAlloc(count * sizeof(T)));
}

// One line "name v0 v1 ...", each float with enough digits to be read back exactly.
inline void Print(const char *name, const float *v, long n) {
  std::printf("%s", name);
  for (long i = 0; i < n; ++i) std::printf(" %.9g", v[i]);
  std::printf("\n");
}

// main of a program: `<program> <scenario> [variant]`, run by `run`; 2 on a usage error.
inline int Main(int argc, char **argv, int (*run)(const std::string &scenario)) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s <scenario> [variant]\n", argv[0]);
    return 2;
  }
  g_variant = argc > 2 ? argv[2] : "";
  return run(argv[1]);
}

}  // namespace cpu_debug_program

#endif  // MS_MSA_TESTS_CPU_DEBUG_PROGRAM_H
