// C++ infer-shapes of MsaIndexScore, which MindSpore needs for dynamic-shape graphs (the Python
// infer only serves shapes known at compile time): one for the CPU kernel's Custom and one for the
// Ascend aclnn Custom (backends/ascend.py), which names this library in its `func` although the
// kernel it launches is aclnnMsaIndexScore of the CANN package.
//
// How MindSpore 2.10 calls it (custom_op_infer.cc, read in its sources): for an AOT Custom whose
// out_shape is None (primitive attribute cpp_infer_shape), it dlopens the library named in `func`
// and calls `<func name>InferShape(int *ndims, int64_t **shapes, AotExtra *extra)`, at graph
// compile (unknown dims are -1, an unknown rank is the one dim -2) and again before every launch
// of a dynamic-shape kernel, with every size known. Only tensor inputs are listed: an absent
// (None) optional input is skipped and the count is not passed, so the primitive carries the
// presence bitmask as attribute `present_inputs` (one primitive per pattern, backends/cpu.py and
// backends/ascend.py). The aclnn Custom's trailing call arguments (layout_key, sparse_mode, ...)
// are not tensors: whether or not MindSpore lists them, they come after the tensors and are not read.
//
// A failed rule is not thrown from here: MindSpore would turn it into a RuntimeError before the
// Python infer could raise the TypeError/ValueError that names the argument. At compile time that
// Python infer runs right after this one and raises; before a launch (every size known) the kernel
// checks the same rules and fails the call with the rule's message, which ms_msa turns into the
// typed error.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "../common/msa_infer.h"
#include "aot_attrs.h"
#include "aot_extra.h"

namespace {

constexpr int64_t kDynamicRank = -2;

std::vector<int64_t> InferScoreShape(int *ndims, int64_t **shapes, mindspore::AotExtra *extra,
                                     const std::string &attr_prefix, msa::Target target) {
  if (extra == nullptr || !extra->HasAttr(msa::cpu::kPresenceAttr)) {
    // Not a user error: the Custom was built without the attribute this callback depends on.
    throw std::logic_error("MsaIndexScore: the primitive lacks the 'present_inputs' attribute (build it with "
                           "ms_msa.backends)");
  }
  const auto present = static_cast<msa::PresenceMask>(extra->Attr<int64_t>(msa::cpu::kPresenceAttr));
  if ((present & msa::kRequiredInputs) != msa::kRequiredInputs || (present & ~msa::kAllInputs) != 0) {
    throw std::logic_error("MsaIndexScore: invalid 'present_inputs' attribute");
  }

  msa::Attrs attrs;
  msa::Status s = msa::cpu::ReadAotAttrs(extra, &attrs, nullptr, attr_prefix, target);
  msa::TensorDesc in[msa::kNumInputs];
  bool all_known = true;
  int listed = 0;  // position in MindSpore's list, which skips absent inputs
  for (int i = 0; i < msa::kNumInputs && s.ok(); ++i) {
    if ((present & msa::InputBit(i)) == 0) continue;
    const int nd = ndims[listed];
    const int64_t *dims = shapes[listed];
    ++listed;
    if (nd == 1 && dims[0] == kDynamicRank) {
      in[i].ndim = -1;
      all_known = false;
      continue;
    }
    in[i].ndim = nd > msa::kMaxRank ? msa::kMaxRank + 1 : nd;
    for (int r = 0; r < nd && r < msa::kMaxRank; ++r) {
      in[i].dims[r] = dims[r];
      all_known = all_known && dims[r] >= 0;
    }
  }
  msa::Geometry geo;
  if (s.ok()) s = msa::InferOutputShape(in, present, attrs, &geo);
  if (!s.ok()) {
    // A non-empty placeholder, so that the launch happens and the kernel reports the rule.
    return all_known ? std::vector<int64_t>{1, 1, 1} : std::vector<int64_t>{-1, -1, -1};
  }
  return {geo.n1, geo.t1, geo.out_width};
}

}  // namespace

extern "C" MSA_EXPORT std::vector<int64_t> MsaIndexScoreInferShape(int *ndims, int64_t **shapes,
                                                                   mindspore::AotExtra *extra) {
  return InferScoreShape(ndims, shapes, extra, "", msa::Target::kCpu);
}

// The aclnn Custom's attributes of the same names are its call arguments; the Cell's attributes
// reach this callback behind kAclnnInferAttrPrefix. The rules are the Ascend ones.
extern "C" MSA_EXPORT std::vector<int64_t> aclnnMsaIndexScoreInferShape(int *ndims, int64_t **shapes,
                                                                        mindspore::AotExtra *extra) {
  return InferScoreShape(ndims, shapes, extra, msa::cpu::kAclnnInferAttrPrefix, msa::Target::kAscend);
}
