// MindSpore's side of an AOT kernel's calls, with a stand-in AotExtra holding the primitive's attributes:
// a C++ infer-shape call (CallInferShape, for tests/test_aclnn_infer_shape.py: loads the library named in a
// Custom's `func`, hands its `<symbol>InferShape` the listed input shapes, returns the inferred shape), and
// launches of the kernel itself from several threads at once (LaunchConcurrently, for
// tests/test_cpu_concurrent_launches.py). Built with -D_GLIBCXX_USE_CXX11_ABI=0 like the library, since
// std::string crosses the boundary.
#include <dlfcn.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <string>
#include <thread>
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
using InitFn = int (*)(int *, int64_t **, const char **, mindspore::AotExtra *);
using LaunchFn = int (*)(int, void **, int *, int64_t **, const char **, void *, void *);

// One prepared launch of a kernel as MindSpore makes it: its own attribute table (one per kernel instance, the
// kernel's Init caching what it reads there), the tensors' shapes and dtypes, and an output buffer of its own.
struct Launch {
  AttrTable table;
  std::vector<void *> params;
  std::vector<int> ndims;
  std::vector<std::vector<int64_t>> dims;
  std::vector<int64_t *> shapes;
  std::vector<const char *> dtypes;
  std::vector<unsigned char> out;

  int Run(LaunchFn launch) {
    std::memset(out.data(), 0xA5, out.size());  // a launch that wrote nothing leaves this pattern
    params.back() = out.data();
    return launch(static_cast<int>(params.size()), params.data(), ndims.data(), shapes.data(), dtypes.data(), nullptr,
                  &table);
  }
};

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

// n_calls prepared launches of `symbol` (an AOT kernel of n_params tensors, the last its output of out_bytes[c]
// bytes): call c's tensor i at params[c * n_params + i] (the output's entry is not read), its rank, dims (max_rank
// per tensor) and dtype name at the same index, its attributes in attr_specs[c]. Runs each call once, one after
// another, into out_seq (n_calls x max_out bytes), then from n_threads threads at once, each running every call
// `rounds` times in its own order with kernel instances and outputs of its own, and returns how many of those
// launches failed or wrote other bytes than the same call's sequential launch; or -1 (cannot load), -2 (a bad
// attribute spec), -3 (a sequential launch failed: the kernel's code in msg).
extern "C" int LaunchConcurrently(const char *library, const char *symbol, int n_calls, int n_params,
                                  void *const *params, const int *ndims, const int64_t *dims, int max_rank,
                                  const char *const *dtypes, const char *const *attr_specs, const int64_t *out_bytes,
                                  unsigned char *out_seq, int64_t max_out, int n_threads, int rounds, char *msg,
                                  int msg_len) {
  void *handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);
  auto launch = handle == nullptr ? nullptr : reinterpret_cast<LaunchFn>(dlsym(handle, symbol));
  const std::string init_symbol = std::string(symbol) + "Init";
  auto init = handle == nullptr ? nullptr : reinterpret_cast<InitFn>(dlsym(handle, init_symbol.c_str()));
  if (launch == nullptr || init == nullptr) {
    std::snprintf(msg, msg_len, "%s", dlerror());
    return -1;
  }
  // launches[t][c]: thread t's kernel instance of call c (t == n_threads: the sequential ones)
  std::vector<std::vector<std::unique_ptr<Launch>>> launches(n_threads + 1);
  for (auto &per_thread : launches) {
    for (int c = 0; c < n_calls; ++c) {
      auto l = std::make_unique<Launch>();
      if (!ParseAttrs(attr_specs[c], &l->table)) return -2;
      for (int i = 0; i < n_params; ++i) {
        const int k = c * n_params + i;
        l->params.push_back(params[k]);
        l->ndims.push_back(ndims[k]);
        l->dims.emplace_back(dims + k * max_rank, dims + (k + 1) * max_rank);
        l->dtypes.push_back(dtypes[k]);
      }
      for (auto &d : l->dims) l->shapes.push_back(d.data());
      l->out.resize(static_cast<size_t>(out_bytes[c]));
      init(l->ndims.data(), l->shapes.data(), l->dtypes.data(), &l->table);
      per_thread.push_back(std::move(l));
    }
  }
  for (int c = 0; c < n_calls; ++c) {
    Launch &l = *launches[n_threads][c];
    const int code = l.Run(launch);
    if (code != 0) {
      std::snprintf(msg, msg_len, "call %d: the kernel returned %d", c, code);
      return -3;
    }
    std::memcpy(out_seq + c * max_out, l.out.data(), l.out.size());
  }
  std::atomic<int> failures{0};
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < n_threads; ++t) {
    threads.emplace_back([&, t] {
      ready.fetch_add(1);
      while (ready.load() < n_threads) std::this_thread::yield();  // all start together
      for (int r = 0; r < rounds; ++r) {
        for (int j = 0; j < n_calls; ++j) {
          const int c = (j + t + r) % n_calls;  // each thread in another order
          Launch &l = *launches[t][c];
          if (l.Run(launch) != 0 || std::memcmp(l.out.data(), launches[n_threads][c]->out.data(), l.out.size()) != 0) {
            failures.fetch_add(1);
          }
        }
      }
    });
  }
  for (auto &th : threads) th.join();
  return failures.load();
}
