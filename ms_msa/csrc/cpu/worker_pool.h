#ifndef MS_MSA_CSRC_CPU_WORKER_POOL_H_
#define MS_MSA_CSRC_CPU_WORKER_POOL_H_

#include <functional>

namespace msa {
namespace cpu {

// Runs job(0) on the calling thread and job(1) ... job(n - 1) on other threads, and returns when all n
// have returned. The other threads are kept from call to call: starting and joining a thread costs
// 70 µs here, and about 190 µs right after a decode has streamed its keys through the caches, while
// waking a parked one costs 10-35 µs (measured on this project's 2-core Zen 4 VM).
//
// `job` must let any of its n parts do all the work (the kernel's parts pull tasks from one shared
// counter): when a thread can not be started, fewer parts run, and job(0) on the caller always does.
// Calls may come from several threads at once; a call that finds the kept threads busy starts threads
// of its own for that call, as every call did before. A child process after fork() starts afresh.
void RunParallel(int n, const std::function<void(int)> &job);

}  // namespace cpu
}  // namespace msa

#endif  // MS_MSA_CSRC_CPU_WORKER_POOL_H_
