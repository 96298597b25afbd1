// MindSpore's side of a C++ infer-shape call, for tests/test_ascend_dynamic_shape.py: loads the
// library named in a Custom's `func`, hands its `<symbol>InferShape` the listed input shapes and a
// stand-in AotExtra holding the primitive's attributes, and returns the inferred shape.
// Built with -D_GLIBCXX_USE_CXX11_ABI=0 like the library, since std::string crosses the boundary.
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <map>
#include <string>
#include <vector>

#include "cpu/aot_extra.h"

namespace {

// Attributes as MindSpore would store them on the primitive; a missing one throws, as MindSpore does.
class AttrTable : public mindspore::AotExtra {
 public:
  std::map<std::string, int64_t> ints;
  std::map<std::string, float> floats;
  std::map<std::string, std::string> strs;

  bool HasAttr(std::string name) override { return ints.count(name) || floats.count(name) || strs.count(name); }

 private:
  bool GetAttrBool(std::string name) override { return ints.at(name) != 0; }
  int64_t GetAttrInt(std::string name) override { return ints.at(name); }
  float GetAttrFloat(std::string name) override { return floats.at(name); }
  std::string GetAttrStr(std::string name) override { return strs.at(name); }
  std::vector<int64_t> GetAttrIntVec(std::string) override { return {}; }
  std::vector<float> GetAttrFloatVec(std::string) override { return {}; }
  std::vector<std::vector<int64_t>> GetAttrInt2DVec(std::string) override { return {}; }
  std::vector<std::vector<float>> GetAttrFloat2DVec(std::string) override { return {}; }
};

// "name=i:3;name=f:-inf;name=s:BBND"
bool ParseAttrs(const std::string &spec, AttrTable *table) {
  size_t pos = 0;
  while (pos < spec.size()) {
    size_t end = spec.find(';', pos);
    if (end == std::string::npos) end = spec.size();
    const std::string item = spec.substr(pos, end - pos);
    pos = end + 1;
    const size_t eq = item.find('=');
    if (eq == std::string::npos || item.size() < eq + 3 || item[eq + 2] != ':') return false;
    const std::string name = item.substr(0, eq), value = item.substr(eq + 3);
    switch (item[eq + 1]) {
      case 'i': table->ints[name] = std::strtoll(value.c_str(), nullptr, 10); break;
      case 'f': table->floats[name] = std::strtof(value.c_str(), nullptr); break;
      case 's': table->strs[name] = value; break;
      default: return false;
    }
  }
  return true;
}

using InferShapeFn = std::vector<int64_t> (*)(int *, int64_t **, mindspore::AotExtra *);

}  // namespace

// Returns 0 and the shape in out/out_rank, or 1 (cannot load), 2 (bad attribute spec), 3 (the
// callback threw: message in msg).
extern "C" int CallInferShape(const char *library, const char *symbol, const char *attrs, int n_inputs,
                              const int *ndims, const int64_t *dims, int max_rank, int64_t *out, int *out_rank,
                              char *msg, int msg_len) {
  void *handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);
  auto fn = handle == nullptr ? nullptr : reinterpret_cast<InferShapeFn>(dlsym(handle, symbol));
  if (fn == nullptr) {
    std::snprintf(msg, msg_len, "%s", dlerror());
    return 1;
  }
  AttrTable table;
  if (!ParseAttrs(attrs, &table)) return 2;
  std::vector<int> nd(ndims, ndims + n_inputs);
  std::vector<std::vector<int64_t>> shape_store;
  std::vector<int64_t *> shapes;
  for (int i = 0; i < n_inputs; ++i) shape_store.emplace_back(dims + i * max_rank, dims + i * max_rank + max_rank);
  for (auto &s : shape_store) shapes.push_back(s.data());
  try {
    const std::vector<int64_t> shape = fn(nd.data(), shapes.data(), &table);
    *out_rank = static_cast<int>(shape.size());
    for (size_t i = 0; i < shape.size() && i < 8; ++i) out[i] = shape[i];
  } catch (const std::exception &e) {
    std::snprintf(msg, msg_len, "%s", e.what());
    return 3;
  }
  return 0;
}
