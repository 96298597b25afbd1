// The CPU kernel's worker pool (ms_msa/csrc/cpu/worker_pool.cc): every part of a call runs exactly once and
// before the call returns, on any number of parts, from concurrent callers, after an exception, and in a
// child process after fork(). Prints "N passed, M failed" last; exits 1 on a failure.
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstdio>
#include <stdexcept>
#include <thread>
#include <vector>

#include "cpu/worker_pool.h"

namespace {

int g_passed = 0, g_failed = 0;

void Check(bool ok, const char *what, int detail) {
  if (ok) {
    ++g_passed;
  } else {
    ++g_failed;
    std::printf("FAILED: %s (%d)\n", what, detail);
  }
}

// One call of n parts; true if each part ran once, the caller's part on the caller, and all before return.
bool OneCall(int n) {
  std::vector<std::atomic<int>> runs(n);
  std::atomic<bool> returned{false}, late{false};
  const std::thread::id caller = std::this_thread::get_id();
  std::atomic<bool> part0_on_caller{false};
  msa::cpu::RunParallel(n, [&](int id) {
    if (id == 0) part0_on_caller = std::this_thread::get_id() == caller;
    if (returned.load()) late = true;
    std::this_thread::sleep_for(std::chrono::microseconds(id % 3 == 0 ? 200 : 10));
    runs[id].fetch_add(1);
  });
  returned = true;
  bool ok = part0_on_caller.load() && !late.load();
  for (auto &r : runs) ok = ok && r.load() == 1;
  return ok;
}

void SequentialCalls() {
  for (int round = 0; round < 50; ++round) {
    const int n = 1 + round % 8;  // the pool grows, then serves calls of fewer parts
    Check(OneCall(n), "every part once, before the call returns", n);
  }
}

void ConcurrentCallers() {
  std::atomic<int> bad{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < 4; ++c) {
    callers.emplace_back([&, c] {
      for (int i = 0; i < 25; ++i) {
        if (!OneCall(2 + (c + i) % 4)) bad.fetch_add(1);
      }
    });
  }
  for (auto &t : callers) t.join();
  Check(bad.load() == 0, "concurrent callers (kept threads for one, fresh threads for the others)", bad.load());
}

void ExceptionFromCallersPart() {
  std::atomic<int> others{0};
  bool caught = false;
  try {
    msa::cpu::RunParallel(3, [&](int id) {
      if (id == 0) throw std::runtime_error("part 0 fails");
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      others.fetch_add(1);
    });
  } catch (const std::runtime_error &) {
    caught = true;
  }
  Check(caught, "an exception of the caller's part reaches the caller", 0);
  Check(others.load() == 2, "the other parts finished before it was rethrown", others.load());
  Check(OneCall(3), "the pool still serves calls after an exception", 3);
}

void ChildAfterFork() {
  Check(OneCall(2), "the parent's pool runs before fork", 2);
  const pid_t child = fork();
  if (child == 0) {
    // The parent's kept threads do not exist here: a call must not wait for them.
    const bool ok = OneCall(2) && OneCall(4);
    std::_Exit(ok ? 0 : 1);
  }
  int status = 0;
  bool finished = false;
  for (int waited_ms = 0; waited_ms < 20000; waited_ms += 10) {
    if (waitpid(child, &status, WNOHANG) == child) {
      finished = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (!finished) {
    kill(child, SIGKILL);
    waitpid(child, &status, 0);
  }
  Check(finished, "a child after fork does not hang", 0);
  Check(finished && WIFEXITED(status) && WEXITSTATUS(status) == 0, "a child after fork runs every part", status);
  Check(OneCall(2), "the parent's pool after fork", 2);
}

}  // namespace

int main() {
  SequentialCalls();
  ConcurrentCallers();
  ExceptionFromCallersPart();
  ChildAfterFork();
  std::printf("%d passed, %d failed\n", g_passed, g_failed);
  return g_failed == 0 ? 0 : 1;
}
