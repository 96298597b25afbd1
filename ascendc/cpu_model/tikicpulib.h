// CANN's CPU twin-debug interface ("调试接口 / CPU孪生调试") on the CPU model: what a host program
// includes to run an AscendC kernel on the CPU (see README.md in this folder for the one build
// command). As documented:
//   AscendC::GmAlloc(size)       global memory the kernel may use (zeroed); every launch sees it as
//                                read-write GM, with a shadow of every byte for the race checker
//   AscendC::GmFree(ptr)         frees what GmAlloc gave
//   AscendC::SetKernelMode(mode) the core types of the next launches: MIX_MODE (the default: numBlocks
//                                AI cores of 1 AIC + 2 AIV), AIC_MODE or AIV_MODE (numBlocks cores of
//                                that type, each its own block)
//   ICPU_SET_TILING_KEY(key)     the tiling key of the next launches (TILING_KEY_IS(key) branches)
//   ICPU_RUN_KF(kernel, numBlocks, args...)
//                                runs kernel(args...) on every core of the launch and returns when all
//                                have finished; every pointer argument must point into GmAlloc'd memory
//                                (or be null); scalars and trivially copyable structs pass by value (as
//                                a <<<>>> launch passes them)
//   block_idx, block_num, sub_block_idx, g_taskRation
//                                the system variables of CANN's CPU debug, per core (runtime_api.h)
// The kernel is compiled once for the host: ASCEND_IS_AIV / ASCEND_IS_AIC test the calling core's
// type at run time (g_coreType), as in CANN's CPU debug build. When the model stops a run (a hazard,
// a hang, an access out of bounds, ...) ICPU_RUN_KF prints the message to stderr and exits with 1.
#ifndef ASCEND_MODEL_TIKICPULIB_H
#define ASCEND_MODEL_TIKICPULIB_H

#pragma GCC visibility push(default)

#include <cstddef>
#include <cstdint>
#include <functional>
#include <type_traits>
#include <vector>

#ifndef ASCEND_MODEL_RUNTIME_ONLY  // runtime.cc: the declarations without the instructions
#include "kernel_operator.h"
#endif
#include "runtime_api.h"
#include "machine.h"

// The kernel modes of SetKernelMode (global, as CANN's stub_def.h declares it: the documented call
// is AscendC::SetKernelMode(KernelMode::AIV_MODE)).
enum class KernelMode { MIX_MODE = 0, AIC_MODE, AIV_MODE };

namespace AscendC {
using ::KernelMode;
void *GmAlloc(size_t size);
void GmFree(void *ptr);
void SetKernelMode(KernelMode mode);
}  // namespace AscendC

namespace ascend_model {

void SetTilingKey(int64_t key);
// Runs `entry` on every core of a launch of `numBlocks` blocks in the current kernel mode; `args`
// are the kernel's pointer arguments (each must lie in a GmAlloc'd block, or be null).
void IcpuRun(const char *kernel, int64_t numBlocks, const std::function<void()> &entry,
             const std::vector<const void *> &args);

// A pointer argument as is; an argument passed by value (a scalar or a trivially copyable struct, as
// the <<<>>> launch of CANN's compiler passes them and its CPU host stub forwards them to ICPU_RUN_KF)
// as null: only pointers are checked against GmAlloc.
template <typename T>
const void *IcpuArg(const T &arg) {
  using D = std::decay_t<T>;
  if constexpr (std::is_pointer<D>::value) {
    return static_cast<const void *>(arg);
  } else {
    static_assert(std::is_trivially_copyable<D>::value,
                  "ICPU_RUN_KF: a kernel argument is a pointer from AscendC::GmAlloc or a trivially copyable value");
    return nullptr;
  }
}
template <typename... Args>
std::vector<const void *> IcpuArgs(const Args &...args) {
  return std::vector<const void *>{IcpuArg(args)...};
}

}  // namespace ascend_model

#define ICPU_SET_TILING_KEY(tilingKey) ascend_model::SetTilingKey(static_cast<int64_t>(tilingKey))
#define ICPU_RUN_KF(func, numBlocks, ...)                                                                 \
  ascend_model::IcpuRun(#func, static_cast<int64_t>(numBlocks), [&]() { func(__VA_ARGS__); },           \
                        ascend_model::IcpuArgs(__VA_ARGS__))

#pragma GCC visibility pop

#endif  // ASCEND_MODEL_TIKICPULIB_H
