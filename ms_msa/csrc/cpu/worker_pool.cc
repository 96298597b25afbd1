#include "worker_pool.h"

#include <dlfcn.h>
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

namespace msa {
namespace cpu {
namespace {

// How long the caller watches for the other parts to end before it sleeps on them (its own part done).
constexpr std::chrono::microseconds kCallerSpin{2000};

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Threads started for one call and joined before it returns: the path of a call that finds the kept
// threads busy. If a thread can not be started, fewer parts run.
void RunOnFreshThreads(int n, const std::function<void(int)> &job) {
  std::vector<std::thread> threads;
  for (int id = 1; id < n; ++id) {
    try {
      threads.emplace_back(job, id);
    } catch (const std::system_error &) {
      break;  // the parts that did start, and the caller's, share all the work
    }
  }
  std::exception_ptr failed;
  try {
    job(0);
  } catch (...) {
    failed = std::current_exception();  // join first: the threads still use `job`
  }
  for (auto &t : threads) t.join();
  if (failed) std::rethrow_exception(failed);
}

// The kept threads never exit, so the code they park in must never be unmapped: MindSpore opens and
// closes this library around its shape inference, and a last dlclose() would pull the code from under
// them. RTLD_NODELETE on the already-loaded library keeps it mapped for the life of the process.
void PinThisLibrary() {
  Dl_info info;
  if (dladdr(reinterpret_cast<void *>(&PinThisLibrary), &info) != 0 && info.dli_fname != nullptr) {
    dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);  // a reference that is never dropped
  }
}

class WorkerPool {
 public:
  // Tries to run the call on the kept threads; false (and nothing run) if another call is using them.
  bool TryRun(int n, const std::function<void(int)> &job) {
    std::unique_lock<std::mutex> busy(busy_, std::try_to_lock);
    if (!busy.owns_lock()) return false;
    int parts;
    {
      std::lock_guard<std::mutex> lock(mu_);
      StartThreads(n - 1);
      parts = std::min(n, started_ + 1);
      job_ = &job;
      parts_ = parts;
      unfinished_.store(parts - 1, std::memory_order_relaxed);
      ++generation_;
    }
    wake_.notify_all();
    std::exception_ptr failed;
    try {
      job(0);
    } catch (...) {
      failed = std::current_exception();  // the other parts still use `job`: wait for them first
    }
    // The other parts usually end within a task's time of this one: watch for that before sleeping, since a
    // parked caller wakes 20-100 µs after the last part reports (measured on this project's 2-core VMs).
    const auto spin_until = std::chrono::steady_clock::now() + kCallerSpin;
    while (unfinished_.load(std::memory_order_acquire) != 0 && std::chrono::steady_clock::now() < spin_until) {
      CpuRelax();
    }
    std::unique_lock<std::mutex> lock(mu_);
    done_.wait(lock, [this] { return unfinished_.load(std::memory_order_acquire) == 0; });
    job_ = nullptr;
    if (failed) std::rethrow_exception(failed);
    return true;
  }

  pid_t owner() const { return owner_; }

 private:
  // Called with mu_ held. A thread that can not be started leaves the pool smaller, never broken.
  void StartThreads(int wanted) {
    while (started_ < wanted) {
      if (started_ == 0) PinThisLibrary();
      try {
        std::thread(&WorkerPool::Park, this, started_ + 1, generation_).detach();
      } catch (const std::system_error &) {
        return;
      }
      ++started_;
    }
  }

  // Thread `id`'s life: wait for a new generation, run its part if the call has one, report, repeat.
  void Park(int id, uint64_t seen) {
    pthread_setname_np(pthread_self(), "ms_msa_worker");  // what a user sees in top -H or a profiler
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      wake_.wait(lock, [&] { return generation_ != seen; });
      seen = generation_;
      if (id >= parts_) continue;
      const std::function<void(int)> *job = job_;
      lock.unlock();
      (*job)(id);
      const bool last = unfinished_.fetch_sub(1, std::memory_order_acq_rel) == 1;
      lock.lock();  // (before the notify: the caller tests unfinished_ under mu_, so the wake-up is never lost)
      if (last) done_.notify_one();
    }
  }

  const pid_t owner_ = getpid();
  std::mutex busy_;  // held by the one call that owns the kept threads
  std::mutex mu_;    // guards everything below
  std::condition_variable wake_, done_;
  const std::function<void(int)> *job_ = nullptr;
  uint64_t generation_ = 0;
  int started_ = 0, parts_ = 0;
  std::atomic<int> unfinished_{0};  // parts of the current call still running (read without mu_ while spinning)
};

// The process's pool. After fork() the child has none of the parent's threads (and maybe a mutex that a
// parent thread held), so a child makes its own. Pools are never destroyed: their threads outlive any
// static destructor that could join them.
WorkerPool *PoolOfThisProcess() {
  static std::atomic<WorkerPool *> pool{nullptr};
  WorkerPool *current = pool.load(std::memory_order_acquire);
  if (current != nullptr && current->owner() == getpid()) return current;
  WorkerPool *fresh = new WorkerPool();
  if (pool.compare_exchange_strong(current, fresh, std::memory_order_acq_rel)) return fresh;
  delete fresh;  // another thread of this process installed its pool first; ours started no threads
  return current->owner() == getpid() ? current : nullptr;
}

}  // namespace

void RunParallel(int n, const std::function<void(int)> &job) {
  if (n <= 1) {
    job(0);
    return;
  }
  WorkerPool *pool = PoolOfThisProcess();
  if (pool == nullptr || !pool->TryRun(n, job)) RunOnFreshThreads(n, job);
}

}  // namespace cpu
}  // namespace msa
