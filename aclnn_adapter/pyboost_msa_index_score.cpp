// PyNative runner of aclnnMsaIndexScore, built by ms.ops.CustomOpBuilder (backend "Ascend") from
// ms_msa/backends/ascend.py together with ms_msa/csrc/common/msa_rules.cc.
//
// PyNative through ops.Custom pays the generic Custom path on every call; AclnnOpRunner goes
// through PyBoost's pipeline and MindSpore's aclnn executor cache instead. Arguments are those of
// the aclnn Custom: the eight tensors in aclnn order (None for an absent optional one), then the
// aclnn attributes layout_key, sparse_mode, init_blocks, local_blocks.
#include <optional>
#include <string>
#include <vector>

#include "ms_extension/all.h"
#include "msa_rules.h"

namespace ms_msa {
namespace {

using OptTensor = std::optional<ms::Tensor>;

msa::DType ToRuleDType(ms::TypeId type) {
  switch (type) {
    case ms::TypeId::kNumberTypeFloat16: return msa::DType::kFloat16;
    case ms::TypeId::kNumberTypeBFloat16: return msa::DType::kBFloat16;
    case ms::TypeId::kNumberTypeFloat32: return msa::DType::kFloat32;
    case ms::TypeId::kNumberTypeFloat8E4M3FN: return msa::DType::kFloat8E4M3FN;
    case ms::TypeId::kNumberTypeFloat8E5M2: return msa::DType::kFloat8E5M2;
    case ms::TypeId::kNumberTypeInt8: return msa::DType::kInt8;
    case ms::TypeId::kNumberTypeInt32: return msa::DType::kInt32;
    default: return msa::DType::kOther;
  }
}

msa::TensorDesc Describe(const OptTensor &t) {
  msa::TensorDesc d;
  if (!t.has_value() || !t->is_defined()) return d;  // dtype kNone: absent
  d.dtype = ToRuleDType(t->data_type());
  const auto &shape = t->shape();
  d.ndim = static_cast<int32_t>(shape.size());
  if (d.ndim > msa::kMaxRank) d.ndim = msa::kMaxRank + 1;  // the rank rules reject it
  for (size_t r = 0; r < shape.size() && r < static_cast<size_t>(msa::kMaxRank); ++r) d.dims[r] = shape[r];
  return d;
}

[[noreturn]] void Raise(const msa::Status &s) {
  if (s.kind == msa::ErrorKind::kType) throw pybind11::type_error(s.message);
  throw pybind11::value_error(s.message);
}

}  // namespace

ms::Tensor msa_index_score(const ms::Tensor &query, const ms::Tensor &key, const OptTensor &block_table,
                           const OptTensor &scale, const OptTensor &atten_mask, const OptTensor &actual_seq_qlen,
                           const OptTensor &actual_seq_klen, const OptTensor &start_loc, const std::string &layout_key,
                           int64_t sparse_mode, int64_t init_blocks, int64_t local_blocks) {
  msa::Attrs attrs;
  attrs.target = msa::Target::kAscend;
  if (!msa::ParseLayout(layout_key.c_str(), &attrs.layout)) {
    Raise({msa::ErrorKind::kValue, "MsaIndexScore: 'layout_key' must be 'TND', 'BBND' or 'BNBD', got '" + layout_key + "'"});
  }
  attrs.sparse_mode = sparse_mode;
  attrs.init_blocks = init_blocks;
  attrs.local_blocks = local_blocks;

  const OptTensor all[msa::kNumInputs] = {query, key, block_table, scale, atten_mask, actual_seq_qlen, actual_seq_klen,
                                          start_loc};
  msa::TensorDesc in[msa::kNumInputs];
  for (int i = 0; i < msa::kNumInputs; ++i) in[i] = Describe(all[i]);
  attrs.scale_layout = msa::AclnnScaleLayout(in[msa::kScale]);  // as the aclnn interface reads it
  msa::Geometry geo;
  const msa::Status s = msa::CheckArgs(in, attrs, &geo);
  if (!s.ok()) Raise(s);

  auto score = ms::Tensor(ms::TypeId::kNumberTypeFloat32, {geo.n1, geo.t1, geo.out_width});
  std::vector<ms::Tensor> inputs;
  for (const auto &t : all) {
    if (t.has_value() && t->is_defined()) inputs.push_back(*t);
  }
  auto runner = std::make_shared<ms::pynative::AclnnOpRunner>("MsaIndexScore");
  runner->SetLaunchFunc(LAUNCH_ACLNN_FUNC(aclnnMsaIndexScore, query, key, block_table, scale, atten_mask,
                                          actual_seq_qlen, actual_seq_klen, start_loc, layout_key, sparse_mode,
                                          init_blocks, local_blocks, score));
  runner->Run(inputs, {score});
  return score;
}

}  // namespace ms_msa

PYBIND11_MODULE(MS_EXTENSION_NAME, m) {
  m.def("msa_index_score", PYBOOST_CALLER(1, ms_msa::msa_index_score));
}
