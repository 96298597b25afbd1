// The part of MindSpore's AotExtra (mindspore/ccsrc/utils/custom_aot_extra.h) that an AOT kernel
// uses, declared with the same virtual layout so that the kernel needs no MindSpore headers.
// MindSpore is built with the pre-C++11 std::string ABI, so every file including this header must be
// compiled with -D_GLIBCXX_USE_CXX11_ABI=0 (setup.py does).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#if !defined(_GLIBCXX_USE_CXX11_ABI) || _GLIBCXX_USE_CXX11_ABI != 0
#error "AOT kernels must be compiled with -D_GLIBCXX_USE_CXX11_ABI=0 to match MindSpore's std::string"
#endif

namespace mindspore {

class AotKernelData {
 public:
  AotKernelData() = default;
  virtual ~AotKernelData() = default;
};

class AotExtra {
 public:
  AotExtra() = default;
  virtual ~AotExtra() = default;
  virtual bool HasAttr(std::string name) = 0;

  template <typename T>
  T Attr(std::string name) const;

  // Inline in MindSpore's header too: data the kernel's Init attaches, deleted with the kernel.
  void SetKernelData(AotKernelData *kernel_data) { kernel_data_ = kernel_data; }
  const AotKernelData *KernelData() const { return kernel_data_; }

 private:
  // Same order as MindSpore's declaration: the vtable slots must line up.
  virtual bool GetAttrBool(std::string name) = 0;
  virtual int64_t GetAttrInt(std::string name) = 0;
  virtual float GetAttrFloat(std::string name) = 0;
  virtual std::string GetAttrStr(std::string name) = 0;
  virtual std::vector<int64_t> GetAttrIntVec(std::string name) = 0;
  virtual std::vector<float> GetAttrFloatVec(std::string name) = 0;
  virtual std::vector<std::vector<int64_t>> GetAttrInt2DVec(std::string name) = 0;
  virtual std::vector<std::vector<float>> GetAttrFloat2DVec(std::string name) = 0;

  std::vector<size_t> workspace_;
  AotKernelData *kernel_data_{nullptr};
};

template <>
inline int64_t AotExtra::Attr<int64_t>(std::string name) const {
  return const_cast<AotExtra *>(this)->GetAttrInt(name);
}
template <>
inline float AotExtra::Attr<float>(std::string name) const {
  return const_cast<AotExtra *>(this)->GetAttrFloat(name);
}
template <>
inline std::string AotExtra::Attr<std::string>(std::string name) const {
  return const_cast<AotExtra *>(this)->GetAttrStr(name);
}

}  // namespace mindspore
