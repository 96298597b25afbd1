// MindSpore AOT entry point of the CPU grouped matmul (ops.Custom(func_type="aot"), wrapped by
// model_zoo/minimax_m3/layers/grouped_matmul.py). Tensors: x [P, K], w [G, N, K], group_sizes [G] or
// [G + 1] int32, then the output y [P, N]; the contract is grouped_matmul.h.
//
// Every shape, dtype and group size is checked before anything is read: a failed rule returns code 2
// (1 for a dtype) with its message kept for the Python layer (msa_last_error.h), never a read out of
// bounds.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>
#include <string>
#include <vector>

#include "../common/msa_config.h"
#include "../common/msa_last_error.h"
#include "grouped_matmul.h"
#include "score_kernel.h"
#include "worker_pool.h"

namespace {

using msa::cpu::gmm::Group;
using msa::cpu::gmm::Kernels;
using msa::cpu::gmm::Problem;

constexpr int kNumParams = 4;  // x, w, group_sizes, y
constexpr int kTypeError = 1;
constexpr int kValueError = 2;
constexpr int kInternalError = 3;
// Below this many multiply-adds a call runs on the calling thread: waking a worker costs 10-35 µs here.
constexpr int64_t kParallelMinWork = int64_t{1} << 18;

int Fail(int code, const std::string &message) {
  msa::SetLastKernelError(message);
  std::fprintf(stderr, "%s\n", message.c_str());
  return code;
}

std::string ShapeText(int ndim, const int64_t *shape) {
  std::string s = "[";
  for (int i = 0; i < ndim; ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

bool IsFloat(const char *dtype) { return std::strcmp(dtype, "float32") == 0 || std::strcmp(dtype, "float16") == 0; }

}  // namespace

namespace msa {
namespace cpu {
namespace gmm {

// The kernels a launch uses: AVX2 + FMA + F16C where the CPU has them, unless MS_MSA_CPU_ISA=generic (read
// at every launch, as the MsaIndexScore kernel reads it, so that one process can test both).
Kernels SelectKernels() {
#if defined(MSA_HAVE_X86_KERNELS)
  const char *want = std::getenv("MS_MSA_CPU_ISA");
  const bool generic = want != nullptr && std::strcmp(want, "generic") == 0;
  if (!generic && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
      __builtin_cpu_supports("f16c")) {
    return Avx2Kernels();
  }
#endif
  return GenericKernels();
}

}  // namespace gmm
}  // namespace cpu
}  // namespace msa

namespace {

int Launch(int nparam, void **params, int *ndims, int64_t **shapes, const char **dtypes) {
  if (nparam != kNumParams) {
    return Fail(kInternalError, "GroupedMatmul: expected 4 tensors (x, w, group_sizes, output), got " +
                                    std::to_string(nparam));
  }
  if (!IsFloat(dtypes[0]) || std::strcmp(dtypes[0], dtypes[1]) != 0 || std::strcmp(dtypes[0], dtypes[3]) != 0) {
    return Fail(kTypeError, std::string("GroupedMatmul: x and w must both be float32 or both float16 (the output "
                                        "takes their dtype), got x ") + dtypes[0] + ", w " + dtypes[1] +
                                ", output " + dtypes[3]);
  }
  if (std::strcmp(dtypes[2], "int32") != 0) {
    return Fail(kTypeError, std::string("GroupedMatmul: group_sizes must be int32, got ") + dtypes[2]);
  }
  if (ndims[0] != 2 || ndims[1] != 3 || ndims[2] != 1 || ndims[3] != 2) {
    return Fail(kValueError, "GroupedMatmul: expected x [P, K], w [G, N, K], group_sizes [G] or [G + 1], got x " +
                                 ShapeText(ndims[0], shapes[0]) + ", w " + ShapeText(ndims[1], shapes[1]) +
                                 ", group_sizes " + ShapeText(ndims[2], shapes[2]));
  }
  const int64_t p = shapes[0][0], k = shapes[0][1];
  const int64_t g = shapes[1][0], n = shapes[1][1];
  const int64_t num_sizes = shapes[2][0];
  if (p < 0 || k < 0 || g < 0 || n < 0 || shapes[1][2] != k) {
    return Fail(kValueError, "GroupedMatmul: x [P, K] and w [G, N, K] must share K, got x " +
                                 ShapeText(2, shapes[0]) + ", w " + ShapeText(3, shapes[1]));
  }
  if (num_sizes != g && num_sizes != g + 1) {
    return Fail(kValueError, "GroupedMatmul: group_sizes must have G = " + std::to_string(g) + " entries (or G + 1, "
                             "the last counting trailing rows of no group), got " + std::to_string(num_sizes));
  }
  if (shapes[3][0] != p || shapes[3][1] != n) {
    return Fail(kInternalError, "GroupedMatmul: the output buffer " + ShapeText(2, shapes[3]) + " is not [P, N] = [" +
                                    std::to_string(p) + ", " + std::to_string(n) + "]");
  }
  const int32_t *sizes = static_cast<const int32_t *>(params[2]);
  if (num_sizes > 0 && sizes == nullptr) return Fail(kInternalError, "GroupedMatmul: group_sizes has no data");

  Problem prob;
  prob.half = std::strcmp(dtypes[0], "float16") == 0;
  prob.p = p;
  prob.n = n;
  prob.k = k;
  prob.w = params[1];
  prob.y = params[3];
  std::vector<Group> groups;
  int64_t row = 0;
  for (int64_t i = 0; i < num_sizes; ++i) {
    if (sizes[i] < 0) {
      return Fail(kValueError, "GroupedMatmul: group_sizes[" + std::to_string(i) + "] = " + std::to_string(sizes[i]) +
                                   " is negative");
    }
    if (sizes[i] > p - row) {
      return Fail(kValueError, "GroupedMatmul: group_sizes sum to more than the " + std::to_string(p) +
                                   " rows of x (exceeded at entry " + std::to_string(i) + ")");
    }
    if (sizes[i] > 0 && i < g) groups.push_back(Group{i, row, sizes[i]});
    row += sizes[i];
  }
  if (row != p) {
    return Fail(kValueError, "GroupedMatmul: group_sizes sum to " + std::to_string(row) + ", not to the " +
                                 std::to_string(p) + " rows of x");
  }
  const int64_t tail_row = num_sizes == g + 1 ? p - sizes[g] : p;  // rows of no group: [tail_row, P)
  if (p == 0 || n == 0) return 0;
  const size_t elem = prob.half ? 2 : 4;
  if (k == 0 || groups.empty()) {  // every output row is an empty sum or of no group
    if (params[3] == nullptr) return Fail(kInternalError, "GroupedMatmul: the output has no data");
    std::memset(prob.y, 0, static_cast<size_t>(p * n) * elem);
    return 0;
  }
  if (params[0] == nullptr || params[1] == nullptr || params[3] == nullptr) {
    return Fail(kInternalError, "GroupedMatmul: a non-empty tensor has no data");
  }
  std::memset(static_cast<char *>(prob.y) + tail_row * n * elem, 0, static_cast<size_t>((p - tail_row) * n) * elem);

  prob.groups = groups.data();
  prob.num_groups = static_cast<int64_t>(groups.size());
  const Kernels kernels = msa::cpu::gmm::SelectKernels();
  const int64_t grouped_rows = tail_row;
  const int threads_wanted = grouped_rows * n * k >= kParallelMinWork ? msa::cpu::ConfiguredThreads() : 1;
  std::vector<float> x32;
  if (prob.half) {
    // x once in fp32: every task reads its group's rows many times.
    x32.resize(static_cast<size_t>(grouped_rows * k));
    const int parts = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(threads_wanted, grouped_rows)));
    const uint16_t *x16 = static_cast<const uint16_t *>(params[0]);
    std::atomic<int> next{0};
    msa::cpu::RunParallel(parts, [&](int) {
      for (int part = next.fetch_add(1); part < parts; part = next.fetch_add(1)) {
        kernels.half_rows_to_float(x16, k, grouped_rows * part / parts, grouped_rows * (part + 1) / parts, x32.data());
      }
    });
    prob.x32 = x32.data();
  } else {
    prob.x32 = static_cast<const float *>(params[0]);
  }
  const int64_t panels = (n + msa::cpu::gmm::kPanel - 1) / msa::cpu::gmm::kPanel;
  const int64_t tasks = prob.num_groups * panels;
  const int workers = static_cast<int>(std::min<int64_t>(threads_wanted, tasks));
  std::atomic<int64_t> next_task{0};
  msa::cpu::RunParallel(workers, [&](int) { kernels.run_tasks(prob, &next_task, tasks); });
  return 0;
}

}  // namespace

extern "C" MSA_EXPORT int MsaGroupedMatmul(int nparam, void **params, int *ndims, int64_t **shapes,
                                           const char **dtypes, void * /*stream*/, void * /*extra*/) {
  try {
    return Launch(nparam, params, ndims, shapes, dtypes);
  } catch (const std::bad_alloc &) {
    return Fail(kInternalError, "GroupedMatmul: out of host memory");
  } catch (const std::exception &e) {
    return Fail(kInternalError, std::string("GroupedMatmul: ") + e.what());
  }
}

// The kernels the next launch will use ("avx2" or "generic"), for the tests.
extern "C" MSA_EXPORT const char *MsaGroupedMatmulIsa() { return msa::cpu::gmm::SelectKernels().isa; }
