// The message of the last failed kernel launch. MindSpore only reports an AOT kernel's return code,
// so the kernel keeps its message here and the Python layer attaches it to the exception.
#pragma once
#include <mutex>
#include <string>

namespace msa {

inline std::mutex &LastErrorMutex() {
  static std::mutex m;
  return m;
}

inline std::string &LastErrorText() {
  static std::string text;
  return text;
}

inline void SetLastKernelError(const std::string &text) {
  std::lock_guard<std::mutex> lock(LastErrorMutex());
  LastErrorText() = text;
}

inline std::string LastKernelError() {
  std::lock_guard<std::mutex> lock(LastErrorMutex());
  return LastErrorText();
}

}  // namespace msa
