// The argument and value rules of MsaIndexScore (SPEC §5), written once in plain C++.
// Used by: the CPU kernel (re-checked at launch), the C++ infer-shape of the AOT op, the Ascend
// tiling (ascendc/op_host), and the Python package through msa_rules_c_api.h (ctypes).
#pragma once
#include <cstdint>
#include <string>

#include "msa_config.h"

namespace msa {

enum class ErrorKind : int32_t { kOk = 0, kType = 1, kValue = 2 };

struct Status {
  ErrorKind kind = ErrorKind::kOk;
  std::string message;
  bool ok() const { return kind == ErrorKind::kOk; }
};

// A tensor as the rules see it. ndim < 0 means "rank unknown" and a dim < 0 means "size unknown"
// (dynamic shapes at graph-compile time); unknown facts pass every rule that needs them.
struct TensorDesc {
  DType dtype = DType::kNone;  // kNone: the optional input is absent
  int32_t ndim = 0;
  int64_t dims[kMaxRank] = {0};
  bool present() const { return dtype != DType::kNone; }
  bool rank_known() const { return ndim >= 0; }
};

struct Attrs {
  Layout layout = Layout::kBBND;
  int64_t sparse_mode = 3;
  int64_t init_blocks = 0;
  int64_t local_blocks = 1;
  LocalWindow local_window = LocalWindow::kRequest;
  ScaleLayout scale_layout = ScaleLayout::kAuto;  // paged int8 scale order
  int64_t block_size = kDefaultBlockSize;  // TND only
  int64_t max_kv_blocks = -1;              // TND only; -1 = ceil(T2 / block_size)
  Target target = Target::kCpu;
};

// Sizes the kernel needs, derived from the shapes. -1 where unknown.
struct Geometry {
  int64_t t1 = -1, n1 = -1, n2 = -1, d = -1;
  int64_t block_size = -1;  // P
  int64_t num_pages = -1;   // NP (paged layouts)
  int64_t table_width = -1; // MB (paged layouts)
  int64_t t2 = -1;          // packed key rows (TND)
  int64_t batch = -1;       // B
  int64_t out_width = -1;   // W
  bool scale_bbn = false;   // paged int8 scale is [NP, P, N2] (resolved from scale_layout and the shape)
};

bool ParseLayout(const char *text, Layout *out);
bool ParseLocalWindow(const char *text, LocalWindow *out);
bool ParseScaleLayout(const char *text, ScaleLayout *out);

// The scale order the aclnn interface (which has no scale_layout attribute) reads from the shape: a
// [NP, X, X] scale (N2 == P) is [NP, N2, P] there; ms_msa's Ascend backend transposes a BBN one first.
ScaleLayout AclnnScaleLayout(const TensorDesc &scale);
DType ParseDType(const char *aot_name);
const char *DTypeName(DType dtype);

// Rules that depend on the attributes alone (checked when the Cell is built).
Status CheckAttrs(const Attrs &attrs);

// Every shape/dtype rule; fills geo (output shape = [n1, t1, out_width]).
Status CheckArgs(const TensorDesc inputs[kNumInputs], const Attrs &attrs, Geometry *geo);

// Rules on tensor contents (lengths, block table). geo must come from a successful CheckArgs with
// every size known. block_table may be null for TND.
Status CheckValues(const Geometry &geo, const Attrs &attrs, const int32_t *qlen, const int32_t *klen,
                   const int32_t *block_table);

}  // namespace msa
