// The Cell's attributes as MindSpore hands them to an AOT kernel or C++ infer-shape through the
// primitive (set by ms_msa/backends/infer.py). On the CPU primitive they carry the Cell's argument
// names; on the aclnn primitive, whose own attributes of those names arrive as call arguments that
// an infer-shape does not see, the same names behind a prefix (kAclnnInferAttrPrefix).
#pragma once
#include <string>

#include "../common/msa_rules.h"
#include "aot_extra.h"

namespace msa {
namespace cpu {

// Must equal ACLNN_INFER_ATTR_PREFIX of ms_msa/backends/infer.py.
constexpr const char *kAclnnInferAttrPrefix = "infer_";

// The primitive attribute that says which inputs a call has (msa::PresenceMask, bit i = aclnn input i), for the
// callbacks that MindSpore does not tell: the C++ infer-shape, and the kernel entry that is given only the
// present tensors (MsaIndexScoreGiven). Must equal PRESENCE_ATTR of ms_msa/backends/infer.py.
constexpr const char *kPresenceAttr = "present_inputs";

inline Status ReadAotAttrs(mindspore::AotExtra *extra, Attrs *attrs, float *fill_value, const std::string &prefix = "",
                           Target target = Target::kCpu) {
  Status s;
  const std::string layout = extra->Attr<std::string>(prefix + "layout_key");
  const std::string window = extra->Attr<std::string>(prefix + "local_window");
  if (!ParseLayout(layout.c_str(), &attrs->layout) || !ParseLocalWindow(window.c_str(), &attrs->local_window)) {
    s.kind = ErrorKind::kValue;
    s.message = "MsaIndexScore: unknown layout_key '" + layout + "' or local_window '" + window + "'";
    return s;
  }
  // Optional on the primitive (the aclnn attribute set has none): absent means "auto".
  const std::string scale_layout =
      extra->HasAttr(prefix + "scale_layout") ? extra->Attr<std::string>(prefix + "scale_layout") : "auto";
  if (!ParseScaleLayout(scale_layout.c_str(), &attrs->scale_layout)) {
    s.kind = ErrorKind::kValue;
    s.message = "MsaIndexScore: unknown scale_layout '" + scale_layout + "'";
    return s;
  }
  attrs->sparse_mode = extra->Attr<int64_t>(prefix + "sparse_mode");
  attrs->init_blocks = extra->Attr<int64_t>(prefix + "init_blocks");
  attrs->local_blocks = extra->Attr<int64_t>(prefix + "local_blocks");
  attrs->block_size = extra->Attr<int64_t>(prefix + "block_size");
  attrs->max_kv_blocks = extra->Attr<int64_t>(prefix + "max_kv_blocks");
  attrs->target = target;
  if (fill_value != nullptr) *fill_value = extra->Attr<float>(prefix + "fill_value");
  return s;
}

}  // namespace cpu
}  // namespace msa
