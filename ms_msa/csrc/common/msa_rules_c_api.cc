#include "msa_rules_c_api.h"

#include <cstring>
#include <limits>

#include "msa_infer.h"
#include "msa_last_error.h"
#include "msa_rules.h"

namespace {

int Report(const msa::Status &s, char *msg, int cap) {
  if (msg != nullptr && cap > 0) {
    std::strncpy(msg, s.message.c_str(), cap - 1);
    msg[cap - 1] = '\0';
  }
  return static_cast<int>(s.kind);
}

msa::Status ToAttrs(const MsaAttrsC *c, msa::Attrs *a) {
  msa::Status s;
  if (!msa::ParseLayout(c->layout_key, &a->layout)) {
    s.kind = msa::ErrorKind::kValue;
    s.message = std::string("MsaIndexScore: 'layout_key' must be 'TND', 'BBND' or 'BNBD', got '") +
                (c->layout_key ? c->layout_key : "None") + "'";
    return s;
  }
  if (!msa::ParseLocalWindow(c->local_window, &a->local_window)) {
    s.kind = msa::ErrorKind::kValue;
    s.message = std::string("MsaIndexScore: 'local_window' must be 'request' or 'token', got '") +
                (c->local_window ? c->local_window : "None") + "'";
    return s;
  }
  if (c->scale_layout != nullptr && !msa::ParseScaleLayout(c->scale_layout, &a->scale_layout)) {
    s.kind = msa::ErrorKind::kValue;
    s.message = std::string("MsaIndexScore: 'scale_layout' must be 'auto', 'BNB' or 'BBN', got '") + c->scale_layout + "'";
    return s;
  }
  a->sparse_mode = c->sparse_mode;
  a->init_blocks = c->init_blocks;
  a->local_blocks = c->local_blocks;
  a->block_size = c->block_size;
  a->max_kv_blocks = c->max_kv_blocks;
  a->target = static_cast<msa::Target>(c->target);
  return s;
}

}  // namespace

extern "C" int MsaCheckAttrs(const MsaAttrsC *c, char *msg, int cap) {
  msa::Attrs a;
  msa::Status s = ToAttrs(c, &a);
  if (s.ok()) s = msa::CheckAttrs(a);
  return Report(s, msg, cap);
}

extern "C" int MsaCheckArgs(const char *const *dtype_names, const int32_t *ndims, const int64_t *dims,
                            const MsaAttrsC *c, int64_t *out_shape, char *msg, int cap) {
  msa::Attrs a;
  msa::Status s = ToAttrs(c, &a);
  if (!s.ok()) return Report(s, msg, cap);
  msa::TensorDesc in[msa::kNumInputs];
  for (int i = 0; i < msa::kNumInputs; ++i) {
    in[i].dtype = msa::ParseDType(dtype_names[i]);
    in[i].ndim = ndims[i] > msa::kMaxRank ? msa::kMaxRank + 1 : ndims[i];
    for (int r = 0; r < msa::kMaxRank; ++r) in[i].dims[r] = dims[i * msa::kMaxRank + r];
  }
  msa::Geometry geo;
  s = msa::CheckArgs(in, a, &geo);
  out_shape[0] = geo.n1;
  out_shape[1] = geo.t1;
  out_shape[2] = geo.out_width;
  return Report(s, msg, cap);
}

extern "C" int MsaInferShape(const int32_t *ndims, const int64_t *dims, uint32_t present_mask, const MsaAttrsC *c,
                             int64_t *out_shape, char *msg, int cap) {
  msa::Attrs a;
  msa::Status s = ToAttrs(c, &a);
  if (!s.ok()) return Report(s, msg, cap);
  msa::TensorDesc in[msa::kNumInputs];
  for (int i = 0; i < msa::kNumInputs; ++i) {
    in[i].ndim = ndims[i] > msa::kMaxRank ? msa::kMaxRank + 1 : ndims[i];
    for (int r = 0; r < msa::kMaxRank; ++r) in[i].dims[r] = dims[i * msa::kMaxRank + r];
  }
  msa::Geometry geo;
  s = msa::InferOutputShape(in, present_mask, a, &geo);
  out_shape[0] = geo.n1;
  out_shape[1] = geo.t1;
  out_shape[2] = geo.out_width;
  return Report(s, msg, cap);
}

extern "C" int64_t MsaConstant(const char *name) {
  struct Entry { const char *name; int64_t value; };
  static const Entry kTable[] = {
      {"out_width_align", msa::kOutWidthAlign}, {"atten_mask_size", msa::kAttenMaskSize},
      {"block_size_align", msa::kBlockSizeAlign}, {"cpu_max_block_size", msa::kCpuMaxBlockSize},
      {"ascend_block_size", msa::kAscendBlockSize}, {"default_block_size", msa::kDefaultBlockSize},
      {"max_rank", msa::kMaxRank}, {"num_inputs", msa::kNumInputs},
  };
  for (const auto &e : kTable) {
    if (std::strcmp(e.name, name) == 0) return e.value;
  }
  return -1;
}

extern "C" double MsaConstantFloat(const char *name) {
  if (std::strcmp(name, "init_force_value") == 0) return msa::kInitForceValue;
  if (std::strcmp(name, "local_force_value") == 0) return msa::kLocalForceValue;
  return std::numeric_limits<double>::quiet_NaN();
}

extern "C" int MsaLastKernelError(char *msg, int cap) {
  std::string text = msa::LastKernelError();
  if (msg != nullptr && cap > 0) {
    std::strncpy(msg, text.c_str(), cap - 1);
    msg[cap - 1] = '\0';
  }
  return static_cast<int>(text.size());
}
